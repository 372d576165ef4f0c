#pragma once
// GPU fragmentation as FGD defines it (Weng et al., "Beware of Fragmentation: Scheduling GPU-
// Sharing Workloads with Fragmentation Gradient Descent", ATC'23), module-internal.
//
// The typical workload is the most common pod shapes among the cycle's pending pods (task
// types by cpu and GPUs, each weighted by its share of those pods). For one task type, the free
// GPU of a node that the type cannot use is: all of it when the type's cpu does not fit;
// otherwise (FitTerm) for a whole-GPU type, the partly used devices' free GPU if enough devices
// are fully free, else all of it; for a fractional type, the free GPU of devices with less than
// the fraction left if one device has enough, else all of it; for a type without GPUs, all of
// it (it can use none). A node's fragmentation is the weighted sum over the task types (0
// without free GPU). FGD places a pod where the fragmentation grows least (fgd_scorer.cc).
//
// This is the paper's definition, as its simulator computes it (hkust-adsl/kubernetes-
// scheduler-simulator, frag.go) and as the replay measures it (replay/metrics.h). Two earlier
// departures from it cost the FGD protocol 0.85 points at 130 % (docs/BENCHMARKS.md, "The FGD
// paper's protocol"): memory in the task types' shape and fit (the shapes split, and a node short
// of memory for one type counted all its GPUs lost), and a type without GPUs counting nothing
// where its cpu fits (which steered CPU pods off GPU nodes they could share harmlessly).
//
// Fragmentation() is the one definition of that sum: callers that keep a node's FitTerms (the
// FGD scorer, per node version) and callers that look at devices once (the devices after a
// GPU pod) pass their FitTerms as a function, evaluated only for the types whose cpu fits. The sum
// is a double added in task type order, so the same terms give the same bits.

#include <cstdint>
#include <span>
#include <vector>

#include "scheduler/cycle_types.h"

namespace gpupool::scheduler {

class CycleState;

struct TaskType {
  int64_t cpu;  // millicores
  int gpu_whole;
  int32_t gpu_fraction;  // milli-GPUs, 0 when whole or none
  double weight;         // share of the pending pods with this shape
};

// What FitTerm needs to know of a node's devices, in one pass over them.
struct DeviceSummary {
  int64_t all = 0;      // free milli-GPUs on all devices
  int64_t partial = 0;  // free milli-GPUs on devices partly used
  int full = 0;         // devices fully free
  int32_t max_free = 0;
};
DeviceSummary SummarizeDevices(const int32_t* devices, int count);

// The free milli-GPUs a task of `type` could not use on the devices when its cpu fits.
int64_t FitTerm(const TaskType& type, const DeviceSummary& summary, const int32_t* devices,
                int count);

// The node's fragmentation for `types`, given its free cpu, the number of devices, the free
// milli-GPUs on them (`all`), and `fit_term(t)`, the FitTerm of types[t].
template <typename FitTermOf>
double Fragmentation(std::span<const TaskType> types, int devices, int64_t all, int64_t cpu_free,
                     FitTermOf fit_term) {
  if (devices == 0 || all == 0) return 0;
  double frag = 0;
  for (size_t t = 0; t < types.size(); ++t) {
    const bool fits = cpu_free >= types[t].cpu;
    frag += types[t].weight * static_cast<double>(fits ? fit_term(t) : all);
  }
  return frag;
}

// The same, with the FitTerms of `devices` computed as needed.
double Fragmentation(std::span<const TaskType> types, const int32_t* devices, int count,
                     int64_t cpu_free);

// The typical workload: the `max_types` most common shapes (cpu, GPUs) among the pods of `jobs`,
// each weighted by its share of them; ties between equally common shapes by shape (cpu, then
// whole GPUs, fraction; smaller first).
std::vector<TaskType> TypicalTaskTypes(const CycleState& state, std::span<const Job> jobs,
                                       int max_types);

}  // namespace gpupool::scheduler
