#include "config/variables.h"

#include <cctype>
#include <vector>

#include "codec/field_path.h"
#include "common/strings.h"
#include "config/json_fields.h"

namespace gpupool::config {

namespace {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Looks a name up in `primary`, then `secondary` (may be null).
struct Lookup {
  const VariableMap* primary = nullptr;
  const VariableMap* secondary = nullptr;

  const std::string* Find(std::string_view name) const {
    auto it = primary->find(name);
    if (it != primary->end()) return &it->second;
    if (secondary != nullptr) {
      auto it2 = secondary->find(name);
      if (it2 != secondary->end()) return &it2->second;
    }
    return nullptr;
  }

  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : *primary) out.push_back(k);
    if (secondary != nullptr) {
      for (const auto& [k, v] : *secondary) out.push_back(k);
    }
    return out;
  }
};

// Path segments kept as pointers during the walk; joined only for messages.
struct Segment {
  const std::string* key = nullptr;
  size_t index = 0;
};

std::string JoinPath(const std::vector<Segment>& segments) {
  std::string out;
  for (const Segment& s : segments) {
    if (s.key != nullptr) {
      if (!out.empty()) out += '.';
      out += *s.key;
    } else {
      out += "[" + std::to_string(s.index) + "]";
    }
  }
  return out;
}

// A field path, built only when an error message needs it.
struct PathRef {
  std::string_view literal;
  const std::vector<Segment>* segments = nullptr;
  std::string Str() const {
    return segments != nullptr ? JoinPath(*segments) : std::string(literal);
  }
};

std::string FieldWords(std::string_view what, const PathRef& path_ref) {
  std::string path = path_ref.Str();
  std::string out(what);
  if (!path.empty()) {
    if (!out.empty()) out += ' ';
    out += "field ";
    out += path;
  }
  return out;
}

// Renders `text` into `out`. On an undefined variable sets *undefined to its name.
Status RenderInto(std::string_view text, const Lookup& vars, std::string_view what,
                  const PathRef& path, std::string& out, std::string* undefined) {
  out.clear();
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find('{', pos);
    if (open == std::string_view::npos || open + 1 >= text.size()) {
      out.append(text.substr(pos));
      break;
    }
    char next = text[open + 1];
    if (next == '%' || next == '#') {
      return InvalidArgumentError(FieldWords(what, path) + ": Jinja statements and comments ({" +
                                  std::string(1, next) + " ... " + std::string(1, next) +
                                  "}) are not supported; use {{NAME}}");
    }
    if (next != '{') {
      out.append(text.substr(pos, open + 1 - pos));
      pos = open + 1;
      continue;
    }
    out.append(text.substr(pos, open - pos));
    size_t close = text.find("}}", open + 2);
    if (close == std::string_view::npos) {
      return InvalidArgumentError(FieldWords(what, path) + ": unclosed \"{{\" in \"" +
                                  std::string(text) + "\"");
    }
    std::string_view inner = Trim(text.substr(open + 2, close - open - 2));
    bool ident = !inner.empty() && IsIdentStart(inner[0]);
    for (char c : inner) ident = ident && IsIdentChar(c);
    if (!ident) {
      return InvalidArgumentError(FieldWords(what, path) + ": unsupported expression \"{{" +
                                  std::string(text.substr(open + 2, close - open - 2)) +
                                  "}}\" (only {{NAME}} is supported)");
    }
    const std::string* value = vars.Find(inner);
    if (value == nullptr) {
      if (undefined != nullptr) *undefined = std::string(inner);
      return InvalidArgumentError(FieldWords(what, path) + " uses undefined variable " +
                                  std::string(inner) + DidYouMean(inner, vars.Names()));
    }
    out.append(*value);
    pos = close + 2;
  }
  return OkStatus();
}

bool ToArray(const std::string& text, Json& out) {
  if (!StartsWith(text, "ARRAY:[") || !EndsWith(text, "]")) return false;
  std::string_view inner = std::string_view(text).substr(7, text.size() - 8);
  out = Json::array();
  if (Trim(inner).empty()) return true;
  for (const std::string& part : Split(inner, ',')) out.push_back(std::string(Trim(part)));
  return true;
}

Status RenderWalk(Json& node, const Lookup& vars, std::string_view what, std::vector<Segment>& path,
                  std::string& scratch) {
  switch (node.type()) {
    case Json::value_t::string: {
      const std::string& text = node.get_ref<const std::string&>();
      bool placeholders = text.find('{') != std::string::npos;
      bool array = StartsWith(text, "ARRAY:[");
      if (!placeholders && !array) return OkStatus();
      if (placeholders) {
        RETURN_IF_ERROR(RenderInto(text, vars, what, PathRef{{}, &path}, scratch, nullptr));
      } else {
        scratch = text;
      }
      Json list;
      if (ToArray(scratch, list)) {
        node = std::move(list);
      } else {
        node = scratch;
      }
      return OkStatus();
    }
    case Json::value_t::object:
      for (auto it = node.begin(); it != node.end(); ++it) {
        path.push_back(Segment{&it.key(), 0});
        Status s = RenderWalk(it.value(), vars, what, path, scratch);
        path.pop_back();
        if (!s.ok()) return s;
      }
      return OkStatus();
    case Json::value_t::array:
      for (size_t i = 0; i < node.size(); ++i) {
        path.push_back(Segment{nullptr, i});
        Status s = RenderWalk(node[i], vars, what, path, scratch);
        path.pop_back();
        if (!s.ok()) return s;
      }
      return OkStatus();
    default:
      return OkStatus();
  }
}

// "64Gi" -> ("64", "Gi"); nullopt when the text is not <number><letters>.
std::optional<std::pair<std::string, std::string>> SplitValueUnit(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  if (i == 0) return std::nullopt;
  std::string_view unit = text.substr(i);
  for (char c : unit) {
    if (!std::isalpha(static_cast<unsigned char>(c))) return std::nullopt;
  }
  return std::make_pair(std::string(text.substr(0, i)), std::string(unit));
}

}  // namespace

Result<std::optional<std::string>> VariableText(const Json& value, std::string_view path) {
  switch (value.type()) {
    case Json::value_t::null:
      return std::optional<std::string>();
    case Json::value_t::string:
      return std::optional<std::string>(value.get<std::string>());
    case Json::value_t::boolean:
      return std::optional<std::string>(value.get<bool>() ? "true" : "false");
    case Json::value_t::number_integer:
      return std::optional<std::string>(std::to_string(value.get<int64_t>()));
    case Json::value_t::number_unsigned:
      return std::optional<std::string>(std::to_string(value.get<uint64_t>()));
    case Json::value_t::number_float:
      return std::optional<std::string>(internal::Dump(value));
    default:
      return internal::TypeError(path, "a string, number, boolean or null", value);
  }
}

Status AddVariables(VariableMap& vars, const Json& object, std::string_view path) {
  if (object.is_null()) return OkStatus();
  if (!object.is_object()) return internal::TypeError(path, "an object of variables", object);
  for (auto it = object.begin(); it != object.end(); ++it) {
    const Json& value = it.value();
    if (value.is_string()) {  // the common case, without building a path
      vars.insert_or_assign(it.key(), value.get_ref<const std::string&>());
      continue;
    }
    ASSIGN_OR_RETURN(std::optional<std::string> text,
                     VariableText(value, value.is_structured() ? codec::FieldPath(path, it.key())
                                                               : std::string()));
    if (text.has_value()) {
      vars.insert_or_assign(it.key(), std::move(*text));
    } else {
      vars.erase(it.key());
    }
  }
  return OkStatus();
}

void AddBuiltins(VariableMap& vars, const TaskContext& task) {
  auto put = [&](std::string_view name, const std::string& value) {
    if (value.empty()) return;
    auto it = vars.find(name);
    if (it != vars.end()) {
      it->second = value;
    } else {
      vars.emplace(std::string(name), value);
    }
  };
  put("WF_ID", task.workflow_id);
  put("WF_UUID", task.workflow_uuid);
  put("WF_POOL", task.pool);
  put("WF_PLATFORM", task.platform);
  put("WF_TASK_NAME", task.task_name);
  put("WF_TASK_UUID", task.task_uuid);
  put("WF_GROUP_NAME", task.group_name);
  put("WF_GROUP_UUID", task.group_uuid);
  put("WF_SUBMITTED_BY", task.submitted_by);
  put("WF_PRIORITY", ToLower(task.priority));
  put("WF_RETRY_ID", task.retry_id);
  put("USER_CONTAINER_NAME", task.container_name);
}

Result<VariableMap> PlatformVariables(const Pool& pool, const Platform* platform) {
  VariableMap vars;
  Status s = AddVariables(vars, pool.common_default_variables, "common_default_variables");
  if (!s.ok()) return s.WithContext("pool \"" + pool.name + "\"");
  if (platform != nullptr) {
    s = AddVariables(vars, platform->default_variables, "default_variables");
    if (!s.ok()) return s.WithContext("pool \"" + pool.name + "\" platform " + platform->name);
  }
  return vars;
}

void OverlayTask(VariableMap& vars, const VariableMap& user_values, const TaskContext& task) {
  for (const auto& [name, value] : user_values) vars.insert_or_assign(name, value);
  AddBuiltins(vars, task);
  for (const char* base : {"USER_MEMORY", "USER_STORAGE"}) {
    auto it = vars.find(base);
    if (it == vars.end()) continue;
    auto parts = SplitValueUnit(it->second);
    if (!parts.has_value()) continue;
    vars.insert_or_assign(std::string(base) + "_VAL", parts->first);
    vars.insert_or_assign(std::string(base) + "_UNIT", parts->second);
  }
}

Result<VariableMap> ResolveVariables(const Pool& pool, const Platform* platform,
                                     const VariableMap& user_values, const TaskContext& task) {
  ASSIGN_OR_RETURN(VariableMap vars, PlatformVariables(pool, platform));
  OverlayTask(vars, user_values, task);
  return vars;
}

bool HasPlaceholders(std::string_view text) { return text.find("{{") != std::string_view::npos; }

Result<std::string> RenderString(std::string_view text, const VariableMap& vars,
                                 std::string_view what, std::string_view path) {
  std::string out;
  RETURN_IF_ERROR(RenderInto(text, Lookup{&vars, nullptr}, what, PathRef{path}, out, nullptr));
  return out;
}

namespace internal {
// Two-level lookup used by rule evaluation (task variables over node tokens).
Result<std::string> RenderString2(std::string_view text, const VariableMap& primary,
                                  const VariableMap& secondary, std::string_view what,
                                  std::string_view path) {
  std::string out;
  RETURN_IF_ERROR(
      RenderInto(text, Lookup{&primary, &secondary}, what, PathRef{path}, out, nullptr));
  return out;
}
}  // namespace internal

Status RenderInPlace(Json& tmpl, const VariableMap& vars, std::string_view template_name) {
  std::string what = "pod template \"" + std::string(template_name) + "\"";
  std::vector<Segment> path;
  std::string scratch;
  return RenderWalk(tmpl, Lookup{&vars, nullptr}, what, path, scratch);
}

Result<Json> Render(const Json& tmpl, const VariableMap& vars, std::string_view template_name) {
  Json out = tmpl;
  RETURN_IF_ERROR(RenderInPlace(out, vars, template_name));
  return out;
}

}  // namespace gpupool::config
