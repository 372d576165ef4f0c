// FairShareOrder: KAI-Scheduler's queue order, hierarchical as KAI's is (QueueOrder,
// queue_order.h). Among the top-level queues (departments, and projects without a parent) with
// jobs left below them, the first by rank; then among its children the same way, down to a
// leaf queue (a project), whose next job goes. Rank, smaller first:
//   1. at or below its fair share (dominant allocated / fair share <= 1) before above it;
//   2. whose next job (a department: the next job of its first descendant) stays within its
//      deserved quota in one of the job's node pools, before the others;
//   3. higher queue priority;
//   4. the smaller dominant share: the largest, over gpu, cpu and memory with something
//      allocated, of allocated / fair share summed over the node pools (no fair share: 1e18);
//   5. name (queue index).
// A department's allocation and fair share include its projects'. Inside a queue, jobs go by
// priority (higher first), then age (older first), then job index. A decision only changes the
// rank of its queue and of the queue's ancestors (queues with jobs are leaves), so only those
// are ranked again; shares are computed again only after a job is placed.

#include <algorithm>
#include <optional>
#include <set>

#include "common/saturating.h"
#include "scheduler/queue_order.h"

namespace gpupool::scheduler {
namespace {

class FairShareOrder final : public QueueOrder {
 public:
  explicit FairShareOrder(const QueueOrderInput& input);

  int Next() override;
  void Decided(int job, bool placed) override;
  std::string CheckQuota(const Job& job, int pool) const override {
    return CheckLimitsAndDeserved(input_, job, pool);
  }
  bool QuotaCouldAdmit(const Job& job, int pool) const override {
    return CheckLimitsAndDeserved(input_, job, pool, /*nothing_allocated=*/true).empty();
  }

 private:
  struct Rank {
    bool over_fair_share;
    bool beyond_deserved;  // its next job would not stay within deserved quota
    int64_t neg_priority;
    double share;
    int queue;
    auto operator<=>(const Rank&) const = default;
  };
  Rank RankOf(int q, const Job& next_job) const;
  double DominantShare(int q) const;
  bool WithinDeserved(int q, const Job& job) const;
  int ParentSet(int q) const { return queues()[q].parent >= 0 ? queues()[q].parent : root_; }
  int FirstLeaf(int q) const;
  // (Re)enters q in its parent's set with its current rank, or leaves it out when nothing is
  // left below it; then the same for its ancestors.
  void Refresh(int q);
  void RefreshUp(int q);
  std::span<const QueueState> queues() const { return input_.queues; }

  const QueueOrderInput input_;
  const int root_;                            // index of the set of top-level queues
  std::vector<std::vector<int>> per_queue_;   // jobs of each leaf queue, in turn order
  std::vector<size_t> next_;                  // per queue: its next job in per_queue_
  std::vector<std::set<Rank>> children_;      // by parent; root_ = top level
  std::vector<std::optional<Rank>> entered_;  // each queue's rank in its parent's set
  std::vector<double> share_;                 // DominantShare, as of the last placement
  int last_queue_ = -1;                       // the queue of the job Next() returned
};

FairShareOrder::FairShareOrder(const QueueOrderInput& input)
    : input_(input),
      root_(static_cast<int>(input.queues.size())),
      per_queue_(input.queues.size()),
      next_(input.queues.size(), 0),
      children_(input.queues.size() + 1),
      entered_(input.queues.size()),
      share_(input.queues.size(), 0) {
  const std::span<const Job> jobs = input_.jobs;
  for (size_t j = 0; j < jobs.size(); ++j) per_queue_[jobs[j].queue].push_back(static_cast<int>(j));
  for (auto& list : per_queue_) {
    std::stable_sort(list.begin(), list.end(), [&](int a, int b) {
      if (jobs[a].priority != jobs[b].priority) return jobs[a].priority > jobs[b].priority;
      return jobs[a].arrival < jobs[b].arrival;
    });
  }
  for (size_t q = 0; q < queues().size(); ++q) share_[q] = DominantShare(static_cast<int>(q));
  for (size_t q = 0; q < queues().size(); ++q) {
    if (!per_queue_[q].empty()) RefreshUp(static_cast<int>(q));
  }
}

double FairShareOrder::DominantShare(int q) const {
  const QuotaTable& quota = input_.quota;
  double share = 0;
  for (int r = 0; r < kQ; ++r) {
    int64_t alloc = 0, fs = 0;
    for (int pool = 0; pool < quota.NumPools(); ++pool) {
      alloc += quota.Allocated(q, pool, r);
      fs += quota.FairShare(q, pool, r);
    }
    if (alloc == 0) continue;
    share = std::max(share, fs == 0 ? 1e18 : static_cast<double>(alloc) / static_cast<double>(fs));
  }
  return share;
}

// Within deserved quota in at least one of the job's node pools: the job may go to any of them
// (QueueDemand counts its demand in each), so a fallback pool where the queue still has deserved
// quota left ranks the queue as one of those within deserved.
bool FairShareOrder::WithinDeserved(int q, const Job& job) const {
  const QuotaTable& quota = input_.quota;
  for (int pool : job.pools) {
    bool within = true;
    for (int r = 0; r < kQ && within; ++r) {
      if (job.quota[r] == 0 || !quota.Applies(q, pool, r)) continue;
      const int64_t deserved = quota.Deserved(q, pool, r);
      within = deserved == model::kUnlimited ||
               SaturatingAdd(quota.Allocated(q, pool, r), job.quota[r]) <= deserved;
    }
    if (within) return true;
  }
  return false;
}

FairShareOrder::Rank FairShareOrder::RankOf(int q, const Job& next_job) const {
  return {share_[q] > 1, !WithinDeserved(q, next_job), -queues()[q].priority, share_[q], q};
}

int FairShareOrder::FirstLeaf(int q) const {
  while (queues()[q].has_children) q = children_[q].begin()->queue;
  return q;
}

void FairShareOrder::Refresh(int q) {
  std::set<Rank>& siblings = children_[ParentSet(q)];
  const bool has_jobs =
      queues()[q].has_children ? !children_[q].empty() : next_[q] < per_queue_[q].size();
  std::optional<Rank> rank;
  if (has_jobs) {
    const int leaf = FirstLeaf(q);
    rank = RankOf(q, input_.jobs[per_queue_[leaf][next_[leaf]]]);
  }
  if (rank == entered_[q]) return;  // most decisions that fail leave the rank as it was
  if (entered_[q]) siblings.erase(*entered_[q]);
  entered_[q] = rank;
  if (rank) siblings.insert(*rank);
}

void FairShareOrder::RefreshUp(int q) {
  for (int a = q; a >= 0; a = queues()[a].parent) Refresh(a);
}

int FairShareOrder::Next() {
  if (children_[root_].empty()) return -1;
  last_queue_ = FirstLeaf(children_[root_].begin()->queue);
  return per_queue_[last_queue_][next_[last_queue_]++];
}

void FairShareOrder::Decided(int /*job*/, bool placed) {
  const int q = last_queue_;
  if (placed) {
    for (int a = q; a >= 0; a = queues()[a].parent) share_[a] = DominantShare(a);
  }
  RefreshUp(q);
}

}  // namespace

std::unique_ptr<QueueOrder> MakeFairShareOrder(const QueueOrderInput& input) {
  return std::make_unique<FairShareOrder>(input);
}

}  // namespace gpupool::scheduler
