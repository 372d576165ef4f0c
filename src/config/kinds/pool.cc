#include <algorithm>
#include <cctype>
#include <set>

#include "codec/field_path.h"
#include "common/strings.h"
#include "config/json_fields.h"
#include "config/kinds.h"
#include "config/kinds/shared.h"

namespace gpupool::config {

using internal::CheckBodyFields;
using internal::CheckBodyName;
using internal::CheckObject;
using internal::CheckTimeoutPair;
using internal::ReadBool;
using internal::ReadInt;
using internal::ReadOptString;
using internal::ReadString;
using internal::ReadStringList;
using internal::ReadTimeout;
using internal::ReadVariables;
using internal::StringList;
using internal::TypeError;
using internal::WithName;
using internal::WriteField;

// ---- POOL ---------------------------------------------------------------------------------

const Platform* Pool::FindPlatform(std::string_view platform) const {
  static const Platform kImplicit;  // name "", nothing of its own
  if (platforms.empty()) return platform.empty() ? &kImplicit : nullptr;
  for (const Platform& p : platforms) {
    if (p.name == platform) return &p;
  }
  return nullptr;
}

std::vector<std::string> Pool::RouteNames() const {
  return platforms.empty() ? std::vector<std::string>{""} : PlatformNames();
}

std::vector<std::string> Pool::PlatformNames() const {
  std::vector<std::string> out;
  for (const Platform& p : platforms) out.push_back(p.name);
  return out;
}

namespace {

// The body's fields besides "name" (internal::PoolFields).
constexpr std::string_view kPoolFields[] = {"description",
                                            "backend",
                                            "default_platform",
                                            "enable_maintenance",
                                            "download_type",
                                            "default_exec_timeout",
                                            "default_queue_timeout",
                                            "max_exec_timeout",
                                            "max_queue_timeout",
                                            "default_exit_actions",
                                            "action_permissions",
                                            "resources",
                                            "topology_keys",
                                            "common_default_variables",
                                            "common_resource_validations",
                                            "common_pod_template",
                                            "common_group_templates",
                                            "default_node_pools",
                                            "platforms"};

// `default_node_pools`: names in preference order, none empty or twice; seed 003's `Default` is
// kept as `default`. Whether each is a NODE_POOL is checked on write (ValidateDefaultNodePools).
Status ReadNodePoolList(const Json& obj, std::string_view path, std::vector<std::string>* out) {
  RETURN_IF_ERROR(ReadStringList(obj, "default_node_pools", path, out));
  const std::string field = codec::FieldPath(path, "default_node_pools");
  for (size_t i = 0; i < out->size(); ++i) {
    std::string& name = (*out)[i];
    if (name == "Default") name = "default";
    if (name.empty())
      return InvalidArgumentError(codec::IndexPath(field, i) + ": empty node pool name");
    for (size_t j = 0; j < i; ++j) {
      if ((*out)[j] == name) {
        return InvalidArgumentError(codec::IndexPath(field, i) + ": node pool \"" + name +
                                    "\" named twice (also at " + codec::IndexPath(field, j) + ")");
      }
    }
  }
  return OkStatus();
}

Result<Platform> PlatformFromJson(std::string_view name, const Json& body, std::string_view path) {
  RETURN_IF_ERROR(CheckObject(
      body, path,
      {"description", "host_network_allowed", "privileged_allowed", "default_variables",
       "resource_validations", "override_pod_template", "allowed_mounts", "default_node_pools"}));
  Platform p;
  p.name = std::string(name);
  p.raw = body;
  RETURN_IF_ERROR(ReadString(body, "description", path, &p.description));
  RETURN_IF_ERROR(ReadBool(body, "host_network_allowed", path, &p.host_network_allowed));
  RETURN_IF_ERROR(ReadBool(body, "privileged_allowed", path, &p.privileged_allowed));
  RETURN_IF_ERROR(ReadVariables(body, "default_variables", path, &p.default_variables));
  RETURN_IF_ERROR(ReadStringList(body, "resource_validations", path, &p.resource_validations));
  RETURN_IF_ERROR(ReadStringList(body, "override_pod_template", path, &p.override_pod_template));
  RETURN_IF_ERROR(ReadStringList(body, "allowed_mounts", path, &p.allowed_mounts));
  RETURN_IF_ERROR(ReadNodePoolList(body, path, &p.default_node_pools));
  for (size_t i = 0; i < p.allowed_mounts.size(); ++i) {
    if (p.allowed_mounts[i].empty()) {
      return InvalidArgumentError(codec::IndexPath(codec::FieldPath(path, "allowed_mounts"), i) +
                                  ": a mount path must not be empty");
    }
  }
  return p;
}

Json PlatformToJson(const Platform& p) {
  Json out = p.raw.is_object() ? p.raw : Json::object();
  WriteField(out, "description", p.description, p.description.empty());
  WriteField(out, "host_network_allowed", p.host_network_allowed, !p.host_network_allowed);
  WriteField(out, "privileged_allowed", p.privileged_allowed, !p.privileged_allowed);
  WriteField(out, "default_variables", p.default_variables,
             p.default_variables.is_null() || p.default_variables.empty());
  WriteField(out, "resource_validations", StringList(p.resource_validations),
             p.resource_validations.empty());
  WriteField(out, "override_pod_template", StringList(p.override_pod_template),
             p.override_pod_template.empty());
  WriteField(out, "allowed_mounts", StringList(p.allowed_mounts), p.allowed_mounts.empty());
  WriteField(out, "default_node_pools", StringList(p.default_node_pools),
             p.default_node_pools.empty());
  return out;
}

Status ReadExitActions(const Json& obj, std::vector<ExitAction>* out) {
  auto it = obj.find("default_exit_actions");
  if (it == obj.end()) return OkStatus();
  const std::string path = "default_exit_actions";
  if (!it->is_object()) return TypeError(path, "an object of ACTION -> exit codes", *it);
  static const std::vector<std::string> kActions = {"COMPLETE", "FAIL", "RESCHEDULE"};
  for (const auto& [key, value] : it->items()) {
    std::string action;
    for (char c : key) action += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (std::find(kActions.begin(), kActions.end(), action) == kActions.end()) {
      return InvalidArgumentError(codec::FieldPath(path, key) + ": unknown exit action \"" + key +
                                  "\"; expected COMPLETE, FAIL or RESCHEDULE" +
                                  DidYouMean(action, kActions));
    }
    std::string codes;
    if (value.is_string()) {
      codes = value.get<std::string>();
    } else if (value.is_number_integer() || value.is_number_unsigned()) {
      codes = internal::Dump(value);
    } else {
      return TypeError(codec::FieldPath(path, key), "a string of exit codes such as \"1,3-5\"",
                       value);
    }
    Result<std::vector<ExitCodeRange>> ranges = ParseExitCodes(codes);
    if (!ranges.ok()) return ranges.status().WithContext(codec::FieldPath(path, key));
    out->push_back(ExitAction{action, codes, *ranges});
  }
  return OkStatus();
}

Json ExitActionsToJson(const std::vector<ExitAction>& actions) {
  Json out = Json::object();
  for (const ExitAction& a : actions) out[a.action] = a.codes;
  return out;
}

Status ReadActionPermissions(const Json& obj, Json* out) {
  auto it = obj.find("action_permissions");
  if (it == obj.end() || it->is_null()) return OkStatus();
  const std::string path = "action_permissions";
  RETURN_IF_ERROR(CheckObject(*it, path, {"execute", "portforward", "cancel", "rsync"}));
  for (const auto& [key, value] : it->items()) {
    if (!value.is_string())
      return TypeError(codec::FieldPath(path, key), "PUBLIC, POOL or PRIVATE", value);
    std::string v = value.get<std::string>();
    if (v != "PUBLIC" && v != "POOL" && v != "PRIVATE") {
      return InvalidArgumentError(codec::FieldPath(path, key) +
                                  ": expected PUBLIC, POOL or PRIVATE, got \"" + v + "\"");
    }
  }
  *out = *it;
  return OkStatus();
}

Status ReadResources(const Json& obj, std::optional<GpuResource>* out) {
  auto it = obj.find("resources");
  if (it == obj.end() || it->is_null()) return OkStatus();
  RETURN_IF_ERROR(CheckObject(*it, "resources", {"gpu"}));
  auto gpu = it->find("gpu");
  if (gpu == it->end() || gpu->is_null()) return OkStatus();
  const std::string path = "resources.gpu";
  RETURN_IF_ERROR(CheckObject(*gpu, path, {"guarantee", "maximum", "weight"}));
  GpuResource r;
  RETURN_IF_ERROR(ReadInt(*gpu, "guarantee", path, &r.guarantee));
  RETURN_IF_ERROR(ReadInt(*gpu, "maximum", path, &r.maximum));
  RETURN_IF_ERROR(ReadInt(*gpu, "weight", path, &r.weight));
  if (r.guarantee < -1)
    return InvalidArgumentError(path + ".guarantee: must be >= 0, or -1 (unset)");
  if (r.maximum < -1) return InvalidArgumentError(path + ".maximum: must be >= 0, or -1 (unset)");
  if (r.weight < 0) return InvalidArgumentError(path + ".weight: must be >= 0");
  if (r.guarantee != -1 && r.maximum != -1 && r.guarantee > r.maximum) {
    return InvalidArgumentError(path + ": guarantee " + std::to_string(r.guarantee) +
                                " is above maximum " + std::to_string(r.maximum));
  }
  *out = r;
  return OkStatus();
}

Json ResourcesToJson(const std::optional<GpuResource>& gpu) {
  Json out = Json::object();
  if (!gpu.has_value()) {
    out["gpu"] = nullptr;
    return out;
  }
  out["gpu"] =
      Json{{"guarantee", gpu->guarantee}, {"maximum", gpu->maximum}, {"weight", gpu->weight}};
  return out;
}

Status ReadTopologyKeys(const Json& obj, std::vector<TopologyKey>* out) {
  auto it = obj.find("topology_keys");
  if (it == obj.end()) return OkStatus();
  const std::string path = "topology_keys";
  if (!it->is_array()) return TypeError(path, "a list of {key, label}", *it);
  std::set<std::string> keys, labels;
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& e = (*it)[i];
    std::string p = codec::IndexPath(path, i);
    RETURN_IF_ERROR(CheckObject(e, p, {"key", "label"}));
    TopologyKey k;
    RETURN_IF_ERROR(ReadString(e, "key", p, &k.key));
    RETURN_IF_ERROR(ReadString(e, "label", p, &k.label));
    if (k.key.empty()) return InvalidArgumentError(p + ".key: required");
    if (k.label.empty()) return InvalidArgumentError(p + ".label: required");
    if (!keys.insert(k.key).second) {
      return InvalidArgumentError(p + ".key: duplicate key \"" + k.key + "\"");
    }
    if (!labels.insert(k.label).second) {
      return InvalidArgumentError(p + ".label: duplicate label \"" + k.label + "\"");
    }
    out->push_back(k);
  }
  return OkStatus();
}

Status ReadPlatforms(const Json& obj, std::vector<Platform>* out) {
  auto it = obj.find("platforms");
  if (it == obj.end()) return OkStatus();
  if (!it->is_object())
    return TypeError("platforms", "an object of platform name -> platform", *it);
  for (const auto& [name, body] : it->items()) {
    std::string path = codec::FieldPath("platforms", name);
    Status s = ValidateName("platform", name);
    if (!s.ok()) return s.WithContext(path);
    ASSIGN_OR_RETURN(Platform p, PlatformFromJson(name, body, path));
    out->push_back(std::move(p));
  }
  return OkStatus();
}

Status DecodePool(const Json& body, Pool& pool) {
  RETURN_IF_ERROR(CheckBodyFields(body, kPoolFields));
  RETURN_IF_ERROR(CheckBodyName(body, pool.name, "pool"));
  RETURN_IF_ERROR(ReadString(body, "description", "", &pool.description));
  if (!body.contains("backend")) {
    return InvalidArgumentError("backend: required (the name of the compute backend)");
  }
  RETURN_IF_ERROR(ReadString(body, "backend", "", &pool.backend));
  if (pool.backend.empty()) return InvalidArgumentError("backend: must not be empty");
  RETURN_IF_ERROR(ReadOptString(body, "default_platform", "", &pool.default_platform));
  RETURN_IF_ERROR(ReadBool(body, "enable_maintenance", "", &pool.enable_maintenance));
  RETURN_IF_ERROR(ReadOptString(body, "download_type", "", &pool.download_type));
  if (pool.download_type.has_value() && *pool.download_type != "download") {
    return InvalidArgumentError("download_type: expected \"download\" or null, got \"" +
                                *pool.download_type + "\"");
  }
  RETURN_IF_ERROR(ReadTimeout(body, "default_exec_timeout", "", &pool.default_exec_timeout));
  RETURN_IF_ERROR(ReadTimeout(body, "default_queue_timeout", "", &pool.default_queue_timeout));
  RETURN_IF_ERROR(ReadTimeout(body, "max_exec_timeout", "", &pool.max_exec_timeout));
  RETURN_IF_ERROR(ReadTimeout(body, "max_queue_timeout", "", &pool.max_queue_timeout));
  RETURN_IF_ERROR(CheckTimeoutPair(pool.default_exec_timeout, "default_exec_timeout",
                                   pool.max_exec_timeout, "max_exec_timeout"));
  RETURN_IF_ERROR(CheckTimeoutPair(pool.default_queue_timeout, "default_queue_timeout",
                                   pool.max_queue_timeout, "max_queue_timeout"));
  RETURN_IF_ERROR(ReadExitActions(body, &pool.default_exit_actions));
  RETURN_IF_ERROR(ReadActionPermissions(body, &pool.action_permissions));
  RETURN_IF_ERROR(ReadResources(body, &pool.gpu));
  RETURN_IF_ERROR(ReadTopologyKeys(body, &pool.topology_keys));
  RETURN_IF_ERROR(
      ReadVariables(body, "common_default_variables", "", &pool.common_default_variables));
  RETURN_IF_ERROR(
      ReadStringList(body, "common_resource_validations", "", &pool.common_resource_validations));
  RETURN_IF_ERROR(ReadStringList(body, "common_pod_template", "", &pool.common_pod_template));
  RETURN_IF_ERROR(ReadStringList(body, "common_group_templates", "", &pool.common_group_templates));
  RETURN_IF_ERROR(ReadNodePoolList(body, "", &pool.default_node_pools));
  RETURN_IF_ERROR(ReadPlatforms(body, &pool.platforms));
  if (pool.default_platform.has_value() && !pool.default_platform->empty() &&
      pool.FindPlatform(*pool.default_platform) == nullptr) {
    std::vector<std::string> names = pool.PlatformNames();
    return InvalidArgumentError(
        "default_platform: Default platform " + *pool.default_platform + " not in platforms (" +
        (names.empty() ? std::string("the pool has none") : Join(names, ", ")) + ")" +
        DidYouMean(*pool.default_platform, names));
  }
  return OkStatus();
}

}  // namespace

std::span<const std::string_view> internal::PoolFields() { return kPoolFields; }

Result<Pool> PoolFromJson(std::string_view name, const Json& body) {
  Pool pool;
  pool.name = std::string(name);
  std::string context = "pool \"" + std::string(name) + "\"";
  Status s = ValidateName("pool", name);
  if (!s.ok()) return s;
  s = DecodePool(body, pool);
  if (!s.ok()) return s.WithContext(context);
  pool.raw = body;
  return pool;
}

Json PoolToJson(const Pool& pool, bool with_name) {
  Json out = WithName(pool.raw.is_object() ? pool.raw : Json::object(), pool.name, with_name);
  WriteField(out, "description", pool.description, pool.description.empty());
  WriteField(out, "backend", pool.backend, false);
  WriteField(out, "default_platform",
             pool.default_platform.has_value() ? Json(*pool.default_platform) : Json(nullptr),
             !pool.default_platform.has_value());
  WriteField(out, "enable_maintenance", pool.enable_maintenance, !pool.enable_maintenance);
  WriteField(out, "download_type",
             pool.download_type.has_value() ? Json(*pool.download_type) : Json(nullptr),
             !pool.download_type.has_value());
  WriteField(out, "default_exec_timeout", pool.default_exec_timeout.text,
             pool.default_exec_timeout.empty());
  WriteField(out, "default_queue_timeout", pool.default_queue_timeout.text,
             pool.default_queue_timeout.empty());
  WriteField(out, "max_exec_timeout", pool.max_exec_timeout.text, pool.max_exec_timeout.empty());
  WriteField(out, "max_queue_timeout", pool.max_queue_timeout.text, pool.max_queue_timeout.empty());
  if (!(pool.raw.is_object() && pool.raw.contains("default_exit_actions") &&
        pool.raw["default_exit_actions"].is_object())) {
    WriteField(out, "default_exit_actions", ExitActionsToJson(pool.default_exit_actions),
               pool.default_exit_actions.empty());
  } else {
    // Keep the keys' spelling and value types as written when nothing changed.
    std::vector<ExitAction> reread;
    Status s = ReadExitActions(pool.raw, &reread);
    if (!s.ok() || reread != pool.default_exit_actions) {
      WriteField(out, "default_exit_actions", ExitActionsToJson(pool.default_exit_actions), false);
    }
  }
  WriteField(out, "action_permissions", pool.action_permissions, pool.action_permissions.is_null());
  if (!(pool.raw.is_object() && pool.raw.contains("resources") && !pool.gpu.has_value() &&
        (pool.raw["resources"].is_null() || !pool.raw["resources"].contains("gpu") ||
         pool.raw["resources"]["gpu"].is_null()))) {
    WriteField(out, "resources", ResourcesToJson(pool.gpu), !pool.gpu.has_value());
  }
  Json topology = Json::array();
  for (const TopologyKey& k : pool.topology_keys) {
    topology.push_back(Json{{"key", k.key}, {"label", k.label}});
  }
  WriteField(out, "topology_keys", topology, pool.topology_keys.empty());
  WriteField(out, "common_default_variables", pool.common_default_variables,
             pool.common_default_variables.is_null() || pool.common_default_variables.empty());
  WriteField(out, "common_resource_validations", StringList(pool.common_resource_validations),
             pool.common_resource_validations.empty());
  WriteField(out, "common_pod_template", StringList(pool.common_pod_template),
             pool.common_pod_template.empty());
  WriteField(out, "common_group_templates", StringList(pool.common_group_templates),
             pool.common_group_templates.empty());
  WriteField(out, "default_node_pools", StringList(pool.default_node_pools),
             pool.default_node_pools.empty());
  Json platforms = Json::object();
  for (const Platform& p : pool.platforms) platforms[p.name] = PlatformToJson(p);
  WriteField(out, "platforms", platforms, pool.platforms.empty());
  return out;
}

}  // namespace gpupool::config
