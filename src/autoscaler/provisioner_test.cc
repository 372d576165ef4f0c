#include "autoscaler/provisioner.h"

#include <gtest/gtest.h>

#include <set>

#include "scheduler/scenario.h"

namespace gpupool::autoscaler {
namespace provisioner_test {

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
    auto decision = Reconcile(snapshot_, pools_, Catalog::Builtin(), now_ms, options_);
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
  ProvisionOptions& options() { return options_; }
  // The pods the loop evicts before its cycle (their drain ended): unbound here.
  std::vector<std::string> EvictDrained(int64_t now_ms) {
    std::vector<std::string> out;
    for (const auto& node : snapshot_.nodes) {
      for (const std::string& pod : DrainedPods(node, now_ms)) {
        for (auto& p : snapshot_.pods) {
          if (p.name == pod && p.node_name == node.name) {
            p.node_name.clear();
            out.push_back(pod);
          }
        }
      }
    }
    return out;
  }

 private:
  ProvisionOptions options_;
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

  // At the notice the pod is told to stop (default grace period 30 s) and the replacement
  // launches (its pod will need a home).
  ProvisionDecision replace = cluster.Step(3 * kMinute);
  EXPECT_EQ(Events(replace),
            (std::vector<std::string>{
                "ml-training-1: pod train told to stop: SIGTERM; grace period 30s, gone after 30s",
                "ml-training-2: launched (pending pods)"}));
  ASSERT_EQ(replace.stops.size(), 1u);
  EXPECT_EQ(replace.stops[0].end_ms, 3 * kMinute + 30'000);
  EXPECT_TRUE(cluster.EvictDrained(3 * kMinute + 29'000).empty());
  EXPECT_TRUE(cluster.Step(3 * kMinute + 29'000).stops.empty());  // told once
  // Say the loop missed the end of its grace period: at the deadline the node is tainted
  // NoExecute; the pod is still bound, so the node stays this step.
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

TEST(ProvisionerTest, SpotDrainHonoursBudgetsAndGracePeriods) {
  // Three pods on one spot node: a and b of app=train under a budget allowing one disruption
  // (b asks 20 s of grace), c with a preStop hook and 300 s of grace (more than the notice).
  auto pod = [](const std::string& name, const std::string& labels, const std::string& extra) {
    return "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + name + labels +
           "}\nspec:\n  nodeName: ml-training-1\n" + extra +
           "  containers: [{name: main, image: i}]\n";
  };
  const std::string train = ", labels: {app: train}";
  Cluster cluster(
      "---\napiVersion: v1\nkind: Node\nmetadata: {name: ml-training-1, labels: "
      "{node.kubernetes.io/machinepool: ml-training}}\n"
      "status: {allocatable: {cpu: '8', memory: 61Gi, pods: '110', nvidia.com/gpu: '1'}}\n" +
      pod("a", train, "") + pod("b", train, "  terminationGracePeriodSeconds: 20\n") +
      pod("c", "",
          "  terminationGracePeriodSeconds: 300\n"
          "  initContainers: []\n") +
      "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: train}\n"
      "spec: {maxUnavailable: 1, selector: {matchLabels: {app: train}}}\n");
  const int64_t notice = 2 * kMinute, deadline = 4 * kMinute;
  auto noticed = BeginInterruption(*cluster.Node("ml-training-1"), cluster.pools(), notice);
  ASSERT_TRUE(noticed.ok()) << noticed.status().ToString();
  *cluster.Node("ml-training-1") = *noticed;

  ProvisionDecision first = cluster.Step(notice);
  std::vector<std::string> told;
  for (const PodStop& stop : first.stops) told.push_back(stop.pod);
  EXPECT_EQ(told, (std::vector<std::string>{"a", "c"})) << ::testing::PrintToString(Events(first));
  ASSERT_EQ(first.stops.size(), 2u);
  EXPECT_EQ(first.stops[0].end_ms, notice + 30'000);  // the default grace period
  EXPECT_EQ(first.stops[1].end_ms, deadline);         // c's 300 s are cut to the 120 s left
  bool kept_event = false;
  for (const std::string& e : Events(first)) {
    kept_event |= e.starts_with(
        "ml-training-1: pod b kept running: PodDisruptionBudget train "
        "(maxUnavailable 1) allows 0 more disruptions");
  }
  EXPECT_TRUE(kept_event) << ::testing::PrintToString(Events(first));

  // a leaves after its 30 s. Pending, it is not healthy: of a and b only b is, and the budget
  // needs one, so b stays until its grace period must begin (deadline - 20 s).
  EXPECT_EQ(cluster.EvictDrained(notice + 30'000), std::vector<std::string>{"a"});
  EXPECT_TRUE(cluster.Step(notice + 30'000).stops.empty());
  EXPECT_TRUE(cluster.Step(deadline - 21'000).stops.empty());
  ProvisionDecision forced = cluster.Step(deadline - 20'000);
  ASSERT_EQ(forced.stops.size(), 1u) << ::testing::PrintToString(Events(forced));
  EXPECT_EQ(forced.stops[0].pod, "b");
  EXPECT_EQ(forced.stops[0].end_ms, deadline);
  EXPECT_NE(forced.stops[0].kept_by.find("PodDisruptionBudget train"), std::string::npos);
  EXPECT_EQ(cluster.EvictDrained(deadline), (std::vector<std::string>{"b", "c"}));
}

TEST(ProvisionerTest, PreStopHooksAreDescribed) {
  scheduler::Scenario scenario;
  ASSERT_TRUE(scheduler::AddScenarioText(
                  "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                  "  containers: [{name: app, image: i, lifecycle: {preStop: {exec: {command: "
                  "[/bin/sh, -c, save_checkpoint.sh]}}}}, {name: side, image: i, lifecycle: "
                  "{preStop: {sleep: {seconds: 5}}}}]\n",
                  "p.yaml", scenario)
                  .ok());
  PodStop stop;
  stop.pod = "p";
  stop.grace_seconds = 30;
  stop.told_ms = 0;
  stop.end_ms = 30'000;
  stop.pre_stop = scenario.snapshot.pods[0].pre_stop;
  EXPECT_EQ(DescribeStop(stop),
            "told to stop: preStop app: exec /bin/sh -c save_checkpoint.sh, side: sleep 5s, then "
            "SIGTERM; grace period 30s, gone after 30s");
}

// The live stall: with a short scale-down delay, the replacement launched at the notice was
// removed while the interrupted pod still drained, and a node launched in the step that removed
// another took its name, so the step's writes collided. The replacement now stays while the plan
// needs it, and names are never reused within a step.
TEST(ProvisionerTest, ShortScaleDownKeepsTheReplacementAndNeverReusesANameInAStep) {
  Cluster cluster(GpuPod("train"));
  cluster.options().provision_delay_ms = 1'000;
  cluster.options().scale_down_after_ms = 1'000;
  cluster.Step(0);
  cluster.Step(1'000);  // ready
  cluster.Bind("train", "ml-training-1");
  cluster.Step(2'000);
  auto noticed = BeginInterruption(*cluster.Node("ml-training-1"), cluster.pools(), 3'000);
  ASSERT_TRUE(noticed.ok());
  *cluster.Node("ml-training-1") = *noticed;
  std::set<std::string> launched;
  for (int64_t t = 3'000; t < 3'000 + 30'000; t += 500) {
    ProvisionDecision d = cluster.Step(t);
    std::set<std::string> upserted, deleted(d.deletes.begin(), d.deletes.end());
    for (const auto& n : d.upserts) upserted.insert(n.name);
    for (const std::string& name : deleted) {
      EXPECT_FALSE(upserted.contains(name)) << "node " << name << " written and deleted at " << t;
    }
    for (const auto& e : d.events) {
      if (e.what.starts_with("launched")) launched.insert(e.node);
      EXPECT_FALSE(e.what.starts_with("removed")) << e.node << ": " << e.what << " at " << t;
    }
  }
  // One replacement, kept empty while train drains.
  EXPECT_EQ(launched, std::set<std::string>{"ml-training-2"});
  EXPECT_NE(cluster.Node("ml-training-2"), nullptr);
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

}  // namespace provisioner_test
}  // namespace gpupool::autoscaler
