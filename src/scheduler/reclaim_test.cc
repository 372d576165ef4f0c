// Reclaim across queues and preemption inside a queue (DESIGN section 4.3).

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "scheduler/scheduler.h"
#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace reclaim_test {

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

TEST(ReclaimTest, GangVictimNeverTakesItsQueueBelowDeserved) {
  // mlops runs a 3-pod gang of 1 GPU each on n1 (and, in the third case, one more member on a
  // V100 node); rnd (deserved 6 in a100, 5 running) asks for 1 more GPU. Evicting one gang pod
  // evicts the whole gang, so the gang's sum per node pool is what must stay above deserved.
  struct Case {
    std::string name;
    double mlops_deserved_a100;
    double mlops_deserved_v100;
    bool member_in_v100;
    size_t evictions;
  };
  std::vector<Case> cases = {
      // 3 - 3 = 0 < 2: the gang stays (checking one pod, 3 - 1 >= 2, let all 3 go).
      {"deserved 2 of 3 running protects the gang", 2, 0, false, 0},
      {"deserved 0: the gang goes whole", 0, 0, false, 3},
      // The V100 member would take mlops from 1 to 0 in v100, below its deserved 1 there.
      {"a member in another node pool counts there", 0, 1, true, 0},
      {"another node pool without deserved quota", 0, 0, true, 4},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterSnapshot s;
    s.node_pools = {MakeNodePool("a100"), MakeNodePool("v100")};
    s.nodes = {NodeBuilder("n1").Gpus(4).Label("node-pool", "a100").Build(),
               NodeBuilder("n2").Gpus(4).Label("node-pool", "a100").Build(),
               NodeBuilder("v1").Gpus(1).Label("node-pool", "v100").Build()};
    s.queues = {
        MakeQueue("rnd", "", {{"a100", 6}}),
        MakeQueue("mlops", "", {{"a100", c.mlops_deserved_a100}, {"v100", c.mlops_deserved_v100}})};
    for (int i = 0; i < 3; ++i) {
      s.pods.push_back(PodBuilder("g" + std::to_string(i))
                           .Gpus(1)
                           .Queue("mlops")
                           .NodePools("a100,v100")
                           .Gang("job")
                           .On("n1")
                           .Build());
    }
    if (c.member_in_v100) {
      s.pods.push_back(PodBuilder("g3")
                           .Gpus(1)
                           .Queue("mlops")
                           .NodePools("a100,v100")
                           .Gang("job")
                           .On("v1")
                           .Build());
    }
    s.pods.push_back(PodBuilder("r0").Gpus(1).Queue("rnd").NodePools("a100").On("n1").Build());
    for (int i = 1; i < 5; ++i) {
      s.pods.push_back(PodBuilder("r" + std::to_string(i))
                           .Gpus(1)
                           .Queue("rnd")
                           .NodePools("a100")
                           .On("n2")
                           .Build());
    }
    s.pods.push_back(PodBuilder("new").Gpus(1).Queue("rnd").NodePools("a100").Build());
    CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
    EXPECT_EQ(r.evictions.size(), c.evictions);
    EXPECT_EQ(FindBinding(r, "new") != nullptr, c.evictions > 0);
    ExpectEvictedArePending(r);
  }
}

TEST(ReclaimTest, GangMemberPlacedThisCycleLeavesWithItsGang) {
  // The mlops gang "job" (gang-min 2) runs g0 on n1 and g1 on n2 (2 GPUs each); its third
  // member g2 (1 GPU) is pending and fits, so the allocate phase places it. "big" (4 GPUs, a
  // whole node) found no node and evicts the gang: every member goes, g2 included, though g2
  // was only placed in this cycle; it never ran, so it loses its binding instead of being
  // evicted. Left behind, g2 would run alone, below the gang's gang-min.
  struct Case {
    std::string name;
    bool reclaim;  // else preempt inside mlops
    EvictionReason reason;
  };
  std::vector<Case> cases = {
      {"reclaim by another queue", true, EvictionReason::kReclaim},
      {"preemption inside the queue", false, EvictionReason::kPreempt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterSnapshot s = TwoDepartments(8, 0);
    auto member = [](const std::string& name, int gpus) {
      return PodBuilder(name).Gpus(gpus).Queue("mlops").NodePools("a100").Gang("job", 2).Priority(
          10);
    };
    s.pods = {member("g0", 2).On("n1").Build(), member("g1", 2).On("n2").Build(),
              member("g2", 1).Build(),
              PodBuilder("big")
                  .Gpus(4)
                  .Queue(c.reclaim ? "rnd" : "mlops")
                  .NodePools("a100")
                  .Priority(50)
                  .Build()};
    CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
    ASSERT_NE(FindBinding(r, "big"), nullptr);
    std::set<std::string> evicted;
    for (const Eviction& e : r.evictions) {
      evicted.insert(e.pod);
      EXPECT_EQ(e.reason, c.reason);
    }
    EXPECT_EQ(evicted, (std::set<std::string>{"g0", "g1"}));
    EXPECT_EQ(FindBinding(r, "g2"), nullptr) << "g2 would run without its gang";
    const PendingPod* g2 = FindPending(r, "g2");
    EXPECT_NE(g2, nullptr);
    if (g2 != nullptr) {
      EXPECT_NE(g2->reason.find("gang job"), std::string::npos) << g2->reason;
    }
    ExpectEvictedArePending(r);
  }
}

TEST(ReclaimTest, GangEvictedThisCycleDoesNotRestartBelowGangMin) {
  // The mlops gang "job" (gang-min 2) runs g0 on n1 and g1 on n2; its third member g2 (3 GPUs)
  // is pending and does not fit. rnd's "big" (4 GPUs) reclaims the gang: g0 and g1 go. When
  // g2's turn comes, n1 has room for it, but the gang has no member running any more and g0
  // and g1 are not placed again in this cycle, so g2 alone would run below gang-min.
  ClusterSnapshot s = TwoDepartments(8, 0);
  auto member = [](const std::string& name, int gpus) {
    return PodBuilder(name).Gpus(gpus).Queue("mlops").NodePools("a100").Gang("job", 2);
  };
  s.pods = {member("g0", 2).On("n1").Build(), member("g1", 2).On("n2").Build(),
            member("g2", 3).Build(),
            PodBuilder("big").Gpus(4).Queue("rnd").NodePools("a100").Build(),
            // Keeps rnd's demand (and so its fair share) at its deserved 8 GPUs.
            PodBuilder("huge").Gpus(8).Queue("rnd").NodePools("a100").Build(),
            // A preemptible pod left running in a100 after the reclaim, so g2's job is tried.
            PodBuilder("r0").Gpus(1).Queue("rnd").NodePools("a100").On("n1").Build()};
  CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
  ASSERT_NE(FindBinding(r, "big"), nullptr);
  EXPECT_EQ(r.evictions.size(), 2u);
  EXPECT_EQ(FindBinding(r, "g2"), nullptr) << "g2 would run without its gang";
  EXPECT_NE(FindPending(r, "g2"), nullptr);
  ExpectEvictedArePending(r);
}

TEST(ReclaimTest, GangWithAnUnevictablePeerStays) {
  // A gang of two 1-GPU pods runs on n: "low" (priority 10) and "peer". The evictor needs one
  // GPU; evicting "low" would take "peer" along, so "peer" must be evictable too: preemptible
  // (priority < 100), and for preemption of lower priority than the preemptor (50).
  struct Case {
    std::string name;
    bool reclaim;  // else preempt inside the queue
    int peer_priority;
    size_t evictions;
  };
  std::vector<Case> cases = {
      {"reclaim: non-preemptible peer", true, 100, 0},
      {"reclaim: preemptible peer", true, 10, 2},
      {"preempt: peer not below the preemptor", false, 60, 0},
      {"preempt: non-preemptible peer", false, 125, 0},
      {"preempt: lower peer", false, 20, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterSnapshot s;
    s.nodes = {NodeBuilder("n").Gpus(2).Build()};
    const std::string owner = c.reclaim ? "mlops" : "rnd";
    s.queues = {MakeQueue("rnd", "", {{"default", 2}}), MakeQueue("mlops", "", {})};
    s.pods = {PodBuilder("low").Gpus(1).Queue(owner).Gang("job").Priority(10).On("n").Build(),
              PodBuilder("peer")
                  .Gpus(1)
                  .Queue(owner)
                  .Gang("job")
                  .Priority(c.peer_priority)
                  .On("n")
                  .Build(),
              PodBuilder("hi").Gpus(1).Queue("rnd").Priority(50).Build()};
    CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
    EXPECT_EQ(r.evictions.size(), c.evictions);
    for (const Eviction& e : r.evictions) {
      EXPECT_EQ(e.reason, c.reclaim ? EvictionReason::kReclaim : EvictionReason::kPreempt);
    }
    EXPECT_EQ(FindBinding(r, "hi") != nullptr, c.evictions > 0);
    ExpectEvictedArePending(r);
  }
}

TEST(ReclaimTest, ReclaimInAFallbackNodePool) {
  // rnd deserves 4 V100s in `default`, borrowed by mlops; the A100-80s are full with mlops'
  // non-preemptible pods. A pod listing `a100-80,default` competes in both node pools (its
  // demand counts in each), so rnd's fair share in `default` covers it and it reclaims there.
  // A pod listing only `a100-80` has no claim on `default`.
  struct Case {
    std::string name;
    std::string pools;
    bool placed;
  };
  std::vector<Case> cases = {
      {"fallback pool reclaims", "a100-80,default", true},
      {"no fallback: nothing to reclaim", "a100-80", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterSnapshot s;
    s.node_pools = {MakeNodePool("a100-80")};
    s.nodes = {NodeBuilder("a1").Gpus(4).Label("node-pool", "a100-80").Build(),
               NodeBuilder("v1").Gpus(4).Build(), NodeBuilder("v2").Gpus(4).Build()};
    s.queues = {MakeQueue("rnd", "", {{"a100-80", 0}, {"default", 4}}),
                MakeQueue("mlops", "", {{"a100-80", 4}, {"default", 0}})};
    s.pods.push_back(PodBuilder("serve")
                         .Gpus(4)
                         .Queue("mlops")
                         .NodePools("a100-80")
                         .Priority(125)
                         .On("a1")
                         .Build());
    for (int i = 0; i < 8; ++i) {
      s.pods.push_back(PodBuilder("m" + std::to_string(i))
                           .Gpus(1)
                           .Queue("mlops")
                           .On(i < 4 ? "v1" : "v2")
                           .Build());
    }
    s.pods.push_back(PodBuilder("train").Gpus(1).Queue("rnd").NodePools(c.pools).Build());
    CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
    const Binding* b = FindBinding(r, "train");
    ASSERT_EQ(b != nullptr, c.placed);
    if (!c.placed) {
      EXPECT_TRUE(r.evictions.empty());
      continue;
    }
    EXPECT_EQ(b->node_pool, "default");
    ASSERT_EQ(r.evictions.size(), 1u);
    EXPECT_EQ(r.evictions[0].reason, EvictionReason::kReclaim);
    EXPECT_EQ(r.evictions[0].pod[0], 'm');
    EXPECT_EQ(FindShare(r, "rnd", "default")->resources[0].fair_share, 1000);
    ExpectEvictedArePending(r);
  }
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

// Over 80 lines: one scenario whose steps build on each other, told in order.
TEST(ReclaimTest, QuotaChecksHoldAtEveryLevelOfTheTree) {
  // Three levels (department -> team -> project) over 8 GPUs in a100 (n1, n2: 4 each). The
  // reclaimer "r" runs in project t1-a of team t1; the victims are 1- and 2-GPU pods of project
  // t2-a. Reclaim compares the two sides at every level below the queue they share: the victim
  // side must be above its fair share there and stay at or above its deserved quota, the
  // reclaimer side must stay within its fair share with the pod, even at the team level that is
  // neither the project nor the department.
  struct Running {
    std::string name, queue, node;
    int gpus;
    int priority = 0;
  };
  struct Case {
    std::string name;
    std::vector<model::Queue> queues;
    std::vector<Running> running;
    int reclaimer_gpus;
    bool reclaims;
  };
  using testing::GpuQuota;
  const GpuQuota no_weight{"a100", 0, -1, 0};  // deserved 0, no over-quota share
  // t2-a holds 1 GPU on each node; "r" needs a whole node.
  const std::vector<Running> spread = {{"v1", "t2-a", "n1", 1}, {"v2", "t2-a", "n2", 1}};
  std::vector<Case> cases = {
      {"same department: the victim's team would drop below its deserved quota",
       {MakeQueue("d", "", {}), MakeQueue("t1", "d", {{"a100", 4}}),
        MakeQueue("t1-a", "t1", {{"a100", 4}}), MakeQueue("t2", "d", {{"a100", 2}}),
        MakeQueue("t2-a", "t2", {no_weight})},
       spread,
       4,
       false},
      {"other department: the victim's team would drop below its deserved quota",
       {MakeQueue("d1", "", {{"a100", 4}}), MakeQueue("t1", "d1", {{"a100", 4}}),
        MakeQueue("t1-a", "t1", {{"a100", 4}}), MakeQueue("d2", "", {no_weight}),
        MakeQueue("t2", "d2", {{"a100", 2, -1, 0}}), MakeQueue("t2-a", "t2", {no_weight})},
       spread,
       4,
       false},
      // t1-b (non-preemptible) runs 3 GPUs on a fair share of 2, so t1 would end at 5 of its 4
      // while t2 went down to 3 of its 4.
      {"same department: the reclaimer's team would go above its fair share",
       {MakeQueue("d", "", {}), MakeQueue("t1", "d", {{"a100", 4, -1, 0}}),
        MakeQueue("t1-a", "t1", {{"a100", 2}}), MakeQueue("t1-b", "t1", {{"a100", 2}}),
        MakeQueue("t2", "d", {{"a100", 1}}), MakeQueue("t2-a", "t2", {{"a100", 0}})},
       {{"b0", "t1-b", "n1", 1, 100},
        {"b1", "t1-b", "n1", 1, 100},
        {"b2", "t1-b", "n1", 1, 100},
        {"v0", "t2-a", "n1", 1},
        {"v1", "t2-a", "n2", 2},
        {"v2", "t2-a", "n2", 1},
        {"v3", "t2-a", "n2", 1}},
       2,
       false},
      {"the victim's team is above its fair share and deserved quota",
       {MakeQueue("d", "", {}), MakeQueue("t1", "d", {{"a100", 4}}),
        MakeQueue("t1-a", "t1", {{"a100", 4}}), MakeQueue("t2", "d", {no_weight}),
        MakeQueue("t2-a", "t2", {no_weight})},
       spread,
       4,
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterSnapshot s;
    s.node_pools = {MakeNodePool("a100")};
    s.nodes = {NodeBuilder("n1").Gpus(4).Label("node-pool", "a100").Build(),
               NodeBuilder("n2").Gpus(4).Label("node-pool", "a100").Build()};
    s.queues = c.queues;
    for (const Running& p : c.running) {
      s.pods.push_back(PodBuilder(p.name)
                           .Gpus(p.gpus)
                           .Queue(p.queue)
                           .NodePools("a100")
                           .Priority(p.priority)
                           .On(p.node)
                           .Build());
    }
    s.pods.push_back(
        PodBuilder("r").Gpus(c.reclaimer_gpus).Queue("t1-a").NodePools("a100").Build());
    CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
    EXPECT_EQ(FindBinding(r, "r") != nullptr, c.reclaims);
    EXPECT_EQ(r.evictions.size(), c.reclaims ? 1u : 0u);
    for (const Eviction& e : r.evictions) EXPECT_EQ(e.pod[0], 'v') << e.pod;
    ExpectEvictedArePending(r);
  }
}

TEST(ReclaimTest, ReclaimerSideCountsTheVictimsOfTheSameStep) {
  // Department "d" -> teams t1 (projects t1-a, t1-b) and t2 (project t2-a), over one node n1
  // (4 GPUs, 16 CPUs). The reclaimer "r" (t1-a, 2 GPUs, 12 CPUs) needs the GPUs of a t1-b pod and
  // the CPUs of a t2-a pod. Team t1 is at its fair share because t1-b runs above its own, so the
  // team-level check on the reclaimer's side passes for the t2-a victim only once the t1-b victim
  // chosen before it in the same step is counted as gone (as KAI checks the reclaimer's queues
  // against the state with the victims evicted), and fails if that victim is given back.
  struct Running {
    std::string name, queue;
    int gpus;
    int cpus;
    int priority = 0;
  };
  struct Case {
    std::string name;
    double t1_deserved, t1_b_deserved;
    std::vector<Running> running;
    std::set<std::string> evicted;  // empty: no reclaim
  };
  std::vector<Case> cases = {
      // t1 holds 3 of its fair share 3; without "s" it holds 1, with "r" 3 again.
      {"a sibling project's pod and another team's pod in one step",
       3,
       1,
       {{"s", "t1-b", 2, 1}, {"x", "t1-b", 1, 1, 100}, {"o", "t2-a", 1, 12}},
       {"s", "o"}},
      // Evicting "o" alone would make room for "r", but "o" was allowed only because "s" frees
      // t1's share: giving "s" back would leave t1 at 4 of its fair share 2.
      {"the sibling's pod is not given back when the other team's pod relies on it",
       2,
       0,
       {{"s", "t1-b", 2, 1}, {"o", "t2-a", 1, 12}},
       {"s", "o"}},
      // "s" frees 1 GPU of the 2 "r" adds to t1: t1 would end at 3 of its fair share 2.
      {"the sibling's pod frees less than the reclaimer adds to the team",
       2,
       1,
       {{"s", "t1-b", 1, 1}, {"x", "t1-b", 1, 1, 100}, {"o", "t2-a", 1, 12}},
       {}},
  };
  using testing::GpuQuota;
  const GpuQuota no_weight{"a100", 0, -1, 0};  // deserved 0, no over-quota share
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterSnapshot s;
    s.node_pools = {MakeNodePool("a100")};
    s.nodes = {NodeBuilder("n1").Gpus(4).Cpu("16").Label("node-pool", "a100").Build()};
    s.queues = {MakeQueue("d", "", {}),
                MakeQueue("t1", "d", {{"a100", c.t1_deserved, -1, 0}}),
                MakeQueue("t1-a", "t1", {{"a100", 2, -1, 0}}),
                MakeQueue("t1-b", "t1", {{"a100", c.t1_b_deserved, -1, 0}}),
                MakeQueue("t2", "d", {no_weight}),
                MakeQueue("t2-a", "t2", {no_weight})};
    for (const Running& p : c.running) {
      s.pods.push_back(PodBuilder(p.name)
                           .Gpus(p.gpus)
                           .Cpu(std::to_string(p.cpus))
                           .Queue(p.queue)
                           .NodePools("a100")
                           .Priority(p.priority)
                           .On("n1")
                           .Build());
    }
    s.pods.push_back(PodBuilder("r").Gpus(2).Cpu("12").Queue("t1-a").NodePools("a100").Build());
    CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
    std::set<std::string> evicted;
    for (const Eviction& e : r.evictions) {
      EXPECT_EQ(e.reason, EvictionReason::kReclaim);
      evicted.insert(e.pod);
    }
    EXPECT_EQ(evicted, c.evicted);
    EXPECT_EQ(FindBinding(r, "r") != nullptr, !c.evicted.empty());
    // t1's fair share is what the team holds before the step: the reclaim must not raise it.
    const QueueShare* t1 = FindShare(r, "t1", "a100");
    ASSERT_NE(t1, nullptr);
    EXPECT_LE(t1->resources[0].allocated, t1->resources[0].fair_share);
    ExpectEvictedArePending(r);
  }
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

}  // namespace reclaim_test
}  // namespace gpupool::scheduler
