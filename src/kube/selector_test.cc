#include "kube/selector.h"

#include <gtest/gtest.h>

namespace gpupool::kube {
namespace selector_test {

using Json = nlohmann::ordered_json;

TEST(LabelSelectorTest, MatchesAsTheApiServerDoes) {
  struct Case {
    std::string name;
    std::string selector;
    model::Labels labels;
    bool want;
  };
  const model::Labels gpu = {{"pool", "gpu"}, {"tier", "3"}, {"zone", "a"}};
  std::vector<Case> cases = {
      {"empty selects all", "", gpu, true},
      {"equals", "pool=gpu", gpu, true},
      {"double equals", "pool==gpu", gpu, true},
      {"equals other value", "pool=cpu", gpu, false},
      {"equals needs the label", "team=a", gpu, false},
      {"not equals", "pool!=cpu", gpu, true},
      {"not equals matches absent", "team!=a", gpu, true},
      {"not equals same", "pool!=gpu", gpu, false},
      {"in", "zone in (a, b)", gpu, true},
      {"in other", "zone in (b,c)", gpu, false},
      {"notin", "zone notin (b)", gpu, true},
      {"notin absent", "team notin (x)", gpu, true},
      {"notin listed", "zone notin (a)", gpu, false},
      {"exists", "pool", gpu, true},
      {"exists absent", "team", gpu, false},
      {"does not exist", "!team", gpu, true},
      {"does not exist present", "!pool", gpu, false},
      {"greater", "tier>2", gpu, true},
      {"less", "tier<2", gpu, false},
      {"and", "pool=gpu,zone in (a),!team", gpu, true},
      {"and one fails", "pool=gpu,zone=b", gpu, false},
      {"prefixed key", "gpupool.io/queue=a", {{"gpupool.io/queue", "a"}}, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto selector = ParseLabelSelector(c.selector);
    ASSERT_TRUE(selector.ok()) << selector.status().message();
    EXPECT_EQ(selector->Matches(c.labels), c.want);
  }
}

TEST(LabelSelectorTest, RejectsMalformedSelectors) {
  struct Case {
    std::string selector;
    std::string message;
  };
  std::vector<Case> cases = {
      {"zone in a", "expected '(' after in/notin"},
      {"zone in (a", "expected ',' or ')'"},
      {"zone ~ a", "expected one of"},
      {"-bad=x", "expected a label key"},
      {"a=b c", "invalid label value"},
      {"a=b,,c", "expected a label key"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.selector);
    auto selector = ParseLabelSelector(c.selector);
    ASSERT_FALSE(selector.ok());
    EXPECT_NE(selector.status().message().find(c.message), std::string::npos)
        << selector.status().message();
  }
}

TEST(LabelSelectorTest, ReadsLabelSelectorObjects) {
  Json object = Json::parse(R"({"matchLabels": {"app": "x"},
      "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["1"]}]})");
  auto selector = LabelSelectorFromJson(object, "spec.selector");
  ASSERT_TRUE(selector.ok()) << selector.status().message();
  EXPECT_TRUE(selector->Matches({{"app", "x"}}));
  EXPECT_TRUE(selector->Matches({{"app", "x"}, {"tier", "2"}}));
  EXPECT_FALSE(selector->Matches({{"app", "x"}, {"tier", "1"}}));
  EXPECT_FALSE(selector->Matches({{"app", "y"}}));

  auto everything = LabelSelectorFromJson(Json::object(), "spec.selector");
  ASSERT_TRUE(everything.ok());
  EXPECT_TRUE(everything->Matches({}));

  auto bad = LabelSelectorFromJson(
      Json::parse(R"({"matchExpressions": [{"key": "a", "operator": "Exist"}]})"), "spec.selector");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "spec.selector.matchExpressions[0].operator: expected one of In, NotIn, Exists, "
            "DoesNotExist, got \"Exist\" (did you mean \"Exists\"?)");
}

TEST(FieldSelectorTest, MatchesFieldsOfAnObject) {
  Json pod = Json::parse(R"({"metadata": {"name": "p,1"}, "spec": {"schedulerName": "gpupool",
      "hostNetwork": false}, "status": {"phase": "Running"}})");
  struct Case {
    std::string selector;
    bool want;
  };
  std::vector<Case> cases = {
      {"", true},
      {"spec.schedulerName=gpupool", true},
      {"spec.schedulerName==gpupool", true},
      {"spec.schedulerName!=gpupool", false},
      {"spec.nodeName=", true},  // absent reads as ""
      {"spec.nodeName!=", false},
      {"status.phase!=Failed,status.phase!=Succeeded", true},
      {"status.phase=Running,spec.schedulerName=default-scheduler", false},
      {"metadata.name=p\\,1", true},  // an escaped comma
      {"spec.hostNetwork=false", true},
  };
  auto field = [&](const std::string& path) { return FieldValue(pod, path); };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.selector);
    auto selector = ParseFieldSelector(c.selector);
    ASSERT_TRUE(selector.ok()) << selector.status().message();
    EXPECT_EQ(selector->Matches(field), c.want);
  }
  EXPECT_FALSE(ParseFieldSelector("status.phase").ok());
  EXPECT_FALSE(ParseFieldSelector("=x").ok());
}

}  // namespace selector_test
}  // namespace gpupool::kube
