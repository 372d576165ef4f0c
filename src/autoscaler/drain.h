#pragma once
// The drain of a spot node between its 2-minute interruption notice and its termination
// (Karpenter's interruption handling: taint, drain through the eviction API, terminate at the
// deadline; seed 004: "Implement graceful shutdown - Handle SIGTERM", "Use PodDisruptionBudgets",
// the preStop hook that saves a checkpoint).
//
// A pod on the node is told to stop (its preStop hooks run, then SIGTERM) and gets its
// terminationGracePeriodSeconds (default 30 s) to end, never past the deadline: it is gone at
// min(told + grace, deadline). It is told at the notice, unless a PodDisruptionBudget that selects
// it allows no more disruptions (the pods already told to stop count as disrupted): then it keeps
// running until the budget allows it, and at the latest until deadline - grace, when it is told
// anyway (the node goes at the deadline whatever the budgets say, as Karpenter's
// terminationGracePeriod).
//
// Pure: the same cluster, node, times and already-stopped pods give the same decision.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/disruption_budget.h"
#include "scheduler/scheduler.h"

namespace gpupool::autoscaler {

struct PodStop {
  std::string pod;  // scheduler::PodKey
  std::string node;
  int64_t told_ms = 0;  // told to stop: preStop, then SIGTERM
  int64_t end_ms = 0;   // gone: min(told + grace, deadline)
  int64_t grace_seconds = 0;
  std::vector<std::string> pre_stop;  // PodScheduling::pre_stop
  std::string kept_by;  // the budget that delayed it ("" when told at the first chance)
};

struct DrainDecision {
  std::vector<PodStop> stop;  // told now, in pod order
  // Pods a budget keeps running for now: (pod key, the budget's message).
  std::vector<std::pair<std::string, std::string>> kept;
};

// At `now_ms`, for the pods bound to `node` (interrupted, terminating at `deadline_ms`) that
// `stopped(i)` says were not told yet: who is told to stop now. `stopped(i)` (pod index in
// `cluster.pods`) is true for every pod told to stop before, on any node: they count as disrupted
// for the budgets. A pod told only because its deadline - grace came carries the budget's
// message in kept_by.
DrainDecision DecideDrain(const scheduler::ClusterSnapshot& cluster,
                          const model::DisruptionBudgets& budgets, const std::string& node,
                          int64_t deadline_ms, int64_t now_ms,
                          const std::function<bool(int)>& stopped);

// The whole drain as it would go if nothing else changed (the what-if): every pod of the node,
// told at the notice, or at deadline - grace when a budget keeps it. `stopped_pods` (pod indexes)
// holds the pods told on nodes drained before and receives this node's.
std::vector<PodStop> PlanDrain(const scheduler::ClusterSnapshot& cluster,
                               const model::DisruptionBudgets& budgets, const std::string& node,
                               int64_t notice_ms, int64_t deadline_ms,
                               std::vector<int>& stopped_pods);

// "told to stop: preStop training: exec /bin/sh -c save_checkpoint.sh, then SIGTERM; grace period
// 30s, gone after 30s", and "; kept running until then by PodDisruptionBudget ..." with kept_by.
std::string DescribeStop(const PodStop& stop);

}  // namespace gpupool::autoscaler
