#include "config/kinds/shared.h"

#include <algorithm>
#include <cctype>

#include "codec/field_path.h"
#include "common/strings.h"
#include "config/json_fields.h"
#include "model/duration.h"

namespace gpupool::config::internal {

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
  std::string p = codec::FieldPath(path, key);
  if (!it->is_object()) return TypeError(p, "an object of variables", *it);
  for (const auto& [name, value] : it->items()) {
    if (!IsVariableName(name)) {
      return InvalidArgumentError(codec::FieldPath(p, name) +
                                  ": variable names must match [A-Za-z_][A-Za-z0-9_]*");
    }
    if (value.is_object() || value.is_array()) {
      return TypeError(codec::FieldPath(p, name), "a string, number, boolean or null", value);
    }
  }
  *out = *it;
  return OkStatus();
}

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
    return InvalidArgumentError(codec::FieldPath(path, key) + ": " + seconds.status().message() +
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

}  // namespace gpupool::config::internal

namespace gpupool::config {

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

}  // namespace gpupool::config
