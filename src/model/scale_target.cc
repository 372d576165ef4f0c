#include "model/scale_target.h"

#include <algorithm>
#include <array>
#include <vector>

#include "common/strings.h"
#include "model/match.h"

namespace gpupool::model {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::array<ScalableKind, 2> kScalableKinds = {{
    {"machine.openshift.io/v1beta1", "MachineSet", "machinesets",
     "machine.openshift.io/delete-machine", "machine.openshift.io/machine", true},
    {"cluster.x-k8s.io/v1beta1", "MachineDeployment", "machinedeployments",
     "cluster.x-k8s.io/delete-machine", "cluster.x-k8s.io/machine", false},
}};

Result<std::string> RequiredName(const Json& value, const std::string& path, bool dns_name) {
  if (!value.is_string() || value.get<std::string>().empty()) {
    return InvalidArgumentError(path + ": expected a non-empty string");
  }
  std::string text = value.get<std::string>();
  if (dns_name && !IsDnsSubdomain(text)) {
    return InvalidArgumentError(path + ": \"" + text +
                                "\" is not a Kubernetes name (lower-case letters, digits, '-' and "
                                "'.', starting and ending with a letter or digit)");
  }
  return text;
}

std::string SupportedKinds() {
  std::vector<std::string> pairs;
  for (const ScalableKind& k : kScalableKinds) {
    pairs.push_back(std::string(k.api_version) + " " + std::string(k.kind));
  }
  return Join(pairs, " or ");
}

}  // namespace

const ScalableKind* FindScalableKind(const ScaleTarget& target) {
  for (const ScalableKind& k : kScalableKinds) {
    if (k.api_version == target.api_version && k.kind == target.kind) return &k;
  }
  return nullptr;
}

Result<ScaleTarget> ScaleTargetFromJson(const Json& value, std::string_view field_path) {
  const std::string base(field_path);
  if (!value.is_object()) {
    return InvalidArgumentError(base +
                                ": expected an object with api_version, kind, namespace "
                                "and name, got " +
                                std::string(value.type_name()));
  }
  static const std::vector<std::string> kFields = {"api_version", "kind", "namespace", "name"};
  for (const auto& [key, v] : value.items()) {
    if (std::find(kFields.begin(), kFields.end(), key) == kFields.end()) {
      return InvalidArgumentError(base + "." + key + ": unknown field" + DidYouMean(key, kFields) +
                                  "; expected one of " + Join(kFields, ", "));
    }
  }
  for (const std::string& key : kFields) {
    if (!value.contains(key)) return InvalidArgumentError(base + "." + key + ": required");
  }
  ScaleTarget target;
  ASSIGN_OR_RETURN(target.api_version, RequiredName(value["api_version"], base + ".api_version",
                                                    /*dns_name=*/false));
  ASSIGN_OR_RETURN(target.kind, RequiredName(value["kind"], base + ".kind", false));
  ASSIGN_OR_RETURN(target.namespace_name, RequiredName(value["namespace"], base + ".namespace",
                                                       /*dns_name=*/true));
  ASSIGN_OR_RETURN(target.name, RequiredName(value["name"], base + ".name", true));
  if (FindScalableKind(target) == nullptr) {
    return InvalidArgumentError(base + ": " + target.api_version + " " + target.kind +
                                " is not a resource gpupool scales; expected " + SupportedKinds());
  }
  return target;
}

Json ScaleTargetToJson(const ScaleTarget& target) {
  return Json{{"api_version", target.api_version},
              {"kind", target.kind},
              {"namespace", target.namespace_name},
              {"name", target.name}};
}

std::string ScaleTargetPath(const ScaleTarget& target) {
  const ScalableKind* kind = FindScalableKind(target);
  const std::string plural = kind != nullptr ? std::string(kind->plural) : "";
  return "/apis/" + target.api_version + "/namespaces/" + target.namespace_name + "/" + plural +
         "/" + target.name;
}

std::string MachinePath(const ScaleTarget& target, std::string_view machine_namespace,
                        std::string_view machine) {
  return "/apis/" + target.api_version + "/namespaces/" + std::string(machine_namespace) +
         "/machines/" + std::string(machine);
}

std::string DescribeScaleTarget(const ScaleTarget& target) {
  return target.kind + " " + target.namespace_name + "/" + target.name;
}

}  // namespace gpupool::model
