// PodDisruptionBudgets bound reclaim and preemption (scheduler.h, step 3 and 4).

#include <gtest/gtest.h>

#include <optional>

#include "model/disruption_budget.h"
#include "scheduler/scheduler.h"
#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace disruption_test {

using testing::FindBinding;
using testing::FindPending;
using testing::MakeNodePool;
using testing::MakeQueue;
using testing::NodeBuilder;
using testing::PodBuilder;

model::PodDisruptionBudget Budget(const std::string& app, const std::string& rule,
                                  const nlohmann::ordered_json& value) {
  nlohmann::ordered_json spec = {{"selector", {{"matchLabels", {{"app", app}}}}}, {rule, value}};
  Result<model::PodDisruptionBudget> budget =
      model::PodDisruptionBudgetFromSpec(spec, app + "-pdb");
  EXPECT_TRUE(budget.ok()) << budget.status().ToString();
  return budget.ok() ? *budget : model::PodDisruptionBudget{};
}

// mlops borrowed all 8 GPUs of node pool a100 (2 nodes x 4) with eight 1-GPU pods labelled
// app=train; rnd, which deserves the 8, asks for four GPUs back.
ClusterSnapshot Borrowed() {
  ClusterSnapshot s;
  s.node_pools = {MakeNodePool("a100")};
  s.nodes = {NodeBuilder("n1").Gpus(4).Label("node-pool", "a100").Build(),
             NodeBuilder("n2").Gpus(4).Label("node-pool", "a100").Build()};
  s.queues = {MakeQueue("rnd", "", {{"a100", 8}}), MakeQueue("mlops", "", {{"a100", 0}})};
  for (int i = 0; i < 8; ++i) {
    s.pods.push_back(PodBuilder("m" + std::to_string(i))
                         .Gpus(1)
                         .Queue("mlops")
                         .NodePools("a100")
                         .Label("app", "train")
                         .On(i < 4 ? "n1" : "n2")
                         .Build());
  }
  for (int i = 0; i < 4; ++i) {
    s.pods.push_back(
        PodBuilder("r" + std::to_string(i)).Gpus(1).Queue("rnd").NodePools("a100").Build());
  }
  return s;
}

TEST(DisruptionBudgetTest, ReclaimStopsWhereTheBudgetSays) {
  struct Case {
    std::string name;
    std::optional<model::PodDisruptionBudget> budget;
    size_t evictions;
  };
  std::vector<Case> cases = {
      {"no budget", std::nullopt, 4},
      {"seed 004's minAvailable 0", Budget("train", "minAvailable", 0), 4},
      {"a budget over other pods", Budget("web", "minAvailable", 8), 4},
      {"minAvailable 6 of 8", Budget("train", "minAvailable", 6), 2},
      // ceil(60% x 8) = ceil(4.8) = 5 must stay: 3 may go.
      {"minAvailable 60% rounds up", Budget("train", "minAvailable", "60%"), 3},
      {"minAvailable 100%", Budget("train", "minAvailable", "100%"), 0},
      {"maxUnavailable 1", Budget("train", "maxUnavailable", 1), 1},
      // ceil(30% x 8) = ceil(2.4) = 3 may go.
      {"maxUnavailable 30% rounds up", Budget("train", "maxUnavailable", "30%"), 3},
      {"maxUnavailable 25%", Budget("train", "maxUnavailable", "25%"), 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterSnapshot s = Borrowed();
    if (c.budget) s.disruption_budgets.push_back(*c.budget);
    CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
    EXPECT_EQ(r.evictions.size(), c.evictions);
    size_t placed = 0;
    for (int i = 0; i < 4; ++i) {
      const std::string pod = "r" + std::to_string(i);
      if (FindBinding(r, pod) != nullptr) {
        ++placed;
        continue;
      }
      // A pod left pending says which victim the budget kept, and why.
      const PendingPod* pending = FindPending(r, pod);
      ASSERT_NE(pending, nullptr);
      EXPECT_NE(pending->reason.find("PodDisruptionBudget kept: pod m"), std::string::npos)
          << pending->reason;
      EXPECT_NE(pending->reason.find("(PodDisruptionBudget train-pdb (" + c.budget->Rule() +
                                     ") allows 0 more disruptions"),
                std::string::npos)
          << pending->reason;
    }
    EXPECT_EQ(placed, c.evictions);
    EXPECT_EQ(r.blocked_evictions.empty(), c.evictions == 4) << r.blocked_evictions.size();
    for (const BlockedEviction& b : r.blocked_evictions) {
      EXPECT_EQ(b.pod[0], 'm');
      EXPECT_EQ(b.for_pod[0], 'r');
      EXPECT_NE(b.message.find("PodDisruptionBudget train-pdb"), std::string::npos);
    }
  }
}

TEST(DisruptionBudgetTest, PreemptionInsideAQueueRespectsTheBudget) {
  // One 4-GPU node full of low-priority pods of rnd; two higher-priority rnd pods arrive.
  ClusterSnapshot s;
  s.node_pools = {MakeNodePool("a100")};
  s.nodes = {NodeBuilder("n1").Gpus(4).Label("node-pool", "a100").Build()};
  s.queues = {MakeQueue("rnd", "", {{"a100", 4}})};
  for (int i = 0; i < 4; ++i) {
    s.pods.push_back(PodBuilder("low" + std::to_string(i))
                         .Gpus(1)
                         .Queue("rnd")
                         .NodePools("a100")
                         .Priority(10)
                         .Label("app", "batch")
                         .On("n1")
                         .Build());
  }
  for (int i = 0; i < 2; ++i) {
    s.pods.push_back(PodBuilder("high" + std::to_string(i))
                         .Gpus(1)
                         .Queue("rnd")
                         .NodePools("a100")
                         .Priority(50)
                         .Build());
  }
  CycleResult free = Scheduler(SchedulerOptions{}).RunCycle(s);
  EXPECT_EQ(free.evictions.size(), 2u);

  s.disruption_budgets.push_back(Budget("batch", "maxUnavailable", 1));
  CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
  ASSERT_EQ(r.evictions.size(), 1u);
  EXPECT_EQ(r.evictions[0].reason, EvictionReason::kPreempt);
  EXPECT_NE(FindBinding(r, "high0"), nullptr);
  const PendingPod* pending = FindPending(r, "high1");
  ASSERT_NE(pending, nullptr);
  EXPECT_NE(pending->reason.find("PodDisruptionBudget batch-pdb (maxUnavailable 1) allows 0"),
            std::string::npos)
      << pending->reason;
  ASSERT_FALSE(r.blocked_evictions.empty());
  EXPECT_EQ(r.blocked_evictions[0].for_pod, "high1");
}

TEST(DisruptionBudgetTest, AGangVictimCountsEveryMember) {
  // mlops runs a 2-pod gang on n1 (2 GPUs); rnd's 4-GPU pod needs the node. A budget allowing
  // one disruption cannot let the gang go, since both members would.
  ClusterSnapshot s;
  s.node_pools = {MakeNodePool("a100")};
  s.nodes = {NodeBuilder("n1").Gpus(2).Label("node-pool", "a100").Build()};
  s.queues = {MakeQueue("rnd", "", {{"a100", 2}}), MakeQueue("mlops", "", {{"a100", 0}})};
  for (int i = 0; i < 2; ++i) {
    s.pods.push_back(PodBuilder("g" + std::to_string(i))
                         .Gpus(1)
                         .Queue("mlops")
                         .NodePools("a100")
                         .Gang("g")
                         .Label("app", "gang")
                         .On("n1")
                         .Build());
  }
  s.pods.push_back(PodBuilder("owner").Gpus(2).Queue("rnd").NodePools("a100").Build());
  struct Case {
    std::string name;
    model::PodDisruptionBudget budget;
    bool evicted;
  };
  std::vector<Case> cases = {
      {"one of two may go: the gang may not", Budget("gang", "maxUnavailable", 1), false},
      {"both may go", Budget("gang", "maxUnavailable", 2), true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterSnapshot with = s;
    with.disruption_budgets = {c.budget};
    CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(with);
    EXPECT_EQ(r.evictions.size(), c.evicted ? 2u : 0u);
    EXPECT_EQ(FindBinding(r, "owner") != nullptr, c.evicted);
  }
}

}  // namespace disruption_test
}  // namespace gpupool::scheduler
