#include "replay/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

namespace gpupool::replay {

Distribution Summarize(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  // Nearest rank: the smallest value with at least p of the sample at or below it.
  auto rank = [&](double p) {
    size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(n)));
    return values[std::clamp<size_t>(k, 1, n) - 1];
  };
  d.count = static_cast<int64_t>(n);
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(n);
  d.p50 = rank(0.50);
  d.p90 = rank(0.90);
  d.p99 = rank(0.99);
  d.max = values.back();
  return d;
}

std::vector<TaskShape> TypicalShapes(std::span<const TaskShape> pods, double popularity) {
  using Key = std::tuple<int64_t, int, int32_t>;
  std::map<Key, int64_t> counts;
  for (const TaskShape& p : pods) ++counts[{p.cpu_milli, p.gpus, p.gpu_milli}];
  std::vector<std::pair<Key, int64_t>> order(counts.begin(), counts.end());
  // Most common first; equal counts by shape (the map's order), so the result is deterministic.
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  const double total = static_cast<double>(pods.size());
  std::vector<TaskShape> shapes;
  double covered = 0;
  for (const auto& [key, count] : order) {
    if (total == 0 || covered >= popularity * total) break;
    TaskShape s;
    std::tie(s.cpu_milli, s.gpus, s.gpu_milli) = key;
    s.weight = static_cast<double>(count);
    covered += static_cast<double>(count);
    shapes.push_back(s);
  }
  for (TaskShape& s : shapes) s.weight /= covered;
  return shapes;
}

double NodeFragmentation(std::span<const TaskShape> shapes, std::span<const int32_t> devices,
                         int64_t cpu_free_milli, std::span<const bool> allowed) {
  int64_t free_total = 0;
  for (int32_t d : devices) free_total += d;
  if (free_total == 0) return 0;
  double frag = 0;
  for (size_t t = 0; t < shapes.size(); ++t) {
    const TaskShape& s = shapes[t];
    // A CPU-only shape never uses GPUs: every free GPU is fragment for it, as in the paper.
    int64_t fragment = free_total;
    const bool model_ok = allowed.empty() || allowed[t];
    const bool uses_gpu = s.gpus > 0 || s.gpu_milli > 0;
    if (uses_gpu && model_ok && cpu_free_milli >= s.cpu_milli) {
      const int32_t per_gpu = s.gpu_milli > 0 ? s.gpu_milli : 1000;
      const int needed = s.gpu_milli > 0 ? 1 : s.gpus;
      int usable = 0;
      int64_t below = 0;
      for (int32_t d : devices) {
        if (d >= per_gpu) {
          ++usable;
        } else {
          below += d;
        }
      }
      if (usable >= needed) fragment = below;
    }
    frag += s.weight * static_cast<double>(fragment);
  }
  return frag;
}

std::string_view JobOutcomeName(JobOutcome outcome) {
  switch (outcome) {
    case JobOutcome::kCompleted:
      return "completed";
    case JobOutcome::kRunning:
      return "running";
    case JobOutcome::kPending:
      return "pending";
    case JobOutcome::kQueueTimeout:
      return "queue-timeout";
    case JobOutcome::kExecTimeout:
      return "exec-timeout";
  }
  return "pending";
}

void SummarizeJobs(std::span<const JobRecord> jobs, Summary& summary,
                   std::map<std::string, QueueSummary>& queues) {
  std::vector<double> delay, jct;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> per_queue;
  for (const JobRecord& j : jobs) {
    ++summary.jobs;
    ++queues[j.queue].jobs;
    auto& [q_delay, q_jct] = per_queue[j.queue];
    switch (j.outcome) {
      case JobOutcome::kCompleted:
        ++summary.completed;
        break;
      case JobOutcome::kRunning:
        ++summary.running;
        break;
      case JobOutcome::kPending:
        ++summary.pending;
        break;
      case JobOutcome::kQueueTimeout:
        ++summary.queue_timeouts;
        break;
      case JobOutcome::kExecTimeout:
        ++summary.exec_timeouts;
        break;
    }
    summary.preemptions += j.preemptions;
    summary.reclaims += j.reclaims;
    summary.no_execute_evictions += j.interruptions;
    if (j.start_ms) {
      const double d = static_cast<double>(*j.start_ms - j.submit_ms) / 1000.0;
      delay.push_back(d);
      q_delay.push_back(d);
    }
    if (j.outcome == JobOutcome::kCompleted && j.end_ms) {
      const double c = static_cast<double>(*j.end_ms - j.submit_ms) / 1000.0;
      jct.push_back(c);
      q_jct.push_back(c);
    }
  }
  summary.queueing_delay_s = Summarize(std::move(delay));
  summary.jct_s = Summarize(std::move(jct));
  for (auto& [queue, values] : per_queue) {
    queues[queue].queueing_delay_s = Summarize(std::move(values.first));
    queues[queue].jct_s = Summarize(std::move(values.second));
  }
}

void SummarizeSeries(const Series& series, Summary& summary) {
  const size_t n = series.t_ms.size();
  double alloc_sum = 0, frag_sum = 0;
  for (size_t i = 0; i < n; ++i) {
    double capacity = 0, allocated = 0, frag = 0;
    for (const auto& [pool, s] : series.node_pools) {
      capacity += s.capacity_gpus[i];
      allocated += s.allocated_gpus[i];
      frag += s.fragmentation_gpus[i];
    }
    const double ratio = capacity > 0 ? allocated / capacity : 0;
    alloc_sum += ratio;
    frag_sum += frag;
    summary.gpu_allocation_peak = std::max(summary.gpu_allocation_peak, ratio);
    int nodes = 0;
    for (const auto& [pool, s] : series.machine_pools) nodes += s.nodes[i];
    summary.machine_pool_nodes_peak = std::max(summary.machine_pool_nodes_peak, nodes);
  }
  if (n > 0) {
    summary.gpu_allocation_mean = alloc_sum / static_cast<double>(n);
    summary.fragmentation_mean_gpus = frag_sum / static_cast<double>(n);
  }
}

}  // namespace gpupool::replay
