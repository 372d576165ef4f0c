#include "scheduler/scorers/placement_scorer.h"

#include <algorithm>
#include <cstdlib>

#include "scheduler/cluster_view.h"
#include "scheduler/cycle_state.h"

namespace gpupool::scheduler {

std::unique_ptr<PlacementScorer> MakeScorer(const SchedulerOptions& options,
                                            const CycleState& state, std::span<const Job> jobs) {
  switch (options.policy) {
    case PlacementPolicy::kFgd:
      return MakeFgdScorer(state, jobs, options.fgd_task_types);
    case PlacementPolicy::kGpuPacking:
      return MakeGpuPackingScorer(state.view());
    case PlacementPolicy::kBestFit:
      return MakeBestFitScorer(state.view());
    case PlacementPolicy::kRandom:
      return MakeRandomScorer(state);
    case PlacementPolicy::kDotProduct:
      return MakeDotProductScorer(state.view());
  }
  std::abort();  // not a PlacementPolicy: Validate and ParsePlacementPolicy let none through
}

DevicesAfter::DevicesAfter(const ClusterView& view, const PodState& pod, int node, int device) {
  const int32_t* own = view.Devices(node);
  count_ = std::min(view.node(node).gpu_devices, 64);
  takes_gpu_ = pod.gpu_whole > 0 || (pod.gpu_fraction > 0 && device >= 0 && device < count_);
  devices_ = own;
  if (!takes_gpu_) return;
  std::copy(own, own + count_, copy_);
  devices_ = copy_;
  if (pod.gpu_whole > 0) {
    int left = pod.gpu_whole;
    for (int d = 0; d < count_ && left > 0; ++d) {
      if (copy_[d] == 1000) {
        copy_[d] = 0;
        --left;
      }
    }
  } else {
    copy_[device] -= pod.gpu_fraction;
  }
}

int64_t DevicesAfter::FreeSum() const {
  int64_t sum = 0;
  for (int d = 0; d < count_; ++d) sum += devices_[d];
  return sum;
}

}  // namespace gpupool::scheduler
