#pragma once
// Job traces for `gpupool replay` (docs/REPLAY.md): what arrives when, for how long, asking for
// what. Four formats, chosen by the file's first line unless named:
//
//   openb   the Alibaba GPU-sharing trace's pod CSV (data/alibaba-gpu-v2023-openb; header
//           name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
//           deletion_time,scheduled_time). One pod per row, submitted at creation_time, running
//           deletion_time - scheduled_time once placed (deletion_time - creation_time for a pod
//           the original cluster never scheduled); num_gpu 1 with gpu_milli below 1000 is a
//           fraction of one GPU; gpu_spec (`V100M16|V100M32`) allows those GPU models
//           (nvidia.com/gpu.product NVIDIA-<model>, as model::ParseOpenbNodeCsv labels the
//           nodes); qos becomes label `qos`. The file without times (multigpu50) is accepted:
//           every pod arrives at 0 and runs to the end.
//   dlrm    the Alibaba GPU-disaggregated DLRM serving trace (data/alibaba-gpu-v2025-dlrm; header
//           instance_sn,role,app_name,...). One pod per instance: cpu_request vCPUs,
//           memory_request GiB, gpu_request whole GPUs, disk_request GiB as ephemeral-storage,
//           rdma_request (percent of one RDMA NIC) as resource `alibaba.com/rdma`; role CN or HN
//           names the queue and the node pool (`cn`, `hn`); app_name becomes label `app`. An
//           empty creation_time (before the trace) submits at 0, an empty deletion_time (after
//           it) runs to the end; max_instance_per_node is not modelled (gpupool has no pod
//           anti-affinity).
//   csv     the generic form: a header naming some of the columns below, one job per row.
//   jsonl   the generic form: one JSON object per line with the same keys ("#" lines and blank
//           lines are skipped), plus "resources": {"<name>": "<quantity>"} and
//           "labels": {"<key>": "<value>"}.
//
// Generic columns (only `submit` is required):
//   name           job name (default job-<line>); must be unique
//   submit         seconds from the start of the trace (a number, fractions allowed)
//   duration       seconds the job runs once started; empty or absent = until the replay ends
//   queue          gpupool.io/queue (default: the default queue)
//   node_pool      gpupool.io/node-pool, pools separated by `|` in CSV (default: default pool)
//   cpu, memory    Kubernetes quantities per pod ("4", "500m", "16Gi")
//   gpu            GPUs per pod: a whole number, or a fraction below 1 (0.25) of one GPU
//   gpu_model      allowed nvidia.com/gpu.product values, separated by `|`
//   pods           pods of the job (default 1); more than one makes a gang (all or nothing)
//   gang_min       pods of the gang that must run together (default: all)
//   priority       pod priority (default 0; 100 and above is not preemptible)
//   queue_timeout  seconds the job may wait before it is given up (default: the replay's)
//   exec_timeout   seconds the job may run before it is stopped (default: the replay's)
//   resource.<name>  any other resource per pod (CSV; JSONL uses "resources")
//
// Errors name the file, line and column ("trace.csv:12: column gpu: expected a number of
// GPUs, got \"x\"") and unknown columns get a did-you-mean.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/k8s.h"

namespace gpupool::replay {

struct TraceJob {
  std::string name;
  int64_t submit_ms = 0;
  std::optional<int64_t> duration_ms;     // nullopt: runs until the replay ends
  std::string queue;                      // "" = the default queue
  std::string node_pools;                 // gpupool.io/node-pool value; "" = the default pool
  model::ResourceList requests;           // per pod, without GPUs
  int gpus = 0;                           // whole GPUs per pod
  int32_t gpu_milli = 0;                  // a fraction of one GPU per pod (gpus is then 0)
  std::vector<std::string> gpu_products;  // allowed nvidia.com/gpu.product values; empty = any
  int pods = 1;                           // more than one: a gang
  int gang_min = 0;                       // 0 = all pods
  int32_t priority = 0;
  std::optional<int64_t> queue_timeout_ms;
  std::optional<int64_t> exec_timeout_ms;
  model::Labels labels;  // extra pod labels (qos, app, ...)
  int line = 0;          // in the trace file, for messages

  // GPUs per pod in milli-GPUs (1000 per whole GPU).
  int64_t GpuMilliPerPod() const { return gpu_milli > 0 ? gpu_milli : int64_t{gpus} * 1000; }
};

struct Trace {
  std::string file;
  std::string format;          // openb | dlrm | csv | jsonl
  std::vector<TraceJob> jobs;  // by submit time, ties in file order
  int64_t end_ms = 0;          // the latest submit time plus duration
};

inline constexpr std::string_view kTraceFormats[] = {"openb", "dlrm", "csv", "jsonl"};

// Reads a trace file. `format` "" = by the first line (openb and dlrm by their headers, a `{`
// for jsonl, any other header for csv).
Result<Trace> LoadTrace(const std::string& path, std::string_view format = "");
Result<Trace> ParseTrace(std::string_view text, std::string_view file_name,
                         std::string_view format = "");

// One CSV line split into fields (RFC 4180 quoting: "a,b" and "" inside quotes).
Result<std::vector<std::string>> SplitCsvLine(std::string_view line);

}  // namespace gpupool::replay
