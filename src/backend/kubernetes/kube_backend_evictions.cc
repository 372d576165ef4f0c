// KubernetesBackend: evicting the victims of reclaim and preemption through the Eviction API, so
// that the cluster's PodDisruptionBudgets decide. See kube_backend.h (Evict).

#include <chrono>

#include "backend/kubernetes/kube_backend.h"
#include "common/clock.h"
#include "common/json_text.h"
#include "kube/api.h"

namespace gpupool::backend {
namespace {

using Json = nlohmann::ordered_json;

std::string Now() {
  return FormatTimestamp(std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count());
}

}  // namespace

// One eviction in flight.
struct KubernetesBackend::EvictionOp {
  std::string key;
  uint64_t id = 0;
  kube::ObjectRef pod;
  TaskEviction eviction;
  bool marked = false;  // the DisruptionTarget condition was written
  bool handed_in = false;
};

// A pod handed in: bound (by the informer or a binding of ours), and its UID the one the
// scheduler saw. Gone, or another pod under its name: nothing holds the room (kStopped).
EvictionStart KubernetesBackend::EvictHandedIn(const TaskEviction& eviction) {
  auto op = std::make_shared<EvictionOp>();
  {
    std::lock_guard lock(mu_);
    auto it = handed_in_.find(eviction.pod.uid);
    if (it == handed_in_.end() ||
        (it->second.pod->pod.node_name.empty() && !binding_.contains(eviction.pod.uid))) {
      return EvictionStart::kStopped;
    }
    PodEviction& state = pod_evictions_[eviction.pod.uid];
    if (state.state != Eviction::kNone) return EvictionStart::kInFlight;
    state.state = Eviction::kAsked;
    state.id = next_eviction_id_++;
    op->key = eviction.key;
    op->id = state.id;
    op->pod = {eviction.pod.namespace_, eviction.pod.name, eviction.pod.uid};
    op->eviction = eviction;
    op->handed_in = true;
  }
  client_->Post([this, op] { MarkDisruptionTarget(op); });
  return EvictionStart::kInFlight;
}

EvictionStart KubernetesBackend::Evict(const TaskEviction& eviction) {
  if (!eviction.pod.uid.empty()) return EvictHandedIn(eviction);
  auto op = std::make_shared<EvictionOp>();
  {
    std::lock_guard lock(mu_);
    auto it = running_.find(eviction.key);
    // A launch still in flight has nothing bound to wait for: the loop's Kill stops it (the pod
    // is deleted once placed).
    if (it == running_.end() || !it->second.placed || it->second.pod.uid.empty()) {
      return EvictionStart::kStopped;
    }
    if (it->second.eviction != Eviction::kNone) return EvictionStart::kInFlight;
    it->second.eviction = Eviction::kAsked;
    it->second.eviction_id = next_eviction_id_++;
    op->key = eviction.key;
    op->id = it->second.eviction_id;
    op->pod = it->second.pod;
    op->eviction = eviction;
  }
  client_->Post([this, op] { MarkDisruptionTarget(op); });
  return EvictionStart::kInFlight;
}

// First the condition, as kube-scheduler marks its victims: the pod's owner (a Job's
// podFailurePolicy, an operator) can tell a preemption from a failure.
void KubernetesBackend::MarkDisruptionTarget(const std::shared_ptr<EvictionOp>& op) {
  const std::string reason =
      op->eviction.voluntary ? kube::kPreemptionByScheduler : kube::kDeletionByTaintManager;
  const std::string message = "gpupool: " + op->eviction.reason + ": " + op->eviction.message;
  client_->Send(
      {"PATCH", kube::PodPath(op->pod, "status"),
       DumpJson(kube::DisruptionTargetPatch(reason, message, Now())), kube::kStrategicMergePatch},
      [this, op](Result<kube::Response> patched) {
        if (!patched.ok()) return EvictionRefused(*op, patched.status().message());
        if (patched->status == 404) return;  // gone: the informer shows it
        if (!patched->ok()) {
          return EvictionRefused(
              *op,
              kube::ApiError(*patched, "mark " + op->pod.name + " DisruptionTarget").message());
        }
        op->marked = true;
        SendEviction(op);
      });
}

void KubernetesBackend::SendEviction(const std::shared_ptr<EvictionOp>& op) {
  if (!op->eviction.voluntary) {
    // A NoExecute taint: not a voluntary disruption, no budget asked (the taint manager's way).
    client_->Send({"DELETE", kube::PodPath(op->pod),
                   DumpJson(kube::DeleteOptionsBody(op->pod, std::nullopt))},
                  [this, op](Result<kube::Response> deleted) {
                    if (!deleted.ok()) return EvictionRefused(*op, deleted.status().message());
                    // 404 gone, 409 another pod of that name: ours went, the informer shows it.
                    if (deleted->ok() || deleted->status == 404 || deleted->status == 409) {
                      return EvictionAccepted(*op);
                    }
                    EvictionRefused(*op,
                                    kube::ApiError(*deleted, "delete " + op->pod.name).message());
                  });
    return;
  }
  client_->Send({"POST", kube::PodPath(op->pod, "eviction"),
                 DumpJson(kube::EvictionBody(op->pod, std::nullopt))},
                [this, op](Result<kube::Response> answer) {
                  if (!answer.ok()) return EvictionRefused(*op, answer.status().message());
                  auto outcome = kube::EvictionOutcomeOf(*answer, op->pod);
                  if (!outcome.ok()) return EvictionRefused(*op, outcome.status().message());
                  switch (outcome->outcome) {
                    case kube::EvictionOutcome::kBlockedByBudget:
                      return EvictionRefused(
                          *op, "blocked by a PodDisruptionBudget: " + outcome->message);
                    case kube::EvictionOutcome::kEvicted:
                    case kube::EvictionOutcome::kGone:      // deleted meanwhile
                    case kube::EvictionOutcome::kConflict:  // another pod has the name now
                      return EvictionAccepted(*op);
                  }
                });
}

KubernetesBackend::Eviction* KubernetesBackend::EvictionStateOf(const EvictionOp& op) {
  if (op.handed_in) {
    auto it = pod_evictions_.find(op.pod.uid);
    return it != pod_evictions_.end() && it->second.id == op.id ? &it->second.state : nullptr;
  }
  auto it = running_.find(op.key);
  return it != running_.end() && it->second.eviction_id == op.id ? &it->second.eviction : nullptr;
}

void KubernetesBackend::EvictionAccepted(const EvictionOp& op) {
  std::lock_guard lock(mu_);
  Eviction* state = EvictionStateOf(op);
  if (state != nullptr && *state == Eviction::kAsked) *state = Eviction::kAccepted;
}

void KubernetesBackend::EvictionRefused(const EvictionOp& op, const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    Eviction* state = EvictionStateOf(op);
    if (state == nullptr || *state != Eviction::kAsked) return;  // killed, or already gone
    if (op.handed_in) {
      pod_evictions_.erase(op.pod.uid);  // asked again if a later cycle chooses it
    } else {
      *state = Eviction::kNone;
    }
    refused_.push_back({op.key, reason});
  }
  if (!op.marked) return;
  // The pod stays: it is no longer a disruption target (the disruption controller would reset a
  // stale condition after two minutes; gpupool says so at once, and why).
  client_->Send(
      {"PATCH", kube::PodPath(op.pod, "status"),
       DumpJson(kube::DisruptionTargetClearedPatch("gpupool: eviction refused: " + reason, Now())),
       kube::kStrategicMergePatch},
      [](const Result<kube::Response>&) {
        // Best effort: a pod gone meanwhile has nothing to clear.
      });
}

std::vector<RefusedEviction> KubernetesBackend::RefusedEvictions() {
  std::lock_guard lock(mu_);
  std::vector<RefusedEviction> refused;
  for (auto& entry : refused_) {
    // A pod handed in is reported while the informer still has it; the loop forgets the rest.
    if (running_.contains(entry.key) || entry.key.starts_with("pod:")) {
      refused.push_back(std::move(entry));
    }
  }
  refused_.clear();
  return refused;
}

// On the client's thread, from OnPod.
bool KubernetesBackend::EvictionSeen(const std::string& key, const Json& pod, bool deleted) {
  std::lock_guard lock(mu_);
  auto it = running_.find(key);
  if (it == running_.end() || it->second.eviction == Eviction::kNone ||
      it->second.pod.uid != kube::RefOf(pod).uid) {
    return false;
  }
  // Being deleted (by the eviction, or anyone): its containers' end is the eviction's, and its
  // room is free once the object is gone. Not being deleted, an end is the task's own.
  const bool going = pod.value("/metadata/deletionTimestamp"_json_pointer, Json()).is_string();
  if (!deleted && !going) return false;
  if (deleted && !ended_.contains(key) && !killed_.contains(key)) {
    TaskExit exit;
    exit.key = key;
    exit.exit_code = kLostExitCode;
    exit.reason = "evicted";
    exit.evicted = true;
    ended_[key] = exit;
  }
  return true;
}

}  // namespace gpupool::backend
