#include "config/config_set.h"

#include <gtest/gtest.h>

#include "config/access.h"
#include "config/merge.h"
#include "config/rules.h"
#include "config/test_util.h"

namespace gpupool::config {
namespace config_set_test {

using testing::ExpectError;
using testing::J;

TEST(ConfigSetTest, PutGetRemove) {
  ConfigSet set;
  ASSERT_TRUE(PutConfig(set, Kind::kPodTemplate, "t", J(R"({"spec": {"a": 1}})")).ok());
  ASSERT_TRUE(PutConfig(set, Kind::kPool, "p", J(R"({"backend": "b"})")).ok());
  EXPECT_EQ(GetConfigBody(set, Kind::kPodTemplate, "t")->dump(), R"({"spec":{"a":1}})");
  EXPECT_EQ(ConfigNames(set, Kind::kPool), std::vector<std::string>{"p"});
  ExpectError(GetConfigBody(set, Kind::kPool, "q").status(), {"POOL \"q\" does not exist"});
  ExpectError(PutConfig(set, Kind::kPool, "bad", J(R"({})")), {"backend: required"});
  EXPECT_EQ(set.pools.count("bad"), 0u);
  ExpectError(PutConfig(set, Kind::kQueue, "q", J(R"({})")), {"QUEUE"});
  EXPECT_TRUE(RemoveConfig(set, Kind::kPodTemplate, "t").ok());
  Status s = RemoveConfig(set, Kind::kPodTemplate, "t");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
}

TEST(ConfigSetTest, ValidateReferences) {
  ConfigSet set = BuiltinConfigs();
  ASSERT_TRUE(PutConfig(set, Kind::kBackend, "gpu-cluster-01", J("{}")).ok());
  ASSERT_TRUE(PutConfig(set, Kind::kPool, "p", J(R"({"backend": "gpu-cluster-1",
      "common_pod_template": ["default_user", "defualt_ctrl"],
      "common_resource_validations": ["default_cpu", "gpu_training_validation"],
      "platforms": {"a100": {"override_pod_template": ["a100"],
                             "resource_validations": ["default_memry"]}}})"))
                  .ok());
  std::vector<Status> errors = ValidateReferenceList(set);
  std::vector<std::string> messages;
  for (const Status& e : errors) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    messages.push_back(e.message());
  }
  EXPECT_EQ(messages,
            (std::vector<std::string>{
                "pool \"p\": backend: backend \"gpu-cluster-1\" does not exist (did you mean "
                "\"gpu-cluster-01\"?); backends: default, gpu-cluster-01 (register it first: "
                "gpupool config update BACKEND gpu-cluster-1 --file FILE)",
                "pool \"p\": common_pod_template[1]: pod template \"defualt_ctrl\" does not exist "
                "(did you mean \"default_ctrl\"?)",
                "pool \"p\": common_resource_validations[1]: resource validation "
                "\"gpu_training_validation\" does not exist",
                "pool \"p\": platforms.a100.override_pod_template[0]: pod template \"a100\" does "
                "not exist",
                "pool \"p\": platforms.a100.resource_validations[0]: resource validation "
                "\"default_memry\" does not exist (did you mean \"default_memory\"?)",
            }));
  Status joined = ValidateReferences(set);
  EXPECT_EQ(joined.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(std::count(joined.message().begin(), joined.message().end(), '\n'), 4);
  set.pools.at("p").common_pod_template = {"default_user", "default_ctrl"};
  set.pools.at("p").common_resource_validations = {"default_cpu"};
  set.pools.at("p").platforms[0].override_pod_template.clear();
  set.pools.at("p").platforms[0].resource_validations.clear();
  EXPECT_FALSE(ValidateReferences(set).ok());
  // A registered BACKEND, and the built-in `default` without a config.
  for (const char* backend : {"gpu-cluster-01", "default"}) {
    set.pools.at("p").backend = backend;
    EXPECT_TRUE(ValidateReferences(set).ok()) << backend;
  }
}

// default_node_pools (pool and platform): decoded with seed 003's `Default` as `default`,
// checked against the NODE_POOL names with the field path and a did-you-mean.
TEST(ConfigSetTest, DefaultNodePools) {
  ConfigSet set = BuiltinConfigs();
  ASSERT_TRUE(PutConfig(set, Kind::kPool, "p", J(R"({"backend": "default",
      "default_node_pools": ["A100-80", "Default"],
      "platforms": {"a100": {"default_node_pools": ["A100-8"]}}})"))
                  .ok());
  EXPECT_EQ(set.pools.at("p").default_node_pools, (std::vector<std::string>{"A100-80", "default"}));
  EXPECT_EQ((*GetConfigBody(set, Kind::kPool, "p"))["default_node_pools"],
            J(R"(["A100-80", "default"])"));
  std::vector<Status> errors = ValidateDefaultNodePools(set, {"A100-80", "L40S"});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message(),
            "pool \"p\": platforms.a100.default_node_pools[0]: node pool \"A100-8\" does not "
            "exist (did you mean \"A100-80\"?); node pools: A100-80, L40S, default");
  EXPECT_EQ(ValidateDefaultNodePools(set, {}).size(), 2u);
  EXPECT_EQ(UsersOf(set, Kind::kNodePool, "A100-80"), std::vector<std::string>{"p"});
  EXPECT_EQ(UsersOf(set, Kind::kNodePool, "A100-8"), std::vector<std::string>{"p"});
  ExpectError(PutConfig(set, Kind::kPool, "q", J(R"({"backend": "default",
      "default_node_pools": ["a", "a"]})")),
              {"default_node_pools[1]: node pool \"a\" named twice"});
  ExpectError(PutConfig(set, Kind::kPool, "q", J(R"({"backend": "default",
      "platforms": {"x": {"default_node_pools": "a"}}})")),
              {"platforms.x.default_node_pools"});
}

TEST(ConfigSetTest, UsersOfAndDeletes) {
  ConfigSet set = BuiltinConfigs();
  ASSERT_TRUE(PutConfig(set, Kind::kPodTemplate, "a100", J(R"({})")).ok());
  ASSERT_TRUE(PutConfig(set, Kind::kPool, "p1", J(R"({"backend": "cluster",
      "common_pod_template": ["default_user"],
      "platforms": {"x": {"override_pod_template": ["a100"], "resource_validations": ["default_cpu"]}}})"))
                  .ok());
  ASSERT_TRUE(PutConfig(set, Kind::kPool, "p2", J(R"({"backend": "cluster",
      "platforms": {"y": {"override_pod_template": ["a100"]}}})"))
                  .ok());
  struct Case {
    Kind kind;
    std::string name;
    std::vector<std::string> want;
  };
  std::vector<Case> cases = {
      {Kind::kPodTemplate, "a100", {"p1", "p2"}},
      {Kind::kPodTemplate, "default_user", {"default", "p1"}},
      {Kind::kPodTemplate, "unused", {}},
      {Kind::kResourceValidation, "default_cpu", {"default", "p1"}},
      {Kind::kResourceValidation, "default_storage", {"default"}},
      {Kind::kBackend, "cluster", {"p1", "p2"}},
      {Kind::kRole, "osmo-user", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(KindName(c.kind)) + " " + c.name);
    EXPECT_EQ(UsersOf(set, c.kind, c.name), c.want);
  }
  Status s = CheckDeletable(set, Kind::kPodTemplate, "a100");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "Pod template \"a100\" is used by pools: p1, p2");
  EXPECT_EQ(CheckDeletable(set, Kind::kResourceValidation, "default_storage").message(),
            "Resource validation \"default_storage\" is used by pool: default");
  EXPECT_FALSE(CheckDeletable(set, Kind::kPodTemplate, "default_ctrl").ok());
  EXPECT_TRUE(CheckDeletable(set, Kind::kPool, "p1").ok());
}

// Pool "default" of `set` rendered for a task whose container is "hello": its variables and pod.
struct RenderedDefault {
  VariableMap vars;
  Json pod;
};
Result<RenderedDefault> RenderDefaultPool(const ConfigSet& set) {
  const Pool& pool = set.pools.at("default");
  ASSIGN_OR_RETURN(Json merged, PlatformTemplate(pool, "default", set));
  TaskContext task;
  task.container_name = "hello";
  ASSIGN_OR_RETURN(VariableMap vars,
                   ResolveVariables(pool, pool.FindPlatform("default"), {}, task));
  ASSIGN_OR_RETURN(Json pod, Render(merged, vars, "default"));
  return RenderedDefault{std::move(vars), std::move(pod)};
}

TEST(BuiltinConfigsTest, Contents) {
  ConfigSet set = BuiltinConfigs();
  EXPECT_EQ(ConfigNames(set, Kind::kPodTemplate),
            (std::vector<std::string>{"default_ctrl", "default_user"}));
  EXPECT_EQ(ConfigNames(set, Kind::kResourceValidation),
            (std::vector<std::string>{"default_cpu", "default_memory", "default_storage"}));
  EXPECT_EQ(ConfigNames(set, Kind::kRole),
            (std::vector<std::string>{"osmo-admin", "osmo-default", "osmo-user"}));
  EXPECT_EQ(ConfigNames(set, Kind::kPool), std::vector<std::string>{"default"});
  EXPECT_TRUE(ValidateReferences(set).ok());
  EXPECT_TRUE(set.roles.at("osmo-admin").immutable);

  // The default pool renders with its default variables into a user container and osmo-ctrl.
  auto rendered = RenderDefaultPool(set);
  ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
  const Json& pod = rendered->pod;
  EXPECT_EQ(pod["spec"]["containers"][0]["name"], "hello");
  EXPECT_EQ(
      pod["spec"]["containers"][0]["resources"]["requests"],
      J(R"({"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "0", "ephemeral-storage": "1Gi"})"));
  EXPECT_EQ(pod["spec"]["containers"][1]["name"], "osmo-ctrl");

  // The default rules: static sanity plus node capacity.
  const Pool& pool = set.pools.at("default");
  Result<std::vector<NamedRule>> rules = PlatformRules(pool, "default", set);
  ASSERT_TRUE(rules.ok());
  ASSERT_EQ(rules->size(), 6u);
  model::Node node;
  node.name = "n";
  node.allocatable["cpu"] = *model::Quantity::Parse("4");
  node.allocatable["memory"] = *model::Quantity::Parse("16Gi");
  node.allocatable["ephemeral-storage"] = *model::Quantity::Parse("100Gi");
  ValidationScope scope{"t", "default", "default"};
  VariableMap task_vars = rendered->vars;
  Result<ValidationResult> ok = ValidateTask(scope, *rules, task_vars, {&node});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(ok->ok());
  task_vars["USER_CPU"] = "8";
  Result<ValidationResult> too_big = ValidateTask(scope, *rules, task_vars, {&node});
  ASSERT_TRUE(too_big.ok());
  ASSERT_FALSE(too_big->ok());
  EXPECT_EQ(too_big->failure->message, "Value 8 for CPU exceeds the node capacity 4");
  task_vars["USER_CPU"] = "0";
  Result<ValidationResult> zero = ValidateTask(scope, *rules, task_vars, {&node});
  ASSERT_FALSE(zero->ok());
  EXPECT_FALSE(zero->failure->node_rule);
  EXPECT_EQ(zero->failure->message, "Value 0 too low for CPU: it must be above 0");
}

// For a Slurm backend the default pool's pod is the user container alone: its requests are what
// the batch job asks of Slurm. default_ctrl stays, for pools that name it.
TEST(BuiltinConfigsTest, WithoutTheControlSidecar) {
  BuiltinOptions options;
  options.control_sidecar = false;
  ConfigSet set = BuiltinConfigs(options);
  EXPECT_EQ(ConfigNames(set, Kind::kPodTemplate),
            (std::vector<std::string>{"default_ctrl", "default_user"}));
  EXPECT_TRUE(ValidateReferences(set).ok());
  auto rendered = RenderDefaultPool(set);
  ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
  ASSERT_EQ(rendered->pod["spec"]["containers"].size(), 1u);
  EXPECT_EQ(rendered->pod["spec"]["containers"][0]["name"], "hello");
  // Everything else in the pool is as in the default built-ins.
  ConfigSet with_sidecar = BuiltinConfigs();
  EXPECT_EQ(set.pools.at("default").common_resource_validations,
            with_sidecar.pools.at("default").common_resource_validations);
  EXPECT_EQ(with_sidecar.pools.at("default").common_pod_template,
            (std::vector<std::string>{"default_user", "default_ctrl"}));
}

TEST(ConfigSetTest, ImmutableRoles) {
  ConfigSet set = BuiltinConfigs();
  EXPECT_EQ(CheckDeletable(set, Kind::kRole, "osmo-admin").message(),
            "Role \"osmo-admin\" is immutable");
  EXPECT_TRUE(CheckDeletable(set, Kind::kRole, "osmo-user").ok());
  Json admin = *GetConfigBody(set, Kind::kRole, "osmo-admin");
  Json described = admin;
  described["description"] = "changed";
  EXPECT_TRUE(CheckUpdatable(set, Kind::kRole, "osmo-admin", described).ok());
  Json widened = admin;
  widened["policies"][0]["resources"] = J(R"(["pool/*"])");
  Status s = CheckUpdatable(set, Kind::kRole, "osmo-admin", widened);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("is immutable"), std::string::npos);
  Json mutable_admin = admin;
  mutable_admin["immutable"] = false;
  EXPECT_FALSE(CheckUpdatable(set, Kind::kRole, "osmo-admin", mutable_admin).ok());
  EXPECT_TRUE(CheckUpdatable(set, Kind::kRole, "osmo-user", J(R"({"policies": []})")).ok());
  EXPECT_TRUE(CheckUpdatable(set, Kind::kPool, "default", J(R"({})")).ok());
}

TEST(ConfigSetTest, PoolVerboseJson) {
  ConfigSet set = BuiltinConfigs();
  ASSERT_TRUE(PutConfig(set, Kind::kPodTemplate, "gpu", J(R"({"spec": {
      "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"},
      "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}})"))
                  .ok());
  ASSERT_TRUE(PutConfig(set, Kind::kPool, "p", J(R"({"backend": "b",
      "common_pod_template": ["default_user"], "common_resource_validations": ["default_cpu"],
      "platforms": {"l40s": {"override_pod_template": ["gpu"]}, "cpu": {}}})"))
                  .ok());
  Result<Json> v = PoolVerboseJson(set.pools.at("p"), set);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  const Json& l40s = (*v)["platforms"]["l40s"];
  EXPECT_EQ(l40s["labels"], J(R"({"nvidia.com/gpu.product": "NVIDIA-L40S"})"));
  EXPECT_EQ(l40s["tolerations"].size(), 1u);
  EXPECT_EQ(l40s["parsed_pod_template"]["spec"]["containers"][0]["name"],
            "{{USER_CONTAINER_NAME}}");
  EXPECT_EQ(l40s["parsed_resource_validations"].size(), 2u);
  EXPECT_EQ((*v)["platforms"]["cpu"]["labels"], Json::object());
  EXPECT_EQ((*v)["backend"], "b");
}

}  // namespace config_set_test
}  // namespace gpupool::config
