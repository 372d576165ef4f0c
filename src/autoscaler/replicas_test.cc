#include "autoscaler/replicas.h"

#include <gtest/gtest.h>

#include "scheduler/scenario.h"

namespace gpupool::autoscaler {
namespace replicas_test {

constexpr int64_t kNow = 1'800'000'000'000;
constexpr int64_t kMinute = 60'000;

// A V100 spot pool (0..3) made by an OpenShift MachineSet.
constexpr char kPool[] = R"(
apiVersion: gpupool.io/v1
kind: MachinePool
metadata: {name: gpu}
spec:
  instance_type: p3.2xlarge
  capacity_type: spot
  min_replicas: 0
  max_replicas: 3
  scale_target: {api_version: machine.openshift.io/v1beta1, kind: MachineSet,
                 namespace: openshift-machine-api, name: gpu-a}
)";

std::string GpuPod(const std::string& name, const std::string& node = "") {
  return "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n" +
         (node.empty() ? "" : "  nodeName: " + node + "\n") +
         "  tolerations: [{operator: Exists}]\n"
         "  containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: 1}}}]\n";
}

// One step of the planner: the pool with `replicas` as read, `joined` nodes of the pool in the
// cluster (made from the pool's template, as the machine controller would), and the pods.
struct Step {
  int32_t replicas = 0;
  std::vector<std::string> joined;
  std::vector<std::string> not_ready;    // of `joined`: still starting
  std::vector<std::string> interrupted;  // of `joined`: the termination handler's taint
  std::string pods;
  std::map<std::string, int64_t> empty_since;
  int32_t min_replicas = 0;
};

Result<ReplicaPlan> Plan(const Step& step) {
  scheduler::Scenario scenario;
  Status added = scheduler::AddScenarioText(std::string(kPool) + step.pods, "t.yaml", scenario);
  if (!added.ok()) return added;
  ASSIGN_OR_RETURN(auto pools,
                   MachinePoolsFromManifests(scenario.machine_pools, Catalog::Builtin()));
  pools[0].min_replicas = step.min_replicas;
  const model::InstanceType& type = *Catalog::Builtin().Find("p3.2xlarge");
  for (const std::string& name : step.joined) {
    model::Node node = TemplateNode(pools[0], type, name);
    auto listed = [&](const std::vector<std::string>& names) {
      return std::find(names.begin(), names.end(), name) != names.end();
    };
    if (listed(step.not_ready)) {
      node.taints.push_back({"node.kubernetes.io/not-ready", "", model::TaintEffect::kNoSchedule});
    }
    if (listed(step.interrupted)) {
      node.taints.push_back(
          {"aws-node-termination-handler/spot-itn", "", model::TaintEffect::kNoSchedule});
    }
    scenario.snapshot.nodes.push_back(std::move(node));
  }
  ProvisionOptions options;
  options.scale_down_after_ms = 10 * kMinute;
  return PlanReplicas(scenario.snapshot, {{pools[0], step.replicas}}, Catalog::Builtin(),
                      step.empty_since, kNow, options);
}

// Over 80 lines only by its table of cases, one per row.
TEST(PlanReplicasTest, AsksForWhatPendingPodsNeedOnceAndRemovesWhatStaysEmpty) {
  struct Case {
    const char* what;
    Step step;
    int32_t to;  // -1: no change
    std::vector<std::string> removed;
    std::string reason;
  };
  const Case cases[] = {
      {"a pending GPU pod scales the MachineSet from zero",
       {0, {}, {}, {}, GpuPod("p")},
       1,
       {},
       "pending pods"},
      {"two pending pods of one GPU each fit one 1-GPU node each",
       {0, {}, {}, {}, GpuPod("p") + GpuPod("q")},
       2,
       {},
       "pending pods"},
      {"the replica asked for has not joined yet: not asked again",
       {1, {}, {}, {}, GpuPod("p")},
       -1,
       {},
       ""},
      {"a node that joined but is not ready counts as capacity",
       {1, {"gpu-a-1"}, {"gpu-a-1"}, {}, GpuPod("p")},
       -1,
       {},
       ""},
      {"never past max_replicas",
       {3,
        {"a", "b", "c"},
        {},
        {},
        GpuPod("x", "a") + GpuPod("y", "b") + GpuPod("z", "c") + GpuPod("p")},
       -1,
       {},
       ""},
      {"an interrupted node's pod gets a replacement node",
       {1, {"gpu-a-1"}, {}, {"gpu-a-1"}, GpuPod("p", "gpu-a-1")},
       2,
       {},
       "pending pods"},
      {"an empty node is kept until it has been empty for the wait",
       {1, {"gpu-a-1"}, {}, {}, "", {{"gpu-a-1", kNow - 9 * kMinute}}},
       -1,
       {},
       ""},
      {"then removed, its Machine first",
       {1, {"gpu-a-1"}, {}, {}, "", {{"gpu-a-1", kNow - 10 * kMinute}}},
       0,
       {"gpu-a-1"},
       "empty for 10m"},
      {"a node with a pod stays",
       {1, {"gpu-a-1"}, {}, {}, GpuPod("p", "gpu-a-1"), {{"gpu-a-1", kNow - 60 * kMinute}}},
       -1,
       {},
       ""},
      {"never below min_replicas",
       {1, {"gpu-a-1"}, {}, {}, "", {{"gpu-a-1", kNow - 60 * kMinute}}, 1},
       -1,
       {},
       ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto plan = Plan(c.step);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    if (c.to < 0) {
      EXPECT_TRUE(plan->changes.empty()) << plan->changes[0].to;
      continue;
    }
    ASSERT_EQ(plan->changes.size(), 1u);
    const ReplicaChange& change = plan->changes[0];
    EXPECT_EQ(change.machine_pool, "gpu");
    EXPECT_EQ(change.target.name, "gpu-a");
    EXPECT_EQ(change.from, c.step.replicas);
    EXPECT_EQ(change.to, c.to);
    EXPECT_EQ(change.remove_nodes, c.removed);
    EXPECT_EQ(change.reason, c.reason);
  }
}

TEST(PlanReplicasTest, RemembersSinceWhenANodeIsEmpty) {
  Step step{1, {"gpu-a-1"}, {}, {}, ""};
  auto first = Plan(step);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->changes.empty());
  EXPECT_EQ(first->empty_since, (std::map<std::string, int64_t>{{"gpu-a-1", kNow}}));
  step.empty_since = {{"gpu-a-1", kNow - 3 * kMinute}};
  auto later = Plan(step);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->empty_since.at("gpu-a-1"), kNow - 3 * kMinute);
  step.pods = GpuPod("p", "gpu-a-1");  // a pod landed: no longer empty, forgotten
  auto busy = Plan(step);
  ASSERT_TRUE(busy.ok());
  EXPECT_TRUE(busy->empty_since.empty());
}

TEST(PlanReplicasTest, RefusesAPoolWithoutScaleTarget) {
  model::MachinePool pool;
  pool.name = "plain";
  pool.instance_type = "p3.2xlarge";
  pool.max_replicas = 2;
  auto plan = PlanReplicas({}, {{pool, 0}}, Catalog::Builtin(), {}, kNow, ProvisionOptions{});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("no scale_target"), std::string::npos);
}

}  // namespace replicas_test
}  // namespace gpupool::autoscaler
