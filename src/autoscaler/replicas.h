#pragma once
// Machine pools whose nodes a Kubernetes cluster makes (model/scale_target.h: an OpenShift
// MachineSet or a Cluster API MachineDeployment): how many replicas each should have after a
// scheduling cycle. Pure: the caller reads the replicas and the nodes from the cluster, and
// writes the changes back through the scale subresource.
//
// The planning is Simulate's (autoscaler.h: pending pods packed onto the cheapest pools that fit,
// gangs whole, min and max replicas), over the cluster as the scheduling cycle left it, with
// three differences, since here the cluster's machine controller makes the nodes, not gpupool:
//   - replicas asked for whose nodes have not joined yet stand in as template nodes, so a pending
//     pod does not ask again for the node already coming (the sim backend keeps such nodes in the
//     store instead, tainted until ready);
//   - a pool's node that has joined but is not ready yet (taint node.kubernetes.io/not-ready)
//     counts as capacity, as Karpenter ignores startup taints for fit;
//   - a node with an interruption taint (InterruptionTaintKeys: written by the cloud's
//     termination handler at a spot interruption notice) is gone for planning: its pods need a
//     new home, so its replacement is asked for at once. The handler drains the node itself.
// Scale-down: a ready node of the pool that Simulate finds empty, above min_replicas, once it
// has been empty for scale_down_after_ms (cluster-autoscaler's scale-down-unneeded-time). The
// caller keeps when each node was first seen empty (ReplicaPlan::empty_since) from step to step;
// a new leader starts the wait again, which only delays a removal.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "autoscaler/autoscaler.h"
#include "autoscaler/provisioner.h"

namespace gpupool::autoscaler {

// Taint keys that mean "this node is about to be reclaimed by its cloud": the AWS Node
// Termination Handler's spot interruption taint, GKE's impending termination, and gpupool's own
// (provisioner.h, the sim backend and POST /api/nodes/{name}/interrupt).
const std::vector<std::string>& InterruptionTaintKeys();

struct ScaledPool {
  model::MachinePool pool;  // with a scale_target
  int32_t replicas = 0;     // spec.replicas as read from the cluster
};

struct ReplicaChange {
  std::string machine_pool;
  model::ScaleTarget target;
  int32_t from = 0;
  int32_t to = 0;
  // Nodes to remove: their Machines are annotated for deletion before replicas go down.
  std::vector<std::string> remove_nodes;
  std::string reason;  // "pending pods", "min_replicas", "empty for 10m"
};

struct ReplicaPlan {
  std::vector<ReplicaChange> changes;  // by machine pool name
  // The pools' empty nodes and since when (ms): the caller passes it back at the next step.
  std::map<std::string, int64_t> empty_since;
};

// `after_cycle`: every node and pod as the step's scheduling cycle left them (AfterCycle).
// Errors: a pool without a scale_target, or whose instance type the catalog lacks.
Result<ReplicaPlan> PlanReplicas(const scheduler::ClusterSnapshot& after_cycle,
                                 const std::vector<ScaledPool>& pools, const Catalog& catalog,
                                 const std::map<std::string, int64_t>& empty_since, int64_t now_ms,
                                 const ProvisionOptions& options);

}  // namespace gpupool::autoscaler
