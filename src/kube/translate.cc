#include "kube/translate.h"

#include <algorithm>

#include "common/json_text.h"
#include "kube/json_read.h"

namespace gpupool::kube {
namespace {

using scheduler::kGangLabel;
using scheduler::kQueueLabel;
using Json = nlohmann::ordered_json;

bool NonEmptyArray(const Json& value) { return value.is_array() && !value.empty(); }

// The Ready condition's status ("True", "False", "Unknown"; "" when absent).
std::string ReadyStatus(const Json& node) {
  const Json& conditions = At(At(node, "status"), "conditions");
  if (!conditions.is_array()) return "";
  for (const Json& c : conditions) {
    if (Text(At(c, "type")) == "Ready") return Text(At(c, "status"));
  }
  return "";
}

bool HasHostPort(const Json& containers) {
  if (!containers.is_array()) return false;
  for (const Json& container : containers) {
    const Json& ports = At(container, "ports");
    if (!ports.is_array()) continue;
    for (const Json& port : ports) {
      const Json& host_port = At(port, "hostPort");
      if (host_port.is_number_integer() && host_port.get<int64_t>() > 0) return true;
    }
  }
  return false;
}

bool HasRequiredTerms(const Json& affinity) {
  return NonEmptyArray(At(affinity, "requiredDuringSchedulingIgnoredDuringExecution"));
}

}  // namespace

std::string_view PodKindName(PodKind kind) {
  switch (kind) {
    case PodKind::kFinished:
      return "finished";
    case PodKind::kBound:
      return "bound";
    case PodKind::kPending:
      return "pending";
    case PodKind::kGated:
      return "gated";
    case PodKind::kOtherScheduler:
      return "other-scheduler";
  }
  return "";
}

Result<model::Node> NodeFromApi(const Json& node) {
  return model::NodeFromJson(NodeAsScheduled(node, {}));
}

Json NodeAsScheduled(const Json& node, const model::ResourceList& taken) {
  Json out = node;
  if (!out["status"].is_object()) out["status"] = Json::object();
  Json& status = out["status"];
  const Json& base =
      status.contains("allocatable") ? status["allocatable"] : At(status, "capacity");
  if (!taken.empty() && base.is_object()) {
    Json left = base;
    for (auto& [name, value] : left.items()) {
      auto used = taken.find(name);
      if (used == taken.end()) continue;
      auto have = model::ParseQuantityJson(value, "status.allocatable." + name);
      if (!have.ok()) continue;  // NodeFromJson reports it
      model::Quantity rest = *have - used->second;
      value = (rest.MilliValue() < 0 ? model::Quantity() : rest).ToString();
    }
    status["allocatable"] = std::move(left);
    if (!out["metadata"].is_object()) out["metadata"] = Json::object();
    if (!out["metadata"]["annotations"].is_object()) {
      out["metadata"]["annotations"] = Json::object();
    }
    out["metadata"]["annotations"][kTakenByOthersAnnotation] =
        DumpJson(model::ResourceListToJson(taken));
  }
  std::string ready = ReadyStatus(node);
  if (ready != "True") {
    if (!out["spec"].is_object()) out["spec"] = Json::object();
    Json& taints = out["spec"]["taints"];
    if (!taints.is_array()) taints = Json::array();
    bool tainted = std::any_of(taints.begin(), taints.end(), [](const Json& t) {
      std::string key = Text(At(t, "key"));
      return key == "node.kubernetes.io/not-ready" || key == "node.kubernetes.io/unreachable";
    });
    if (!tainted) {
      taints.push_back({{"key", ready == "Unknown" ? "node.kubernetes.io/unreachable"
                                                   : "node.kubernetes.io/not-ready"},
                        {"effect", "NoSchedule"}});
    }
  }
  return out;
}

Result<model::ResourceList> TakenByPod(const Json& pod) {
  ASSIGN_OR_RETURN(model::ResourceList taken, model::PodRequestsFromJson(pod));
  taken["pods"] = model::Quantity::FromUnits(1);
  return taken;
}

std::string PodNodeName(const nlohmann::ordered_json& pod) {
  return Text(At(At(pod, "spec"), "nodeName"));
}

PodKind ClassifyPod(const Json& pod, std::string_view scheduler_name) {
  std::string phase = Text(At(At(pod, "status"), "phase"));
  if (phase == "Succeeded" || phase == "Failed") return PodKind::kFinished;
  const Json& spec = At(pod, "spec");
  if (!Text(At(spec, "nodeName")).empty()) return PodKind::kBound;
  std::string scheduler = Text(At(spec, "schedulerName"));
  if (scheduler.empty()) scheduler = "default-scheduler";
  if (scheduler != scheduler_name) return PodKind::kOtherScheduler;
  if (NonEmptyArray(At(spec, "schedulingGates"))) return PodKind::kGated;
  return PodKind::kPending;
}

Result<model::PodScheduling> BoundFromApi(const Json& pod, const TranslateOptions& options) {
  ASSIGN_OR_RETURN(model::PodScheduling parsed, model::PodSchedulingFromJson(pod));
  if (!parsed.labels.contains(kQueueLabel)) {
    parsed.labels[kQueueLabel] = options.external_queue;
    parsed.priority = std::max(parsed.priority.value_or(0), kExternalPodPriority);
  }
  return parsed;
}

Result<PendingWork> PendingFromApi(const Json& pod, const TranslateOptions& options) {
  PendingWork work;
  ASSIGN_OR_RETURN(work.pod, model::PodSchedulingFromJson(pod));
  model::Labels& labels = work.pod.labels;
  if (!labels.contains(kQueueLabel)) {
    auto it = options.namespace_queues.find(work.pod.namespace_);
    labels[kQueueLabel] = it != options.namespace_queues.end() ? it->second : options.default_queue;
  }
  if (auto gang = labels.find(kGangLabel); gang != labels.end()) {
    gang->second = work.pod.namespace_ + "/" + gang->second;
  }
  work.unsupported = UnsupportedConstraint(pod);
  return work;
}

std::string UnsupportedConstraint(const Json& pod) {
  const Json& spec = At(pod, "spec");
  auto says = [](const std::string& what, const std::string& field) {
    return "gpupool does not evaluate " + what + " (" + field + "); the pod stays pending";
  };
  const Json& affinity = At(spec, "affinity");
  if (HasRequiredTerms(At(affinity, "podAffinity"))) {
    return says("required inter-pod affinity", "spec.affinity.podAffinity");
  }
  if (HasRequiredTerms(At(affinity, "podAntiAffinity"))) {
    return says("required inter-pod anti-affinity", "spec.affinity.podAntiAffinity");
  }
  const Json& spread = At(spec, "topologySpreadConstraints");
  if (spread.is_array()) {
    for (const Json& constraint : spread) {
      std::string when = Text(At(constraint, "whenUnsatisfiable"));
      if (when.empty() || when == "DoNotSchedule") {
        return says("topology spread constraints", "spec.topologySpreadConstraints");
      }
    }
  }
  const Json& volumes = At(spec, "volumes");
  if (volumes.is_array()) {
    for (const Json& volume : volumes) {
      if (volume.contains("persistentVolumeClaim")) {
        return says("PersistentVolumeClaim binding",
                    "spec.volumes[" + Text(At(volume, "name")) + "].persistentVolumeClaim");
      }
      if (volume.contains("ephemeral")) {
        return says("generic ephemeral volumes",
                    "spec.volumes[" + Text(At(volume, "name")) + "].ephemeral");
      }
    }
  }
  if (HasHostPort(At(spec, "containers")) || HasHostPort(At(spec, "initContainers"))) {
    return says("host ports", "spec.containers[].ports[].hostPort");
  }
  if (NonEmptyArray(At(spec, "resourceClaims"))) {
    return says("dynamic resource allocation claims", "spec.resourceClaims");
  }
  return "";
}

}  // namespace gpupool::kube
