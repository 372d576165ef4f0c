#include "service/snapshot_cache.h"

#include "codec/json_writer.h"
#include "config/kinds.h"
#include "config/membership.h"
#include "model/k8s.h"
#include "model/machine_pool.h"
#include "service/service_internal.h"

namespace gpupool::service {
namespace {

using json = nlohmann::ordered_json;
using config::Kind;

// A machine pool that no longer decodes is skipped here: it adds no node, and the scheduling
// loop reports it.
void AddScaleUpNodes(const MachinePoolSupport& machine_pools, Snapshot& snap) {
  if (!machine_pools.template_node) return;
  for (const auto& [key, body] : snap.other) {
    if (key.first != config::KindName(Kind::kMachinePool)) continue;
    auto pool = model::MachinePoolFromJson(body, key.second);
    if (!pool.ok()) continue;
    if (auto node = machine_pools.template_node(*pool)) snap.scale_up_nodes.push_back(*node);
  }
}

Result<Snapshot> LoadSnapshot(store::Store& store, const MachinePoolSupport& machine_pools) {
  Snapshot snap;
  ASSIGN_OR_RETURN(auto records, store.ListConfigs(std::nullopt));
  for (const auto& r : records) {
    snap.revisions[{r.kind, r.name}] = r.revision;
    auto kind = config::ParseKind(r.kind);
    if (!kind.ok()) continue;  // a kind this build does not know: keep it untouched
    if (!IsOsmoKind(*kind)) {
      snap.other[{r.kind, r.name}] = r.body;
      continue;
    }
    Status s = config::PutConfig(snap.set, *kind, r.name, r.body);
    if (!s.ok()) {
      return InternalError("stored " + r.kind + " " + Quoted(r.name) + " (revision " +
                           std::to_string(r.revision) + ") no longer decodes: " + s.message());
    }
  }
  AddScaleUpNodes(machine_pools, snap);
  return snap;
}

Result<std::vector<model::Node>> LoadNodes(store::Store& store) {
  ASSIGN_OR_RETURN(auto records, store.ListNodes());
  std::vector<model::Node> nodes;
  nodes.reserve(records.size());
  for (const auto& r : records) {
    auto node = model::NodeFromJson(r.object);
    if (!node.ok()) {
      return InternalError("stored node " + Quoted(r.name) +
                           " does not decode: " + node.status().message());
    }
    nodes.push_back(std::move(*node));
  }
  return nodes;
}

}  // namespace

Result<submit::SubmitOptions::NodeList> Service::SnapshotCache::PlatformNodes(
    const SnapshotPtr& snap, const NodesPtr& nodes_of, std::string_view pool,
    std::string_view platform, const json& merged_template) {
  return platform_lists.Get(
      mu, std::tie(snap, nodes_of), pool, platform,
      [&]() -> Result<submit::SubmitOptions::NodeList> {
        const config::Pool* of = snap->set.FindPool(pool);
        ASSIGN_OR_RETURN(auto list,
                         config::PlatformNodesOf(merged_template, *nodes_of,
                                                 of ? of->backend : config::kDefaultBackend));
        return std::make_shared<const std::vector<const model::Node*>>(std::move(list));
      });
}

Result<submit::PlatformSetupPtr> Service::SnapshotCache::PlatformSetup(const SnapshotPtr& snap,
                                                                       const config::Pool& pool,
                                                                       std::string_view platform) {
  return platform_setups.Get(mu, std::tie(snap), pool.name, platform,
                             [&] { return submit::BuildPlatformSetup(pool, platform, snap->set); });
}

NodesPtr Service::SnapshotCache::NodesForSubmit(const SnapshotPtr& snap, const NodesPtr& base) {
  if (snap->scale_up_nodes.empty()) return base;
  std::lock_guard<std::mutex> lock(mu);
  if (submit_nodes == nullptr || submit_nodes_snapshot != snap || submit_nodes_base != base) {
    auto combined = std::make_shared<std::vector<model::Node>>(*base);
    combined->insert(combined->end(), snap->scale_up_nodes.begin(), snap->scale_up_nodes.end());
    submit_nodes = std::move(combined);
    submit_nodes_snapshot = snap;
    submit_nodes_base = base;
  }
  return submit_nodes;
}

Result<SnapshotPtr> Service::SnapshotCache::Get(store::Store& store) {
  ASSIGN_OR_RETURN(int64_t now, store.ConfigGeneration());
  return ConfigsAt(store, now);
}

Result<std::pair<SnapshotPtr, NodesPtr>> Service::SnapshotCache::GetWithNodes(store::Store& store) {
  ASSIGN_OR_RETURN(Keyed keyed, GetKeyed(store));
  return std::make_pair(std::move(keyed.snapshot), std::move(keyed.nodes));
}

Result<Service::SnapshotCache::Keyed> Service::SnapshotCache::GetKeyed(store::Store& store) {
  ASSIGN_OR_RETURN(store::Store::Generations now, store.GetGenerations());
  ASSIGN_OR_RETURN(SnapshotPtr snap, ConfigsAt(store, now.configs));
  ASSIGN_OR_RETURN(NodesPtr current_nodes, NodesAt(store, now.nodes));
  return Keyed{std::move(snap), std::move(current_nodes), now};
}

Result<Service::SnapshotCache::Keyed> Service::SnapshotCache::LastKeyed(store::Store& store) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (snapshot != nullptr && nodes != nullptr) {
      return Keyed{snapshot, nodes, {generation, node_generation}};
    }
  }
  return GetKeyed(store);
}

Result<SnapshotPtr> Service::SnapshotCache::ConfigsAt(store::Store& store, int64_t now) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (snapshot != nullptr && generation == now) return snapshot;
  }
  ASSIGN_OR_RETURN(Snapshot loaded, LoadSnapshot(store, machine_pools));
  auto fresh = std::make_shared<const Snapshot>(std::move(loaded));
  std::lock_guard<std::mutex> lock(mu);
  if (now >= generation) {
    generation = now;
    snapshot = fresh;
  }
  return fresh;
}

Result<NodesPtr> Service::SnapshotCache::NodesAt(store::Store& store, int64_t now) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (nodes != nullptr && node_generation == now) return nodes;
  }
  ASSIGN_OR_RETURN(std::vector<model::Node> loaded, LoadNodes(store));
  auto fresh = std::make_shared<const std::vector<model::Node>>(std::move(loaded));
  std::lock_guard<std::mutex> lock(mu);
  if (now >= node_generation) {
    node_generation = now;
    nodes = fresh;
  }
  return fresh;
}

Result<std::shared_ptr<const CachedWorkflow>> Service::SnapshotCache::Workflow(
    store::Store& store, std::string_view id) {
  std::shared_ptr<const CachedWorkflow> cached = Cached(id);
  return Current(id, cached,
                 store.GetWorkflowIfChanged(id, cached != nullptr ? cached->version : 0));
}

void Service::SnapshotCache::WorkflowAsync(store::Store& store, const std::string& id,
                                           WorkflowDone done) {
  std::shared_ptr<const CachedWorkflow> cached = Cached(id);
  int64_t known = cached != nullptr ? cached->version : 0;
  store.GetWorkflowIfChangedAsync(id, known,
                                  [this, id, cached, done = std::move(done)](
                                      Result<std::optional<store::WorkflowRecord>> changed) {
                                    done(Current(id, cached, std::move(changed)));
                                  });
}

std::shared_ptr<const CachedWorkflow> Service::SnapshotCache::Cached(std::string_view id) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = workflows.find(std::string(id));
  return it != workflows.end() ? it->second : nullptr;
}

Result<std::shared_ptr<const CachedWorkflow>> Service::SnapshotCache::Current(
    std::string_view id, std::shared_ptr<const CachedWorkflow> cached,
    Result<std::optional<store::WorkflowRecord>> changed) {
  if (!changed.ok()) {
    if (changed.status().code() == StatusCode::kNotFound) {
      return NotFoundError("workflow " + Quoted(id) + " does not exist");
    }
    return changed.status();
  }
  if (!changed->has_value()) return cached;
  const store::WorkflowRecord& wf = **changed;
  auto fresh = std::make_shared<CachedWorkflow>();
  fresh->version = wf.version;
  fresh->user = wf.user;
  fresh->pool = wf.pool;
  fresh->view = ToView(wf);
  fresh->json_text =
      std::make_shared<const std::string>(codec::DumpCompact(ToJson(fresh->view)) + "\n");
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = workflows[std::string(id)];
  if (slot == nullptr || slot->version <= fresh->version) {
    if (workflows.size() > kMaxWorkflows) {
      workflows.clear();
      workflows[std::string(id)] = fresh;
    } else {
      slot = fresh;
    }
  }
  return std::shared_ptr<const CachedWorkflow>(std::move(fresh));
}

}  // namespace gpupool::service
