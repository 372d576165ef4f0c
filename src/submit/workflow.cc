#include "submit/workflow.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "codec/field_path.h"
#include "codec/json_reader.h"
#include "codec/source_map.h"
#include "codec/yaml_reader.h"
#include "common/strings.h"
#include "model/duration.h"
#include "model/quantity.h"
#include "submit/workflow_text.h"

namespace gpupool::submit {
namespace {

using json = nlohmann::ordered_json;
using internal::FieldError;
using internal::Prefix;
using internal::Source;

Status CheckFields(const json& object, std::string_view path,
                   const std::vector<std::string>& allowed, const Source& src) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return FieldError(
          src, codec::FieldPath(path, key),
          "unknown field" + DidYouMean(key, allowed) + "; expected one of " + Join(allowed, ", "));
    }
  }
  return OkStatus();
}

Result<const json*> RequireObject(const json& value, std::string_view path, const Source& src) {
  if (!value.is_object()) {
    return FieldError(src, path, "expected an object, got " + codec::JsonTypeName(value));
  }
  return &value;
}

Result<std::string> GetString(const json& value, std::string_view path, const Source& src);

// `node_pools`: a list of names or one comma-separated string; no empty or repeated names.
Result<std::vector<std::string>> GetNodePools(const json& value, const Source& src) {
  static constexpr std::string_view kPath = "workflow.node_pools";
  std::vector<std::string> names;
  if (value.is_string()) {
    auto parsed = ParseNodePoolList(value.get<std::string>());
    if (!parsed.ok()) return FieldError(src, kPath, parsed.status().message());
    names = std::move(*parsed);
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      std::string at = std::string(kPath) + "[" + std::to_string(i) + "]";
      ASSIGN_OR_RETURN(std::string name, GetString(value[i], at, src));
      names.push_back(name);
    }
  } else {
    return FieldError(src, kPath,
                      "expected a list of node pool names, got " + codec::JsonTypeName(value));
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string at = std::string(kPath) + "[" + std::to_string(i) + "]";
    if (names[i].empty()) return FieldError(src, at, "empty node pool name");
    if (!seen.insert(names[i]).second) {
      return FieldError(src, at, "node pool \"" + names[i] + "\" named twice");
    }
  }
  return names;
}

Result<std::string> GetString(const json& value, std::string_view path, const Source& src) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_number()) return value.dump();
  return FieldError(src, path, "expected a string, got " + codec::JsonTypeName(value));
}

Result<bool> GetBool(const json& value, std::string_view path, const Source& src) {
  if (value.is_boolean()) return value.get<bool>();
  return FieldError(src, path, "expected true or false, got " + codec::JsonTypeName(value));
}

Result<std::vector<std::string>> GetStringList(const json& value, std::string_view path,
                                               const Source& src) {
  std::vector<std::string> out;
  if (value.is_null()) return out;
  if (value.is_string()) return std::vector<std::string>{value.get<std::string>()};
  if (!value.is_array()) {
    return FieldError(src, path, "expected a list of strings, got " + codec::JsonTypeName(value));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    ASSIGN_OR_RETURN(std::string s, GetString(value[i], codec::IndexPath(path, i), src));
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::optional<int64_t>> GetDuration(const json& value, std::string_view path,
                                           const Source& src) {
  if (value.is_null()) return std::optional<int64_t>();
  if (value.is_number_integer()) {
    if (value.get<int64_t>() < 0) return FieldError(src, path, "must not be negative");
    return std::optional<int64_t>(value.get<int64_t>());
  }
  if (value.is_number()) {
    double d = value.get<double>();
    if (d < 0) return FieldError(src, path, "must not be negative");
    // Converting a double beyond int64 is undefined: 1e300 seconds is no duration anyway.
    if (d >= 9e18) return FieldError(src, path, "too large (at most 9e18 seconds)");
    return std::optional<int64_t>(static_cast<int64_t>(d + 0.999999));
  }
  if (!value.is_string()) {
    return FieldError(src, path,
                      "expected a duration such as 2h or 1h30m, got " + codec::JsonTypeName(value));
  }
  std::string text = value.get<std::string>();
  if (model::IsEmptyDuration(text)) return std::optional<int64_t>();
  auto seconds = model::ParseDurationSeconds(text);
  if (!seconds.ok()) return FieldError(src, path, seconds.status().message());
  return std::optional<int64_t>(*seconds);
}

// A whole number from `minimum` to 2^31 - 1 (an int32, as Kubernetes' counts); null: none.
Result<std::optional<int64_t>> GetCount(const json& value, std::string_view path, int64_t minimum,
                                        const Source& src) {
  if (value.is_null()) return std::optional<int64_t>();
  const bool whole = value.is_number_integer() &&
                     (!value.is_number_unsigned() || value.get<uint64_t>() <= 2147483647u);
  const bool in_range =
      whole && value.get<int64_t>() >= minimum && value.get<int64_t>() <= 2147483647;
  if (!in_range) {
    return FieldError(src, path,
                      "expected a whole number from " + std::to_string(minimum) +
                          " to 2147483647, got " + codec::JsonTypeName(value) +
                          (value.is_number() ? " " + value.dump() : ""));
  }
  return std::optional<int64_t>(value.get<int64_t>());
}

// Names must be unique ignoring case and the difference between '-' and '_' (as OSMO checks).
std::string NameKey(std::string_view name) {
  std::string key = ToLower(name);
  std::replace(key.begin(), key.end(), '_', '-');
  return key;
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  if (!std::isalnum(static_cast<unsigned char>(name.front()))) return false;
  if (!std::isalnum(static_cast<unsigned char>(name.back()))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

Status CheckName(std::string_view name, std::string_view path, const Source& src) {
  if (!ValidName(name)) {
    return FieldError(src, path,
                      "invalid name \"" + std::string(name) +
                          "\": expected 1-63 letters, digits, '-', '_' or '.', starting and "
                          "ending with a letter or digit");
  }
  return OkStatus();
}

Status CheckQuantity(const json& value, std::string_view path, const Source& src) {
  if (value.is_null()) return OkStatus();
  auto q = model::ParseQuantityJson(value, path);
  if (!q.ok()) return InvalidArgumentError(Prefix(src, path) + q.status().message());
  if (q->MilliValue() < 0) return FieldError(src, path, "must not be negative");
  return OkStatus();
}

Result<ResourceSpec> ParseResource(const std::string& name, const json& value,
                                   std::string_view path, const Source& src) {
  ResourceSpec r;
  r.name = name;
  RETURN_IF_ERROR(CheckName(name, path, src));
  if (value.is_null()) return r;
  ASSIGN_OR_RETURN(auto* obj, RequireObject(value, path, src));
  RETURN_IF_ERROR(CheckFields(
      *obj, path, {"cpu", "gpu", "memory", "storage", "platform", "nodesExcluded"}, src));
  for (const auto& [key, v] : obj->items()) {
    std::string field = codec::FieldPath(path, key);
    if (key == "cpu" || key == "gpu" || key == "memory" || key == "storage") {
      RETURN_IF_ERROR(CheckQuantity(v, field, src));
      if (key == "gpu" && v.is_number() && !v.is_number_integer()) {
        return FieldError(src, field, "expected a whole number of GPUs");
      }
      (key == "cpu" ? r.cpu : key == "gpu" ? r.gpu : key == "memory" ? r.memory : r.storage) = v;
    } else if (key == "platform") {
      if (!v.is_null()) {
        ASSIGN_OR_RETURN(r.platform, GetString(v, field, src));
      }
    } else if (key == "nodesExcluded") {
      ASSIGN_OR_RETURN(r.nodes_excluded, GetStringList(v, field, src));
    }
  }
  return r;
}

Result<json> ParseEnv(const json& value, std::string_view path, const Source& src) {
  json env = json::array();
  if (value.is_null()) return env;
  if (value.is_object()) {
    for (const auto& [key, v] : value.items()) {
      ASSIGN_OR_RETURN(std::string s, GetString(v, codec::FieldPath(path, key), src));
      env.push_back(json{{"name", key}, {"value", s}});
    }
    return env;
  }
  if (!value.is_array()) {
    return FieldError(
        src, path, "expected a map or a list of {name, value}, got " + codec::JsonTypeName(value));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    std::string item_path = codec::IndexPath(path, i);
    const json& item = value[i];
    if (!item.is_object() || !item.contains("name") || !item["name"].is_string()) {
      return FieldError(src, item_path, "expected {name, value}");
    }
    json copy = item;
    if (copy.contains("value") && !copy["value"].is_string()) {
      ASSIGN_OR_RETURN(std::string s,
                       GetString(copy["value"], codec::FieldPath(item_path, "value"), src));
      copy["value"] = s;
    }
    env.push_back(std::move(copy));
  }
  return env;
}

std::string MountName(std::string_view host_path) {
  std::string out = "mount";
  for (char c : host_path) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (out.back() != '-') {
      out += '-';
    }
  }
  while (out.size() > 1 && out.back() == '-') out.pop_back();
  return out.substr(0, 63);
}

Result<json> ParseMounts(const json& value, std::string_view path, const Source& src) {
  json mounts = json::array();
  if (value.is_null()) return mounts;
  if (!value.is_array()) {
    return FieldError(src, path, "expected a list, got " + codec::JsonTypeName(value));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    std::string item_path = codec::IndexPath(path, i);
    const json& item = value[i];
    if (item.is_string()) {
      std::string text = item.get<std::string>();
      auto parts = Split(text, ':');
      if (parts.size() < 2 || parts[0].empty() || parts[1].empty()) {
        return FieldError(src, item_path,
                          "expected \"host_path:container_path\", got \"" + text + "\"");
      }
      json m{{"name", MountName(parts[0])}, {"mountPath", parts[1]}, {"hostPath", parts[0]}};
      if (parts.size() > 2 && parts[2] == "ro") m["readOnly"] = true;
      mounts.push_back(std::move(m));
    } else if (item.is_object() && item.contains("mountPath") && item["mountPath"].is_string()) {
      mounts.push_back(item);
    } else {
      return FieldError(src, item_path,
                        "expected \"host_path:container_path\" or {name, mountPath}");
    }
  }
  return mounts;
}

const std::vector<std::string> kTaskFields = {
    "name",        "image",        "command",       "args",        "env",
    "environment", "resource",     "privileged",    "hostNetwork", "volumeMounts",
    "exitActions", "sim_duration", "sim_exit_code", "lead",        "files",
    "inputs",      "outputs",      "credentials",   "cacheSize"};

Result<TaskSpec> ParseTask(const json& value, std::string_view path, const Source& src) {
  ASSIGN_OR_RETURN(auto* obj, RequireObject(value, path, src));
  RETURN_IF_ERROR(CheckFields(*obj, path, kTaskFields, src));
  TaskSpec task;
  if (!obj->contains("name")) return FieldError(src, path, "missing required field name");
  for (const auto& [key, v] : obj->items()) {
    std::string field = codec::FieldPath(path, key);
    if (key == "name") {
      ASSIGN_OR_RETURN(task.name, GetString(v, field, src));
      RETURN_IF_ERROR(CheckName(task.name, field, src));
    } else if (key == "image") {
      ASSIGN_OR_RETURN(task.image, GetString(v, field, src));
    } else if (key == "command") {
      ASSIGN_OR_RETURN(task.command, GetStringList(v, field, src));
    } else if (key == "args") {
      ASSIGN_OR_RETURN(task.args, GetStringList(v, field, src));
    } else if (key == "env" || key == "environment") {
      ASSIGN_OR_RETURN(json env, ParseEnv(v, field, src));
      for (auto& e : env) task.env.push_back(std::move(e));
    } else if (key == "resource") {
      ASSIGN_OR_RETURN(task.resource, GetString(v, field, src));
    } else if (key == "privileged") {
      ASSIGN_OR_RETURN(task.privileged, GetBool(v, field, src));
    } else if (key == "hostNetwork") {
      ASSIGN_OR_RETURN(task.host_network, GetBool(v, field, src));
    } else if (key == "volumeMounts") {
      ASSIGN_OR_RETURN(task.volume_mounts, ParseMounts(v, field, src));
    } else if (key == "exitActions") {
      if (!v.is_null() && !v.is_object()) {
        return FieldError(src, field, "expected a map ACTION: \"codes\"");
      }
      for (const auto& [action, codes] : v.items()) {
        std::string upper = action;
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        if (upper != "COMPLETE" && upper != "FAIL" && upper != "RESCHEDULE") {
          return FieldError(src, codec::FieldPath(field, action),
                            "unknown exit action; expected COMPLETE, FAIL or RESCHEDULE" +
                                DidYouMean(upper, {"COMPLETE", "FAIL", "RESCHEDULE"}));
        }
        if (!codes.is_string() && !codes.is_number_integer()) {
          return FieldError(src, codec::FieldPath(field, action),
                            "expected exit codes such as \"1,3-5\"");
        }
      }
      task.exit_actions = v;
    } else if (key == "sim_duration") {
      ASSIGN_OR_RETURN(task.sim_duration_seconds, GetDuration(v, field, src));
    } else if (key == "sim_exit_code") {
      if (!v.is_number_integer()) return FieldError(src, field, "expected an integer");
      task.sim_exit_code = v.get<int>();
    } else if (key == "lead") {
      ASSIGN_OR_RETURN(task.lead, GetBool(v, field, src));
    }
    // files, inputs, outputs, credentials, cacheSize: accepted, kept in the document only.
  }
  if (task.image.empty()) return FieldError(src, path, "missing required field image");
  return task;
}

Result<std::vector<TaskSpec>> ParseTasks(const json& value, std::string_view path,
                                         const Source& src) {
  if (!value.is_array() || value.empty()) {
    return FieldError(src, path, "expected a non-empty list of tasks");
  }
  std::vector<TaskSpec> tasks;
  for (size_t i = 0; i < value.size(); ++i) {
    ASSIGN_OR_RETURN(TaskSpec t, ParseTask(value[i], codec::IndexPath(path, i), src));
    tasks.push_back(std::move(t));
  }
  return tasks;
}

}  // namespace

std::string_view PriorityName(Priority priority) {
  switch (priority) {
    case Priority::kHigh:
      return "HIGH";
    case Priority::kLow:
      return "LOW";
    case Priority::kNormal:
      break;
  }
  return "NORMAL";
}

std::string_view PriorityClassName(Priority priority) {
  switch (priority) {
    case Priority::kHigh:
      return "high";
    case Priority::kLow:
      return "low";
    case Priority::kNormal:
      break;
  }
  return "normal";
}

const ResourceSpec* WorkflowSpec::FindResource(std::string_view name) const {
  for (const auto& r : resources) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

size_t WorkflowSpec::TaskCount() const {
  size_t n = 0;
  for (const auto& g : groups) n += g.tasks.size();
  return n;
}

Result<std::pair<std::string, std::string>> ParseSetValue(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return InvalidArgumentError("--set expects KEY=VALUE, got \"" + std::string(text) + "\"");
  }
  return std::make_pair(std::string(Trim(text.substr(0, eq))), std::string(text.substr(eq + 1)));
}

namespace {

// workflow.resources.
Status ParseResources(const json& wf, const Source& src, WorkflowSpec& spec) {
  if (!wf.contains("resources")) return OkStatus();
  ASSIGN_OR_RETURN(auto* res_obj, RequireObject(wf["resources"], "workflow.resources", src));
  for (const auto& [name, value] : res_obj->items()) {
    ASSIGN_OR_RETURN(ResourceSpec r,
                     ParseResource(name, value, codec::FieldPath("workflow.resources", name), src));
    spec.resources.push_back(std::move(r));
  }
  return OkStatus();
}

// workflow.tasks (each its own group, "<task>-group") or workflow.groups: exactly one of them.
Status ParseGroups(const json& wf, const Source& src, WorkflowSpec& spec) {
  bool has_tasks = wf.contains("tasks");
  bool has_groups = wf.contains("groups");
  if (has_tasks == has_groups) {
    return FieldError(src, "workflow", "expected exactly one of tasks or groups");
  }
  if (has_tasks) {
    ASSIGN_OR_RETURN(auto tasks, ParseTasks(wf["tasks"], "workflow.tasks", src));
    for (auto& t : tasks) {
      GroupSpec g;
      g.name = t.name + "-group";
      g.tasks.push_back(std::move(t));
      spec.groups.push_back(std::move(g));
    }
    return OkStatus();
  }
  const json& groups = wf["groups"];
  if (!groups.is_array() || groups.empty()) {
    return FieldError(src, "workflow.groups", "expected a non-empty list of groups");
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    std::string path = codec::IndexPath("workflow.groups", i);
    ASSIGN_OR_RETURN(auto* g_obj, RequireObject(groups[i], path, src));
    RETURN_IF_ERROR(
        CheckFields(*g_obj, path, {"name", "tasks", "barrier", "ignoreNonleadStatus"}, src));
    if (!g_obj->contains("name")) return FieldError(src, path, "missing required field name");
    GroupSpec g;
    ASSIGN_OR_RETURN(g.name, GetString((*g_obj)["name"], path + ".name", src));
    RETURN_IF_ERROR(CheckName(g.name, path + ".name", src));
    if (!g_obj->contains("tasks")) return FieldError(src, path, "missing required field tasks");
    ASSIGN_OR_RETURN(g.tasks, ParseTasks((*g_obj)["tasks"], path + ".tasks", src));
    spec.groups.push_back(std::move(g));
  }
  return OkStatus();
}

// Unique names (case and -/_ insensitive), and every task's resource defined.
Status CheckNamesAndResources(const WorkflowSpec& spec, const Source& src) {
  std::set<std::string> group_keys, task_keys;
  for (const auto& g : spec.groups) {
    if (!group_keys.insert(NameKey(g.name)).second) {
      return FieldError(src, "workflow.groups", "duplicate group name \"" + g.name + "\"");
    }
    for (const auto& t : g.tasks) {
      if (!task_keys.insert(NameKey(t.name)).second) {
        return FieldError(src, "workflow", "duplicate task name \"" + t.name + "\"");
      }
      if (spec.FindResource(t.resource) == nullptr) {
        if (t.resource == "default") continue;  // an empty default resource uses pool defaults
        std::vector<std::string> names;
        for (const auto& r : spec.resources) names.push_back(r.name);
        return FieldError(src, "workflow",
                          "task \"" + t.name + "\" requests undefined resource \"" + t.resource +
                              "\"" + DidYouMean(t.resource, names));
      }
    }
  }
  return OkStatus();
}

// workflow.timeout and workflow.priority.
Status ParseTimeoutAndPriority(const json& wf, const Source& src, WorkflowSpec& spec) {
  if (wf.contains("timeout") && !wf["timeout"].is_null()) {
    ASSIGN_OR_RETURN(auto* t_obj, RequireObject(wf["timeout"], "workflow.timeout", src));
    RETURN_IF_ERROR(
        CheckFields(*t_obj, "workflow.timeout", {"exec_timeout", "queue_timeout"}, src));
    if (t_obj->contains("exec_timeout")) {
      ASSIGN_OR_RETURN(spec.exec_timeout_seconds,
                       GetDuration((*t_obj)["exec_timeout"], "workflow.timeout.exec_timeout", src));
    }
    if (t_obj->contains("queue_timeout")) {
      ASSIGN_OR_RETURN(
          spec.queue_timeout_seconds,
          GetDuration((*t_obj)["queue_timeout"], "workflow.timeout.queue_timeout", src));
    }
  }
  if (!wf.contains("priority")) return OkStatus();
  ASSIGN_OR_RETURN(std::string p, GetString(wf["priority"], "workflow.priority", src));
  std::string upper = p;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "HIGH") {
    spec.priority = Priority::kHigh;
  } else if (upper == "NORMAL") {
    spec.priority = Priority::kNormal;
  } else if (upper == "LOW") {
    spec.priority = Priority::kLow;
  } else {
    return FieldError(src, "workflow.priority",
                      "expected HIGH, NORMAL or LOW, got \"" + p + "\"" +
                          DidYouMean(upper, {"HIGH", "NORMAL", "LOW"}));
  }
  return OkStatus();
}

// workflow.node_pools, queue, parallelism, backoff_limit and labels.
Status ParseSchedulingFields(const json& wf, const Source& src, WorkflowSpec& spec) {
  if (wf.contains("node_pools")) {
    ASSIGN_OR_RETURN(spec.node_pools, GetNodePools(wf["node_pools"], src));
  }
  if (wf.contains("queue")) {
    ASSIGN_OR_RETURN(spec.queue, GetString(wf["queue"], "workflow.queue", src));
    RETURN_IF_ERROR(CheckName(spec.queue, "workflow.queue", src));
    spec.queue_origin = Prefix(src, "workflow.queue") + "workflow.queue";
  }
  if (wf.contains("parallelism")) {
    ASSIGN_OR_RETURN(spec.parallelism, GetCount(wf["parallelism"], "workflow.parallelism", 1, src));
  }
  if (wf.contains("backoff_limit")) {
    ASSIGN_OR_RETURN(spec.backoff_limit,
                     GetCount(wf["backoff_limit"], "workflow.backoff_limit", 0, src));
  }
  if (wf.contains("labels") && !wf["labels"].is_null()) {
    ASSIGN_OR_RETURN(auto* l_obj, RequireObject(wf["labels"], "workflow.labels", src));
    for (const auto& [k, v] : l_obj->items()) {
      ASSIGN_OR_RETURN(std::string s, GetString(v, codec::FieldPath("workflow.labels", k), src));
      spec.labels[k] = s;
    }
  }
  return OkStatus();
}

}  // namespace

Result<WorkflowSpec> ParseWorkflow(std::string_view text, std::string_view file_name,
                                   const std::map<std::string, std::string>& set_values) {
  std::string rendered;
  internal::TextMapping mapping(text);
  Source src{file_name};
  ASSIGN_OR_RETURN(std::vector<codec::YamlDocument> docs,
                   internal::ReadDocuments(text, file_name, set_values, mapping, rendered, src));
  src.map = &docs[0].source_map;
  const json& root = docs[0].value;
  ASSIGN_OR_RETURN(auto* top, RequireObject(root, "(top level)", src));
  RETURN_IF_ERROR(CheckFields(*top, "", {"workflow", "default-values", "version"}, src));
  if (!top->contains("workflow")) {
    return InvalidArgumentError(Prefix(src, "") + "missing top-level field \"workflow\"");
  }
  ASSIGN_OR_RETURN(auto* wf, RequireObject((*top)["workflow"], "workflow", src));
  RETURN_IF_ERROR(
      CheckFields(*wf, "workflow",
                  {"name", "resources", "tasks", "groups", "timeout", "priority", "node_pools",
                   "queue", "labels", "pool", "backend", "parallelism", "backoff_limit"},
                  src));
  WorkflowSpec spec;
  if (!wf->contains("name")) return FieldError(src, "workflow", "missing required field name");
  ASSIGN_OR_RETURN(spec.name, GetString((*wf)["name"], "workflow.name", src));
  RETURN_IF_ERROR(CheckName(spec.name, "workflow.name", src));
  RETURN_IF_ERROR(ParseResources(*wf, src, spec));
  RETURN_IF_ERROR(ParseGroups(*wf, src, spec));
  RETURN_IF_ERROR(CheckNamesAndResources(spec, src));
  RETURN_IF_ERROR(ParseTimeoutAndPriority(*wf, src, spec));
  RETURN_IF_ERROR(ParseSchedulingFields(*wf, src, spec));
  // Last: `wf` and the pointers into it are not used after this.
  spec.document = std::move(docs[0].value["workflow"]);
  return spec;
}

Result<std::vector<std::string>> ParseNodePoolList(std::string_view text) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view part = text.substr(start, comma - start);
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.front()))) {
      part.remove_prefix(1);
    }
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.back()))) {
      part.remove_suffix(1);
    }
    if (part.empty()) {
      return InvalidArgumentError("node pools \"" + std::string(text) +
                                  "\": expected names separated by commas, found an empty name");
    }
    if (!seen.insert(std::string(part)).second) {
      return InvalidArgumentError("node pool \"" + std::string(part) + "\" named twice");
    }
    names.emplace_back(part);
    start = comma + 1;
  }
  return names;
}

}  // namespace gpupool::submit
