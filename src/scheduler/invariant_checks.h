#pragma once
// The invariants invariant_test.cc checks on every random scenario, recomputed from the model
// types independently of the scheduler: every pod accounted once, placements that honour taints,
// selectors and node pools, no node or GPU over-committed, queue limits, evictions that the
// quota rules allow on both sides of a reclaim, and gangs whole or not at all.

#include <array>
#include <cstdint>
#include <string>

#include "model/k8s.h"
#include "model/queue.h"
#include "scheduler/scheduler.h"

namespace gpupool::scheduler::invariants {

// A quantity as the checks count it: cpu in milli-cores, everything else in units.
int64_t Dim(const model::ResourceList& list, const std::string& name);
// A pod's GPUs in milli-GPUs (a fraction from its annotation, else whole GPUs).
int64_t GpuMilli(const model::PodScheduling& p);

using QuotaAmounts = std::array<int64_t, model::kNumQuotaResources>;  // gpu milli, cpu milli, bytes
QuotaAmounts PodQuota(const model::PodScheduling& pod);

struct ReclaimCoverage {
  int steps = 0;  // pods placed by reclaim
  // ... whose victims diverge from the reclaimer at different levels (a sibling project's pod
  // and another team's in one step)
  int victims_at_two_levels = 0;
  // ... where a queue above the reclaimer's own is within its fair share only because a victim
  // of the same step below it is gone (what ReclaimerSideWithinFairShare's `taken` is for)
  int relied_on_a_victim_of_the_step = 0;

  ReclaimCoverage& operator+=(const ReclaimCoverage& o) {
    steps += o.steps;
    victims_at_two_levels += o.victims_at_two_levels;
    relied_on_a_victim_of_the_step += o.relied_on_a_victim_of_the_step;
    return *this;
  }
};

// Checks the invariants on one cycle's result (EXPECT_*), the capacity and limits only when
// the scenario started within them (`initial_consistent`); says how much reclaim it covered.
ReclaimCoverage CheckInvariants(const ClusterSnapshot& s, const CycleResult& r,
                                bool initial_consistent);

}  // namespace gpupool::scheduler::invariants
