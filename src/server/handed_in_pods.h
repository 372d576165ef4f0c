#pragma once
// Pods handed in through the backend (Backend::HandedInPods; on Kubernetes: pods with
// spec.schedulerName gpupool, created by anyone): the scheduling loop's side. They join each
// cycle beside the workflows' tasks, under their own namespace/name, and have no workflow in the
// store: what the cycle places of them is bound through Backend::BindPods (a gang in one
// command, all or none), and the others are told why they wait (Backend::ReportUnschedulable).
// Bound ones are never victims: the loop cannot evict them (they enter the cycle
// non-preemptible), and a NoExecute taint is the cluster's to enforce on them.
//
// Thread contract: the scheduling loop's thread.

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "scheduler/scheduler.h"

namespace gpupool::server {

// The snapshot's pods that are tasks: pod name -> (workflow, task) indices.
using TaskPodIndex = std::unordered_map<std::string, std::pair<size_t, size_t>>;

struct HandedIn {
  std::vector<backend::HandedInPod> pods;
  std::unordered_map<std::string, size_t> by_key;  // scheduler::PodKey -> index in pods
};

// Adds the backend's pods handed in to `snapshot` (those asking what gpupool does not evaluate
// stay out; a name a task's pod has is never taken).
HandedIn AddHandedInPods(const backend::Backend& backend, const TaskPodIndex& tasks,
                         scheduler::ClusterSnapshot& snapshot);

// Binds what `cycle` placed of them and reports why the others stay pending.
void ActOnHandedInPods(backend::Backend& backend, const HandedIn& in,
                       const scheduler::CycleResult& cycle);

}  // namespace gpupool::server
