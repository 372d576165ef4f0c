// Best fit (SchedulerOptions::policy best-fit): the mean over cpu, memory and GPUs of the share
// of the node's allocatable in use once the pod is placed (a resource the node does not have
// left out), so the node left with the least free capacity, relative to its size, wins.

#include "scheduler/cluster_view.h"
#include "scheduler/scorers/placement_scorer.h"

namespace gpupool::scheduler {
namespace {

class BestFitScorer final : public PlacementScorer {
 public:
  explicit BestFitScorer(const ClusterView& view) : view_(view) {}

  double Score(const PodState& p, int node, int device) override {
    double sum = 0;
    int count = 0;
    for (int dim : {kCpuDim, kMemoryDim}) {
      const int64_t alloc = view_.Allocatable(node, dim);
      if (alloc <= 0) continue;
      const int64_t req = dim == kCpuDim ? p.cpu_req : p.mem_req;
      sum += static_cast<double>(alloc - view_.Free(node, dim) + req) / static_cast<double>(alloc);
      ++count;
    }
    const DevicesAfter after(view_, p, node, device);
    const int64_t gpu_total = int64_t{after.count()} * 1000;
    if (gpu_total > 0) {
      sum += static_cast<double>(gpu_total - after.FreeSum()) / static_cast<double>(gpu_total);
      ++count;
    }
    return count == 0 ? 0 : sum / count;
  }

 private:
  const ClusterView& view_;
};

}  // namespace

std::unique_ptr<PlacementScorer> MakeBestFitScorer(const ClusterView& view) {
  return std::make_unique<BestFitScorer>(view);
}

}  // namespace gpupool::scheduler
