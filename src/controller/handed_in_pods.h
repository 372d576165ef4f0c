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

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/backend.h"
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

// Adds `pods` (the backend's pods handed in) to `snapshot`. A bound one for which `protect`
// (its HandedInKey) is true enters non-preemptible. Kept out, and said why: those asking what
// gpupool does not evaluate, and the members of a gang of which fewer pods exist than its
// gpupool.io/gang-min (pods handed in arrive one by one: a Job's third pod may come a cycle
// after its first two, and the scheduler, which reads a gang-min above the gang's size as "the
// whole gang", would place the first two). A name a task's pod has is never taken.
HandedIn AddHandedInPods(HandedInPods pods, const TaskPodIndex& tasks,
                         const std::function<bool(const std::string&)>& protect,
                         scheduler::ClusterSnapshot& snapshot);

// Binds what `cycle` placed of them and reports why the others stay pending.
void ActOnHandedInPods(backend::Backend& backend, const HandedIn& in,
                       const scheduler::CycleResult& cycle);

}  // namespace gpupool::controller
