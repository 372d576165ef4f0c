#include "model/match.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

// Counts heap allocations so that the match path can be shown not to allocate. GCC cannot see
// that the replaced operator new and delete pair malloc with free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// The nothrow form too (std::stable_sort's buffer uses it): otherwise the runtime's nothrow new
// would be freed by the delete above, which AddressSanitizer reports as a mismatch.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace gpupool::model {
namespace {

constexpr auto kNoSchedule = TaintEffect::kNoSchedule;
constexpr auto kPreferNoSchedule = TaintEffect::kPreferNoSchedule;
constexpr auto kNoExecute = TaintEffect::kNoExecute;
constexpr auto kEqual = TolerationOperator::kEqual;
constexpr auto kExists = TolerationOperator::kExists;

Node MakeNode(std::string name, Labels labels, std::vector<Taint> taints = {}) {
  Node node;
  node.name = std::move(name);
  node.labels = std::move(labels);
  node.taints = std::move(taints);
  return node;
}

TEST(ToleratesTaintTest, FollowsKubernetesRules) {
  struct Case {
    std::string name;
    Toleration toleration;
    Taint taint;
    bool tolerates;
  };
  const Case cases[] = {
      {"equal key value effect", {"k", kEqual, "v", kNoSchedule}, {"k", "v", kNoSchedule}, true},
      {"value differs", {"k", kEqual, "v", kNoSchedule}, {"k", "w", kNoSchedule}, false},
      {"key differs", {"k", kEqual, "v", kNoSchedule}, {"x", "v", kNoSchedule}, false},
      {"effect differs", {"k", kEqual, "v", kNoSchedule}, {"k", "v", kNoExecute}, false},
      {"empty effect matches NoSchedule",
       {"k", kEqual, "v", std::nullopt},
       {"k", "v", kNoSchedule},
       true},
      {"empty effect matches NoExecute",
       {"k", kEqual, "v", std::nullopt},
       {"k", "v", kNoExecute},
       true},
      {"empty effect matches PreferNoSchedule",
       {"k", kEqual, "v", std::nullopt},
       {"k", "v", kPreferNoSchedule},
       true},
      {"exists ignores value",
       {"k", kExists, "", kNoSchedule},
       {"k", "anything", kNoSchedule},
       true},
      {"exists still needs the key",
       {"k", kExists, "", kNoSchedule},
       {"x", "v", kNoSchedule},
       false},
      {"exists still needs the effect",
       {"k", kExists, "", kNoExecute},
       {"k", "v", kNoSchedule},
       false},
      {"empty key exists matches every taint",
       {"", kExists, "", std::nullopt},
       {"anything", "v", kNoExecute},
       true},
      {"empty key exists with effect",
       {"", kExists, "", kNoSchedule},
       {"a", "b", kNoSchedule},
       true},
      {"empty key exists wrong effect",
       {"", kExists, "", kNoSchedule},
       {"a", "b", kNoExecute},
       false},
      {"equal with empty values", {"k", kEqual, "", kNoSchedule}, {"k", "", kNoSchedule}, true},
      {"equal empty vs set value", {"k", kEqual, "", kNoSchedule}, {"k", "v", kNoSchedule}, false},
      {"values are case sensitive",
       {"k", kEqual, "True", kNoSchedule},
       {"k", "true", kNoSchedule},
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ToleratesTaint(c.toleration, c.taint), c.tolerates);
  }
}

TEST(FindUntoleratedTaintTest, ConsidersOnlyRequestedEffects) {
  const std::vector<Taint> taints = {
      {"soft", "", kPreferNoSchedule}, {"gpu", "true", kNoSchedule}, {"spot", "true", kNoExecute}};
  struct Case {
    std::string name;
    std::vector<Toleration> tolerations;
    TaintEffectSet effects;
    std::optional<std::string> untolerated_key;
  };
  const Case cases[] = {
      {"none tolerated: first NoSchedule", {}, TaintEffectSet::Scheduling(), "gpu"},
      {"PreferNoSchedule never blocks scheduling",
       {{"gpu", kExists, "", std::nullopt}, {"spot", kExists, "", std::nullopt}},
       TaintEffectSet::Scheduling(),
       std::nullopt},
      {"NoExecute blocks",
       {{"gpu", kEqual, "true", kNoSchedule}},
       TaintEffectSet::Scheduling(),
       "spot"},
      {"wildcard tolerates all",
       {{"", kExists, "", std::nullopt}},
       TaintEffectSet::All(),
       std::nullopt},
      {"all effects: soft first", {}, TaintEffectSet::All(), "soft"},
      {"NoExecute only",
       {{"spot", kEqual, "false", kNoExecute}},
       TaintEffectSet::NoExecuteOnly(),
       "spot"},
      {"NoExecute only, tolerated",
       {{"spot", kEqual, "true", std::nullopt}},
       TaintEffectSet::NoExecuteOnly(),
       std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::optional<Taint> taint = FindUntoleratedTaint(taints, c.tolerations, c.effects);
    const Taint* ptr = FindUntoleratedTaintPtr(taints, c.tolerations, c.effects);
    ASSERT_EQ(taint.has_value(), c.untolerated_key.has_value());
    ASSERT_EQ(ptr != nullptr, c.untolerated_key.has_value());
    if (taint) {
      EXPECT_EQ(taint->key, *c.untolerated_key);
      EXPECT_EQ(ptr->key, *c.untolerated_key);
    }
  }
}

TEST(CountIntolerablePreferNoScheduleTest, CountsOnlyPreferNoSchedule) {
  const std::vector<Taint> taints = {
      {"a", "1", kPreferNoSchedule}, {"b", "1", kPreferNoSchedule}, {"c", "1", kNoSchedule}};
  struct Case {
    std::string name;
    std::vector<Toleration> tolerations;
    int count;
  };
  const Case cases[] = {
      {"nothing tolerated", {}, 2},
      {"one tolerated with matching effect", {{"a", kEqual, "1", kPreferNoSchedule}}, 1},
      {"empty effect counts", {{"a", kExists, "", std::nullopt}}, 1},
      {"NoSchedule toleration does not count", {{"a", kEqual, "1", kNoSchedule}}, 2},
      {"wildcard", {{"", kExists, "", std::nullopt}}, 0},
      {"wildcard with NoExecute effect does not count", {{"", kExists, "", kNoExecute}}, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(CountIntolerablePreferNoSchedule(taints, c.tolerations), c.count);
  }
}

TEST(NodeSelectorTest, AllEntriesMustEqual) {
  Node node = MakeNode("n", {{"gpu", "a100"}, {"zone", "a"}});
  struct Case {
    Labels selector;
    bool matches;
  };
  const Case cases[] = {
      {{}, true},
      {{{"gpu", "a100"}}, true},
      {{{"gpu", "a100"}, {"zone", "a"}}, true},
      {{{"gpu", "a100"}, {"zone", "b"}}, false},
      {{{"gpu", "A100"}}, false},
      {{{"missing", ""}}, false},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(MatchesNodeSelector(cases[i].selector, node), cases[i].matches);
  }
}

TEST(MatchesRequirementTest, Operators) {
  Node node =
      MakeNode("n", {{"zone", "a"}, {"gpus", "8"}, {"neg", "-3"}, {"text", "abc"}, {"empty", ""}});
  using Op = SelectorOperator;
  struct Case {
    std::string name;
    NodeSelectorRequirement requirement;
    bool matches;
  };
  const Case cases[] = {
      {"In present", {"zone", Op::kIn, {"a", "b"}}, true},
      {"In other value", {"zone", Op::kIn, {"b"}}, false},
      {"In absent", {"missing", Op::kIn, {"a"}}, false},
      {"In no values", {"zone", Op::kIn, {}}, false},
      {"In empty value", {"empty", Op::kIn, {""}}, true},
      {"NotIn other value", {"zone", Op::kNotIn, {"b"}}, true},
      {"NotIn same value", {"zone", Op::kNotIn, {"a", "b"}}, false},
      {"NotIn absent label matches", {"missing", Op::kNotIn, {"a"}}, true},
      {"NotIn no values", {"missing", Op::kNotIn, {}}, false},
      {"Exists present", {"zone", Op::kExists, {}}, true},
      {"Exists empty value", {"empty", Op::kExists, {}}, true},
      {"Exists absent", {"missing", Op::kExists, {}}, false},
      {"Exists with values is invalid", {"zone", Op::kExists, {"a"}}, false},
      {"DoesNotExist absent", {"missing", Op::kDoesNotExist, {}}, true},
      {"DoesNotExist present", {"zone", Op::kDoesNotExist, {}}, false},
      {"Gt greater", {"gpus", Op::kGt, {"4"}}, true},
      {"Gt equal is not greater", {"gpus", Op::kGt, {"8"}}, false},
      {"Gt smaller", {"gpus", Op::kGt, {"9"}}, false},
      {"Gt negative", {"neg", Op::kGt, {"-4"}}, true},
      {"Gt plus sign", {"gpus", Op::kGt, {"+7"}}, true},
      {"Lt smaller", {"gpus", Op::kLt, {"9"}}, true},
      {"Lt equal", {"gpus", Op::kLt, {"8"}}, false},
      {"Gt absent", {"missing", Op::kGt, {"1"}}, false},
      {"Gt label not an integer", {"text", Op::kGt, {"1"}}, false},
      {"Gt value not an integer", {"gpus", Op::kGt, {"1.5"}}, false},
      {"Gt two values", {"gpus", Op::kGt, {"1", "2"}}, false},
      {"Gt no values", {"gpus", Op::kGt, {}}, false},
      {"Lt overflow", {"gpus", Op::kLt, {"99999999999999999999"}}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(MatchesRequirement(c.requirement, node), c.matches);
  }
}

TEST(MatchesTermTest, ExpressionsAndFields) {
  Node node = MakeNode("node-1", {{"zone", "a"}, {"gpu", "a100"}});
  using Op = SelectorOperator;
  struct Case {
    std::string name;
    NodeSelectorTerm term;
    bool matches;
  };
  const Case cases[] = {
      {"empty term matches nothing", {}, false},
      {"expressions ANDed, all true",
       {{{"zone", Op::kIn, {"a"}}, {"gpu", Op::kExists, {}}}, {}},
       true},
      {"expressions ANDed, one false",
       {{{"zone", Op::kIn, {"a"}}, {"gpu", Op::kIn, {"h100"}}}, {}},
       false},
      {"field In name", {{}, {{"metadata.name", Op::kIn, {"node-1"}}}}, true},
      {"field In other name", {{}, {{"metadata.name", Op::kIn, {"node-2"}}}}, false},
      {"field NotIn other name", {{}, {{"metadata.name", Op::kNotIn, {"node-2"}}}}, true},
      {"field NotIn own name", {{}, {{"metadata.name", Op::kNotIn, {"node-1"}}}}, false},
      {"field with two values is invalid",
       {{}, {{"metadata.name", Op::kIn, {"node-1", "node-2"}}}},
       false},
      {"field other than metadata.name", {{}, {{"metadata.uid", Op::kIn, {"node-1"}}}}, false},
      {"field Exists unsupported", {{}, {{"metadata.name", Op::kExists, {}}}}, false},
      {"fields ANDed with expressions",
       {{{"zone", Op::kIn, {"a"}}}, {{"metadata.name", Op::kIn, {"node-2"}}}},
       false},
      {"fields and expressions both true",
       {{{"zone", Op::kIn, {"a"}}}, {{"metadata.name", Op::kIn, {"node-1"}}}},
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(MatchesTerm(c.term, node), c.matches);
  }
}

// kube-scheduler's nodeaffinity turns each term into a label selector first
// (labels.NewRequirement); a term with a requirement that does not parse matches no node, even
// where the requirement alone (MatchesRequirement) would, as NotIn does for a value no node has.
TEST(MatchesTermTest, TermsThatDoNotParseMatchNoNode) {
  Node node = MakeNode("n", {{"zone", "a"}, {"gpus", "8"}, {"empty", ""}});
  using Op = SelectorOperator;
  const std::string longest(63, 'v');
  struct Case {
    std::string name;
    NodeSelectorRequirement requirement;
    bool matches;
  };
  const Case cases[] = {
      {"In, one value not a label value", {"zone", Op::kIn, {"a", "b c"}}, false},
      {"NotIn a value with a space", {"zone", Op::kNotIn, {"b c"}}, false},
      {"NotIn a value with a slash", {"zone", Op::kNotIn, {"x/y"}}, false},
      {"NotIn a value starting with '-'", {"zone", Op::kNotIn, {"-b"}}, false},
      {"NotIn a value ending with '.'", {"zone", Op::kNotIn, {"b."}}, false},
      {"NotIn a value of 64 characters", {"zone", Op::kNotIn, {longest + "v"}}, false},
      {"NotIn a value of 63 characters", {"zone", Op::kNotIn, {longest}}, true},
      {"NotIn a UTF-8 value", {"zone", Op::kNotIn, {"\xC3\xA9"}}, false},
      {"In the empty value (a valid one)", {"empty", Op::kIn, {""}}, true},
      {"In inner '-', '_', '.'", {"zone", Op::kNotIn, {"a-b_c.d"}}, true},
      {"DoesNotExist of a key that is not a label key", {"bad key", Op::kDoesNotExist, {}}, false},
      {"Exists of a key with an upper-case prefix", {"Example.com/zone", Op::kExists, {}}, false},
      {"Gt of a negative number (not a label value)", {"gpus", Op::kGt, {"-4"}}, false},
      {"Gt with a plus sign (not a label value)", {"gpus", Op::kGt, {"+7"}}, false},
      {"Gt of a number", {"gpus", Op::kGt, {"7"}}, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const NodeSelectorTerm term = {{c.requirement}, {}};
    EXPECT_EQ(TermParses(term), c.matches);  // here each term that parses matches
    EXPECT_EQ(MatchesTerm(term, node), c.matches);
    // Required: the term selects nothing, another term still may. Preferred: it adds nothing.
    NodeAffinity affinity;
    affinity.required = std::vector<NodeSelectorTerm>{term};
    EXPECT_EQ(MatchesRequiredAffinity(affinity, node), c.matches);
    affinity.required->push_back({{{"zone", Op::kIn, {"a"}}}, {}});
    EXPECT_TRUE(MatchesRequiredAffinity(affinity, node));
    affinity.preferred = {{10, term}, {1, {{{"zone", Op::kIn, {"a"}}}, {}}}};
    EXPECT_EQ(PreferredAffinityScore(affinity, node), c.matches ? 11 : 1);
  }
}

TEST(RequiredAffinityTest, TermsAreOred) {
  Node node = MakeNode("n", {{"zone", "a"}});
  using Op = SelectorOperator;
  const NodeSelectorTerm yes = {{{"zone", Op::kIn, {"a"}}}, {}};
  const NodeSelectorTerm no = {{{"zone", Op::kIn, {"b"}}}, {}};
  const NodeSelectorTerm empty = {};
  struct Case {
    std::string name;
    std::optional<std::vector<NodeSelectorTerm>> required;
    bool matches;
  };
  const Case cases[] = {
      {"no requirement", std::nullopt, true},
      {"no terms", std::vector<NodeSelectorTerm>{}, false},
      {"one matching", std::vector<NodeSelectorTerm>{yes}, true},
      {"one failing", std::vector<NodeSelectorTerm>{no}, false},
      {"any of", std::vector<NodeSelectorTerm>{no, yes}, true},
      {"empty term skipped", std::vector<NodeSelectorTerm>{empty, yes}, true},
      {"all empty", std::vector<NodeSelectorTerm>{empty, empty}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    NodeAffinity affinity;
    affinity.required = c.required;
    EXPECT_EQ(MatchesRequiredAffinity(affinity, node), c.matches);
  }

  PodScheduling pod;
  pod.node_selector = {{"zone", "a"}};
  pod.affinity.required = std::vector<NodeSelectorTerm>{yes};
  EXPECT_TRUE(MatchesNodeSelectorAndAffinity(pod, node));
  pod.affinity.required = std::vector<NodeSelectorTerm>{no};
  EXPECT_FALSE(MatchesNodeSelectorAndAffinity(pod, node));
  pod.affinity.required.reset();
  pod.node_selector = {{"zone", "b"}};
  EXPECT_FALSE(MatchesNodeSelectorAndAffinity(pod, node));
}

TEST(PreferredAffinityTest, SumsWeightsOfMatchingTerms) {
  Node node = MakeNode("n", {{"zone", "a"}, {"ssd", "true"}});
  using Op = SelectorOperator;
  NodeAffinity affinity;
  affinity.preferred = {
      {10, {{{"zone", Op::kIn, {"a"}}}, {}}},
      {20, {{{"ssd", Op::kExists, {}}}, {}}},
      {40, {{{"zone", Op::kIn, {"b"}}}, {}}},
      {0, {{{"zone", Op::kIn, {"a"}}}, {}}},  // zero weight: skipped
      {50, {}},                               // empty term: skipped
      {5, {{}, {{"metadata.name", Op::kIn, {"n"}}}}},
  };
  EXPECT_EQ(PreferredAffinityScore(affinity, node), 35);
  EXPECT_EQ(PreferredAffinityScore(NodeAffinity{}, node), 0);
}

TEST(ValidateTolerationTest, LikeTheApiServer) {
  struct Case {
    std::string name;
    Toleration toleration;
    std::string error;  // "" = valid
  };
  const Case cases[] = {
      {"equal", {"nvidia.com/gpu", kEqual, "true", kNoSchedule}, ""},
      {"wildcard", {"", kExists, "", std::nullopt}, ""},
      {"empty key needs Exists",
       {"", kEqual, "", std::nullopt},
       "spec.tolerations[0].operator: must be Exists when `key` is empty"},
      {"Exists needs empty value",
       {"k", kExists, "v", std::nullopt},
       "spec.tolerations[0].operator: value must be empty when `operator` is 'Exists'"},
      {"tolerationSeconds needs NoExecute",
       {"k", kExists, "", kNoSchedule, 60},
       "spec.tolerations[0].effect: must be 'NoExecute' when `tolerationSeconds` is set"},
      {"tolerationSeconds with empty effect",
       {"k", kExists, "", std::nullopt, 60},
       "must be 'NoExecute'"},
      {"tolerationSeconds with NoExecute", {"k", kExists, "", kNoExecute, 60}, ""},
      {"bad key", {"bad key!", kExists, "", std::nullopt}, "spec.tolerations[0].key: \"bad key!\""},
      {"bad value",
       {"k", kEqual, "no spaces allowed", kNoSchedule},
       "spec.tolerations[0].value: \"no spaces allowed\" is not a valid label value"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Status status = ValidateTolerations(std::vector<Toleration>{c.toleration}, "spec.tolerations");
    if (c.error.empty()) {
      EXPECT_TRUE(status.ok()) << status.ToString();
    } else {
      ASSERT_FALSE(status.ok());
      EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(status.message().find(c.error), std::string::npos) << status.message();
    }
  }
}

TEST(ValidateRequirementTest, LikeTheApiServer) {
  using Op = SelectorOperator;
  struct Case {
    std::string name;
    NodeSelectorRequirement requirement;
    std::string error;
  };
  const Case cases[] = {
      {"In with values", {"zone", Op::kIn, {"a"}}, ""},
      {"In without values",
       {"zone", Op::kIn, {}},
       "p.values: must be specified when `operator` is 'In' or 'NotIn'"},
      {"NotIn without values", {"zone", Op::kNotIn, {}}, "must be specified"},
      {"Exists with values", {"zone", Op::kExists, {"a"}}, "p.values: may not be specified"},
      {"DoesNotExist with values", {"zone", Op::kDoesNotExist, {"a"}}, "may not be specified"},
      {"Exists", {"zone", Op::kExists, {}}, ""},
      {"Gt one integer", {"gpus", Op::kGt, {"4"}}, ""},
      {"Gt two values", {"gpus", Op::kGt, {"4", "5"}}, "p.values: must be specified single value"},
      {"Lt no value", {"gpus", Op::kLt, {}}, "single value"},
      {"Gt not an integer", {"gpus", Op::kGt, {"four"}}, "p.values[0]: \"four\" is not an integer"},
      {"bad key", {"-zone", Op::kExists, {}}, "p.key: \"-zone\" is not a valid label name"},
      {"prefixed key", {"topology.kubernetes.io/zone", Op::kExists, {}}, ""},
      {"uppercase prefix", {"Example.com/zone", Op::kExists, {}}, "not a valid label name"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Status status = ValidateRequirement(c.requirement, "p");
    if (c.error.empty()) {
      EXPECT_TRUE(status.ok()) << status.ToString();
    } else {
      ASSERT_FALSE(status.ok());
      EXPECT_NE(status.message().find(c.error), std::string::npos) << status.message();
    }
  }

  const Case fields[] = {
      {"name In", {"metadata.name", Op::kIn, {"n"}}, ""},
      {"name NotIn", {"metadata.name", Op::kNotIn, {"n"}}, ""},
      {"other field",
       {"metadata.uid", Op::kIn, {"n"}},
       "p.key: \"metadata.uid\" is not a supported field"},
      {"Exists",
       {"metadata.name", Op::kExists, {}},
       "p.operator: matchFields supports only In and NotIn"},
      {"two values", {"metadata.name", Op::kIn, {"a", "b"}}, "p.values: must be only one value"},
  };
  for (const Case& c : fields) {
    SCOPED_TRACE(c.name);
    Status status = ValidateFieldRequirement(c.requirement, "p");
    if (c.error.empty()) {
      EXPECT_TRUE(status.ok()) << status.ToString();
    } else {
      ASSERT_FALSE(status.ok());
      EXPECT_NE(status.message().find(c.error), std::string::npos) << status.message();
    }
  }
}

TEST(ValidatePodSchedulingTest, ChecksAllFields) {
  struct Case {
    std::string name;
    std::string pod;
    std::string error;
  };
  const Case cases[] = {
      {"valid", R"({"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100"},
          "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}})",
       ""},
      {"bad selector value", R"({"spec": {"nodeSelector": {"a": "has space"}}})",
       "spec.nodeSelector.a: \"has space\" is not a valid label value"},
      {"bad selector key", R"({"spec": {"nodeSelector": {"a b": "x"}}})",
       "spec.nodeSelector.a b: \"a b\" is not a valid label name"},
      {"bad toleration", R"({"spec": {"tolerations": [{}, {"operator": "Equal", "value": "x"}]}})",
       "spec.tolerations[0].operator: must be Exists when `key` is empty"},
      {"bad affinity", R"({"spec": {"affinity": {"nodeAffinity": {
          "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "gpus", "operator": "Gt", "values": ["x"]}]}]}}}}})",
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms[0].matchExpressions[0].values[0]: \"x\" is not an integer"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto pod = PodSchedulingFromJson(nlohmann::ordered_json::parse(c.pod));
    ASSERT_TRUE(pod.ok()) << pod.status().ToString();
    Status status = ValidatePodScheduling(*pod);
    if (c.error.empty()) {
      EXPECT_TRUE(status.ok()) << status.ToString();
    } else {
      ASSERT_FALSE(status.ok());
      EXPECT_NE(status.message().find(c.error), std::string::npos) << status.message();
    }
  }
}

TEST(ValidateNodeAffinityTest, NamesPaths) {
  using Op = SelectorOperator;
  NodeAffinity ok;
  ok.required = std::vector<NodeSelectorTerm>{{{{"zone", Op::kIn, {"a"}}}, {}}};
  ok.preferred = {{100, {{{"ssd", Op::kExists, {}}}, {}}}};
  EXPECT_TRUE(ValidateNodeAffinity(ok, "spec.affinity.nodeAffinity").ok());

  NodeAffinity no_terms;
  no_terms.required = std::vector<NodeSelectorTerm>{};
  Status s = ValidateNodeAffinity(no_terms, "a");
  EXPECT_NE(s.message().find("a.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: "
                             "must have at least one"),
            std::string::npos)
      << s.message();

  NodeAffinity bad_expression;
  bad_expression.required = std::vector<NodeSelectorTerm>{{{{"zone", Op::kIn, {"a"}}}, {}},
                                                          {{{"zone", Op::kIn, {}}}, {}}};
  s = ValidateNodeAffinity(bad_expression, "a");
  EXPECT_NE(s.message().find("nodeSelectorTerms[1].matchExpressions[0].values"), std::string::npos)
      << s.message();

  NodeAffinity bad_weight;
  bad_weight.preferred = {{101, {{{"ssd", Op::kExists, {}}}, {}}}};
  s = ValidateNodeAffinity(bad_weight, "a");
  EXPECT_NE(s.message().find("a.preferredDuringSchedulingIgnoredDuringExecution[0].weight: must be "
                             "in the range 1-100, got 101"),
            std::string::npos)
      << s.message();

  NodeAffinity bad_field;
  bad_field.preferred = {{1, {{}, {{"metadata.name", Op::kGt, {"1"}}}}}};
  s = ValidateNodeAffinity(bad_field, "a");
  EXPECT_NE(s.message().find("[0].preference.matchFields[0].operator"), std::string::npos)
      << s.message();
}

TEST(MatchPerformanceTest, MatchPathDoesNotAllocate) {
  using Op = SelectorOperator;
  Node node = MakeNode("gpu-node-17",
                       {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                        {"nvidia.com/gpu.count", "8"},
                        {"topology.kubernetes.io/zone", "zone-a"}},
                       {{"nvidia.com/gpu", "true", kNoSchedule},
                        {"soft", "x", kPreferNoSchedule},
                        {"spot", "true", kNoExecute}});
  PodScheduling pod;
  pod.node_selector = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}};
  pod.affinity.required =
      std::vector<NodeSelectorTerm>{{{{"nvidia.com/gpu.count", Op::kGt, {"4"}},
                                      {"topology.kubernetes.io/zone", Op::kNotIn, {"zone-c"}}},
                                     {{"metadata.name", Op::kNotIn, {"bad-node"}}}}};
  pod.affinity.preferred = {{50, {{{"topology.kubernetes.io/zone", Op::kIn, {"zone-a"}}}, {}}}};
  pod.tolerations = {{"nvidia.com/gpu", kExists, "", std::nullopt},
                     {"spot", kEqual, "true", kNoExecute, 120}};

  long before = g_allocations.load();
  int64_t total = 0;
  for (int i = 0; i < 1000; ++i) {
    total += MatchesNodeSelectorAndAffinity(pod, node) ? 1 : 0;
    total += PreferredAffinityScore(pod.affinity, node);
    total += FindUntoleratedTaintPtr(node.taints, pod.tolerations) == nullptr ? 1 : 0;
    total += CountIntolerablePreferNoSchedule(node.taints, pod.tolerations);
  }
  long after = g_allocations.load();
  EXPECT_EQ(after - before, 0);
  // The counter does see allocations.
  auto* probe = new std::string(100, 'x');
  EXPECT_GT(g_allocations.load(), after);
  delete probe;
  EXPECT_EQ(total, 1000 * (1 + 50 + 1 + 1));
}

}  // namespace
}  // namespace gpupool::model
