#include "scheduler/queue_order.h"

namespace gpupool::scheduler {
namespace {

std::string Amounts(int r, int64_t used, int64_t requested) {
  return " (" + FormatQuota(r, used) + " in use, " + FormatQuota(r, requested) + " requested)";
}

}  // namespace

std::string CheckLimitsAndDeserved(const QueueOrderInput& input, const Job& job, int pool,
                                   bool nothing_allocated) {
  const QuotaTable& quota = input.quota;
  const QuotaVector& req = job.quota;
  for (int q = job.queue; q >= 0; q = input.queues[q].parent) {
    for (int r = 0; r < kQ; ++r) {
      const int64_t limit = quota.Limit(q, pool, r);
      if (req[r] == 0 || limit == model::kUnlimited) continue;
      const int64_t used = nothing_allocated ? 0 : quota.Allocated(q, pool, r);
      if (used + req[r] > limit) {
        return "queue " + input.queues[q].name + " is at its limit of " + FormatQuota(r, limit) +
               " " + std::string(model::kQuotaResourceK8sNames[r]) + " in node pool " +
               input.pool_names[pool] + Amounts(r, used, req[r]);
      }
    }
  }
  if (job.priority < kNonPreemptiblePriority) return "";
  for (int r = 0; r < kQ; ++r) {
    const int64_t deserved = quota.Deserved(job.queue, pool, r);
    if (req[r] == 0 || deserved == model::kUnlimited || !quota.Applies(job.queue, pool, r)) {
      continue;
    }
    const int64_t used = nothing_allocated ? 0 : quota.AllocatedNonPreemptible(job.queue, pool, r);
    if (used + req[r] > deserved) {
      return "queue " + input.queues[job.queue].name +
             ": pods with priority >= " + std::to_string(kNonPreemptiblePriority) +
             " are not preemptible and only use deserved quota, " + FormatQuota(r, deserved) + " " +
             std::string(model::kQuotaResourceK8sNames[r]) + " in node pool " +
             input.pool_names[pool] + Amounts(r, used, req[r]);
    }
  }
  return "";
}

}  // namespace gpupool::scheduler
