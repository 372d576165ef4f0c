#pragma once
// The live side of machine pools: what the server's scheduling loop does with them every step,
// as a pure function of the cluster after the step's scheduling cycle and the time. The caller
// applies the returned node changes to its store and backend.
//
// Node lifecycle (state is kept on the Node object itself, so any server that becomes leader
// carries on where the last one stopped):
//   launched  a new node of a machine pool, with the startup taint node.kubernetes.io/not-ready
//             (NoSchedule) and annotation gpupool.io/ready-at (ms since the epoch, now + the
//             provisioning delay). Planning counts it as capacity (Karpenter ignores startup
//             taints for fit), so pending pods do not launch a second node for the same need.
//   ready     at ready-at the taint and the annotation go: the scheduler places pods there.
//   empty     a ready node without pods gets gpupool.io/empty-since; a pod landing removes it.
//             Empty for scale_down_after_ms and above the pool's min_replicas: removed, unless
//             this step's plan places pods there (the replacement launched at an interruption
//             notice stays empty until the interrupted node's pods leave it).
// A node launched in a step never takes the name of a node of the cluster, not even of one
// removed in the same step (the two writes would collide, and every step would fail alike).
//   interrupted  BeginInterruption (the API's spot interruption notice) taints the node
//             gpupool.io/spot-interruption:NoSchedule and sets gpupool.io/interruption-deadline =
//             now + 2 minutes; planning already launches the replacement. Each step drains the
//             node (drain.h): pods are told to stop (preStop, SIGTERM) as soon as their
//             PodDisruptionBudgets allow, at the latest at deadline - grace, and are gone at
//             min(told + grace, deadline); annotation gpupool.io/drain records, per pod,
//             {"told": ms, "end": ms, "why": "..."} (or {"kept": "<budget message>"} while a
//             budget keeps it), so every step and every leader carries on the same drain; the
//             scheduling loop evicts a pod at its "end" (DrainedPods). At the deadline the
//             NoExecute taint is added (the scheduler evicts what is left there; pending again)
//             and once no pod is bound there the node is removed.
// Scale-up itself is Simulate (autoscaler.h): pending pods packed onto the cheapest pools that
// fit, min_replicas, max_replicas.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoscaler/autoscaler.h"
#include "autoscaler/drain.h"

namespace gpupool::autoscaler {

inline constexpr char kNotReadyTaintKey[] = "node.kubernetes.io/not-ready";
inline constexpr char kReadyAtAnnotation[] = "gpupool.io/ready-at";
inline constexpr char kEmptySinceAnnotation[] = "gpupool.io/empty-since";
inline constexpr char kInterruptionTaintKey[] = "gpupool.io/spot-interruption";
inline constexpr char kInterruptionDeadlineAnnotation[] = "gpupool.io/interruption-deadline";
inline constexpr char kDrainAnnotation[] = "gpupool.io/drain";

// A millisecond timestamp kept in one of the annotations above; nullopt when absent or not a
// number (an annotation anyone may edit is read, never trusted).
std::optional<int64_t> AnnotationMs(const model::Node& node, const char* key);

struct ProvisionOptions {
  int64_t provision_delay_ms = 60'000;                             // launch to ready
  int64_t scale_down_after_ms = kScaleDownUnneededSeconds * 1000;  // empty this long: removed
  scheduler::SchedulerOptions scheduler;
};

struct NodeEvent {
  std::string node;
  std::string machine_pool;
  std::string
      what;  // "launched (pending pods)", "ready", "NoExecute at the interruption deadline", ...
};

struct ProvisionDecision {
  std::vector<model::Node> upserts;  // nodes to create or replace, whole
  std::vector<std::string> deletes;  // nodes to remove
  std::vector<NodeEvent> events;     // what happened, for logs and the audit trail
  std::vector<PodStop> stops;        // pods told to stop in this step (spot drain)
};

// A pod of a draining node (annotation gpupool.io/drain).
struct DrainEntry {
  std::string pod;
  std::optional<int64_t> told_ms;  // nullopt: a budget keeps it running for now
  int64_t end_ms = 0;
  std::string why;  // DescribeStop, or the budget's message while kept
};
std::vector<DrainEntry> DrainEntries(const model::Node& node);

// The pods of `node` whose drain ended by `now_ms` (told, and end <= now): the scheduling loop
// evicts them before its cycle.
std::vector<std::string> DrainedPods(const model::Node& node, int64_t now_ms);

// The snapshot as the cycle leaves it: bound pods bound, evicted pods pending (what Reconcile
// expects).
scheduler::ClusterSnapshot AfterCycle(const scheduler::ClusterSnapshot& before,
                                      const scheduler::CycleResult& cycle);

// One reconciliation step. `cluster` holds every node and every pod after this step's scheduling
// cycle (bound pods with spec.nodeName; the rest pending). Errors: an unknown instance type.
Result<ProvisionDecision> Reconcile(const scheduler::ClusterSnapshot& cluster,
                                    const std::vector<model::MachinePool>& pools,
                                    const Catalog& catalog, int64_t now_ms,
                                    const ProvisionOptions& options);

// The spot interruption notice for `node` (which must belong to a spot machine pool of `pools`):
// the node as it must be stored. FailedPrecondition when it is not a spot machine-pool node or
// already interrupted.
Result<model::Node> BeginInterruption(const model::Node& node,
                                      const std::vector<model::MachinePool>& pools, int64_t now_ms);

}  // namespace gpupool::autoscaler
