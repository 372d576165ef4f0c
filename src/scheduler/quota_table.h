#pragma once
// QuotaTable: a cycle's quota figures per (queue, node pool, resource), module-internal. For
// each: the settings (deserved quota, limit, over-quota weight, and whether deserved quota binds
// the queue), the fair share computed from them (fair_share.h), and what the queue holds now
// (allocated, and of that what non-preemptible pods hold). A pod counts in its queue and every
// ancestor: a department holds its projects' pods.
//
// Amounts are in quota units (cycle_types.h: milli-GPUs, millicores, bytes); model::kUnlimited
// is "no limit" for a limit and "everything" for deserved quota. Settings are resolved once per
// cycle into flat arrays, so the hot path never looks a node pool up by name. Only CycleState
// changes the allocation (Add); the rest reads.

#include <cstdint>
#include <span>
#include <vector>

#include "scheduler/cycle_types.h"

namespace gpupool::scheduler {

class ClusterView;

class QuotaTable {
 public:
  // No quota anywhere: deserved 0, no limit, weight 1, deserved not binding (the implicit
  // default queue's settings). `queues` gives the tree (parent) and the queue priorities.
  QuotaTable(std::span<const QueueState> queues, int pools);
  // The settings of each queue's config in each node pool of `view`. Deserved GPUs bind every
  // configured queue; cpu and memory only where the queue sets them for that node pool (as
  // Run:ai does with CPU quota disabled).
  static QuotaTable Resolve(std::span<const QueueState> queues, const ClusterView& view);

  int NumQueues() const { return static_cast<int>(parent_.size()); }
  int NumPools() const { return pools_; }
  int Parent(int q) const { return parent_[q]; }

  int64_t Deserved(int q, int pool, int r) const { return deserved_[At(q, pool, r)]; }
  int64_t Limit(int q, int pool, int r) const { return limit_[At(q, pool, r)]; }
  int64_t Weight(int q, int pool, int r) const { return weight_[At(q, pool, r)]; }
  // Whether deserved quota of `r` binds the queue in `pool`.
  bool Applies(int q, int pool, int r) const { return applies_[At(q, pool, r)] != 0; }
  int64_t FairShare(int q, int pool, int r) const { return fair_share_[At(q, pool, r)]; }
  // The queue's own demand the fair share was computed from (0 before ComputeFairShares).
  int64_t Demand(int q, int pool, int r) const { return demand_[At(q, pool, r)]; }
  int64_t Allocated(int q, int pool, int r) const { return allocated_[At(q, pool, r)]; }
  int64_t AllocatedNonPreemptible(int q, int pool, int r) const {
    return allocated_np_[At(q, pool, r)];
  }
  // What the queue's own pods hold (Allocated without its children's).
  int64_t OwnAllocated(int q, int pool, int r) const { return own_allocated_[At(q, pool, r)]; }

  void Set(int q, int pool, int r, const model::ResourceQuota& quota, bool applies);
  // Fair share of every queue in every node pool and resource: `demand` holds each queue's own
  // demand (allocated + pending, not its children's), indexed as the table; `capacity[pool * kQ
  // + r]` is the node pool's capacity.
  void ComputeFairShares(std::span<const int64_t> demand, std::span<const int64_t> capacity);
  // Adds (sign +1) or takes back (sign -1) `amounts` in `pool` for `queue` and its ancestors.
  void Add(int queue, int pool, const QuotaVector& amounts, bool preemptible, int sign);

  // Index of (q, pool, r) in a vector laid out like the table's (e.g. ComputeFairShares' demand).
  size_t At(int q, int pool, int r) const {
    return (static_cast<size_t>(q) * pools_ + pool) * kQ + r;
  }
  size_t Size() const { return parent_.size() * pools_ * kQ; }

 private:
  int pools_ = 0;
  std::vector<int> parent_;
  std::vector<int64_t> priority_;
  std::vector<int64_t> deserved_, limit_, weight_, demand_, fair_share_, allocated_, allocated_np_,
      own_allocated_;
  std::vector<char> applies_;
};

// What ToQuotaUnits makes of a model::ResourceQuota amount (milli-units) for resource `r`.
int64_t ToQuotaUnits(int r, int64_t milli);

}  // namespace gpupool::scheduler
