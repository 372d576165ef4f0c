#include "autoscaler/replicas.h"

#include <algorithm>
#include <set>

#include "model/duration.h"

namespace gpupool::autoscaler {
namespace {

constexpr char kJoiningInfix[] = "-joining-";

bool HasTaint(const model::Node& node, std::string_view key) {
  return std::any_of(node.taints.begin(), node.taints.end(),
                     [&](const model::Taint& t) { return t.key == key; });
}

bool IsInterrupted(const model::Node& node) {
  for (const std::string& key : InterruptionTaintKeys()) {
    if (HasTaint(node, key)) return true;
  }
  return false;
}

std::string PoolOf(const model::Node& node) {
  auto it = node.labels.find(model::kMachinePoolLabel);
  return it == node.labels.end() ? std::string() : it->second;
}

// What the planner sees of one pool's nodes in the cluster.
struct PoolNodes {
  int32_t joined = 0;           // nodes of the pool in the cluster, interrupted ones included
  int32_t interrupted = 0;      // of which about to be reclaimed
  std::set<std::string> ready;  // ready, not interrupted: the ones that may be removed
};

// The snapshot Simulate plans on (see the header): interrupted nodes gone and their pods
// unbound, starting nodes counted as capacity, replicas not joined yet as template nodes.
scheduler::ClusterSnapshot PlanningSnapshot(const scheduler::ClusterSnapshot& after_cycle,
                                            const std::vector<ScaledPool>& pools,
                                            const Catalog& catalog,
                                            std::map<std::string, PoolNodes>& by_pool) {
  scheduler::ClusterSnapshot snapshot = after_cycle;
  std::set<std::string> gone;
  std::vector<model::Node> kept;
  for (model::Node& node : snapshot.nodes) {
    const std::string pool = PoolOf(node);
    auto counted = by_pool.find(pool);
    if (counted != by_pool.end()) ++counted->second.joined;
    if (IsInterrupted(node)) {
      if (counted != by_pool.end()) ++counted->second.interrupted;
      gone.insert(node.name);
      continue;
    }
    if (counted != by_pool.end()) {
      if (HasTaint(node, kNotReadyTaintKey)) {
        std::erase_if(node.taints,
                      [](const model::Taint& t) { return t.key == kNotReadyTaintKey; });
      } else {
        counted->second.ready.insert(node.name);
      }
    }
    kept.push_back(std::move(node));
  }
  snapshot.nodes = std::move(kept);
  for (model::PodScheduling& pod : snapshot.pods) {
    if (gone.contains(pod.node_name)) pod.node_name.clear();
  }
  for (const ScaledPool& scaled : pools) {
    const model::InstanceType* type = catalog.Find(scaled.pool.instance_type);
    const int32_t joining = scaled.replicas - by_pool[scaled.pool.name].joined;
    for (int32_t i = 0; i < joining; ++i) {
      snapshot.nodes.push_back(
          TemplateNode(scaled.pool, *type, scaled.pool.name + kJoiningInfix + std::to_string(i)));
    }
  }
  return snapshot;
}

// Removes the pool's nodes that have been empty long enough, newest first as Simulate lists
// them, never below min_replicas.
void PlanScaleDown(const AutoscaleResult& simulated, const std::vector<ScaledPool>& pools,
                   const std::map<std::string, PoolNodes>& by_pool,
                   const std::map<std::string, int64_t>& empty_since, int64_t now_ms,
                   const ProvisionOptions& options, ReplicaPlan& plan) {
  for (const ScaledPool& scaled : pools) {
    const PoolNodes& nodes = by_pool.at(scaled.pool.name);
    const bool growing = std::any_of(plan.changes.begin(), plan.changes.end(), [&](const auto& c) {
      return c.machine_pool == scaled.pool.name;
    });
    ReplicaChange change{
        scaled.pool.name, *scaled.pool.scale_target, scaled.replicas, scaled.replicas, {}, ""};
    for (const ScaleDown& down : simulated.scale_down) {
      if (down.machine_pool != scaled.pool.name || !nodes.ready.contains(down.node)) continue;
      auto seen = empty_since.find(down.node);
      const int64_t since = seen == empty_since.end() ? now_ms : seen->second;
      plan.empty_since[down.node] = since;
      if (growing || now_ms - since < options.scale_down_after_ms) continue;
      if (change.to - nodes.interrupted <= scaled.pool.min_replicas) continue;
      change.remove_nodes.push_back(down.node);
      --change.to;
    }
    if (!change.remove_nodes.empty()) {
      change.reason = "empty for " + model::FormatDuration(options.scale_down_after_ms / 1000);
      plan.changes.push_back(std::move(change));
    }
  }
}

}  // namespace

const std::vector<std::string>& InterruptionTaintKeys() {
  static const std::vector<std::string> kKeys = {
      "aws-node-termination-handler/spot-itn",
      "cloud.google.com/impending-node-termination",
      kInterruptionTaintKey,
  };
  return kKeys;
}

Result<ReplicaPlan> PlanReplicas(const scheduler::ClusterSnapshot& after_cycle,
                                 const std::vector<ScaledPool>& pools, const Catalog& catalog,
                                 const std::map<std::string, int64_t>& empty_since, int64_t now_ms,
                                 const ProvisionOptions& options) {
  std::map<std::string, PoolNodes> by_pool;
  std::vector<model::MachinePool> machine_pools;
  for (const ScaledPool& scaled : pools) {
    if (!scaled.pool.scale_target) {
      return InvalidArgumentError("machine pool \"" + scaled.pool.name +
                                  "\": no scale_target to set replicas on");
    }
    RETURN_IF_ERROR(CheckInstanceType(scaled.pool, catalog, scaled.pool.name + "."));
    by_pool[scaled.pool.name];
    machine_pools.push_back(scaled.pool);
  }
  ReplicaPlan plan;
  if (pools.empty()) return plan;
  scheduler::ClusterSnapshot snapshot = PlanningSnapshot(after_cycle, pools, catalog, by_pool);
  AutoscaleOptions simulate_options;
  simulate_options.scheduler = options.scheduler;
  ASSIGN_OR_RETURN(AutoscaleResult simulated,
                   Simulate(snapshot, machine_pools, catalog, simulate_options));
  for (const ScaleUp& up : simulated.scale_up) {
    auto scaled = std::find_if(pools.begin(), pools.end(),
                               [&](const ScaledPool& p) { return p.pool.name == up.machine_pool; });
    if (scaled == pools.end() || up.nodes.empty()) continue;
    const int32_t interrupted = by_pool[up.machine_pool].interrupted;
    const int32_t to = std::min<int32_t>(scaled->replicas + static_cast<int32_t>(up.nodes.size()),
                                         scaled->pool.max_replicas + interrupted);
    if (to <= scaled->replicas) continue;
    plan.changes.push_back(
        {up.machine_pool, *scaled->pool.scale_target, scaled->replicas, to, {}, up.reason});
  }
  PlanScaleDown(simulated, pools, by_pool, empty_since, now_ms, options, plan);
  std::sort(plan.changes.begin(), plan.changes.end(),
            [](const ReplicaChange& a, const ReplicaChange& b) {
              return a.machine_pool < b.machine_pool;
            });
  return plan;
}

}  // namespace gpupool::autoscaler
