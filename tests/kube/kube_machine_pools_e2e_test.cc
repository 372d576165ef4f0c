// Machine pools on a Kubernetes cluster, end to end against the fake API server and its machine
// controller: a MACHINE_POOL names the OpenShift MachineSet that makes its nodes; a workflow that
// fits no node of the cluster scales the MachineSet from zero through the scale subresource; the
// controller's new node joins the pool by label and the task runs there; once the node has been
// empty for --scale-down-after, gpupool marks its Machine for deletion and scales back to zero,
// and the controller removes that Machine and its Node. Waits are bounded polls for states;
// nothing is timed.

#include "kube_e2e_fixture.h"

namespace gpupool::kube_e2e {
namespace kube_machine_pools_e2e_test {

constexpr char kMachineSets[] =
    "/apis/machine.openshift.io/v1beta1/namespaces/openshift-machine-api/machinesets";

class MachinePoolsTest : public KubernetesBackendTest {
 protected:
  // The MachineSet as a cluster's administrator creates it: zero replicas, the node labels that
  // put its nodes in gpupool's machine pool, and the capacity annotations cluster-autoscaler
  // reads to scale from zero (p3.8xlarge: 32 vCPUs, 244 GiB, 4 V100s).
  void CreateMachineSet() {
    Json set = {
        {"apiVersion", "machine.openshift.io/v1beta1"},
        {"kind", "MachineSet"},
        {"metadata",
         {{"name", "gpu-v100"},
          {"namespace", "openshift-machine-api"},
          {"annotations",
           {{"machine.openshift.io/vCPU", "32"},
            {"machine.openshift.io/memoryMb", "249856"},
            {"machine.openshift.io/GPU", "4"}}}}},
        {"spec",
         {{"replicas", 0},
          {"selector",
           {{"matchLabels", {{"machine.openshift.io/cluster-api-machineset", "gpu-v100"}}}}},
          {"template",
           {{"metadata",
             {{"labels", {{"machine.openshift.io/cluster-api-machineset", "gpu-v100"}}}}},
            {"spec",
             {{"metadata",
               {{"labels",
                 {{"node.kubernetes.io/machinepool", "v100"},
                  {"node.kubernetes.io/instance-type", "p3.8xlarge"},
                  {"nvidia.com/gpu.product", "Tesla-V100-SXM2-16GB"}}}}}}}}}}}};
    AsAdmin("POST", kMachineSets, set);
  }

  int Replicas() {
    auto res = kube_->Call({"GET", std::string(kMachineSets) + "/gpu-v100/scale"});
    if (!res.ok() || !res->ok()) return -1;
    return res->Json()["spec"].value("replicas", 0);
  }

  // The cluster's node named `name` (null when it has none), read as the role may: by listing.
  Json Node(const std::string& name) {
    auto res = kube_->Call({"GET", "/api/v1/nodes"});
    if (!res.ok() || !res->ok()) return Json();
    const Json listed = res->Json();
    for (const Json& node : listed["items"]) {
      if (node["metadata"]["name"] == name) return node;
    }
    return Json();
  }
};

TEST_F(MachinePoolsTest, APendingWorkflowScalesTheMachineSetUpAndAnEmptyNodeScalesItDown) {
  serve_args_.insert(serve_args_.end(),
                     {"--machine-pool-interval", "100ms", "--scale-down-after", "3s"});
  StartServe();
  CreateMachineSet();
  auto pool = http_->Put("/api/configs/MACHINE_POOL/v100", R"({
    "instance_type": "p3.8xlarge", "min_replicas": 0, "max_replicas": 2,
    "scale_target": {"api_version": "machine.openshift.io/v1beta1", "kind": "MachineSet",
                     "namespace": "openshift-machine-api", "name": "gpu-v100"}})",
                         "application/json");
  ASSERT_TRUE(pool && pool->status == 200) << (pool ? pool->body : "no answer");

  // Four GPUs on one node: no node of the cluster has them.
  std::string id = Submit(R"(workflow:
  name: big
  resources:
    default: {cpu: 4, memory: 16Gi, storage: 1Gi, gpu: 4}
  tasks:
  - {name: t, image: busybox, sim_duration: 3s}
)");
  ASSERT_FALSE(id.empty());
  EXPECT_TRUE(Eventually([&] { return Replicas() == 1; })) << serve_->Log();

  // The task runs on the node the MachineSet brought: in the pool by its label, and naming its
  // Machine as the controller's nodes do.
  Json task = WaitTask(id, [](const Json& t) { return t["status"] == "RUNNING"; });
  ASSERT_TRUE(task.is_object());
  const std::string node_name = task["node"].get<std::string>();
  Json node = Node(node_name);
  ASSERT_TRUE(node.is_object()) << node_name;
  EXPECT_EQ(node["metadata"]["labels"]["node.kubernetes.io/machinepool"], "v100");
  EXPECT_EQ(node["metadata"]["annotations"]["machine.openshift.io/machine"],
            "openshift-machine-api/" + node_name);
  Json workflow = WaitFor(id, {"COMPLETED", "FAILED", "CANCELED"});
  ASSERT_EQ(workflow["status"], "COMPLETED") << workflow.dump(2);
  EXPECT_EQ(workflow["tasks"][0]["node"], node_name);
  EXPECT_EQ(Replicas(), 1) << "asked once: the coming node stood in for the pending task";

  // Empty for 2 s: its Machine marked, replicas back to zero, node and Machine gone.
  EXPECT_TRUE(Eventually([&] { return Replicas() == 0; })) << serve_->Log();
  EXPECT_TRUE(Eventually([&] { return Node(node_name).is_null(); }));
  Json requests = FakeRequests();
  EXPECT_EQ(requests["patch machines"], 1) << requests.dump();
  EXPECT_EQ(requests["patch machinesets/scale"], 2) << requests.dump();
}

TEST_F(MachinePoolsTest, APoolWhoseMachineSetDoesNotExistSaysSoAndSchedulingGoesOn) {
  serve_args_.insert(serve_args_.end(), {"--machine-pool-interval", "100ms"});
  StartServe();
  auto pool = http_->Put("/api/configs/MACHINE_POOL/v100", R"({
    "instance_type": "p3.8xlarge", "max_replicas": 2,
    "scale_target": {"api_version": "machine.openshift.io/v1beta1", "kind": "MachineSet",
                     "namespace": "openshift-machine-api", "name": "missing"}})",
                         "application/json");
  ASSERT_TRUE(pool && pool->status == 200) << (pool ? pool->body : "no answer");
  std::string id = Submit(R"(workflow:
  name: small
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi}
  tasks:
  - {name: t, image: busybox, sim_duration: 1s}
)");
  EXPECT_EQ(WaitFor(id, {"COMPLETED", "FAILED", "CANCELED"})["status"], "COMPLETED");
  EXPECT_TRUE(Eventually([&] {
    auto metrics = http_->Get("/metrics");
    return metrics && metrics->body.find(
                          "gpupool_scheduling_step_errors_total{part=\"machine_"
                          "pools\"}") != std::string::npos;
  })) << serve_->Log();
}

}  // namespace kube_machine_pools_e2e_test
}  // namespace gpupool::kube_e2e
