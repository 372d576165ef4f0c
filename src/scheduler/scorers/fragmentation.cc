#include "scheduler/scorers/fragmentation.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "scheduler/cluster_view.h"
#include "scheduler/cycle_state.h"

namespace gpupool::scheduler {

DeviceSummary SummarizeDevices(const int32_t* devices, int count) {
  DeviceSummary s;
  for (int d = 0; d < count; ++d) {
    s.all += devices[d];
    if (devices[d] >= 1000) {
      ++s.full;
    } else {
      s.partial += devices[d];
    }
    s.max_free = std::max(s.max_free, devices[d]);
  }
  return s;
}

int64_t FitTerm(const TaskType& type, const DeviceSummary& summary, const int32_t* devices,
                int count) {
  if (type.gpu_whole > 0) return summary.full >= type.gpu_whole ? summary.partial : summary.all;
  if (type.gpu_fraction == 0) return summary.all;  // no GPUs: it can use none of them
  if (summary.max_free < type.gpu_fraction) return summary.all;
  int64_t unusable = 0;
  for (int d = 0; d < count; ++d) {
    if (devices[d] < type.gpu_fraction) unusable += devices[d];
  }
  return unusable;
}

double Fragmentation(std::span<const TaskType> types, const int32_t* devices, int count,
                     int64_t cpu_free) {
  if (count == 0) return 0;
  const DeviceSummary summary = SummarizeDevices(devices, count);
  return Fragmentation(types, count, summary.all, cpu_free,
                       [&](size_t t) { return FitTerm(types[t], summary, devices, count); });
}

std::vector<TaskType> TypicalTaskTypes(const CycleState& state, std::span<const Job> jobs,
                                       int max_types) {
  // Per GPU demand (whole GPUs, fraction): how many pods, and the least cpu one of them asks.
  struct Demand {
    int count = 0;
    int64_t min_cpu = std::numeric_limits<int64_t>::max();
  };
  std::map<std::pair<int, int32_t>, Demand> demands;
  int total = 0;
  for (const Job& job : jobs) {
    for (int pod : job.pods) {
      const PodState& p = state.pod(pod);
      Demand& d = demands[{p.gpu_whole, p.gpu_fraction}];
      ++d.count;
      d.min_cpu = std::min(d.min_cpu, p.cpu_req);
      ++total;
    }
  }
  std::vector<std::pair<int, std::tuple<int64_t, int, int32_t>>> ranked;
  for (const auto& [gpus, d] : demands)
    ranked.push_back({d.count, {d.min_cpu, gpus.first, gpus.second}});
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  if (static_cast<int>(ranked.size()) > max_types) ranked.resize(max_types);
  std::vector<TaskType> types;
  for (const auto& [count, shape] : ranked) {
    auto [cpu, whole, fraction] = shape;
    types.push_back({cpu, whole, fraction, static_cast<double>(count) / total});
  }
  return types;
}

}  // namespace gpupool::scheduler
