#pragma once
// Pods handed in through the backend (Backend::HandedInPods; on Kubernetes: pods with
// spec.schedulerName gpupool, created by anyone): the scheduling loop's side. They join each
// cycle beside the workflows' tasks, under their own namespace/name, and have no workflow in the
// store: what the cycle places of them is bound through Backend::BindPods (a gang in one
// command, all or none), and the others are told why they wait (Backend::ReportUnschedulable).
// Bound ones are never victims: the loop evicts only tasks (they enter the cycle
// non-preemptible), and a NoExecute taint is the cluster's to enforce on them.
//
// Thread contract: the scheduling loop's thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "scheduler/cluster_settings.h"
#include "scheduler/scheduler.h"

namespace gpupool::controller {

// The snapshot's pods that are tasks: pod name -> (workflow, task) indices.
using TaskPodIndex = std::unordered_map<std::string, std::pair<size_t, size_t>>;

// The backend's pods handed in, shared with it (Backend::HandedInPods).
using HandedInPods = std::vector<std::shared_ptr<const backend::HandedInPod>>;

struct HandedIn {
  HandedInPods pods;
  std::unordered_map<std::string, size_t> by_key;  // scheduler::PodKey -> index in pods
  // Pending pods kept out of the cycle, and why (index in pods -> message).
  std::vector<std::pair<size_t, std::string>> held;
};

// What the loop keeps of the pods handed in from one step to the next: an id per pod for
// ClusterSnapshot::pod_ids, so that the scheduler takes over the pods it resolved in the last
// cycle instead of resolving every bound pod again at every step (20,000 of them at the end of
// the Kubernetes benchmark), and each pod's keys. A pod keeps its id while the backend hands in
// the same object (a HandedInPod is immutable: the backend makes a new one when the pod changes),
// its priority is raised or not as before, and the cluster settings are those of the last step
// (ApplyClusterSettings edits the pods by them). A changed pod takes its last id plus one, a new
// one the next multiple of 2^32, so that ids grow along the backend's order (the arrival order
// on Kubernetes): the scheduler matches kept pods in one walk of both lists.
// Lookups follow the last step's order first (the backend's order changes little between
// steps: pods arrive at its end), so that an unchanged pod costs no hashing; any other is found
// by its address.
// The loop's thread.
class HandedInMemo {
 public:
  struct Pod {
    std::shared_ptr<const backend::HandedInPod> pod;  // held: the address stays this pod's
    std::string key;                                  // scheduler::PodKey
    std::string handed_in_key;                        // backend::HandedInKey
    std::string gang;                                 // its gpupool.io/gang label, or ""
    int64_t gang_min = 0;  // its gpupool.io/gang-min; 0 when absent or malformed
    uint64_t id = 0;
    bool raised = false;  // entered the cycle non-preemptible
    uint64_t seen = 0;    // the last step that handed it in
    size_t place = 0;     // its place in the order of the step that last handed it in
  };

  // Starts a step: every pod's id changes when `settings` differ from the last step's.
  void BeginStep(const scheduler::ClusterSettings& settings);
  // The pod's entry, made (or renewed, when it changed) the first time this object is seen.
  Pod& Find(const std::shared_ptr<const backend::HandedInPod>& pod);
  // The pod's id for this step, `raised` or not (a change in that is a change of the pod).
  uint64_t Id(Pod& pod, bool raised);
  // Forgets the pods the step did not hand in.
  void EndStep();

  size_t size() const { return pods_.size(); }  // tests

 private:
  // Counts `entry` as handed in by this step, at the next place of its order.
  Pod& Seen(Pod& entry);

  // Pod entries are nodes of pods_: their addresses stay while they are kept.
  std::unordered_map<const backend::HandedInPod*, Pod> pods_;
  std::vector<Pod*> order_;      // the last step's pods, in its order (each once)
  std::vector<Pod*> new_order_;  // this step's, so far
  size_t next_ = 0;              // where in order_ the next pod is looked for first
  // HandedInKey -> the object last handed in under it, whose id a change continues from.
  std::unordered_map<std::string, const backend::HandedInPod*> latest_;
  scheduler::ClusterSettings settings_;
  uint64_t step_ = 0;
  size_t seen_ = 0;           // pods handed in this step
  uint64_t next_serial_ = 1;  // the next new pod's id is next_serial_ << 32
};

// Adds `pods` (the backend's pods handed in) to `snapshot`. A bound one for which `protect`
// (its HandedInKey) is true enters non-preemptible. Kept out, and said why: those asking what
// gpupool does not evaluate, and the members of a gang of which fewer pods exist than its
// gpupool.io/gang-min (pods handed in arrive one by one: a Job's third pod may come a cycle
// after its first two, and the scheduler, which reads a gang-min above the gang's size as "the
// whole gang", would place the first two). A name a task's pod has is never taken. The pods
// added take their ids in snapshot.pod_ids from `memo` (the pods before them, the tasks', 0: not
// tracked), and `memo` (its step begun) forgets the pods no longer handed in.
HandedIn AddHandedInPods(HandedInPods pods, const TaskPodIndex& tasks,
                         const std::function<bool(const std::string&)>& protect, HandedInMemo& memo,
                         scheduler::ClusterSnapshot& snapshot);

// Binds what `cycle` placed of them and reports why the others stay pending.
void ActOnHandedInPods(backend::Backend& backend, const HandedIn& in,
                       const scheduler::CycleResult& cycle);

}  // namespace gpupool::controller
