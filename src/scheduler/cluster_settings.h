#pragma once
// Seed 003's administrator switches (Run:ai "Settings > General"), applied to a cycle's input so
// that the scheduler itself stays one algorithm. All on (the default) changes nothing.
//   node_pools off: every node is in the `default` node pool. The node pools are dropped, each
//     queue's quota is its quota summed over the node pools it names (deserved and limit;
//     unlimited when one of them is; the largest over-quota weight), and pods' node-pool choices
//     are ignored (gpupool.io/node-pool removed).
//   cpu_quota off: cpu and memory quotas (deserved, limit, weight) are ignored; GPUs alone are
//     counted against queues.
//   over_quota off: no queue uses more than it deserves: in every node pool, each resource whose
//     deserved quota binds (GPUs always; cpu and memory where the queue sets them) gets a limit
//     of at most its deserved quota, so LOW work no longer borrows idle GPUs either.
// The server reads them from the cluster's BACKEND config (config/kinds.h Backend).

#include <vector>

#include "model/node_pool.h"
#include "model/queue.h"
#include "scheduler/scheduler.h"

namespace gpupool::scheduler {

struct ClusterSettings {
  bool node_pools = true;
  bool cpu_quota = true;
  bool over_quota = true;
};

// node_pools off, for the queues and node pools before the implicit pool queues are derived
// from them (so a pool's guarantee lands whole in `default`): merges each queue's quota into
// `default` and clears `node_pools`. Nothing when node_pools is on.
void ApplyNodePoolSwitch(const ClusterSettings& settings, std::vector<model::Queue>& queues,
                         std::vector<model::NodePool>& node_pools);

// The rest, on the whole snapshot (its queues complete): pods' node-pool labels (node_pools
// off), cpu and memory quotas (cpu_quota off), limits at deserved (over_quota off).
void ApplyClusterSettings(const ClusterSettings& settings, ClusterSnapshot& snapshot);

}  // namespace gpupool::scheduler
