#pragma once
// Reclaim and preemption, steps 3 and 4 of a cycle (module-internal): for each job the allocate
// phase left pending, in the order the jobs failed, each of its node pools in order, reclaim
// first, then preemption; the first that places the job wins.
//
// Reclaim, for a job whose queue stays within its fair share with it (in the job's dominant
// resource: GPUs for a GPU job, else cpu and memory): evicts preemptible pods (priority below
// kNonPreemptiblePriority) of other queues that are above their fair share, never taking a queue
// below its deserved quota. The two sides are compared at every level below the queue they share
// (sibling projects; or teams, then their projects; or departments, then their teams and
// projects): each of the victim's queues there must be above its fair share and stay at or
// above its deserved quota, each of the reclaimer's must stay within its fair share with the pod.
// Preemption: inside the job's queue, evicts strictly lower-priority preemptible pods; the
// queue's limits are checked once the job is placed.
// Victims: on each candidate node, the cheapest in order (lowest priority, then most GPUs, then
// youngest, then name) until the pod fits; then, from the dearest, each is given back if the
// pod still fits without it (and, for reclaim, no other victim relied on its share). The node
// with the fewest victims wins (counted with their gangs), then the lowest sum of the victims'
// priorities, then the first in the pod's static list. A victim that belongs to a gang
// takes its whole gang along: every member running or placed earlier in the cycle must be
// evictable; a member placed earlier in the cycle is withdrawn (it never ran) and stays pending.
// Evicted pods are not placed again in the same cycle.
// PodDisruptionBudgets: a candidate whose eviction (with its gang) on top of the victims chosen
// so far and the evictions already committed would leave a budget short is passed over (the
// next candidate is tried) and noted (TakeBlocked; the pending pod's reason).

#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "model/disruption_budget.h"
#include "scheduler/cluster_view.h"
#include "scheduler/cycle_state.h"
#include "scheduler/cycle_types.h"
#include "scheduler/node_search.h"
#include "scheduler/queue_order.h"
#include "scheduler/scheduler.h"

namespace gpupool::scheduler {

class Reclaimer {
 public:
  // `view`: for ClusterView::Static only; CycleState alone changes placements.
  // `budgets` index pods as CycleState does (the snapshot's order).
  Reclaimer(const SchedulerOptions& options, CycleState& state, ClusterView& view,
            const Gangs& gangs, NodeSearch& search, const QueueOrder& order,
            const model::DisruptionBudgets& budgets);

  // Tries the jobs `failed` (indexes into `jobs`) with victims, in that order. A job that stays
  // pending gets, after its reason, the victims PodDisruptionBudgets kept.
  void Run(std::span<const Job> jobs, const std::vector<int>& failed);

  // The victims passed over because of a PodDisruptionBudget, each (victim, pending pod) once.
  std::vector<BlockedEviction> TakeBlocked() { return std::move(blocked_); }

 private:
  // Quota already freed by the victims chosen so far, by (queue, node pool), ancestors included.
  using TakenQuota = std::map<std::pair<int, int>, QuotaVector>;
  class NodeAfterEvictions;

  bool TryWithVictims(const Job& job, int pool, bool reclaim);
  // The node of `pool` where `pod` fits with the cheapest victims; -1 when none.
  int CheapestVictims(int pod, int pool, bool reclaim, std::vector<int>& victims);
  // The victims that make `pod` fit on `node`, as few and as cheap as can be; false when none do.
  bool SelectVictims(int pod, int node, int pool, bool reclaim, std::vector<int>& victims);
  std::vector<int> VictimCandidates(const PodState& p, int node, bool reclaim) const;
  void Take(TakenQuota& taken, int victim, int sign) const;
  // After a preemption placed `job`: whether its queue and the ancestors are within their quota.
  bool WithinQuotaAfterPreemption(const Job& job, int pool) const;
  // Takes `victim` and its gang peers (WithGangPeers) off their nodes for `evictor`.
  void EvictWithGang(int victim, const PodState& evictor, bool reclaim);
  bool ReclaimerEligible(const Job& job, int pool) const;
  bool VictimAllowed(const PodState& reclaimer, int victim, int pool,
                     const TakenQuota& taken) const;
  // Whether each queue on the reclaimer's path below the one it shares with `victim_queue`
  // (its own queue aside: ReclaimerEligible checks that one for the whole job) stays within its
  // fair share in `pool` with the pod, once the victims in `taken` are gone.
  bool ReclaimerSideWithinFairShare(const PodState& reclaimer, int victim_queue, int pool,
                                    const TakenQuota& taken) const;
  // Whether every pod that evicting `victim` takes along (WithGangPeers) may be evicted by
  // `evictor`: preemptible, and for preemption of strictly lower priority.
  bool GangEvictable(const PodState& evictor, int victim, bool reclaim) const;
  std::vector<int> WithGangPeers(int pod) const;
  // Why evicting `victim` with its gang, on top of `chosen` (with theirs) and of the evictions
  // committed so far, would break a PodDisruptionBudget; nullopt when none forbids it.
  std::optional<std::string> BudgetBlocks(const std::vector<int>& chosen, int victim) const;
  void NoteBlocked(int victim, const PodState& for_pod, const std::string& why);
  // `q` and its ancestors, leaf first, up to (not including) the first one that is also `other`
  // or an ancestor of it: the levels where the two queues' paths have parted.
  std::vector<int> LevelsBelowSharedAncestor(int q, int other) const;
  const QuotaTable& quota() const { return state_.quota(); }

  const SchedulerOptions& options_;
  CycleState& state_;
  ClusterView& view_;
  const std::span<const QueueState> queues_;
  const Gangs& gangs_;
  NodeSearch& search_;
  const QueueOrder& order_;
  const model::DisruptionBudgets& budgets_;
  std::vector<BlockedEviction> blocked_;
  // The job being tried: the budget notes for its pending reason ("pod x on node n (...)").
  std::vector<std::string> job_notes_;
  // Keyed by (signature, pool, shape, queue, priority): CommittedOps() when a single pod last
  // found no victims (a later try can only differ once something else was committed), and the
  // budget notes of that try.
  struct VictimFailure {
    size_t epoch = 0;
    std::vector<std::string> notes;
  };
  std::map<std::tuple<int, int, int, int, int32_t>, VictimFailure> victim_failure_epoch_;
};

}  // namespace gpupool::scheduler
