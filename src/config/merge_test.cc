#include "config/merge.h"

#include <gtest/gtest.h>

#include "config/test_util.h"

namespace gpupool::config {
namespace merge_test {

using testing::ExpectError;
using testing::J;

TEST(MergeTest, Semantics) {
  struct Case {
    std::string name;
    std::string dst;
    std::string src;
    std::string want;  // compared with key order
  };
  std::vector<Case> cases = {
      {"maps deep-merge, new keys last", R"({"spec": {"a": 1, "b": {"x": 1}}})",
       R"({"spec": {"b": {"y": 2}, "c": 3}})",
       R"({"spec": {"a": 1, "b": {"x": 1, "y": 2}, "c": 3}})"},
      {"scalar overwrites", R"({"a": 1, "b": "x"})", R"({"a": 2, "b": true})",
       R"({"a": 2, "b": true})"},
      {"null overwrites, does not delete", R"({"a": {"b": 1}, "c": 1})", R"({"c": null})",
       R"({"a": {"b": 1}, "c": null})"},
      {"scalar over map", R"({"a": {"b": 1}})", R"({"a": "x"})", R"({"a": "x"})"},
      {"map over scalar replaces", R"({"a": "x"})", R"({"a": {"b": 1}})", R"({"a": {"b": 1}})"},
      {"map over null replaces", R"({"a": null})", R"({"a": {"b": 1}})", R"({"a": {"b": 1}})"},
      {"map over list replaces", R"({"a": [1]})", R"({"a": {"b": 1}})", R"({"a": {"b": 1}})"},
      {"list over scalar replaces", R"({"a": 1})", R"({"a": [1, 2]})", R"({"a": [1, 2]})"},
      {"scalar lists append", R"({"args": ["a", "b"]})", R"({"args": ["c"]})",
       R"({"args": ["a", "b", "c"]})"},
      {"exact duplicates dropped", R"({"args": ["a", "b"]})", R"({"args": ["b", "c", "a"]})",
       R"({"args": ["a", "b", "c"]})"},
      {"tolerations append without duplicates",
       R"({"tolerations": [{"key": "gpu", "operator": "Exists"}]})",
       R"({"tolerations": [{"key": "gpu", "operator": "Exists"}, {"key": "x", "operator": "Exists"}]})",
       R"({"tolerations": [{"key": "gpu", "operator": "Exists"}, {"key": "x", "operator": "Exists"}]})"},
      {"tolerations differing in a field both stay",
       R"({"tolerations": [{"key": "gpu", "effect": "NoSchedule"}]})",
       R"({"tolerations": [{"key": "gpu", "effect": "NoExecute"}]})",
       R"({"tolerations": [{"key": "gpu", "effect": "NoSchedule"}, {"key": "gpu", "effect": "NoExecute"}]})"},
      {"containers merge by name",
       R"({"containers": [{"name": "u", "image": "a", "env": [{"name": "A", "value": "1"}]}, {"name": "ctrl"}]})",
       R"({"containers": [{"name": "u", "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}]}, {"name": "side"}]})",
       R"({"containers": [{"name": "u", "image": "a", "env": [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}]}, {"name": "ctrl"}, {"name": "side"}]})"},
      {"duplicate names in dst: last wins",
       R"({"v": [{"name": "a", "x": 1}, {"name": "a", "x": 2}]})",
       R"({"v": [{"name": "a", "y": 3}]})",
       R"({"v": [{"name": "a", "x": 1}, {"name": "a", "x": 2, "y": 3}]})"},
      {"templated name merges literally",
       R"({"containers": [{"name": "{{USER_CONTAINER_NAME}}", "image": "i"}]})",
       R"({"containers": [{"name": "{{USER_CONTAINER_NAME}}", "args": ["x"]}]})",
       R"({"containers": [{"name": "{{USER_CONTAINER_NAME}}", "image": "i", "args": ["x"]}]})"},
      {"unnamed objects append", R"({"t": [{"a": 1}]})", R"({"t": [{"a": 2}]})",
       R"({"t": [{"a": 1}, {"a": 2}]})"},
      {"nodeSelectorTerms append",
       R"({"terms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]})",
       R"({"terms": [{"matchExpressions": [{"key": "b", "operator": "Exists"}]}]})",
       R"({"terms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"matchExpressions": [{"key": "b", "operator": "Exists"}]}]})"},
      {"into empty", R"({})", R"({"a": [1, 1]})", R"({"a": [1, 1]})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Json dst = Json::parse(c.dst);
    MergeInto(dst, Json::parse(c.src));
    EXPECT_EQ(dst.dump(), Json::parse(c.want).dump());
  }
  // Merged() leaves its inputs alone.
  Json a = J(R"({"x": [1]})"), b = J(R"({"x": [2]})");
  EXPECT_EQ(Merged(a, b), J(R"({"x": [1, 2]})"));
  EXPECT_EQ(a, J(R"({"x": [1]})"));
}

ConfigSet TwoTemplates() {
  ConfigSet set;
  EXPECT_TRUE(
      PutConfig(
          set, Kind::kPodTemplate, "base",
          J(R"({"spec": {"nodeSelector": {"arch": "amd64"}, "containers": [{"name": "u", "image": "x"}]}})"))
          .ok());
  EXPECT_TRUE(PutConfig(set, Kind::kPodTemplate, "gpu",
                        J(R"({"spec": {"nodeSelector": {"arch": "arm64", "gpu": "gb200"}}})"))
                  .ok());
  EXPECT_TRUE(
      PutConfig(
          set, Kind::kPodTemplate, "user",
          J(R"({"spec": {"containers": [{"name": "u", "resources": {"limits": {"cpu": "{{USER_CPUS}}"}}}]}})"))
          .ok());
  EXPECT_TRUE(PutConfig(set, Kind::kPool, "p", J(R"({"backend": "b",
      "common_pod_template": ["base"], "common_resource_validations": ["v1"],
      "platforms": {"gb200": {"override_pod_template": ["gpu"], "resource_validations": ["v2", "v1"]},
                    "bad": {"override_pod_template": ["user"]}}})"))
                  .ok());
  EXPECT_TRUE(PutConfig(set, Kind::kResourceValidation, "v1", J(R"([
      {"operator": "GT", "left_operand": "1", "right_operand": "0", "assert_message": "a"},
      {"operator": "GT", "left_operand": "2", "right_operand": "0", "assert_message": "b"}])"))
                  .ok());
  EXPECT_TRUE(PutConfig(set, Kind::kResourceValidation, "v2", J(R"([
      {"operator": "LT", "left_operand": "1", "right_operand": "9", "assert_message": "c"}])"))
                  .ok());
  return set;
}

TEST(MergeTest, TemplatesInOrder) {
  ConfigSet set = TwoTemplates();
  Result<Json> merged = MergeTemplates({"base", "gpu"}, set);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ((*merged)["spec"]["nodeSelector"], J(R"({"arch": "arm64", "gpu": "gb200"})"));
  Result<Json> reversed = MergeTemplates({"gpu", "base"}, set);
  EXPECT_EQ((*reversed)["spec"]["nodeSelector"]["arch"], "amd64");
  ExpectError(MergeTemplates({"base", "gpus"}, set).status(),
              {"pod template \"gpus\" does not exist", "did you mean \"gpu\""});

  const Pool& pool = set.pools.at("p");
  Result<Json> platform = PlatformTemplate(pool, "gb200", set);
  ASSERT_TRUE(platform.ok());
  EXPECT_EQ(*platform, *merged);
  ExpectError(PlatformTemplate(pool, "gb300", set).status(),
              {"platform \"gb300\" does not exist in pool \"p\"", "did you mean \"gb200\"",
               "its platforms: gb200, bad"});
}

TEST(MergeTest, PlatformRulesConcatenateInOrder) {
  ConfigSet set = TwoTemplates();
  Result<std::vector<NamedRule>> rules = PlatformRules(set.pools.at("p"), "gb200", set);
  ASSERT_TRUE(rules.ok());
  std::vector<std::string> got;
  for (const NamedRule& r : *rules) got.push_back(r.set + "[" + std::to_string(r.index) + "]");
  EXPECT_EQ(got, (std::vector<std::string>{"v1[0]", "v1[1]", "v2[0]", "v1[0]", "v1[1]"}));
}

TEST(MergeTest, RenderPlatformTemplateNamesTheTemplate) {
  ConfigSet set = TwoTemplates();
  const Pool& pool = set.pools.at("p");
  Result<Json> merged = PlatformTemplate(pool, "bad", set);
  ASSERT_TRUE(merged.ok());
  VariableMap vars = {{"USER_CPU", "4"}};
  Result<Json> rendered = RenderPlatformTemplate(
      *merged, PlatformTemplateNames(pool, *pool.FindPlatform("bad")), set, vars);
  ASSERT_FALSE(rendered.ok());
  EXPECT_EQ(rendered.status().message(),
            "pod template \"user\" field spec.containers[0].resources.limits.cpu uses undefined "
            "variable USER_CPUS (did you mean \"USER_CPU\"?)");
  vars["USER_CPUS"] = "2";
  rendered = RenderPlatformTemplate(*merged, {"base", "user"}, set, vars);
  ASSERT_TRUE(rendered.ok());
  EXPECT_EQ((*rendered)["spec"]["containers"][0]["resources"]["limits"]["cpu"], "2");
  EXPECT_EQ((*rendered)["spec"]["containers"][0]["image"], "x");
}

}  // namespace merge_test
}  // namespace gpupool::config
