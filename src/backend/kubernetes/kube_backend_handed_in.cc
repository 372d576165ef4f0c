// KubernetesBackend: the pods handed in by others (spec.schedulerName gpupool, not a task's pod),
// KAI's way. See kube_backend.h (HandedInPods, BindPods).

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

}  // namespace

// On the client's thread.
void KubernetesBackend::OnHandedIn(const Json& pod, bool deleted) {
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
    others_.erase(ref.uid);
    return;
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
  others_.erase(ref.uid);
  handed_in_[ref.uid] = std::move(in);
}

std::vector<HandedInPod> KubernetesBackend::HandedInPods() const {
  std::lock_guard lock(mu_);
  std::vector<HandedInPod> pods;
  pods.reserve(handed_in_.size());
  for (const auto& [uid, in] : handed_in_) {
    pods.push_back(in);
    auto sent = binding_.find(uid);
    if (sent != binding_.end() && pods.back().pod.node_name.empty()) {
      // Bound by us, not yet seen: it holds that node already.
      pods.back().pod.node_name = sent->second;
    }
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
      bool pending = it != handed_in_.end() && it->second.pod.node_name.empty() &&
                     it->second.unsupported.empty() && !binding_.contains(binding.pod.uid);
      if (!pending) {
        return FailedPreconditionError("kubernetes backend: pod " + Where(binding.pod) + " (uid " +
                                       binding.pod.uid +
                                       ") is no longer pending; nothing of its gang bound");
      }
    }
    for (const PodBinding& binding : gang) binding_[binding.pod.uid] = binding.node;
  }
  for (const PodBinding& binding : gang) {
    const kube::ObjectRef ref{binding.pod.namespace_, binding.pod.name, binding.pod.uid};
    client_->Send(
        {"POST", kube::PodPath(ref, "binding"), DumpJson(kube::BindingBody(ref, binding.node))},
        [this, uid = ref.uid](Result<kube::Response> bound) {
          if (bound.ok() && bound->ok()) return;  // the informer shows it bound
          // Refused (409: bound meanwhile or replaced; 404: deleted) or no answer:
          // the pod is what the informer says, and the next cycle decides again.
          std::lock_guard lock(mu_);
          binding_.erase(uid);
        });
  }
  return OkStatus();
}

}  // namespace gpupool::backend
