#pragma once
// The bodies gpupool writes to the API server, as kube-scheduler and the eviction API shape
// them (pure functions: no I/O, time passed in):
//   BindingBody          POST pods/NAME/binding: {"kind": "Binding", "metadata": {name, uid},
//                        "target": {"kind": "Node", "name": NODE}}; the uid makes a pod that
//                        was deleted and created again under the same name answer 409.
//   UnschedulablePatch   PATCH pods/NAME/status (strategic merge): the condition
//                        PodScheduled=False, reason Unschedulable, with the scheduler's message
//                        ("0/5000 nodes are available: ..."). Karpenter and cluster-autoscaler
//                        provision only for pods that carry it.
//   DisruptionTargetPatch  the DisruptionTarget=True condition written before an eviction, so
//                        the pod's owner can tell a preemption from a failure.
//   DisruptionTargetClearedPatch  DisruptionTarget=False, once an eviction was refused: the
//                        pod stays (the disruption controller resets a stale condition the same
//                        way, after two minutes).
//   EvictionBody         POST pods/NAME/eviction (policy/v1), with the UID precondition so that
//                        a pod replaced under the same name is never evicted in its place.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace gpupool::kube {

// One pod (or object) as gpupool refers to it.
struct ObjectRef {
  std::string namespace_;
  std::string name;
  std::string uid;  // "" = no precondition
};

// Reads namespace, name and uid from an object's metadata.
ObjectRef RefOf(const nlohmann::ordered_json& object);

// metadata.FIELD of an object when it is a string, else "" (absent, or not an object).
std::string MetadataString(const nlohmann::ordered_json& object, const char* field);

// /api/v1/namespaces/NS/pods/NAME[/SUBRESOURCE]
std::string PodPath(const ObjectRef& pod, std::string_view subresource = "");

nlohmann::ordered_json BindingBody(const ObjectRef& pod, const std::string& node);
// DumpJson(BindingBody(pod, node)), written out without the tree: one per pod bound.
std::string BindingText(const ObjectRef& pod, const std::string& node);

// `now` is RFC 3339 (lastTransitionTime).
nlohmann::ordered_json UnschedulablePatch(const std::string& message, const std::string& now);

// reason: kube-scheduler writes PreemptionByScheduler; gpupool uses it for preemption and
// reclaim, and DeletionByTaintManager-style reasons are the caller's to pass.
nlohmann::ordered_json DisruptionTargetPatch(const std::string& reason, const std::string& message,
                                             const std::string& now);
// The DisruptionTarget reasons Kubernetes defines (core/v1) that gpupool writes.
inline constexpr char kPreemptionByScheduler[] = "PreemptionByScheduler";
inline constexpr char kDeletionByTaintManager[] = "DeletionByTaintManager";

// Status False, no reason (removed by the strategic merge), `message` saying why.
nlohmann::ordered_json DisruptionTargetClearedPatch(const std::string& message,
                                                    const std::string& now);

nlohmann::ordered_json EvictionBody(const ObjectRef& pod, std::optional<int64_t> grace_seconds);

// DeleteOptions with the UID precondition and a grace period (nullopt: the pod's own).
nlohmann::ordered_json DeleteOptionsBody(const ObjectRef& pod,
                                         std::optional<int64_t> grace_seconds);

}  // namespace gpupool::kube
