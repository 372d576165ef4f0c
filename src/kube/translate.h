#pragma once
// From the cluster's objects to the scheduler's inputs (pure: no I/O, no clock).
//
// Nodes: labels, taints, spec.unschedulable and status.allocatable as model::Node reads them. A
// node whose Ready condition is not True gets the taint node.kubernetes.io/not-ready:NoSchedule
// (or .../unreachable when its status is Unknown) unless it already has one: the node lifecycle
// controller adds it within seconds, and placing on such a node in between would be wrong.
//
// Pods, every one (not only gpupool's), by ClassifyPod:
//   kFinished        Succeeded or Failed: holds nothing.
//   kBound           spec.nodeName set, whoever bound it (kube-scheduler, DaemonSets, another
//                    scheduler, gpupool): uses its node's capacity until it is gone, terminating
//                    or not, as kube-scheduler counts it.
//   kPending         not bound, spec.schedulerName is gpupool's, no schedulingGates: work for
//                    gpupool to place.
//   kGated           gpupool's, but with schedulingGates: not yet (Kueue's admission gate).
//   kOtherScheduler  not bound, someone else's to place: ignored.
// A bound pod that gpupool does not manage (no gpupool.io/queue label) is accounted in
// `external_queue` and made non-preemptible, so that reclaim and preemption never pick a
// DaemonSet's or another scheduler's pod.
//
// Pending work (PendingFromApi): the queue from the gpupool.io/queue label, else the namespace's
// default queue, else `default_queue`; gangs from gpupool.io/gang (scoped to the namespace: two
// namespaces' gangs of one name stay apart) and gpupool.io/gang-min; node pools from
// gpupool.io/node-pool and GPU fractions from gpupool.io/gpu-fraction as DESIGN.md section 4 says.
// A pod that needs what gpupool does not evaluate is returned with `unsupported` naming the
// feature and the field, and must be left pending with that message, never bound as if the
// constraint were absent: required inter-pod (anti-)affinity, topology spread constraints with
// whenUnsatisfiable DoNotSchedule, PersistentVolumeClaim and generic ephemeral volumes (volume
// binding), host ports, and dynamic resource allocation claims.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"
#include "model/k8s.h"
#include "scheduler/scheduler.h"

namespace gpupool::kube {

// gpupool's spec.schedulerName (the labels it reads are scheduler/scheduler.h's).
inline constexpr char kSchedulerName[] = "gpupool";
// On pods gpupool creates for a task: the attempt ("<workflow>/<group>/<task>/<retry>").
inline constexpr char kAttemptAnnotation[] = "gpupool.io/attempt";
// The priority given to pods gpupool does not manage: never preempted or reclaimed by it.
inline constexpr int32_t kExternalPodPriority = 1'000'000'000;

Result<model::Node> NodeFromApi(const nlohmann::ordered_json& node);

// On pods gpupool does not manage, bound to a node: what they take from it, counted into
// NodeAsScheduled. "pods" counts one per pod, as the kubelet admits them against
// allocatable.pods.
inline constexpr char kTakenByOthersAnnotation[] = "gpupool.io/requested-by-other-pods";

// The Node object as the store keeps it for gpupool to place on, when gpupool shares the node
// with pods it does not manage (DaemonSets, kube-scheduler's pods, another scheduler's):
//   - status.allocatable (else status.capacity) less `taken`, never below zero; `taken` itself
//     in the annotation kTakenByOthersAnnotation (absent when nothing is taken), so that the
//     room that went to others can be seen;
//   - the not-ready/unreachable NoSchedule taint of NodeFromApi in spec.taints when the Ready
//     condition is not True.
// The same object for the same input: the node sync writes a node only when it changed.
nlohmann::ordered_json NodeAsScheduled(const nlohmann::ordered_json& node,
                                       const model::ResourceList& taken);

// What a bound pod takes from its node: its effective requests and one "pods".
Result<model::ResourceList> TakenByPod(const nlohmann::ordered_json& pod);

// spec.nodeName of a pod, "" while it is unbound (or the object is not a pod).
std::string PodNodeName(const nlohmann::ordered_json& pod);

enum class PodKind { kFinished, kBound, kPending, kGated, kOtherScheduler };
std::string_view PodKindName(PodKind kind);

PodKind ClassifyPod(const nlohmann::ordered_json& pod,
                    std::string_view scheduler_name = kSchedulerName);

struct TranslateOptions {
  std::string scheduler_name = kSchedulerName;
  std::map<std::string, std::string> namespace_queues;  // namespace -> its default queue
  std::string default_queue = "default";
  std::string external_queue = "default";  // for bound pods gpupool does not manage
};

// A bound pod as the scheduler counts it (any scheduler's).
Result<model::PodScheduling> BoundFromApi(const nlohmann::ordered_json& pod,
                                          const TranslateOptions& options);

struct PendingWork {
  model::PodScheduling pod;
  std::string unsupported;  // "" or why the pod must stay pending
};

// A kPending pod as the scheduler places it.
Result<PendingWork> PendingFromApi(const nlohmann::ordered_json& pod,
                                   const TranslateOptions& options);

// "" when gpupool evaluates everything the pod asks of a node, else the first thing it does not
// ("gpupool does not evaluate required inter-pod affinity (spec.affinity.podAffinity)").
std::string UnsupportedConstraint(const nlohmann::ordered_json& pod);

}  // namespace gpupool::kube
