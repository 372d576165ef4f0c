// The pool views: OSMO's pools table with shared nodes marked (totals count a node once) and one
// pool's page (platforms, templates, rules, timeouts, maintenance, occupancy by user).
#include <algorithm>
#include <map>
#include <set>

#include "config/access.h"
#include "service/views.h"
#include "service/views_internal.h"

namespace gpupool::service {

using Json = nlohmann::ordered_json;

namespace {

bool IsAdmin(const Caller& caller) {
  return std::find(caller.roles.begin(), caller.roles.end(), config::kAdminRole) !=
         caller.roles.end();
}

using views::PoolNumbers;

std::vector<std::string> VisiblePools(const Caller& caller, const config::ConfigSet& configs) {
  std::vector<std::string> names;
  if (IsAdmin(caller)) {
    for (const auto& [name, pool] : configs.pools) names.push_back(name);
    return names;
  }
  return config::AllowedPools(caller.roles, configs);
}

Json PoolRowJson(const config::Pool& pool, const PoolNumbers& numbers,
                 const std::vector<std::string>& visible) {
  Json shared = Json::array();
  for (const std::string& other : visible) {
    auto it = numbers.shared.find(other);
    if (it != numbers.shared.end()) shared.push_back({{"pool", other}, {"nodes", it->second}});
  }
  return {
      {"name", pool.name},
      {"description", pool.description},
      {"status", numbers.status},
      {"backend", pool.backend},
      {"platforms", pool.PlatformNames()},
      {"nodes", numbers.nodes.size()},
      {"quota_used", numbers.quota_used},
      {"quota_limit", pool.gpu.has_value() && pool.gpu->guarantee >= 0 ? numbers.quota_limit : -1},
      {"quota_free", std::max<int64_t>(0, numbers.quota_limit - numbers.quota_used)},
      {"capacity", numbers.capacity},
      {"capacity_used", numbers.used},
      {"capacity_free", std::max<int64_t>(0, numbers.capacity - numbers.used)},
      {"shared_with", std::move(shared)}};
}

}  // namespace

Result<Json> Views::Pools(const Caller& caller) {
  ASSIGN_OR_RETURN(auto context_ptr, Current());
  const Context& context = *context_ptr;
  const std::vector<std::string> visible = VisiblePools(caller, context.configs());
  Json rows = Json::array();
  int64_t used = 0, quota_used = 0;
  for (const std::string& name : visible) {
    const config::Pool* pool = context.configs().FindPool(name);
    auto it = context.pools.find(name);
    if (pool == nullptr || it == context.pools.end()) continue;
    rows.push_back(PoolRowJson(*pool, it->second, visible));
    used += it->second.used;  // a task is in one pool: summing counts it once
    quota_used += it->second.quota_used;
  }
  // Nodes in any of the pools shown, each counted once.
  const std::set<std::string_view> shown(visible.begin(), visible.end());
  int64_t nodes = 0, capacity = 0;
  for (const views::NodeInfo& node : context.nodes) {
    if (std::none_of(node.pools.begin(), node.pools.end(),
                     [&](const std::string& pool) { return shown.contains(pool); })) {
      continue;
    }
    ++nodes;
    capacity += node.capacity[views::kGpu] / 1000;
  }
  Json totals = {{"nodes", nodes},
                 {"capacity", capacity},
                 {"capacity_used", used},
                 {"capacity_free", std::max<int64_t>(0, capacity - used)},
                 {"quota_used", quota_used}};
  return Json{{"at", context.state->at_ms}, {"pools", std::move(rows)}, {"totals", totals}};
}

Result<Json> Views::Pool(const Caller& caller, std::string_view name) {
  ASSIGN_OR_RETURN(auto context_ptr, Current());
  const Context& context = *context_ptr;
  const std::vector<std::string> visible = VisiblePools(caller, context.configs());
  const config::Pool* pool = context.configs().FindPool(name);
  if (pool == nullptr || std::find(visible.begin(), visible.end(), name) == visible.end()) {
    // The same answer for a pool that exists but is not the caller's: no probing of names.
    return NotFoundError("pool \"" + std::string(name) + "\" does not exist or is not yours");
  }
  const PoolNumbers& mine = context.pools.at(pool->name);
  Json out = {{"at", context.state->at_ms}, {"pool", PoolRowJson(*pool, mine, visible)}};
  auto stored = store_.GetConfig("POOL", name);
  out["revision"] = stored.ok() ? stored->revision : 0;
  out["config"] = stored.ok() ? stored->body : config::PoolToJson(*pool);

  // Platforms: their nodes and GPUs, and what each adds to the pool's templates and rules.
  Json platforms = Json::array();
  for (const config::Platform& platform : pool->platforms) {
    auto it = mine.platforms.find(platform.name);
    const views::PlatformNumbers numbers =
        it == mine.platforms.end() ? views::PlatformNumbers{} : it->second;
    platforms.push_back({{"name", platform.name},
                         {"description", platform.description},
                         {"default", pool->default_platform == platform.name},
                         {"nodes", numbers.nodes},
                         {"gpu_capacity", numbers.gpu_capacity},
                         {"gpu_used", numbers.gpu_used},
                         {"pod_templates", platform.override_pod_template},
                         {"resource_validations", platform.resource_validations}});
  }
  out["platforms"] = std::move(platforms);

  // Occupancy by user: the pool's unfinished workflows.
  Json occupancy = Json::array();
  for (const auto& [user, o] : mine.by_user) {
    occupancy.push_back({{"user", user},
                         {"workflows", o.workflows},
                         {"running_tasks", o.running},
                         {"pending_tasks", o.pending},
                         {"gpus", o.gpus},
                         {"cpu_milli", o.cpu}});
  }
  out["occupancy"] = std::move(occupancy);
  return out;
}

}  // namespace gpupool::service
