// Type-mutation sweep: every value of valid configs is replaced by each JSON type in turn; the
// decoders, merge, rendering and membership must answer with a Status, never throw or crash.

#include <gtest/gtest.h>

#include <functional>

#include "config/config_set.h"
#include "config/membership.h"
#include "config/merge.h"
#include "config/test_util.h"
#include "config/variables.h"

namespace gpupool::config {
namespace robustness_test {

using testing::J;

// Calls `visit` with a copy of `doc` in which one value (object member or array element) was
// replaced, for every value and every replacement.
void ForEachMutation(const Json& doc, const std::function<void(const Json&)>& visit) {
  const std::vector<Json> replacements = {nullptr,    1,    -1.5,          "x",
                                          "{{NOPE}}", true, Json::array(), Json::object()};
  std::vector<Json::json_pointer> pointers;
  std::function<void(const Json&, const Json::json_pointer&)> walk =
      [&](const Json& node, const Json::json_pointer& ptr) {
        if (node.is_object()) {
          for (auto it = node.begin(); it != node.end(); ++it) {
            pointers.push_back(ptr / it.key());
            walk(it.value(), ptr / it.key());
          }
        } else if (node.is_array()) {
          for (size_t i = 0; i < node.size(); ++i) {
            pointers.push_back(ptr / i);
            walk(node[i], ptr / i);
          }
        }
      };
  walk(doc, Json::json_pointer());
  for (const Json::json_pointer& p : pointers) {
    for (const Json& r : replacements) {
      Json copy = doc;
      copy[p] = r;
      visit(copy);
    }
  }
  for (const Json& r : replacements) visit(r);  // the whole document
}

// Over 80 lines only by its fixtures: one document of every config kind, each field set.
TEST(RobustnessTest, DecodersNeverThrow) {
  ConfigSet builtins = BuiltinConfigs();
  Json pool = J(R"({"name": "p", "description": "d", "backend": "b", "default_platform": "a",
      "enable_maintenance": false, "default_exec_timeout": "1h", "max_exec_timeout": "2h",
      "default_exit_actions": {"FAIL": "1,3-5"}, "action_permissions": {"execute": "POOL"},
      "resources": {"gpu": {"guarantee": 1, "maximum": 2, "weight": 1}},
      "topology_keys": [{"key": "zone", "label": "topology.kubernetes.io/zone"}],
      "common_default_variables": {"USER_CPU": 1}, "common_resource_validations": ["default_cpu"],
      "common_pod_template": ["default_user"], "common_group_templates": [],
      "platforms": {"a": {"description": "x", "host_network_allowed": false,
                          "privileged_allowed": false, "default_variables": {"USER_GPU": 1},
                          "resource_validations": [], "override_pod_template": ["default_ctrl"],
                          "allowed_mounts": ["/data"]}}})");
  Json role = J(R"({"name": "osmo-x", "description": "d",
      "actions": [{"base": "http", "path": "/api/*", "method": "get"}, "http:/x:Post"],
      "policies": [{"effect": "Deny", "actions": ["workflow:*", {"base": "http", "path": "*", "method": "*"}],
                    "resources": ["pool/x*"]}],
      "immutable": false, "sync_mode": "import", "external_roles": ["g"]})");
  Json backend = J(R"({"description": "d", "tests": ["t"],
      "scheduler_settings": {"scheduler_type": "kai", "scheduler_name": "k", "scheduler_timeout": 3},
      "node_conditions": {"rules": {"Ready": "True"}, "prefix": "p/"}, "online": true})");
  Json rules = J(R"([{"operator": "LE", "left_operand": "{{USER_CPU}}",
      "right_operand": "{{K8_CPU}}", "assert_message": "m {{USER_CPU}}"}])");
  Json tmpl = J(R"({"metadata": {"labels": {"a": "b"}}, "spec": {
      "nodeSelector": {"k": "v"},
      "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule",
                       "tolerationSeconds": 5}],
      "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}]}}},
      "containers": [{"name": "{{USER_CONTAINER_NAME}}", "args": ["{{USER_CPU}}", "ARRAY:[a,b]"]}]}})");
  VariableMap vars = {{"USER_CPU", "1"}, {"USER_CONTAINER_NAME", "c"}};
  model::Node node;
  node.name = "n";
  node.labels = {{"k", "v"}, {"a", "b"}};
  node.taints = {model::Taint{"k", "v", model::TaintEffect::kNoSchedule}};
  int decoded = 0;
  auto count = [&](const Status& s) { decoded += s.ok() ? 1 : 0; };
  ForEachMutation(pool, [&](const Json& doc) {
    EXPECT_NO_THROW({
      count(PoolFromJson("p", doc).status());
      auto split = SplitConfigFile(Kind::kPool, doc, std::nullopt);
      count(split.status());
      ConfigSet set = builtins;
      if (PutConfig(set, Kind::kPool, "p", doc).ok()) {
        (void)ValidateReferenceList(set);
        (void)PoolToJson(set.pools.at("p"), true);
        (void)PoolVerboseJson(set.pools.at("p"), set);
        (void)ComputeMembership(set, {node});
        for (const Platform& p : set.pools.at("p").platforms) {
          (void)ResolveVariables(set.pools.at("p"), &p, {}, TaskContext{});
        }
      }
    });
  });
  ForEachMutation(role, [&](const Json& doc) {
    EXPECT_NO_THROW({
      Result<Role> r = RoleFromJson("osmo-x", doc);
      count(r.status());
      if (r.ok()) (void)RoleToJson(*r, true);
    });
  });
  ForEachMutation(backend, [&](const Json& doc) {
    EXPECT_NO_THROW({
      Result<Backend> b = BackendFromJson("b", doc);
      count(b.status());
      if (b.ok()) (void)BackendToJson(*b, true);
    });
  });
  ForEachMutation(rules, [&](const Json& doc) {
    EXPECT_NO_THROW(count(ValidationSetFromJson("v", doc).status()));
  });
  ForEachMutation(tmpl, [&](const Json& doc) {
    EXPECT_NO_THROW({
      count(PodTemplateFromJson("t", doc).status());
      Json merged = Merged(tmpl, doc);
      MergeInto(merged, doc);
      (void)Render(doc, vars, "t");
      Result<PlatformSelector> sel = SelectorFromTemplate(doc);
      if (sel.ok()) (void)NodeMatchesSelector(*sel, node);
    });
  });
  EXPECT_GT(decoded, 100);  // the sweep did decode many variants successfully
}

}  // namespace robustness_test
}  // namespace gpupool::config
