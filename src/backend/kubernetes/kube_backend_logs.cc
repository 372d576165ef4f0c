// KubernetesBackend: a task attempt's output is its pod's log (pods/log). See kube_backend.h
// (ReadLog).
//
// pods/log has no byte offset: it reads from the start (or from a time, `sinceTime`, in whole
// seconds, or the last lines, `tailLines`), and `limitBytes` stops it after that many bytes.
// Only limitBytes gives exact byte offsets: the chunk [offset, offset + max_bytes) is read as the
// first offset + max_bytes + 1 bytes, the extra byte telling whether more follows. A follower
// far into a long log reads the whole prefix again at each chunk; a time would skip it, but
// lines written within one second could not be told apart and bytes would be lost or repeated.

#include "backend/kubernetes/kube_backend.h"
#include "kube/api.h"

namespace gpupool::backend {

Result<LogChunk> KubernetesBackend::ReadLog(std::string_view key, int64_t offset,
                                            int64_t max_bytes) const {
  if (offset < 0 || max_bytes < 1) {
    return InvalidArgumentError("kubernetes backend: a log chunk needs offset >= 0 and a limit");
  }
  AttemptPod pod;
  {
    std::lock_guard lock(mu_);
    auto it = attempt_pods_.find(key);
    if (it == attempt_pods_.end()) {
      // Not created yet, or deleted: a pod's log goes with it (Kubernetes keeps no other copy).
      return NotFoundError("kubernetes backend: no pod of task " + std::string(key) +
                           " (not created yet, or deleted with its log)");
    }
    pod = it->second;
  }
  // Nothing written before its containers start; the API server would answer 400 ("waiting to
  // start") for a bound pod, and an empty log for an unbound one.
  if (!pod.started)
    return NotFoundError("kubernetes backend: task " + std::string(key) + " has not started");
  std::string path =
      kube::PodPath(pod.ref, "log") + "?limitBytes=" + std::to_string(offset + max_bytes + 1);
  if (!pod.container.empty()) path += "&container=" + kube::QueryEscape(pod.container);
  ASSIGN_OR_RETURN(kube::Response answer, client_->Call({"GET", path}));
  if (answer.status == 404) {
    return NotFoundError("kubernetes backend: the pod of task " + std::string(key) + " is gone");
  }
  if (!answer.ok()) return kube::ApiError(answer, "log of pod " + pod.ref.name);
  LogChunk chunk;
  chunk.offset = offset;
  // As much as is known: the output is at least this long (longer when the extra byte came).
  chunk.size = static_cast<int64_t>(answer.body.size());
  if (chunk.size > offset) {
    chunk.data = answer.body.substr(static_cast<size_t>(offset), static_cast<size_t>(max_bytes));
  }
  return chunk;
}

}  // namespace gpupool::backend
