#pragma once
// What a replay measures: series over simulated time, one record per job, and the summaries the
// report's table shows. Pure value types and the arithmetic on them; the engine fills them.
//
// GPU fragmentation is the FGD paper's measure (Weng et al., ATC'23, section 3): the typical
// workload is the most common pod shapes of the trace (cpu and GPUs; the paper's 95 %
// popularity threshold, CPU-only pods included), each weighted by its share of the pods; for one
// shape, a node's free GPU counts as fragment when the shape cannot run there at all (too little
// cpu or GPU left, or a GPU model the shape does not allow), else only the free GPU of devices
// with less left than the shape's per-GPU request; CPU-only shapes see every free GPU as
// fragment only when the node's cpu cannot take them. The node's fragmentation is the weighted
// sum; a node pool's is the sum over its nodes, in GPUs.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace gpupool::replay {

// count, mean and nearest-rank percentiles of a sample (seconds); all zero when empty.
struct Distribution {
  int64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
Distribution Summarize(std::vector<double> values);

// One shape of the typical workload.
struct TaskShape {
  int64_t cpu_milli = 0;
  int gpus = 0;           // whole GPUs
  int32_t gpu_milli = 0;  // a fraction of one GPU, 0 when whole or none
  double weight = 0;      // share of the pods with this shape
};

// The most common shapes covering `popularity` (0..1) of `shapes` (one entry per pod), most
// common first, ties by shape; weights renormalised to sum to 1 over the kept shapes.
std::vector<TaskShape> TypicalShapes(std::span<const TaskShape> pods, double popularity = 0.95);

// A node's fragmentation in milli-GPUs: free milli-GPUs per device (`devices`), free cpu.
// `allowed(t)` says whether shape t may use the node's GPU model at all.
double NodeFragmentation(std::span<const TaskShape> shapes, std::span<const int32_t> devices,
                         int64_t cpu_free_milli, std::span<const bool> allowed = {});

enum class JobOutcome { kCompleted, kRunning, kPending, kQueueTimeout, kExecTimeout };
std::string_view JobOutcomeName(JobOutcome outcome);  // completed, running, pending, ...

struct JobRecord {
  std::string name;
  std::string queue;
  int pods = 1;
  int64_t gpu_milli = 0;  // over all pods
  int64_t submit_ms = 0;
  std::optional<int64_t> start_ms;  // first start
  std::optional<int64_t> end_ms;    // completion, timeout, or when the replay ended while running
  JobOutcome outcome = JobOutcome::kPending;
  int preemptions = 0;    // times evicted by a higher-priority job of its queue
  int reclaims = 0;       // times evicted by another queue reclaiming its quota
  int interruptions = 0;  // times evicted by a NoExecute taint (spot interruptions)
  std::string reason;     // why it was still pending at the end
};

struct PoolSeries {
  std::vector<double> capacity_gpus;
  std::vector<double> allocated_gpus;
  std::vector<double> fragmentation_gpus;
};
struct QueueSeries {
  std::vector<double> allocated_gpus;
  std::vector<std::optional<double>> deserved_gpus;  // nullopt: unlimited or not known yet
  std::vector<std::optional<double>> fair_share_gpus;
};
struct MachinePoolSeries {
  std::vector<int> nodes;
  std::vector<double> cost_usd;    // spent so far
  std::vector<int> interruptions;  // so far
};

struct Series {
  std::vector<int64_t> t_ms;
  std::map<std::string, PoolSeries> node_pools;
  std::vector<double> pending_gpus;
  std::vector<int> pending_jobs;
  std::vector<int> running_jobs;
  std::map<std::string, QueueSeries> queues;
  std::map<std::string, MachinePoolSeries> machine_pools;
};

struct QueueSummary {
  int64_t jobs = 0;
  Distribution queueing_delay_s;  // jobs that started
  Distribution jct_s;             // jobs that completed: end - submit
};

struct Summary {
  int64_t jobs = 0, completed = 0, running = 0, pending = 0, queue_timeouts = 0, exec_timeouts = 0;
  double gpu_allocation_mean = 0;  // over the samples, all node pools: allocated / capacity
  double gpu_allocation_peak = 0;
  double fragmentation_mean_gpus = 0;
  Distribution queueing_delay_s;
  Distribution jct_s;
  int64_t preemptions = 0, reclaims = 0, no_execute_evictions = 0;
  int64_t interruptions = 0;  // spot interruption notices
  double machine_pool_cost_usd = 0;
  int machine_pool_nodes_peak = 0;
  int64_t cycles = 0;
  int64_t end_ms = 0;
};

// Summary fields that come from the records and the series (the engine adds the counters).
void SummarizeJobs(std::span<const JobRecord> jobs, Summary& summary,
                   std::map<std::string, QueueSummary>& queues);
void SummarizeSeries(const Series& series, Summary& summary);

}  // namespace gpupool::replay
