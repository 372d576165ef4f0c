// PlacementOutcome: placed, unschedulable (may fit later) or infeasible (never, as things are).

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "scheduler/scenario.h"
#include "scheduler/scheduler.h"
#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace outcome_test {

using testing::MakeNodePool;
using testing::MakeQueue;
using testing::NodeBuilder;
using testing::PodBuilder;
using Outcome = PlacementOutcome;

Outcome OutcomeOf(const CycleResult& result, const std::string& pod) {
  if (testing::FindBinding(result, pod) != nullptr) return Outcome::kPlaced;
  const PendingPod* pending = testing::FindPending(result, pod);
  EXPECT_NE(pending, nullptr) << pod;
  return pending == nullptr ? Outcome::kPlaced : pending->outcome;
}

// Over 80 lines only by its table of cases, one per row.
TEST(PlacementOutcomeTest, PlacedUnschedulableOrInfeasible) {
  struct Case {
    std::string name;
    std::vector<model::Node> nodes;
    std::vector<model::PodScheduling> pods;
    std::vector<model::Queue> queues;
    std::map<std::string, Outcome> want;
  };
  const model::Node gpu4 = NodeBuilder("n").Gpus(4).Build();
  const model::Node gpu8 = NodeBuilder("n").Gpus(8).Build();
  const std::vector<Case> cases = {
      {"fits: placed", {gpu4}, {PodBuilder("p").Gpus(2).Build()}, {}, {{"p", Outcome::kPlaced}}},
      {"bigger than every node: infeasible",
       {gpu4, NodeBuilder("m").Gpus(2).Build()},
       {PodBuilder("p").Gpus(8).Build()},
       {},
       {{"p", Outcome::kInfeasible}}},
      {"the node is full now: unschedulable",
       {gpu4},
       {PodBuilder("running").Gpus(4).On("n").Build(), PodBuilder("p").Gpus(2).Build()},
       {},
       {{"p", Outcome::kUnschedulable}}},
      {"every node has a taint it does not tolerate: infeasible",
       {NodeBuilder("n").Gpus(4).Taint("gpu", "yes", "NoSchedule").Build()},
       {PodBuilder("p").Gpus(1).Build()},
       {},
       {{"p", Outcome::kInfeasible}}},
      {"the only node is cordoned: infeasible",
       {NodeBuilder("n").Gpus(4).Unschedulable().Build()},
       {PodBuilder("p").Gpus(1).Build()},
       {},
       {{"p", Outcome::kInfeasible}}},
      {"a resource no node has: infeasible",
       {gpu4},
       {PodBuilder("p").Request("example.com/fpga", "1").Build()},
       {},
       {{"p", Outcome::kInfeasible}}},
      {"a fraction on a node without GPUs: infeasible",
       {NodeBuilder("n").Build()},
       {PodBuilder("p").Fraction("0.5").Gpus(1).Build()},
       {},
       {{"p", Outcome::kInfeasible}}},
      {"beyond its queue's limit alone: infeasible",
       {gpu8},
       {PodBuilder("p").Gpus(4).Queue("q").Build()},
       {MakeQueue("q", "", {{"default", 0, 2}})},
       {{"p", Outcome::kInfeasible}}},
      {"at its queue's limit because of running pods: unschedulable",
       {gpu8},
       {PodBuilder("running").Gpus(4).Queue("q").On("n").Build(),
        PodBuilder("p").Gpus(2).Queue("q").Build()},
       {MakeQueue("q", "", {{"default", 0, 4}})},
       {{"p", Outcome::kUnschedulable}}},
      {"non-preemptible beyond its deserved quota: infeasible",
       {gpu8},
       {PodBuilder("p").Gpus(4).Queue("q").Priority(100).Build()},
       {MakeQueue("q", "", {{"default", 2}})},
       {{"p", Outcome::kInfeasible}}},
      {"a queue that does not exist: infeasible",
       {gpu4},
       {PodBuilder("p").Gpus(1).Queue("nope").Build()},
       {},
       {{"p", Outcome::kInfeasible}}},
      {"a gang that needs a member no node can host: all infeasible",
       {gpu8},
       {PodBuilder("m1").Gpus(1).Gang("g").Build(), PodBuilder("m2").Gpus(16).Gang("g").Build()},
       {},
       {{"m1", Outcome::kInfeasible}, {"m2", Outcome::kInfeasible}}},
      {"a gang that starts without that member: it alone infeasible",
       {gpu8},
       {PodBuilder("m1").Gpus(1).Gang("g", 1).Build(),
        PodBuilder("m2").Gpus(16).Gang("g", 1).Build()},
       {},
       {{"m1", Outcome::kPlaced}, {"m2", Outcome::kInfeasible}}},
      {"a gang waiting for capacity: unschedulable",
       {gpu4},
       {PodBuilder("running").Gpus(3).On("n").Build(), PodBuilder("m1").Gpus(1).Gang("g").Build(),
        PodBuilder("m2").Gpus(1).Gang("g").Build()},
       {},
       {{"m1", Outcome::kUnschedulable}, {"m2", Outcome::kUnschedulable}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterSnapshot snapshot;
    snapshot.nodes = c.nodes;
    snapshot.pods = c.pods;
    snapshot.queues = c.queues;
    const CycleResult result = Scheduler(SchedulerOptions{}).RunCycle(snapshot);
    for (const auto& [pod, outcome] : c.want) {
      EXPECT_EQ(PlacementOutcomeName(OutcomeOf(result, pod)), PlacementOutcomeName(outcome)) << pod;
    }
  }
}

// Infeasible in one node pool, but the other could host it once capacity is freed.
TEST(PlacementOutcomeTest, AnyNodePoolThatCouldHostItMakesItUnschedulable) {
  ClusterSnapshot snapshot;
  snapshot.node_pools = {MakeNodePool("small"), MakeNodePool("big")};
  snapshot.nodes = {NodeBuilder("s").Gpus(2).Label("node-pool", "small").Build(),
                    NodeBuilder("b").Gpus(8).Label("node-pool", "big").Build()};
  snapshot.pods = {PodBuilder("running").Gpus(8).NodePools("big").On("b").Build(),
                   PodBuilder("p").Gpus(4).NodePools("small,big").Build(),
                   PodBuilder("q").Gpus(4).NodePools("small").Build()};
  const CycleResult result = Scheduler(SchedulerOptions{}).RunCycle(snapshot);
  EXPECT_EQ(OutcomeOf(result, "p"), Outcome::kUnschedulable);
  EXPECT_EQ(OutcomeOf(result, "q"), Outcome::kInfeasible);
}

TEST(PlacementOutcomeTest, EvictedPodsAreRequeuedAsUnschedulable) {
  ClusterSnapshot snapshot;
  snapshot.nodes = {NodeBuilder("n").Gpus(4).Taint("maint", "", "NoExecute").Build()};
  snapshot.pods = {PodBuilder("running").Gpus(1).On("n").Build()};
  const CycleResult result = Scheduler(SchedulerOptions{}).RunCycle(snapshot);
  ASSERT_EQ(result.evictions.size(), 1u);
  EXPECT_EQ(OutcomeOf(result, "running"), Outcome::kUnschedulable);
}

TEST(PlacementOutcomeTest, ScheduleJsonNamesTheOutcome) {
  ClusterSnapshot snapshot;
  snapshot.nodes = {NodeBuilder("n").Gpus(4).Build()};
  snapshot.pods = {PodBuilder("big").Gpus(8).Build()};
  const nlohmann::ordered_json json =
      ScheduleResultToJson(Scheduler(SchedulerOptions{}).RunCycle(snapshot));
  ASSERT_EQ(json["unschedulable"].size(), 1u);
  EXPECT_EQ(json["unschedulable"][0]["outcome"], "infeasible");
}

}  // namespace outcome_test
}  // namespace gpupool::scheduler
