#include "scheduler/queue_order.h"

namespace gpupool::scheduler {
namespace {

std::string Amounts(int r, int64_t used, int64_t requested) {
  return " (" + FormatQuota(r, used) + " in use, " + FormatQuota(r, requested) + " requested)";
}

// OSMO's names for the priority classes (DESIGN section 4), else the number.
std::string PriorityText(int32_t priority) {
  if (priority == 125) return "HIGH priority";
  if (priority == kNonPreemptiblePriority) return "NORMAL priority";
  return "priority " + std::to_string(priority);
}

std::string QuotaAmount(int r, int64_t amount) {
  if (r == static_cast<int>(model::QuotaResource::kGpu)) {
    return FormatQuota(r, amount) + (amount == 1000 ? " GPU" : " GPUs");
  }
  return FormatQuota(r, amount) + " " + std::string(model::kQuotaResourceK8sNames[r]);
}

}  // namespace

// Appended to limit messages while seed 003's over-quota switch is off.
constexpr char kOverQuotaOff[] =
    "; over-quota use is off in this cluster (BACKEND default: enable_over_quota false), so "
    "every queue's limit is its deserved quota";

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
               input.pool_names[pool] + Amounts(r, used, req[r]) +
               (input.over_quota ? "" : kOverQuotaOff);
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
      // The one rule (DESIGN section 4): over quota means preemptible, so only preemptible work
      // (LOW) goes over the deserved quota.
      return "queue " + input.queues[job.queue].name + ": " + PriorityText(job.priority) +
             " uses only deserved quota: " + QuotaAmount(r, deserved) + " in node pool " +
             input.pool_names[pool] + "; LOW may use idle GPUs over quota" +
             Amounts(r, used, req[r]);
    }
  }
  return "";
}

}  // namespace gpupool::scheduler
