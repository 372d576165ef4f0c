#include "config/config_set.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include "codec/field_path.h"
#include "common/strings.h"
#include "config/json_fields.h"

namespace gpupool::config {

namespace {

template <typename M>
const typename M::mapped_type* FindIn(const M& map, std::string_view name) {
  auto it = map.find(std::string(name));
  return it == map.end() ? nullptr : &it->second;
}

template <typename M>
std::vector<std::string> KeysOf(const M& map) {
  std::vector<std::string> out;
  for (const auto& [k, v] : map) out.push_back(k);
  return out;
}

template <typename M>
Status EraseFrom(M& map, Kind kind, std::string_view name) {
  if (map.erase(std::string(name)) == 0) {
    return NotFoundError(std::string(KindName(kind)) + " \"" + std::string(name) +
                         "\" does not exist" + DidYouMean(name, KeysOf(map)));
  }
  return OkStatus();
}

template <typename M, typename F>
Result<Json> BodyFrom(const M& map, Kind kind, std::string_view name, F to_json) {
  auto it = map.find(std::string(name));
  if (it == map.end()) {
    return NotFoundError(std::string(KindName(kind)) + " \"" + std::string(name) +
                         "\" does not exist" + DidYouMean(name, KeysOf(map)));
  }
  return to_json(it->second);
}

Status Unsupported(Kind kind) {
  return InvalidArgumentError("config kind " + std::string(KindName(kind)) +
                              " is not part of the OSMO config set");
}

std::string What(Kind kind) {
  switch (kind) {
    case Kind::kPodTemplate:
      return "pod template";
    case Kind::kResourceValidation:
      return "resource validation";
    case Kind::kBackend:
      return "backend";
    case Kind::kRole:
      return "role";
    case Kind::kPool:
      return "pool";
    default:
      return std::string(KindName(kind));
  }
}

void CheckList(const ConfigSet& set, const Pool& pool, const std::vector<std::string>& names,
               const std::string& field, Kind kind, std::vector<Status>& out) {
  std::vector<std::string> candidates = ConfigNames(set, kind);
  for (size_t i = 0; i < names.size(); ++i) {
    bool exists = kind == Kind::kPodTemplate ? set.FindPodTemplate(names[i]) != nullptr
                                             : set.FindValidation(names[i]) != nullptr;
    if (exists) continue;
    out.push_back(InvalidArgumentError("pool \"" + pool.name + "\": " + codec::IndexPath(field, i) +
                                       ": " + What(kind) + " \"" + names[i] + "\" does not exist" +
                                       DidYouMean(names[i], candidates)));
  }
}

// A pool's backend is `default` (the cluster the server runs, built in whether or not a BACKEND
// config describes it) or a BACKEND config: OSMO registers a backend before pools may target it.
void CheckBackend(const ConfigSet& set, const Pool& pool, std::vector<Status>& out) {
  if (pool.backend == kDefaultBackend || set.FindBackend(pool.backend) != nullptr) return;
  std::vector<std::string> names = ConfigNames(set, Kind::kBackend);
  if (std::find(names.begin(), names.end(), kDefaultBackend) == names.end()) {
    names.insert(names.begin(), std::string(kDefaultBackend));
  }
  out.push_back(InvalidArgumentError(
      "pool \"" + pool.name + "\": backend: backend \"" + pool.backend + "\" does not exist" +
      DidYouMean(pool.backend, names) + "; backends: " + Join(names, ", ") +
      " (register it first: gpupool config update BACKEND " + pool.backend + " --file FILE)"));
}

bool Contains(const std::vector<std::string>& list, std::string_view name) {
  for (const std::string& s : list) {
    if (s == name) return true;
  }
  return false;
}

}  // namespace

const Pool* ConfigSet::FindPool(std::string_view name) const { return FindIn(pools, name); }
const PodTemplate* ConfigSet::FindPodTemplate(std::string_view name) const {
  return FindIn(pod_templates, name);
}
const ValidationSet* ConfigSet::FindValidation(std::string_view name) const {
  return FindIn(validations, name);
}
const Role* ConfigSet::FindRole(std::string_view name) const { return FindIn(roles, name); }
const Backend* ConfigSet::FindBackend(std::string_view name) const {
  return FindIn(backends, name);
}

Status PutConfig(ConfigSet& set, Kind kind, std::string_view name, const Json& body) {
  std::string key(name);
  switch (kind) {
    case Kind::kPool: {
      ASSIGN_OR_RETURN(Pool v, PoolFromJson(name, body));
      set.pools[key] = std::move(v);
      return OkStatus();
    }
    case Kind::kPodTemplate: {
      ASSIGN_OR_RETURN(PodTemplate v, PodTemplateFromJson(name, body));
      set.pod_templates[key] = std::move(v);
      return OkStatus();
    }
    case Kind::kResourceValidation: {
      ASSIGN_OR_RETURN(ValidationSet v, ValidationSetFromJson(name, body));
      set.validations[key] = std::move(v);
      return OkStatus();
    }
    case Kind::kRole: {
      ASSIGN_OR_RETURN(Role v, RoleFromJson(name, body));
      set.roles[key] = std::move(v);
      return OkStatus();
    }
    case Kind::kBackend: {
      ASSIGN_OR_RETURN(Backend v, BackendFromJson(name, body));
      set.backends[key] = std::move(v);
      return OkStatus();
    }
    default:
      return Unsupported(kind);
  }
}

Status RemoveConfig(ConfigSet& set, Kind kind, std::string_view name) {
  switch (kind) {
    case Kind::kPool:
      return EraseFrom(set.pools, kind, name);
    case Kind::kPodTemplate:
      return EraseFrom(set.pod_templates, kind, name);
    case Kind::kResourceValidation:
      return EraseFrom(set.validations, kind, name);
    case Kind::kRole:
      return EraseFrom(set.roles, kind, name);
    case Kind::kBackend:
      return EraseFrom(set.backends, kind, name);
    default:
      return Unsupported(kind);
  }
}

Result<Json> GetConfigBody(const ConfigSet& set, Kind kind, std::string_view name) {
  switch (kind) {
    case Kind::kPool:
      return BodyFrom(set.pools, kind, name, [](const Pool& p) { return PoolToJson(p); });
    case Kind::kPodTemplate:
      return BodyFrom(set.pod_templates, kind, name,
                      [](const PodTemplate& t) { return PodTemplateToJson(t); });
    case Kind::kResourceValidation:
      return BodyFrom(set.validations, kind, name,
                      [](const ValidationSet& v) { return ValidationSetToJson(v); });
    case Kind::kRole:
      return BodyFrom(set.roles, kind, name, [](const Role& r) { return RoleToJson(r); });
    case Kind::kBackend:
      return BodyFrom(set.backends, kind, name, [](const Backend& b) { return BackendToJson(b); });
    default:
      return Unsupported(kind);
  }
}

std::vector<std::string> ConfigNames(const ConfigSet& set, Kind kind) {
  switch (kind) {
    case Kind::kPool:
      return KeysOf(set.pools);
    case Kind::kPodTemplate:
      return KeysOf(set.pod_templates);
    case Kind::kResourceValidation:
      return KeysOf(set.validations);
    case Kind::kRole:
      return KeysOf(set.roles);
    case Kind::kBackend:
      return KeysOf(set.backends);
    default:
      return {};
  }
}

std::vector<Status> ValidateReferenceList(const ConfigSet& set) {
  std::vector<Status> out;
  for (const auto& [name, pool] : set.pools) {
    CheckBackend(set, pool, out);
    if (pool.default_platform.has_value() && !pool.default_platform->empty() &&
        pool.FindPlatform(*pool.default_platform) == nullptr) {
      out.push_back(InvalidArgumentError(
          "pool \"" + name + "\": default_platform: Default platform " + *pool.default_platform +
          " not in platforms (" + Join(pool.PlatformNames(), ", ") + ")"));
    }
    CheckList(set, pool, pool.common_pod_template, "common_pod_template", Kind::kPodTemplate, out);
    CheckList(set, pool, pool.common_resource_validations, "common_resource_validations",
              Kind::kResourceValidation, out);
    for (const Platform& p : pool.platforms) {
      std::string base = "platforms." + p.name;
      CheckList(set, pool, p.override_pod_template, base + ".override_pod_template",
                Kind::kPodTemplate, out);
      CheckList(set, pool, p.resource_validations, base + ".resource_validations",
                Kind::kResourceValidation, out);
    }
  }
  return out;
}

std::vector<Status> ValidateDefaultNodePools(const ConfigSet& set,
                                             std::vector<std::string> node_pools) {
  node_pools.emplace_back("default");
  std::sort(node_pools.begin(), node_pools.end());
  std::vector<Status> out;
  auto check = [&](const std::string& pool, const std::vector<std::string>& names,
                   const std::string& field) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (std::binary_search(node_pools.begin(), node_pools.end(), names[i])) continue;
      out.push_back(InvalidArgumentError("pool \"" + pool + "\": " + field + "[" +
                                         std::to_string(i) + "]: node pool \"" + names[i] +
                                         "\" does not exist" + DidYouMean(names[i], node_pools) +
                                         "; node pools: " + Join(node_pools, ", ")));
    }
  };
  for (const auto& [name, pool] : set.pools) {
    check(name, pool.default_node_pools, "default_node_pools");
    for (const Platform& p : pool.platforms) {
      check(name, p.default_node_pools, "platforms." + p.name + ".default_node_pools");
    }
  }
  return out;
}

Status ValidateReferences(const ConfigSet& set) {
  std::vector<Status> errors = ValidateReferenceList(set);
  if (errors.empty()) return OkStatus();
  std::vector<std::string> lines;
  for (const Status& s : errors) lines.push_back(s.message());
  return InvalidArgumentError(Join(lines, "\n"));
}

std::vector<std::string> UsersOf(const ConfigSet& set, Kind kind, std::string_view name) {
  std::vector<std::string> out;
  for (const auto& [pool_name, pool] : set.pools) {
    bool uses = false;
    switch (kind) {
      case Kind::kPodTemplate:
        uses = Contains(pool.common_pod_template, name);
        for (const Platform& p : pool.platforms)
          uses = uses || Contains(p.override_pod_template, name);
        break;
      case Kind::kResourceValidation:
        uses = Contains(pool.common_resource_validations, name);
        for (const Platform& p : pool.platforms)
          uses = uses || Contains(p.resource_validations, name);
        break;
      case Kind::kBackend:
        uses = pool.backend == name;
        break;
      case Kind::kNodePool:
        uses = Contains(pool.default_node_pools, name);
        for (const Platform& p : pool.platforms)
          uses = uses || Contains(p.default_node_pools, name);
        break;
      default:
        break;
    }
    if (uses) out.push_back(pool_name);
  }
  return out;
}

Status CheckDeletable(const ConfigSet& set, Kind kind, std::string_view name) {
  if (kind == Kind::kRole) {
    const Role* role = set.FindRole(name);
    if (role != nullptr && role->immutable) {
      return FailedPreconditionError("Role \"" + std::string(name) + "\" is immutable");
    }
  }
  std::vector<std::string> users = UsersOf(set, kind, name);
  if (users.empty()) return OkStatus();
  std::string what = What(kind);
  what[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(what[0])));
  return FailedPreconditionError(what + " \"" + std::string(name) + "\" is used by pool" +
                                 (users.size() > 1 ? "s" : "") + ": " + Join(users, ", "));
}

Status CheckUpdatable(const ConfigSet& set, Kind kind, std::string_view name,
                      const Json& new_body) {
  if (kind != Kind::kRole) return OkStatus();
  const Role* current = set.FindRole(name);
  if (current == nullptr || !current->immutable) return OkStatus();
  Result<Role> updated = RoleFromJson(name, new_body);
  if (!updated.ok()) return updated.status();
  Role a = *current, b = *updated;
  a.description.clear();
  b.description.clear();
  a.raw = Json::object();
  b.raw = Json::object();
  if (RoleToJson(a) != RoleToJson(b)) {
    return FailedPreconditionError("Role \"" + std::string(name) +
                                   "\" is immutable: only its description may change");
  }
  return OkStatus();
}

// ---- Built-ins ----------------------------------------------------------------------------

namespace {

Json DefaultUserTemplate() {
  return Json::parse(R"({
  "spec": {
    "containers": [
      {
        "name": "{{USER_CONTAINER_NAME}}",
        "resources": {
          "requests": {
            "cpu": "{{USER_CPU}}",
            "memory": "{{USER_MEMORY}}",
            "nvidia.com/gpu": "{{USER_GPU}}",
            "ephemeral-storage": "{{USER_STORAGE}}"
          },
          "limits": {
            "cpu": "{{USER_CPU}}",
            "memory": "{{USER_MEMORY}}",
            "nvidia.com/gpu": "{{USER_GPU}}",
            "ephemeral-storage": "{{USER_STORAGE}}"
          }
        }
      }
    ]
  }
})");
}

// The control sidecar every task carries (OSMO's osmo-ctrl): it requests 1 cpu, 1Gi memory and
// 1Gi storage of its own, so a task costs its resources plus these on the node. The image is a
// placeholder name: the simulated backend never pulls it, a real backend is configured with its
// own.
Json DefaultCtrlTemplate() {
  return Json::parse(R"({
  "spec": {
    "containers": [
      {
        "name": "osmo-ctrl",
        "image": "gpupool-ctrl:0.1",
        "resources": {
          "requests": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"},
          "limits": {
            "cpu": "{{USER_CPU}}",
            "memory": "{{USER_MEMORY}}",
            "ephemeral-storage": "{{USER_STORAGE}}"
          }
        }
      }
    ]
  }
})");
}

Json CapacityRules(const std::string& var, const std::string& k8s, const std::string& what) {
  return Json::array({
      Json{
          {"operator", "GT"},
          {"left_operand", "{{" + var + "}}"},
          {"right_operand", "0"},
          {"assert_message", "Value {{" + var + "}} too low for " + what + ": it must be above 0"}},
      Json{{"operator", "LE"},
           {"left_operand", "{{" + var + "}}"},
           {"right_operand", "{{" + k8s + "}}"},
           {"assert_message",
            "Value {{" + var + "}} for " + what + " exceeds the node capacity {{" + k8s + "}}"}},
  });
}

}  // namespace

ConfigSet BuiltinConfigs(const BuiltinOptions& options) {
  ConfigSet set;
  auto must = [](const Status& s) {
    if (!s.ok()) std::abort();  // the built-ins are constants; a failure is a bug
  };
  must(PutConfig(set, Kind::kPodTemplate, "default_user", DefaultUserTemplate()));
  must(PutConfig(set, Kind::kPodTemplate, "default_ctrl", DefaultCtrlTemplate()));
  must(PutConfig(set, Kind::kResourceValidation, "default_cpu",
                 CapacityRules("USER_CPU", "K8_CPU", "CPU")));
  must(PutConfig(set, Kind::kResourceValidation, "default_memory",
                 CapacityRules("USER_MEMORY", "K8_MEMORY", "memory")));
  must(PutConfig(set, Kind::kResourceValidation, "default_storage",
                 CapacityRules("USER_STORAGE", "K8_STORAGE", "storage")));
  Json default_pool = Json::parse(R"({
  "description": "Default pool",
  "backend": "default",
  "default_platform": "default",
  "common_default_variables": {
    "USER_CPU": 1,
    "USER_GPU": 0,
    "USER_MEMORY": "1Gi",
    "USER_STORAGE": "1Gi"
  },
  "common_resource_validations": ["default_cpu", "default_memory", "default_storage"],
  "common_pod_template": ["default_user", "default_ctrl"],
  "platforms": {
    "default": {"description": "Default platform"}
  }
})");
  if (!options.control_sidecar) default_pool["common_pod_template"] = Json::array({"default_user"});
  must(PutConfig(set, Kind::kPool, "default", default_pool));
  must(PutConfig(set, Kind::kRole, "osmo-admin", Json::parse(R"({
  "description": "Administrator: every action on every resource",
  "policies": [{"effect": "Allow", "actions": ["*:*"], "resources": ["*"]}],
  "immutable": true
})")));
  must(PutConfig(set, Kind::kRole, "osmo-user", Json::parse(R"({
  "description": "Every user: list pools and resources, read workflows, submit to the default pool",
  "policies": [
    {"effect": "Allow",
     "actions": ["app:*", "auth:Token", "credentials:*", "mcp:Access", "pool:List",
                 "profile:Read", "profile:Update", "resources:Read", "user:List",
                 "workflow:List", "workflow:Read"],
     "resources": ["*"]},
    {"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/default"]}
  ]
})")));
  must(PutConfig(set, Kind::kRole, "osmo-default", Json::parse(R"({
  "description": "Implicitly held by everyone: health, version, login, own profile",
  "policies": [
    {"effect": "Allow",
     "actions": ["system:Health", "system:Version", "auth:Login", "auth:Refresh", "profile:*"],
     "resources": ["*"]}
  ],
  "immutable": true
})")));
  return set;
}

}  // namespace gpupool::config
