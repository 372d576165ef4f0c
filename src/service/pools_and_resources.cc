// `pool list`, `profile` and `resource list`: the pools, the caller's pools and the nodes, with
// what the unfinished workflows use of them.

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "common/saturating.h"
#include "common/strings.h"
#include "config/access.h"
#include "config/config_set.h"
#include "config/kinds.h"
#include "config/membership.h"
#include "model/k8s.h"
#include "model/label_selector.h"
#include "model/node_pool.h"
#include "model/queue.h"
#include "model/quota_tree.h"
#include "model/task_state.h"
#include "service/located_errors.h"
#include "service/quota_configs.h"
#include "service/service_internal.h"
#include "service/snapshot_cache.h"
#include "store/store.h"
#include "submit/submit.h"

namespace gpupool::service {
namespace {

using json = nlohmann::ordered_json;
using config::Kind;

model::ResourceList TaskRequests(const store::TaskRecord& task) {
  auto r = model::PodRequestsFromJson(task.pod);
  return r.ok() ? *r : model::ResourceList{};
}

int64_t Milli(const model::ResourceList& list, const std::string& resource) {
  auto it = list.find(resource);
  return it == list.end() ? 0 : it->second.MilliValue();
}

// Whole units (rounded up), exact over Kubernetes' range: bytes of memory and storage.
int64_t Units(const model::ResourceList& list, const std::string& resource) {
  auto it = list.find(resource);
  return it == list.end() ? 0 : it->second.Value();
}

// Every unfinished workflow (what their active tasks use is what the pools and nodes show used).
Result<std::vector<store::WorkflowRecord>> UnfinishedWorkflows(store::Store& store) {
  store::WorkflowFilter filter;
  filter.unfinished_only = true;
  filter.limit = 0;
  return store.ListWorkflows(filter);
}

// `--pool P [--platform X]` name a pool, and a platform of it, that exist (kNotFound otherwise).
Status CheckResourceFilter(const config::ConfigSet& set, const ResourceFilter& filter) {
  if (!filter.pool.has_value()) return OkStatus();
  const config::Pool* pool = set.FindPool(*filter.pool);
  if (pool == nullptr) {
    return NotFoundError("pool " + Quoted(*filter.pool) + " does not exist" +
                         DidYouMean(*filter.pool, config::ConfigNames(set, Kind::kPool)));
  }
  if (filter.platform.has_value() && pool->FindPlatform(*filter.platform) == nullptr) {
    return NotFoundError("platform " + Quoted(*filter.platform) + " is not in pool " +
                         Quoted(*filter.pool) +
                         DidYouMean(*filter.platform, pool->PlatformNames()) +
                         "; the pool's platforms: " + Join(pool->PlatformNames(), ", "));
  }
  return OkStatus();
}

// Node -> requests of the active tasks bound to it.
std::map<std::string, model::ResourceList> UsedByNode(
    const std::vector<store::WorkflowRecord>& workflows) {
  std::map<std::string, model::ResourceList> used;
  for (const auto& wf : workflows) {
    for (const auto& t : wf.tasks) {
      if (t.node.empty() || !model::IsBoundTaskText(t.status)) continue;
      model::AddResources(used[t.node], TaskRequests(t));
    }
  }
  return used;
}

// A node's row before its pool and platform are set: its type, usage of `used` against its
// allocatable resources, GPU product and node pools.
ResourceRow NodeRow(const model::Node& node, config::NodeType type, const model::ResourceList& u,
                    const std::map<std::string, model::NodePool>& node_pools) {
  ResourceRow base;
  base.node = node.name;
  base.type = std::string(config::NodeTypeName(type));
  base.cpu_used = Milli(u, "cpu");
  base.cpu_capacity = Milli(node.allocatable, "cpu");
  base.memory_used = Units(u, "memory");
  base.memory_capacity = Units(node.allocatable, "memory");
  base.storage_used = Units(u, "ephemeral-storage");
  base.storage_capacity = Units(node.allocatable, "ephemeral-storage");
  base.gpu_used = Milli(u, "nvidia.com/gpu");
  base.gpu_capacity = Milli(node.allocatable, "nvidia.com/gpu");
  auto product = node.labels.find("nvidia.com/gpu.product");
  if (product != node.labels.end()) base.gpu_product = product->second;
  base.node_pools = model::MatchingNodePools(node, node_pools);
  if (base.node_pools.size() > 1) {
    base.node_pool_conflict = model::NodePoolConflictMessage(node.name, base.node_pools);
  }
  return base;
}

}  // namespace

Result<std::vector<PoolRow>> Service::ListPools(const Caller& caller) {
  ASSIGN_OR_RETURN(auto state, cache_->GetWithNodes(store_));
  const Snapshot& snap = *state.first;
  const std::vector<model::Node>& nodes = *state.second;
  ASSIGN_OR_RETURN(auto membership, config::ComputeMembership(snap.set, nodes));
  ASSIGN_OR_RETURN(auto workflows, UnfinishedWorkflows(store_));

  std::vector<std::string> visible = config::AllowedPools(caller.roles, snap.set);
  std::vector<PoolRow> rows;
  for (const auto& [name, pool] : snap.set.pools) {
    if (!HasRole(caller, config::kAdminRole) &&
        std::find(visible.begin(), visible.end(), name) == visible.end()) {
      continue;
    }
    PoolRow row;
    row.name = name;
    row.description = pool.description;
    row.backend = pool.backend;
    row.platforms = pool.PlatformNames();
    int node_count = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      bool member =
          std::any_of(membership[i].memberships.begin(), membership[i].memberships.end(),
                      [&row](const config::PoolPlatform& pp) { return pp.pool == row.name; });
      if (!member) continue;
      ++node_count;
      auto it = nodes[i].allocatable.find("nvidia.com/gpu");
      if (it != nodes[i].allocatable.end()) {
        row.gpu_capacity = SaturatingAdd(row.gpu_capacity, it->second.Value());
      }
    }
    for (const auto& wf : workflows) {
      if (wf.pool != name) continue;
      bool low = wf.spec.is_object() && wf.spec.value("priority", std::string()) == "LOW";
      for (const auto& t : wf.tasks) {
        if (!model::IsBoundTaskText(t.status)) continue;
        int64_t gpus = Milli(TaskRequests(t), "nvidia.com/gpu") / 1000;
        row.gpu_used += gpus;
        if (!low) row.gpu_quota_used += gpus;
      }
    }
    if (pool.gpu.has_value() && pool.gpu->guarantee >= 0) {
      row.gpu_quota_limit = pool.gpu->guarantee;
    } else {
      row.gpu_quota_limit = row.gpu_capacity;
    }
    row.status = pool.enable_maintenance ? "MAINTENANCE" : (node_count > 0 ? "ONLINE" : "OFFLINE");
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<ProfileView> Service::Profile(const Caller& caller) {
  ASSIGN_OR_RETURN(SnapshotPtr snap, cache_->Get(store_));
  ProfileView profile;
  profile.user = caller.user;
  profile.roles = caller.roles;
  profile.pools = HasRole(caller, config::kAdminRole)
                      ? config::ConfigNames(snap->set, Kind::kPool)
                      : config::AllowedPools(caller.roles, snap->set);
  const bool has_default =
      std::find(profile.pools.begin(), profile.pools.end(), "default") != profile.pools.end();
  if (has_default) {
    profile.default_pool = "default";
  } else if (profile.pools.size() == 1) {
    profile.default_pool = profile.pools.front();
  }
  std::vector<model::Queue> queues;
  for (auto& [name, queue] : DecodeQuotaConfigs(snap->other).queues) {
    queues.push_back(std::move(queue));
  }
  profile.queues = submit::SubmittableQueues(snap->set, caller.roles, queues);
  return profile;
}

json ToJson(const ProfileView& profile) {
  return json{
      {"user", profile.user},
      {"roles", profile.roles},
      {"pools", profile.pools},
      {"default_pool", profile.default_pool.empty() ? json(nullptr) : json(profile.default_pool)},
      {"queues", profile.queues}};
}

Result<std::vector<ResourceRow>> Service::ListResources(const Caller& caller,
                                                        const ResourceFilter& filter) {
  (void)caller;
  ASSIGN_OR_RETURN(auto state, cache_->GetWithNodes(store_));
  const Snapshot& snap = *state.first;
  RETURN_IF_ERROR(CheckResourceFilter(snap.set, filter));
  const std::vector<model::Node>& nodes = *state.second;
  ASSIGN_OR_RETURN(auto membership, config::ComputeMembership(snap.set, nodes));
  ASSIGN_OR_RETURN(auto workflows, UnfinishedWorkflows(store_));
  std::map<std::string, model::ResourceList> used = UsedByNode(workflows);
  auto selector = model::ParseLabelSelector(filter.selector);
  if (!selector.ok()) return selector.status().WithContext("-l/selector");
  const QuotaConfigs quota_configs = DecodeQuotaConfigs(snap.other);
  std::vector<ResourceRow> rows;
  bool filtered = filter.pool.has_value() || filter.platform.has_value();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const model::Node& node = nodes[i];
    if (!model::MatchesLabelSelector(*selector, node.labels)) continue;
    ResourceRow base = NodeRow(node, membership[i].type, used[node.name], quota_configs.node_pools);
    if (membership[i].memberships.empty()) {
      if (filtered) continue;
      base.pool = "-";
      base.platform = "-";
      rows.push_back(base);
      continue;
    }
    for (const auto& pp : membership[i].memberships) {
      if (filter.pool && pp.pool != *filter.pool) continue;
      if (filter.platform && pp.platform != *filter.platform) continue;
      ResourceRow row = base;
      row.pool = pp.pool;
      row.platform = pp.platform;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace gpupool::service
