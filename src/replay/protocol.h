#pragma once
// The FGD paper's evaluation protocol as a command (`gpupool replay --protocol fgd`): Weng et al.,
// "Beware of Fragmentation", USENIX ATC'23, section 6, as its simulator
// (hkust-adsl/kubernetes-scheduler-simulator, experiments/ and scripts/) runs it:
//
//   - the cluster: the openb GPU nodes (openb_node_list_gpu_node.csv: 1,213 nodes, 6,212 GPUs;
//     the simulator's node YAML holds only these), so CPU-only pods land on GPU nodes too;
//   - the workload, per seed: the trace's pods without their times (no departures), in an order
//     shuffled by the seed, then pods drawn uniformly with replacement from the trace and
//     appended until the next one would take the arrived GPU demand past `load_percent` of the
//     cluster's GPUs (the simulator's "workload tuning", ratio 1.3; like its tuneUpPods, the
//     stopping test adds the drawn pod's GPUs per device, so a multi-GPU pod can pass it);
//   - each pod is placed when it arrives, every feasible node scored (percentageOfNodesToScore
//     100); a pod that fits nowhere is dropped and the next one is tried;
//   - the measure: the GPU allocation ratio (allocated GPUs / all GPUs) against the arrived GPU
//     demand; at X % (the paper's Fig. 9a and its analysis_allo_discrete.csv) it is the mean of
//     the ratio over the arrivals whose arrived demand rounds to X % (those within one point when
//     none does), then the mean over the seeds.
// Here one scheduling cycle places the whole arrival sequence: its allocate phase takes the
// pods of the one queue in snapshot order, one at a time, which is the same sequence.
// Ties between equal scores follow a node order drawn per seed: the simulator names its nodes
// "NNNN-name" by a random permutation and its kube-scheduler fork takes the smallest name among
// equal scores; here the nodes get the same kind of prefix from the seed (NodesInSeedOrder).
// Differences that remain: the seeds draw other orders than the simulator's Go generator; FGD's
// typical workload is gpupool's (the 8 most common GPU demands among the pods being placed, each
// with the least cpu of its pods; the simulator takes the trace's (cpu, GPU) shapes that make up
// 95 %, 35 of them); the scorers' scales (the simulator's FGD and GPU packing scores are
// integers, not normalised) and GPU packing's, best fit's and dot product's formulas are
// gpupool's own (docs/BENCHMARKS.md, "The FGD paper's protocol").

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "replay/trace.h"
#include "scheduler/scheduler.h"

namespace gpupool::replay {

struct ProtocolOptions {
  std::vector<scheduler::PlacementPolicy> policies;
  double load_percent = 130;
  std::vector<int> report_at = {98, 130};  // arrived demand, percent of the GPUs
  int seeds = 10;
  uint64_t first_seed = 42;  // the simulator's run scripts use 42 ... 51
  // FGD's typical workload: the most common pod shapes; 0 = the scheduler's default.
  int fgd_task_types = 0;
};
Status Validate(const ProtocolOptions& options);

// The published result of a policy (mean of 10 seeds, openb default trace, Fig. 9a), from the
// simulator's experiments/analysis/expected_results/analysis_allo_discrete.csv.
struct PaperResult {
  std::string paper_name;  // as the paper names it: "FGD", "BestFit", ...
  std::string policy;      // gpupool's namesake ("" when gpupool has none)
  int arrived_percent = 0;
  double allocated_percent = 0;
};
const std::vector<PaperResult>& PaperResults();

struct ProtocolPoint {
  int arrived_percent = 0;
  double allocated_percent = 0;  // mean over the seeds
  double unallocated_gpus = 0;   // mean over the seeds
  std::vector<double> per_seed;  // allocated percent
};

struct ProtocolRun {
  std::string policy;
  std::vector<ProtocolPoint> points;         // at options.report_at
  std::vector<std::optional<double>> curve;  // mean allocated % at 0, 1, ... load %
  std::vector<int64_t> pods_placed;          // per seed
  std::vector<int64_t> pods_arrived;         // per seed
  double cycle_cpu_seconds = 0;              // all seeds
};

struct ProtocolResult {
  int nodes = 0;
  int64_t gpu_capacity_milli = 0;
  int64_t trace_pods = 0;
  double trace_gpu_percent = 0;  // the trace's GPU demand, percent of the GPUs
  ProtocolOptions options;
  std::vector<ProtocolRun> runs;
};

// The arrival sequence of one seed: the trace's pods shuffled, then the drawn ones (named
// `<pod>-tuned-<i>`), as pending pods of the default queue, with each one's GPUs.
struct Arrivals {
  std::vector<model::PodScheduling> pods;
  std::vector<int64_t> gpu_milli;  // per pod, in the same order
};
Arrivals ProtocolArrivals(const Trace& trace, int64_t capacity_milli, double load_percent,
                          uint64_t seed);

// Runs the protocol over `nodes`. `progress(done, total)` after each seed of each policy.
Result<ProtocolResult> RunProtocol(const std::vector<model::Node>& nodes, const Trace& trace,
                                   const ProtocolOptions& options,
                                   const std::function<void(int, int)>& progress = nullptr);

// {"protocol": "fgd", "cluster": {...}, "options": {...}, "runs": [{"policy", "points": [...],
// "curve": [...]}], "paper": [...]}
nlohmann::ordered_json ProtocolToJson(const ProtocolResult& result);
// gpupool's policies beside the paper's at each reported load.
std::string ProtocolToTable(const ProtocolResult& result);

}  // namespace gpupool::replay
