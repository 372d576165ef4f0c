#pragma once
// PlacementScorer: the resource score of a placement policy (SchedulerOptions::policy), one
// implementation per policy, each in its own file (module-internal):
//   fgd          fgd_scorer.cc          least growth of GPU fragmentation (fragmentation.h)
//   gpu-packing  gpu_packing_scorer.cc  fill partly used GPUs and GPU nodes; CPU pods avoid GPU
//                                       nodes, and on them go where no GPU is free
//   best-fit     best_fit_scorer.cc     least cpu and GPU left on the node, in absolute amounts
//   random       random_scorer.cc       a feasible node drawn at random (the FGD paper's baseline)
//   dot-product  dot_product_scorer.cc  least dot product of the pod's and the node's free cpu
//                                       and GPUs (the FGD paper's baseline, after Tetris); CPU
//                                       pods go where no GPU is free first
// A scorer only reads the cycle's state. The node search (node_search.h) asks it for the raw
// score of each feasible node it visits and keeps the score per node version and pod shape, so
// a score must depend on nothing but the node's state now and the pod's requests (and on what
// the scorer learnt before the first decision, e.g. FGD's typical workload). Higher is better;
// the search normalises the raw scores to 0..100 over the visited nodes and counts them twice in
// kube-scheduler's weighted sum, and ties go to the node first by name, not to the scorer.

#include <cstdint>
#include <memory>
#include <span>

#include "scheduler/cycle_types.h"
#include "scheduler/scheduler.h"

namespace gpupool::scheduler {

class ClusterView;
class CycleState;

class PlacementScorer {
 public:
  virtual ~PlacementScorer() = default;
  // Raw score of placing `pod` on `node` as the node is now; `device` is the device a fractional
  // pod would take (CycleState::GpuFits), -1 for other pods.
  virtual double Score(const PodState& pod, int node, int device) = 0;
};

// The scorer of `options.policy`. FGD learns its typical workload from the pods of `jobs`.
std::unique_ptr<PlacementScorer> MakeScorer(const SchedulerOptions& options,
                                            const CycleState& state, std::span<const Job> jobs);
std::unique_ptr<PlacementScorer> MakeFgdScorer(const CycleState& state, std::span<const Job> jobs,
                                               int task_types);
std::unique_ptr<PlacementScorer> MakeGpuPackingScorer(const ClusterView& view);
std::unique_ptr<PlacementScorer> MakeBestFitScorer(const ClusterView& view);
std::unique_ptr<PlacementScorer> MakeRandomScorer(const CycleState& state);
std::unique_ptr<PlacementScorer> MakeDotProductScorer(const ClusterView& view);

// A node's GPU devices (milli-GPUs free each) once `pod` is placed on it: a whole-GPU pod on
// the lowest fully free devices, a fractional pod on `device`; the node's own devices when the
// pod takes none. Only the first 64 devices are counted.
class DevicesAfter {
 public:
  DevicesAfter(const ClusterView& view, const PodState& pod, int node, int device);
  const int32_t* data() const { return devices_; }
  int count() const { return count_; }  // devices counted: at most 64
  bool takes_gpu() const { return takes_gpu_; }
  int64_t FreeSum() const;  // free milli-GPUs over the counted devices

 private:
  int32_t copy_[64];
  const int32_t* devices_;
  int count_;
  bool takes_gpu_;
};

}  // namespace gpupool::scheduler
