// Table tests for every matching rule of DESIGN section 4.4, through the scheduler: one node,
// one pod, placed or not, and the Kubernetes-style reason.

#include <gtest/gtest.h>

#include "scheduler/scheduler.h"
#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace placement_test {

using testing::FindBinding;
using testing::FindPending;
using testing::Json;
using testing::NodeBuilder;
using testing::PodBuilder;

struct Case {
  std::string name;
  NodeBuilder node;
  PodBuilder pod;
  bool placed;
  std::string reason;  // substring of the unschedulable reason
};

CycleResult RunOne(const NodeBuilder& node, const PodBuilder& pod) {
  ClusterSnapshot snapshot;
  snapshot.nodes.push_back(node.Build());
  snapshot.pods.push_back(pod.Build());
  return Scheduler(SchedulerOptions{}).RunCycle(snapshot);
}

void RunCases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CycleResult result = RunOne(c.node, c.pod);
    if (c.placed) {
      EXPECT_NE(FindBinding(result, "p"), nullptr)
          << (result.unschedulable.empty() ? "" : result.unschedulable[0].reason);
    } else {
      ASSERT_EQ(FindBinding(result, "p"), nullptr);
      const PendingPod* pending = FindPending(result, "p");
      ASSERT_NE(pending, nullptr);
      EXPECT_NE(pending->reason.find(c.reason), std::string::npos) << pending->reason;
    }
  }
}

NodeBuilder N() { return NodeBuilder("n1"); }
PodBuilder P() { return PodBuilder("p"); }

TEST(PlacementTest, Taints) {
  const std::string kTaint =
      "0/1 nodes are available: 1 node(s) had untolerated taint {gpu: true}.";
  std::vector<Case> cases = {
      {"NoSchedule blocks", N().Taint("gpu", "true", "NoSchedule"), P(), false, kTaint},
      {"NoExecute blocks", N().Taint("gpu", "true", "NoExecute"), P(), false, kTaint},
      {"PreferNoSchedule does not block", N().Taint("gpu", "true", "PreferNoSchedule"), P(), true,
       ""},
      {"Equal with value", N().Taint("gpu", "true", "NoSchedule"),
       P().Toleration(
           {{"key", "gpu"}, {"operator", "Equal"}, {"value", "true"}, {"effect", "NoSchedule"}}),
       true, ""},
      {"empty operator means Equal", N().Taint("gpu", "true", "NoSchedule"),
       P().Toleration({{"key", "gpu"}, {"value", "true"}}), true, ""},
      {"Equal with other value", N().Taint("gpu", "true", "NoSchedule"),
       P().Toleration({{"key", "gpu"}, {"operator", "Equal"}, {"value", "false"}}), false, kTaint},
      {"Exists any value", N().Taint("gpu", "true", "NoSchedule"),
       P().Toleration({{"key", "gpu"}, {"operator", "Exists"}}), true, ""},
      {"empty effect matches all effects", N().Taint("gpu", "true", "NoExecute"),
       P().Toleration({{"key", "gpu"}, {"operator", "Exists"}}), true, ""},
      {"other effect does not match", N().Taint("gpu", "true", "NoExecute"),
       P().Toleration({{"key", "gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}), false,
       kTaint},
      {"empty key with Exists tolerates everything",
       N().Taint("gpu", "true", "NoSchedule").Taint("x", "", "NoExecute"),
       P().Toleration({{"operator", "Exists"}}), true, ""},
      {"other key", N().Taint("gpu", "true", "NoSchedule"),
       P().Toleration({{"key", "gpux"}, {"operator", "Exists"}}), false, kTaint},
      {"tolerationSeconds still tolerates at scheduling", N().Taint("gpu", "true", "NoExecute"),
       P().Toleration({{"key", "gpu"},
                       {"operator", "Exists"},
                       {"effect", "NoExecute"},
                       {"tolerationSeconds", 60}}),
       true, ""},
      {"unschedulable node", N().Unschedulable(), P(), false, "1 node(s) were unschedulable"},
      {"unschedulable tolerated", N().Unschedulable(),
       P().Toleration({{"key", "node.kubernetes.io/unschedulable"},
                       {"operator", "Exists"},
                       {"effect", "NoSchedule"}}),
       true, ""},
  };
  RunCases(cases);
}

Json Required(const Json& expressions) {
  return {{"requiredDuringSchedulingIgnoredDuringExecution",
           {{"nodeSelectorTerms", Json::array({{{"matchExpressions", expressions}}})}}}};
}

TEST(PlacementTest, SelectorAndAffinity) {
  const std::string kNoMatch = "1 node(s) didn't match Pod's node affinity/selector";
  auto labelled = [] { return N().Label("gpu", "a100").Label("gen", "4"); };
  auto expr = [](const std::string& key, const std::string& op, std::vector<std::string> values) {
    Json e = {{"key", key}, {"operator", op}};
    if (!values.empty()) e["values"] = values;
    return Json::array({e});
  };
  std::vector<Case> cases = {
      {"selector match", labelled(), P().Selector("gpu", "a100"), true, ""},
      {"selector mismatch", labelled(), P().Selector("gpu", "v100"), false, kNoMatch},
      {"selector absent label", labelled(), P().Selector("zone", "a"), false, kNoMatch},
      {"In", labelled(), P().NodeAffinity(Required(expr("gpu", "In", {"v100", "a100"}))), true, ""},
      {"In miss", labelled(), P().NodeAffinity(Required(expr("gpu", "In", {"v100"}))), false,
       kNoMatch},
      {"NotIn", labelled(), P().NodeAffinity(Required(expr("gpu", "NotIn", {"v100"}))), true, ""},
      {"NotIn absent label matches", labelled(),
       P().NodeAffinity(Required(expr("zone", "NotIn", {"a"}))), true, ""},
      {"NotIn hit", labelled(), P().NodeAffinity(Required(expr("gpu", "NotIn", {"a100"}))), false,
       kNoMatch},
      {"Exists", labelled(), P().NodeAffinity(Required(expr("gpu", "Exists", {}))), true, ""},
      {"Exists miss", labelled(), P().NodeAffinity(Required(expr("zone", "Exists", {}))), false,
       kNoMatch},
      {"DoesNotExist", labelled(), P().NodeAffinity(Required(expr("zone", "DoesNotExist", {}))),
       true, ""},
      {"DoesNotExist miss", labelled(), P().NodeAffinity(Required(expr("gpu", "DoesNotExist", {}))),
       false, kNoMatch},
      {"Gt", labelled(), P().NodeAffinity(Required(expr("gen", "Gt", {"3"}))), true, ""},
      {"Gt equal fails", labelled(), P().NodeAffinity(Required(expr("gen", "Gt", {"4"}))), false,
       kNoMatch},
      {"Lt", labelled(), P().NodeAffinity(Required(expr("gen", "Lt", {"5"}))), true, ""},
      {"Gt on non-integer label fails", labelled(),
       P().NodeAffinity(Required(expr("gpu", "Gt", {"1"}))), false, kNoMatch},
      {"expressions are ANDed", labelled(),
       P().NodeAffinity(
           Required(Json::array({{{"key", "gpu"}, {"operator", "In"}, {"values", {"a100"}}},
                                 {{"key", "gen"}, {"operator", "In"}, {"values", {"3"}}}}))),
       false, kNoMatch},
      {"terms are ORed", labelled(),
       P().NodeAffinity({{"requiredDuringSchedulingIgnoredDuringExecution",
                          {{"nodeSelectorTerms",
                            Json::array({{{"matchExpressions", expr("gpu", "In", {"v100"})}},
                                         {{"matchExpressions", expr("gen", "In", {"4"})}}})}}}}),
       true, ""},
      {"matchFields metadata.name", labelled(),
       P().NodeAffinity(
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{"nodeSelectorTerms",
               Json::array({{{"matchFields", expr("metadata.name", "In", {"n1"})}}})}}}}),
       true, ""},
      {"matchFields other name", labelled(),
       P().NodeAffinity(
           {{"requiredDuringSchedulingIgnoredDuringExecution",
             {{"nodeSelectorTerms",
               Json::array({{{"matchFields", expr("metadata.name", "In", {"n2"})}}})}}}}),
       false, kNoMatch},
      {"selector and affinity both needed", labelled(),
       P().Selector("gpu", "a100").NodeAffinity(Required(expr("gen", "In", {"3"}))), false,
       kNoMatch},
  };
  RunCases(cases);
}

TEST(PlacementTest, ResourceFit) {
  std::vector<Case> cases = {
      {"fits", N().Cpu("4").Memory("8Gi"), P().Cpu("4").Memory("8Gi"), true, ""},
      {"cpu millicores", N().Cpu("500m"), P().Cpu("0.6"), false,
       "0/1 nodes are available: 1 Insufficient cpu."},
      {"cpu 500m fits 0.5", N().Cpu("500m"), P().Cpu("0.5"), true, ""},
      {"G is not Gi", N().Memory("1G"), P().Memory("1Gi"), false, "1 Insufficient memory"},
      {"Gi fits G", N().Memory("1Gi"), P().Memory("1G"), true, ""},
      {"both insufficient counted", N().Cpu("1").Memory("1Gi"), P().Cpu("2").Memory("2Gi"), false,
       "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."},
      {"ephemeral-storage", N().Alloc("ephemeral-storage", "10Gi"),
       P().Request("ephemeral-storage", "20Gi"), false, "1 Insufficient ephemeral-storage"},
      {"hugepages", N().Alloc("hugepages-2Mi", "1Gi"), P().Request("hugepages-2Mi", "512Mi"), true,
       ""},
      {"hugepages too many", N().Alloc("hugepages-2Mi", "1Gi"), P().Request("hugepages-2Mi", "2Gi"),
       false, "1 Insufficient hugepages-2Mi"},
      {"extended resource missing on node", N(), P().Request("example.com/fpga", "1"), false,
       "1 Insufficient example.com/fpga"},
      {"extended resource", N().Alloc("example.com/fpga", "2"),
       P().Request("example.com/fpga", "2"), true, ""},
      {"gpus", N().Gpus(4), P().Gpus(4), true, ""},
      {"too many gpus", N().Gpus(4), P().Gpus(8), false, "1 Insufficient nvidia.com/gpu"},
      {"no gpu node", N(), P().Gpus(1), false, "1 Insufficient nvidia.com/gpu"},
      {"fraction", N().Gpus(1), P().Fraction("0.5"), true, ""},
      {"pods limit", N().Alloc("pods", "0"), P(), false, "1 Too many pods"},
  };
  RunCases(cases);
}

TEST(PlacementTest, EffectiveRequestsAsKubeScheduler) {
  PodBuilder init = P().Cpu("1");
  init.json()["spec"]["initContainers"] = Json::array(
      {{{"name", "init"}, {"image", "x"}, {"resources", {{"requests", {{"cpu", "3"}}}}}}});
  PodBuilder overhead = P().Cpu("1");
  overhead.json()["spec"]["overhead"] = {{"cpu", "2"}};
  PodBuilder limits("p");
  limits.json()["spec"]["containers"][0]["resources"] = {{"limits", {{"cpu", "3"}}}};
  std::vector<Case> cases = {
      {"init container max", N().Cpu("2"), init, false, "Insufficient cpu"},
      {"init container fits", N().Cpu("3"), init, true, ""},
      {"overhead added", N().Cpu("2"), overhead, false, "Insufficient cpu"},
      {"overhead fits", N().Cpu("3"), overhead, true, ""},
      {"limits as requests", N().Cpu("2"), limits, false, "Insufficient cpu"},
  };
  RunCases(cases);
}

TEST(PlacementTest, ReasonCountsNodesByReason) {
  ClusterSnapshot snapshot;
  for (int i = 0; i < 8; ++i) {
    snapshot.nodes.push_back(NodeBuilder("t" + std::to_string(i))
                                 .Gpus(8)
                                 .Taint("nvidia.com/gpu", "true", "NoSchedule")
                                 .Build());
  }
  for (int i = 0; i < 4; ++i)
    snapshot.nodes.push_back(NodeBuilder("c" + std::to_string(i)).Build());
  snapshot.pods.push_back(PodBuilder("p").Gpus(1).Build());
  CycleResult result = Scheduler(SchedulerOptions{}).RunCycle(snapshot);
  ASSERT_EQ(result.unschedulable.size(), 1u);
  EXPECT_EQ(result.unschedulable[0].reason,
            "0/12 nodes are available: 8 node(s) had untolerated taint {nvidia.com/gpu: true}, 4 "
            "Insufficient nvidia.com/gpu.");
}

// Scores: two feasible nodes, the pod goes where the score says.
struct ScoreCase {
  std::string name;
  std::vector<NodeBuilder> nodes;
  std::vector<PodBuilder> bound;
  PodBuilder pod;
  std::string want_node;
  PlacementPolicy policy = PlacementPolicy::kFgd;
};

TEST(PlacementTest, Scores) {
  Json prefer_a100 = {
      {"preferredDuringSchedulingIgnoredDuringExecution",
       Json::array(
           {{{"weight", 50},
             {"preference",
              {{"matchExpressions",
                Json::array({{{"key", "gpu"}, {"operator", "In"}, {"values", {"a100"}}}})}}}}})}};
  std::vector<ScoreCase> cases = {
      {"fewer PreferNoSchedule taints",
       {NodeBuilder("a").Taint("x", "", "PreferNoSchedule"), NodeBuilder("b")},
       {},
       PodBuilder("p"),
       "b"},
      {"tolerated PreferNoSchedule is fine",
       {NodeBuilder("a"), NodeBuilder("b").Taint("x", "", "PreferNoSchedule")},
       {},
       PodBuilder("p").Toleration({{"key", "x"}, {"operator", "Exists"}}),
       "a"},
      {"preferred affinity",
       {NodeBuilder("a").Label("gpu", "v100"), NodeBuilder("b").Label("gpu", "a100")},
       {},
       PodBuilder("p").NodeAffinity(prefer_a100),
       "b"},
      {"gpu packing fills a used node",
       {NodeBuilder("a").Gpus(8), NodeBuilder("b").Gpus(8)},
       {PodBuilder("busy").Gpus(4).On("b")},
       PodBuilder("p").Gpus(2),
       "b",
       PlacementPolicy::kGpuPacking},
      {"fgd keeps whole gpus for whole-gpu work: fraction joins a shared device",
       {NodeBuilder("a").Gpus(1), NodeBuilder("b").Gpus(1)},
       {PodBuilder("half").Fraction("0.5").On("b")},
       PodBuilder("p").Fraction("0.5"),
       "b",
       PlacementPolicy::kFgd},
      {"best fit takes the fuller node",
       {NodeBuilder("a").Cpu("8"), NodeBuilder("b").Cpu("8")},
       {PodBuilder("busy").Cpu("6").On("b")},
       PodBuilder("p").Cpu("1"),
       "b",
       PlacementPolicy::kBestFit},
      {"gpu packing keeps cpu pods off gpu nodes",
       {NodeBuilder("a").Gpus(8), NodeBuilder("b")},
       {},
       PodBuilder("p"),
       "b",
       PlacementPolicy::kGpuPacking},
  };
  for (const ScoreCase& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterSnapshot snapshot;
    for (const auto& n : c.nodes) snapshot.nodes.push_back(n.Build());
    for (const auto& b : c.bound) snapshot.pods.push_back(b.Build());
    snapshot.pods.push_back(c.pod.Build());
    SchedulerOptions options;
    options.policy = c.policy;
    CycleResult result = Scheduler(options).RunCycle(snapshot);
    const Binding* b = FindBinding(result, "p");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->node, c.want_node);
  }
}

TEST(PlacementTest, FractionsShareOneDevice) {
  ClusterSnapshot snapshot;
  snapshot.nodes.push_back(NodeBuilder("n").Gpus(1).Build());
  snapshot.pods.push_back(PodBuilder("a").Fraction("0.5").Build());
  snapshot.pods.push_back(PodBuilder("b").Fraction("0.5").Build());
  snapshot.pods.push_back(PodBuilder("c").Fraction("0.25").Build());
  snapshot.pods.push_back(PodBuilder("d").Gpus(1).Build());
  CycleResult result = Scheduler(SchedulerOptions{}).RunCycle(snapshot);
  ASSERT_NE(FindBinding(result, "a"), nullptr);
  ASSERT_NE(FindBinding(result, "b"), nullptr);
  EXPECT_EQ(FindBinding(result, "a")->gpu_device, 0);
  EXPECT_EQ(FindBinding(result, "b")->gpu_device, 0);
  EXPECT_EQ(FindBinding(result, "c"), nullptr);
  EXPECT_EQ(FindBinding(result, "d"), nullptr);
}

TEST(PlacementTest, BadFractionIsReported) {
  ClusterSnapshot snapshot;
  snapshot.nodes.push_back(NodeBuilder("n").Gpus(1).Build());
  snapshot.pods.push_back(PodBuilder("p").Fraction("1.5").Build());
  CycleResult result = Scheduler(SchedulerOptions{}).RunCycle(snapshot);
  ASSERT_EQ(result.unschedulable.size(), 1u);
  EXPECT_NE(result.unschedulable[0].reason.find("expected a fraction between 0 and 1"),
            std::string::npos);
}

}  // namespace placement_test
}  // namespace gpupool::scheduler
