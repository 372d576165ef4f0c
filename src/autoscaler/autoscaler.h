#pragma once
// The machine-pool autoscaler as a what-if (DESIGN section 5, seed 004): given a cluster snapshot
// and machine pools, which nodes would be added or removed, where the pending pods would land,
// and what it costs. Pure: no I/O, no clock; the same input gives the same plan.
//
// Algorithm (cluster-autoscaler's loop, one pass; Karpenter's vocabulary where it differs):
//   1. Interruptions first (--interrupt NODE): a spot node gets its 2-minute notice. The node is
//      gone after the notice; its pods are drained (drain.h: told to stop at the notice, or later
//      when a PodDisruptionBudget keeps them, each with its grace period capped by the deadline),
//      evicted (reason NoExecute, as the node's NoExecute taint at the deadline does) and pending
//      again, keeping their arrival order.
//   2. One scheduling cycle over the existing nodes (scheduler::Scheduler).
//   3. Scale-up: the pods still pending (and the evicted ones) are packed, first-fit in
//      decreasing order of GPUs, cpu, memory (then name), onto new template nodes of the machine
//      pools they fit: the template node is built from the pool's instance type, labels and
//      taints (scale from zero needs no existing node). A pod fits a pool when it tolerates the
//      pool's NoSchedule/NoExecute taints, its nodeSelector and required node affinity match the
//      template labels, its node-pool list includes the node pool the template's labels put it in,
//      and its requests fit an empty node. Among the pools a pod fits, the cheapest node wins
//      (the hourly price of its capacity type), then the pool name: DESIGN's "cheapest that
//      fits". A pool never grows past max_replicas; a spot pool whose price is above max_price
//      is not used. Gangs (gpupool.io/gang) are packed all together into one pool or not at all.
//      Pools below min_replicas are brought up to it.
//   4. The scheduler runs again with the new nodes; new nodes that received no pod are dropped
//      (the pods that asked for them were held back by quota or ordering, not by capacity) and the
//      final cycle runs without them. Its placements, evictions and fair share are the result.
//   5. Scale-down: nodes of a machine pool with no pod after the final cycle, above the pool's
//      min_replicas, are reported as removable once unneeded for 10 minutes (cluster-autoscaler's
//      scale-down-unneeded-time); the newest node goes first.
//   6. Cost per pool: nodes x hourly price, and for spot pools the on-demand price of the same
//      nodes (the saving); cost per queue (QueueCost) for the pods on machine-pool nodes after the
//      final cycle.
// Pods that stay pending and fit no machine pool get cluster-autoscaler's "pod didn't trigger
// scale-up" reason, naming each pool and why it did not fit.
//
// Thread contract: Simulate is a free function; the inputs are read-only.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autoscaler/drain.h"
#include "common/status.h"
#include "model/k8s.h"
#include "model/machine_pool.h"
#include "scheduler/scenario.h"
#include "scheduler/scheduler.h"

namespace gpupool::autoscaler {

// How long a spot node runs after its interruption notice (AWS: 2 minutes).
inline constexpr int64_t kSpotInterruptionNoticeSeconds = 120;
// How long a node must be unneeded before it is removed (cluster-autoscaler's default).
inline constexpr int64_t kScaleDownUnneededSeconds = 600;
// Pods a template node accepts (the kubelet's default max-pods).
inline constexpr int64_t kTemplateMaxPods = 110;

// The instance types machine pools may name.
class Catalog {
 public:
  explicit Catalog(std::vector<model::InstanceType> types);
  // The built-in catalog: AWS instance types of seed 004 (m5, c5, p3, g4dn) and current GPU
  // types (g5, g6e, p4d, p4de, p5), on-demand list prices in us-east-1; spot prices are
  // illustrative (they move hourly): pass your own with LoadCatalogFile for real figures.
  static const Catalog& Builtin();
  const model::InstanceType* Find(std::string_view name) const;
  const std::vector<model::InstanceType>& types() const { return types_; }

 private:
  std::vector<model::InstanceType> types_;
};

// A catalog file (JSON or YAML, see model::InstanceTypesFromJson). Errors name the file.
Result<Catalog> LoadCatalogFile(const std::string& path);

// InvalidArgument naming `prefix` + "instance_type" (with a did-you-mean) when the pool's instance
// type is not in the catalog.
Status CheckInstanceType(const model::MachinePool& pool, const Catalog& catalog,
                         std::string_view prefix);

// Decodes scenario MachinePool manifests, checks instance types against the catalog and applies
// the GPU spot pool's default taints. Errors name the machine pool and the field.
Result<std::vector<model::MachinePool>> MachinePoolsFromManifests(
    const std::vector<nlohmann::ordered_json>& manifests, const Catalog& catalog);

// The node a machine pool would add: allocatable = instance capacity minus the kubelet's
// reservation (EKS formula: cpu 6% of the first core, 1% of the second, 0.5% of the next two,
// 0.25% of the rest; memory 255Mi + 11Mi per pod + 100Mi eviction threshold), pods 110,
// ephemeral-storage the pool's disk size, nvidia.com/gpu the GPU count. Labels: the pool's,
// node.kubernetes.io/machinepool, node.kubernetes.io/instance-type, gpupool.io/capacity-type,
// kubernetes.io/hostname, and for GPU types nvidia.com/gpu.product, nvidia.com/gpu.count,
// nvidia.com/gpu.memory (MiB, as GPU feature discovery) and node-type=gpu (seed 004's GPU pool
// label) unless the pool sets node-type.
model::Node TemplateNode(const model::MachinePool& pool, const model::InstanceType& type,
                         const std::string& node_name);

struct AutoscaleOptions {
  scheduler::SchedulerOptions scheduler;
  std::vector<std::string> interrupt_nodes;  // spot nodes that get the 2-minute notice
  // Names a new node must not take besides the snapshot's (the live loop's nodes that leave in
  // the same step: a new node of the same name would be written and deleted at once).
  std::vector<std::string> reserved_names;
};

struct ScaleUp {
  std::string machine_pool;
  std::string instance_type;
  model::CapacityType capacity_type = model::CapacityType::kOnDemand;
  int32_t current = 0;  // nodes of the pool in the snapshot (after interruptions)
  int32_t target = 0;
  std::vector<std::string> nodes;  // the added nodes' names
  std::vector<std::string> pods;   // pods the final cycle placed on them
  std::string reason;              // "pending pods" | "min_replicas"
  int64_t added_hourly_price_micros = 0;
};

struct ScaleDown {
  std::string machine_pool;
  std::string node;
  std::string reason;  // "empty for 10m0s"
};

struct NotScaled {
  std::string pod;
  std::string reason;  // "pod didn't trigger scale-up: ml-training: max node group size ..."
};

struct Interruption {
  std::string node;
  std::string machine_pool;
  int64_t notice_seconds = kSpotInterruptionNoticeSeconds;
  std::vector<std::string> pods;  // gone by the deadline, pending again
  // How each pod was drained (autoscaler/drain.h), times in ms from the notice.
  std::vector<PodStop> stops;
};

struct PoolCost {
  std::string machine_pool;
  model::CapacityType capacity_type = model::CapacityType::kOnDemand;
  int32_t nodes = 0;  // after scale-up, before scale-down
  int64_t hourly_micros = 0;
  int64_t on_demand_hourly_micros = 0;  // the same nodes on demand
};

// What a queue's pods cost per hour on machine-pool nodes: each pod pays its node's price times its
// dominant share of the node (the largest of its GPU, cpu and memory requests over the node's
// allocatable). The part of a node no pod pays for is reported as queue "(idle)".
struct QueueCost {
  std::string queue;
  int64_t hourly_micros = 0;
};
inline constexpr char kIdleCostQueue[] = "(idle)";

struct AutoscaleResult {
  bool has_machine_pools = false;  // false: a plain scheduling cycle, nothing else to report
  scheduler::CycleResult cycle;    // the final cycle, over existing plus added nodes
  std::vector<Interruption> interruptions;
  std::vector<ScaleUp> scale_up;  // by machine pool name
  std::vector<ScaleDown> scale_down;
  std::vector<NotScaled> not_scaled;  // by pod
  std::vector<PoolCost> cost;         // by machine pool name
  std::vector<QueueCost> queue_cost;  // by queue name, "(idle)" first
};

// Errors: an interrupted node that does not exist or is not in a spot machine pool; a machine
// pool whose instance type is unknown. Everything else is an outcome.
Result<AutoscaleResult> Simulate(const scheduler::ClusterSnapshot& snapshot,
                                 const std::vector<model::MachinePool>& pools,
                                 const Catalog& catalog, const AutoscaleOptions& options);

// The what-if behind `gpupool schedule` (and the server's POST /api/schedule): the scenario's
// machine pools (decoded against `catalog`) go through Simulate; a scenario without machine pools
// and without interruptions is one plain scheduling cycle.
Result<AutoscaleResult> SimulateScenario(const scheduler::Scenario& scenario,
                                         const Catalog& catalog, const AutoscaleOptions& options);

// The schedule JSON (scheduler::ScheduleResultToJson of the final cycle) plus "interruptions",
// "scaleUp", "scaleDown", "notScaled" and "cost" (prices as decimal strings, USD per hour); only
// the schedule JSON when the result has no machine pools.
nlohmann::ordered_json AutoscaleResultToJson(const AutoscaleResult& result);
std::string AutoscaleResultToTable(const AutoscaleResult& result);

}  // namespace gpupool::autoscaler
