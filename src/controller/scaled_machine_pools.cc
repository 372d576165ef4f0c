#include "controller/scaled_machine_pools.h"

#include "common/strings.h"
#include "controller/machine_pools.h"

namespace gpupool::controller {
namespace {

std::string Describe(const autoscaler::ReplicaChange& change) {
  std::string what = "replicas " + std::to_string(change.from) + " -> " +
                     std::to_string(change.to) + " on " +
                     model::DescribeScaleTarget(change.target) + " (" + change.reason + ")";
  if (!change.remove_nodes.empty()) {
    what += "; Machines of " + Join(change.remove_nodes, ", ") + " marked for deletion";
  }
  return what;
}

}  // namespace

Result<std::vector<autoscaler::NodeEvent>> ScaledMachinePools::Step(
    store::Store& store, backend::Backend& backend,
    const std::function<scheduler::ClusterSnapshot()>& after_cycle,
    const autoscaler::Catalog& catalog, int64_t now_ms,
    const autoscaler::ProvisionOptions& options) {
  std::vector<autoscaler::NodeEvent> events;
  if (!Due(now_ms)) return events;
  ran_ = true;
  last_ms_ = now_ms;
  ASSIGN_OR_RETURN(auto pools, LoadMachinePools(store, catalog));
  std::vector<autoscaler::ScaledPool> scaled;
  for (model::MachinePool& pool : pools) {
    if (!pool.scale_target) continue;
    ASSIGN_OR_RETURN(int32_t replicas, backend.ReadReplicas(*pool.scale_target));
    scaled.push_back({std::move(pool), replicas});
  }
  if (scaled.empty()) {
    empty_since_.clear();
    return events;
  }
  ASSIGN_OR_RETURN(
      autoscaler::ReplicaPlan plan,
      autoscaler::PlanReplicas(after_cycle(), scaled, catalog, empty_since_, now_ms, options));
  empty_since_ = std::move(plan.empty_since);
  for (const autoscaler::ReplicaChange& change : plan.changes) {
    RETURN_IF_ERROR(backend.SetReplicas(change.target, change.to, change.remove_nodes));
    for (const std::string& node : change.remove_nodes) empty_since_.erase(node);
    const std::string what = Describe(change);
    (void)store.AppendAudit({now_ms, "autoscaler", "scheduling loop",
                             "machine pool " + change.machine_pool, Join(change.remove_nodes, ","),
                             what});
    events.push_back({Join(change.remove_nodes, ","), change.machine_pool, what});
  }
  return events;
}

}  // namespace gpupool::controller
