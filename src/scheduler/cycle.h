#pragma once
// Cycle: one scheduling cycle over a snapshot, its run and its setup (module-internal; the steps
// are described in scheduler.h). The parts, each in its own file:
//   cycle_setup.h     queues, pods, gangs and jobs from the snapshot; bound pods bound
//   cycle_state.h     CycleState: placements, quota allocation, bindings, evictions, undo log
//   no_execute.h      step 0, NoExecute evictions and deadlines
//   quota_table.h     deserved quota, limits, fair shares (step 1) and allocation
//   queue_order.h     QueueOrder: whose job is next, and the quota check (step 2's order)
//   node_search.h     NodeSearch: the node for a pod in a node pool (filters, window, scores)
//   scorers/          PlacementScorer: one resource score per placement policy
//   unschedulable.h   why a pod found no node, and the memory of failures
//   reclaim.h         Reclaimer: reclaim and preemption (steps 3 and 4)
// A job tries its node pools in order (the first pod's gpupool.io/node-pool list): the queue
// order's quota check, then every pod through the node search; a gang places at least `need`
// pods or none (the decision is rolled back), and a pod that fails gets its reason. The result
// lists bindings and evictions in decision order, the pods left pending by name with their
// reason and outcome, each queue's share in each node pool where it has quota, a fair share, an
// allocation or a demand (with the demand and weight the share was computed from), and each node
// pool's capacity. A pending pod is infeasible when in none of its job's node pools the quota
// rules could admit the job (QueueOrder::QuotaCouldAdmit) and a node could host the pod empty
// (UnschedulableReasons::FitsEmptyNode); so are the pending pods of a gang whose pods that could
// fit in one node pool are fewer than gang-min still needs.
// Thread contract: one thread, one Run per Cycle.

#include <memory>
#include <string>
#include <vector>

#include "scheduler/cluster_view.h"
#include "scheduler/cycle_setup.h"
#include "scheduler/cycle_state.h"
#include "scheduler/cycle_types.h"
#include "scheduler/node_search.h"
#include "scheduler/queue_order.h"
#include "scheduler/scheduler.h"
#include "scheduler/scorers/placement_scorer.h"
#include "scheduler/unschedulable.h"

namespace gpupool::scheduler {

class Cycle {
 public:
  // `options`, `snapshot`, `view` and `memo` must outlive the cycle. `view`: one built for the
  // snapshot's nodes and reset (ViewCache); nullptr: the cycle builds its own. `memo`: what the
  // setups of the view's earlier cycles kept (the cycle keeps its pods there for the next), or
  // nullptr.
  Cycle(const SchedulerOptions& options, const ClusterSnapshot& snapshot, ClusterView* view,
        SetupMemo* memo);
  Cycle(const Cycle&) = delete;
  Cycle& operator=(const Cycle&) = delete;

  CycleResult Run();

 private:
  // Step 2: every job in the queue order's turn; the jobs that fail are left for step 3.
  void Allocate();
  // On failure, `reason` is each node pool's reason, "; "-separated, each after its pool's
  // name when the job lists several.
  bool TryJob(const Job& job, std::string& reason);
  bool PlaceJobInPool(const Job& job, int pool, std::string& reason);
  // The node for `pod` of `job` in `pool`, or -1 with the reason in `why`.
  int FindNodeOrWhy(const Job& job, const PodState& pod, int pool,
                    const std::vector<int>& gang_nodes, int* device, std::string& why);
  // The reason of a gang that could not place enough of its pods.
  static std::string GangShortReason(const Job& job, int placed, const std::string& first_failure);
  CycleResult Collect();
  // Per pod, whether it is pending in a job that can never be placed as things are
  // (PlacementOutcome::kInfeasible), or can never be placed itself.
  std::vector<char> InfeasiblePods();
  void CollectPending(CycleResult& result);
  void CollectFairShares(CycleResult& result) const;

  const SchedulerOptions& options_;
  const ClusterSnapshot& snapshot_;
  std::unique_ptr<ClusterView> own_view_;  // when the caller gave none
  ClusterView& view_;
  SetupMemo* const memo_;
  CycleSetup setup_;
  CycleState state_;
  std::vector<std::string> pool_names_;
  UnschedulableReasons reasons_;
  std::vector<Job> jobs_;
  std::vector<NoExecuteDeadline> no_execute_deadlines_;
  std::vector<BlockedEviction> blocked_evictions_;
  std::unique_ptr<PlacementScorer> scorer_;
  std::unique_ptr<NodeSearch> search_;
  std::unique_ptr<QueueOrder> order_;
  std::vector<int> failed_jobs_;  // jobs the allocate phase could not place, in that order
  std::vector<int64_t> decision_latency_ns_;
  std::string pool_reason_;  // TryJob's scratch: keeps its capacity across decisions
};

}  // namespace gpupool::scheduler
