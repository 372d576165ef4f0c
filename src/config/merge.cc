#include "config/merge.h"

#include <cctype>
#include <map>

#include "common/strings.h"
#include "config/json_fields.h"

namespace gpupool::config {

namespace {

// The NAME of "... uses undefined variable NAME ..." or "".
std::string UndefinedVariableOf(const Status& status) {
  constexpr std::string_view kMarker = "uses undefined variable ";
  const std::string& m = status.message();
  size_t at = m.find(kMarker);
  if (at == std::string::npos) return "";
  size_t begin = at + kMarker.size(), end = begin;
  while (end < m.size() && (std::isalnum(static_cast<unsigned char>(m[end])) || m[end] == '_')) {
    ++end;
  }
  return m.substr(begin, end - begin);
}

void MergeLists(Json& dst, const Json& src) {
  std::map<std::string, size_t> by_name;
  for (size_t i = 0; i < dst.size(); ++i) {
    const Json& e = dst[i];
    if (e.is_object()) {
      auto name = e.find("name");
      if (name != e.end()) by_name[internal::Dump(*name)] = i;  // last index wins
    }
  }
  std::vector<const Json*> queued;
  for (const Json& e : src) {
    if (e.is_object()) {
      auto name = e.find("name");
      if (name != e.end()) {
        auto it = by_name.find(internal::Dump(*name));
        if (it != by_name.end()) {
          MergeInto(dst[it->second], e);
          continue;
        }
      }
    }
    queued.push_back(&e);
  }
  for (const Json* e : queued) {
    bool duplicate = false;
    for (const Json& existing : dst) {
      if (existing == *e) {
        duplicate = true;
        break;
      }
    }
    if (!duplicate) dst.push_back(*e);
  }
}

}  // namespace

void MergeInto(Json& dst, const Json& src) {
  if (!src.is_object()) {
    dst = src;
    return;
  }
  if (!dst.is_object()) dst = Json::object();
  for (auto it = src.begin(); it != src.end(); ++it) {
    const Json& v = it.value();
    auto existing = dst.find(it.key());
    if (v.is_object()) {
      if (existing != dst.end() && existing->is_object()) {
        MergeInto(*existing, v);
      } else {
        dst[it.key()] = v;
      }
    } else if (v.is_array()) {
      if (existing != dst.end() && existing->is_array()) {
        MergeLists(*existing, v);
      } else {
        dst[it.key()] = v;
      }
    } else {
      dst[it.key()] = v;
    }
  }
}

Json Merged(const Json& a, const Json& b) {
  Json out = Json::object();
  MergeInto(out, a);
  MergeInto(out, b);
  return out;
}

Result<Json> MergeTemplates(const std::vector<std::string>& names, const ConfigSet& set) {
  Json out = Json::object();
  for (const std::string& name : names) {
    const PodTemplate* tmpl = set.FindPodTemplate(name);
    if (tmpl == nullptr) {
      return NotFoundError("pod template \"" + name + "\" does not exist" +
                           DidYouMean(name, ConfigNames(set, Kind::kPodTemplate)));
    }
    MergeInto(out, tmpl->body);
  }
  return out;
}

std::vector<std::string> PlatformTemplateNames(const Pool& pool, const Platform& platform) {
  std::vector<std::string> names = pool.common_pod_template;
  names.insert(names.end(), platform.override_pod_template.begin(),
               platform.override_pod_template.end());
  return names;
}

namespace {
Result<const Platform*> FindPlatformOrError(const Pool& pool, std::string_view platform) {
  const Platform* p = pool.FindPlatform(platform);
  if (p == nullptr) {
    std::vector<std::string> names = pool.PlatformNames();
    return NotFoundError("platform \"" + std::string(platform) + "\" does not exist in pool \"" +
                         pool.name + "\"" + DidYouMean(platform, names) + "; its platforms: " +
                         (names.empty() ? std::string("(none)") : Join(names, ", ")));
  }
  return p;
}
}  // namespace

Result<Json> PlatformTemplate(const Pool& pool, std::string_view platform, const ConfigSet& set) {
  ASSIGN_OR_RETURN(const Platform* p, FindPlatformOrError(pool, platform));
  Result<Json> merged = MergeTemplates(PlatformTemplateNames(pool, *p), set);
  if (!merged.ok()) {
    return merged.status().WithContext("pool \"" + pool.name + "\" platform \"" + p->name + "\"");
  }
  return merged;
}

Result<Json> RenderPlatformTemplate(const Json& merged,
                                    const std::vector<std::string>& template_names,
                                    const ConfigSet& set, const VariableMap& vars) {
  std::string label = template_names.empty() ? std::string("(none)") : Join(template_names, "+");
  Result<Json> rendered = Render(merged, vars, label);
  if (rendered.ok()) return rendered;
  // Find which template introduced the failing variable: the last one that fails alone on it.
  std::string variable = UndefinedVariableOf(rendered.status());
  if (variable.empty()) return rendered.status();
  for (auto it = template_names.rbegin(); it != template_names.rend(); ++it) {
    const PodTemplate* tmpl = set.FindPodTemplate(*it);
    if (tmpl == nullptr) continue;
    Result<Json> alone = Render(tmpl->body, vars, *it);
    if (!alone.ok() && UndefinedVariableOf(alone.status()) == variable) return alone.status();
  }
  return rendered.status();
}

Result<std::vector<NamedRule>> PlatformRules(const Pool& pool, std::string_view platform,
                                             const ConfigSet& set) {
  ASSIGN_OR_RETURN(const Platform* p, FindPlatformOrError(pool, platform));
  std::vector<std::string> names = pool.common_resource_validations;
  names.insert(names.end(), p->resource_validations.begin(), p->resource_validations.end());
  std::vector<NamedRule> out;
  for (const std::string& name : names) {
    const ValidationSet* vs = set.FindValidation(name);
    if (vs == nullptr) {
      return NotFoundError("pool \"" + pool.name + "\" platform \"" + p->name +
                           "\": resource validation \"" + name + "\" does not exist" +
                           DidYouMean(name, ConfigNames(set, Kind::kResourceValidation)));
    }
    for (size_t i = 0; i < vs->rules.size(); ++i) out.push_back(NamedRule{name, i, vs->rules[i]});
  }
  return out;
}

Result<Json> PoolVerboseJson(const Pool& pool, const ConfigSet& set) {
  Json out = PoolToJson(pool);
  for (const Platform& p : pool.platforms) {
    ASSIGN_OR_RETURN(Json merged, PlatformTemplate(pool, p.name, set));
    ASSIGN_OR_RETURN(std::vector<NamedRule> rules, PlatformRules(pool, p.name, set));
    Json& entry = out["platforms"][p.name];
    Json spec =
        merged.contains("spec") && merged["spec"].is_object() ? merged["spec"] : Json::object();
    entry["labels"] = spec.contains("nodeSelector") ? spec["nodeSelector"] : Json::object();
    entry["tolerations"] = spec.contains("tolerations") ? spec["tolerations"] : Json::array();
    entry["parsed_pod_template"] = std::move(merged);
    Json parsed_rules = Json::array();
    for (const NamedRule& r : rules) parsed_rules.push_back(ValidationRuleToJson(r.rule));
    entry["parsed_resource_validations"] = std::move(parsed_rules);
  }
  return out;
}

}  // namespace gpupool::config
