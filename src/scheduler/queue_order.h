#pragma once
// QueueOrder: in what order the pending jobs get their turn, and whether its queue's quota lets
// a job take more (module-internal). It answers the question Mesos' sorter answers, "in what
// order do queues get resources", one job at a time: the allocate phase takes Next() until it
// returns -1, checks the job's quota in each node pool it tries (CheckQuota), places it or not,
// and reports back (Decided). Reclaim and preemption ask CheckQuota too.
//
// An implementation reads the queue tree, the QuotaTable (allocation, fair shares, deserved
// quota, limits) and the jobs, and changes none of them; CycleState changes the allocation
// between Next() and Decided(). Implementations:
//   MakeFairShareOrder (fair_share_order.cc): KAI's hierarchical fair-share order, the default.
// A sibling (DRF over dominant shares, a time-based order, ...) is one file with its factory
// here, and one line in the typed contract test (queue_order_test.cc), which checks for each:
//   - every job comes out of Next() exactly once, then -1 (and -1 again);
//   - the jobs of one queue come out by priority (higher first), then age (older first), then
//     job index;
//   - the same inputs and the same reports give the same order;
//   - CheckQuota refuses a job that would take its queue, or an ancestor, beyond its limit in the
//     node pool (saying which queue, and the amounts), and lets a job within the limits through;
//   - QuotaCouldAdmit refuses a job whose request alone is beyond such a limit, and admits every
//     job CheckQuota lets through.

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "scheduler/cycle_types.h"
#include "scheduler/quota_table.h"

namespace gpupool::scheduler {

struct QueueOrderInput {
  std::span<const QueueState> queues;  // the tree; queues with jobs have no children
  const QuotaTable& quota;
  std::span<const Job> jobs;
  std::span<const std::string> pool_names;  // for reasons
  // Seed 003's over-quota switch (ClusterSnapshot::over_quota): off, a limit message says so.
  bool over_quota = true;
};

class QueueOrder {
 public:
  virtual ~QueueOrder() = default;
  // The next job to decide (an index into the input's jobs), or -1 once every job had its turn.
  virtual int Next() = 0;
  // The job Next() returned last was decided: placed (its queue holds more now) or not.
  virtual void Decided(int job, bool placed) = 0;
  // Empty when `job` may take its whole request (Job::quota) in `pool` now, else why not.
  virtual std::string CheckQuota(const Job& job, int pool) const = 0;
  // Whether the quota rules could let `job` into `pool` at all, with nothing allocated to any
  // queue: false makes the job infeasible there (PlacementOutcome). CheckQuota passing implies
  // true.
  virtual bool QuotaCouldAdmit(const Job& job, int pool) const = 0;
};

// The order is built over `input.jobs` as they are when it is made; what `input` refers to
// must outlive the order.
std::unique_ptr<QueueOrder> MakeFairShareOrder(const QueueOrderInput& input);

// The quota rules of Run:ai and KAI, for an implementation's CheckQuota: every queue on the
// job's path stays within its limit in `pool`; a non-preemptible job (priority >=
// kNonPreemptiblePriority) also keeps its queue's non-preemptible pods within the queue's
// deserved quota, where deserved quota binds the queue (QuotaTable::Applies). With
// `nothing_allocated`, as if no queue held anything (for QuotaCouldAdmit).
std::string CheckLimitsAndDeserved(const QueueOrderInput& input, const Job& job, int pool,
                                   bool nothing_allocated = false);

}  // namespace gpupool::scheduler
