// KubernetesBackend: machine pools whose nodes the cluster makes (ReadReplicas, SetReplicas; see
// backend.h and model/scale_target.h). Each call is one or a few requests on the loop's thread;
// the scheduling loop asks at most once per machine-pool interval.

#include "backend/kubernetes/kube_backend.h"
#include "common/strings.h"
#include "kube/api.h"

namespace gpupool::backend {
namespace {

using Json = nlohmann::ordered_json;

// The namespace and name of the Machine a node names in the kind's annotation ("ns/name" on
// OpenShift, "name" in the target's namespace on Cluster API).
Result<std::pair<std::string, std::string>> MachineOfNode(const Json& node,
                                                          const model::ScaleTarget& target) {
  const model::ScalableKind& kind = *model::FindScalableKind(target);
  const std::string name = node.value("metadata", Json::object()).value("name", "");
  const Json annotations =
      node.value("metadata", Json::object()).value("annotations", Json::object());
  const std::string key(kind.node_machine_annotation);
  if (!annotations.contains(key) || !annotations[key].is_string() ||
      annotations[key].get<std::string>().empty()) {
    return FailedPreconditionError("node " + name + " has no annotation " + key +
                                   " naming its Machine, so " + model::DescribeScaleTarget(target) +
                                   " cannot be told to remove it; not scaling down");
  }
  const std::string value = annotations[key].get<std::string>();
  if (!kind.node_annotation_has_namespace) return std::make_pair(target.namespace_name, value);
  const size_t slash = value.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == value.size()) {
    return FailedPreconditionError("node " + name + ": annotation " + key + " is \"" + value +
                                   "\"; expected NAMESPACE/NAME of its Machine");
  }
  return std::make_pair(value.substr(0, slash), value.substr(slash + 1));
}

}  // namespace

Result<int32_t> KubernetesBackend::ReadReplicas(const model::ScaleTarget& target) {
  if (model::FindScalableKind(target) == nullptr) return Backend::ReadReplicas(target);
  ASSIGN_OR_RETURN(kube::Response answer,
                   client_->Call({"GET", model::ScaleTargetPath(target) + "/scale"}));
  if (!answer.ok()) return kube::ApiError(answer, "scale of " + model::DescribeScaleTarget(target));
  const Json scale = answer.Json();
  const Json spec = scale.value("spec", Json::object());
  if (!spec.contains("replicas")) return 0;  // omitted when 0 (omitempty)
  if (!spec["replicas"].is_number_integer() || spec["replicas"].get<int64_t>() < 0) {
    return InternalError("scale of " + model::DescribeScaleTarget(target) +
                         ": spec.replicas is not a non-negative integer");
  }
  return static_cast<int32_t>(spec["replicas"].get<int64_t>());
}

Status KubernetesBackend::SetReplicas(const model::ScaleTarget& target, int32_t replicas,
                                      const std::vector<std::string>& remove_nodes) {
  const model::ScalableKind* kind = model::FindScalableKind(target);
  if (kind == nullptr) return Backend::SetReplicas(target, replicas, remove_nodes);
  // Every Machine is found before anything is written: a node that cannot be named leaves the
  // replicas as they are, rather than letting the controller remove a Machine of its choosing.
  std::vector<std::pair<std::string, std::string>> machines;
  for (const std::string& node_name : remove_nodes) {
    kube::ObjectPtr node = nodes_->Get(node_name);
    if (node == nullptr) {
      return FailedPreconditionError("node " + node_name + " is gone; not scaling down " +
                                     model::DescribeScaleTarget(target) + " for it");
    }
    ASSIGN_OR_RETURN(auto machine, MachineOfNode(*node, target));
    machines.push_back(std::move(machine));
  }
  for (const auto& [machine_namespace, machine] : machines) {
    Json patch = {{"metadata", {{"annotations", {{kind->delete_machine_annotation, "true"}}}}}};
    ASSIGN_OR_RETURN(kube::Response marked,
                     client_->Call({"PATCH", model::MachinePath(target, machine_namespace, machine),
                                    patch.dump(), "application/merge-patch+json"}));
    if (!marked.ok()) return kube::ApiError(marked, "Machine " + machine_namespace + "/" + machine);
  }
  Json scale = {{"spec", {{"replicas", replicas}}}};
  ASSIGN_OR_RETURN(kube::Response scaled,
                   client_->Call({"PATCH", model::ScaleTargetPath(target) + "/scale", scale.dump(),
                                  "application/merge-patch+json"}));
  if (!scaled.ok()) return kube::ApiError(scaled, "scale of " + model::DescribeScaleTarget(target));
  return OkStatus();
}

}  // namespace gpupool::backend
