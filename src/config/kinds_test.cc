#include "config/kinds.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "common/strings.h"
#include "config/kinds/shared.h"
#include "config/test_util.h"
#include "model/machine_pool.h"
#include "model/node_pool.h"
#include "model/queue.h"

namespace gpupool::config {
namespace kinds_test {

using testing::ExpectError;
using testing::J;

TEST(KindTest, ParsesSpellings) {
  struct Case {
    std::string text;
    std::optional<Kind> want;
  };
  std::vector<Case> cases = {
      {"POOL", Kind::kPool},
      {"pool", Kind::kPool},
      {"POD_TEMPLATE", Kind::kPodTemplate},
      {"pod-template", Kind::kPodTemplate},
      {"PodTemplate", Kind::kPodTemplate},
      {"RESOURCE_VALIDATION", Kind::kResourceValidation},
      {"ROLE", Kind::kRole},
      {"Backend", Kind::kBackend},
      {"NODE_POOL", Kind::kNodePool},
      {"POOLS", std::nullopt},
      {"", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Result<Kind> got = ParseKind(c.text);
    ASSERT_EQ(got.ok(), c.want.has_value()) << got.status().ToString();
    if (got.ok()) {
      EXPECT_EQ(*got, *c.want);
    }
  }
  ExpectError(ParseKind("POD_TEMPLAT").status(), {"did you mean \"POD_TEMPLATE\""});
  EXPECT_EQ(KindName(Kind::kResourceValidation), "RESOURCE_VALIDATION");
  EXPECT_EQ(KindManifestName(Kind::kPodTemplate), "PodTemplate");
}

TEST(NameTest, Regex) {
  struct Case {
    std::string name;
    bool ok;
  };
  std::vector<Case> cases = {
      {"a", true},
      {"robotics-training", true},
      {"heterogeneous_pool", true},
      {"a100_platform", true},
      {"v1.2", true},
      {"osmo-shared", true},
      {"", false},
      {"1pool", false},
      {"pool-", false},
      {"-pool", false},
      {"pool name", false},
      {"pool/x", false},
      {"pool_", false},
      {"p*", false},
      {"_x", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ValidateName("pool", c.name).ok(), c.ok);
  }
}

TEST(PoolTest, DecodesEveryField) {
  Json body = J(R"({
    "description": "H100 training", "backend": "cluster-a", "enable_maintenance": true,
    "default_platform": "h100",
    "default_exec_timeout": "2d", "max_exec_timeout": "7d", "default_queue_timeout": "",
    "max_queue_timeout": "PT4H",
    "default_exit_actions": {"RESCHEDULE": "137,139", "complete": "0", "FAIL": 1},
    "action_permissions": {"execute": "POOL", "cancel": "PRIVATE"},
    "resources": {"gpu": {"guarantee": 64, "maximum": 128, "weight": 2}},
    "topology_keys": [{"key": "zone", "label": "topology.kubernetes.io/zone"},
                      {"key": "rack", "label": "example.com/rack"}],
    "common_default_variables": {"USER_CPU": 4, "USER_GPU": 0, "USER_MEMORY": "16Gi"},
    "common_resource_validations": ["default_cpu", "default_memory"],
    "common_pod_template": ["default_ctrl", "default_user"],
    "common_group_templates": [],
    "platforms": {"h100": {"description": "8xH100 nodes", "override_pod_template": ["h100_sel"],
                           "resource_validations": ["max8gpu"],
                           "default_variables": {"USER_GPU": 1},
                           "host_network_allowed": true, "privileged_allowed": false,
                           "allowed_mounts": ["/mnt/datasets"]}}})");
  Result<Pool> pool = PoolFromJson("robot-train", body);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ(pool->name, "robot-train");
  EXPECT_EQ(pool->backend, "cluster-a");
  EXPECT_TRUE(pool->enable_maintenance);
  EXPECT_EQ(pool->default_platform, "h100");
  EXPECT_EQ(pool->default_exec_timeout.seconds, 2 * 86400);
  EXPECT_EQ(pool->max_exec_timeout.seconds, 7 * 86400);
  EXPECT_FALSE(pool->default_queue_timeout.seconds.has_value());
  EXPECT_EQ(EffectiveSeconds(pool->default_queue_timeout), kDefaultTimeoutSeconds);
  EXPECT_EQ(pool->max_queue_timeout.seconds, 4 * 3600);
  ASSERT_EQ(pool->default_exit_actions.size(), 3u);
  EXPECT_EQ(pool->default_exit_actions[1].action, "COMPLETE");
  EXPECT_EQ(MatchExitAction(pool->default_exit_actions, 139), "RESCHEDULE");
  EXPECT_EQ(MatchExitAction(pool->default_exit_actions, 0), "COMPLETE");
  EXPECT_EQ(MatchExitAction(pool->default_exit_actions, 1), "FAIL");
  EXPECT_EQ(MatchExitAction(pool->default_exit_actions, 2), std::nullopt);
  ASSERT_TRUE(pool->gpu.has_value());
  EXPECT_EQ(pool->gpu->guarantee, 64);
  EXPECT_EQ(pool->gpu->maximum, 128);
  EXPECT_EQ(pool->gpu->weight, 2);
  ASSERT_EQ(pool->topology_keys.size(), 2u);
  EXPECT_EQ(pool->topology_keys[1].label, "example.com/rack");
  EXPECT_EQ(pool->common_pod_template, (std::vector<std::string>{"default_ctrl", "default_user"}));
  ASSERT_EQ(pool->platforms.size(), 1u);
  const Platform& p = pool->platforms[0];
  EXPECT_EQ(p.name, "h100");
  EXPECT_TRUE(p.host_network_allowed);
  EXPECT_EQ(p.allowed_mounts, std::vector<std::string>{"/mnt/datasets"});
  EXPECT_EQ(p.default_variables["USER_GPU"], 1);
  // Round trip keeps everything, in order.
  EXPECT_EQ(PoolToJson(*pool).dump(), body.dump());
}

TEST(PoolTest, RoundTripKeepsKeyOrderAndName) {
  Json body = J(R"({"name": "p", "backend": "default", "default_platform": "b",
                    "description": "x", "platforms": {"b": {"description": "B"},
                    "a": {"override_pod_template": ["t"], "description": "A"}}})");
  Result<Pool> pool = PoolFromJson("p", body);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ(PoolToJson(*pool, /*with_name=*/true).dump(), body.dump());
  Json no_name = body;
  no_name.erase("name");
  EXPECT_EQ(PoolToJson(*pool).dump(), no_name.dump());
  // Edits show up; untouched fields stay absent.
  pool->enable_maintenance = true;
  pool->platforms[1].override_pod_template.push_back("u");
  Json edited = PoolToJson(*pool);
  EXPECT_EQ(edited["enable_maintenance"], true);
  EXPECT_EQ(edited["platforms"]["a"]["override_pod_template"], J(R"(["t", "u"])"));
  EXPECT_FALSE(edited.contains("common_pod_template"));
  // A pool built in code.
  Pool built;
  built.name = "q";
  built.backend = "sim";
  Platform plat;
  plat.name = "cpu";
  built.platforms.push_back(plat);
  EXPECT_EQ(PoolToJson(built).dump(), R"({"backend":"sim","platforms":{"cpu":{}}})");
}

TEST(PoolTest, Errors) {
  struct Case {
    std::string name;
    std::string body;
    std::vector<std::string> fragments;
  };
  std::vector<Case> cases = {
      {"missing backend", R"({"description": "x"})", {"pool \"p\"", "backend: required"}},
      {"unknown field",
       R"({"backend": "b", "default_platfrom": "x"})",
       {"unknown field default_platfrom", "did you mean \"default_platform\""}},
      {"unknown platform field",
       R"({"backend": "b", "platforms": {"a100": {"overide_pod_template": []}}})",
       {"unknown field platforms.a100.overide_pod_template",
        "did you mean \"override_pod_template\""}},
      {"wrong type",
       R"({"backend": "b", "platforms": {"a": {"host_network_allowed": "no"}}})",
       {"platforms.a.host_network_allowed", "expected a boolean", "got string \"no\""}},
      {"list of strings",
       R"({"backend": "b", "common_pod_template": ["a", 3]})",
       {"common_pod_template[1]", "expected a string", "got number 3"}},
      {"default platform",
       R"({"backend": "b", "default_platform": "l40s", "platforms": {"a100": {}}})",
       {"Default platform l40s not in platforms (a100)"}},
      {"default over max",
       R"({"backend": "b", "default_exec_timeout": "9h", "max_exec_timeout": "8h"})",
       {"default_exec_timeout 9h is above max_exec_timeout 8h"}},
      {"default over global max",
       R"({"backend": "b", "default_queue_timeout": "90d"})",
       {"default_queue_timeout 90d is above max_queue_timeout 60d"}},
      {"bad duration",
       R"({"backend": "b", "max_exec_timeout": "8 hours"})",
       {"max_exec_timeout", "expected a duration"}},
      {"bad exit action",
       R"({"backend": "b", "default_exit_actions": {"RETRY": "1"}})",
       {"unknown exit action \"RETRY\""}},
      {"bad exit codes",
       R"({"backend": "b", "default_exit_actions": {"FAIL": "1,5-3"}})",
       {"default_exit_actions.FAIL", "reversed"}},
      {"bad exit codes syntax",
       R"({"backend": "b", "default_exit_actions": {"FAIL": "1,,2"}})",
       {"not a number or range"}},
      {"gpu guarantee above maximum",
       R"({"backend": "b", "resources": {"gpu": {"guarantee": 10, "maximum": 5}}})",
       {"guarantee 10 is above maximum 5"}},
      {"unknown resource",
       R"({"backend": "b", "resources": {"cpu": {}}})",
       {"unknown field resources.cpu"}},
      {"bad platform name",
       R"({"backend": "b", "platforms": {"a100 platform": {}}})",
       {"platform name \"a100 platform\" is not valid"}},
      {"bad variable",
       R"({"backend": "b", "common_default_variables": {"USER_CPU": {"x": 1}}})",
       {"common_default_variables.USER_CPU", "a string, number, boolean or null"}},
      {"action permissions",
       R"({"backend": "b", "action_permissions": {"execute": "ANYONE"}})",
       {"action_permissions.execute", "PUBLIC, POOL or PRIVATE"}},
      {"topology duplicate",
       R"({"backend": "b", "topology_keys": [{"key": "z", "label": "a"}, {"key": "z", "label": "b"}]})",
       {"topology_keys[1].key: duplicate"}},
      {"body name differs", R"({"name": "q", "backend": "b"})", {"names \"q\""}},
      {"not an object", R"([1])", {"expected an object"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<Pool> pool = PoolFromJson("p", Json::parse(c.body));
    ASSERT_FALSE(pool.ok());
    EXPECT_EQ(pool.status().code(), StatusCode::kInvalidArgument);
    for (const std::string& f : c.fragments) {
      EXPECT_NE(pool.status().message().find(f), std::string::npos)
          << pool.status().message() << "\nmissing: " << f;
    }
  }
  ExpectError(PoolFromJson("bad name", J(R"({"backend": "b"})")).status(),
              {"pool name \"bad name\" is not valid"});
}

TEST(PoolTest, InvalidUtf8NeverThrows) {
  // YAML input can carry bytes that are not UTF-8; messages must not throw while dumping them.
  Json body = Json::object();
  body["backend"] = "b";
  body["enable_maintenance"] = std::string("\xff\xfe");
  Result<Pool> pool = PoolFromJson("p", body);
  ExpectError(pool.status(), {"enable_maintenance: expected a boolean"});
  Json tmpl = Json::object();
  tmpl["spec"]["tolerations"] =
      Json::array({Json{{"key", std::string("\xff")}, {"value", "{{X}}"}}});
  EXPECT_TRUE(PodTemplateFromJson("t", tmpl).ok());
}

TEST(ExitCodesTest, Parse) {
  struct Case {
    std::string text;
    std::vector<ExitCodeRange> want;
    bool ok;
  };
  std::vector<Case> cases = {
      {"1", {{1, 1}}, true},
      {"1,3-5", {{1, 1}, {3, 5}}, true},
      {"0,137,139", {{0, 0}, {137, 137}, {139, 139}}, true},
      {"", {}, false},
      {"a", {}, false},
      {"1-", {}, false},
      {"1-2-3", {}, false},
      {"-1", {}, false},
      {"5-3", {}, false},
      {"1, 2", {}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto got = ParseExitCodes(c.text);
    ASSERT_EQ(got.ok(), c.ok) << got.status().ToString();
    if (c.ok) {
      EXPECT_EQ(*got, c.want);
    }
  }
}

// Any fields inside metadata and spec (a partial Pod: OSMO merges them into the task's pod);
// at the top a Pod's own fields only, as the API server's strict decoding would have it (and a
// stored template then cannot be mistaken for the map form when written again).
TEST(PodTemplateTest, KeepsAnyFieldsAndChecksSelectorParts) {
  Json body = J(R"({"metadata": {"labels": {"a": "b"}}, "spec": {"zzz": 1, "nodeSelector":
      {"k": "{{V}}"}, "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"},
      {"key": "t", "value": "{{X}}", "tolerationSeconds": "{{S}}"}]}, "kind": "Pod"})");
  Result<PodTemplate> t = PodTemplateFromJson("x", body);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(PodTemplateToJson(*t).dump(), body.dump());

  struct Case {
    std::string name;
    std::string body;
    std::string fragment;
  };
  std::vector<Case> cases = {
      {"array", R"([])", "expected an object"},
      {"spec string", R"({"spec": "x"})", "spec: expected an object"},
      {"selector value", R"({"spec": {"nodeSelector": {"a": 1}}})", "spec.nodeSelector.a"},
      {"toleration effect", R"({"spec": {"tolerations": [{"key": "a", "effect": "NoSchedul"}]}})",
       "spec.tolerations[0]"},
      {"containers", R"({"spec": {"containers": {"name": "x"}}})",
       "spec.containers: expected a list"},
      {"unknown top-level field", R"({"unknownTop": [1]})", "unknownTop: unknown field"},
      {"misspelt spec", R"({"sWec": {"nodeSelector": {}}})",
       "sWec: unknown field (did you mean \"spec\"?)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ExpectError(PodTemplateFromJson("x", Json::parse(c.body)).status(),
                {"pod template \"x\"", c.fragment});
  }
}

TEST(ValidationSetTest, DecodeAndErrors) {
  Json body = J(R"([
    {"operator": "LE", "left_operand": "{{USER_GPU}}", "right_operand": 8,
     "assert_message": "At most 8 GPUs per task, got {{USER_GPU}}"},
    {"operator": "ne", "left_operand": "{{USER_MEMORY}}", "right_operand": "{{K8_MEMORY}}",
     "assert_message": "x"}])");
  Result<ValidationSet> set = ValidationSetFromJson("max8gpu", body);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  ASSERT_EQ(set->rules.size(), 2u);
  EXPECT_EQ(set->rules[0].op, Operator::kLe);
  EXPECT_EQ(set->rules[0].right_operand, "8");
  EXPECT_EQ(set->rules[1].op, Operator::kNe);
  EXPECT_EQ(ValidationSetToJson(*set)[1]["operator"], "NE");

  struct Case {
    std::string name;
    std::string body;
    std::string fragment;
  };
  std::vector<Case> cases = {
      {"not a list", R"({"operator": "LE"})", "expected a list of rules"},
      {"extra key",
       R"([{"operator": "LE", "left_operand": "1", "right_operand": "2", "assert_message": "m", "note": "x"}])",
       "unknown field [0].note"},
      {"missing operand", R"([{"operator": "LE", "left_operand": "1", "assert_message": "m"}])",
       "[0].right_operand: required"},
      {"missing operator",
       R"([{"left_operand": "1", "right_operand": "1", "assert_message": "m"}])",
       "[0].operator: required"},
      {"bad operator",
       R"([{"operator": "LTE", "left_operand": "1", "right_operand": "2", "assert_message": "m"}])",
       "did you mean"},
      {"bad placeholder",
       R"([{"operator": "LE", "left_operand": "{{USER_CPU * 2}}", "right_operand": "2", "assert_message": "m"}])",
       "unsupported expression"},
      {"message type",
       R"([{"operator": "LE", "left_operand": "1", "right_operand": "2", "assert_message": []}])",
       "[0].assert_message: expected a string or number"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ExpectError(ValidationSetFromJson("v", Json::parse(c.body)).status(),
                {"resource validation \"v\"", c.fragment});
  }
}

// Seed 000's prose writes `api/pool/shared*`: stored (and matched) as `/api/pool/shared*`.
TEST(RoleTest, LegacyPathsGetTheirLeadingSlash) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"api/pool/shared*", "/api/pool/shared*"},   {"/api/pool/shared*", "/api/pool/shared*"},
      {"!api/configs/*", "!/api/configs/*"},       {"http:api/profile/*", "http:/api/profile/*"},
      {"http:!api/agent/*", "http:!/api/agent/*"}, {"*", "*"},
  };
  for (const auto& [written, stored] : cases) {
    SCOPED_TRACE(written);
    Json body = {
        {"actions", Json::array({{{"base", "http"}, {"path", written}, {"method", "post"}}})}};
    Result<Role> role = RoleFromJson("r", body);
    ASSERT_TRUE(role.ok()) << role.status().ToString();
    EXPECT_EQ(role->actions[0].path, stored);
  }
  Result<Role> text = RoleFromJson("r", J(R"({"actions": ["http:api/pool/x*:Post"]})"));
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(text->actions[0].path, "/api/pool/x*");
}

TEST(RoleTest, LegacyAndPolicies) {
  Json legacy = J(R"({"name": "osmo-shared", "description": "d", "actions": [
      {"base": "http", "path": "/api/pool/shared*", "method": "post"},
      {"base": "http", "path": "http:/api/profile/*", "method": "*"},
      "http:!/api/agent/*:Get"]})");
  Result<Role> role = RoleFromJson("osmo-shared", legacy);
  ASSERT_TRUE(role.ok()) << role.status().ToString();
  ASSERT_EQ(role->actions.size(), 3u);
  EXPECT_EQ(role->actions[2].path, "!/api/agent/*");
  EXPECT_EQ(role->actions[2].method, "get");
  EXPECT_EQ(RoleToJson(*role, true).dump(), legacy.dump());

  Json modern = J(R"({"description": "ML team pools", "policies": [
      {"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/ml-*"]},
      {"actions": ["pool:List", "profile:*", "credentials:*"]},
      {"effect": "Deny", "actions": ["workflow:Exec"], "resources": ["pool/ml-prod"]}],
      "immutable": false, "sync_mode": "import", "external_roles": ["ml-team-idp-group"]})");
  role = RoleFromJson("osmo-ml-team", modern);
  ASSERT_TRUE(role.ok()) << role.status().ToString();
  ASSERT_EQ(role->policies.size(), 3u);
  EXPECT_EQ(role->policies[2].effect, Effect::kDeny);
  EXPECT_TRUE(role->policies[1].resources.empty());
  EXPECT_EQ(role->external_roles, std::vector<std::string>{"ml-team-idp-group"});
  EXPECT_EQ(RoleToJson(*role).dump(), modern.dump());

  struct Case {
    std::string name;
    std::string body;
    std::string fragment;
  };
  std::vector<Case> cases = {
      {"bad method", R"({"actions": [{"base": "http", "path": "/x", "method": "pst"}]})",
       "did you mean \"post\""},
      {"bad base", R"({"actions": [{"base": "grpc", "path": "/x", "method": "get"}]})",
       "actions[0].base"},
      {"extra key",
       R"({"actions": [{"base": "http", "path": "/x", "method": "get", "verb": "x"}]})",
       "unknown field actions[0].verb"},
      {"bad action", R"({"policies": [{"actions": ["Workflow:create"]}]})",
       "policies[0].actions[0]"},
      {"bad effect", R"({"policies": [{"effect": "Maybe", "actions": ["*:*"]}]})", "Allow or Deny"},
      {"no actions", R"({"policies": [{"resources": ["*"]}]})", "policies[0].actions: required"},
      {"sync mode", R"({"sync_mode": "always"})", "sync_mode"},
      {"unknown", R"({"polices": []})", "did you mean \"policies\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ExpectError(RoleFromJson("r", Json::parse(c.body)).status(), {"role \"r\"", c.fragment});
  }
}

// Seed 000 writes role globs without the leading slash; request paths always have one, so such a
// glob is stored and shown with it (one spelling), in both forms of an action.
TEST(RoleTest, PathsWithoutLeadingSlashAreNormalised) {
  struct Case {
    std::string body, path;
  };
  const Case cases[] = {
      {R"({"actions": [{"base": "http", "path": "api/pool/shared*", "method": "post"}]})",
       "/api/pool/shared*"},
      {R"({"actions": ["http:api/workflow/*:get"]})", "/api/workflow/*"},
      {R"({"actions": [{"base": "http", "path": "!api/x", "method": "get"}]})", "!/api/x"},
      {R"({"actions": [{"base": "http", "path": "*", "method": "get"}]})", "*"},
      {R"({"actions": [{"base": "http", "path": "/api/x", "method": "get"}]})", "/api/x"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    Result<Role> role = RoleFromJson("r", Json::parse(c.body));
    ASSERT_TRUE(role.ok()) << role.status().ToString();
    ASSERT_EQ(role->actions.size(), 1u);
    EXPECT_EQ(role->actions[0].path, c.path);
    const Json shown = RoleToJson(*role)["actions"][0];
    const std::string shown_path =
        shown.is_string() ? shown.get<std::string>() : shown["path"].get<std::string>();
    EXPECT_NE(shown_path.find(c.path), std::string::npos) << shown.dump();
  }
}

TEST(RoleTest, GeneratePoolRole) {
  Result<Role> role = GeneratePoolRole("osmo-heterogeneous_pool");
  ASSERT_TRUE(role.ok());
  EXPECT_EQ(role->description, "Generated Role for pool heterogeneous_pool");
  ASSERT_EQ(role->policies.size(), 1u);
  EXPECT_EQ(role->policies[0].actions, std::vector<std::string>{"workflow:*"});
  EXPECT_EQ(role->policies[0].resources, std::vector<std::string>{"pool/heterogeneous_pool*"});
  // What it prints decodes to the same role.
  Result<Role> again = RoleFromJson(role->name, RoleToJson(*role));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(RoleToJson(*again).dump(), RoleToJson(*role).dump());
  ExpectError(GeneratePoolRole("team").status(), {"osmo-<pool name prefix>"});
  ExpectError(GeneratePoolRole("osmo-").status(), {"osmo-<pool name prefix>"});
}

TEST(BackendTest, DecodeDefaultsAndErrors) {
  Json body = J(R"({"description": "GPU cluster", "k8s_namespace": "osmo",
      "scheduler_settings": {"scheduler_type": "kai", "scheduler_timeout": 60},
      "node_conditions": {"rules": {"Ready": "True", "GPU.*": "True|Unknown"}},
      "last_heartbeat": null, "online": true})");
  Result<Backend> b = BackendFromJson("gpu-cluster-01", body);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->scheduler_settings.scheduler_name, "kai-scheduler");
  EXPECT_EQ(b->scheduler_settings.scheduler_timeout, 60);
  EXPECT_EQ(b->node_conditions.prefix, "osmo.nvidia.com/");
  EXPECT_EQ(BackendToJson(*b).dump(), body.dump());
  Result<Backend> empty = BackendFromJson("b", Json::object());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->node_conditions.rules, J(R"({"Ready": "True"})"));
  EXPECT_EQ(BackendToJson(*empty).dump(), "{}");
  ExpectError(
      BackendFromJson("b", J(R"({"scheduler_settings": {"scheduler_timeout": 0}})")).status(),
      {"scheduler_timeout"});
  ExpectError(
      BackendFromJson("b", J(R"({"node_conditions": {"rules": {"Ready": "(("}}})")).status(),
      {"invalid regular expression"});
  ExpectError(BackendFromJson("b", J(R"({"dashbord_url": "x"})")).status(),
              {"did you mean \"dashboard_url\""});
}

// A BACKEND may say how to reach its Slurm cluster (`gpupool serve --backend config:NAME`): the
// URL is required and checked; the token never goes in (a file path does).
TEST(BackendTest, SlurmConnection) {
  Json body = J(R"({"slurm": {"url": "http://slurm-rest:6820", "jwt_file": "/etc/gpupool/jwt",
      "user": "svc-gpupool", "output_dir": "/shared/out"}})");
  Result<Backend> b = BackendFromJson("hpc", body);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_TRUE(b->slurm.has_value());
  EXPECT_EQ(b->slurm->url, "http://slurm-rest:6820");
  EXPECT_EQ(b->slurm->jwt_file, "/etc/gpupool/jwt");
  EXPECT_EQ(b->slurm->user, "svc-gpupool");
  EXPECT_EQ(b->slurm->partition, "");
  EXPECT_EQ(b->slurm->output_dir, "/shared/out");
  EXPECT_EQ(BackendToJson(*b).dump(), body.dump());
  Result<Backend> unix_socket =
      BackendFromJson("hpc", J(R"({"slurm": {"url": "unix:/run/slurmrestd.sock"}})"));
  ASSERT_TRUE(unix_socket.ok()) << unix_socket.status().ToString();
  EXPECT_FALSE(BackendFromJson("k8s", Json::object())->slurm.has_value());

  struct Case {
    const char* body;
    std::vector<std::string> expected;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"slurm": {}})", {"slurm.url: expected http://HOST:PORT", "got \"\""}},
           {R"({"slurm": {"url": "https://x:6820"}})", {"slurm.url", "got \"https://x:6820\""}},
           {R"({"slurm": {"url": "unix:relative.sock"}})", {"slurm.url", "unix:/PATH"}},
           {R"({"slurm": {"url": 6820}})", {"slurm.url"}},
           {R"({"slurm": {"url": "http://x:1", "token": "secret"}})", {"slurm", "token"}},
           {R"({"slurm": "http://x:1"})", {"slurm"}},
       }) {
    Status status = BackendFromJson("hpc", J(c.body)).status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.body;
    for (const std::string& part : c.expected) {
      EXPECT_NE(status.message().find(part), std::string::npos)
          << c.body << ": \"" << status.message() << "\" lacks \"" << part << "\"";
    }
    EXPECT_EQ(status.message().find("secret"), std::string::npos) << status.message();
  }
}

// The fields a config file tells a single body by are the fields its decoder accepts: every
// listed field decodes (its value may be refused, never the field), an unlisted one is an unknown
// field, and a file holding a listed field without a name is one body. (NODE_POOL's list once
// lacked topology_keys and MACHINE_POOL's named replicas, which the decoder refuses.)
TEST(SplitConfigFileTest, BodyFieldsAreTheDecodersFields) {
  struct Case {
    Kind kind;
    std::function<Status(const Json&)> decode;
  };
  const std::vector<Case> cases = {
      {Kind::kPool, [](const Json& b) { return PoolFromJson("p", b).status(); }},
      {Kind::kRole, [](const Json& b) { return RoleFromJson("r", b).status(); }},
      {Kind::kBackend, [](const Json& b) { return BackendFromJson("b", b).status(); }},
      {Kind::kNodePool, [](const Json& b) { return model::NodePoolFromJson(b, "n").status(); }},
      {Kind::kQueue, [](const Json& b) { return model::QueueFromJson(b, "q").status(); }},
      {Kind::kMachinePool,
       [](const Json& b) { return model::MachinePoolFromJson(b, "m").status(); }},
  };
  for (const Case& c : cases) {
    const std::string kind(KindName(c.kind));
    const std::span<const std::string_view> fields = internal::BodyFields(c.kind);
    ASSERT_FALSE(fields.empty()) << kind;
    for (std::string_view field : fields) {
      SCOPED_TRACE(kind + "." + std::string(field));
      for (const Json& value : {Json("x"), Json(1), Json::array(), Json::object()}) {
        Status decoded = c.decode(Json{{std::string(field), value}});
        EXPECT_EQ(decoded.message().find("unknown field"), std::string::npos) << decoded.message();
      }
      auto split = SplitConfigFile(c.kind, Json{{std::string(field), "x"}}, std::nullopt);
      ASSERT_FALSE(split.ok());
      EXPECT_NE(split.status().message().find("the file holds one " + kind + " (it has a \"" +
                                              std::string(field) + "\" field) but no name"),
                std::string::npos)
          << split.status().message();
    }
    SCOPED_TRACE(kind);
    Status unknown = c.decode(Json{{"surely_not_a_field", 1}});
    EXPECT_NE(unknown.message().find("unknown field"), std::string::npos) << unknown.message();
  }
  // src/model's decoders name the fields they accept: exactly the list (and "name").
  for (const Case& c : cases) {
    if (c.kind != Kind::kNodePool && c.kind != Kind::kQueue && c.kind != Kind::kMachinePool) {
      continue;
    }
    SCOPED_TRACE(KindName(c.kind));
    const std::string message = c.decode(Json{{"surely_not_a_field", 1}}).message();
    const size_t at = message.find("expected one of ");
    ASSERT_NE(at, std::string::npos) << message;
    std::vector<std::string> named = Split(message.substr(at + 16), ',');
    for (std::string& field : named) field = std::string(Trim(field));
    std::erase(named, "name");
    const std::span<const std::string_view> fields = internal::BodyFields(c.kind);
    EXPECT_EQ(named, std::vector<std::string>(fields.begin(), fields.end())) << message;
  }
  auto has = [](Kind kind, std::string_view field) {
    auto fields = internal::BodyFields(kind);
    return std::find(fields.begin(), fields.end(), field) != fields.end();
  };
  EXPECT_TRUE(has(Kind::kNodePool, "topology_keys"));
  EXPECT_FALSE(has(Kind::kMachinePool, "replicas"));
  EXPECT_NE(model::MachinePoolFromJson(Json{{"replicas", 2}}, "m")
                .status()
                .message()
                .find("unknown field"),
            std::string::npos);
}

// Over 80 lines only by its table of cases, one per row.
TEST(SplitConfigFileTest, Shapes) {
  struct Case {
    std::string name;
    Kind kind;
    std::string doc;
    std::optional<std::string> cli_name;
    std::vector<std::string> want_names;  // empty = error
    std::string error;
  };
  std::vector<Case> cases = {
      {"seed 000 pool: single form with name and matching CLI name",
       Kind::kPool,
       R"({"name": "shared", "backend": "default"})",
       "shared",
       {"shared"},
       ""},
      {"single form with name, no CLI name",
       Kind::kPool,
       R"({"name": "shared", "backend": "default"})",
       std::nullopt,
       {"shared"},
       ""},
      {"names disagree",
       Kind::kPool,
       R"({"name": "shared", "backend": "default"})",
       "other",
       {},
       "the command names POOL \"other\" but the file's \"name\" is \"shared\""},
      {"single form without name, CLI name",
       Kind::kPool,
       R"({"backend": "default"})",
       "p",
       {"p"},
       ""},
      {"single form without any name",
       Kind::kPool,
       R"({"backend": "default"})",
       std::nullopt,
       {},
       "no name"},
      {"seed 001 map form",
       Kind::kPool,
       R"({"robotics-training": {"backend": "a"}, "robotics-inference": {"backend": "b"}})",
       std::nullopt,
       {"robotics-training", "robotics-inference"},
       ""},
      {"map form, CLI name matches", Kind::kPool, R"({"p": {"backend": "a"}})", "p", {"p"}, ""},
      {"map form, CLI name differs",
       Kind::kPool,
       R"({"p": {"backend": "a"}})",
       "q",
       {},
       "but the file defines p"},
      {"map form, several with CLI name",
       Kind::kPool,
       R"({"p": {"backend": "a"}, "q": {"backend": "a"}})",
       "q",
       {},
       "omit the name"},
      {"map value not an object",
       Kind::kPool,
       R"({"p": 3})",
       std::nullopt,
       {},
       "p: expected an object"},
      {"map key not a valid name",
       Kind::kPool,
       R"({"bad name": {}})",
       std::nullopt,
       {},
       "is not valid"},
      {"seed 000 template: map form with CLI name",
       Kind::kPodTemplate,
       R"({"l40s": {"spec": {"nodeSelector": {"a": "b"}}}})",
       "l40s",
       {"l40s"},
       ""},
      {"template single form",
       Kind::kPodTemplate,
       R"({"spec": {"nodeSelector": {"a": "b"}}})",
       "l40s",
       {"l40s"},
       ""},
      {"template map form, wrong CLI name",
       Kind::kPodTemplate,
       R"({"l40s": {"spec": {}}})",
       "a100",
       {},
       "but the file defines l40s"},
      {"validation list", Kind::kResourceValidation, R"([])", "v", {"v"}, ""},
      {"validation list without name",
       Kind::kResourceValidation,
       R"([])",
       std::nullopt,
       {},
       "without a name"},
      {"validation map",
       Kind::kResourceValidation,
       R"({"a": [], "b": []})",
       std::nullopt,
       {"a", "b"},
       ""},
      {"validation map value",
       Kind::kResourceValidation,
       R"({"a": {}})",
       std::nullopt,
       {},
       "a list of rules"},
      {"seed 000 role: single form",
       Kind::kRole,
       R"({"name": "osmo-shared", "actions": []})",
       "osmo-shared",
       {"osmo-shared"},
       ""},
      {"role single form, no name key",
       Kind::kRole,
       R"({"policies": []})",
       "osmo-x",
       {"osmo-x"},
       ""},
      // A field the kind's decoder reads marks a file as one body (one list per kind serves both).
      {"pool single form, a late field",
       Kind::kPool,
       R"({"default_node_pools": []})",
       std::nullopt,
       {},
       "the file holds one POOL (it has a \"default_node_pools\" field) but no name"},
      {"backend single form without any name",
       Kind::kBackend,
       R"({"scheduler_settings": {}})",
       std::nullopt,
       {},
       "the file holds one BACKEND (it has a \"scheduler_settings\" field) but no name"},
      {"role single form without any name",
       Kind::kRole,
       R"({"external_roles": []})",
       std::nullopt,
       {},
       "the file holds one ROLE (it has a \"external_roles\" field) but no name"},
      {"empty object", Kind::kPool, R"({})", std::nullopt, {}, "empty"},
      // The body `config show` gives for {"l4": {}}, written again under its name.
      {"empty object named on the command line", Kind::kPodTemplate, R"({})", "l4", {"l4"}, ""},
      {"array for pool", Kind::kPool, R"([])", std::nullopt, {}, "must hold a JSON object"},
      {"inner name mismatch",
       Kind::kPool,
       R"({"p": {"name": "q", "backend": "a"}})",
       std::nullopt,
       {},
       "different \"name\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = SplitConfigFile(c.kind, Json::parse(c.doc), c.cli_name);
    if (c.want_names.empty()) {
      ExpectError(got.status(), {c.error});
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    std::vector<std::string> names;
    for (const NamedBody& nb : *got) {
      names.push_back(nb.name);
      if (nb.body.is_object()) {
        EXPECT_FALSE(nb.body.contains("name"));
      }
    }
    EXPECT_EQ(names, c.want_names);
  }
}

}  // namespace kinds_test
}  // namespace gpupool::config
