#include "controller/machine_pools.h"

#include <algorithm>
#include <map>

namespace gpupool::controller {
namespace {

constexpr int kInterruptAttempts = 5;

// Turns the reconciliation's decision into compare-and-set changes against the nodes as read.
std::vector<store::Store::NodeChange> NodeChanges(const autoscaler::ProvisionDecision& decision,
                                                  const std::vector<store::NodeRecord>& as_read) {
  std::map<std::string_view, const nlohmann::ordered_json*> read;
  for (const auto& record : as_read) read[record.name] = &record.object;
  auto expected = [&](std::string_view name) -> std::optional<nlohmann::ordered_json> {
    auto it = read.find(name);
    if (it == read.end()) return std::nullopt;
    return *it->second;
  };
  std::vector<store::Store::NodeChange> changes;
  for (const auto& node : decision.upserts) {
    std::optional<nlohmann::ordered_json> as_read_object = expected(node.name);
    // The loop's nodes keep only a part of the object as read (StepMemo::LoadNodes): the fields
    // gpupool does not model (addresses, conditions, ...) are written back from it.
    model::Node whole = node;
    if (as_read_object) whole.raw = *as_read_object;
    changes.push_back({node.name, std::move(as_read_object), model::NodeToJson(whole)});
  }
  for (const auto& name : decision.deletes) {
    if (auto object = expected(name)) changes.push_back({name, std::move(object), std::nullopt});
  }
  return changes;
}

}  // namespace

Result<std::vector<model::MachinePool>> LoadMachinePools(store::Store& store,
                                                         const autoscaler::Catalog& catalog) {
  ASSIGN_OR_RETURN(auto records, store.ListConfigs("MACHINE_POOL"));
  std::vector<nlohmann::ordered_json> manifests;
  for (const auto& record : records) {
    manifests.push_back(model::MakeManifest("MachinePool", record.name, record.body));
  }
  return autoscaler::MachinePoolsFromManifests(manifests, catalog);
}

Result<MachinePoolStep> RunMachinePoolStep(store::Store& store,
                                           const std::vector<store::NodeRecord>& nodes_as_read,
                                           const AfterCycleFn& after_cycle,
                                           const autoscaler::Catalog& catalog, int64_t now_ms,
                                           const autoscaler::ProvisionOptions& options,
                                           const store::Store::LeaseFence& fence) {
  MachinePoolStep step;
  ASSIGN_OR_RETURN(auto pools, LoadMachinePools(store, catalog));
  if (pools.empty()) return step;
  ASSIGN_OR_RETURN(autoscaler::ProvisionDecision decision,
                   autoscaler::Reconcile(after_cycle(), pools, catalog, now_ms, options));
  Status written = store.ChangeNodesIfUnchanged(NodeChanges(decision, nodes_as_read), &fence);
  if (written.code() == StatusCode::kAborted) {
    step.stale = true;  // a node changed during the step (an interruption notice, an import)
    return step;
  }
  RETURN_IF_ERROR(written);
  for (const auto& event : decision.events) {
    if (event.what.starts_with("launched")) ++step.launched;
    if (event.what.starts_with("removed") || event.what.starts_with("terminated")) ++step.removed;
    (void)store.AppendAudit({now_ms, "autoscaler", "scheduling loop",
                             "machine pool " + event.machine_pool, event.node, event.what});
  }
  step.events = std::move(decision.events);
  return step;
}

Status InterruptNode(store::Store& store, const autoscaler::Catalog& catalog,
                     std::string_view node_name, int64_t now_ms, const store::Actor& actor) {
  ASSIGN_OR_RETURN(auto pools, LoadMachinePools(store, catalog));
  for (int attempt = 1;; ++attempt) {
    ASSIGN_OR_RETURN(auto records, store.ListNodes());
    auto record = std::find_if(records.begin(), records.end(),
                               [&](const store::NodeRecord& r) { return r.name == node_name; });
    if (record == records.end()) {
      return NotFoundError("node \"" + std::string(node_name) + "\" not found");
    }
    ASSIGN_OR_RETURN(model::Node node, model::NodeFromJson(record->object));
    ASSIGN_OR_RETURN(model::Node noticed, autoscaler::BeginInterruption(node, pools, now_ms));
    Status written =
        store.ChangeNodesIfUnchanged({{noticed.name, record->object, model::NodeToJson(noticed)}});
    // The scheduling loop may have rewritten the node meanwhile: read it again.
    if (written.code() == StatusCode::kAborted && attempt < kInterruptAttempts) continue;
    RETURN_IF_ERROR(written);
    (void)store.AppendAudit(
        {now_ms, actor.user, actor.source, "spot interruption notice", noticed.name,
         "terminates at " + noticed.annotations.at(autoscaler::kInterruptionDeadlineAnnotation)});
    return OkStatus();
  }
}

}  // namespace gpupool::controller
