// What the views compute once per context instead of once per request: every pool's numbers (with
// its platforms and occupancy by user), the overview's totals and lists, pending work per queue
// and node pool, and the unfinished workflows newest first. A context is built in the background
// (views_context.cc), so requests only pick what the caller may see and write JSON.
#include <algorithm>
#include <tuple>

#include "common/strings.h"
#include "config/access.h"
#include "model/task_state.h"
#include "service/views.h"
#include "service/views_internal.h"

namespace gpupool::service::views {
namespace {

using Json = nlohmann::ordered_json;

const Json* Labels(const store::TaskRecord& task) {
  const Json& pod = task.pod;
  if (!pod.is_object()) return nullptr;
  auto metadata = pod.find("metadata");
  if (metadata == pod.end() || !metadata->is_object()) return nullptr;
  auto labels = metadata->find("labels");
  return labels == metadata->end() || !labels->is_object() ? nullptr : &*labels;
}

std::string LabelOf(const store::TaskRecord& task, const char* key) {
  const Json* labels = Labels(task);
  if (labels == nullptr) return "";
  auto it = labels->find(key);
  return it == labels->end() || !it->is_string() ? "" : it->get<std::string>();
}

// The node pools a pending pod may use: its gpupool.io/node-pool list, else "default".
std::vector<std::string> PodNodePools(const store::TaskRecord& task) {
  std::vector<std::string> out;
  for (const std::string& pool : Split(LabelOf(task, scheduler::kNodePoolLabel), ',')) {
    if (!Trim(pool).empty()) out.emplace_back(Trim(pool));
  }
  if (out.empty()) out.emplace_back(model::kDefaultNodePool);
  return out;
}

int64_t StartedMs(const store::WorkflowRecord& workflow) {
  int64_t started = 0;
  for (const auto& task : workflow.tasks) {
    if (task.started_ms > 0 && (started == 0 || task.started_ms < started)) {
      started = task.started_ms;
    }
  }
  return started;
}

void NodeMemberships(Views::Context& context) {
  for (NodeInfo& node : context.nodes) {
    if (node.membership == nullptr) continue;
    for (const auto& member : node.membership->memberships) {
      if (node.pools.empty() || node.pools.back() != member.pool) node.pools.push_back(member.pool);
      node.platforms.push_back(member.pool + "/" + member.platform);
    }
  }
}

void PoolDigest(Views::Context& context) {
  auto& out = context.pools;
  for (const auto& [name, pool] : context.configs().pools) {
    PoolNumbers& numbers = out[name];
    for (const config::Platform& platform : pool.platforms) numbers.platforms[platform.name];
  }
  for (size_t i = 0; i < context.nodes.size(); ++i) {
    const NodeInfo& node = context.nodes[i];
    if (node.membership == nullptr) continue;
    for (const std::string& pool : node.pools) {
      PoolNumbers& numbers = out[pool];
      numbers.nodes.push_back(i);
      numbers.capacity += node.capacity[kGpu] / 1000;
      for (const std::string& other : node.pools) {
        if (other != pool) ++numbers.shared[other];
      }
    }
    for (const auto& member : node.membership->memberships) {
      PlatformNumbers& platform = out[member.pool].platforms[member.platform];
      ++platform.nodes;
      platform.gpu_capacity += node.capacity[kGpu] / 1000;
    }
  }
  const auto& workflows = context.state->workflows;
  for (size_t w = 0; w < workflows.size(); ++w) {
    auto it = out.find(workflows[w].pool);
    if (it == out.end()) continue;
    PoolNumbers& numbers = it->second;
    const bool low = WorkflowPriority(workflows[w]) == "LOW";
    Occupancy& occupancy = numbers.by_user[workflows[w].user];
    ++occupancy.workflows;
    for (size_t t = 0; t < workflows[w].tasks.size(); ++t) {
      const store::TaskRecord& task = workflows[w].tasks[t];
      if (IsPendingTask(task.status)) ++occupancy.pending;
      if (!IsBoundTask(task.status)) continue;
      const Amounts& requests = (*context.task_requests[w])[t];
      const int64_t gpus = requests[kGpu] / 1000;
      numbers.used += gpus;
      if (!low) numbers.quota_used += gpus;
      if (task.status == model::TaskStatus::kRunning) ++occupancy.running;
      occupancy.gpus += gpus;
      occupancy.cpu += requests[kCpu];
      auto platform = numbers.platforms.find(LabelOf(task, "gpupool.io/platform"));
      if (platform != numbers.platforms.end()) platform->second.gpu_used += gpus;
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
}

void OverviewDigest(Views::Context& context) {
  OverviewNumbers& o = context.overview;
  for (const std::string& name : context.node_pool_names) o.by_node_pool[name];
  for (const NodeInfo& node : context.nodes) {
    for (OverviewNumbers::Use* use :
         {&o.by_product[node.gpu_product], &o.by_node_pool[node.node_pool]}) {
      ++use->nodes;
      use->capacity += node.capacity[kGpu];
      use->allocated += node.allocated[kGpu];
    }
    o.gpu_capacity += node.capacity[kGpu];
    o.gpu_allocated += node.allocated[kGpu];
  }
  // Products that no node has a GPU of are left out.
  std::erase_if(o.by_product,
                [](const auto& kv) { return kv.first.empty() && kv.second.capacity == 0; });

  const auto& workflows = context.state->workflows;
  std::vector<std::pair<int64_t, size_t>> running;  // (started, workflow)
  for (size_t w = 0; w < workflows.size(); ++w) {
    const store::WorkflowRecord& workflow = workflows[w];
    bool any_pending = false;
    for (size_t t = 0; t < workflow.tasks.size(); ++t) {
      const store::TaskRecord& task = workflow.tasks[t];
      const Amounts& requests = (*context.task_requests[w])[t];
      if (task.status == model::TaskStatus::kRunning) ++o.running_tasks;
      if (IsPendingTask(task.status)) {
        any_pending = true;
        ++o.pending_tasks;
        o.pending_gpus += requests[kGpu];
        auto& queue = o.pending_by_queue[context.workflow_queues[w]];
        ++queue.first;
        queue.second += requests[kGpu];
        for (const std::string& pool : PodNodePools(task)) {
          auto it = o.by_node_pool.find(pool);
          if (it != o.by_node_pool.end()) ++it->second.pending_tasks;
          PendingCount& pending = context.pending[{context.workflow_queues[w], pool}];
          ++pending.tasks;
          for (int r = 0; r < model::kNumQuotaResources; ++r) pending.requests[r] += requests[r];
        }
      }
      if (task.status == model::TaskStatus::kScheduled && requests[kGpu] > 0) {
        o.idle_allocated_gpus += requests[kGpu];
        o.idle.emplace_back(w, t);
      }
    }
    if (any_pending) ++o.pending_workflows;
    if (workflow.status == model::WorkflowStatus::kRunning) {
      running.emplace_back(StartedMs(workflow), w);
    }
  }
  std::sort(running.begin(), running.end(), [&](const auto& a, const auto& b) {
    return std::tie(a.first, workflows[a.second].id) < std::tie(b.first, workflows[b.second].id);
  });
  for (const auto& [started, w] : running) o.longest_running.push_back(w);
}

void NewestFirst(Views::Context& context) {
  const auto& workflows = context.state->workflows;
  context.newest_first.clear();
  for (size_t w = 0; w < workflows.size(); ++w) {
    if (!model::IsFinishedWorkflowText(workflows[w].status)) context.newest_first.push_back(w);
  }
  std::sort(context.newest_first.begin(), context.newest_first.end(), [&](size_t a, size_t b) {
    return std::tie(workflows[a].submitted_ms, workflows[a].id) >
           std::tie(workflows[b].submitted_ms, workflows[b].id);
  });
}

}  // namespace

bool ReadAccess::operator()(const store::WorkflowRecord& workflow) {
  if (workflow.user == caller_.user) return true;
  auto it = by_pool_.find(workflow.pool);
  if (it == by_pool_.end()) {
    it = by_pool_.emplace(workflow.pool, context_.MayRead(caller_, workflow)).first;
  }
  return it->second;
}

void Digest(Views::Context& context) {
  NodeMemberships(context);
  PoolDigest(context);
  OverviewDigest(context);
  NewestFirst(context);
}

}  // namespace gpupool::service::views
