#include "model/disruption_budget.h"

#include <gtest/gtest.h>

namespace gpupool::model {
namespace disruption_budget_test {

using Json = nlohmann::ordered_json;

PodDisruptionBudget Budget(std::optional<IntOrPercent> min, std::optional<IntOrPercent> max) {
  PodDisruptionBudget b;
  b.name = "b";
  b.selector = std::vector<NodeSelectorRequirement>{};
  b.min_available = min;
  b.max_unavailable = max;
  return b;
}

TEST(DisruptionBudgetTest, DesiredHealthyRoundsPercentagesUp) {
  struct Case {
    std::string name;
    PodDisruptionBudget budget;
    int64_t expected;
    int64_t desired;
  };
  std::vector<Case> cases = {
      {"minAvailable integer", Budget(IntOrPercent{2}, std::nullopt), 5, 2},
      // Kubernetes' documentation: 7 pods, minAvailable 50% -> 4 must stay.
      {"minAvailable 50% of 7 rounds up", Budget(IntOrPercent{50, true}, std::nullopt), 7, 4},
      {"minAvailable 100%", Budget(IntOrPercent{100, true}, std::nullopt), 3, 3},
      {"minAvailable 0 (seed 004)", Budget(IntOrPercent{0}, std::nullopt), 3, 0},
      {"maxUnavailable integer", Budget(std::nullopt, IntOrPercent{1}), 4, 3},
      // maxUnavailable 30% of 7 = 2.1 disruptions, rounded up to 3: 4 must stay.
      {"maxUnavailable 30% of 7 rounds the disruptions up",
       Budget(std::nullopt, IntOrPercent{30, true}), 7, 4},
      {"maxUnavailable above the pods", Budget(std::nullopt, IntOrPercent{9}), 4, 0},
      {"maxUnavailable 0%", Budget(std::nullopt, IntOrPercent{0, true}), 4, 4},
      {"neither: no limit", Budget(std::nullopt, std::nullopt), 4, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.budget.DesiredHealthy(c.expected), c.desired);
  }
}

TEST(DisruptionBudgetTest, ParsesSeedExampleAndRoundTrips) {
  // Seed 004's example.
  Json manifest = Json::parse(R"({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
      "metadata": {"name": "ml-training-pdb"},
      "spec": {"minAvailable": 0, "selector": {"matchLabels": {"app": "ml-training"}}}})");
  Result<PodDisruptionBudget> budget = PodDisruptionBudgetFromManifest(manifest);
  ASSERT_TRUE(budget.ok()) << budget.status().ToString();
  EXPECT_EQ(budget->name, "ml-training-pdb");
  EXPECT_EQ(budget->namespace_, "default");
  EXPECT_EQ(budget->Rule(), "minAvailable 0");
  PodScheduling pod;
  pod.namespace_ = "default";
  pod.labels = {{"app", "ml-training"}};
  EXPECT_TRUE(budget->Selects(pod));
  pod.labels = {{"app", "web"}};
  EXPECT_FALSE(budget->Selects(pod));
  Result<PodDisruptionBudget> again =
      PodDisruptionBudgetFromSpec(PodDisruptionBudgetToSpec(*budget), "ml-training-pdb");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->selector, budget->selector);
  EXPECT_EQ(again->min_available, budget->min_available);

  Json expressions = Json::parse(R"({"maxUnavailable": "25%", "selector": {"matchExpressions":
      [{"key": "tier", "operator": "In", "values": ["a", "b"]}, {"key": "x", "operator": "Exists"}]}})");
  Result<PodDisruptionBudget> with_expressions = PodDisruptionBudgetFromSpec(expressions, "e");
  ASSERT_TRUE(with_expressions.ok()) << with_expressions.status().ToString();
  EXPECT_EQ(with_expressions->Rule(), "maxUnavailable 25%");
  pod.labels = {{"tier", "b"}, {"x", ""}};
  EXPECT_TRUE(with_expressions->Selects(pod));
  pod.labels = {{"tier", "b"}};
  EXPECT_FALSE(with_expressions->Selects(pod));

  // No selector selects nothing; {} selects the namespace.
  Result<PodDisruptionBudget> none =
      PodDisruptionBudgetFromSpec(Json::parse(R"({"minAvailable": 1})"), "n");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->Selects(pod));
  Result<PodDisruptionBudget> all =
      PodDisruptionBudgetFromSpec(Json::parse(R"({"minAvailable": 1, "selector": {}})"), "a");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->Selects(pod));
  pod.namespace_ = "other";
  EXPECT_FALSE(all->Selects(pod));
}

TEST(DisruptionBudgetTest, RejectsBadInputNamingTheField) {
  struct Case {
    std::string name;
    std::string manifest;
    std::string want;
  };
  const std::string head = R"({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
      "metadata": {"name": "p"}, "spec": )";
  std::vector<Case> cases = {
      {"both set", head + R"({"minAvailable": 1, "maxUnavailable": 1, "selector": {}}})",
       "spec.maxUnavailable: minAvailable and maxUnavailable cannot be both set"},
      {"percent above 100", head + R"({"minAvailable": "150%", "selector": {}}})",
       "spec.minAvailable: must not be greater than 100%, got \"150%\""},
      {"negative integer", head + R"({"maxUnavailable": -1, "selector": {}}})",
       "spec.maxUnavailable: must be greater than or equal to 0, got -1"},
      {"negative percent", head + R"({"minAvailable": "-5%", "selector": {}}})",
       "spec.minAvailable: must be greater than or equal to 0"},
      {"percent without the sign", head + R"({"minAvailable": "3", "selector": {}}})",
       "spec.minAvailable: expected an integer or a percentage (\"50%\"), got \"3\""},
      {"fraction", head + R"({"minAvailable": 1.5, "selector": {}}})",
       "spec.minAvailable: expected an integer or a percentage (\"50%\"), got number"},
      {"unknown spec field", head + R"({"minAvailible": 1}})",
       "spec.minAvailible: unknown field (did you mean \"minAvailable\"?)"},
      {"selector operator Gt",
       head +
           R"({"selector": {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}}})",
       "spec.selector.matchExpressions[0].operator: expected one of In, NotIn, Exists, "
       "DoesNotExist, got \"Gt\""},
      {"In without values",
       head + R"({"selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}})",
       "spec.selector.matchExpressions[0].values: required"},
      {"bad label value", head + R"({"selector": {"matchLabels": {"app": "a b"}}}})",
       "spec.selector.matchLabels.app: \"a b\" is not a valid label value"},
      {"unknown selector field", head + R"({"selector": {"matchLabel": {"app": "a"}}}})",
       "spec.selector.matchLabel: unknown field (did you mean \"matchLabels\"?)"},
      {"wrong apiVersion", R"({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "p"}})",
       "apiVersion: expected \"policy/v1\", got \"policy/v1beta1\""},
      {"no name", R"({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {}})",
       "metadata.name: required string"},
      {"bad eviction policy", head + R"({"unhealthyPodEvictionPolicy": "Always"}})",
       "spec.unhealthyPodEvictionPolicy: expected IfHealthyBudget or AlwaysAllow"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<PodDisruptionBudget> budget = PodDisruptionBudgetFromManifest(Json::parse(c.manifest));
    ASSERT_FALSE(budget.ok());
    EXPECT_NE(budget.status().message().find(c.want), std::string::npos)
        << budget.status().message();
  }
}

TEST(DisruptionBudgetTest, BlocksCountWhatIsAlreadyGone) {
  // Three pods of app=web (two running, one pending) and one other pod.
  std::vector<PodScheduling> pods(4);
  for (int i = 0; i < 4; ++i) {
    pods[i].name = "p" + std::to_string(i);
    pods[i].namespace_ = "default";
    pods[i].labels = {{"app", i < 3 ? "web" : "db"}};
    pods[i].node_name = i == 2 ? "" : "n";
  }
  PodDisruptionBudget budget = Budget(std::nullopt, IntOrPercent{2});
  budget.name = "web";
  budget.selector = std::vector<NodeSelectorRequirement>{{"app", SelectorOperator::kIn, {"web"}}};
  std::vector<PodDisruptionBudget> budgets = {budget};
  DisruptionBudgets ledger(budgets, pods);
  // expected 3, maxUnavailable 2 -> desired 1; healthy 2 -> 1 disruption allowed.
  auto none_gone = [](int) { return false; };
  struct Case {
    std::string name;
    std::vector<int> evicting;
    std::vector<int> gone;
    bool blocked;
  };
  std::vector<Case> cases = {
      {"one of two running", {0}, {}, false},
      {"both running", {0, 1}, {}, true},
      {"the pending one costs nothing", {2}, {}, false},
      {"a second after one went", {1}, {0}, true},
      {"a pod no budget selects", {3}, {0}, false},
      {"duplicates count once", {0, 0}, {}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto gone = [&](int i) { return std::find(c.gone.begin(), c.gone.end(), i) != c.gone.end(); };
    std::optional<std::string> why = ledger.Blocks(c.evicting, gone);
    EXPECT_EQ(why.has_value(), c.blocked) << why.value_or("");
  }
  std::optional<std::string> why = ledger.Blocks(std::vector<int>{0, 1}, none_gone);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why,
            "PodDisruptionBudget web (maxUnavailable 2) allows 1 more disruption: 2 of 3 pods "
            "healthy, 1 needed");
}

// A cluster's budget (observed): the pods it selects are named, not matched by the selector
// here, and its counts are its status's (the cluster's disruption controller also counts pods no
// snapshot holds), so one disruption allowed over three healthy pods of which the snapshot knows
// two.
TEST(DisruptionBudgetTest, AnObservedBudgetUsesTheClustersSelectionAndCounts) {
  std::vector<PodScheduling> pods(3);
  for (int i = 0; i < 3; ++i) {
    pods[i].name = "p" + std::to_string(i);
    pods[i].namespace_ = i == 2 ? "other" : "team";
    pods[i].node_name = "n";
  }
  PodDisruptionBudget budget;
  budget.name = "team/web";
  budget.namespace_ = "team";
  budget.observed =
      PodDisruptionBudget::Observed{{{"team", "p0"}, {"team", "p1"}}, "minAvailable 2", 1, 3, 2, 3};
  std::vector<PodDisruptionBudget> budgets = {budget};
  DisruptionBudgets ledger(budgets, pods);
  EXPECT_EQ(ledger.BudgetsOf(0).size(), 1u);
  EXPECT_TRUE(ledger.BudgetsOf(2).empty()) << "not named: not selected";
  auto none_gone = [](int) { return false; };
  struct Case {
    std::string name;
    std::vector<int> evicting;
    bool blocked;
  };
  std::vector<Case> cases = {
      {"one: the status allows it", {0}, false},
      {"two: more than the status allows", {0, 1}, true},
      {"a pod it does not name", {2}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ledger.Blocks(c.evicting, none_gone).has_value(), c.blocked);
  }
  EXPECT_EQ(ledger.Blocks(std::vector<int>{0, 1}, none_gone).value_or(""),
            "PodDisruptionBudget team/web (minAvailable 2) allows 1 more disruption: 3 of 3 pods "
            "healthy, 2 needed");
}

}  // namespace disruption_budget_test
}  // namespace gpupool::model
