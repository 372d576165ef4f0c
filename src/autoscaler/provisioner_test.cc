#include "autoscaler/provisioner.h"

#include <gtest/gtest.h>

#include "scheduler/scenario.h"

namespace gpupool::autoscaler {
namespace {

constexpr int64_t kMinute = 60'000;

// A V100 spot pool (0..3) and an on-demand pool that keeps one node.
constexpr char kPools[] = R"(
apiVersion: gpupool.io/v1
kind: MachinePool
metadata: {name: ml-training}
spec: {instance_type: p3.2xlarge, capacity_type: spot, min_replicas: 0, max_replicas: 3}
---
apiVersion: gpupool.io/v1
kind: MachinePool
metadata: {name: compute}
spec: {instance_type: c5.2xlarge, min_replicas: 1, max_replicas: 5}
)";

std::string GpuPod(const std::string& name, const std::string& node = "") {
  return "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n" +
         (node.empty() ? "" : "  nodeName: " + node + "\n") +
         "  tolerations: [{operator: Exists}]\n"
         "  containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: 1}}}]\n";
}

// A cluster that evolves step by step, as the server's loop would keep it in its store.
class Cluster {
 public:
  explicit Cluster(const std::string& text) {
    scheduler::Scenario scenario;
    Status added = scheduler::AddScenarioText(std::string(kPools) + text, "t.yaml", scenario);
    EXPECT_TRUE(added.ok()) << added.ToString();
    snapshot_ = scenario.snapshot;
    pools_ = *MachinePoolsFromManifests(scenario.machine_pools, Catalog::Builtin());
  }

  ProvisionDecision Step(int64_t now_ms) {
    auto decision = Reconcile(snapshot_, pools_, Catalog::Builtin(), now_ms, {});
    EXPECT_TRUE(decision.ok()) << decision.status().ToString();
    for (const auto& node : decision->upserts) {
      auto it = std::find_if(snapshot_.nodes.begin(), snapshot_.nodes.end(),
                             [&](const auto& n) { return n.name == node.name; });
      if (it == snapshot_.nodes.end()) {
        snapshot_.nodes.push_back(node);
      } else {
        *it = node;
      }
    }
    for (const auto& name : decision->deletes) {
      std::erase_if(snapshot_.nodes, [&](const auto& n) { return n.name == name; });
    }
    return *decision;
  }

  model::Node* Node(const std::string& name) {
    for (auto& n : snapshot_.nodes) {
      if (n.name == name) return &n;
    }
    return nullptr;
  }
  void Bind(const std::string& pod, const std::string& node) {
    for (auto& p : snapshot_.pods) {
      if (p.name == pod) p.node_name = node;
    }
  }
  std::vector<std::string> NodeNames() const {
    std::vector<std::string> out;
    for (const auto& n : snapshot_.nodes) out.push_back(n.name);
    std::sort(out.begin(), out.end());
    return out;
  }
  const std::vector<model::MachinePool>& pools() const { return pools_; }

 private:
  scheduler::ClusterSnapshot snapshot_;
  std::vector<model::MachinePool> pools_;
};

std::vector<std::string> Events(const ProvisionDecision& d) {
  std::vector<std::string> out;
  for (const auto& e : d.events) out.push_back(e.node + ": " + e.what);
  return out;
}

bool HasTaint(const model::Node& node, const std::string& key) {
  for (const auto& t : node.taints) {
    if (t.key == key) return true;
  }
  return false;
}

TEST(ProvisionerTest, LaunchWaitReadyThenScaleDownWhenEmpty) {
  Cluster cluster(GpuPod("train"));
  // t=0: min_replicas launches compute-1; the pending GPU pod launches ml-training-1.
  ProvisionDecision launch = cluster.Step(0);
  EXPECT_EQ(Events(launch), (std::vector<std::string>{"compute-1: launched (min_replicas)",
                                                      "ml-training-1: launched (pending pods)"}));
  model::Node* gpu = cluster.Node("ml-training-1");
  ASSERT_NE(gpu, nullptr);
  EXPECT_TRUE(HasTaint(*gpu, "node.kubernetes.io/not-ready"));
  EXPECT_EQ(gpu->annotations.at("gpupool.io/ready-at"), "60000");

  // t=30s: still launching; the launching node counts as capacity, nothing new.
  EXPECT_TRUE(Events(cluster.Step(30'000)).empty());

  // t=60s: ready.
  EXPECT_EQ(Events(cluster.Step(kMinute)),
            (std::vector<std::string>{"compute-1: ready", "ml-training-1: ready"}));
  EXPECT_FALSE(HasTaint(*cluster.Node("ml-training-1"), "node.kubernetes.io/not-ready"));

  // The pod runs there; then it finishes (unbound) and the node empties.
  cluster.Bind("train", "ml-training-1");
  EXPECT_TRUE(Events(cluster.Step(2 * kMinute)).empty());
  EXPECT_FALSE(cluster.Node("ml-training-1")->annotations.contains("gpupool.io/empty-since"));
}

TEST(ProvisionerTest, EmptySinceReadyAndMinReplicasKeepsNodes) {
  Cluster empty("");
  empty.Step(0);
  empty.Step(kMinute);  // compute-1 ready, and empty from that moment
  EXPECT_EQ(empty.Node("compute-1")->annotations.at("gpupool.io/empty-since"), "60000");
  // compute keeps min_replicas 1: never removed however long it stays empty.
  EXPECT_TRUE(empty.Step(60 * kMinute).deletes.empty());
  EXPECT_EQ(empty.NodeNames(), std::vector<std::string>{"compute-1"});
}

TEST(ProvisionerTest, EmptyNodesAboveMinGoAfterTheCoolDown) {
  Cluster cluster(GpuPod("a") + GpuPod("b"));
  cluster.Step(0);
  cluster.Step(kMinute);
  EXPECT_EQ(cluster.NodeNames(),
            (std::vector<std::string>{"compute-1", "ml-training-1", "ml-training-2"}));
  cluster.Bind("a", "ml-training-1");
  cluster.Bind("b", "ml-training-2");
  cluster.Step(2 * kMinute);
  // b finishes: model it by binding it to the other node (a then shares nothing; one GPU each
  // would not fit, but Reconcile only counts pods per node).
  cluster.Bind("b", "ml-training-1");
  cluster.Step(3 * kMinute);  // ml-training-2 empty since 3m
  EXPECT_EQ(cluster.Node("ml-training-2")->annotations.at("gpupool.io/empty-since"), "180000");
  EXPECT_TRUE(cluster.Step(12 * kMinute).deletes.empty());  // 9 minutes: not yet
  ProvisionDecision down = cluster.Step(13 * kMinute);
  EXPECT_EQ(down.deletes, std::vector<std::string>{"ml-training-2"});
  EXPECT_EQ(Events(down), std::vector<std::string>{"ml-training-2: removed: empty for 10m"});
}

TEST(ProvisionerTest, SpotInterruptionReplacesThenTerminates) {
  Cluster cluster(GpuPod("train"));
  cluster.Step(0);
  cluster.Step(kMinute);
  cluster.Bind("train", "ml-training-1");
  cluster.Step(2 * kMinute);

  auto noticed = BeginInterruption(*cluster.Node("ml-training-1"), cluster.pools(), 3 * kMinute);
  ASSERT_TRUE(noticed.ok()) << noticed.status().ToString();
  EXPECT_EQ(noticed->annotations.at("gpupool.io/interruption-deadline"), "300000");
  EXPECT_TRUE(HasTaint(*noticed, "gpupool.io/spot-interruption"));
  *cluster.Node("ml-training-1") = *noticed;
  EXPECT_EQ(BeginInterruption(*noticed, cluster.pools(), 3 * kMinute).status().code(),
            StatusCode::kFailedPrecondition);

  // At the notice the replacement launches (its pod will need a home).
  ProvisionDecision replace = cluster.Step(3 * kMinute);
  EXPECT_EQ(Events(replace), std::vector<std::string>{"ml-training-2: launched (pending pods)"});
  // At the deadline: NoExecute; the pod is still bound, so the node stays this step.
  ProvisionDecision deadline = cluster.Step(5 * kMinute);
  EXPECT_EQ(Events(deadline),
            (std::vector<std::string>{
                "ml-training-1: interruption deadline: tainted NoExecute, its pods are evicted",
                "ml-training-2: ready"}));
  EXPECT_TRUE(deadline.deletes.empty());
  // The scheduler evicted the pod (NoExecute) and placed it on the replacement.
  cluster.Bind("train", "ml-training-2");
  ProvisionDecision gone = cluster.Step(5 * kMinute + 200);
  EXPECT_EQ(gone.deletes, std::vector<std::string>{"ml-training-1"});
  EXPECT_EQ(cluster.NodeNames(), (std::vector<std::string>{"compute-1", "ml-training-2"}));
}

TEST(ProvisionerTest, AfterCycleBindsAndEvicts) {
  scheduler::ClusterSnapshot before;
  model::PodScheduling placed, evicted, other;
  placed.name = "placed";
  placed.namespace_ = "default";
  evicted.name = "evicted";
  evicted.namespace_ = "default";
  evicted.node_name = "n1";
  other.name = "other";
  other.namespace_ = "team";
  other.node_name = "n2";
  before.pods = {placed, evicted, other};
  scheduler::CycleResult cycle;
  cycle.bindings.push_back({"placed", "n3", "default", "q", -1});
  cycle.evictions.push_back({"evicted", "n1", scheduler::EvictionReason::kNoExecute, ""});
  scheduler::ClusterSnapshot after = AfterCycle(before, cycle);
  EXPECT_EQ(after.pods[0].node_name, "n3");
  EXPECT_EQ(after.pods[1].node_name, "");
  EXPECT_EQ(after.pods[2].node_name, "n2");
}

TEST(ProvisionerTest, OnlySpotMachinePoolNodesGetNotices) {
  Cluster cluster("");
  cluster.Step(0);
  auto refused = BeginInterruption(*cluster.Node("compute-1"), cluster.pools(), 0);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  model::Node stranger;
  stranger.name = "bare";
  EXPECT_EQ(BeginInterruption(stranger, cluster.pools(), 0).status().code(),
            StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gpupool::autoscaler
