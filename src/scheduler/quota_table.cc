#include "scheduler/quota_table.h"

#include "common/saturating.h"
#include "scheduler/cluster_view.h"
#include "scheduler/fair_share.h"

namespace gpupool::scheduler {
namespace {

// Units of whole-unit fair-share rounding: 1 GPU, 1 millicore, 1 byte.
constexpr std::array<int64_t, kQ> kQuotaUnit = {1000, 1, 1};

}  // namespace

int64_t ToQuotaUnits(int r, int64_t milli) {
  if (milli == model::kUnlimited) return model::kUnlimited;
  return r == kMemQ ? (milli + 999) / 1000 : milli;
}

std::string FormatQuota(int r, int64_t amount) {
  if (r == kMemQ) {
    return model::FormatQuotaAmount(model::QuotaResource::kMemory,
                                    amount == model::kUnlimited ? amount : amount * 1000);
  }
  return model::FormatQuotaAmount(static_cast<model::QuotaResource>(r), amount);
}

QuotaTable::QuotaTable(std::span<const QueueState> queues, int pools) : pools_(pools) {
  for (const QueueState& q : queues) {
    parent_.push_back(q.parent);
    priority_.push_back(q.priority);
  }
  const size_t n = Size();
  deserved_.assign(n, 0);
  limit_.assign(n, model::kUnlimited);
  weight_.assign(n, 1);
  demand_.assign(n, 0);
  applies_.assign(n, 0);
  fair_share_.assign(n, 0);
  allocated_.assign(n, 0);
  allocated_np_.assign(n, 0);
  own_allocated_.assign(n, 0);
}

QuotaTable QuotaTable::Resolve(std::span<const QueueState> queues, const ClusterView& view) {
  QuotaTable table(queues, view.NumPools());
  for (size_t q = 0; q < queues.size(); ++q) {
    const model::Queue* config = queues[q].config;
    if (config == nullptr) continue;
    for (int pool = 0; pool < table.pools_; ++pool) {
      auto it = config->resources.find(view.PoolName(pool));
      for (int r = 0; r < kQ; ++r) {
        if (it == config->resources.end()) {
          table.applies_[table.At(static_cast<int>(q), pool, r)] = r == kGpuQ;
          continue;
        }
        const model::ResourceQuota& quota = it->second.resources[r];
        table.Set(static_cast<int>(q), pool, r, quota,
                  r == kGpuQ || quota != model::ResourceQuota{});
      }
    }
  }
  return table;
}

void QuotaTable::Set(int q, int pool, int r, const model::ResourceQuota& quota, bool applies) {
  const size_t i = At(q, pool, r);
  deserved_[i] = ToQuotaUnits(r, quota.deserved_milli);
  limit_[i] = ToQuotaUnits(r, quota.limit_milli);
  weight_[i] = quota.over_quota_weight;
  applies_[i] = applies ? 1 : 0;
}

void QuotaTable::ComputeFairShares(std::span<const int64_t> demand,
                                   std::span<const int64_t> capacity) {
  demand_.assign(demand.begin(), demand.end());
  const int nq = NumQueues();
  std::vector<FairShareQueue> input(nq);
  for (int pool = 0; pool < pools_; ++pool) {
    for (int r = 0; r < kQ; ++r) {
      for (int q = 0; q < nq; ++q) {
        const size_t i = At(q, pool, r);
        input[q].parent = parent_[q];
        input[q].priority = priority_[q];
        input[q].deserved = deserved_[i];
        input[q].limit = limit_[i];
        input[q].over_quota_weight = weight_[i];
        input[q].demand = demand[i];
      }
      std::vector<int64_t> shares = scheduler::ComputeFairShares(
          capacity[static_cast<size_t>(pool) * kQ + r], input, kQuotaUnit[r]);
      for (int q = 0; q < nq; ++q) fair_share_[At(q, pool, r)] = shares[q];
    }
  }
}

void QuotaTable::Add(int queue, int pool, const QuotaVector& amounts, bool preemptible, int sign) {
  if (queue >= 0) {
    for (int r = 0; r < kQ; ++r) {
      int64_t& own = own_allocated_[At(queue, pool, r)];
      own = SaturatingAdd(own, sign * amounts[r]);
    }
  }
  for (int q = queue; q >= 0; q = parent_[q]) {
    for (int r = 0; r < kQ; ++r) {
      int64_t& allocated = allocated_[At(q, pool, r)];
      allocated = SaturatingAdd(allocated, sign * amounts[r]);
      if (!preemptible) {
        int64_t& non_preemptible = allocated_np_[At(q, pool, r)];
        non_preemptible = SaturatingAdd(non_preemptible, sign * amounts[r]);
      }
    }
  }
}

}  // namespace gpupool::scheduler
