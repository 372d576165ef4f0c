#pragma once
// Evictions the cluster decides (Backend::Evict answered kInFlight: Kubernetes' Eviction API),
// the scheduling loop's side. Between the cycle that chose a victim and the backend's answer:
//   - the victim keeps running in the store (RUNNING, its message "being evicted (...)"), holds
//     its node in every cycle, and is no victim again (it enters the cycles non-preemptible);
//   - the pods that cycle placed on a victim's node (the pod the eviction is for, and any other
//     the cycle put there), with the rest of their gangs, are held: not bound, left out of the
//     next cycles, so that nothing is bound into room still in use (the kubelet would refuse
//     it) and the pod an eviction is for does not pick other victims meanwhile;
//   - evicted (Poll: TaskExit::evicted, the pod gone): the victim is requeued as a synchronous
//     eviction requeues it, and the held pods enter the next cycle, the room now free;
//   - refused (RefusedEvictions: a PodDisruptionBudget's 429): the victim keeps running and its
//     message says why; it is no victim for `refused_backoff_ms` (the budget may allow it later),
//     and the held pods enter the next cycle, which picks other victims or leaves them pending.
// In memory only: a new leader starts with nothing in flight (a victim's pod the cluster
// evicted meanwhile ends its task lost).
//
// Thread contract: the scheduling loop's thread.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "scheduler/scheduler.h"

namespace gpupool::controller {

class EvictionsInFlight {
 public:
  explicit EvictionsInFlight(int64_t refused_backoff_ms)
      : refused_backoff_ms_(refused_backoff_ms) {}

  // The cycle chose task `key` on `node` as a victim and the backend asked the cluster.
  // `requeue_message` is what the task says once evicted.
  void Asked(const std::string& key, const std::string& node, std::string requeue_message);

  // The backend reported the task evicted: the message of its requeue, or nullopt when no
  // eviction of it was in flight.
  std::optional<std::string> Evicted(const std::string& key);

  // The backend reported the eviction refused: what the task's message says.
  std::string Refused(const backend::RefusedEviction& refused, int64_t now_ms);

  // A task that must not be a victim now: its eviction in flight, or refused lately.
  bool Protected(const std::string& key, int64_t now_ms) const;

  // Takes out of `cycle.bindings` the pods placed on the nodes of the victims asked since the
  // last call, and the other members of their gangs (pods of `snapshot` with the same
  // gpupool.io/gang), and holds them. Returns them (pod, node).
  std::vector<scheduler::Binding> HoldBindings(scheduler::CycleResult& cycle,
                                               const scheduler::ClusterSnapshot& snapshot);

  // Leaves the held pods out of `snapshot` (pending pods only).
  void LeaveOutHeld(scheduler::ClusterSnapshot& snapshot) const;

  // Forgets the evictions of tasks no longer in `running` (ended, canceled, timed out), and the
  // refusals whose time is up.
  void Prune(const std::set<std::string>& running, int64_t now_ms);
  void Clear();

  size_t InFlightCount() const { return in_flight_.size(); }
  // Nothing in flight, refused lately or held: Prune would change nothing.
  bool Empty() const { return in_flight_.empty() && refused_until_.empty() && held_.empty(); }

 private:
  struct Victim {
    std::string node;
    std::string requeue_message;
  };
  const int64_t refused_backoff_ms_;
  std::map<std::string, Victim> in_flight_;       // task key -> victim
  std::map<std::string, int64_t> refused_until_;  // task key -> not a victim before (ms)
  std::map<std::string, std::set<std::string>> asked_this_cycle_;  // node -> victim keys
  std::map<std::string, std::set<std::string>> held_;  // pod key -> victims it waits for
};

}  // namespace gpupool::controller
