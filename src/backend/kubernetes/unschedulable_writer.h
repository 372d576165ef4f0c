#pragma once
// UnschedulableWriter: says on the cluster why a pod stays pending, as kube-scheduler does, so
// that `kubectl describe pod` shows it and Karpenter / cluster-autoscaler provision for it:
//   - the status patch PodScheduled=False, reason Unschedulable, with the scheduler's message
//     (kube/writes.h), written when the message changed and only then;
//   - a Warning Event FailedScheduling (kube/event_recorder.h): created for a new message, and
//     for the same message again after `repeat` it PATCHes that Event's count (repeats counted,
//     not multiplied), as kube-scheduler records one per failed attempt and retries an
//     unschedulable pod at least every five minutes.
// A task's pod is created (unbound, spec.schedulerName gpupool) before the first write when it
// does not exist yet: OSMO's way, a pending task has a pending pod the cluster's autoscalers see.
// Its launch then finds and binds it (KubernetesBackend::Launch adopts an existing pod).
// Every request goes through the client, under its QPS and burst limits.
//
// Thread contract: Report and Forget from the scheduling loop's thread (they never wait for the
// API server); the writes run on the client's thread.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "kube/client.h"
#include "kube/event_recorder.h"
#include "kube/writes.h"

namespace gpupool::backend {

class UnschedulableWriter {
 public:
  UnschedulableWriter(kube::Client& client, std::chrono::milliseconds repeat)
      : client_(client), repeat_(repeat) {}

  // `key` names the pod (a task attempt's key, or "pod:NS/NAME" for a pod handed in). `ref` is
  // the pod (uid "" until known); `create` makes the pod to create when it does not exist
  // (tasks; called only then), or is empty (a pod handed in exists).
  void Report(const std::string& key, const kube::ObjectRef& ref,
              const std::function<nlohmann::ordered_json()>& create, const std::string& message);

  // The pod is no longer pending: launched (its launch binds it: keep it), or its task ended
  // (`delete_pod`: delete the pod created for it, now or when its create answers).
  void Forget(const std::string& key, bool delete_pod);

  // The pod was deleted by someone: the next report creates it again.
  void PodGone(const std::string& key);

  // Pods reported and not forgotten.
  size_t Tracked() const;

 private:
  struct Entry {
    uint64_t generation = 0;
    kube::ObjectRef ref;
    std::string message;  // last written (or being written)
    std::chrono::steady_clock::time_point event_at;
    bool creating = false;  // a create is in flight
  };
  struct Op {
    std::string key;
    uint64_t generation = 0;
    kube::ObjectRef ref;
    std::optional<nlohmann::ordered_json> create;
    std::string message;
    bool patch = false;
  };

  // On the client's thread.
  void Write(const std::shared_ptr<Op>& op);
  void Created(const std::shared_ptr<Op>& op, const kube::ObjectRef& ref);
  void Found(const std::shared_ptr<Op>& op);
  void Patch(const std::shared_ptr<Op>& op);
  void RecordEvent(const std::shared_ptr<Op>& op);
  bool Current(const Op& op) const;  // not forgotten nor reported again since
  void DeleteCreated(const kube::ObjectRef& ref);

  kube::Client& client_;
  const std::chrono::milliseconds repeat_;
  kube::EventRecorder events_;              // client's thread only
  std::set<std::string> events_in_flight_;  // client's thread only: pods with an Event write out

  mutable std::mutex mu_;
  uint64_t next_generation_ = 1;
  std::map<std::string, Entry, std::less<>> entries_;
  std::map<std::string, bool, std::less<>> forgotten_while_creating_;  // key -> delete it
};

}  // namespace gpupool::backend
