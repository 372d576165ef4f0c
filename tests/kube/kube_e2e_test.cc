// gpupool on a Kubernetes API server, end to end: the fake API server (with its simulated
// kubelets, seeded with real node objects from data/) and the real `gpupool-serve --backend
// kubernetes`, both child processes on free loopback ports. A workflow submitted to gpupool
// becomes pods gpupool creates in the pool's namespace with schedulerName gpupool and the
// gpupool.io labels, binds through pods/binding, and the kubelets run; the workflow ends as its
// pods end (exit codes included). Waits are bounded polls for states; nothing is timed.

#include "kube_e2e_fixture.h"

namespace gpupool::kube_e2e {
namespace kube_e2e_test {

TEST_F(KubernetesBackendTest, AWorkflowBecomesPodsGpupoolCreatesBindsAndSeesEnd) {
  std::string id = Submit(R"(workflow:
  name: train
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi}
  groups:
  - name: g
    tasks:
    - {name: a, image: busybox, sim_duration: 1s}
    - {name: b, image: busybox, sim_duration: 1s}
)");
  ASSERT_FALSE(id.empty());
  Json workflow = WaitFor(id, {"COMPLETED", "FAILED", "CANCELED"});
  EXPECT_EQ(workflow["status"], "COMPLETED");
  std::map<std::string, std::string> task_nodes;
  for (const Json& task : workflow["tasks"]) {
    EXPECT_EQ(task["status"], "COMPLETED");
    EXPECT_EQ(task["exit_code"], 0);
    task_nodes[task["name"].get<std::string>()] = task["node"].get<std::string>();
  }
  ASSERT_EQ(task_nodes.size(), 2u);

  Json pods = Pods();
  ASSERT_EQ(pods.size(), 2u);
  for (const Json& pod : pods) {
    const Json& labels = pod["metadata"]["labels"];
    EXPECT_EQ(pod["spec"]["schedulerName"], "gpupool");
    EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
    EXPECT_EQ(labels["app.kubernetes.io/managed-by"], "gpupool");
    EXPECT_EQ(labels["gpupool.io/workflow"], id);
    EXPECT_EQ(labels[scheduler::kQueueLabel], "default");
    EXPECT_TRUE(labels.contains(scheduler::kGangLabel));
    std::string task = labels["gpupool.io/task"].get<std::string>();
    EXPECT_EQ(pod["spec"]["nodeName"], task_nodes[task]) << "bound where gpupool decided";
    EXPECT_EQ(pod["metadata"]["annotations"]["gpupool.io/attempt"], id + "/g/" + task + "/0");
    EXPECT_EQ(pod["status"]["phase"], "Succeeded");
    EXPECT_EQ(pod["status"]["conditions"][0]["type"], "PodScheduled");
  }
  // Bound through the binding subresource, once per pod.
  Json requests = FakeRequests();
  EXPECT_EQ(requests["create pods/binding"], 2);
  EXPECT_EQ(requests["create pods"], 2);

  // The role is enforced: what it does not grant is refused as kube-apiserver refuses it.
  auto patched = kube_->Call({"PATCH", "/api/v1/nodes/nori", R"({"spec":{"unschedulable":true}})",
                              "application/merge-patch+json"});
  ASSERT_TRUE(patched.ok());
  EXPECT_EQ(patched->status, 403);
  EXPECT_NE(patched->body.find(R"(cannot patch resource \"nodes\")"), std::string::npos)
      << patched->body;
  provoked_denials_ = {{"patch nodes", 1}};
}

TEST_F(KubernetesBackendTest, APodsExitCodeFailsItsTask) {
  std::string id = Submit(R"(workflow:
  name: broken
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi}
  tasks:
  - {name: t, image: busybox, sim_duration: 1s, sim_exit_code: 3}
)");
  ASSERT_FALSE(id.empty());
  Json workflow = WaitFor(id, {"COMPLETED", "FAILED", "CANCELED"});
  EXPECT_EQ(workflow["status"], "FAILED");
  EXPECT_EQ(workflow["tasks"][0]["exit_code"], 3);
  Json pods = Pods();
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0]["status"]["phase"], "Failed");
  EXPECT_EQ(pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 3);
}

TEST_F(KubernetesBackendTest, CancelDeletesThePod) {
  std::string id = Submit(R"(workflow:
  name: long
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi}
  tasks:
  - {name: t, image: busybox, sim_duration: 1h}
)");
  ASSERT_FALSE(id.empty());
  WaitFor(id, {"RUNNING"});
  ASSERT_TRUE(Eventually([&] {
    Json pods = Pods();
    return pods.size() == 1 && pods[0]["status"]["phase"] == "Running";
  }));
  auto canceled = http_->Post("/api/workflow/" + id + "/cancel", "", "application/json");
  ASSERT_TRUE(canceled && canceled->status == 200) << (canceled ? canceled->body : "");
  WaitFor(id, {"CANCELED"});
  EXPECT_TRUE(Eventually([&] { return Pods().empty(); })) << Pods().dump(2);
}

// Pods gpupool did not create use their nodes: while another scheduler's pods hold every GPU, a
// GPU task waits with the scheduler's reason; when one node's GPU is given back, it runs there.
TEST_F(KubernetesBackendTest, OtherSchedulersPodsUseTheirNodesCapacity) {
  auto listed = kube_->Call({"GET", "/api/v1/nodes"});
  ASSERT_TRUE(listed.ok() && listed->ok());
  std::map<std::string, std::string> gpu_pods;  // node -> the other pod holding its GPUs
  const Json nodes = listed->Json();
  for (const Json& node : nodes["items"]) {
    const Json& allocatable = node["status"]["allocatable"];
    std::string gpus = allocatable.value("nvidia.com/gpu", "0");
    if (gpus == "0") continue;
    std::string name = node["metadata"]["name"].get<std::string>();
    Json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", "holder-" + std::to_string(gpu_pods.size())},
          {"annotations", {{"fake.gpupool.io/run-ms", "3600000"}}}}},
        {"spec",
         {{"nodeName", name},  // placed as a DaemonSet's pods are, or by another scheduler
          {"containers",
           {{{"name", "c"},
             {"image", "busybox"},
             {"resources", {{"requests", {{"nvidia.com/gpu", gpus}, {"cpu", "100m"}}}}}}}}}}};
    auto created = kube_->Call({"POST", "/api/v1/namespaces/others/pods", pod.dump()});
    ASSERT_TRUE(created.ok() && created->ok()) << (created.ok() ? created->body : "");
    gpu_pods[name] = pod["metadata"]["name"].get<std::string>();
  }
  ASSERT_GE(gpu_pods.size(), 2u) << "the T4 node and nori have GPUs";

  // gpupool's nodes show what the others take.
  auto gpupool_gpus = [&](const std::string& node) -> std::string {
    auto res = http_->Get("/api/nodes");
    if (!res || res->status != 200) return "";
    const Json list = Json::parse(res->body);
    for (const Json& item : list["items"]) {
      if (item["metadata"]["name"] == node) {
        return item["status"]["allocatable"].value("nvidia.com/gpu", "");
      }
    }
    return "";
  };
  for (const auto& entry : gpu_pods) {
    const std::string& node = entry.first;  // clang 14 cannot capture a structured binding
    EXPECT_TRUE(Eventually([&] { return gpupool_gpus(node) == "0"; })) << node;
  }

  std::string id = Submit(R"(workflow:
  name: gpu
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi, gpu: 1}
  tasks:
  - {name: t, image: busybox, sim_duration: 1s}
)");
  ASSERT_FALSE(id.empty());
  Json workflow;
  ASSERT_TRUE(Eventually([&] {
    auto res = http_->Get("/api/workflow/" + id);
    if (!res || res->status != 200) return false;
    workflow = Json::parse(res->body);
    return workflow["tasks"][0].value("message", "").find("nvidia.com/gpu") != std::string::npos;
  })) << workflow.dump(2);
  EXPECT_EQ(workflow["tasks"][0]["status"], "PENDING") << workflow.dump(2);
  // Its pod waits unbound, saying why (Karpenter and cluster-autoscaler see it).
  ASSERT_TRUE(Eventually([&] {
    Json pods = Pods();
    return pods.size() == 1 && Condition(pods[0], "PodScheduled").value("status", "") == "False";
  })) << Pods().dump(2);
  EXPECT_FALSE(Pods()[0]["spec"].contains("nodeName"));

  // nori's GPU is given back: the task runs there.
  ASSERT_TRUE(gpu_pods.contains("nori"));
  auto deleted = kube_->Call({"DELETE", "/api/v1/namespaces/others/pods/" + gpu_pods["nori"],
                              R"({"gracePeriodSeconds": 0})"});
  ASSERT_TRUE(deleted.ok() && deleted->ok());
  Json done = WaitFor(id, {"COMPLETED", "FAILED", "CANCELED"});
  EXPECT_EQ(done["status"], "COMPLETED") << done.dump(2);
  EXPECT_EQ(done["tasks"][0]["node"], "nori");
  Json pods = Pods();  // the pod made while it waited is the one bound: created once
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0]["spec"]["nodeName"], "nori");
  EXPECT_EQ(Condition(pods[0], "PodScheduled")["status"], "True");
}

// A task that fits nowhere says why, as kube-scheduler does: its pod exists unbound with
// schedulerName gpupool and PodScheduled=False, reason Unschedulable, the scheduler's message
// (what `kubectl describe pod` shows as Conditions), written once while the message stays the
// same; and one FailedScheduling Event whose count grows while the pod waits (the Events
// section), not an Event per cycle. Canceling the workflow deletes the pod.
TEST_F(KubernetesBackendTest, AnUnplaceableTasksPodSaysWhy) {
  std::string id = Submit(R"(workflow:
  name: huge
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi, gpu: 64}
  tasks:
  - {name: t, image: busybox, sim_duration: 1s}
)");
  ASSERT_FALSE(id.empty());
  std::string message;
  ASSERT_TRUE(Eventually([&] {
    auto res = http_->Get("/api/workflow/" + id);
    if (!res || res->status != 200) return false;
    message = Json::parse(res->body)["tasks"][0].value("message", "");
    return !message.empty();
  }));
  EXPECT_NE(message.find("nodes are available"), std::string::npos) << message;

  Json pod;
  ASSERT_TRUE(Eventually([&] {
    Json pods = Pods();
    if (pods.size() != 1) return false;
    pod = pods[0];
    return !Condition(pod, "PodScheduled").empty();
  })) << Pods().dump(2);
  EXPECT_EQ(pod["spec"]["schedulerName"], "gpupool");
  EXPECT_FALSE(pod["spec"].contains("nodeName"));
  EXPECT_EQ(pod["status"]["phase"], "Pending");
  EXPECT_EQ(pod["metadata"]["annotations"]["gpupool.io/attempt"], id + "/t-group/t/0")
      << pod.dump(2);
  Json scheduled = Condition(pod, "PodScheduled");
  EXPECT_EQ(scheduled["status"], "False");
  EXPECT_EQ(scheduled["reason"], "Unschedulable");
  EXPECT_EQ(scheduled["message"], message);

  const std::string name = pod["metadata"]["name"].get<std::string>();
  Json events;
  ASSERT_TRUE(Eventually([&] {
    events = EventsAbout(name, "FailedScheduling");
    return events.size() == 1 && events[0].value("count", 0) >= 3;
  })) << events.dump(2);
  const Json& event = events[0];
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["message"], message);
  EXPECT_EQ(event["involvedObject"]["kind"], "Pod");
  EXPECT_EQ(event["involvedObject"]["uid"], pod["metadata"]["uid"]);
  EXPECT_EQ(event["source"]["component"], "gpupool");
  EXPECT_LE(event["firstTimestamp"].get<std::string>(), event["lastTimestamp"].get<std::string>());
  Json requests = FakeRequests();
  EXPECT_EQ(requests["patch pods/status"], 1) << "the condition written once: " << requests.dump();
  EXPECT_EQ(requests["create events"], 1) << requests.dump();
  EXPECT_GE(requests["patch events"], 2) << requests.dump();

  auto canceled = http_->Post("/api/workflow/" + id + "/cancel", "", "application/json");
  ASSERT_TRUE(canceled && canceled->status == 200) << (canceled ? canceled->body : "");
  WaitFor(id, {"CANCELED"});
  EXPECT_TRUE(Eventually([&] { return Pods().empty(); })) << Pods().dump(2);
}

// kill -9 of gpupool while its task runs: the restarted server re-adopts the pod from the
// cluster (one pod, one binding) and sees the task end; a pod deleted while gpupool was down
// ends its task lost rather than starting it again.
TEST_F(KubernetesBackendTest, ARestartedServerAdoptsWhatRunsAndNeverStartsItTwice) {
  const std::string spec = R"(workflow:
  name: NAME
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi}
  tasks:
  - {name: t, image: busybox, sim_duration: DURATION}
)";
  auto workflow = [&](const std::string& name, const std::string& duration) {
    return std::regex_replace(std::regex_replace(spec, std::regex("NAME"), name),
                              std::regex("DURATION"), duration);
  };
  std::string kept = Submit(workflow("kept", "4s"));
  std::string lost = Submit(workflow("lost", "1h"));
  ASSERT_FALSE(kept.empty() || lost.empty());
  WaitFor(kept, {"RUNNING"});
  WaitFor(lost, {"RUNNING"});
  ASSERT_TRUE(Eventually([&] { return Pods().size() == 2; }));
  serve_->Kill9();
  std::string lost_pod;
  for (const Json& pod : Pods()) {
    if (pod["metadata"]["labels"]["gpupool.io/workflow"] == lost) {
      lost_pod = pod["metadata"]["name"].get<std::string>();
    }
  }
  ASSERT_FALSE(lost_pod.empty());
  auto deleted = kube_->Call(
      {"DELETE", "/api/v1/namespaces/gpupool/pods/" + lost_pod, R"({"gracePeriodSeconds": 0})"});
  ASSERT_TRUE(deleted.ok() && deleted->ok());
  StartServe();

  Json done = WaitFor(kept, {"COMPLETED", "FAILED", "CANCELED"});
  EXPECT_EQ(done["status"], "COMPLETED") << done.dump(2);
  Json gone = WaitFor(lost, {"COMPLETED", "FAILED", "CANCELED"});
  EXPECT_EQ(gone["status"], "FAILED");
  EXPECT_NE(gone["tasks"][0]["message"].get<std::string>().find("lost"), std::string::npos)
      << gone.dump(2);
  Json requests = FakeRequests();
  EXPECT_EQ(requests["create pods"], 2);  // nothing created again
  EXPECT_EQ(requests["create pods/binding"], 2);
  EXPECT_EQ(Pods().size(), 1u);
}

// KAI's way: a pod created by anyone with spec.schedulerName gpupool is placed by gpupool and
// bound through pods/binding; gpupool counts it on its node, so a second pod that needs the same
// room waits (saying why) until the first is gone, and then takes it.
TEST_F(KubernetesBackendTest, APodHandedInByAnyoneIsBoundToAFittingNode) {
  // Two GPUs at once: only the T4 node has them.
  CreateHandedInPod("team", "first", {{"nvidia.com/gpu", "2"}, {"cpu", "1"}});
  Json first;
  ASSERT_TRUE(Eventually([&] {
    first = GetPod("team", "first");
    return first["spec"].contains("nodeName");
  })) << first.dump(2)
      << serve_->Log();
  EXPECT_EQ(first["spec"]["nodeName"], "qa-mig-worker-gpu-1");
  EXPECT_EQ(Condition(first, "PodScheduled")["status"], "True");
  EXPECT_EQ(FakeRequests()["create pods/binding"], 1);

  CreateHandedInPod("team", "second", {{"nvidia.com/gpu", "2"}, {"cpu", "1"}});
  Json second = WaitUnschedulable("team", "second");
  EXPECT_NE(Condition(second, "PodScheduled")["message"].get<std::string>().find("nvidia.com/gpu"),
            std::string::npos)
      << second.dump(2);
  EXPECT_FALSE(second["spec"].contains("nodeName"));
  EXPECT_EQ(EventsAbout("second", "FailedScheduling").size(), 1u);

  auto deleted =
      kube_->Call({"DELETE", "/api/v1/namespaces/team/pods/first", R"({"gracePeriodSeconds": 0})"});
  ASSERT_TRUE(deleted.ok() && deleted->ok());
  ASSERT_TRUE(Eventually([&] {
    second = GetPod("team", "second");
    return second["spec"].contains("nodeName");
  })) << second.dump(2);
  EXPECT_EQ(second["spec"]["nodeName"], "qa-mig-worker-gpu-1");
  EXPECT_EQ(FakeRequests()["create pods/binding"], 2);
  EXPECT_EQ(FakeRequests()["create pods"], 2) << "gpupool creates nothing for pods handed in";
}

// A gang handed in is bound all together or not at all: three pods that must run together
// (gpupool.io/gang-min 3), of which only two fit (one per allowed node), stay pending, each
// with the Unschedulable condition; none is bound.
TEST_F(KubernetesBackendTest, AGangHandedInThatOnlyPartlyFitsIsNotBoundAtAll) {
  const Json only_two_nodes = Json::parse(R"({"affinity": {"nodeAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
          "values": ["aks-agentpool-30520393-vmss000000",
                     "aks-agentpool-30520393-vmss000001"]}]}]}}}})");
  const Json gang = {{"gpupool.io/gang", "trio"}, {"gpupool.io/gang-min", "3"}};
  for (const char* name : {"trio-0", "trio-1", "trio-2"}) {
    // 1900m allocatable per node: one such pod per node.
    CreateHandedInPod("team", name, {{"cpu", "1"}}, gang, only_two_nodes);
  }
  for (const char* name : {"trio-0", "trio-1", "trio-2"}) {
    Json pod = WaitUnschedulable("team", name);
    EXPECT_FALSE(pod["spec"].contains("nodeName")) << pod.dump(2);
    EXPECT_EQ(Condition(pod, "PodScheduled")["status"], "False");
    EXPECT_FALSE(Condition(pod, "PodScheduled")["message"].get<std::string>().empty());
  }
  EXPECT_EQ(FakeRequests()["create pods/binding"], Json()) << "nothing of the gang bound";

  // Its third member replaced by one that asks for a third node: the whole gang fits, and all
  // three are bound (on three nodes).
  auto deleted = kube_->Call(
      {"DELETE", "/api/v1/namespaces/team/pods/trio-2", R"({"gracePeriodSeconds": 0})"});
  ASSERT_TRUE(deleted.ok() && deleted->ok());
  Json third_node = only_two_nodes;
  third_node["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] =
                Json::array({"aks-agentpool-30520393-vmss000002"});
  CreateHandedInPod("team", "trio-3", {{"cpu", "1"}}, gang, third_node);
  std::set<std::string> nodes;
  ASSERT_TRUE(Eventually([&] {
    nodes.clear();
    for (const char* name : {"trio-0", "trio-1", "trio-3"}) {
      Json pod = GetPod("team", name);
      if (!pod["spec"].contains("nodeName")) return false;
      nodes.insert(pod["spec"]["nodeName"].get<std::string>());
    }
    return true;
  })) << serve_->Log();
  EXPECT_EQ(nodes.size(), 3u);
  EXPECT_EQ(FakeRequests()["create pods/binding"], 3);
}

// `gpupool workflow logs`: a task's output is its pod's log, read through pods/log in chunks by
// byte offset, complete once the task has ended and everything was read.
TEST_F(KubernetesBackendTest, ATasksLogIsItsPodsLog) {
  std::string id = Submit(R"(workflow:
  name: talk
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi}
  tasks:
  - {name: t, image: busybox, sim_duration: 1s}
)");
  ASSERT_FALSE(id.empty());
  Json workflow = WaitFor(id, {"COMPLETED", "FAILED", "CANCELED"});
  ASSERT_EQ(workflow["status"], "COMPLETED");
  const std::string node = workflow["tasks"][0]["node"];
  const std::string full =
      "fake kubelet: started on node " + node + "\nfake kubelet: exited with code 0 (Completed)\n";
  auto res = http_->Get("/api/workflow/" + id + "/logs?task=t");
  ASSERT_TRUE(res && res->status == 200) << (res ? res->body : "no answer");
  Json chunk = Json::parse(res->body);
  EXPECT_EQ(chunk["text"], full);
  EXPECT_EQ(chunk["size"], full.size());
  EXPECT_EQ(chunk["complete"], true);
  res = http_->Get("/api/workflow/" + id + "/logs?task=t&offset=5&limit=10");
  ASSERT_TRUE(res && res->status == 200) << (res ? res->body : "no answer");
  chunk = Json::parse(res->body);
  EXPECT_EQ(chunk["text"], full.substr(5, 10));
  EXPECT_EQ(chunk["next_offset"], 15);
  EXPECT_EQ(chunk["complete"], false);
  EXPECT_GE(FakeRequests().value("get pods/log", 0), 2);
}

// Preemption through the Eviction API: a NORMAL task that needs the only node with room for it
// preempts a LOW one. A PodDisruptionBudget over the LOW task's pod is seen before any victim is
// chosen: the LOW task keeps running untouched (no eviction asked), the NORMAL one waits naming
// the budget, nothing is bound into the room. Once the budget is gone, the eviction goes
// through: the LOW task is requeued (its pod gone), and the NORMAL one runs on that node. (The
// budget's 429, when the cluster refuses what gpupool did not foresee, is the backend's:
// src/backend/kubernetes/kube_backend_fake_test.cc.)
TEST_F(KubernetesBackendTest, PreemptionEvictsThroughTheEvictionApiAndItsBudgets) {
  // 20 CPUs: only the T4 node (32) has them.
  const std::string spec = R"(workflow:
  name: NAME
  priority: PRIORITY
  resources:
    default: {cpu: 20, memory: 1Gi, storage: 1Gi}
  tasks:
  - {name: t, image: busybox, sim_duration: 1h}
)";
  auto workflow = [&](const std::string& name, const std::string& priority) {
    return std::regex_replace(std::regex_replace(spec, std::regex("NAME"), name),
                              std::regex("PRIORITY"), priority);
  };
  std::string low = Submit(workflow("low", "LOW"));
  ASSERT_FALSE(low.empty());
  WaitFor(low, {"RUNNING"});
  std::string low_pod;
  ASSERT_TRUE(Eventually([&] {
    for (const Json& pod : Pods()) {
      if (pod["metadata"]["labels"]["gpupool.io/workflow"] == low &&
          Condition(pod, "Ready").value("status", "") == "True") {
        low_pod = pod["metadata"]["name"].get<std::string>();
      }
    }
    return !low_pod.empty();
  }));
  const Json budget = {
      {"apiVersion", "policy/v1"},
      {"kind", "PodDisruptionBudget"},
      {"metadata", {{"name", "low"}, {"namespace", "gpupool"}}},
      {"spec",
       {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"gpupool.io/workflow", low}}}}}}}};
  AsAdmin("POST", "/apis/policy/v1/namespaces/gpupool/poddisruptionbudgets", budget);

  std::string high = Submit(workflow("high", "NORMAL"));
  ASSERT_FALSE(high.empty());
  auto high_task = [&] {
    auto res = http_->Get("/api/workflow/" + high);
    return res && res->status == 200 ? Json::parse(res->body)["tasks"][0] : Json();
  };
  Json waiting;
  ASSERT_TRUE(Eventually([&] {
    waiting = high_task();
    return waiting.value("message", "").find("PodDisruptionBudget gpupool/low") !=
           std::string::npos;
  })) << waiting.dump(2)
      << serve_->Log();
  EXPECT_EQ(waiting["status"], "PENDING");
  Json requests = FakeRequests();
  EXPECT_EQ(requests["create pods/eviction"], Json()) << requests.dump();
  EXPECT_EQ(requests["create pods/binding"], 1)
      << "nothing bound into the room: " << requests.dump();
  EXPECT_EQ(Condition(GetPod("gpupool", low_pod), "DisruptionTarget"), Json::object());

  AsAdmin("DELETE", "/apis/policy/v1/namespaces/gpupool/poddisruptionbudgets/low");
  Json running = WaitFor(high, {"RUNNING", "FAILED", "CANCELED"});
  EXPECT_EQ(running["status"], "RUNNING");
  EXPECT_EQ(running["tasks"][0]["node"], "qa-mig-worker-gpu-1");
  // Requeued (the same attempt, pending again), not failed nor retried.
  WaitTask(low, [](const Json& task) { return task["status"] == "PENDING"; });
  auto requeued = http_->Get("/api/workflow/" + low);
  ASSERT_TRUE(requeued && requeued->status == 200);
  EXPECT_EQ(Json::parse(requeued->body)["tasks"].size(), 1u) << requeued->body;
  requests = FakeRequests();
  EXPECT_EQ(requests["create pods/eviction"], 1) << requests.dump();
  EXPECT_EQ(requests["create pods/binding"], 2) << requests.dump();
}

// A workflow's group is a gang: three tasks of which only two fit (13 CPUs each with the
// sidecar: two on the T4 node's 32, none on the A100 node's 12) are not bound at all; each has
// its pod, unbound, saying why.
TEST_F(KubernetesBackendTest, AGangOfTasksThatOnlyPartlyFitsIsNotBoundAtAll) {
  std::string id = Submit(R"(workflow:
  name: trio
  resources:
    default: {cpu: 12, memory: 1Gi, storage: 1Gi}
  groups:
  - name: g
    tasks:
    - {name: a, image: busybox, sim_duration: 1h}
    - {name: b, image: busybox, sim_duration: 1h}
    - {name: c, image: busybox, sim_duration: 1h}
)");
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(Eventually([&] {
    Json pods = Pods();
    if (pods.size() != 3) return false;
    for (const Json& pod : pods) {
      if (Condition(pod, "PodScheduled").value("reason", "") != "Unschedulable") return false;
    }
    return true;
  })) << Pods().dump(2);
  for (const Json& pod : Pods()) EXPECT_FALSE(pod["spec"].contains("nodeName")) << pod.dump(2);
  auto res = http_->Get("/api/workflow/" + id);
  ASSERT_TRUE(res && res->status == 200);
  for (const Json& task : Json::parse(res->body)["tasks"]) EXPECT_EQ(task["status"], "PENDING");
  EXPECT_EQ(FakeRequests()["create pods/binding"], Json()) << "nothing of the gang bound";
}

// A pod that needs what gpupool does not evaluate stays pending with a message naming the
// feature, never bound as if the constraint were absent.
TEST_F(KubernetesBackendTest, APodHandedInWithInterPodAffinityStaysPendingNamingIt) {
  const Json affinity = Json::parse(R"({"affinity": {"podAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "cache"}},
         "topologyKey": "kubernetes.io/hostname"}]}}})");
  CreateHandedInPod("team", "near-cache", {{"cpu", "100m"}}, Json::object(), affinity);
  Json pod = WaitUnschedulable("team", "near-cache");
  const std::string message = Condition(pod, "PodScheduled")["message"].get<std::string>();
  EXPECT_NE(message.find("required inter-pod affinity"), std::string::npos) << message;
  EXPECT_NE(message.find("spec.affinity.podAffinity"), std::string::npos) << message;
  Json events = EventsAbout("near-cache", "FailedScheduling");
  ASSERT_EQ(events.size(), 1u) << events.dump(2);
  EXPECT_EQ(events[0]["message"], message);
  EXPECT_FALSE(GetPod("team", "near-cache")["spec"].contains("nodeName"));
  EXPECT_EQ(FakeRequests()["create pods/binding"], Json());
}

}  // namespace kube_e2e_test
}  // namespace gpupool::kube_e2e
