#include <gtest/gtest.h>

#include "scheduler/scenario.h"
#include "scheduler/scheduler.h"
#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace {

using testing::MakeQueue;
using testing::NodeBuilder;
using testing::PodBuilder;

// Nodes of two shapes, one tainted; pods that fit, pods that do not (so the static lists learn
// failed shapes in a cycle), a selector and a toleration (several signatures). cpu and GPUs both
// run out, so a view that kept the last cycle's placements would decide differently.
ClusterSnapshot Snapshot(int pending) {
  ClusterSnapshot s;
  for (int i = 0; i < 6; ++i) {
    s.nodes.push_back(
        NodeBuilder("n" + std::to_string(i)).Gpus(i % 2 == 0 ? 8 : 4).Cpu("16").Build());
  }
  s.nodes.push_back(
      NodeBuilder("tainted").Gpus(8).Cpu("16").Taint("dedicated", "x", "NoSchedule").Build());
  s.queues.push_back(MakeQueue("team", "", {{"default", -1}}));
  for (int i = 0; i < pending; ++i) {
    PodBuilder pod("p" + std::to_string(i));
    pod.Gpus(1 + i % 5).Cpu(std::to_string(1 + i % 7)).Queue("team");
    if (i % 3 == 0) pod.Selector("kubernetes.io/hostname", "n" + std::to_string(i % 6));
    if (i % 4 == 0) {
      pod.Toleration({{"key", "dedicated"}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
    }
    s.pods.push_back(pod.Build());
  }
  return s;
}

std::string Decisions(const CycleResult& result) { return ScheduleResultToJson(result).dump(); }

// A view kept across cycles decides exactly as a fresh one, and is rebuilt when the caller says
// the nodes changed (and only then).
TEST(ViewCacheTest, SameDecisionsAsAFreshViewAndRebuiltWhenNodesChange) {
  const Scheduler scheduler{SchedulerOptions{}};
  ViewCache views;
  ClusterSnapshot s = Snapshot(12);
  s.nodes_generation = 1;
  for (int cycle = 0; cycle < 3; ++cycle) {
    SCOPED_TRACE(cycle);
    // Different pods each cycle, same nodes: the kept view must forget the last cycle's
    // placements and failed shapes.
    s.pods = Snapshot(12 + 7 * cycle).pods;
    EXPECT_EQ(Decisions(scheduler.RunCycle(s, &views)), Decisions(scheduler.RunCycle(s)));
  }
  EXPECT_EQ(views.builds(), 1);

  // The caller taints a node and says so: rebuilt, and the taint is honoured.
  s.nodes[0].taints.push_back({"maintenance", "", model::TaintEffect::kNoSchedule});
  s.nodes_generation = 2;
  const std::string kept = Decisions(scheduler.RunCycle(s, &views));
  EXPECT_EQ(kept, Decisions(scheduler.RunCycle(s)));
  EXPECT_EQ(views.builds(), 2);
  EXPECT_EQ(kept.find("\"node\":\"n0\""), std::string::npos) << kept;

  // Generation 0 (not tracked) always builds afresh.
  s.nodes_generation = 0;
  scheduler.RunCycle(s, &views);
  scheduler.RunCycle(s, &views);
  EXPECT_EQ(views.builds(), 4);
}

}  // namespace
}  // namespace gpupool::scheduler
