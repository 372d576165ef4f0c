// Random (SchedulerOptions::policy random), the FGD paper's first baseline: a feasible node drawn
// at random. The node search keeps a score per node version and pod shape (placement_scorer.h),
// so the draw is a hash of the node, its version and the pod's shape: every feasible node is
// equally likely, a node that changes draws again, and a cycle decides the same on the same
// input.

#include <cstdint>

#include "scheduler/cycle_state.h"
#include "scheduler/scorers/placement_scorer.h"

namespace gpupool::scheduler {
namespace {

// SplitMix64's finaliser: a well-mixed 64-bit value from any 64-bit input.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class RandomScorer final : public PlacementScorer {
 public:
  explicit RandomScorer(const CycleState& state) : state_(state) {}

  double Score(const PodState& p, int node, int /*device*/) override {
    const uint64_t draw = Mix(Mix(Mix(static_cast<uint64_t>(node)) ^ state_.NodeVersion(node)) ^
                              static_cast<uint64_t>(p.shape));
    return static_cast<double>(draw >> 11) / static_cast<double>(uint64_t{1} << 53);  // [0, 1)
  }

 private:
  const CycleState& state_;
};

}  // namespace

std::unique_ptr<PlacementScorer> MakeRandomScorer(const CycleState& state) {
  return std::make_unique<RandomScorer>(state);
}

}  // namespace gpupool::scheduler
