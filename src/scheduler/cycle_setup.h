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
//
// Kept across cycles (SetupMemo, with a ViewCache): a pod whose ClusterSnapshot::pod_ids entry
// the last cycle saw (same spec, same binding), resolved against the same queues, is taken over
// from it rather than resolved again; only what a cycle changes is reset (placement, age rank,
// reasons). Pods of a
// gang are always resolved afresh: their gang and gang-min errors depend on the other members.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scheduler/cycle_state.h"
#include "scheduler/cycle_types.h"
#include "scheduler/scheduler.h"

namespace gpupool::scheduler {

class ClusterView;

// What the setups of one view's cycles share (a ViewCache keeps it with the view; a cycle without
// one has its own): parsed gpupool.io/node-pool values, shape numbers, and the last cycle's pods.
// Everything in it is valid for that view only.
struct SetupMemo {
  struct ParsedPools {
    const std::vector<int>* pools = nullptr;
    std::string error;  // the first unknown node pool
  };
  // One parsed list per distinct gpupool.io/node-pool value, which PodState::pools views (held
  // by pointer, so the lists stay put).
  std::unordered_map<std::string, ParsedPools> pool_labels;
  std::vector<std::unique_ptr<std::vector<int>>> pool_lists;
  std::unordered_map<std::string, int> shape_ids;  // PodState::shape by requests
  // The last cycle's pods (placement as it ended), their ids, and the queues (name, has
  // children) they were resolved against.
  std::vector<PodState> pods;
  std::vector<uint64_t> pod_ids;
  // Their PodState::binding_node, queue and gang, and whether they have a creation time.
  std::vector<int> binding_nodes, pod_queues, pod_gangs;
  std::vector<char> pod_created;
  // The snapshot's pods they point to (PodState::pod): where the vector was.
  const model::PodScheduling* snapshot_pods = nullptr;
  bool arrival_is_index = false;  // PodState::arrival is each pod's index
  std::vector<std::pair<std::string, bool>> queues;
  int64_t taken_over = 0;  // pods taken over so far (tests)
  // What binding left on each node (CycleState::BindAll), for the same queues as `queues`.
  KeptBindings bindings;

  void ForgetPods() {
    pods.clear();
    pod_ids.clear();
    binding_nodes.clear();
    pod_queues.clear();
    pod_gangs.clear();
    pod_created.clear();
    snapshot_pods = nullptr;
  }
};

struct CycleSetup {
  std::vector<QueueState> queues;
  std::vector<PodState> pods;
  Gangs gangs;
  // Fields of every pod, parallel to `pods`, for the passes that read one field of each: a
  // PodState spans several cache lines, and a replay's cycles have thousands of pods.
  std::vector<int> binding_nodes;       // PodState::binding_node
  std::vector<int> pod_queues;          // PodState::queue
  std::vector<int> pod_gangs;           // PodState::gang
  std::vector<char> taken_over;         // 1: taken over from the last cycle (SetupMemo)
  std::vector<char> pod_created;        // 1: PodState::created_ms is set
  bool arrival_is_index = false;        // no pod has a creation time
  std::unique_ptr<SetupMemo> own_memo;  // when the caller gave none
};

// Queues, pods and gangs of `snapshot`; interns the pods' resources and signatures in `view`.
// `memo`: what earlier cycles on `view` kept (it takes over their pods), or nullptr.
CycleSetup BuildCycleSetup(const ClusterSnapshot& snapshot, ClusterView& view,
                           SetupMemo* memo = nullptr);

// After a cycle: its pods, for the next cycle's setup to take over, with what the cycle changed
// of the pods in `changed` (CycleState::PodsMaybeChanged) reset.
void KeepPods(const ClusterSnapshot& snapshot, CycleSetup& setup, std::vector<PodState> pods,
              std::span<const int> changed, SetupMemo& memo);

// Pods bound before the cycle to a node of the snapshot take their capacity there, in snapshot
// order (devices: the lowest fully free for whole GPUs, best fit for fractions), even if that
// over-commits the node.
void BindPods(CycleState& state);
// The same, taking over from `memo` the nodes whose bound pods did not change (by
// snapshot.pod_ids) since the last cycle on the view, and keeping this cycle's there.
void BindPods(CycleState& state, const CycleSetup& setup, const ClusterSnapshot& snapshot,
              SetupMemo& memo);

// The jobs of the pods still pending in `state`, in snapshot order of their first pod.
std::vector<Job> BuildJobs(const CycleState& state, const Gangs& gangs);

// Members of `gang` on a node now.
int RunningMembers(const CycleState& state, const Gangs& gangs, int gang);

// Each queue's demand in each node pool, laid out as QuotaTable: its pods on a node there, plus
// its pending pods that list the pool anywhere in gpupool.io/node-pool.
std::vector<int64_t> QueueDemand(const CycleState& state);

}  // namespace gpupool::scheduler
