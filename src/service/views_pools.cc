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

// One pool's numbers, as Service::ListPools computes them (whole GPUs).
struct PoolNumbers {
  std::vector<size_t> nodes;  // indices into Context::nodes
  int64_t capacity = 0, used = 0, quota_used = 0, quota_limit = 0;
  std::string status;
};

std::map<std::string, PoolNumbers> Numbers(const Views::Context& context) {
  std::map<std::string, PoolNumbers> out;
  for (const auto& [name, pool] : context.configs().pools) out[name];
  for (size_t i = 0; i < context.nodes.size(); ++i) {
    const views::NodeInfo& node = context.nodes[i];
    if (node.membership == nullptr) continue;
    std::string previous;
    for (const auto& member : node.membership->memberships) {
      if (member.pool == previous) continue;
      previous = member.pool;
      PoolNumbers& numbers = out[member.pool];
      numbers.nodes.push_back(i);
      numbers.capacity += node.capacity[views::kGpu] / 1000;
    }
  }
  const auto& workflows = context.state->workflows;
  for (size_t w = 0; w < workflows.size(); ++w) {
    auto it = out.find(workflows[w].pool);
    if (it == out.end()) continue;
    const bool low = views::WorkflowPriority(workflows[w]) == "LOW";
    for (size_t t = 0; t < workflows[w].tasks.size(); ++t) {
      if (!views::IsBoundTask(workflows[w].tasks[t].status)) continue;
      const int64_t gpus = (*context.task_requests[w])[t][views::kGpu] / 1000;
      it->second.used += gpus;
      if (!low) it->second.quota_used += gpus;
    }
  }
  for (auto& [name, numbers] : out) {
    const config::Pool* pool = context.configs().FindPool(name);
    if (pool == nullptr) continue;
    numbers.quota_limit = pool->gpu.has_value() && pool->gpu->guarantee >= 0 ? pool->gpu->guarantee
                                                                             : numbers.capacity;
    numbers.status = pool->enable_maintenance ? "MAINTENANCE"
                     : numbers.nodes.empty()  ? "OFFLINE"
                                              : "ONLINE";
  }
  return out;
}

std::vector<std::string> VisiblePools(const Caller& caller, const config::ConfigSet& configs) {
  std::vector<std::string> names;
  if (IsAdmin(caller)) {
    for (const auto& [name, pool] : configs.pools) names.push_back(name);
    return names;
  }
  return config::AllowedPools(caller.roles, configs);
}

Json PoolRowJson(const config::Pool& pool, const PoolNumbers& numbers,
                 const std::map<std::string, PoolNumbers>& all,
                 const std::vector<std::string>& visible) {
  std::set<size_t> mine(numbers.nodes.begin(), numbers.nodes.end());
  Json shared = Json::array();
  for (const std::string& other : visible) {
    if (other == pool.name) continue;
    auto it = all.find(other);
    if (it == all.end()) continue;
    int64_t common = 0;
    for (size_t node : it->second.nodes) common += mine.contains(node) ? 1 : 0;
    if (common > 0) shared.push_back({{"pool", other}, {"nodes", common}});
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
  const std::map<std::string, PoolNumbers> numbers = Numbers(context);
  const std::vector<std::string> visible = VisiblePools(caller, context.configs());
  Json rows = Json::array();
  std::set<size_t> nodes;
  int64_t used = 0, quota_used = 0;
  for (const std::string& name : visible) {
    const config::Pool* pool = context.configs().FindPool(name);
    auto it = numbers.find(name);
    if (pool == nullptr || it == numbers.end()) continue;
    rows.push_back(PoolRowJson(*pool, it->second, numbers, visible));
    nodes.insert(it->second.nodes.begin(), it->second.nodes.end());
    used += it->second.used;  // a task is in one pool: summing counts it once
    quota_used += it->second.quota_used;
  }
  int64_t capacity = 0;
  for (size_t node : nodes) capacity += context.nodes[node].capacity[views::kGpu] / 1000;
  Json totals = {{"nodes", nodes.size()},
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
  const std::map<std::string, PoolNumbers> numbers = Numbers(context);
  const PoolNumbers& mine = numbers.at(pool->name);
  Json out = {{"at", context.state->at_ms}, {"pool", PoolRowJson(*pool, mine, numbers, visible)}};
  auto stored = store_.GetConfig("POOL", name);
  out["revision"] = stored.ok() ? stored->revision : 0;
  out["config"] = stored.ok() ? stored->body : config::PoolToJson(*pool);

  // Platforms: their nodes and GPUs, and what each adds to the pool's templates and rules.
  const auto& workflows = context.state->workflows;
  Json platforms = Json::array();
  for (const config::Platform& platform : pool->platforms) {
    int64_t nodes = 0, capacity = 0, used = 0;
    for (size_t i : mine.nodes) {
      const auto& memberships = context.nodes[i].membership->memberships;
      if (std::find(memberships.begin(), memberships.end(),
                    config::PoolPlatform{pool->name, platform.name}) == memberships.end()) {
        continue;
      }
      ++nodes;
      capacity += context.nodes[i].capacity[views::kGpu] / 1000;
    }
    for (size_t w = 0; w < workflows.size(); ++w) {
      if (workflows[w].pool != pool->name) continue;
      for (size_t t = 0; t < workflows[w].tasks.size(); ++t) {
        const store::TaskRecord& task = workflows[w].tasks[t];
        if (!views::IsBoundTask(task.status)) continue;
        const Json& labels = task.pod.is_object() && task.pod.contains("metadata")
                                 ? task.pod["metadata"].value("labels", Json::object())
                                 : Json::object();
        if (labels.value("gpupool.io/platform", "") != platform.name) continue;
        used += (*context.task_requests[w])[t][views::kGpu] / 1000;
      }
    }
    platforms.push_back({{"name", platform.name},
                         {"description", platform.description},
                         {"default", pool->default_platform == platform.name},
                         {"nodes", nodes},
                         {"gpu_capacity", capacity},
                         {"gpu_used", used},
                         {"pod_templates", platform.override_pod_template},
                         {"resource_validations", platform.resource_validations}});
  }
  out["platforms"] = std::move(platforms);

  // Occupancy by user: the pool's unfinished workflows.
  struct Occupancy {
    int64_t workflows = 0, running = 0, pending = 0, gpus = 0, cpu = 0;
  };
  std::map<std::string, Occupancy> by_user;
  for (size_t w = 0; w < workflows.size(); ++w) {
    if (workflows[w].pool != pool->name) continue;
    Occupancy& o = by_user[workflows[w].user];
    ++o.workflows;
    for (size_t t = 0; t < workflows[w].tasks.size(); ++t) {
      const store::TaskRecord& task = workflows[w].tasks[t];
      if (views::IsPendingTask(task.status)) ++o.pending;
      if (!views::IsBoundTask(task.status)) continue;
      if (task.status == "RUNNING") ++o.running;
      o.gpus += (*context.task_requests[w])[t][views::kGpu] / 1000;
      o.cpu += (*context.task_requests[w])[t][views::kCpu];
    }
  }
  Json occupancy = Json::array();
  for (const auto& [user, o] : by_user) {
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
