#include "scheduler/cluster_settings.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string>

namespace gpupool::scheduler {
namespace {

constexpr int kGpu = static_cast<int>(model::QuotaResource::kGpu);
constexpr int kCpu = static_cast<int>(model::QuotaResource::kCpu);
constexpr int kMemory = static_cast<int>(model::QuotaResource::kMemory);

int64_t SumOrUnlimited(int64_t a, int64_t b) {
  if (a == model::kUnlimited || b == model::kUnlimited) return model::kUnlimited;
  return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max() : a + b;
}

// The queue's quota over all the node pools it names, as one node pool's.
model::NodePoolQuota Merged(const model::Queue& queue) {
  model::NodePoolQuota out;
  bool first = true;
  for (const auto& [node_pool, quota] : queue.resources) {
    for (int r = 0; r < model::kNumQuotaResources; ++r) {
      const model::ResourceQuota& in = quota.resources[r];
      model::ResourceQuota& sum = out.resources[r];
      if (first) {
        sum = in;
        continue;
      }
      sum.deserved_milli = SumOrUnlimited(sum.deserved_milli, in.deserved_milli);
      sum.limit_milli = SumOrUnlimited(sum.limit_milli, in.limit_milli);
      sum.over_quota_weight = std::max(sum.over_quota_weight, in.over_quota_weight);
    }
    first = false;
  }
  return out;
}

}  // namespace

void ApplyNodePoolSwitch(const ClusterSettings& settings, std::vector<model::Queue>& queues,
                         std::vector<model::NodePool>& node_pools) {
  if (settings.node_pools) return;
  node_pools.clear();
  for (model::Queue& queue : queues) {
    if (queue.resources.empty()) continue;
    model::NodePoolQuota merged = Merged(queue);
    queue.resources.clear();
    queue.resources[std::string(model::kDefaultNodePool)] = merged;
  }
}

void ApplyClusterSettings(const ClusterSettings& settings, ClusterSnapshot& snapshot) {
  if (!settings.node_pools) {
    for (model::PodScheduling& pod : snapshot.pods) pod.labels.erase(kNodePoolLabel);
  }
  if (!settings.cpu_quota) {
    for (model::Queue& queue : snapshot.queues) {
      for (auto& [node_pool, quota] : queue.resources) {
        quota.resources[kCpu] = model::ResourceQuota{};
        quota.resources[kMemory] = model::ResourceQuota{};
      }
    }
  }
  if (settings.over_quota) return;
  snapshot.over_quota = false;
  // Every node pool, so that a queue's missing entry (deserved 0 GPUs) becomes a limit of 0.
  std::set<std::string> node_pools = {std::string(model::kDefaultNodePool)};
  for (const model::NodePool& pool : snapshot.node_pools) node_pools.insert(pool.name);
  for (model::Queue& queue : snapshot.queues) {
    for (const std::string& name : node_pools) {
      model::NodePoolQuota& quota = queue.resources[name];
      for (int r = 0; r < model::kNumQuotaResources; ++r) {
        model::ResourceQuota& q = quota.resources[r];
        // cpu and memory quotas left at their defaults do not bind (scheduler/quota_table.h).
        if (r != kGpu && q == model::ResourceQuota{}) continue;
        if (q.deserved_milli == model::kUnlimited) continue;
        q.limit_milli = q.limit_milli == model::kUnlimited
                            ? q.deserved_milli
                            : std::min(q.limit_milli, q.deserved_milli);
      }
    }
  }
}

}  // namespace gpupool::scheduler
