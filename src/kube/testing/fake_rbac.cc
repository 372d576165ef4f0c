#include "kube/testing/fake_rbac.h"

#include <algorithm>

#include "codec/yaml_reader.h"
#include "model/input_file.h"

namespace gpupool::kube::fake {
namespace {

using Json = nlohmann::ordered_json;

Result<std::vector<std::string>> Strings(const Json& rule, const char* field,
                                         const std::string& path) {
  std::vector<std::string> out;
  auto it = rule.find(field);
  if (it == rule.end() || it->is_null()) return out;
  if (!it->is_array()) {
    return InvalidArgumentError(path + "." + field + ": expected a list of strings");
  }
  for (const Json& value : *it) {
    if (!value.is_string()) {
      return InvalidArgumentError(path + "." + field + ": expected a list of strings");
    }
    out.push_back(value.get<std::string>());
  }
  return out;
}

bool Names(const std::vector<std::string>& list, const std::string& value) {
  return std::any_of(list.begin(), list.end(),
                     [&](const std::string& item) { return item == "*" || item == value; });
}

// "pods/*" grants every subresource of pods, as the authorizer reads it.
bool NamesResource(const std::vector<std::string>& list, const std::string& resource) {
  if (Names(list, resource)) return true;
  auto slash = resource.find('/');
  if (slash == std::string::npos) return false;
  std::string any_sub = resource.substr(0, slash) + "/*";
  return std::find(list.begin(), list.end(), any_sub) != list.end();
}

}  // namespace

Result<ClusterRole> ClusterRole::Load(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, model::ReadFile(path));
  return Parse(text, path);
}

Result<ClusterRole> ClusterRole::Parse(std::string_view text, const std::string& source) {
  ASSIGN_OR_RETURN(auto docs, codec::ParseJsonOrYamlDocuments(text, source));
  for (const Json& doc : docs) {
    if (!doc.is_object() || doc.value("kind", "") != "ClusterRole") continue;
    ClusterRole role;
    if (doc.contains("metadata") && doc["metadata"].is_object()) {
      role.name_ = doc["metadata"].value("name", "");
    }
    auto rules = doc.find("rules");
    if (rules == doc.end() || !rules->is_array()) {
      return InvalidArgumentError(source + ": ClusterRole " + role.name_ +
                                  ": rules: expected a list");
    }
    for (size_t i = 0; i < rules->size(); ++i) {
      const Json& rule = (*rules)[i];
      const std::string path = source + ": rules[" + std::to_string(i) + "]";
      if (!rule.is_object()) return InvalidArgumentError(path + ": expected an object");
      PolicyRule parsed;
      ASSIGN_OR_RETURN(parsed.verbs, Strings(rule, "verbs", path));
      ASSIGN_OR_RETURN(parsed.api_groups, Strings(rule, "apiGroups", path));
      ASSIGN_OR_RETURN(parsed.resources, Strings(rule, "resources", path));
      ASSIGN_OR_RETURN(parsed.resource_names, Strings(rule, "resourceNames", path));
      if (rule.contains("nonResourceURLs")) continue;  // not for resource requests
      if (parsed.verbs.empty()) return InvalidArgumentError(path + ".verbs: expected verbs");
      role.rules_.push_back(std::move(parsed));
    }
    return role;
  }
  return InvalidArgumentError(source + ": no ClusterRole in the file");
}

bool ClusterRole::Allows(const RbacRequest& request) const {
  return std::any_of(rules_.begin(), rules_.end(), [&](const PolicyRule& rule) {
    if (!Names(rule.verbs, request.verb) || !Names(rule.api_groups, request.group) ||
        !NamesResource(rule.resources, request.resource)) {
      return false;
    }
    return rule.resource_names.empty() ||
           (!request.name.empty() && Names(rule.resource_names, request.name));
  });
}

std::string ForbiddenMessage(const RbacRequest& request, const std::string& namespace_,
                             const std::string& user) {
  std::string base = request.resource.substr(0, request.resource.find('/'));
  std::string subject = request.name.empty() ? base : base + " \"" + request.name + "\"";
  std::string where =
      namespace_.empty() ? "at the cluster scope" : "in the namespace \"" + namespace_ + "\"";
  return subject + " is forbidden: User \"" + user + "\" cannot " + request.verb + " resource \"" +
         request.resource + "\" in API group \"" + request.group + "\" " + where;
}

}  // namespace gpupool::kube::fake
