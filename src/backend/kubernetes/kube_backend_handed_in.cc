// KubernetesBackend: the pods handed in by others (spec.schedulerName gpupool, not a task's pod),
// KAI's way. See kube_backend.h (HandedInPods, BindPods).

#include <algorithm>
#include <chrono>
#include <iostream>

#include "backend/kubernetes/kube_backend.h"
#include "common/json_text.h"
#include "kube/api.h"
#include "kube/translate.h"

namespace gpupool::backend {
namespace {

using Json = nlohmann::ordered_json;

std::string ReportKey(const kube::ObjectRef& pod) {
  return "pod:" + pod.namespace_ + "/" + pod.name;
}

std::string Where(const PodRef& pod) { return pod.namespace_ + "/" + pod.name; }

const Json& Member(const Json& object, const char* key) {
  static const Json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// Whether the scheduler reads `pod` as `before` but for spec.nodeName: the same spec otherwise,
// and the same metadata it reads (kube::PendingFromApi: name, namespace, creation time, labels,
// annotations).
bool SameButNodeName(const Json& pod, const Json& before) {
  const Json& spec = Member(pod, "spec");
  const Json& was = Member(before, "spec");
  if (!spec.is_object() || !was.is_object()) return false;
  size_t compared = 0;
  for (auto it = spec.begin(); it != spec.end(); ++it) {
    if (it.key() == "nodeName") continue;
    auto same = was.find(it.key());
    if (same == was.end() || *same != it.value()) return false;
    ++compared;
  }
  if (compared + (was.contains("nodeName") ? 1 : 0) != was.size()) return false;
  const Json& metadata = Member(pod, "metadata");
  const Json& had = Member(before, "metadata");
  for (const char* field : {"name", "namespace", "creationTimestamp", "labels", "annotations"}) {
    if (Member(metadata, field) != Member(had, field)) return false;
  }
  return true;
}

}  // namespace

// The reading of `pod`, just bound, taken over from the pending one it was (`before`, as read
// then) when nothing else the scheduler reads changed: its binding is the second of the two
// events each pod handed in brings, and reading it afresh was half of their cost. When gpupool
// sent that very binding, the pod is the object made then (HandedInEntry::sent): no copy, and
// the scheduling loop, which has seen that object since the binding, keeps its reading of it.
// Null when it must be read again. Under mu_.
std::shared_ptr<const HandedInPod> KubernetesBackend::BoundAsRead(const kube::ObjectRef& ref,
                                                                  const Json& pod,
                                                                  const Json& before) const {
  auto it = handed_in_.find(ref.uid);
  if (it == handed_in_.end()) return nullptr;
  const HandedInPod& pending = *it->second.pod;
  if (!pending.pod.node_name.empty() || !pending.unsupported.empty() ||
      kube::RefOf(before).uid != ref.uid || !SameButNodeName(pod, before)) {
    return nullptr;
  }
  std::string node = kube::PodNodeName(pod);
  const std::shared_ptr<const HandedInPod>& sent = it->second.sent;
  if (sent != nullptr && sent->pod.node_name == node) return sent;  // made from `pending`
  auto bound = std::make_shared<HandedInPod>(pending);
  bound->pod.node_name = std::move(node);
  return bound;
}

// On the client's thread.
void KubernetesBackend::OnHandedIn(const Json& pod, bool deleted, const Json* before) {
  const kube::ObjectRef ref = kube::RefOf(pod);
  const kube::PodKind kind = kube::ClassifyPod(pod);
  const bool holds = kind == kube::PodKind::kBound || kind == kube::PodKind::kPending;
  if (deleted || !holds || kind == kube::PodKind::kBound) {
    unschedulable_->Forget(ReportKey(ref), /*delete_pod=*/false);  // nothing more to say
  }
  if (deleted || !holds) {  // gone, finished, or gated (not yet for gpupool)
    std::lock_guard lock(mu_);
    handed_in_.erase(ref.uid);
    binding_.erase(ref.uid);
    if (others_.erase(ref.uid) > 0) ++others_version_;
    pod_evictions_.erase(ref.uid);
    return;
  }
  if (kind == kube::PodKind::kBound && before != nullptr) {
    std::lock_guard lock(mu_);
    if (auto bound = BoundAsRead(ref, pod, *before)) {
      binding_.erase(ref.uid);  // the informer shows it now
      if (others_.erase(ref.uid) > 0) ++others_version_;
      handed_in_[ref.uid].pod = std::move(bound);
      SyncSent(ref.uid);
      return;
    }
  }
  auto work = kube::PendingFromApi(pod, {});
  HandedInPod in;
  in.ref = {ref.namespace_, ref.name, ref.uid};
  if (work.ok()) {
    in.pod = std::move(work->pod);
    in.unsupported = std::move(work->unsupported);
  } else if (kind == kube::PodKind::kBound) {
    // Bound, but its spec does not read: what it takes is counted off its node, as for others.
    {
      std::lock_guard lock(mu_);
      handed_in_.erase(ref.uid);
      binding_.erase(ref.uid);
    }
    return CountOther(pod, /*ours=*/false, /*deleted=*/false);
  } else {
    in.pod.name = ref.name;
    in.pod.namespace_ = ref.namespace_;
    in.unsupported = "gpupool cannot read the pod: " + work.status().message();
  }
  if (kind == kube::PodKind::kBound) in.unsupported.clear();  // placed: nothing left to say
  std::lock_guard lock(mu_);
  if (kind == kube::PodKind::kBound) binding_.erase(ref.uid);  // the informer shows it now
  if (others_.erase(ref.uid) > 0) ++others_version_;
  auto [entry, inserted] = handed_in_.try_emplace(ref.uid);
  if (inserted) entry->second.arrival = next_arrival_++;
  entry->second.pod = std::make_shared<const HandedInPod>(std::move(in));
  entry->second.sent.reset();  // made from the pod as it was: made again from this one
  SyncSent(ref.uid);
}

void KubernetesBackend::SyncSent(const std::string& uid) {
  auto entry = handed_in_.find(uid);
  if (entry == handed_in_.end()) return;
  const std::shared_ptr<const HandedInPod>& in = entry->second.pod;
  auto node = binding_.find(uid);
  if (node == binding_.end() || !in->pod.node_name.empty()) {
    entry->second.sent.reset();
    return;
  }
  if (entry->second.sent != nullptr && entry->second.sent->pod.node_name == node->second) return;
  auto bound = std::make_shared<HandedInPod>(*in);  // bound by us, not yet seen: holds its node
  bound->pod.node_name = node->second;
  entry->second.sent = std::move(bound);
}

// In the order the informer first showed them: among pods of the same age (creationTimestamp
// has seconds only) the scheduler takes the earlier one in its snapshot first.
std::vector<std::shared_ptr<const HandedInPod>> KubernetesBackend::HandedInPods() const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<uint64_t, const std::pair<const std::string, HandedInEntry>*>> order;
  order.reserve(handed_in_.size());
  for (const auto& entry : handed_in_) order.emplace_back(entry.second.arrival, &entry);
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::shared_ptr<const HandedInPod>> pods;
  pods.reserve(order.size());
  for (const auto& [arrival, entry] : order) {
    // Bound by us, not yet seen: it holds that node already.
    pods.push_back(entry->second.sent != nullptr ? entry->second.sent : entry->second.pod);
  }
  return pods;
}

Status KubernetesBackend::BindPods(const std::vector<PodBinding>& gang) {
  for (const PodBinding& binding : gang) {
    if (nodes_->Get(binding.node) == nullptr) {
      return FailedPreconditionError("kubernetes backend: the cluster has no node \"" +
                                     binding.node + "\" for pod " + Where(binding.pod) +
                                     "; nothing of its gang bound");
    }
  }
  {
    std::lock_guard lock(mu_);
    for (const PodBinding& binding : gang) {
      auto it = handed_in_.find(binding.pod.uid);
      bool pending = it != handed_in_.end() && it->second.pod->pod.node_name.empty() &&
                     it->second.pod->unsupported.empty() && !binding_.contains(binding.pod.uid);
      if (!pending) {
        return FailedPreconditionError("kubernetes backend: pod " + Where(binding.pod) + " (uid " +
                                       binding.pod.uid +
                                       ") is no longer pending; nothing of its gang bound");
      }
    }
    for (const PodBinding& binding : gang) {
      binding_[binding.pod.uid] = binding.node;
      SyncSent(binding.pod.uid);
    }
  }
  auto sent = std::make_shared<const std::vector<PodBinding>>(gang);
  for (size_t member = 0; member < gang.size(); ++member) {
    const PodBinding& binding = gang[member];
    const kube::ObjectRef ref{binding.pod.namespace_, binding.pod.name, binding.pod.uid};
    client_->Send(
        {"POST", kube::PodPath(ref, "binding"), kube::BindingText(ref, binding.node)},
        [this, sent, member, ref](Result<kube::Response> bound) {
          if (bound.ok() && bound->ok()) return;  // the informer shows it bound
          if (bound.ok() && bound->status == 409) {
            // Maybe our own earlier request (its answer lost, the request sent again): then the
            // pod is on that node, as we wanted. Ask the pod which.
            return client_->Send(
                {"GET", kube::PodPath(ref)}, [this, sent, member](Result<kube::Response> got) {
                  const PodBinding& wanted = (*sent)[member];
                  if (got.ok() && got->ok() && kube::PodNodeName(got->Json()) == wanted.node &&
                      kube::RefOf(got->Json()).uid == wanted.pod.uid) {
                    return;
                  }
                  BindingRefused(*sent, member, "409 Conflict: bound elsewhere or being deleted");
                });
          }
          BindingRefused(
              *sent, member,
              bound.ok() ? kube::ApiError(*bound, "binding").message() : bound.status().message());
        });
  }
  return OkStatus();
}

// On the client's thread. Refused (409: bound meanwhile, being deleted, or replaced; 404:
// deleted) or no answer: the pod is what the informer says, and the next cycle decides again.
// Kubernetes cannot unbind the members accepted before, and gpupool does not delete pods it does
// not own to undo them (a bare pod would be lost; a Job's would start again from nothing): they
// keep their nodes and count towards their gang's gang-min, so the next cycles place the members
// still pending. The refusal is said on the pods and in the server's log.
void KubernetesBackend::BindingRefused(const std::vector<PodBinding>& gang, size_t member,
                                       const std::string& why) {
  const PodBinding& refused = gang[member];
  {
    std::lock_guard lock(mu_);
    binding_.erase(refused.pod.uid);
    SyncSent(refused.pod.uid);
  }
  const kube::ObjectRef ref{refused.pod.namespace_, refused.pod.name, refused.pod.uid};
  RecordEvent(ref, "FailedScheduling", "Binding rejected: " + why);
  if (gang.size() < 2) return;
  std::string others;
  for (size_t i = 0; i < gang.size(); ++i) {
    if (i != member) others += (others.empty() ? "" : ", ") + gang[i].pod.name;
  }
  const std::string message = "the binding of " + Where(refused.pod) + " to " + refused.node +
                              " was refused (" + why + ") after its gang's other pods (" + others +
                              ") were sent theirs: those bound keep their nodes, and " +
                              "gpupool places the gang's pending pods in the next cycles";
  std::cerr << "gpupool serve: kubernetes: gang partly bound: " << message << "\n";
  for (size_t i = 0; i < gang.size(); ++i) {
    if (i == member) continue;
    const PodRef& pod = gang[i].pod;
    RecordEvent({pod.namespace_, pod.name, pod.uid}, "GangPartlyBound", message);
  }
}

// On the client's thread: a Warning Event about a pod, counted as kube-scheduler's recorder
// counts repeats (kube/event_recorder.h).
void KubernetesBackend::RecordEvent(const kube::ObjectRef& pod, const std::string& reason,
                                    const std::string& message) {
  const Json involved = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", pod.name}, {"namespace", pod.namespace_}, {"uid", pod.uid}}}};
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  kube::EventWrite write = events_.Record(involved, "Warning", reason, message, now);
  const bool patch = write.kind == kube::EventWrite::Kind::kPatch;
  kube::Request request{patch ? "PATCH" : "POST", write.path, DumpJson(write.body)};
  if (patch) request.content_type = "application/strategic-merge-patch+json";
  client_->Send(request, [this, key = write.key](Result<kube::Response> answer) {
    if (!answer.ok() || !answer->ok()) events_.Forget(key);  // the next one starts anew
  });
}

}  // namespace gpupool::backend
