// Allocation: queues, order, gangs, node pools and fallback, quota, determinism, NoExecute.

#include "scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <set>

#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace scheduler_test {

using testing::FindBinding;
using testing::FindPending;
using testing::FindShare;
using testing::GpuQuota;
using testing::MakeNodePool;
using testing::MakeQueue;
using testing::NodeBuilder;
using testing::PodBuilder;

CycleResult Decide(const ClusterSnapshot& snapshot, SchedulerOptions options = {}) {
  return Scheduler(options).RunCycle(snapshot);
}

TEST(SchedulerTest, PlacesPodsAndReportsTheRest) {
  ClusterSnapshot s;
  s.nodes = {NodeBuilder("n1").Gpus(4).Build(), NodeBuilder("n2").Gpus(4).Build()};
  for (int i = 0; i < 3; ++i) s.pods.push_back(PodBuilder("p" + std::to_string(i)).Gpus(3).Build());
  CycleResult r = Decide(s);
  EXPECT_EQ(r.bindings.size(), 2u);
  ASSERT_EQ(r.unschedulable.size(), 1u);
  EXPECT_EQ(r.unschedulable[0].pod, "p2");  // arrival order inside the queue
  EXPECT_EQ(r.unschedulable[0].reason, "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");
}

TEST(SchedulerTest, QueuesTakeTurnsByShare) {
  ClusterSnapshot s;
  s.nodes = {NodeBuilder("n1").Gpus(4).Build()};
  s.queues = {MakeQueue("a", "", {{"default", 2}}), MakeQueue("b", "", {{"default", 2}})};
  // All of a's pods arrive first; fair share still gives b its half.
  for (int i = 0; i < 4; ++i)
    s.pods.push_back(PodBuilder("a" + std::to_string(i)).Gpus(1).Queue("a").Build());
  for (int i = 0; i < 4; ++i)
    s.pods.push_back(PodBuilder("b" + std::to_string(i)).Gpus(1).Queue("b").Build());
  CycleResult r = Decide(s);
  int a = 0, b = 0;
  for (const Binding& x : r.bindings) (x.queue == "a" ? a : b)++;
  EXPECT_EQ(a, 2);
  EXPECT_EQ(b, 2);
}

TEST(SchedulerTest, PriorityThenAgeInsideQueue) {
  ClusterSnapshot s;
  s.nodes = {NodeBuilder("n1").Gpus(2).Build()};
  s.pods = {PodBuilder("old").Gpus(1).Build(), PodBuilder("newer").Gpus(1).Build(),
            PodBuilder("urgent").Gpus(1).PriorityClass("low").Build()};
  CycleResult r = Decide(s);
  // low = 50 beats the default 0; then the older pod.
  EXPECT_NE(FindBinding(r, "urgent"), nullptr);
  EXPECT_NE(FindBinding(r, "old"), nullptr);
  EXPECT_NE(FindPending(r, "newer"), nullptr);
}

TEST(SchedulerTest, AgeIsCreationTimestampThenInputOrder) {
  struct Case {
    std::string name;
    std::string a_created, b_created;  // "" = no metadata.creationTimestamp
    int a_priority = 0;
    std::string placed;  // one GPU: only the first pod of the queue's order runs
  };
  const std::string t = "2026-01-01T00:00:00Z";
  std::vector<Case> cases = {
      {"older creationTimestamp first", "2026-01-02T00:00:00Z", t, 0, "b"},
      {"equal times: input order", t, t, 0, "a"},
      {"without a time: after those with one", "", t, 0, "b"},
      {"no times at all: input order", "", "", 0, "a"},
      {"offsets compare as instants", "2026-01-01T02:00:00+03:00", t, 0, "a"},
      {"fractional seconds", "2026-01-01T00:00:00.500Z", "2026-01-01T00:00:00.250Z", 0, "b"},
      {"priority before age", "2026-01-02T00:00:00Z", t, 10, "a"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterSnapshot s;
    s.nodes = {NodeBuilder("n1").Gpus(1).Build()};
    PodBuilder a = PodBuilder("a").Gpus(1).Priority(c.a_priority);
    PodBuilder b = PodBuilder("b").Gpus(1);
    if (!c.a_created.empty()) a.Created(c.a_created);
    if (!c.b_created.empty()) b.Created(c.b_created);
    s.pods = {a.Build(), b.Build()};
    CycleResult r = Decide(s);
    ASSERT_EQ(r.bindings.size(), 1u);
    EXPECT_EQ(r.bindings[0].pod, c.placed);
  }
}

TEST(SchedulerTest, GangIsAsOldAsItsOldestPod) {
  ClusterSnapshot s;
  s.nodes = {NodeBuilder("n1").Gpus(2).Build()};
  s.pods = {PodBuilder("single").Gpus(2).Created("2026-01-01T00:00:10Z").Build(),
            PodBuilder("g0").Gpus(1).Gang("g").Created("2026-01-01T00:00:20Z").Build(),
            PodBuilder("g1").Gpus(1).Gang("g").Created("2026-01-01T00:00:05Z").Build()};
  CycleResult r = Decide(s);
  EXPECT_NE(FindBinding(r, "g0"), nullptr);
  EXPECT_NE(FindBinding(r, "g1"), nullptr);
  EXPECT_NE(FindPending(r, "single"), nullptr);
}

TEST(SchedulerTest, MalformedCreationTimestampIsReported) {
  ClusterSnapshot s;
  s.nodes = {NodeBuilder("n1").Gpus(1).Build()};
  s.pods = {PodBuilder("p").Gpus(1).Created("yesterday").Build()};
  CycleResult r = Decide(s);
  ASSERT_NE(FindPending(r, "p"), nullptr);
  EXPECT_EQ(FindPending(r, "p")->reason,
            "metadata.creationTimestamp: expected an RFC 3339 time, got \"yesterday\"");
}

TEST(SchedulerTest, GangAllOrNothing) {
  ClusterSnapshot s;
  s.nodes = {NodeBuilder("n1").Gpus(4).Build(), NodeBuilder("n2").Gpus(4).Build()};
  for (int i = 0; i < 3; ++i) {
    s.pods.push_back(PodBuilder("g" + std::to_string(i)).Gpus(4).Gang("train").Build());
  }
  s.pods.push_back(PodBuilder("solo").Gpus(2).Build());
  CycleResult r = Decide(s);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(FindBinding(r, "g" + std::to_string(i)), nullptr);
  EXPECT_NE(FindBinding(r, "solo"), nullptr);
  const PendingPod* p = FindPending(r, "g0");
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->reason.find("gang train"), std::string::npos) << p->reason;
}

// A gang's only pending pod holds no capacity while it searches: it shares the failure memory
// of single pods of its shape (one search per shape, not per pod), and still says it is a gang.
TEST(SchedulerTest, LoneGangPodsReuseTheReasonOfTheirShape) {
  ClusterSnapshot s;
  s.nodes = {NodeBuilder("n1").Gpus(2).Build(), NodeBuilder("n2").Gpus(8).Build()};
  s.pods = {PodBuilder("single").Gpus(4).Created("2026-01-01T00:00:01Z").Build(),
            PodBuilder("a0").Gpus(4).Gang("a").Created("2026-01-01T00:00:02Z").Build(),
            PodBuilder("b0").Gpus(4).Gang("b").Created("2026-01-01T00:00:03Z").Build(),
            PodBuilder("c0").Gpus(4).Gang("c").Created("2026-01-01T00:00:04Z").Build()};
  CycleResult r = Decide(s);
  // Two of the four fit n2; the other two find n2 full and n1 too small.
  ASSERT_EQ(r.bindings.size(), 2u);
  EXPECT_NE(FindBinding(r, "single"), nullptr);
  EXPECT_NE(FindBinding(r, "a0"), nullptr);
  const std::string why = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.";
  for (const char* gang : {"b", "c"}) {
    const PendingPod* p = FindPending(r, std::string(gang) + "0");
    ASSERT_NE(p, nullptr) << gang;
    EXPECT_EQ(p->reason, "gang " + std::string(gang) +
                             ": 0 of 1 pending pods fit, gang-min 1 needs 1; " + gang +
                             "0: " + why);
  }
}

TEST(SchedulerTest, GangMinPlacesAtLeastMin) {
  ClusterSnapshot s;
  s.nodes = {NodeBuilder("n1").Gpus(4).Build(), NodeBuilder("n2").Gpus(4).Build()};
  for (int i = 0; i < 3; ++i) {
    s.pods.push_back(PodBuilder("g" + std::to_string(i)).Gpus(4).Gang("train", 2).Build());
  }
  CycleResult r = Decide(s);
  EXPECT_EQ(r.bindings.size(), 2u);
  EXPECT_NE(FindPending(r, "g2"), nullptr);
}

TEST(SchedulerTest, GangPrefersOneTopologyDomain) {
  ClusterSnapshot s;
  s.node_pools = {MakeNodePool("pool", {"switch"})};
  // Sorted by name the nodes alternate switches; the gang must stay on one switch.
  for (int i = 0; i < 6; ++i) {
    s.nodes.push_back(NodeBuilder("n" + std::to_string(i))
                          .Gpus(8)
                          .Label("node-pool", "pool")
                          .Label("switch", i % 2 == 0 ? "s0" : "s1")
                          .Build());
  }
  for (int i = 0; i < 3; ++i) {
    s.pods.push_back(
        PodBuilder("g" + std::to_string(i)).Gpus(8).Gang("ring").NodePools("pool").Build());
  }
  CycleResult r = Decide(s);
  ASSERT_EQ(r.bindings.size(), 3u);
  std::set<std::string> switches;
  for (const Binding& b : r.bindings) {
    int index = b.node.back() - '0';
    switches.insert(index % 2 == 0 ? "s0" : "s1");
  }
  EXPECT_EQ(switches.size(), 1u);
}

TEST(SchedulerTest, NodePoolFallbackInOrder) {
  ClusterSnapshot s;
  s.node_pools = {MakeNodePool("a100"), MakeNodePool("v100")};
  s.nodes = {NodeBuilder("a").Gpus(4).Label("node-pool", "a100").Build(),
             NodeBuilder("v").Gpus(4).Label("node-pool", "v100").Build(),
             NodeBuilder("d").Gpus(4).Build()};
  s.pods = {PodBuilder("p1").Gpus(4).NodePools("a100,v100").Build(),
            PodBuilder("p2").Gpus(4).NodePools("a100, v100").Build(),
            PodBuilder("p3").Gpus(4).NodePools("a100,v100").Build(),
            PodBuilder("p4").Gpus(4).Build()};
  CycleResult r = Decide(s);
  ASSERT_NE(FindBinding(r, "p1"), nullptr);
  EXPECT_EQ(FindBinding(r, "p1")->node, "a");
  ASSERT_NE(FindBinding(r, "p2"), nullptr);
  EXPECT_EQ(FindBinding(r, "p2")->node, "v");
  EXPECT_EQ(FindBinding(r, "p4")->node, "d");  // no label: the default node pool
  const PendingPod* p3 = FindPending(r, "p3");
  ASSERT_NE(p3, nullptr);
  EXPECT_EQ(p3->reason,
            "0/1 nodes are available in node pool a100: 1 Insufficient nvidia.com/gpu.; 0/1 nodes "
            "are available in node pool v100: 1 Insufficient nvidia.com/gpu.");
}

TEST(SchedulerTest, QueueLimitReason) {
  ClusterSnapshot s;
  s.node_pools = {MakeNodePool("a100-80")};
  for (int i = 0; i < 4; ++i) {
    s.nodes.push_back(
        NodeBuilder("n" + std::to_string(i)).Gpus(4).Label("node-pool", "a100-80").Build());
  }
  s.queues = {MakeQueue("rnd", "", {}), MakeQueue("rnd-1", "rnd", {{"a100-80", 4, 8}})};
  for (int i = 0; i < 3; ++i) {
    s.pods.push_back(
        PodBuilder("p" + std::to_string(i)).Gpus(4).Queue("rnd-1").NodePools("a100-80").Build());
  }
  CycleResult r = Decide(s);
  EXPECT_EQ(r.bindings.size(), 2u);
  const PendingPod* p = FindPending(r, "p2");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->reason,
            "queue rnd-1 is at its limit of 8 nvidia.com/gpu in node pool a100-80 (8 in use, 4 "
            "requested)");
  const QueueShare* share = FindShare(r, "rnd-1", "a100-80");
  ASSERT_NE(share, nullptr);
  EXPECT_EQ(share->resources[0].allocated, 8000);
  EXPECT_EQ(share->resources[0].limit, 8000);
  EXPECT_EQ(share->resources[0].fair_share, 8000);  // capped by its limit
}

TEST(SchedulerTest, NonPreemptibleOnlyWithinDeserved) {
  ClusterSnapshot s;
  s.nodes = {NodeBuilder("n").Gpus(8).Build()};
  s.queues = {MakeQueue("q", "", {{"default", 2}})};
  s.pods = {PodBuilder("a").Gpus(2).Queue("q").PriorityClass("normal").Build(),
            PodBuilder("b").Gpus(1).Queue("q").PriorityClass("high").Build(),
            PodBuilder("c").Gpus(2).Queue("q").Build()};
  CycleResult r = Decide(s);
  EXPECT_NE(FindBinding(r, "b"), nullptr);  // highest priority first, within deserved 2
  EXPECT_NE(FindBinding(r, "c"), nullptr);  // preemptible: over quota is fine
  const PendingPod* a = FindPending(r, "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->reason,
            "queue q: NORMAL priority uses only deserved quota: 2 GPUs in node pool default; LOW "
            "may use idle GPUs over quota (1 in use, 2 requested)");
}

TEST(SchedulerTest, UnknownQueueAndDepartment) {
  ClusterSnapshot s;
  s.nodes = {NodeBuilder("n").Build()};
  s.queues = {MakeQueue("rnd", "", {}), MakeQueue("rnd-1", "rnd", {})};
  s.pods = {PodBuilder("a").Queue("rnd-2").Build(), PodBuilder("b").Queue("rnd").Build(),
            PodBuilder("c").NodePools("a100").Build()};
  CycleResult r = Decide(s);
  ASSERT_EQ(r.unschedulable.size(), 3u);
  EXPECT_EQ(FindPending(r, "a")->reason, "queue \"rnd-2\" not found (did you mean \"rnd-1\"?)");
  EXPECT_NE(FindPending(r, "b")->reason.find("is a department"), std::string::npos);
  EXPECT_NE(FindPending(r, "c")->reason.find("node pool \"a100\" not found"), std::string::npos);
}

TEST(SchedulerTest, NoExecuteEvictsAndRequeues) {
  ClusterSnapshot s;
  s.nodes = {NodeBuilder("bad").Gpus(4).Taint("maintenance", "true", "NoExecute").Build(),
             NodeBuilder("good").Gpus(4).Build()};
  s.pods = {PodBuilder("victim").Gpus(1).On("bad").Build(),
            PodBuilder("tolerant")
                .Gpus(1)
                .On("bad")
                .Toleration({{"key", "maintenance"}, {"operator", "Exists"}})
                .Build()};
  CycleResult r = Decide(s);
  ASSERT_EQ(r.evictions.size(), 1u);
  EXPECT_EQ(r.evictions[0].pod, "victim");
  EXPECT_EQ(r.evictions[0].reason, EvictionReason::kNoExecute);
  const PendingPod* p = FindPending(r, "victim");
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->reason.find("requeued"), std::string::npos);
}

TEST(SchedulerTest, FairSharePerNodePool) {
  ClusterSnapshot s;
  s.node_pools = {MakeNodePool("a100-80"), MakeNodePool("a100-40")};
  for (int i = 0; i < 2; ++i) {
    s.nodes.push_back(
        NodeBuilder("big" + std::to_string(i)).Gpus(4).Label("node-pool", "a100-80").Build());
    s.nodes.push_back(
        NodeBuilder("small" + std::to_string(i)).Gpus(4).Label("node-pool", "a100-40").Build());
  }
  s.queues = {MakeQueue("rnd", "", {{"a100-80", 8}}), MakeQueue("mlops", "", {{"a100-40", 8}})};
  // rnd wants 12 in a100-80 (deserved 8), mlops wants 4 there (deserved 0) and 8 in a100-40.
  for (int i = 0; i < 3; ++i)
    s.pods.push_back(
        PodBuilder("r" + std::to_string(i)).Gpus(4).Queue("rnd").NodePools("a100-80").Build());
  s.pods.push_back(PodBuilder("m0").Gpus(4).Queue("mlops").NodePools("a100-80").Build());
  for (int i = 1; i < 3; ++i)
    s.pods.push_back(
        PodBuilder("m" + std::to_string(i)).Gpus(4).Queue("mlops").NodePools("a100-40").Build());
  CycleResult r = Decide(s);
  // a100-80: 8 GPUs; rnd deserved 8 -> fair share 8, mlops 0. a100-40: mlops 8.
  EXPECT_EQ(FindShare(r, "rnd", "a100-80")->resources[0].fair_share, 8000);
  EXPECT_EQ(FindShare(r, "mlops", "a100-80")->resources[0].fair_share, 0);
  EXPECT_EQ(FindShare(r, "mlops", "a100-40")->resources[0].fair_share, 8000);
  EXPECT_EQ(FindShare(r, "rnd", "a100-80")->resources[0].allocated, 8000);
  EXPECT_EQ(FindShare(r, "mlops", "a100-40")->resources[0].allocated, 8000);
}

TEST(SchedulerTest, SameInputSameOutput) {
  ClusterSnapshot s;
  for (int i = 0; i < 20; ++i) {
    s.nodes.push_back(NodeBuilder("n" + std::to_string(i)).Gpus(i % 3 == 0 ? 8 : 4).Build());
  }
  for (int i = 0; i < 60; ++i) {
    PodBuilder p("p" + std::to_string(i));
    if (i % 4 == 0)
      p.Fraction("0.5");
    else
      p.Gpus(1 + i % 3);
    s.pods.push_back(p.Build());
  }
  CycleResult a = Decide(s), b = Decide(s);
  ASSERT_EQ(a.bindings.size(), b.bindings.size());
  for (size_t i = 0; i < a.bindings.size(); ++i) {
    EXPECT_EQ(a.bindings[i].pod, b.bindings[i].pod);
    EXPECT_EQ(a.bindings[i].node, b.bindings[i].node);
  }
}

}  // namespace scheduler_test
}  // namespace gpupool::scheduler

namespace gpupool::scheduler {
namespace scheduler_test {

// Departments are ordered before their projects (KAI): here the leaf order and the hierarchical
// order disagree on who gets the one free GPU.
//   Node n: 7 GPUs. Department A (deserved 4) has projects a1 (deserved 2) and a2 (deserved 2);
//   department B (deserved 4) has b1 (deserved 4). Running: 4 GPUs of a2, 2 of b1. Pending, in
//   arrival order: a1-new (1 GPU), b1-new (1 GPU).
//   GPU fair shares (capacity 7, demand a1 1, a2 4, b1 3): A gets min(4, 5) = 4, B min(4, 3) = 3;
//   inside A, a1 min(2, 1) = 1, a2 min(2, 4) = 2 plus A's leftover 1 = 3.
//   Leaf order: a1 (share 0) before b1 (2/3), both within deserved -> a1-new gets the GPU.
//   Hierarchical: A (4/4 = 1, not over its fair share) with a1-new would hold 5 > deserved 4;
//   B (2/3) with b1-new holds 3 <= 4 -> B first, b1-new gets the GPU.
TEST(QueueOrderTest, DepartmentsFirstThenProjects) {
  ClusterSnapshot s;
  s.nodes = {testing::NodeBuilder("n").Gpus(7).Build()};
  s.queues = {testing::MakeQueue("A", "", {{"default", 4}}),
              testing::MakeQueue("a1", "A", {{"default", 2}}),
              testing::MakeQueue("a2", "A", {{"default", 2}}),
              testing::MakeQueue("B", "", {{"default", 4}}),
              testing::MakeQueue("b1", "B", {{"default", 4}})};
  for (int i = 0; i < 4; ++i) {
    s.pods.push_back(
        testing::PodBuilder("a2-run-" + std::to_string(i)).Queue("a2").Gpus(1).On("n").Build());
  }
  for (int i = 0; i < 2; ++i) {
    s.pods.push_back(
        testing::PodBuilder("b1-run-" + std::to_string(i)).Queue("b1").Gpus(1).On("n").Build());
  }
  s.pods.push_back(testing::PodBuilder("a1-new").Queue("a1").Gpus(1).Build());
  s.pods.push_back(testing::PodBuilder("b1-new").Queue("b1").Gpus(1).Build());
  SchedulerOptions options;
  options.enable_reclaim = false;
  options.enable_preempt = false;
  CycleResult r = Scheduler(options).RunCycle(s);
  struct Case {
    std::string queue;
    int64_t fair_share_gpus;
  };
  for (const Case& c : {Case{"A", 4}, Case{"a1", 1}, Case{"a2", 3}, Case{"B", 3}, Case{"b1", 3}}) {
    SCOPED_TRACE(c.queue);
    const QueueShare* share = testing::FindShare(r, c.queue, "default");
    ASSERT_NE(share, nullptr);
    EXPECT_EQ(share->resources[0].fair_share, c.fair_share_gpus * 1000);
  }
  ASSERT_EQ(r.bindings.size(), 1u);
  EXPECT_EQ(r.bindings[0].pod, "b1-new");
  const PendingPod* pending = testing::FindPending(r, "a1-new");
  ASSERT_NE(pending, nullptr);
  EXPECT_EQ(pending->reason, "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
}

}  // namespace scheduler_test
}  // namespace gpupool::scheduler
