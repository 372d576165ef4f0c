// Reclaim across queues and preemption inside a queue (DESIGN section 4.3).

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "scheduler/scheduler.h"
#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace {

using testing::FindBinding;
using testing::FindPending;
using testing::FindShare;
using testing::MakeNodePool;
using testing::MakeQueue;
using testing::NodeBuilder;
using testing::PodBuilder;

// Two departments over an 8-GPU node pool "a100" (2 nodes x 4 GPUs).
ClusterSnapshot TwoDepartments(double rnd_deserved, double mlops_deserved) {
  ClusterSnapshot s;
  s.node_pools = {MakeNodePool("a100")};
  s.nodes = {NodeBuilder("n1").Gpus(4).Label("node-pool", "a100").Build(),
             NodeBuilder("n2").Gpus(4).Label("node-pool", "a100").Build()};
  s.queues = {MakeQueue("rnd", "", {{"a100", rnd_deserved}}),
              MakeQueue("mlops", "", {{"a100", mlops_deserved}})};
  return s;
}

void ExpectEvictedArePending(const CycleResult& r) {
  for (const Eviction& e : r.evictions) {
    const PendingPod* p = FindPending(r, e.pod);
    ASSERT_NE(p, nullptr) << e.pod << " was evicted but is not pending";
    EXPECT_NE(p->reason.find("requeued after eviction"), std::string::npos) << p->reason;
    EXPECT_EQ(FindBinding(r, e.pod), nullptr);
  }
}

TEST(ReclaimTest, OwnerGetsIdleGpusBack) {
  ClusterSnapshot s = TwoDepartments(8, 0);
  // mlops borrowed all 8 GPUs (over quota, preemptible).
  for (int i = 0; i < 8; ++i) {
    s.pods.push_back(PodBuilder("m" + std::to_string(i))
                         .Gpus(1)
                         .Queue("mlops")
                         .NodePools("a100")
                         .On(i < 4 ? "n1" : "n2")
                         .Build());
  }
  for (int i = 0; i < 4; ++i) {
    s.pods.push_back(
        PodBuilder("r" + std::to_string(i)).Gpus(1).Queue("rnd").NodePools("a100").Build());
  }
  CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
  EXPECT_EQ(r.evictions.size(), 4u);
  for (const Eviction& e : r.evictions) {
    EXPECT_EQ(e.reason, EvictionReason::kReclaim);
    EXPECT_EQ(e.pod[0], 'm');
  }
  for (int i = 0; i < 4; ++i) EXPECT_NE(FindBinding(r, "r" + std::to_string(i)), nullptr);
  ExpectEvictedArePending(r);
  EXPECT_EQ(FindShare(r, "rnd", "a100")->resources[0].allocated, 4000);
  EXPECT_EQ(FindShare(r, "mlops", "a100")->resources[0].allocated, 4000);
}

TEST(ReclaimTest, FewestEvictions) {
  ClusterSnapshot s = TwoDepartments(8, 0);
  // n1: one 4-GPU pod; n2: four 1-GPU pods. A 4-GPU owner pod needs one eviction, not four.
  s.pods.push_back(PodBuilder("big").Gpus(4).Queue("mlops").NodePools("a100").On("n1").Build());
  for (int i = 0; i < 4; ++i) {
    s.pods.push_back(PodBuilder("small" + std::to_string(i))
                         .Gpus(1)
                         .Queue("mlops")
                         .NodePools("a100")
                         .On("n2")
                         .Build());
  }
  s.pods.push_back(PodBuilder("owner").Gpus(4).Queue("rnd").NodePools("a100").Build());
  CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
  ASSERT_EQ(r.evictions.size(), 1u);
  EXPECT_EQ(r.evictions[0].pod, "big");
  ASSERT_NE(FindBinding(r, "owner"), nullptr);
  EXPECT_EQ(FindBinding(r, "owner")->node, "n1");
  ExpectEvictedArePending(r);
}

TEST(ReclaimTest, NeverBelowDeserved) {
  // mlops deserves 4 and uses all 8; rnd deserves 4 and asks for 6: it gets its 4 back, and
  // mlops keeps its deserved 4.
  ClusterSnapshot s = TwoDepartments(4, 4);
  for (int i = 0; i < 8; ++i) {
    s.pods.push_back(PodBuilder("m" + std::to_string(i))
                         .Gpus(1)
                         .Queue("mlops")
                         .NodePools("a100")
                         .On(i < 4 ? "n1" : "n2")
                         .Build());
  }
  for (int i = 0; i < 6; ++i) {
    s.pods.push_back(
        PodBuilder("r" + std::to_string(i)).Gpus(1).Queue("rnd").NodePools("a100").Build());
  }
  CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
  EXPECT_EQ(r.evictions.size(), 4u);
  EXPECT_EQ(FindShare(r, "mlops", "a100")->resources[0].allocated, 4000);
  EXPECT_EQ(FindShare(r, "rnd", "a100")->resources[0].allocated, 4000);
  EXPECT_EQ(FindShare(r, "rnd", "a100")->resources[0].fair_share, 4000);
  ExpectEvictedArePending(r);
}

TEST(ReclaimTest, QueueWithinDeservedIsNeverAVictim) {
  // mlops uses exactly its deserved 8; rnd (deserved 0) cannot take anything.
  ClusterSnapshot s = TwoDepartments(0, 8);
  for (int i = 0; i < 8; ++i) {
    s.pods.push_back(PodBuilder("m" + std::to_string(i))
                         .Gpus(1)
                         .Queue("mlops")
                         .NodePools("a100")
                         .On(i < 4 ? "n1" : "n2")
                         .Build());
  }
  s.pods.push_back(PodBuilder("r").Gpus(1).Queue("rnd").NodePools("a100").Build());
  CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
  EXPECT_TRUE(r.evictions.empty());
  EXPECT_NE(FindPending(r, "r"), nullptr);
}

TEST(ReclaimTest, NonPreemptibleNeverEvicted) {
  ClusterSnapshot s = TwoDepartments(8, 0);
  for (int i = 0; i < 8; ++i) {
    s.pods.push_back(PodBuilder("m" + std::to_string(i))
                         .Gpus(1)
                         .Queue("mlops")
                         .NodePools("a100")
                         .Priority(100)
                         .On(i < 4 ? "n1" : "n2")
                         .Build());
  }
  s.pods.push_back(PodBuilder("r").Gpus(1).Queue("rnd").NodePools("a100").Build());
  CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
  EXPECT_TRUE(r.evictions.empty());
  EXPECT_NE(FindPending(r, "r"), nullptr);
}

TEST(ReclaimTest, GangVictimGoesWhole) {
  ClusterSnapshot s = TwoDepartments(8, 0);
  // An mlops gang spans both nodes (2 + 2 GPUs); 4 single pods fill the rest.
  s.pods.push_back(
      PodBuilder("ga").Gpus(2).Queue("mlops").NodePools("a100").Gang("job").On("n1").Build());
  s.pods.push_back(
      PodBuilder("gb").Gpus(2).Queue("mlops").NodePools("a100").Gang("job").On("n2").Build());
  for (int i = 0; i < 4; ++i) {
    s.pods.push_back(PodBuilder("m" + std::to_string(i))
                         .Gpus(1)
                         .Queue("mlops")
                         .NodePools("a100")
                         .Priority(10)
                         .On(i < 2 ? "n1" : "n2")
                         .Build());
  }
  s.pods.push_back(PodBuilder("owner").Gpus(2).Queue("rnd").NodePools("a100").Build());
  CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
  ASSERT_NE(FindBinding(r, "owner"), nullptr);
  std::set<std::string> evicted;
  for (const Eviction& e : r.evictions) evicted.insert(e.pod);
  // Either both gang pods or neither.
  EXPECT_EQ(evicted.count("ga"), evicted.count("gb"));
  // Fewest evictions: two 1-GPU pods on one node cost 2, the gang costs 2 as well; the gang
  // pods have lower priority (0 < 10) so they go first.
  EXPECT_EQ(evicted.size(), 2u);
  ExpectEvictedArePending(r);
}

TEST(ReclaimTest, ReclaimAcrossProjectsOfOneDepartment) {
  ClusterSnapshot s;
  s.node_pools = {MakeNodePool("a100")};
  s.nodes = {NodeBuilder("n1").Gpus(4).Label("node-pool", "a100").Build()};
  s.queues = {MakeQueue("rnd", "", {{"a100", 4}}), MakeQueue("rnd-1", "rnd", {{"a100", 2}}),
              MakeQueue("rnd-2", "rnd", {{"a100", 2}})};
  for (int i = 0; i < 4; ++i) {
    s.pods.push_back(PodBuilder("a" + std::to_string(i))
                         .Gpus(1)
                         .Queue("rnd-1")
                         .NodePools("a100")
                         .On("n1")
                         .Build());
  }
  s.pods.push_back(PodBuilder("b").Gpus(2).Queue("rnd-2").NodePools("a100").Build());
  CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
  EXPECT_NE(FindBinding(r, "b"), nullptr);
  EXPECT_EQ(r.evictions.size(), 2u);
  EXPECT_EQ(FindShare(r, "rnd-1", "a100")->resources[0].allocated, 2000);
}

TEST(ReclaimTest, PreemptInsideQueue) {
  ClusterSnapshot s;
  s.nodes = {NodeBuilder("n").Gpus(2).Build()};
  s.queues = {MakeQueue("q", "", {{"default", 2}})};
  s.pods = {PodBuilder("low1").Gpus(1).Queue("q").Priority(10).On("n").Build(),
            PodBuilder("low2").Gpus(1).Queue("q").Priority(20).On("n").Build(),
            PodBuilder("hi").Gpus(1).Queue("q").Priority(50).Build(),
            PodBuilder("same").Gpus(1).Queue("q").Priority(10).Build()};
  CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
  ASSERT_EQ(r.evictions.size(), 1u);
  EXPECT_EQ(r.evictions[0].pod, "low1");  // the lowest priority goes
  EXPECT_EQ(r.evictions[0].reason, EvictionReason::kPreempt);
  EXPECT_NE(FindBinding(r, "hi"), nullptr);
  EXPECT_NE(FindPending(r, "same"), nullptr);  // equal priority never preempts
  ExpectEvictedArePending(r);
}

TEST(ReclaimTest, DisabledMeansNoEvictions) {
  ClusterSnapshot s = TwoDepartments(8, 0);
  for (int i = 0; i < 8; ++i) {
    s.pods.push_back(PodBuilder("m" + std::to_string(i))
                         .Gpus(1)
                         .Queue("mlops")
                         .NodePools("a100")
                         .On(i < 4 ? "n1" : "n2")
                         .Build());
  }
  s.pods.push_back(PodBuilder("r").Gpus(1).Queue("rnd").NodePools("a100").Build());
  SchedulerOptions options;
  options.enable_reclaim = false;
  options.enable_preempt = false;
  CycleResult r = Scheduler(options).RunCycle(s);
  EXPECT_TRUE(r.evictions.empty());
}

}  // namespace
}  // namespace gpupool::scheduler
