// GPU packing (SchedulerOptions::policy gpu-packing): a GPU pod scores the fraction of the
// node's GPU capacity in use once it is placed, plus 1 when a fractional pod shares a device
// that is already partly used, so partly used devices and nodes fill up first and whole devices
// and nodes stay free for large pods. A pod without GPUs scores 1 on a node without GPUs, plus
// half the node's cpu in use once it is placed: it avoids GPU nodes and packs CPU nodes.

#include <algorithm>

#include "scheduler/cluster_view.h"
#include "scheduler/scorers/placement_scorer.h"

namespace gpupool::scheduler {
namespace {

class GpuPackingScorer final : public PlacementScorer {
 public:
  explicit GpuPackingScorer(const ClusterView& view) : view_(view) {}

  double Score(const PodState& p, int node, int device) override {
    if (p.gpu_whole > 0 || p.gpu_fraction > 0) {
      const DevicesAfter after(view_, p, node, device);
      const int64_t gpu_total = int64_t{after.count()} * 1000;
      const double used =
          static_cast<double>(gpu_total - after.FreeSum()) / static_cast<double>(gpu_total);
      const double shared =
          p.gpu_fraction > 0 && device >= 0 && view_.Devices(node)[device] < 1000 ? 1.0 : 0.0;
      return shared + used;
    }
    const int64_t cpu_alloc = std::max<int64_t>(1, view_.Allocatable(node, kCpuDim));
    const int64_t cpu_free = view_.Free(node, kCpuDim);
    const bool gpu_node = view_.node(node).gpu_devices > 0;
    return (gpu_node ? 0.0 : 1.0) + 0.5 * static_cast<double>(cpu_alloc - cpu_free + p.cpu_req) /
                                        static_cast<double>(cpu_alloc);
  }

 private:
  const ClusterView& view_;
};

}  // namespace

std::unique_ptr<PlacementScorer> MakeGpuPackingScorer(const ClusterView& view) {
  return std::make_unique<GpuPackingScorer>(view);
}

}  // namespace gpupool::scheduler
