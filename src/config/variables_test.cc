#include "config/variables.h"

#include <gtest/gtest.h>

#include "config/test_util.h"

namespace gpupool::config {
namespace variables_test {

using testing::ExpectError;
using testing::J;

TEST(VariablesTest, Precedence) {
  Result<Pool> pool = PoolFromJson("robotics-training", J(R"({"backend": "b",
      "common_default_variables": {"USER_CPU": 16, "USER_GPU": 1, "USER_MEMORY": "64Gi",
                                   "USER_STORAGE": "500Gi", "CUSTOM": "pool", "GONE": "x",
                                   "WF_POOL": "spoofed"},
      "platforms": {"h100-platform": {"default_variables": {"USER_MEMORY": "128Gi",
                                                           "CUSTOM": "platform", "GONE": null,
                                                           "RATIO": 0.5, "FLAG": true}}}})"));
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  TaskContext task;
  task.workflow_id = "wf-1";
  task.pool = "robotics-training";
  task.platform = "h100-platform";
  task.task_name = "train";
  task.group_name = "train-group";
  task.submitted_by = "alice";
  task.priority = "NORMAL";
  task.container_name = "train";
  VariableMap user = {{"USER_CPU", "32"}, {"USER_CONTAINER_NAME", "spoofed"}};
  Result<VariableMap> vars = ResolveVariables(*pool, &pool->platforms[0], user, task);
  ASSERT_TRUE(vars.ok()) << vars.status().ToString();

  struct Case {
    std::string name;
    std::optional<std::string> want;
  };
  std::vector<Case> cases = {
      {"USER_CPU", "32"},                // user > pool
      {"USER_GPU", "1"},                 // pool only
      {"USER_MEMORY", "128Gi"},          // platform > pool
      {"USER_STORAGE", "500Gi"},         // pool
      {"CUSTOM", "platform"},            // platform > pool
      {"GONE", std::nullopt},            // null removes
      {"RATIO", "0.5"},                  // floats as JSON prints them
      {"FLAG", "true"},                  // booleans
      {"WF_POOL", "robotics-training"},  // built-ins > everything
      {"USER_CONTAINER_NAME", "train"},  // built-ins > user values
      {"WF_ID", "wf-1"},
      {"WF_TASK_NAME", "train"},
      {"WF_GROUP_NAME", "train-group"},
      {"WF_SUBMITTED_BY", "alice"},
      {"WF_PRIORITY", "normal"},
      {"WF_PLATFORM", "h100-platform"},
      {"WF_RETRY_ID", "0"},
      {"WF_UUID", std::nullopt},  // empty built-ins are not defined
      {"USER_MEMORY_VAL", "128"},
      {"USER_MEMORY_UNIT", "Gi"},
      {"USER_STORAGE_VAL", "500"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto it = vars->find(c.name);
    if (!c.want.has_value()) {
      EXPECT_EQ(it, vars->end());
      continue;
    }
    ASSERT_NE(it, vars->end());
    EXPECT_EQ(it->second, *c.want);
  }
  // The two-step form gives the same map.
  Result<VariableMap> base = PlatformVariables(*pool, &pool->platforms[0]);
  ASSERT_TRUE(base.ok());
  VariableMap two_step = *base;
  OverlayTask(two_step, user, task);
  EXPECT_EQ(two_step, *vars);
  // Without a platform only the pool's defaults apply.
  Result<VariableMap> no_platform = ResolveVariables(*pool, nullptr, {}, TaskContext{});
  ASSERT_TRUE(no_platform.ok());
  EXPECT_EQ(no_platform->at("USER_MEMORY"), "64Gi");
  EXPECT_EQ(no_platform->at("GONE"), "x");
}

TEST(VariablesTest, RenderStrings) {
  VariableMap vars = {{"USER_CPU", "4"},
                      {"USER_MEMORY", "16Gi"},
                      {"NAME", "train"},
                      {"NODES", "ARRAY:[n1, n2,n3]"}};
  struct Case {
    std::string name;
    std::string text;
    std::string want;
    std::string error;  // "" = ok
  };
  std::vector<Case> cases = {
      {"plain", "no placeholders", "no placeholders", ""},
      {"tight", "{{USER_CPU}}", "4", ""},
      {"spaced", "{{ USER_CPU }}", "4", ""},
      {"embedded", "cpu={{USER_CPU}},mem={{ USER_MEMORY }}!", "cpu=4,mem=16Gi!", ""},
      {"single braces kept", "{a} {{NAME}} }", "{a} train }", ""},
      {"shell braces", "${HOME}/{{NAME}}", "${HOME}/train", ""},
      {"undefined", "{{USER_CPUS}}", "",
       "uses undefined variable USER_CPUS (did you mean \"USER_CPU\"?)"},
      {"expression", "{{ USER_CPU * 2 }}", "", "unsupported expression"},
      {"filter", "{{ NAME | upper }}", "", "unsupported expression"},
      {"statement", "{% if x %}", "", "not supported"},
      {"unclosed", "{{NAME", "", "unclosed"},
      {"empty", "{{}}", "", "unsupported expression"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<std::string> got = RenderString(c.text, vars, "pod template \"t\"", "spec.x");
    if (!c.error.empty()) {
      ExpectError(got.status(), {"pod template \"t\" field spec.x", c.error});
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, c.want);
  }
}

TEST(VariablesTest, RenderTemplate) {
  Json tmpl = J(R"({
    "metadata": {"labels": {"{{NAME}}": "{{NAME}}"}},
    "spec": {
      "containers": [{"name": "{{USER_CONTAINER_NAME}}",
                      "resources": {"limits": {"cpu": "{{USER_CPU}}", "nvidia.com/gpu": "{{USER_GPU}}"}},
                      "args": ["--cpus", "{{USER_CPU}}", 7, true, null]}],
      "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname",
          "operator": "NotIn", "values": "{{USER_EXCLUDED_NODES}}"}]}]}}},
      "literal": "ARRAY:[x]",
      "empty": "ARRAY:[]",
      "priority": 5
    }})");
  VariableMap vars = {{"NAME", "train"},
                      {"USER_CONTAINER_NAME", "train"},
                      {"USER_CPU", "4"},
                      {"USER_GPU", "1"},
                      {"USER_EXCLUDED_NODES", "ARRAY:[node-7,node-9]"}};
  Result<Json> got = Render(tmpl, vars, "t");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  // Keys are never rendered; values always become strings (as in OSMO).
  EXPECT_EQ((*got)["metadata"]["labels"], J(R"({"{{NAME}}": "train"})"));
  const Json& c = (*got)["spec"]["containers"][0];
  EXPECT_EQ(c["name"], "train");
  EXPECT_EQ(c["resources"]["limits"]["cpu"], "4");
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"], "1");
  EXPECT_EQ(c["args"], J(R"(["--cpus", "4", 7, true, null])"));
  EXPECT_EQ(
      (*got)["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0]["matchExpressions"][0]["values"],
      J(R"(["node-7", "node-9"])"));
  EXPECT_EQ((*got)["spec"]["literal"], J(R"(["x"])"));
  EXPECT_EQ((*got)["spec"]["empty"], Json::array());
  EXPECT_EQ((*got)["spec"]["priority"], 5);
  // The input is untouched.
  EXPECT_EQ(tmpl["spec"]["containers"][0]["name"], "{{USER_CONTAINER_NAME}}");

  vars.erase("USER_CPU");
  vars["USER_CPUS"] = "4";
  Result<Json> bad = Render(tmpl, vars, "default_user");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "pod template \"default_user\" field spec.containers[0].resources.limits.cpu uses "
            "undefined variable USER_CPU (did you mean \"USER_CPUS\"?)");
  Result<Json> bad_list = Render(J(R"({"a": [{"b": ["x", "{{NOPE}}"]}]})"), vars, "t");
  ExpectError(bad_list.status(), {"field a[0].b[1] uses undefined variable NOPE"});
}

TEST(VariablesTest, VariableText) {
  struct Case {
    std::string json;
    std::optional<std::string> want;
    bool ok;
  };
  std::vector<Case> cases = {
      {R"("16Gi")", "16Gi", true},  {"4", "4", true},
      {"-2", "-2", true},           {"1.5", "1.5", true},
      {"true", "true", true},       {"null", std::nullopt, true},
      {"[1]", std::nullopt, false}, {"{}", std::nullopt, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    auto got = VariableText(Json::parse(c.json), "v");
    ASSERT_EQ(got.ok(), c.ok);
    if (c.ok) {
      EXPECT_EQ(*got, c.want);
    }
  }
}

}  // namespace variables_test
}  // namespace gpupool::config
