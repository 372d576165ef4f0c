// The NodeSearch and UnschedulableReasons contracts (node_search.h, unschedulable.h), on one
// table: the node a pending pod gets in a pool, or none with kube-scheduler's reason, and
// whether a node could host it once empty.

#include "scheduler/node_search.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "scheduler/cycle_test_util.h"
#include "scheduler/scorers/placement_scorer.h"
#include "scheduler/test_util.h"
#include "scheduler/unschedulable.h"

namespace gpupool::scheduler {
namespace node_search_test {

using testing::CycleFixture;
using testing::NodeBuilder;
using testing::PodBuilder;

struct Case {
  std::string name;
  std::vector<model::Node> nodes;
  std::vector<model::PodScheduling> bound;
  model::PodScheduling pod;  // pending, named "p"
  std::string want_node;     // "" = none fits
  std::string want_reason;   // when none fits
  bool fits_empty = true;
};

std::vector<Case> Cases() {
  using N = NodeBuilder;
  auto P = [] { return PodBuilder("p"); };
  return {
      {"the only node that fits",
       {N("a").Gpus(1).Build(), N("b").Gpus(4).Build()},
       {},
       P().Gpus(2).Build(),
       "b",
       ""},
      {"ties go to the node first by name",
       {N("b").Build(), N("a").Build(), N("c").Build()},
       {},
       P().Build(),
       "a",
       ""},
      {"a cordoned node is skipped",
       {N("a").Unschedulable().Build(), N("b").Build()},
       {},
       P().Build(),
       "b",
       ""},
      {"taints and GPUs, most common cause first",
       {N("a").Gpus(8).Taint("gpu", "true", "NoSchedule").Build(),
        N("b").Gpus(8).Taint("gpu", "true", "NoSchedule").Build(), N("c").Gpus(1).Build()},
       {},
       P().Gpus(2).Build(),
       "",
       "0/3 nodes are available: 2 node(s) had untolerated taint {gpu: true}, 1 Insufficient "
       "nvidia.com/gpu.",
       false},
      {"full now, but would fit once empty",
       {N("a").Gpus(2).Build()},
       {PodBuilder("running").Gpus(2).On("a").Build()},
       P().Gpus(1).Build(),
       "",
       "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
       true},
      {"too much cpu for any node",
       {N("a").Cpu("4").Build(), N("b").Cpu("8").Build()},
       {},
       P().Cpu("16").Build(),
       "",
       "0/2 nodes are available: 2 Insufficient cpu.",
       false},
      {"node selector and cordon",
       {N("a").Label("zone", "x").Unschedulable().Build(), N("b").Build()},
       {},
       P().Selector("zone", "x").Build(),
       "",
       "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) "
       "were unschedulable.",
       false},
  };
}

TEST(NodeSearchTest, TheNodeOrWhyNone) {
  for (PlacementPolicy policy :
       {PlacementPolicy::kFgd, PlacementPolicy::kGpuPacking, PlacementPolicy::kBestFit}) {
    for (const Case& c : Cases()) {
      SCOPED_TRACE(std::string(PlacementPolicyName(policy)) + ": " + c.name);
      ClusterSnapshot snapshot;
      snapshot.nodes = c.nodes;
      snapshot.pods = c.bound;
      snapshot.pods.push_back(c.pod);
      CycleFixture fx(std::move(snapshot));
      SchedulerOptions options;
      options.policy = policy;
      const std::vector<Job> jobs = BuildJobs(fx.state, fx.setup.gangs);
      std::unique_ptr<PlacementScorer> scorer = MakeScorer(options, fx.state, jobs);
      NodeSearch search(options, fx.state, *scorer);
      UnschedulableReasons reasons(fx.state);
      const PodState& p = fx.state.pod(fx.Pod("p"));
      StaticList& list = fx.view.Static(p.signature, 0, *p.pod);
      int device = -1;
      const int node = search.FindNode(p, 0, list, {}, &device);
      if (c.want_node.empty()) {
        EXPECT_EQ(node, -1);
        EXPECT_EQ(reasons.Explain(p, 0, list), c.want_reason);
        EXPECT_EQ(reasons.FitsEmptyNode(p, 0, list), c.fits_empty);
      } else {
        ASSERT_GE(node, 0);
        EXPECT_EQ(fx.view.node(node).node->name, c.want_node);
        EXPECT_TRUE(reasons.FitsEmptyNode(p, 0, list));
      }
    }
  }
}

TEST(NodeSearchTest, NumFeasibleNodesToFind) {
  struct Window {
    int nodes, percentage, want;
  };
  for (const Window& w : std::vector<Window>{{50, 0, 50},
                                             {99, 10, 99},
                                             {1000, 100, 1000},
                                             {1000, 0, 420},   // 50 - 1000/125 = 42 %
                                             {5000, 0, 500},   // 50 - 40 = 10 %
                                             {10000, 0, 500},  // at least 5 %
                                             {1000, 5, 100},   // at least 100 nodes
                                             {10000, 30, 3000}}) {
    EXPECT_EQ(NodeSearch::NumFeasibleNodesToFind(w.nodes, w.percentage), w.want)
        << w.nodes << " nodes at " << w.percentage << " %";
  }
}

TEST(UnschedulableReasonsTest, APodAskingAtLeastAsMuchIsKnownNotToFit) {
  ClusterSnapshot snapshot;
  snapshot.nodes = {NodeBuilder("a").Gpus(2).Build()};
  snapshot.pods = {PodBuilder("big").Gpus(4).Build(), PodBuilder("bigger").Gpus(8).Build(),
                   PodBuilder("small").Gpus(1).Build(),
                   PodBuilder("more-cpu").Gpus(4).Cpu("30").Build()};
  CycleFixture fx(std::move(snapshot));
  const PodState& big = fx.state.pod(fx.Pod("big"));
  StaticList& list = fx.view.Static(big.signature, 0, *big.pod);
  EXPECT_FALSE(UnschedulableReasons::KnownNotToFit(big, list));
  UnschedulableReasons::RememberNotFitting(big, list);
  struct Known {
    std::string pod;
    bool known;
  };
  for (const Known& k :
       std::vector<Known>{{"big", true}, {"bigger", true}, {"more-cpu", true}, {"small", false}}) {
    EXPECT_EQ(UnschedulableReasons::KnownNotToFit(fx.state.pod(fx.Pod(k.pod)), list), k.known)
        << k.pod;
  }
}

}  // namespace node_search_test
}  // namespace gpupool::scheduler
