#include <gtest/gtest.h>

#include <map>
#include <ostream>

#include "scheduler/cluster_view.h"
#include "scheduler/cycle.h"
#include "scheduler/cycle_setup.h"
#include "scheduler/cycle_state.h"
#include "scheduler/quota_table.h"
#include "scheduler/scenario.h"
#include "scheduler/scheduler.h"
#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace view_cache_test {

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

// A caller like the replay: pods arrive, each cycle's bindings and evictions are applied, some
// pods leave, and every pod carries an id (ClusterSnapshot::pod_ids) that changes with it.
class ReplayLikeCaller {
 public:
  enum class Ids { kGrowAlongPods, kNewOnEveryChange, kReversed };
  explicit ReplayLikeCaller(Ids ids) : ids_(ids) {
    for (int i = 0; i < 5; ++i) {
      s_.nodes.push_back(
          NodeBuilder("n" + std::to_string(i)).Gpus(i % 2 == 0 ? 8 : 4).Cpu("32").Build());
    }
    s_.nodes.push_back(
        NodeBuilder("spot").Gpus(8).Cpu("32").Taint("spot", "", "NoExecute").Build());
    s_.queues.push_back(MakeQueue("team", "", {{"default", 10}}));
    s_.queues.push_back(MakeQueue("other", "", {{"default", 6}}));
    s_.nodes_generation = 1;
    s_.now_ms = 1767225600000;
  }

  // Pods of every kind the setup resolves: queues (named, default, unknown), fractions, a gang,
  // a toleration of the NoExecute taint for a while, priorities.
  void Arrive(int cycle) {
    for (int k = 0; k < 5; ++k) {
      const std::string name = "c" + std::to_string(cycle) + "-" + std::to_string(k);
      PodBuilder pod(name);
      pod.Cpu(std::to_string(1 + k));
      if (k == 0) pod.Gpus(1 + cycle % 4).Queue("team");
      if (k == 1) pod.Fraction("0.5").Gpus(1).Queue("other").Priority(cycle % 2 == 0 ? 10 : 120);
      if (k == 2) pod.Gpus(2);  // default queue
      if (k == 3) pod.Gpus(1).Queue(cycle == 2 ? "nope" : "team");
      if (k == 4) {
        pod.Gpus(2).Queue("other").Toleration({{"key", "spot"},
                                               {"operator", "Exists"},
                                               {"effect", "NoExecute"},
                                               {"tolerationSeconds", 3600}});
      }
      Add(pod.Build());
    }
    for (int m = 0; m < 3 && cycle % 3 == 1; ++m) {
      Add(PodBuilder("g" + std::to_string(cycle) + "-" + std::to_string(m))
              .Gpus(4)
              .Queue("team")
              .Gang("g" + std::to_string(cycle), 2)
              .Build());
    }
  }

  void Apply(const CycleResult& result) {
    for (const Eviction& e : result.evictions) Change(e.pod, "");
    for (const Binding& b : result.bindings) Change(b.pod, b.node);
  }

  // The oldest bound pods complete.
  void Complete(int count) {
    for (size_t i = 0; i < s_.pods.size() && count > 0;) {
      if (s_.pods[i].node_name.empty()) {
        ++i;
        continue;
      }
      s_.pods.erase(s_.pods.begin() + static_cast<std::ptrdiff_t>(i));
      s_.pod_ids.erase(s_.pod_ids.begin() + static_cast<std::ptrdiff_t>(i));
      --count;
    }
  }

  ClusterSnapshot& snapshot() { return s_; }

  void Add(model::PodScheduling pod) {
    s_.pods.push_back(std::move(pod));
    s_.pod_ids.push_back(NewId(0));
  }

 private:
  void Change(const std::string& pod, const std::string& node) {
    for (size_t i = 0; i < s_.pods.size(); ++i) {
      if (s_.pods[i].name != pod) continue;
      s_.pods[i].node_name = node;
      s_.pod_ids[i] = ids_ == Ids::kGrowAlongPods ? s_.pod_ids[i] + 1 : NewId(s_.pod_ids[i]);
    }
  }
  uint64_t NewId(uint64_t old) {
    ++serial_;
    switch (ids_) {
      case Ids::kGrowAlongPods:
        return old == 0 ? serial_ << 32 : old + 1;
      case Ids::kNewOnEveryChange:
        return serial_;
      case Ids::kReversed:
        return ~serial_;
    }
    return serial_;
  }

  const Ids ids_;
  ClusterSnapshot s_;
  uint64_t serial_ = 0;
};

// Pods taken over from the last cycle decide exactly as pods resolved afresh: across arrivals,
// bindings, evictions, completions, a queue added (the kept pods are resolved again) and ids
// in any order.
TEST(ViewCacheTest, PodsTakenOverDecideAsResolvedAfresh) {
  struct Case {
    std::string name;
    ReplayLikeCaller::Ids ids;
    bool takes_over;
  };
  const std::vector<Case> cases = {
      {"ids grow along the pods", ReplayLikeCaller::Ids::kGrowAlongPods, true},
      {"a new id on every change", ReplayLikeCaller::Ids::kNewOnEveryChange, true},
      {"ids decrease along the pods", ReplayLikeCaller::Ids::kReversed, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    SchedulerOptions options;
    options.percentage_of_nodes_to_score = 100;
    const Scheduler scheduler{options};
    ViewCache views;
    ReplayLikeCaller caller(c.ids);
    for (int cycle = 0; cycle < 10; ++cycle) {
      SCOPED_TRACE(cycle);
      ClusterSnapshot& s = caller.snapshot();
      caller.Arrive(cycle);
      if (cycle == 6) s.queues.push_back(MakeQueue("late", "", {{"default", 2}}));
      if (cycle >= 2) caller.Complete(3);
      s.now_ms += 600'000;
      const CycleResult kept = scheduler.RunCycle(s, &views);
      ClusterSnapshot untracked = s;
      untracked.pod_ids.clear();
      EXPECT_EQ(Decisions(kept), Decisions(scheduler.RunCycle(untracked)));
      caller.Apply(kept);
    }
    EXPECT_EQ(views.builds(), 1);
    // Ids that shrink along the pods stop matching at the first pod that left: slower, not
    // different.
    if (c.takes_over) {
      EXPECT_GT(views.PodsTakenOver(), 50);
      EXPECT_GT(views.NodesTakenOver(), 10);
    }
  }
}

// What binding leaves, by names (dimensions are numbered in the order a view met them).
struct Bound {
  std::map<std::string, int64_t> free;  // "node/dimension"
  std::vector<std::vector<int32_t>> devices;
  std::vector<int> full_free, max_device_free;
  std::vector<std::vector<int>> node_pods;
  std::vector<int> pod_node;
  std::vector<std::vector<int>> pod_devices;
  std::vector<char> bound_initially;
  std::vector<std::string> reset;  // what a cycle changes and the next one must start without
  std::vector<int64_t> allocated, allocated_np, own;  // every (queue, pool, resource)
  std::vector<int> bound_preemptible;                 // by pool
  std::vector<int> unbound, off_nodes;
  bool operator==(const Bound&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Bound& b) {
  for (const auto& [key, amount] : b.free) os << key << "=" << amount << " ";
  os << "\npods on nodes: ";
  for (size_t i = 0; i < b.pod_node.size(); ++i) {
    os << i << "@" << b.pod_node[i] << "[";
    for (int d : b.pod_devices[i]) os << d << ",";
    os << "] ";
  }
  return os;
}

Bound Observe(const CycleState& state) {
  const ClusterView& view = state.view();
  Bound b;
  for (int n = 0; n < view.NumNodes(); ++n) {
    for (int dim = 0; dim < view.Dims(); ++dim) {
      b.free[view.node(n).node->name + "/" + view.DimName(dim)] = view.Free(n, dim);
    }
    const int32_t* devices = view.Devices(n);
    b.devices.emplace_back(devices, devices + view.node(n).gpu_devices);
    b.full_free.push_back(view.node(n).full_free);
    b.max_device_free.push_back(view.node(n).max_device_free);
    b.node_pods.push_back(state.NodePods(n));
  }
  for (const PodState& p : state.pods()) {
    b.pod_node.push_back(p.node);
    b.pod_devices.push_back(p.node >= 0 ? p.devices : std::vector<int>());
    b.bound_initially.push_back(p.bound_initially);
    b.reset.push_back(std::to_string(p.arrival) + " " + std::to_string(p.evicted) +
                      std::to_string(p.placed_now) + " " + std::to_string(p.placed_pool) + " " +
                      std::to_string(p.last_node) + " " + p.evict_message + "|" + p.reason);
  }
  const QuotaTable& quota = state.quota();
  for (int q = 0; q < quota.NumQueues(); ++q) {
    for (int pool = 0; pool < quota.NumPools(); ++pool) {
      for (int r = 0; r < kQ; ++r) {
        b.allocated.push_back(quota.Allocated(q, pool, r));
        b.allocated_np.push_back(quota.AllocatedNonPreemptible(q, pool, r));
        b.own.push_back(quota.OwnAllocated(q, pool, r));
      }
    }
  }
  for (int pool = 0; pool < view.NumPools(); ++pool) {
    b.bound_preemptible.push_back(state.BoundPreemptible(pool));
  }
  b.unbound = state.Unbound();
  b.off_nodes = state.PodsOffNodes();
  return b;
}

// Binding that takes nodes over from the last cycle (KeptBindings), with pods taken over from
// it (SetupMemo), leaves exactly what binding every pod afresh leaves: across whole cycles
// (placements, reasons), arrivals, bindings, completions (nodes whose pods left), a new
// resource (the view's dimensions change), pods with a creation time coming and going,
// evictions the caller did not apply (the pods are still bound, same ids) and an eviction
// rolled back (its pod back on its exact devices).
TEST(ViewCacheTest, KeptBindingsBindAsFromScratch) {
  SchedulerOptions options;
  options.percentage_of_nodes_to_score = 100;
  const Scheduler scheduler{options};
  ReplayLikeCaller caller(ReplayLikeCaller::Ids::kGrowAlongPods);
  ClusterSnapshot& s = caller.snapshot();
  ClusterView view(s.nodes, s.node_pools);
  SetupMemo memo;
  s.pods.reserve(1000);  // the vector stays put: unchanged pods are then not even read
  int64_t checked_pods = 0;
  for (int cycle = 0; cycle < 16; ++cycle) {
    SCOPED_TRACE(cycle);
    caller.Arrive(cycle);
    if (cycle == 5) {
      PodBuilder pod("fpga");
      pod.Cpu("1").Queue("team");
      model::PodScheduling built = pod.Build();
      built.requests["example.com/fpga"] = model::Quantity::FromUnits(1);
      caller.Add(std::move(built));
    }
    if (cycle == 3) {  // pods ranked by creation time, for a while
      model::PodScheduling built = PodBuilder("dated").Cpu("1").Queue("team").Build();
      built.creation_timestamp = "2026-01-01T00:00:00Z";
      caller.Add(std::move(built));
    }
    if (cycle == 9) {
      for (size_t i = 0; i < s.pods.size(); ++i) {
        if (s.pods[i].name != "dated") continue;
        s.pods.erase(s.pods.begin() + static_cast<std::ptrdiff_t>(i));
        s.pod_ids.erase(s.pod_ids.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    if (cycle % 4 == 3) caller.Complete(3);
    s.now_ms += 600'000;

    ASSERT_TRUE(view.ResetForCycle(s.nodes));
    if (cycle % 2 == 0) {
      // A whole cycle on the kept view: what it changes of its pods must not reach the next.
      caller.Apply(Cycle(options, s, &view, &memo).Run());
      continue;
    }
    CycleSetup setup = BuildCycleSetup(s, view, &memo);
    CycleState kept(view, setup.queues, QuotaTable::Resolve(setup.queues, view),
                    std::move(setup.pods));
    BindPods(kept, setup, s, memo);

    ClusterView fresh_view(s.nodes, s.node_pools);
    CycleSetup fresh_setup = BuildCycleSetup(s, fresh_view);
    CycleState fresh(fresh_view, fresh_setup.queues,
                     QuotaTable::Resolve(fresh_setup.queues, fresh_view),
                     std::move(fresh_setup.pods));
    BindPods(fresh);
    ASSERT_EQ(Observe(kept), Observe(fresh));
    checked_pods += kept.NumPods();

    // Evictions the caller never hears of: one rolled back, one kept (the pod stays bound in
    // the next snapshot, with the same id).
    for (int i = 0; i < kept.NumPods(); ++i) {
      if (kept.pod(i).node < 0 || kept.pod(i).devices.empty()) continue;
      const size_t checkpoint = kept.Checkpoint();
      kept.Evict(i, EvictionReason::kReclaim, "test");
      kept.Rollback(checkpoint);
      if (cycle % 2 == 1) kept.EvictNow(i, EvictionReason::kNoExecute, "test");
      break;
    }
    const std::vector<int> changed = kept.PodsMaybeChanged();
    KeepPods(s, setup, kept.TakePods(), changed, memo);
    memo.bindings.node_pods = kept.TakeNodePods();
    caller.Apply(scheduler.RunCycle(s));
  }
  EXPECT_GT(memo.bindings.nodes_taken_over, 10);
  EXPECT_GT(checked_pods, 100);
}

}  // namespace view_cache_test
}  // namespace gpupool::scheduler
