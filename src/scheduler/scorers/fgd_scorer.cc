// Fragmentation gradient descent (SchedulerOptions::policy fgd, the default): a pod scores the
// fragmentation of the node before minus after placing it (fragmentation.h), so the node whose
// fragmentation grows least (or shrinks most) wins; 0.001 x the share of the node's GPUs in use
// afterwards breaks near-ties towards fuller nodes.
//
// Per node it keeps, for the node's version (CycleState::NodeVersion), the fragmentation now and
// the FitTerm of each task type, which depend on the devices only: a pod without GPUs leaves the
// devices as they are, so its "after" is the same terms against the cpu left, with no
// walk over the devices.

#include <algorithm>

#include "scheduler/cluster_view.h"
#include "scheduler/cycle_state.h"
#include "scheduler/scorers/fragmentation.h"
#include "scheduler/scorers/placement_scorer.h"

namespace gpupool::scheduler {
namespace {

class FgdScorer final : public PlacementScorer {
 public:
  FgdScorer(const CycleState& state, std::vector<TaskType> types)
      : state_(state),
        view_(state.view()),
        types_(std::move(types)),
        before_(view_.NumNodes(), 0),
        version_(view_.NumNodes(), 0),
        fit_terms_(static_cast<size_t>(view_.NumNodes()) * types_.size(), 0),
        all_(view_.NumNodes(), 0) {}

  double Score(const PodState& p, int node, int device) override;

 private:
  // Brings the node's fragmentation and FitTerms up to date with its version.
  void Refresh(int node);

  const CycleState& state_;
  const ClusterView& view_;
  const std::vector<TaskType> types_;
  std::vector<double> before_;      // fragmentation of each node now
  std::vector<uint32_t> version_;   // the node version before_ is of (0: none)
  std::vector<int64_t> fit_terms_;  // node * types_.size() + type
  std::vector<int64_t> all_;        // free milli-GPUs of each node
};

void FgdScorer::Refresh(int node) {
  const uint32_t version = state_.NodeVersion(node);
  if (version_[node] == version) return;
  const int devices = view_.node(node).gpu_devices;
  const int32_t* free = view_.Devices(node);
  const DeviceSummary summary = SummarizeDevices(free, devices);
  int64_t* terms = &fit_terms_[node * types_.size()];
  for (size_t t = 0; t < types_.size(); ++t) terms[t] = FitTerm(types_[t], summary, free, devices);
  all_[node] = summary.all;
  before_[node] = Fragmentation(types_, devices, summary.all, view_.Free(node, kCpuDim),
                                [&](size_t t) { return terms[t]; });
  version_[node] = version;
}

double FgdScorer::Score(const PodState& p, int node, int device) {
  Refresh(node);
  const NodeView& v = view_.node(node);
  const DevicesAfter after(view_, p, node, device);
  const int64_t cpu_after = view_.Free(node, kCpuDim) - p.cpu_req;
  double later;
  if (p.gpu_whole == 0 && p.gpu_fraction == 0) {
    const int64_t* terms = &fit_terms_[node * types_.size()];
    later = Fragmentation(types_, v.gpu_devices, all_[node], cpu_after,
                          [&](size_t t) { return terms[t]; });
  } else {
    const int counted = after.takes_gpu() ? after.count() : v.gpu_devices;
    later = Fragmentation(types_, after.data(), counted, cpu_after);
  }
  // all_ is the free GPU of all the node's devices: the free GPU after, when the pod takes none
  // (and the node has no more than the 64 devices DevicesAfter counts).
  const int64_t gpu_free_after =
      !after.takes_gpu() && v.gpu_devices <= 64 ? all_[node] : after.FreeSum();
  const int64_t gpu_total = int64_t{after.count()} * 1000;
  // Less fragmentation growth is better; ties go to the node whose GPUs are more used.
  const double used = gpu_total == 0 ? 0.0
                                     : static_cast<double>(gpu_total - gpu_free_after) /
                                           static_cast<double>(gpu_total);
  return (before_[node] - later) + 0.001 * used;
}

}  // namespace

std::unique_ptr<PlacementScorer> MakeFgdScorer(const CycleState& state, std::span<const Job> jobs,
                                               int task_types) {
  return std::make_unique<FgdScorer>(state, TypicalTaskTypes(state, jobs, task_types));
}

}  // namespace gpupool::scheduler
