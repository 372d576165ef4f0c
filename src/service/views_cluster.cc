// The cluster-wide views: overview, nodes, machine pools.
#include <algorithm>
#include <map>

#include "common/strings.h"
#include "model/label_selector.h"
#include "service/views.h"
#include "service/views_internal.h"

namespace gpupool::service {

using views::Amounts;
using Json = nlohmann::ordered_json;

namespace views {

// Continue tokens are the last item's sort key, hex-encoded: opaque to clients, and a token from
// another list (or made up) decodes to a key that merely starts the page elsewhere.
std::string EncodeContinue(std::string_view key) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : key) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

Result<std::string> DecodeContinue(std::string_view token) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (token.size() % 2 != 0) return InvalidArgumentError("continue: not a token of this list");
  std::string out;
  for (size_t i = 0; i < token.size(); i += 2) {
    int hi = digit(token[i]), lo = digit(token[i + 1]);
    if (hi < 0 || lo < 0) return InvalidArgumentError("continue: not a token of this list");
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

}  // namespace views

namespace {

// The node pools a pending pod may use: its gpupool.io/node-pool list, else "default".
std::vector<std::string> PodNodePools(const store::TaskRecord& task) {
  const Json& pod = task.pod;
  if (pod.is_object() && pod.contains("metadata") && pod["metadata"].is_object()) {
    const Json& labels = pod["metadata"].value("labels", Json::object());
    if (labels.is_object() && labels.contains(scheduler::kNodePoolLabel) &&
        labels[scheduler::kNodePoolLabel].is_string()) {
      std::vector<std::string> out;
      for (const std::string& p :
           Split(labels[scheduler::kNodePoolLabel].get<std::string>(), ',')) {
        if (!Trim(p).empty()) out.emplace_back(Trim(p));
      }
      if (!out.empty()) return out;
    }
  }
  return {std::string(model::kDefaultNodePool)};
}

int64_t StartedMs(const store::WorkflowRecord& workflow) {
  int64_t started = 0;
  for (const auto& task : workflow.tasks) {
    if (task.started_ms > 0 && (started == 0 || task.started_ms < started))
      started = task.started_ms;
  }
  return started;
}

std::string TaintText(const model::Taint& taint) {
  std::string text = taint.key;
  if (!taint.value.empty()) text += "=" + taint.value;
  return text + ":" + std::string(model::TaintEffectName(taint.effect));
}

}  // namespace

Result<Json> Views::Overview(const Caller& caller) {
  ASSIGN_OR_RETURN(auto context_ptr, Current());
  const Context& context = *context_ptr;
  const LiveState& state = *context.state;

  Json totals = {{"nodes", context.nodes.size()},
                 {"gpu_capacity", 0},
                 {"gpu_allocated", 0},
                 {"gpu_free", 0},
                 {"running_tasks", 0},
                 {"pending_tasks", 0},
                 {"pending_workflows", 0},
                 {"pending_gpus", 0},
                 {"idle_allocated_gpus", 0}};
  struct Use {
    int64_t nodes = 0, capacity = 0, allocated = 0, pending_tasks = 0;
  };
  std::map<std::string, Use> by_product, by_pool;
  for (const std::string& name : context.node_pool_names) by_pool[name];
  int64_t capacity = 0, allocated = 0;
  for (const views::NodeInfo& node : context.nodes) {
    for (Use* use : {&by_product[node.gpu_product], &by_pool[node.node_pool]}) {
      ++use->nodes;
      use->capacity += node.capacity[views::kGpu];
      use->allocated += node.allocated[views::kGpu];
    }
    capacity += node.capacity[views::kGpu];
    allocated += node.allocated[views::kGpu];
  }
  // Products that no node has a GPU of are shown only if they have nodes with GPUs.
  std::erase_if(by_product,
                [](const auto& kv) { return kv.first.empty() && kv.second.capacity == 0; });

  std::map<std::string, std::pair<int64_t, int64_t>> pending_by_queue;  // tasks, gpus
  int64_t running = 0, pending = 0, pending_gpus = 0, idle_gpus = 0, pending_workflows = 0;
  Json idle = Json::array();
  std::vector<const store::WorkflowRecord*> running_workflows;
  for (size_t w = 0; w < state.workflows.size(); ++w) {
    const store::WorkflowRecord& workflow = state.workflows[w];
    bool any_pending = false;
    for (size_t t = 0; t < workflow.tasks.size(); ++t) {
      const store::TaskRecord& task = workflow.tasks[t];
      const Amounts& requests = (*context.task_requests[w])[t];
      if (task.status == "RUNNING") ++running;
      if (views::IsPendingTask(task.status)) {
        any_pending = true;
        ++pending;
        pending_gpus += requests[views::kGpu];
        auto& queue = pending_by_queue[context.workflow_queues[w]];
        ++queue.first;
        queue.second += requests[views::kGpu];
        for (const std::string& pool : PodNodePools(task)) {
          auto it = by_pool.find(pool);
          if (it != by_pool.end()) ++it->second.pending_tasks;
        }
      }
      if (task.status == "SCHEDULED" && requests[views::kGpu] > 0) {
        idle_gpus += requests[views::kGpu];
        if (idle.size() < 20 && context.MayRead(caller, workflow)) {
          idle.push_back({{"workflow", workflow.id},
                          {"task", task.group + "/" + task.name},
                          {"node", task.node},
                          {"gpus", requests[views::kGpu]},
                          {"since_ms", task.status_changed_ms}});
        }
      }
    }
    if (any_pending) ++pending_workflows;
    if (workflow.status == "RUNNING" && context.MayRead(caller, workflow)) {
      running_workflows.push_back(&workflow);
    }
  }
  totals["gpu_capacity"] = capacity;
  totals["gpu_allocated"] = allocated;
  totals["gpu_free"] = std::max<int64_t>(0, capacity - allocated);
  totals["running_tasks"] = running;
  totals["pending_tasks"] = pending;
  totals["pending_workflows"] = pending_workflows;
  totals["pending_gpus"] = pending_gpus;
  totals["idle_allocated_gpus"] = idle_gpus;

  Json out = {{"at", state.at_ms}, {"leader", state.insight != nullptr}, {"totals", totals}};
  Json products = Json::array();
  for (const auto& [product, use] : by_product) {
    products.push_back({{"product", product},
                        {"nodes", use.nodes},
                        {"gpu_capacity", use.capacity},
                        {"gpu_allocated", use.allocated}});
  }
  out["by_product"] = std::move(products);
  Json pools = Json::array();
  for (const std::string& name : context.node_pool_names) {
    const Use& use = by_pool[name];
    pools.push_back({{"node_pool", name},
                     {"nodes", use.nodes},
                     {"gpu_capacity", use.capacity},
                     {"gpu_allocated", use.allocated},
                     {"pending_tasks", use.pending_tasks}});
  }
  out["by_node_pool"] = std::move(pools);
  Json queues = Json::array();
  for (const auto& [queue, counts] : pending_by_queue) {
    queues.push_back({{"queue", queue}, {"tasks", counts.first}, {"gpus", counts.second}});
  }
  out["pending_by_queue"] = std::move(queues);
  out["idle_allocated"] = std::move(idle);

  // Workflows that failed, newest first (a bounded look at the latest submissions).
  Json errors = Json::array();
  for (const auto& workflow : context.recent) {
    if (!StartsWith(workflow.status, "FAILED") || !context.MayRead(caller, workflow)) continue;
    std::string message;
    int64_t at = workflow.submitted_ms;
    for (const auto& task : workflow.tasks) {
      if (StartsWith(task.status, "FAILED") && message.empty()) {
        message = task.group + "/" + task.name + ": " + task.message;
      }
      at = std::max(at, task.finished_ms);
    }
    errors.push_back({{"id", workflow.id},
                      {"name", workflow.name},
                      {"pool", workflow.pool},
                      {"user", workflow.user},
                      {"status", workflow.status},
                      {"message", message},
                      {"at_ms", at}});
    if (errors.size() >= 10) break;
  }
  out["errors"] = std::move(errors);

  std::sort(running_workflows.begin(), running_workflows.end(), [](const auto* a, const auto* b) {
    return std::make_pair(StartedMs(*a), a->id) < std::make_pair(StartedMs(*b), b->id);
  });
  Json longest = Json::array();
  for (const store::WorkflowRecord* workflow : running_workflows) {
    if (longest.size() >= 10) break;
    int64_t gpus = 0;
    const size_t w = static_cast<size_t>(workflow - state.workflows.data());
    for (size_t t = 0; t < workflow->tasks.size(); ++t) {
      if (views::IsBoundTask(workflow->tasks[t].status)) {
        gpus += (*context.task_requests[w])[t][views::kGpu];
      }
    }
    longest.push_back({{"id", workflow->id},
                       {"name", workflow->name},
                       {"pool", workflow->pool},
                       {"user", workflow->user},
                       {"started_ms", StartedMs(*workflow)},
                       {"gpus", gpus}});
  }
  out["longest_running"] = std::move(longest);

  Json samples = Json::array();
  {
    std::lock_guard lock(mu_);
    for (const auto& sample : samples_) {
      samples.push_back({{"at", sample->at_ms},
                         {"gpu_capacity", sample->gpu_capacity},
                         {"gpu_allocated", sample->gpu_allocated},
                         {"pending_gpus", sample->pending_gpus}});
    }
  }
  out["history"] = {{"interval_ms", options_.history_interval_ms}, {"samples", std::move(samples)}};
  return out;
}

Result<Json> Views::Nodes(const Caller& caller, const NodePageRequest& request) {
  (void)caller;
  ASSIGN_OR_RETURN(auto selector, model::ParseLabelSelector(request.selector));
  if (request.limit < 1 || request.limit > 1000) {
    return InvalidArgumentError("limit " + std::to_string(request.limit) + ": expected 1 to 1000");
  }
  std::string after;
  if (!request.continue_token.empty()) {
    ASSIGN_OR_RETURN(after, views::DecodeContinue(request.continue_token));
  }
  ASSIGN_OR_RETURN(auto context_ptr, Current());
  const Context& context = *context_ptr;
  if (request.pool && context.configs().FindPool(*request.pool) == nullptr) {
    return NotFoundError("pool \"" + *request.pool + "\" does not exist");
  }
  if (request.node_pool && std::find(context.node_pool_names.begin(), context.node_pool_names.end(),
                                     *request.node_pool) == context.node_pool_names.end()) {
    return NotFoundError("node pool \"" + *request.node_pool + "\" does not exist");
  }
  // Nodes are sorted by name (Store::ListNodes): the page starts after the token's name.
  Json items = Json::array();
  int64_t total = 0;
  std::string last;
  bool more = false;
  for (const views::NodeInfo& info : context.nodes) {
    const model::Node& node = *info.node;
    if (!model::MatchesLabelSelector(selector, node.labels)) continue;
    if (request.node_pool && info.node_pool != *request.node_pool) continue;
    std::vector<std::string> pools, platforms;
    if (info.membership != nullptr) {
      for (const auto& member : info.membership->memberships) {
        if (pools.empty() || pools.back() != member.pool) pools.push_back(member.pool);
        platforms.push_back(member.pool + "/" + member.platform);
      }
    }
    if (request.pool && std::find(pools.begin(), pools.end(), *request.pool) == pools.end()) {
      continue;
    }
    ++total;
    if (!after.empty() && node.name <= after) continue;
    if (static_cast<int>(items.size()) >= request.limit) {
      more = true;
      continue;
    }
    Json resources = Json::array();
    for (int r = 0; r < model::kNumQuotaResources; ++r) {
      resources.push_back({{"name", model::kQuotaResourceNames[r]},
                           {"allocated", info.allocated[r]},
                           {"capacity", info.capacity[r]}});
    }
    Json taints = Json::array();
    for (const model::Taint& taint : node.taints) taints.push_back(TaintText(taint));
    items.push_back({{"name", node.name},
                     {"node_pool", info.node_pool},
                     {"pools", pools},
                     {"platforms", platforms},
                     {"gpu_product", info.gpu_product},
                     {"machine_pool", info.machine_pool},
                     {"ready", info.ready},
                     {"cordoned", node.unschedulable},
                     {"bound_tasks", info.bound_tasks},
                     {"resources", std::move(resources)},
                     {"taints", std::move(taints)},
                     {"labels", node.labels}});
    last = node.name;
  }
  Json out = {{"at", context.state->at_ms}, {"total", total}, {"items", std::move(items)}};
  out["continue"] = more ? Json(views::EncodeContinue(last)) : Json(nullptr);
  return out;
}

Result<Json> Views::MachinePools(const Caller& caller) {
  (void)caller;
  ASSIGN_OR_RETURN(auto context_ptr, Current());
  const Context& context = *context_ptr;
  std::map<std::string, std::pair<int, int>> counts;  // current, ready
  for (const views::NodeInfo& node : context.nodes) {
    if (node.machine_pool.empty()) continue;
    auto& count = counts[node.machine_pool];
    ++count.first;
    if (node.ready) ++count.second;
  }
  const auto& price_of = service_.machine_pool_support().hourly_price_micros;
  std::lock_guard lock(mu_);
  Json pools = Json::array();
  for (const model::MachinePool& pool : context.machine_pools) {
    auto [current, ready] = counts[pool.name];
    // Micro-dollars per node-hour; -1 when the catalog does not know the instance type.
    const int64_t price = price_of ? price_of(pool).value_or(-1) : -1;
    std::string last_event;
    for (auto it = events_.rbegin(); it != events_.rend(); ++it) {
      if (it->machine_pool == pool.name) {
        last_event = it->node + ": " + it->what;
        break;
      }
    }
    auto cost = cost_micros_.find(pool.name);
    // As `rosa list machinepools` users read it: all nodes up, some still starting, or none.
    std::string status = current == 0      ? "scaled to zero"
                         : ready < current ? "scaling (" + std::to_string(ready) + " of " +
                                                 std::to_string(current) + " ready)"
                                           : "ready";
    pools.push_back(
        {{"name", pool.name},
         {"description", pool.description},
         {"instance_type", pool.instance_type},
         {"capacity_type", model::CapacityTypeName(pool.capacity_type)},
         {"min", pool.min_replicas},
         {"max", pool.max_replicas},
         {"current", current},
         {"ready", ready},
         {"price_per_hour", price >= 0 ? Json(model::FormatPriceMicros(price)) : Json(nullptr)},
         {"cost_per_hour",
          price >= 0 ? Json(model::FormatPriceMicros(price * current)) : Json(nullptr)},
         {"cost_so_far", model::FormatPriceMicros(cost == cost_micros_.end() ? 0 : cost->second)},
         {"status", status},
         {"last_event", last_event}});
  }
  Json events = Json::array();
  for (auto it = events_.rbegin(); it != events_.rend(); ++it) {
    const bool interruption = it->what.find("interrupt") != std::string::npos ||
                              it->what.find("NoExecute") != std::string::npos;
    events.push_back({{"at", it->at_ms},
                      {"machine_pool", it->machine_pool},
                      {"node", it->node},
                      {"what", it->what},
                      {"kind", interruption ? "interruption" : "scale"}});
  }
  Json history = Json::array();
  for (const auto& sample : samples_) {
    Json replicas = Json::object();
    for (const auto& [name, n] : sample->replicas) replicas[name] = n;
    history.push_back({{"at", sample->at_ms}, {"replicas", std::move(replicas)}});
  }
  return Json{{"at", context.state->at_ms},      {"leader", context.state->insight != nullptr},
              {"cost_since_ms", cost_since_ms_}, {"pools", std::move(pools)},
              {"events", std::move(events)},     {"replicas_history", std::move(history)}};
}

}  // namespace gpupool::service
