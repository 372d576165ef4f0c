#pragma once
// The setup of a scheduling cycle (module-internal): what the snapshot's queues, pods and gangs
// mean, before anything is placed.
//
// Queues: sorted by name (a duplicate name: the first wins); the implicit "default" queue (no
// quota) is added when some pod uses it and it is not configured; a parent that does not exist
// is ignored, and a cycle in the tree (a -> b -> a) is cut at the first repeat.
// Pods: priority, queue, node pools, requests and gpupool.io annotations are resolved once; a
// pod that cannot be considered (unknown queue or node pool, a department as its queue, a bad
// fraction, priority class or creation time, ...) keeps the first such error in
// PodState::error. Age (PodState::arrival): metadata.creationTimestamp, older first; pods
// without one (or with an unreadable one) after those with one; ties in snapshot order.
// Gangs: pods sharing gpupool.io/gang in one queue and namespace; gang-min from the first member
// (in snapshot order) that sets it, capped at the gang's size, all members by default.
// Jobs: each pending pod without errors alone, or the pending pods of a gang together (as old as
// its oldest pod, as important as its most important one).

#include <memory>
#include <string>
#include <vector>

#include "scheduler/cycle_types.h"
#include "scheduler/scheduler.h"

namespace gpupool::scheduler {

class ClusterView;
class CycleState;

struct CycleSetup {
  std::vector<QueueState> queues;
  std::vector<PodState> pods;
  Gangs gangs;
  // What the pods' PodState::pools view: one parsed list per distinct gpupool.io/node-pool
  // value (held by pointer, so the lists stay put when the setup moves).
  std::vector<std::unique_ptr<std::vector<int>>> pool_lists;
};

// Queues, pods and gangs of `snapshot`; interns the pods' resources and signatures in `view`.
CycleSetup BuildCycleSetup(const ClusterSnapshot& snapshot, ClusterView& view);

// Pods bound before the cycle to a node of the snapshot take their capacity there, in snapshot
// order (devices: the lowest fully free for whole GPUs, best fit for fractions), even if that
// over-commits the node.
void BindPods(CycleState& state);

// The jobs of the pods still pending in `state`, in snapshot order of their first pod.
std::vector<Job> BuildJobs(const CycleState& state, const Gangs& gangs);

// Members of `gang` on a node now.
int RunningMembers(const CycleState& state, const Gangs& gangs, int gang);

// Each queue's demand in each node pool, laid out as QuotaTable: its pods on a node there, plus
// its pending pods that list the pool anywhere in gpupool.io/node-pool.
std::vector<int64_t> QueueDemand(const CycleState& state);

}  // namespace gpupool::scheduler
