#pragma once
// Fair share of one resource in one node pool over a queue tree (KAI-Scheduler's proportion
// plugin, research A1), in integer arithmetic.
//
// Top-down: the top-level queues (departments) share the node pool's capacity; each queue's
// fair share is then shared among its children the same way. Among siblings sharing `capacity`:
//   1. requestable = min(demand, limit) (limit kUnlimited = demand);
//   2. deserved pass: each gets min(deserved, requestable) (deserved kUnlimited = requestable),
//      even when the sum of deserved exceeds the capacity (no scaling down);
//   3. over-quota pass, by queue priority tiers (highest first): what is left is shared in rounds
//      by over_quota_weight; a queue's slice is floor(left * w / sum w) whole units (`unit`
//      milli-units: 1 GPU, 1 millicore, 1 byte) unless its remaining request is smaller, in which
//      case it gets exactly that and another round runs; weight 0 gets nothing;
//   4. leftovers: queues with the largest fractional remainders of their last slice get one more
//      unit each (ties: queue order, i.e. name), capped by their remaining request.
// Every amount is in the resource's accounting unit (milli-GPU, millicores, bytes).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace gpupool::scheduler {

inline constexpr int64_t kUnlimitedAmount = -1;

struct FairShareQueue {
  int parent = -1;  // index into the same vector; -1 = top level
  int64_t priority = 0;
  int64_t deserved = 0;  // kUnlimitedAmount = everything
  int64_t limit = kUnlimitedAmount;
  int64_t over_quota_weight = 1;
  // Allocated + pending request of this queue's own pods (not its children's: the tree sums).
  int64_t demand = 0;
};

// Fair share of each queue, same order as `queues`. Queues must be ordered so that ties break
// by position (callers sort by name). Parents need not precede children.
std::vector<int64_t> ComputeFairShares(int64_t capacity, std::span<const FairShareQueue> queues,
                                       int64_t unit);

// One level: siblings sharing `capacity`; `demands` already summed over subtrees.
struct SiblingInput {
  int64_t priority = 0;
  int64_t deserved = 0;
  int64_t limit = kUnlimitedAmount;
  int64_t over_quota_weight = 1;
  int64_t demand = 0;
};
// How DivideAmongSiblings reached its result, step by step, for explanations (the dashboard's
// "why is my fair share this"). Amounts are in the resource's accounting unit.
struct FairShareTrace {
  std::vector<int64_t> requestable;    // per sibling: min(demand, limit)
  std::vector<int64_t> deserved_pass;  // per sibling: what step 2 gave
  int64_t left_after_deserved = 0;     // capacity minus step 2 (negative: deserved oversubscribed)
  struct Round {
    int64_t priority = 0;        // the tier
    int64_t available = 0;       // what the round shared
    int64_t weight_sum = 0;      // of the siblings still wanting more
    std::vector<int64_t> given;  // per sibling (0 for those not in the round)
  };
  std::vector<Round> rounds;
  std::vector<int64_t> leftover;  // per sibling: step 4's extra units
  int64_t unused = 0;             // capacity nobody asked for
};

// `trace` (optional) records the steps.
std::vector<int64_t> DivideAmongSiblings(int64_t capacity, std::span<const SiblingInput> siblings,
                                         int64_t unit, FairShareTrace* trace = nullptr);

}  // namespace gpupool::scheduler
