#pragma once
// The replay engine: a trace played against a cluster in simulated time, one placement policy
// per run (docs/REPLAY.md).
//
// Events, in time order (equal times in this order): completions, exec timeouts, queue
// timeouts, arrivals, spot interruption notices; then the scheduling tick, then the sample.
// Ticks fall on multiples of `cycle_period_ms`: the first multiple at or after anything changed
// (an arrival, a departure, an eviction, a node added, changed or removed) or a timer of the
// cluster came due (a node ready, an interruption deadline, an empty node's scale-down, a
// NoExecute toleration). A tick runs one scheduling cycle (scheduler::Scheduler::RunCycle over
// the whole cluster: reclaim, preemption, gangs and NoExecute evictions are the scheduler's)
// when pods are pending or a node carries a NoExecute taint; then, with machine pools, the
// autoscaler's reconciliation (autoscaler::Reconcile: scale-up onto template nodes that become
// ready after `provision_delay_ms`, scale-down of nodes empty for `scale_down_after_ms`, spot
// interruption notices and their 2-minute deadline). A tick with nothing new to decide is
// skipped: the cycle is a pure function of the cluster, so it would decide nothing new.
//
// Jobs: a job of one pod, or a gang of `pods` (gang_min of them at least, all or nothing). It
// starts when its gang is bound (a single pod: when bound) and runs `duration_ms` from then; an
// evicted job (reclaim, preemption, NoExecute) is pending again and later runs its whole
// duration anew (no checkpoints). A job that has not started `queue_timeout_ms` after its
// submission is given up; a job still running `exec_timeout_ms` after it started is stopped.
// Jobs without a duration run until the replay ends. Pods of the scenario are there from the
// start and never end.
//
// Cost: every machine-pool node costs its instance type's hourly price (spot or on-demand, from
// the catalog) from its launch to its removal.
//
// Determinism: the same inputs and seed give the same result, bit for bit (the spot
// interruption rate draws from a generator seeded with `seed`).
//
// Thread contract: Run is a free function over read-only inputs.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autoscaler/autoscaler.h"
#include "common/status.h"
#include "replay/metrics.h"
#include "replay/trace.h"
#include "scheduler/scenario.h"
#include "scheduler/scheduler.h"

namespace gpupool::replay {

// A spot interruption notice for `node` at `at_ms` (simulated time).
struct InterruptionAt {
  std::string node;
  int64_t at_ms = 0;
};

struct ReplayOptions {
  scheduler::SchedulerOptions scheduler;
  int64_t cycle_period_ms = 10'000;
  // Time between samples of the series; 0 = about 400 samples over the trace, at least one
  // cycle period apart.
  int64_t sample_period_ms = 0;
  std::optional<int64_t> until_ms;          // stop there; default: when nothing is left to happen
  std::optional<int64_t> queue_timeout_ms;  // default for jobs that set none
  std::optional<int64_t> exec_timeout_ms;
  uint64_t seed = 1;
  double spot_interruptions_per_node_hour = 0;  // 0 = none drawn
  std::vector<InterruptionAt> interruptions;
  int64_t provision_delay_ms = 60'000;
  int64_t scale_down_after_ms = autoscaler::kScaleDownUnneededSeconds * 1000;
};
Status Validate(const ReplayOptions& options);

// What happened to the cluster's machine-pool nodes, in time order.
struct NodeEventRecord {
  int64_t t_ms = 0;
  std::string node;
  std::string machine_pool;
  std::string what;
};

struct PolicyRun {
  std::string policy;
  Summary summary;
  std::map<std::string, QueueSummary> queues;
  Series series;
  std::vector<JobRecord> jobs;  // in trace order
  std::vector<NodeEventRecord> node_events;
};

struct ReplayInput {
  const scheduler::Scenario* scenario = nullptr;  // nodes, pods, queues, node and machine pools
  const Trace* trace = nullptr;
  const autoscaler::Catalog* catalog = nullptr;  // for machine pools
};

// Checks the inputs against each other before anything runs: queues and node pools the trace
// names must exist in the scenario (the default queue and node pool always do), machine pools
// must decode against the catalog. Errors name the trace file and line.
Status CheckInput(const ReplayInput& input);

// Progress of a run: simulated time reached, and the end it runs towards (0 when not known).
using ProgressFn = std::function<void(int64_t now_ms, int64_t end_ms)>;

Result<PolicyRun> Run(const ReplayInput& input, const ReplayOptions& options,
                      const ProgressFn& progress = nullptr);

}  // namespace gpupool::replay
