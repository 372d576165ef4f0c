#include "submit/workflow.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "common/strings.h"
#include "model/duration.h"
#include "model/json_io.h"
#include "model/quantity.h"

namespace gpupool::submit {
namespace {

using json = nlohmann::ordered_json;

std::string Prefix(std::string_view file_name) {
  return file_name.empty() ? std::string() : std::string(file_name) + ": ";
}

Status FieldError(std::string_view file_name, std::string_view path, std::string_view what) {
  return InvalidArgumentError(Prefix(file_name) + std::string(path) + ": " + std::string(what));
}

Status CheckFields(const json& object, std::string_view path,
                   const std::vector<std::string>& allowed, std::string_view file_name) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return FieldError(
          file_name, model::FieldPath(path, key),
          "unknown field" + DidYouMean(key, allowed) + "; expected one of " + Join(allowed, ", "));
    }
  }
  return OkStatus();
}

Result<const json*> RequireObject(const json& value, std::string_view path,
                                  std::string_view file_name) {
  if (!value.is_object()) {
    return FieldError(file_name, path, "expected an object, got " + model::JsonTypeName(value));
  }
  return &value;
}

Result<std::string> GetString(const json& value, std::string_view path,
                              std::string_view file_name) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  if (value.is_number()) return value.dump();
  return FieldError(file_name, path, "expected a string, got " + model::JsonTypeName(value));
}

Result<bool> GetBool(const json& value, std::string_view path, std::string_view file_name) {
  if (value.is_boolean()) return value.get<bool>();
  return FieldError(file_name, path, "expected true or false, got " + model::JsonTypeName(value));
}

Result<std::vector<std::string>> GetStringList(const json& value, std::string_view path,
                                               std::string_view file_name) {
  std::vector<std::string> out;
  if (value.is_null()) return out;
  if (value.is_string()) return std::vector<std::string>{value.get<std::string>()};
  if (!value.is_array()) {
    return FieldError(file_name, path,
                      "expected a list of strings, got " + model::JsonTypeName(value));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    ASSIGN_OR_RETURN(std::string s, GetString(value[i], model::IndexPath(path, i), file_name));
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::optional<int64_t>> GetDuration(const json& value, std::string_view path,
                                           std::string_view file_name) {
  if (value.is_null()) return std::optional<int64_t>();
  if (value.is_number_integer()) {
    if (value.get<int64_t>() < 0) return FieldError(file_name, path, "must not be negative");
    return std::optional<int64_t>(value.get<int64_t>());
  }
  if (value.is_number()) {
    double d = value.get<double>();
    if (d < 0) return FieldError(file_name, path, "must not be negative");
    return std::optional<int64_t>(static_cast<int64_t>(d + 0.999999));
  }
  if (!value.is_string()) {
    return FieldError(file_name, path,
                      "expected a duration such as 2h or 1h30m, got " + model::JsonTypeName(value));
  }
  std::string text = value.get<std::string>();
  if (model::IsEmptyDuration(text)) return std::optional<int64_t>();
  auto seconds = model::ParseDurationSeconds(text);
  if (!seconds.ok()) return FieldError(file_name, path, seconds.status().message());
  return std::optional<int64_t>(*seconds);
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

Status CheckName(std::string_view name, std::string_view path, std::string_view file_name) {
  if (!ValidName(name)) {
    return FieldError(file_name, path,
                      "invalid name \"" + std::string(name) +
                          "\": expected 1-63 letters, digits, '-', '_' or '.', starting and "
                          "ending with a letter or digit");
  }
  return OkStatus();
}

Status CheckQuantity(const json& value, std::string_view path, std::string_view file_name) {
  if (value.is_null()) return OkStatus();
  auto q = model::ParseQuantityJson(value, path);
  if (!q.ok()) return InvalidArgumentError(Prefix(file_name) + q.status().message());
  if (q->MilliValue() < 0) return FieldError(file_name, path, "must not be negative");
  return OkStatus();
}

Result<ResourceSpec> ParseResource(const std::string& name, const json& value,
                                   std::string_view path, std::string_view file_name) {
  ResourceSpec r;
  r.name = name;
  RETURN_IF_ERROR(CheckName(name, path, file_name));
  if (value.is_null()) return r;
  ASSIGN_OR_RETURN(auto* obj, RequireObject(value, path, file_name));
  RETURN_IF_ERROR(CheckFields(
      *obj, path, {"cpu", "gpu", "memory", "storage", "platform", "nodesExcluded"}, file_name));
  for (const auto& [key, v] : obj->items()) {
    std::string field = model::FieldPath(path, key);
    if (key == "cpu" || key == "gpu" || key == "memory" || key == "storage") {
      RETURN_IF_ERROR(CheckQuantity(v, field, file_name));
      if (key == "gpu" && v.is_number() && !v.is_number_integer()) {
        return FieldError(file_name, field, "expected a whole number of GPUs");
      }
      (key == "cpu" ? r.cpu : key == "gpu" ? r.gpu : key == "memory" ? r.memory : r.storage) = v;
    } else if (key == "platform") {
      if (!v.is_null()) {
        ASSIGN_OR_RETURN(r.platform, GetString(v, field, file_name));
      }
    } else if (key == "nodesExcluded") {
      ASSIGN_OR_RETURN(r.nodes_excluded, GetStringList(v, field, file_name));
    }
  }
  return r;
}

Result<json> ParseEnv(const json& value, std::string_view path, std::string_view file_name) {
  json env = json::array();
  if (value.is_null()) return env;
  if (value.is_object()) {
    for (const auto& [key, v] : value.items()) {
      ASSIGN_OR_RETURN(std::string s, GetString(v, model::FieldPath(path, key), file_name));
      env.push_back(json{{"name", key}, {"value", s}});
    }
    return env;
  }
  if (!value.is_array()) {
    return FieldError(
        file_name, path,
        "expected a map or a list of {name, value}, got " + model::JsonTypeName(value));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    std::string item_path = model::IndexPath(path, i);
    const json& item = value[i];
    if (!item.is_object() || !item.contains("name") || !item["name"].is_string()) {
      return FieldError(file_name, item_path, "expected {name, value}");
    }
    json copy = item;
    if (copy.contains("value") && !copy["value"].is_string()) {
      ASSIGN_OR_RETURN(std::string s,
                       GetString(copy["value"], model::FieldPath(item_path, "value"), file_name));
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

Result<json> ParseMounts(const json& value, std::string_view path, std::string_view file_name) {
  json mounts = json::array();
  if (value.is_null()) return mounts;
  if (!value.is_array()) {
    return FieldError(file_name, path, "expected a list, got " + model::JsonTypeName(value));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    std::string item_path = model::IndexPath(path, i);
    const json& item = value[i];
    if (item.is_string()) {
      std::string text = item.get<std::string>();
      auto parts = Split(text, ':');
      if (parts.size() < 2 || parts[0].empty() || parts[1].empty()) {
        return FieldError(file_name, item_path,
                          "expected \"host_path:container_path\", got \"" + text + "\"");
      }
      json m{{"name", MountName(parts[0])}, {"mountPath", parts[1]}, {"hostPath", parts[0]}};
      if (parts.size() > 2 && parts[2] == "ro") m["readOnly"] = true;
      mounts.push_back(std::move(m));
    } else if (item.is_object() && item.contains("mountPath") && item["mountPath"].is_string()) {
      mounts.push_back(item);
    } else {
      return FieldError(file_name, item_path,
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

Result<TaskSpec> ParseTask(const json& value, std::string_view path, std::string_view file_name) {
  ASSIGN_OR_RETURN(auto* obj, RequireObject(value, path, file_name));
  RETURN_IF_ERROR(CheckFields(*obj, path, kTaskFields, file_name));
  TaskSpec task;
  if (!obj->contains("name")) return FieldError(file_name, path, "missing required field name");
  for (const auto& [key, v] : obj->items()) {
    std::string field = model::FieldPath(path, key);
    if (key == "name") {
      ASSIGN_OR_RETURN(task.name, GetString(v, field, file_name));
      RETURN_IF_ERROR(CheckName(task.name, field, file_name));
    } else if (key == "image") {
      ASSIGN_OR_RETURN(task.image, GetString(v, field, file_name));
    } else if (key == "command") {
      ASSIGN_OR_RETURN(task.command, GetStringList(v, field, file_name));
    } else if (key == "args") {
      ASSIGN_OR_RETURN(task.args, GetStringList(v, field, file_name));
    } else if (key == "env" || key == "environment") {
      ASSIGN_OR_RETURN(json env, ParseEnv(v, field, file_name));
      for (auto& e : env) task.env.push_back(std::move(e));
    } else if (key == "resource") {
      ASSIGN_OR_RETURN(task.resource, GetString(v, field, file_name));
    } else if (key == "privileged") {
      ASSIGN_OR_RETURN(task.privileged, GetBool(v, field, file_name));
    } else if (key == "hostNetwork") {
      ASSIGN_OR_RETURN(task.host_network, GetBool(v, field, file_name));
    } else if (key == "volumeMounts") {
      ASSIGN_OR_RETURN(task.volume_mounts, ParseMounts(v, field, file_name));
    } else if (key == "exitActions") {
      if (!v.is_null() && !v.is_object()) {
        return FieldError(file_name, field, "expected a map ACTION: \"codes\"");
      }
      for (const auto& [action, codes] : v.items()) {
        std::string upper = action;
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        if (upper != "COMPLETE" && upper != "FAIL" && upper != "RESCHEDULE") {
          return FieldError(file_name, model::FieldPath(field, action),
                            "unknown exit action; expected COMPLETE, FAIL or RESCHEDULE" +
                                DidYouMean(upper, {"COMPLETE", "FAIL", "RESCHEDULE"}));
        }
        if (!codes.is_string() && !codes.is_number_integer()) {
          return FieldError(file_name, model::FieldPath(field, action),
                            "expected exit codes such as \"1,3-5\"");
        }
      }
      task.exit_actions = v;
    } else if (key == "sim_duration") {
      ASSIGN_OR_RETURN(task.sim_duration_seconds, GetDuration(v, field, file_name));
    } else if (key == "sim_exit_code") {
      if (!v.is_number_integer()) return FieldError(file_name, field, "expected an integer");
      task.sim_exit_code = v.get<int>();
    } else if (key == "lead") {
      ASSIGN_OR_RETURN(task.lead, GetBool(v, field, file_name));
    }
    // files, inputs, outputs, credentials, cacheSize: accepted, kept in the document only.
  }
  if (task.image.empty()) return FieldError(file_name, path, "missing required field image");
  return task;
}

Result<std::vector<TaskSpec>> ParseTasks(const json& value, std::string_view path,
                                         std::string_view file_name) {
  if (!value.is_array() || value.empty()) {
    return FieldError(file_name, path, "expected a non-empty list of tasks");
  }
  std::vector<TaskSpec> tasks;
  for (size_t i = 0; i < value.size(); ++i) {
    ASSIGN_OR_RETURN(TaskSpec t, ParseTask(value[i], model::IndexPath(path, i), file_name));
    tasks.push_back(std::move(t));
  }
  return tasks;
}

std::string ScalarText(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  return value.dump();
}

bool IsProtectedVariable(std::string_view name) {
  return name == "uuid" || name == "workflow_id" || name == "output" ||
         StartsWith(name, "input:") || StartsWith(name, "host:") || StartsWith(name, "output:");
}

// The `default-values:` block of a file whose templated text is not valid YAML yet.
std::string ExtractDefaultValuesBlock(std::string_view text) {
  std::string out;
  bool inside = false;
  for (const std::string& line : Split(text, '\n')) {
    if (!inside) {
      if (StartsWith(line, "default-values:")) {
        inside = true;
        out += line + "\n";
      }
      continue;
    }
    if (!line.empty() && line[0] != ' ' && line[0] != '\t' && line[0] != '#') break;
    out += line + "\n";
  }
  return out;
}

Result<std::map<std::string, std::string>> DefaultValues(std::string_view text,
                                                         std::string_view file_name) {
  std::map<std::string, std::string> values;
  json defaults;
  auto docs = model::ParseYamlDocuments(text, file_name);
  if (docs.ok()) {
    if (!docs->empty() && (*docs)[0].value.is_object() &&
        (*docs)[0].value.contains("default-values")) {
      defaults = (*docs)[0].value["default-values"];
    }
  } else {
    std::string block = ExtractDefaultValuesBlock(text);
    if (block.empty()) return values;
    auto block_docs = model::ParseYamlDocuments(block, file_name);
    if (!block_docs.ok() || block_docs->empty()) return values;
    defaults = (*block_docs)[0].value["default-values"];
  }
  if (defaults.is_null()) return values;
  if (!defaults.is_object()) {
    return FieldError(file_name, "default-values", "expected a map of name: value");
  }
  for (const auto& [key, v] : defaults.items()) values[key] = ScalarText(v);
  return values;
}

// Replaces `{{ name }}` in the text; undefined names (other than OSMO's protected ones) fail
// with their line.
Result<std::string> Substitute(std::string_view text, std::string_view file_name,
                               const std::map<std::string, std::string>& values) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  int line = 1;
  while (pos < text.size()) {
    size_t open = text.find("{{", pos);
    if (open == std::string_view::npos) {
      out.append(text.substr(pos));
      break;
    }
    line += static_cast<int>(std::count(text.begin() + pos, text.begin() + open, '\n'));
    size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos) {
      out.append(text.substr(pos));
      break;
    }
    std::string name(Trim(text.substr(open + 2, close - open - 2)));
    out.append(text.substr(pos, open - pos));
    auto it = values.find(name);
    if (it != values.end()) {
      out += it->second;
    } else if (IsProtectedVariable(name)) {
      out.append(text.substr(open, close + 2 - open));
    } else {
      std::vector<std::string> names;
      for (const auto& [k, v] : values) names.push_back(k);
      return InvalidArgumentError(
          Prefix(file_name) + "line " + std::to_string(line) + ": undefined variable \"" + name +
          "\"" + DidYouMean(name, names) + "; define it under default-values or pass --set " +
          name + "=VALUE");
    }
    line += static_cast<int>(std::count(text.begin() + open, text.begin() + close, '\n'));
    pos = close + 2;
  }
  return out;
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

Result<WorkflowSpec> ParseWorkflow(std::string_view text, std::string_view file_name,
                                   const std::map<std::string, std::string>& set_values) {
  std::vector<json> docs;
  // Without a "{{" there is nothing to substitute: the text is parsed once, for its
  // default-values and the workflow alike. (When it does not parse, the full path below reports
  // the same errors as before.)
  bool parsed = false;
  if (text.find("{{") == std::string_view::npos) {
    auto once = model::ParseJsonOrYamlDocuments(text, file_name);
    if (once.ok()) {
      docs = std::move(once).value();
      if (!docs.empty() && docs[0].is_object()) {
        auto it = docs[0].find("default-values");
        if (it != docs[0].end() && !it->is_null() && !it->is_object()) {
          return FieldError(file_name, "default-values", "expected a map of name: value");
        }
      }
      parsed = true;
    }
  }
  if (!parsed) {
    ASSIGN_OR_RETURN(auto values, DefaultValues(text, file_name));
    for (const auto& [k, v] : set_values) values[k] = v;
    ASSIGN_OR_RETURN(std::string rendered, Substitute(text, file_name, values));
    ASSIGN_OR_RETURN(docs, model::ParseJsonOrYamlDocuments(rendered, file_name));
  }
  if (docs.size() != 1) {
    return InvalidArgumentError(Prefix(file_name) + "expected one document, found " +
                                std::to_string(docs.size()));
  }
  const json& root = docs[0];
  ASSIGN_OR_RETURN(auto* top, RequireObject(root, "(top level)", file_name));
  RETURN_IF_ERROR(CheckFields(*top, "", {"workflow", "default-values", "version"}, file_name));
  if (!top->contains("workflow")) {
    return InvalidArgumentError(Prefix(file_name) + "missing top-level field \"workflow\"");
  }
  const json& wf = (*top)["workflow"];
  ASSIGN_OR_RETURN(auto* wf_obj, RequireObject(wf, "workflow", file_name));
  RETURN_IF_ERROR(CheckFields(
      *wf_obj, "workflow",
      {"name", "resources", "tasks", "groups", "timeout", "priority", "labels", "pool", "backend"},
      file_name));
  WorkflowSpec spec;
  if (!wf_obj->contains("name")) {
    return FieldError(file_name, "workflow", "missing required field name");
  }
  ASSIGN_OR_RETURN(spec.name, GetString((*wf_obj)["name"], "workflow.name", file_name));
  RETURN_IF_ERROR(CheckName(spec.name, "workflow.name", file_name));

  if (wf_obj->contains("resources")) {
    const json& res = (*wf_obj)["resources"];
    ASSIGN_OR_RETURN(auto* res_obj, RequireObject(res, "workflow.resources", file_name));
    for (const auto& [name, value] : res_obj->items()) {
      ASSIGN_OR_RETURN(
          ResourceSpec r,
          ParseResource(name, value, model::FieldPath("workflow.resources", name), file_name));
      spec.resources.push_back(std::move(r));
    }
  }

  bool has_tasks = wf_obj->contains("tasks");
  bool has_groups = wf_obj->contains("groups");
  if (has_tasks == has_groups) {
    return FieldError(file_name, "workflow", "expected exactly one of tasks or groups");
  }
  if (has_tasks) {
    ASSIGN_OR_RETURN(auto tasks, ParseTasks((*wf_obj)["tasks"], "workflow.tasks", file_name));
    for (auto& t : tasks) {
      GroupSpec g;
      g.name = t.name + "-group";
      g.tasks.push_back(std::move(t));
      spec.groups.push_back(std::move(g));
    }
  } else {
    const json& groups = (*wf_obj)["groups"];
    if (!groups.is_array() || groups.empty()) {
      return FieldError(file_name, "workflow.groups", "expected a non-empty list of groups");
    }
    for (size_t i = 0; i < groups.size(); ++i) {
      std::string path = model::IndexPath("workflow.groups", i);
      ASSIGN_OR_RETURN(auto* g_obj, RequireObject(groups[i], path, file_name));
      RETURN_IF_ERROR(CheckFields(*g_obj, path, {"name", "tasks", "barrier", "ignoreNonleadStatus"},
                                  file_name));
      if (!g_obj->contains("name"))
        return FieldError(file_name, path, "missing required field name");
      GroupSpec g;
      ASSIGN_OR_RETURN(g.name, GetString((*g_obj)["name"], path + ".name", file_name));
      RETURN_IF_ERROR(CheckName(g.name, path + ".name", file_name));
      if (!g_obj->contains("tasks"))
        return FieldError(file_name, path, "missing required field tasks");
      ASSIGN_OR_RETURN(g.tasks, ParseTasks((*g_obj)["tasks"], path + ".tasks", file_name));
      spec.groups.push_back(std::move(g));
    }
  }

  // Unique names (case and -/_ insensitive), and every task's resource defined.
  std::set<std::string> group_keys, task_keys;
  for (const auto& g : spec.groups) {
    if (!group_keys.insert(NameKey(g.name)).second) {
      return FieldError(file_name, "workflow.groups", "duplicate group name \"" + g.name + "\"");
    }
    for (const auto& t : g.tasks) {
      if (!task_keys.insert(NameKey(t.name)).second) {
        return FieldError(file_name, "workflow", "duplicate task name \"" + t.name + "\"");
      }
      if (spec.FindResource(t.resource) == nullptr) {
        if (t.resource == "default") continue;  // an empty default resource uses pool defaults
        std::vector<std::string> names;
        for (const auto& r : spec.resources) names.push_back(r.name);
        return FieldError(file_name, "workflow",
                          "task \"" + t.name + "\" requests undefined resource \"" + t.resource +
                              "\"" + DidYouMean(t.resource, names));
      }
    }
  }

  if (wf_obj->contains("timeout")) {
    const json& timeout = (*wf_obj)["timeout"];
    if (!timeout.is_null()) {
      ASSIGN_OR_RETURN(auto* t_obj, RequireObject(timeout, "workflow.timeout", file_name));
      RETURN_IF_ERROR(
          CheckFields(*t_obj, "workflow.timeout", {"exec_timeout", "queue_timeout"}, file_name));
      if (t_obj->contains("exec_timeout")) {
        ASSIGN_OR_RETURN(
            spec.exec_timeout_seconds,
            GetDuration((*t_obj)["exec_timeout"], "workflow.timeout.exec_timeout", file_name));
      }
      if (t_obj->contains("queue_timeout")) {
        ASSIGN_OR_RETURN(
            spec.queue_timeout_seconds,
            GetDuration((*t_obj)["queue_timeout"], "workflow.timeout.queue_timeout", file_name));
      }
    }
  }
  if (wf_obj->contains("priority")) {
    ASSIGN_OR_RETURN(std::string p,
                     GetString((*wf_obj)["priority"], "workflow.priority", file_name));
    std::string upper = p;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (upper == "HIGH") {
      spec.priority = Priority::kHigh;
    } else if (upper == "NORMAL") {
      spec.priority = Priority::kNormal;
    } else if (upper == "LOW") {
      spec.priority = Priority::kLow;
    } else {
      return FieldError(file_name, "workflow.priority",
                        "expected HIGH, NORMAL or LOW, got \"" + p + "\"" +
                            DidYouMean(upper, {"HIGH", "NORMAL", "LOW"}));
    }
  }
  if (wf_obj->contains("labels")) {
    const json& labels = (*wf_obj)["labels"];
    if (!labels.is_null()) {
      ASSIGN_OR_RETURN(auto* l_obj, RequireObject(labels, "workflow.labels", file_name));
      for (const auto& [k, v] : l_obj->items()) {
        ASSIGN_OR_RETURN(std::string s,
                         GetString(v, model::FieldPath("workflow.labels", k), file_name));
        spec.labels[k] = s;
      }
    }
  }
  // Last: `wf` and the pointers into it are not used after this.
  spec.document = std::move(docs[0]["workflow"]);
  return spec;
}

}  // namespace gpupool::submit
