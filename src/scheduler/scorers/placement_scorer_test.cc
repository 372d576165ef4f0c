#include "scheduler/scorers/placement_scorer.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "scheduler/cycle_setup.h"
#include "scheduler/cycle_test_util.h"
#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace placement_scorer_test {

using testing::CycleFixture;
using testing::NodeBuilder;
using testing::PodBuilder;

TEST(PlacementScorerTest, EachPolicyPrefersItsNode) {
  struct Case {
    std::string name;
    PlacementPolicy policy;
    std::vector<model::Node> nodes;
    std::vector<model::PodScheduling> pods;  // bound ones and the pending "p" (and the workload)
    std::string preferred, other;
  };
  const std::vector<Case> cases = {
      {"gpu-packing: a GPU pod goes to the partly used GPU node",
       PlacementPolicy::kGpuPacking,
       {NodeBuilder("a").Gpus(4).Build(), NodeBuilder("b").Gpus(4).Build()},
       {PodBuilder("running").Gpus(1).On("a").Build(), PodBuilder("p").Gpus(1).Build()},
       "a",
       "b"},
      {"gpu-packing: a fraction shares a partly used device",
       PlacementPolicy::kGpuPacking,
       {NodeBuilder("a").Gpus(8).Build(), NodeBuilder("b").Gpus(2).Build()},
       {PodBuilder("running").Fraction("0.25").Gpus(1).On("a").Build(),
        PodBuilder("p").Fraction("0.5").Gpus(1).Build()},
       "a",
       "b"},
      {"gpu-packing: a CPU pod avoids GPU nodes",
       PlacementPolicy::kGpuPacking,
       {NodeBuilder("gpu").Gpus(4).Build(), NodeBuilder("cpu").Build()},
       {PodBuilder("p").Build()},
       "cpu",
       "gpu"},
      {"gpu-packing: a CPU pod on GPU nodes goes where no GPU is free, not where less cpu is",
       PlacementPolicy::kGpuPacking,
       {NodeBuilder("full").Cpu("64").Gpus(2).Build(),
        NodeBuilder("free").Cpu("8").Gpus(2).Build()},
       {PodBuilder("running").Cpu("1").Gpus(2).On("full").Build(),
        PodBuilder("p").Cpu("2").Build()},
       "full",
       "free"},
      {"best-fit: a CPU pod goes where no GPU is free, not where less cpu is",
       PlacementPolicy::kBestFit,
       {NodeBuilder("full").Cpu("16").Gpus(2).Build(),
        NodeBuilder("free").Cpu("8").Gpus(2).Build()},
       {PodBuilder("running").Cpu("1").Gpus(2).On("full").Build(),
        PodBuilder("p").Cpu("2").Build()},
       "full",
       "free"},
      {"best-fit: less left in absolute amounts, whatever the node's size",
       PlacementPolicy::kBestFit,
       {NodeBuilder("big").Cpu("64").Gpus(8).Build(),
        NodeBuilder("small").Cpu("8").Gpus(2).Build()},
       {PodBuilder("running").Cpu("32").Gpus(4).On("big").Build(), PodBuilder("p").Gpus(1).Build()},
       "small",
       "big"},
      {"best-fit: the node left with less free capacity",
       PlacementPolicy::kBestFit,
       {NodeBuilder("big").Cpu("64").Memory("512Gi").Build(),
        NodeBuilder("small").Cpu("8").Memory("64Gi").Build()},
       {PodBuilder("p").Build()},
       "small",
       "big"},
      {"fgd: with whole-GPU pods typical, a fraction fills the half-used device",
       PlacementPolicy::kFgd,
       {NodeBuilder("a").Gpus(2).Build(), NodeBuilder("b").Gpus(2).Build()},
       {PodBuilder("running").Fraction("0.5").Gpus(1).On("a").Build(),
        PodBuilder("p").Fraction("0.5").Gpus(1).Build(), PodBuilder("w1").Gpus(1).Build(),
        PodBuilder("w2").Gpus(1).Build(), PodBuilder("w3").Gpus(1).Build()},
       "a",
       "b"},
      {"fgd: a whole GPU pod keeps the other node's devices whole",
       PlacementPolicy::kFgd,
       {NodeBuilder("a").Gpus(2).Build(), NodeBuilder("b").Gpus(4).Build()},
       {PodBuilder("running").Gpus(1).On("a").Build(), PodBuilder("p").Gpus(1).Build(),
        PodBuilder("w1").Gpus(2).Build(), PodBuilder("w2").Gpus(2).Build()},
       "a",
       "b"},
      {"dot-product: a GPU pod goes where less GPU is free",
       PlacementPolicy::kDotProduct,
       {NodeBuilder("a").Gpus(4).Build(), NodeBuilder("b").Gpus(4).Build()},
       {PodBuilder("running").Gpus(3).On("a").Build(), PodBuilder("p").Gpus(1).Build()},
       "a",
       "b"},
      {"dot-product: a CPU pod goes where no GPU is free, not where less cpu is",
       PlacementPolicy::kDotProduct,
       {NodeBuilder("full").Cpu("64").Gpus(2).Build(),
        NodeBuilder("free").Cpu("8").Gpus(2).Build()},
       {PodBuilder("running").Cpu("1").Gpus(2).On("full").Build(),
        PodBuilder("p").Cpu("2").Build()},
       "full",
       "free"},
      {"dot-product: a CPU pod goes where less cpu is free",
       PlacementPolicy::kDotProduct,
       {NodeBuilder("big").Cpu("64").Build(), NodeBuilder("small").Cpu("8").Build()},
       {PodBuilder("p").Cpu("2").Build()},
       "small",
       "big"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterSnapshot snapshot;
    snapshot.nodes = c.nodes;
    snapshot.pods = c.pods;
    CycleFixture fx(std::move(snapshot));
    const std::vector<Job> jobs = BuildJobs(fx.state, fx.setup.gangs);
    SchedulerOptions options;
    options.policy = c.policy;
    std::unique_ptr<PlacementScorer> scorer = MakeScorer(options, fx.state, jobs);
    const PodState& p = fx.state.pod(fx.Pod("p"));
    auto score = [&](const std::string& node_name) {
      const int node = fx.Node(node_name);
      int device = -1;
      EXPECT_TRUE(fx.state.GpuFits(p, node, &device));
      return scorer->Score(p, node, device);
    };
    const double preferred = score(c.preferred), other = score(c.other);
    EXPECT_GT(preferred, other);
    EXPECT_EQ(score(c.preferred), preferred);  // a function of the node's state: same again
  }
}

// Random draws per node (and its version) and pod shape: the same again for the same state, and
// over 50 pod shapes on 100 equal nodes the best-scored node is spread over many of them (a
// uniform draw picks about 39 distinct nodes; a scorer that favoured some would pick few).
TEST(PlacementScorerTest, RandomSpreadsOverEqualNodes) {
  ClusterSnapshot snapshot;
  for (int n = 0; n < 100; ++n)
    snapshot.nodes.push_back(NodeBuilder("n" + std::to_string(n)).Build());
  for (int i = 0; i < 50; ++i) {
    snapshot.pods.push_back(
        PodBuilder("p" + std::to_string(i)).Cpu(std::to_string(i + 1) + "m").Build());
  }
  CycleFixture fx(std::move(snapshot));
  const std::vector<Job> jobs = BuildJobs(fx.state, fx.setup.gangs);
  SchedulerOptions options;
  options.policy = PlacementPolicy::kRandom;
  std::unique_ptr<PlacementScorer> scorer = MakeScorer(options, fx.state, jobs);
  std::set<int> chosen;
  for (int i = 0; i < 50; ++i) {
    const PodState& p = fx.state.pod(fx.Pod("p" + std::to_string(i)));
    int best = -1;
    double best_score = -1;
    for (int n = 0; n < 100; ++n) {
      const double score = scorer->Score(p, fx.Node("n" + std::to_string(n)), -1);
      EXPECT_GE(score, 0);
      EXPECT_LT(score, 1);
      EXPECT_EQ(scorer->Score(p, fx.Node("n" + std::to_string(n)), -1), score);
      if (score > best_score) {
        best_score = score;
        best = n;
      }
    }
    chosen.insert(best);
  }
  EXPECT_GE(chosen.size(), 25u);
}

TEST(PlacementScorerTest, DevicesAfterPlacingAPod) {
  ClusterSnapshot snapshot;
  snapshot.nodes = {NodeBuilder("n").Gpus(4).Build()};
  snapshot.pods = {PodBuilder("running").Gpus(1).On("n").Build(), PodBuilder("two").Gpus(2).Build(),
                   PodBuilder("half").Fraction("0.5").Gpus(1).Build(), PodBuilder("cpu").Build()};
  CycleFixture fx(std::move(snapshot));
  const int node = fx.Node("n");
  struct Case {
    std::string pod;
    int device;
    std::vector<int32_t> want;
    bool takes_gpu;
  };
  for (const Case& c : std::vector<Case>{{"two", -1, {0, 0, 0, 1000}, true},
                                         {"half", 3, {0, 1000, 1000, 500}, true},
                                         {"cpu", -1, {0, 1000, 1000, 1000}, false}}) {
    SCOPED_TRACE(c.pod);
    const DevicesAfter after(fx.view, fx.state.pod(fx.Pod(c.pod)), node, c.device);
    ASSERT_EQ(after.count(), 4);
    EXPECT_EQ(std::vector<int32_t>(after.data(), after.data() + 4), c.want);
    EXPECT_EQ(after.takes_gpu(), c.takes_gpu);
    int64_t sum = 0;
    for (int32_t d : c.want) sum += d;
    EXPECT_EQ(after.FreeSum(), sum);
  }
}

}  // namespace placement_scorer_test
}  // namespace gpupool::scheduler
