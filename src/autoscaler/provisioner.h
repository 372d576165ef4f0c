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
//             Empty for scale_down_after_ms and above the pool's min_replicas: removed.
//   interrupted  BeginInterruption (the API's spot interruption notice) taints the node
//             gpupool.io/spot-interruption:NoSchedule and sets gpupool.io/interruption-deadline =
//             now + 2 minutes; planning already launches the replacement. At the deadline the
//             NoExecute taint is added (the scheduler evicts the pods that do not tolerate it;
//             they are pending again) and once no pod is bound there the node is removed.
// Scale-up itself is Simulate (autoscaler.h): pending pods packed onto the cheapest pools that
// fit, min_replicas, max_replicas.

#include <cstdint>
#include <string>
#include <vector>

#include "autoscaler/autoscaler.h"

namespace gpupool::autoscaler {

inline constexpr char kNotReadyTaintKey[] = "node.kubernetes.io/not-ready";
inline constexpr char kReadyAtAnnotation[] = "gpupool.io/ready-at";
inline constexpr char kEmptySinceAnnotation[] = "gpupool.io/empty-since";
inline constexpr char kInterruptionTaintKey[] = "gpupool.io/spot-interruption";
inline constexpr char kInterruptionDeadlineAnnotation[] = "gpupool.io/interruption-deadline";

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
};

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
