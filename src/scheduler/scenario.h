#pragma once
// Scenario files for the offline what-if `gpupool schedule -f SCENARIO... -o json|table`
// (DESIGN section 7). A scenario is one or more multi-document YAML or JSON files holding
// Kubernetes `Node`s and `Pod`s (bound pods carry spec.nodeName), and gpupool manifests
// (`apiVersion: gpupool.io/v1`, kind `Queue`, `NodePool`, `MachinePool`: the autoscaler's, or
// `Backend`: seed 003's switches), and
// `policy/v1 PodDisruptionBudget`s (model/disruption_budget.h) and `batch/v1 Job`s (model/job.h:
// a Job adds the pods its controller would create now, min(parallelism, completions) of them,
// named "<job>-<index>"). `List`, `NodeList` and `PodList` are unpacked. A JSON file (first
// character `{` or
// `[`) may hold several JSON values one after another (concatenated or one per line), each a
// document; a JSON array is a list of documents. Pods are as old as their
// metadata.creationTimestamp; pods without one are younger than those with one, and arrive in
// file order (earlier = older). A bound pod's status.startTime is its binding time
// (ClusterSnapshot::bound_at_ms). This is the only file of the scheduler module that does I/O.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "scheduler/cluster_settings.h"
#include "scheduler/scheduler.h"

namespace gpupool::scheduler {

struct Scenario {
  ClusterSnapshot snapshot;
  // Seed 003's switches, from a `Backend` document named `default` (apiVersion gpupool.io/v1,
  // spec enable_node_pools / enable_cpu_quota / enable_over_quota); Schedule applies them.
  ClusterSettings settings;
  std::vector<nlohmann::ordered_json> machine_pools;  // accepted, not used yet
};

// Reads and merges the files in order. Errors name "<file>:<line>: " and the object
// ("Queue rnd-1: spec.resources.a100.gpu.deserve: unknown field (did you mean ...)").
Result<Scenario> LoadScenarioFiles(const std::vector<std::string>& paths);

// Adds the documents of one file's text to `scenario` (for tests and stdin).
Status AddScenarioText(std::string_view text, std::string_view file_name, Scenario& scenario);

// Checks cross-references: duplicate names, queue parents that do not exist.
Status ValidateScenario(const Scenario& scenario);

// The scenario's snapshot with its switches (`settings`) applied, as Schedule decides on it.
ClusterSnapshot SwitchedSnapshot(const Scenario& scenario);

using ScheduleResult = CycleResult;

// One scheduling cycle over the scenario. Deterministic.
ScheduleResult Schedule(const Scenario& scenario, const SchedulerOptions& options);

// {"placements": [{"pod", "node", "nodePool", "queue"}],
//  "unschedulable": [{"pod", "reason", "outcome": "unschedulable" (may fit later) or
//  "infeasible" (never, as things are: PlacementOutcome)}],
//  "evictions": [{"pod", "node", "reason", "message"}],
//  "blockedEvictions": [{"pod", "node", "forPod", "message"}] (only when a PodDisruptionBudget
//  kept a victim of reclaim or preemption),
//  "noExecuteDeadlines": [{"pod", "node", "taint", "tolerationSeconds", "deadline"}] (only when
//  a bound pod tolerates its node's NoExecute taints for a bounded time; "deadline" is RFC 3339
//  UTC, or null when neither the taint's timeAdded, the pod's status.startTime nor the
//  snapshot's now_ms is known; a passed deadline is an eviction with reason "NoExecute"),
//  "fairShare": {"<queue>": {"<node pool>": {"gpu": {"deserved", "fairShare", "allocated",
//  "limit"}, "cpu": {...}, "memory": {...}}}}}. GPUs are numbers of devices (0.5 for half a
// device); cpu and memory are Kubernetes quantity strings ("500m", "64Gi"); -1 = unlimited.
nlohmann::ordered_json ScheduleResultToJson(const ScheduleResult& result);

// Human-readable tables: placements, unschedulable pods, evictions, and GPU fair share.
std::string ScheduleResultToTable(const ScheduleResult& result);

}  // namespace gpupool::scheduler
