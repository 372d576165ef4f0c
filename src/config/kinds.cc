#include "config/kinds.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>

#include "common/strings.h"
#include "config/json_fields.h"
#include "config/variables.h"
#include "model/duration.h"
#include "model/k8s.h"

namespace gpupool::config {

using internal::CheckObject;
using internal::Index;
using internal::Path;
using internal::ReadBool;
using internal::ReadInt;
using internal::ReadOptString;
using internal::ReadString;
using internal::ReadStringList;
using internal::TypeError;
using internal::WriteField;

// ---- Kinds --------------------------------------------------------------------------------

namespace {

struct KindInfo {
  Kind kind;
  std::string_view name;
  std::string_view manifest;
};

constexpr KindInfo kKinds[] = {
    {Kind::kPool, "POOL", "Pool"},
    {Kind::kPodTemplate, "POD_TEMPLATE", "PodTemplate"},
    {Kind::kResourceValidation, "RESOURCE_VALIDATION", "ResourceValidation"},
    {Kind::kRole, "ROLE", "Role"},
    {Kind::kBackend, "BACKEND", "Backend"},
    {Kind::kNodePool, "NODE_POOL", "NodePool"},
    {Kind::kQueue, "QUEUE", "Queue"},
    {Kind::kMachinePool, "MACHINE_POOL", "MachinePool"},
    {Kind::kPodDisruptionBudget, "POD_DISRUPTION_BUDGET", "PodDisruptionBudget"},
};

// "PodTemplate" / "pod-template" / "pod_template" -> "podtemplate".
std::string Squash(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '_' || c == '-') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

}  // namespace

std::string_view KindName(Kind kind) {
  for (const KindInfo& info : kKinds) {
    if (info.kind == kind) return info.name;
  }
  return "UNKNOWN";
}

std::string_view KindManifestName(Kind kind) {
  for (const KindInfo& info : kKinds) {
    if (info.kind == kind) return info.manifest;
  }
  return "Unknown";
}

std::vector<Kind> AllKinds() {
  std::vector<Kind> out;
  for (const KindInfo& info : kKinds) out.push_back(info.kind);
  return out;
}

Result<Kind> ParseKind(std::string_view text) {
  std::string squashed = Squash(text);
  std::vector<std::string> names;
  for (const KindInfo& info : kKinds) {
    if (Squash(info.name) == squashed) return info.kind;
    names.emplace_back(info.name);
  }
  return InvalidArgumentError("unknown config kind \"" + std::string(text) + "\"" +
                              DidYouMean(text, names) + "; kinds are " + Join(names, ", "));
}

Status ValidateName(std::string_view what, std::string_view name) {
  // ^[a-zA-Z]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?$ without std::regex (hot in reference checks).
  bool ok = !name.empty() && std::isalpha(static_cast<unsigned char>(name.front())) &&
            std::isalnum(static_cast<unsigned char>(name.back())) &&
            std::all_of(name.begin(), name.end(), IsNameChar);
  if (ok) return OkStatus();
  return InvalidArgumentError(std::string(what) + " name \"" + std::string(name) +
                              "\" is not valid: it must start with a letter, end with a letter or "
                              "digit, and contain only letters, digits, '_', '.' and '-'");
}

// ---- Shared pieces --------------------------------------------------------------------------

namespace {

bool IsVariableName(std::string_view name) {
  if (name.empty()) return false;
  if (!(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

Status ReadVariables(const Json& obj, std::string_view key, std::string_view path, Json* out) {
  auto it = obj.find(key);
  if (it == obj.end()) return OkStatus();
  std::string p = Path(path, key);
  if (!it->is_object()) return TypeError(p, "an object of variables", *it);
  for (const auto& [name, value] : it->items()) {
    if (!IsVariableName(name)) {
      return InvalidArgumentError(Path(p, name) +
                                  ": variable names must match [A-Za-z_][A-Za-z0-9_]*");
    }
    if (value.is_object() || value.is_array()) {
      return TypeError(Path(p, name), "a string, number, boolean or null", value);
    }
  }
  *out = *it;
  return OkStatus();
}

// `"name"` in a body must agree with the name it is stored under.
Status CheckBodyName(const Json& body, std::string_view name, std::string_view what) {
  auto it = body.find("name");
  if (it == body.end()) return OkStatus();
  if (!it->is_string()) return TypeError("name", "a string", *it);
  if (!name.empty() && it->get<std::string>() != name) {
    return InvalidArgumentError(std::string(what) + " body names \"" + it->get<std::string>() +
                                "\" but it is stored as \"" + std::string(name) + "\"");
  }
  return OkStatus();
}

Json WithName(const Json& body, std::string_view name, bool with_name) {
  Json out = Json::object();
  if (with_name) out["name"] = std::string(name);
  for (const auto& [key, value] : body.items()) {
    if (key == "name") continue;
    out[key] = value;
  }
  return out;
}

Json StringList(const std::vector<std::string>& values) {
  Json out = Json::array();
  for (const std::string& v : values) out.push_back(v);
  return out;
}

Status ReadTimeout(const Json& obj, std::string_view key, std::string_view path, Timeout* out) {
  std::string text;
  RETURN_IF_ERROR(ReadString(obj, key, path, &text));
  out->text = text;
  out->seconds.reset();
  if (model::IsEmptyDuration(text)) return OkStatus();
  Result<int64_t> seconds = model::ParseDurationSeconds(text);
  if (!seconds.ok()) {
    return InvalidArgumentError(Path(path, key) + ": " + seconds.status().message() +
                                " (expected a duration such as \"30m\", \"8h\", \"2d\" or "
                                "\"PT2H\")");
  }
  out->seconds = *seconds;
  return OkStatus();
}

Status CheckTimeoutPair(const Timeout& def, std::string_view def_name, const Timeout& max,
                        std::string_view max_name) {
  if (!def.seconds.has_value()) return OkStatus();
  int64_t limit = EffectiveSeconds(max);
  if (*def.seconds <= limit) return OkStatus();
  std::string max_text = max.seconds.has_value() ? max.text : "60d (the default maximum)";
  return InvalidArgumentError(std::string(def_name) + " " + def.text + " is above " +
                              std::string(max_name) + " " + max_text);
}

}  // namespace

int64_t EffectiveSeconds(const Timeout& timeout) {
  return timeout.seconds.value_or(kDefaultTimeoutSeconds);
}

Result<std::vector<ExitCodeRange>> ParseExitCodes(std::string_view codes) {
  std::vector<ExitCodeRange> out;
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError("invalid exit codes \"" + std::string(codes) +
                                "\": " + std::string(why) + " (expected e.g. \"1,3-5\")");
  };
  if (codes.empty()) return bad("empty");
  for (const std::string& part : Split(codes, ',')) {
    std::vector<std::string> ends = Split(part, '-');
    if (ends.size() > 2) return bad("a range has more than one '-'");
    int64_t values[2] = {0, 0};
    for (size_t i = 0; i < ends.size(); ++i) {
      const std::string& e = ends[i];
      if (e.empty() || e.size() > 9 ||
          !std::all_of(e.begin(), e.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return bad("\"" + part + "\" is not a number or range");
      }
      values[i] = std::stoll(e);
    }
    ExitCodeRange range{values[0], ends.size() == 2 ? values[1] : values[0]};
    if (range.first > range.last) return bad("range \"" + part + "\" is reversed");
    out.push_back(range);
  }
  return out;
}

std::optional<std::string> MatchExitAction(const std::vector<ExitAction>& actions,
                                           int64_t exit_code) {
  for (const ExitAction& action : actions) {
    for (const ExitCodeRange& r : action.ranges) {
      if (exit_code >= r.first && exit_code <= r.last) return action.action;
    }
  }
  return std::nullopt;
}

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

// `default_node_pools`: names in preference order, none empty or twice; seed 003's `Default` is
// kept as `default`. Whether each is a NODE_POOL is checked on write (ValidateDefaultNodePools).
Status ReadNodePoolList(const Json& obj, std::string_view path, std::vector<std::string>* out) {
  RETURN_IF_ERROR(ReadStringList(obj, "default_node_pools", path, out));
  const std::string field = Path(path, "default_node_pools");
  for (size_t i = 0; i < out->size(); ++i) {
    std::string& name = (*out)[i];
    if (name == "Default") name = "default";
    if (name.empty()) return InvalidArgumentError(Index(field, i) + ": empty node pool name");
    for (size_t j = 0; j < i; ++j) {
      if ((*out)[j] == name) {
        return InvalidArgumentError(Index(field, i) + ": node pool \"" + name +
                                    "\" named twice (also at " + Index(field, j) + ")");
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
      return InvalidArgumentError(Index(Path(path, "allowed_mounts"), i) +
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
      return InvalidArgumentError(Path(path, key) + ": unknown exit action \"" + key +
                                  "\"; expected COMPLETE, FAIL or RESCHEDULE" +
                                  DidYouMean(action, kActions));
    }
    std::string codes;
    if (value.is_string()) {
      codes = value.get<std::string>();
    } else if (value.is_number_integer() || value.is_number_unsigned()) {
      codes = internal::Dump(value);
    } else {
      return TypeError(Path(path, key), "a string of exit codes such as \"1,3-5\"", value);
    }
    Result<std::vector<ExitCodeRange>> ranges = ParseExitCodes(codes);
    if (!ranges.ok()) return ranges.status().WithContext(Path(path, key));
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
    if (!value.is_string()) return TypeError(Path(path, key), "PUBLIC, POOL or PRIVATE", value);
    std::string v = value.get<std::string>();
    if (v != "PUBLIC" && v != "POOL" && v != "PRIVATE") {
      return InvalidArgumentError(Path(path, key) + ": expected PUBLIC, POOL or PRIVATE, got \"" +
                                  v + "\"");
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
    std::string p = Index(path, i);
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
    std::string path = Path("platforms", name);
    Status s = ValidateName("platform", name);
    if (!s.ok()) return s.WithContext(path);
    ASSIGN_OR_RETURN(Platform p, PlatformFromJson(name, body, path));
    out->push_back(std::move(p));
  }
  return OkStatus();
}

Status DecodePool(const Json& body, Pool& pool) {
  RETURN_IF_ERROR(CheckObject(body, "",
                              {"name",
                               "description",
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
                               "platforms"}));
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

// ---- POD_TEMPLATE -------------------------------------------------------------------------

namespace {

Status CheckPodTemplateBody(const Json& body) {
  if (!body.is_object()) return TypeError("(top level)", "an object (a partial Pod)", body);
  auto spec = body.find("spec");
  if (spec != body.end()) {
    if (!spec->is_object()) return TypeError("spec", "an object", *spec);
    auto selector = spec->find("nodeSelector");
    if (selector != spec->end()) {
      if (!selector->is_object()) return TypeError("spec.nodeSelector", "an object", *selector);
      for (const auto& [k, v] : selector->items()) {
        if (!v.is_string()) return TypeError(Path("spec.nodeSelector", k), "a string", v);
      }
    }
    auto tolerations = spec->find("tolerations");
    if (tolerations != spec->end()) {
      if (!tolerations->is_array()) {
        return TypeError("spec.tolerations", "a list of tolerations", *tolerations);
      }
      for (size_t i = 0; i < tolerations->size(); ++i) {
        const Json& t = (*tolerations)[i];
        std::string p = Index("spec.tolerations", i);
        if (!t.is_object()) return TypeError(p, "an object", t);
        if (HasPlaceholders(internal::Dump(t))) continue;  // checked after rendering
        Result<model::Toleration> parsed = model::TolerationFromJson(t, p);
        if (!parsed.ok()) return parsed.status();
      }
    }
    for (const char* list : {"containers", "initContainers", "volumes"}) {
      auto it = spec->find(list);
      if (it == spec->end()) continue;
      std::string p = Path("spec", list);
      if (!it->is_array()) return TypeError(p, "a list", *it);
      for (size_t i = 0; i < it->size(); ++i) {
        if (!(*it)[i].is_object()) return TypeError(Index(p, i), "an object", (*it)[i]);
      }
    }
  }
  auto metadata = body.find("metadata");
  if (metadata != body.end() && !metadata->is_object()) {
    return TypeError("metadata", "an object", *metadata);
  }
  return OkStatus();
}

}  // namespace

Result<PodTemplate> PodTemplateFromJson(std::string_view name, const Json& body) {
  RETURN_IF_ERROR(ValidateName("pod template", name));
  Status s = CheckPodTemplateBody(body);
  if (!s.ok()) return s.WithContext("pod template \"" + std::string(name) + "\"");
  return PodTemplate{std::string(name), body};
}

Json PodTemplateToJson(const PodTemplate& tmpl) { return tmpl.body; }

// ---- RESOURCE_VALIDATION ------------------------------------------------------------------

namespace {
constexpr std::pair<Operator, std::string_view> kOperators[] = {
    {Operator::kGt, "GT"}, {Operator::kGe, "GE"}, {Operator::kLt, "LT"},
    {Operator::kLe, "LE"}, {Operator::kEq, "EQ"}, {Operator::kNe, "NE"},
};

Status ReadOperand(const Json& rule, std::string_view key, std::string_view path,
                   std::string* out) {
  auto it = rule.find(key);
  if (it == rule.end()) return InvalidArgumentError(Path(path, key) + ": required");
  if (it->is_string()) {
    *out = it->get<std::string>();
  } else if (it->is_number()) {
    *out = internal::Dump(*it);
  } else {
    return TypeError(Path(path, key), "a string or number", *it);
  }
  return OkStatus();
}

}  // namespace

std::string_view OperatorName(Operator op) {
  for (const auto& [o, name] : kOperators) {
    if (o == op) return name;
  }
  return "?";
}

Result<Operator> ParseOperator(std::string_view text) {
  std::string upper;
  for (char c : text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::vector<std::string> names;
  for (const auto& [o, name] : kOperators) {
    if (name == upper) return o;
    names.emplace_back(name);
  }
  return InvalidArgumentError("unknown operator \"" + std::string(text) + "\"; expected one of " +
                              Join(names, ", ") + DidYouMean(upper, names));
}

Result<ValidationSet> ValidationSetFromJson(std::string_view name, const Json& body) {
  RETURN_IF_ERROR(ValidateName("resource validation", name));
  std::string context = "resource validation \"" + std::string(name) + "\"";
  if (!body.is_array()) {
    return TypeError("(top level)", "a list of rules", body).WithContext(context);
  }
  ValidationSet set;
  set.name = std::string(name);
  for (size_t i = 0; i < body.size(); ++i) {
    const Json& r = body[i];
    std::string path = Index("", i);
    Status s =
        CheckObject(r, path, {"operator", "left_operand", "right_operand", "assert_message"});
    if (!s.ok()) return s.WithContext(context);
    ValidationRule rule;
    std::string op;
    if (!r.contains("operator")) {
      return InvalidArgumentError(path + ".operator: required").WithContext(context);
    }
    s = ReadString(r, "operator", path, &op);
    if (!s.ok()) return s.WithContext(context);
    Result<Operator> parsed = ParseOperator(op);
    if (!parsed.ok()) return parsed.status().WithContext(context + ": " + path + ".operator");
    rule.op = *parsed;
    for (auto [key, out] : {std::pair{"left_operand", &rule.left_operand},
                            std::pair{"right_operand", &rule.right_operand},
                            std::pair{"assert_message", &rule.assert_message}}) {
      s = ReadOperand(r, key, path, out);
      if (!s.ok()) return s.WithContext(context);
      s = RenderString(*out, VariableMap{}, "", "").status();
      // Only syntax errors matter here; undefined variables are resolved at submit time.
      if (!s.ok() && s.message().find("undefined variable") == std::string::npos) {
        return InvalidArgumentError(Path(path, key) + ": " + s.message()).WithContext(context);
      }
    }
    set.rules.push_back(std::move(rule));
  }
  return set;
}

Json ValidationRuleToJson(const ValidationRule& rule) {
  return Json{{"operator", std::string(OperatorName(rule.op))},
              {"left_operand", rule.left_operand},
              {"right_operand", rule.right_operand},
              {"assert_message", rule.assert_message}};
}

Json ValidationSetToJson(const ValidationSet& set) {
  Json out = Json::array();
  for (const ValidationRule& r : set.rules) out.push_back(ValidationRuleToJson(r));
  return out;
}

// ---- ROLE ---------------------------------------------------------------------------------

namespace {

const std::vector<std::string> kMethods = {"*",     "get",    "post",     "put",
                                           "patch", "delete", "websocket"};

Status CheckLegacyAction(const LegacyAction& a, std::string_view path) {
  if (a.base != "http") {
    return InvalidArgumentError(std::string(path) + ".base: expected \"http\", got \"" + a.base +
                                "\"");
  }
  std::string_view p = a.path;
  if (StartsWith(p, "http:")) p.remove_prefix(5);
  if (StartsWith(p, "!")) p.remove_prefix(1);
  if (p != "*" && !StartsWith(p, "/")) {
    return InvalidArgumentError(std::string(path) +
                                ".path: expected \"*\" or a path starting "
                                "with \"/\" (optionally \"!\" to deny), got \"" +
                                a.path + "\"");
  }
  if (std::find(kMethods.begin(), kMethods.end(), a.method) == kMethods.end()) {
    return InvalidArgumentError(std::string(path) + ".method: expected one of " +
                                Join(kMethods, ", ") + ", got \"" + a.method + "\"" +
                                DidYouMean(a.method, kMethods));
  }
  return OkStatus();
}

// Seed 000 writes role globs without the leading slash (``api/pool/shared*``); request paths
// always have one, so such a glob would never match. It is stored with the slash added (after an
// optional "http:" and "!"), so what is matched, shown and compared is one spelling.
std::string WithLeadingSlash(std::string_view glob) {
  std::string prefix;
  if (StartsWith(glob, "http:")) {
    prefix += "http:";
    glob.remove_prefix(5);
  }
  if (StartsWith(glob, "!")) {
    prefix += "!";
    glob.remove_prefix(1);
  }
  if (glob.empty() || glob == "*" || StartsWith(glob, "/")) return prefix + std::string(glob);
  return prefix + "/" + std::string(glob);
}

// The path of an action in its string form "http:<path>:<method>" (checked by the caller).
std::string StringActionPath(const std::string& text) {
  return text.substr(5, text.rfind(':') - 5);
}

Result<LegacyAction> LegacyActionFromJson(const Json& e, std::string_view path) {
  LegacyAction a;
  if (e.is_string()) {
    // "http:<path>:<method>"
    std::string text = e.get<std::string>();
    size_t colon = text.rfind(':');
    if (!StartsWith(text, "http:") || colon == std::string::npos || colon < 5) {
      return InvalidArgumentError(std::string(path) +
                                  ": expected \"http:<path>:<method>\", got \"" + text + "\"");
    }
    a.path = StringActionPath(text);
    a.method = ToLower(text.substr(colon + 1));
  } else {
    RETURN_IF_ERROR(CheckObject(e, path, {"base", "path", "method"}));
    RETURN_IF_ERROR(ReadString(e, "base", path, &a.base));
    if (!e.contains("path")) return InvalidArgumentError(std::string(path) + ".path: required");
    RETURN_IF_ERROR(ReadString(e, "path", path, &a.path));
    if (!e.contains("method")) {
      return InvalidArgumentError(std::string(path) + ".method: required");
    }
    RETURN_IF_ERROR(ReadString(e, "method", path, &a.method));
    a.method = ToLower(a.method);
  }
  a.path = WithLeadingSlash(a.path);
  RETURN_IF_ERROR(CheckLegacyAction(a, path));
  return a;
}

Json LegacyActionToJson(const LegacyAction& a) {
  return Json{{"base", a.base}, {"path", a.path}, {"method", a.method}};
}

// ^(\*|[a-z]+):(\*|[A-Z][a-zA-Z]*)$ or "*".
bool IsSemanticAction(std::string_view a) {
  if (a == "*") return true;
  size_t colon = a.find(':');
  if (colon == std::string_view::npos) return false;
  std::string_view type = a.substr(0, colon), name = a.substr(colon + 1);
  bool type_ok = type == "*" || (!type.empty() && std::all_of(type.begin(), type.end(), [](char c) {
                   return c >= 'a' && c <= 'z';
                 }));
  bool name_ok = name == "*" || (!name.empty() && name[0] >= 'A' && name[0] <= 'Z' &&
                                 std::all_of(name.begin(), name.end(), [](char c) {
                                   return std::isalpha(static_cast<unsigned char>(c));
                                 }));
  return type_ok && name_ok;
}

Result<Policy> PolicyFromJson(const Json& e, std::string_view path) {
  RETURN_IF_ERROR(CheckObject(e, path, {"effect", "actions", "resources"}));
  Policy p;
  std::string effect = "Allow";
  RETURN_IF_ERROR(ReadString(e, "effect", path, &effect));
  if (ToLower(effect) == "allow") {
    p.effect = Effect::kAllow;
  } else if (ToLower(effect) == "deny") {
    p.effect = Effect::kDeny;
  } else {
    return InvalidArgumentError(Path(path, "effect") + ": expected Allow or Deny, got \"" + effect +
                                "\"");
  }
  auto actions = e.find("actions");
  if (actions == e.end()) return InvalidArgumentError(Path(path, "actions") + ": required");
  std::string ap = Path(path, "actions");
  if (!actions->is_array()) return TypeError(ap, "a list of actions", *actions);
  for (size_t i = 0; i < actions->size(); ++i) {
    const Json& a = (*actions)[i];
    std::string p2 = Index(ap, i);
    if (a.is_object() || (a.is_string() && StartsWith(a.get<std::string>(), "http:"))) {
      ASSIGN_OR_RETURN(LegacyAction la, LegacyActionFromJson(a, p2));
      p.legacy_actions.push_back(std::move(la));
    } else if (a.is_string()) {
      std::string text = a.get<std::string>();
      if (!IsSemanticAction(text)) {
        return InvalidArgumentError(p2 + ": action \"" + text +
                                    "\" must look like \"workflow:Create\", \"pool:*\" or \"*:*\"");
      }
      p.actions.push_back(text);
    } else {
      return TypeError(p2, "an action string or {base, path, method}", a);
    }
  }
  RETURN_IF_ERROR(ReadStringList(e, "resources", path, &p.resources));
  return p;
}

Json PolicyToJson(const Policy& p) {
  Json out = Json::object();
  if (p.effect == Effect::kDeny) out["effect"] = "Deny";
  Json actions = Json::array();
  for (const std::string& a : p.actions) actions.push_back(a);
  for (const LegacyAction& a : p.legacy_actions) actions.push_back(LegacyActionToJson(a));
  out["actions"] = actions;
  if (!p.resources.empty()) out["resources"] = StringList(p.resources);
  return out;
}

Json PoliciesToJson(const std::vector<Policy>& policies) {
  Json out = Json::array();
  for (const Policy& p : policies) out.push_back(PolicyToJson(p));
  return out;
}

Status DecodeRole(const Json& body, Role& role) {
  RETURN_IF_ERROR(CheckObject(
      body, "",
      {"name", "description", "actions", "policies", "immutable", "sync_mode", "external_roles"}));
  RETURN_IF_ERROR(CheckBodyName(body, role.name, "role"));
  RETURN_IF_ERROR(ReadString(body, "description", "", &role.description));
  auto actions = body.find("actions");
  if (actions != body.end()) {
    if (!actions->is_array())
      return TypeError("actions", "a list of {base, path, method}", *actions);
    for (size_t i = 0; i < actions->size(); ++i) {
      ASSIGN_OR_RETURN(LegacyAction a, LegacyActionFromJson((*actions)[i], Index("actions", i)));
      role.actions.push_back(std::move(a));
    }
  }
  auto policies = body.find("policies");
  if (policies != body.end()) {
    if (!policies->is_array()) return TypeError("policies", "a list of policies", *policies);
    for (size_t i = 0; i < policies->size(); ++i) {
      ASSIGN_OR_RETURN(Policy p, PolicyFromJson((*policies)[i], Index("policies", i)));
      role.policies.push_back(std::move(p));
    }
  }
  RETURN_IF_ERROR(ReadBool(body, "immutable", "", &role.immutable));
  RETURN_IF_ERROR(ReadString(body, "sync_mode", "", &role.sync_mode));
  if (!role.sync_mode.empty() && role.sync_mode != "import" && role.sync_mode != "force" &&
      role.sync_mode != "ignore") {
    return InvalidArgumentError("sync_mode: expected import, force or ignore, got \"" +
                                role.sync_mode + "\"");
  }
  auto external = body.find("external_roles");
  if (external != body.end() && !external->is_null()) {
    std::vector<std::string> names;
    RETURN_IF_ERROR(ReadStringList(body, "external_roles", "", &names));
    role.external_roles = names;
  }
  return OkStatus();
}

}  // namespace

Result<Role> RoleFromJson(std::string_view name, const Json& body) {
  RETURN_IF_ERROR(ValidateName("role", name));
  Role role;
  role.name = std::string(name);
  Status s = DecodeRole(body, role);
  if (!s.ok()) return s.WithContext("role \"" + std::string(name) + "\"");
  role.raw = body;
  return role;
}

// Whether every action in `written` spells its path as it is stored (WithLeadingSlash), so the
// actions may be shown as written; `written` decodes to `actions` (checked by the caller).
bool PathsAsStored(const Json& written, const std::vector<LegacyAction>& actions) {
  if (!written.is_array() || written.size() != actions.size()) return false;
  for (size_t i = 0; i < actions.size(); ++i) {
    std::string path;
    if (written[i].is_string()) {
      path = StringActionPath(written[i].get<std::string>());
    } else {
      path = written[i].value("path", "");
    }
    if (path != actions[i].path) return false;
  }
  return true;
}

Json RoleToJson(const Role& role, bool with_name) {
  Json out = WithName(role.raw.is_object() ? role.raw : Json::object(), role.name, with_name);
  WriteField(out, "description", role.description, role.description.empty());
  Json actions = Json::array();
  for (const LegacyAction& a : role.actions) actions.push_back(LegacyActionToJson(a));
  // Keep the actions as written (string or object form) when they are unchanged.
  bool actions_same = false;
  if (role.raw.is_object() && role.raw.contains("actions")) {
    Role reread;
    actions_same = DecodeRole(Json{{"actions", role.raw["actions"]}}, reread).ok() &&
                   reread.actions == role.actions &&
                   PathsAsStored(role.raw["actions"], role.actions);
  }
  if (!actions_same) WriteField(out, "actions", actions, role.actions.empty());
  Json policies = PoliciesToJson(role.policies);
  bool policies_same = false;
  if (role.raw.is_object() && role.raw.contains("policies")) {
    Role reread;
    policies_same = DecodeRole(Json{{"policies", role.raw["policies"]}}, reread).ok() &&
                    PoliciesToJson(reread.policies) == policies;
  }
  if (!policies_same) WriteField(out, "policies", policies, role.policies.empty());
  WriteField(out, "immutable", role.immutable, !role.immutable);
  WriteField(out, "sync_mode", role.sync_mode, role.sync_mode.empty());
  if (role.external_roles.has_value()) {
    WriteField(out, "external_roles", StringList(*role.external_roles), false);
  } else {
    WriteField(out, "external_roles", nullptr, true);
  }
  return out;
}

Result<Role> GeneratePoolRole(std::string_view role_name) {
  if (!StartsWith(role_name, "osmo-") || role_name.size() <= 5) {
    return InvalidArgumentError("pool role name \"" + std::string(role_name) +
                                "\" must be \"osmo-<pool name prefix>\"");
  }
  RETURN_IF_ERROR(ValidateName("role", role_name));
  std::string prefix(role_name.substr(5));
  Role role;
  role.name = std::string(role_name);
  role.description = "Generated Role for pool " + prefix;
  Policy p;
  p.actions = {"workflow:*"};
  p.resources = {"pool/" + prefix + "*"};
  role.policies.push_back(p);
  role.raw = RoleToJson(role);
  return role;
}

// ---- BACKEND ------------------------------------------------------------------------------

namespace {

Status DecodeBackend(const Json& body, Backend& b) {
  RETURN_IF_ERROR(CheckObject(
      body, "",
      {"name", "description", "version", "k8s_uid", "k8s_namespace", "dashboard_url", "grafana_url",
       "tests", "scheduler_settings", "node_conditions", "last_heartbeat", "created_date",
       "router_address", "online", "enable_node_pools", "enable_cpu_quota", "enable_over_quota"}));
  RETURN_IF_ERROR(CheckBodyName(body, b.name, "backend"));
  for (auto [key, out] :
       {std::pair{"description", &b.description}, std::pair{"version", &b.version},
        std::pair{"k8s_uid", &b.k8s_uid}, std::pair{"k8s_namespace", &b.k8s_namespace},
        std::pair{"dashboard_url", &b.dashboard_url}, std::pair{"grafana_url", &b.grafana_url},
        std::pair{"router_address", &b.router_address}}) {
    RETURN_IF_ERROR(ReadString(body, key, "", out));
  }
  RETURN_IF_ERROR(ReadStringList(body, "tests", "", &b.tests));
  RETURN_IF_ERROR(ReadBool(body, "enable_node_pools", "", &b.enable_node_pools));
  RETURN_IF_ERROR(ReadBool(body, "enable_cpu_quota", "", &b.enable_cpu_quota));
  RETURN_IF_ERROR(ReadBool(body, "enable_over_quota", "", &b.enable_over_quota));
  auto sched = body.find("scheduler_settings");
  if (sched != body.end()) {
    const std::string path = "scheduler_settings";
    RETURN_IF_ERROR(
        CheckObject(*sched, path, {"scheduler_type", "scheduler_name", "scheduler_timeout"}));
    RETURN_IF_ERROR(
        ReadString(*sched, "scheduler_type", path, &b.scheduler_settings.scheduler_type));
    RETURN_IF_ERROR(
        ReadString(*sched, "scheduler_name", path, &b.scheduler_settings.scheduler_name));
    RETURN_IF_ERROR(
        ReadInt(*sched, "scheduler_timeout", path, &b.scheduler_settings.scheduler_timeout));
    if (b.scheduler_settings.scheduler_type.empty()) {
      return InvalidArgumentError(path + ".scheduler_type: must not be empty");
    }
    if (b.scheduler_settings.scheduler_timeout <= 0) {
      return InvalidArgumentError(path + ".scheduler_timeout: must be > 0 seconds");
    }
  }
  auto conditions = body.find("node_conditions");
  if (conditions != body.end()) {
    const std::string path = "node_conditions";
    RETURN_IF_ERROR(CheckObject(*conditions, path, {"rules", "prefix"}));
    auto rules = conditions->find("rules");
    if (rules != conditions->end()) {
      if (!rules->is_object()) return TypeError(path + ".rules", "an object", *rules);
      for (const auto& [type, status] : rules->items()) {
        std::string p = Path(path + ".rules", type);
        if (!status.is_string()) return TypeError(p, "a regular expression string", status);
        for (const std::string& re : {type, status.get<std::string>()}) {
          try {
            std::regex compiled(re);
          } catch (const std::regex_error& e) {
            return InvalidArgumentError(p + ": invalid regular expression \"" + re + "\"");
          }
        }
      }
      b.node_conditions.rules = *rules;
    }
    RETURN_IF_ERROR(ReadString(*conditions, "prefix", path, &b.node_conditions.prefix));
  }
  if (b.node_conditions.rules.empty()) b.node_conditions.rules = Json{{"Ready", "True"}};
  auto online = body.find("online");
  if (online != body.end() && !online->is_boolean()) {
    return TypeError("online", "a boolean", *online);
  }
  for (const char* key : {"last_heartbeat", "created_date"}) {
    auto it = body.find(key);
    if (it != body.end() && !it->is_string() && !it->is_null()) {
      return TypeError(key, "a timestamp string or null", *it);
    }
  }
  return OkStatus();
}

}  // namespace

Result<Backend> BackendFromJson(std::string_view name, const Json& body) {
  RETURN_IF_ERROR(ValidateName("backend", name));
  Backend b;
  b.name = std::string(name);
  Status s = DecodeBackend(body, b);
  if (!s.ok()) return s.WithContext("backend \"" + std::string(name) + "\"");
  b.raw = body;
  return b;
}

Json BackendToJson(const Backend& b, bool with_name) {
  Json out = WithName(b.raw.is_object() ? b.raw : Json::object(), b.name, with_name);
  for (auto [key, value] :
       {std::pair{"description", &b.description}, std::pair{"version", &b.version},
        std::pair{"k8s_uid", &b.k8s_uid}, std::pair{"k8s_namespace", &b.k8s_namespace},
        std::pair{"dashboard_url", &b.dashboard_url}, std::pair{"grafana_url", &b.grafana_url},
        std::pair{"router_address", &b.router_address}}) {
    WriteField(out, key, *value, value->empty());
  }
  WriteField(out, "tests", StringList(b.tests), b.tests.empty());
  WriteField(out, "enable_node_pools", b.enable_node_pools, b.enable_node_pools);
  WriteField(out, "enable_cpu_quota", b.enable_cpu_quota, b.enable_cpu_quota);
  WriteField(out, "enable_over_quota", b.enable_over_quota, b.enable_over_quota);
  SchedulerSettings defaults;
  const SchedulerSettings& s = b.scheduler_settings;
  bool sched_default = s.scheduler_type == defaults.scheduler_type &&
                       s.scheduler_name == defaults.scheduler_name &&
                       s.scheduler_timeout == defaults.scheduler_timeout;
  Json sched = out.contains("scheduler_settings") && out["scheduler_settings"].is_object()
                   ? out["scheduler_settings"]
                   : Json::object();
  WriteField(sched, "scheduler_type", s.scheduler_type,
             s.scheduler_type == defaults.scheduler_type);
  WriteField(sched, "scheduler_name", s.scheduler_name,
             s.scheduler_name == defaults.scheduler_name);
  WriteField(sched, "scheduler_timeout", s.scheduler_timeout,
             s.scheduler_timeout == defaults.scheduler_timeout);
  WriteField(out, "scheduler_settings", sched, sched_default && sched.empty());
  NodeConditions nc_default;
  nc_default.rules = Json{{"Ready", "True"}};
  Json nc = out.contains("node_conditions") && out["node_conditions"].is_object()
                ? out["node_conditions"]
                : Json::object();
  bool had_rules = nc.contains("rules");
  WriteField(nc, "rules", b.node_conditions.rules,
             !had_rules && b.node_conditions.rules == nc_default.rules);
  WriteField(nc, "prefix", b.node_conditions.prefix, b.node_conditions.prefix == nc_default.prefix);
  WriteField(out, "node_conditions", nc, nc.empty());
  return out;
}

// ---- File shapes --------------------------------------------------------------------------

namespace {

std::vector<std::string> BodyFields(Kind kind) {
  switch (kind) {
    case Kind::kPool:
      return {"description",
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
    case Kind::kPodTemplate:
      return {"apiVersion", "kind", "metadata", "spec", "status"};
    case Kind::kResourceValidation:
      return {};
    case Kind::kRole:
      return {"description", "actions", "policies", "immutable", "sync_mode", "external_roles"};
    case Kind::kBackend:
      return {"description",
              "version",
              "k8s_uid",
              "k8s_namespace",
              "dashboard_url",
              "grafana_url",
              "tests",
              "scheduler_settings",
              "node_conditions",
              "last_heartbeat",
              "created_date",
              "router_address",
              "online",
              "enable_node_pools",
              "enable_cpu_quota",
              "enable_over_quota"};
    case Kind::kNodePool:
      return {"label_key", "label_value", "description"};
    case Kind::kQueue:
      return {"parent", "priority", "resources", "description"};
    case Kind::kMachinePool:
      return {"instance_type", "min_replicas",  "max_replicas", "replicas",  "labels",
              "taints",        "capacity_type", "max_price",    "disk_size", "description"};
    case Kind::kPodDisruptionBudget:
      return {"selector", "minAvailable", "maxUnavailable", "unhealthyPodEvictionPolicy"};
  }
  return {};
}

}  // namespace

Result<std::vector<NamedBody>> SplitConfigFile(Kind kind, Json doc,
                                               std::optional<std::string> name_from_cli) {
  std::string what(KindName(kind));
  if (name_from_cli.has_value() && name_from_cli->empty()) name_from_cli.reset();
  if (name_from_cli.has_value()) RETURN_IF_ERROR(ValidateName(what, *name_from_cli));
  // The bodies are moved out of `doc`, never copied: a copy walks the whole tree.
  auto single = [&](std::string name) -> Result<std::vector<NamedBody>> {
    RETURN_IF_ERROR(ValidateName(what, name));
    if (doc.is_object()) doc.erase("name");
    std::vector<NamedBody> out;
    out.push_back(NamedBody{std::move(name), std::move(doc)});
    return out;
  };
  if (kind == Kind::kResourceValidation && doc.is_array()) {
    if (!name_from_cli.has_value()) {
      return InvalidArgumentError(
          "the file holds one RESOURCE_VALIDATION list without a name; give the name on the "
          "command line or write {\"<name>\": [...]}");
    }
    return single(*name_from_cli);
  }
  if (!doc.is_object()) {
    return InvalidArgumentError("a " + what + " file must hold a JSON object, " +
                                internal::Got(doc));
  }
  auto name_it = doc.find("name");
  if (name_it != doc.end() && name_it->is_string()) {
    std::string name = name_it->get<std::string>();
    if (name_from_cli.has_value() && *name_from_cli != name) {
      return InvalidArgumentError("the command names " + what + " \"" + *name_from_cli +
                                  "\" but the file's \"name\" is \"" + name + "\"");
    }
    return single(name);
  }
  std::vector<std::string> fields = BodyFields(kind);
  for (const auto& [key, value] : doc.items()) {
    if (std::find(fields.begin(), fields.end(), key) == fields.end()) continue;
    if (!name_from_cli.has_value()) {
      return InvalidArgumentError("the file holds one " + what + " (it has a \"" + key +
                                  "\" field) but no name: add \"name\" to the file or give the "
                                  "name on the command line");
    }
    return single(*name_from_cli);
  }
  // Map form.
  if (doc.empty()) return InvalidArgumentError("the " + what + " file is an empty object");
  std::vector<NamedBody> out;
  for (auto& [key, value] : doc.get_ref<Json::object_t&>()) {
    bool shape_ok = kind == Kind::kResourceValidation ? value.is_array() : value.is_object();
    if (!shape_ok) {
      return InvalidArgumentError(key + ": expected " +
                                  (kind == Kind::kResourceValidation
                                       ? std::string("a list of rules")
                                       : "an object (the " + what + " \"" + key + "\")") +
                                  ", " + internal::Got(value) +
                                  "; a config file holds {\"name\": ...} or {\"<name>\": {...}}");
    }
    Status s = ValidateName(what, key);
    if (!s.ok()) return s;
    Json body = std::move(value);
    if (body.is_object()) {
      auto inner = body.find("name");
      if (inner != body.end()) {
        if (!inner->is_string() || inner->get<std::string>() != key) {
          return InvalidArgumentError(key + ".name: " + what + " \"" + key +
                                      "\" has a different \"name\" " + internal::Dump(*inner));
        }
        body.erase("name");
      }
    }
    out.push_back(NamedBody{key, std::move(body), /*map_entry=*/true});
  }
  if (name_from_cli.has_value()) {
    if (out.size() != 1 || out[0].name != *name_from_cli) {
      std::vector<std::string> names;
      for (const NamedBody& nb : out) names.push_back(nb.name);
      return InvalidArgumentError("the command names " + what + " \"" + *name_from_cli +
                                  "\" but the file defines " + Join(names, ", ") +
                                  (out.size() > 1 ? " (omit the name to load them all)" : ""));
    }
  }
  return out;
}

}  // namespace gpupool::config
