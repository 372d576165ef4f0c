// The CycleState contract (cycle_state.h): undoable changes roll back exactly, commits record
// bindings and evictions in decision order, and every change moves what the caches key on.

#include "scheduler/cycle_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "scheduler/cycle_test_util.h"
#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace cycle_state_test {

using testing::CycleFixture;
using testing::NodeBuilder;
using testing::PodBuilder;

// Two 4-GPU nodes in the default pool. Bound: "old" (1 GPU: device 0) and "frac" (half a GPU:
// device 1, the first of the fullest that fit) on a, "b-runs" (2 GPUs: devices 0 and 1) on b.
// Pending: "one", "two" and "half". Queue q holds them all.
ClusterSnapshot Snapshot() {
  ClusterSnapshot s;
  s.nodes = {NodeBuilder("a").Gpus(4).Build(), NodeBuilder("b").Gpus(4).Build()};
  s.queues = {testing::MakeQueue("q", "", {{"default", 2, -1}})};
  s.pods = {PodBuilder("old").Gpus(1).Queue("q").On("a").Build(),
            PodBuilder("frac").Fraction("0.5").Gpus(1).Queue("q").On("a").Build(),
            PodBuilder("b-runs").Gpus(2).Queue("q").On("b").Build(),
            PodBuilder("one").Gpus(1).Queue("q").Build(),
            PodBuilder("two").Gpus(2).Queue("q").Build(),
            PodBuilder("half").Fraction("0.5").Gpus(1).Queue("q").Build()};
  return s;
}

// Everything a decision can change, for comparison before and after.
struct Observed {
  std::vector<std::vector<int64_t>> free;  // per node, per dimension
  std::vector<std::vector<int32_t>> devices;
  std::vector<std::vector<int>> node_pods;  // sorted
  std::vector<int> pod_node;
  std::vector<std::vector<int>> pod_devices;  // of the pods on a node
  std::vector<int64_t> allocated;             // per resource, queue q in the default pool
  bool operator==(const Observed&) const = default;
};

template <typename T>
void Print(const std::vector<T>& values, std::ostream* os) {
  *os << "[";
  for (const T& v : values) *os << v << " ";
  *os << "]";
}
template <typename T>
void Print(const std::vector<std::vector<T>>& rows, std::ostream* os) {
  for (const auto& row : rows) Print(row, os);
}
void PrintTo(const Observed& o, std::ostream* os) {
  *os << "free ";
  Print(o.free, os);
  *os << " devices ";
  Print(o.devices, os);
  *os << " node pods ";
  Print(o.node_pods, os);
  *os << " pod nodes ";
  Print(o.pod_node, os);
  *os << " pod devices ";
  Print(o.pod_devices, os);
  *os << " allocated ";
  Print(o.allocated, os);
}

Observed Observe(const CycleFixture& fx) {
  Observed o;
  const ClusterView& view = fx.state.view();
  for (int n = 0; n < view.NumNodes(); ++n) {
    std::vector<int64_t> free;
    for (int d = 0; d < view.Dims(); ++d) free.push_back(view.Free(n, d));
    o.free.push_back(free);
    o.devices.emplace_back(view.Devices(n), view.Devices(n) + view.node(n).gpu_devices);
    // A node's pods as a set: a rolled-back eviction puts its pod back last.
    std::vector<int> pods = fx.state.NodePods(n);
    std::sort(pods.begin(), pods.end());
    o.node_pods.push_back(pods);
  }
  for (const PodState& p : fx.state.pods()) {
    o.pod_node.push_back(p.node);
    // A pending pod's devices mean nothing (an evicted pod keeps them for a rollback).
    o.pod_devices.push_back(p.node >= 0 ? p.devices : std::vector<int>{});
  }
  for (int r = 0; r < kQ; ++r) o.allocated.push_back(fx.state.quota().Allocated(0, 0, r));
  return o;
}

struct Step {
  enum Kind { kPlace, kEvict, kWithdraw } kind;
  std::string pod;
  std::string node;  // kPlace
  int device = -1;   // kPlace: a fractional pod's device
};

void Apply(CycleFixture& fx, const Step& step) {
  const int pod = fx.Pod(step.pod);
  switch (step.kind) {
    case Step::kPlace:
      fx.state.Place(pod, fx.Node(step.node), step.device, 0);
      break;
    case Step::kEvict:
      fx.state.Evict(pod, EvictionReason::kPreempt, "for a test");
      break;
    case Step::kWithdraw:
      fx.state.Withdraw(pod, "withdrawn for a test");
      break;
  }
}

struct Case {
  std::string name;
  std::vector<Step> earlier;  // an earlier decision, committed first
  std::vector<Step> steps;
  std::vector<std::string> bindings;   // pod@node, after Commit, in order
  std::vector<std::string> evictions;  // pod@node, after Commit, in order
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"place one pod", {}, {{Step::kPlace, "one", "b"}}, {"one@b"}, {}},
      {"place a fraction on a shared device", {}, {{Step::kPlace, "half", "a", 1}}, {"half@a"}, {}},
      {"evict then place where it ran",
       {},
       {{Step::kEvict, "old", ""}, {Step::kPlace, "two", "a"}},
       {"two@a"},
       {"old@a"}},
      {"evict a fraction and a whole pod, place three",
       {},
       {{Step::kEvict, "frac", ""},
        {Step::kEvict, "b-runs", ""},
        {Step::kPlace, "two", "b"},
        {Step::kPlace, "one", "b"},
        {Step::kPlace, "half", "a", 1}},
       {"two@b", "one@b", "half@a"},
       {"frac@a", "b-runs@b"}},
      {"a pod placed by an earlier decision is withdrawn: its binding goes",
       {{Step::kPlace, "one", "a"}},
       {{Step::kPlace, "two", "b"}, {Step::kWithdraw, "one", ""}},
       {"two@b"},
       {}},
  };
  return cases;
}

TEST(CycleStateTest, RollbackRestoresEverythingExactly) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    CycleFixture fx(Snapshot());
    for (const Step& step : c.earlier) Apply(fx, step);
    fx.state.Commit(0, 0);
    const size_t earlier_bindings = fx.state.bindings().size();
    const Observed before = Observe(fx);
    std::vector<uint32_t> versions;
    for (int n = 0; n < fx.view.NumNodes(); ++n) versions.push_back(fx.state.NodeVersion(n));
    const uint64_t epoch = fx.state.PoolEpoch(0);
    const size_t checkpoint = fx.state.Checkpoint();
    for (const Step& step : c.steps) Apply(fx, step);
    EXPECT_NE(Observe(fx), before);
    fx.state.Rollback(checkpoint);
    EXPECT_EQ(Observe(fx), before);
    EXPECT_EQ(fx.state.bindings().size(), earlier_bindings);
    EXPECT_TRUE(fx.state.evictions().empty());
    EXPECT_EQ(fx.state.Checkpoint(), checkpoint);
    // What the caches key on moved, though the state is back: a change is a change.
    EXPECT_GT(fx.state.PoolEpoch(0), epoch);
    bool moved = false;
    for (int n = 0; n < fx.view.NumNodes(); ++n) moved |= fx.state.NodeVersion(n) != versions[n];
    EXPECT_TRUE(moved);
    for (const PodState& p : fx.state.pods()) {
      EXPECT_EQ(p.placed_now, p.key == "one" && !c.earlier.empty()) << p.key;
      EXPECT_FALSE(p.evicted) << p.key;
    }
  }
}

TEST(CycleStateTest, CommitRecordsBindingsAndEvictionsInDecisionOrder) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    CycleFixture fx(Snapshot());
    for (const Step& step : c.earlier) Apply(fx, step);
    fx.state.Commit(0, 0);
    const size_t checkpoint = fx.state.Checkpoint();
    for (const Step& step : c.steps) Apply(fx, step);
    fx.state.Commit(checkpoint, 0);
    std::vector<std::string> bindings, evictions;
    for (const Binding& b : fx.state.bindings()) bindings.push_back(b.pod + "@" + b.node);
    for (const Eviction& e : fx.state.evictions()) evictions.push_back(e.pod + "@" + e.node);
    EXPECT_EQ(bindings, c.bindings);
    EXPECT_EQ(evictions, c.evictions);
    EXPECT_EQ(fx.state.CommittedOps(), c.earlier.size() + c.steps.size());
    // A rollback to before the commit changes nothing any more.
    const Observed committed = Observe(fx);
    fx.state.Rollback(checkpoint);
    EXPECT_EQ(Observe(fx), committed);
  }
}

TEST(CycleStateTest, QuotaFollowsPlacementsInTheQueue) {
  CycleFixture fx(Snapshot());
  // Bound: old (1), frac (0.5), b-runs (2).
  EXPECT_EQ(fx.state.quota().Allocated(0, 0, kGpuQ), 3500);
  const size_t checkpoint = fx.state.Checkpoint();
  fx.state.Place(fx.Pod("two"), fx.Node("b"), -1, 0);
  EXPECT_EQ(fx.state.quota().Allocated(0, 0, kGpuQ), 5500);
  fx.state.Evict(fx.Pod("old"), EvictionReason::kReclaim, "x");
  EXPECT_EQ(fx.state.quota().Allocated(0, 0, kGpuQ), 4500);
  fx.state.Rollback(checkpoint);
  EXPECT_EQ(fx.state.quota().Allocated(0, 0, kGpuQ), 3500);
}

TEST(CycleStateTest, DevicesWholeGpusLowestFreeAFractionWhereAsked) {
  struct DeviceCase {
    std::string pod, node;
    int device;
    std::vector<int> want;
  };
  for (const DeviceCase& c : std::vector<DeviceCase>{{"one", "a", -1, {2}},
                                                     {"two", "a", -1, {2, 3}},
                                                     {"two", "b", -1, {2, 3}},
                                                     {"half", "a", 1, {1}},
                                                     {"half", "b", 3, {3}}}) {
    SCOPED_TRACE(c.pod + "@" + c.node);
    CycleFixture fx(Snapshot());
    fx.state.Place(fx.Pod(c.pod), fx.Node(c.node), c.device, 0);
    EXPECT_EQ(fx.state.pod(fx.Pod(c.pod)).devices, c.want);
  }
}

TEST(CycleStateTest, GpuFitsPicksTheFullestDeviceThatStillFits) {
  CycleFixture fx(Snapshot());
  int device = -1;
  // On a, device 1 has half a GPU left (frac), devices 2 and 3 are free.
  EXPECT_TRUE(fx.state.GpuFits(fx.state.pod(fx.Pod("half")), fx.Node("a"), &device));
  EXPECT_EQ(device, 1);
  fx.state.Place(fx.Pod("half"), fx.Node("a"), device, 0);
  EXPECT_TRUE(fx.state.GpuFits(fx.state.pod(fx.Pod("two")), fx.Node("a"), &device));
  fx.state.Place(fx.Pod("two"), fx.Node("a"), -1, 0);
  EXPECT_FALSE(fx.state.GpuFits(fx.state.pod(fx.Pod("one")), fx.Node("a"), &device));
  EXPECT_EQ(std::vector<int32_t>(fx.view.Devices(fx.Node("a")), fx.view.Devices(fx.Node("a")) + 4),
            (std::vector<int32_t>{0, 0, 0, 0}));
}

}  // namespace cycle_state_test
}  // namespace gpupool::scheduler
