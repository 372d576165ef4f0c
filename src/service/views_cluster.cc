// The cluster-wide views: overview, nodes, machine pools.
#include <algorithm>
#include <map>

#include "common/strings.h"
#include "model/label_selector.h"
#include "model/task_state.h"
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

namespace {

// The caller-independent numbers: totals, and GPUs by product, by node pool and pending by queue.
void AddClusterNumbers(const Views::Context& context, Json& out) {
  const views::OverviewNumbers& o = context.overview;
  out["totals"] = {{"nodes", context.nodes.size()},
                   {"gpu_capacity", o.gpu_capacity},
                   {"gpu_allocated", o.gpu_allocated},
                   {"gpu_free", std::max<int64_t>(0, o.gpu_capacity - o.gpu_allocated)},
                   {"running_tasks", o.running_tasks},
                   {"pending_tasks", o.pending_tasks},
                   {"pending_workflows", o.pending_workflows},
                   {"pending_gpus", o.pending_gpus},
                   {"idle_allocated_gpus", o.idle_allocated_gpus}};
  Json products = Json::array();
  for (const auto& [product, use] : o.by_product) {
    products.push_back({{"product", product},
                        {"nodes", use.nodes},
                        {"gpu_capacity", use.capacity},
                        {"gpu_allocated", use.allocated}});
  }
  out["by_product"] = std::move(products);
  Json pools = Json::array();
  for (const std::string& name : context.node_pool_names) {
    const views::OverviewNumbers::Use& use = o.by_node_pool.at(name);
    pools.push_back({{"node_pool", name},
                     {"nodes", use.nodes},
                     {"gpu_capacity", use.capacity},
                     {"gpu_allocated", use.allocated},
                     {"pending_tasks", use.pending_tasks}});
  }
  out["by_node_pool"] = std::move(pools);
  Json queues = Json::array();
  for (const auto& [queue, counts] : o.pending_by_queue) {
    queues.push_back({{"queue", queue}, {"tasks", counts.first}, {"gpus", counts.second}});
  }
  out["pending_by_queue"] = std::move(queues);
}

// GPUs allocated to tasks that do not run yet, of workflows the caller may see (20 at most).
Json IdleAllocated(const Views::Context& context, views::ReadAccess& may_read) {
  Json idle = Json::array();
  for (const auto& [w, t] : context.overview.idle) {
    if (idle.size() >= 20) break;
    const store::WorkflowRecord& workflow = context.state->workflows[w];
    if (!may_read(workflow)) continue;
    const store::TaskRecord& task = workflow.tasks[t];
    idle.push_back({{"workflow", workflow.id},
                    {"task", task.group + "/" + task.name},
                    {"node", task.node},
                    {"gpus", (*context.task_requests[w])[t][views::kGpu]},
                    {"since_ms", task.status_changed_ms}});
  }
  return idle;
}

// Workflows that failed, newest first (10 at most, of a bounded look at the latest finished ones).
Json RecentFailures(const Views::Context& context, views::ReadAccess& may_read) {
  Json errors = Json::array();
  for (const auto& workflow : context.recent) {
    if (!model::IsFailureText(workflow.status) || !may_read(workflow)) continue;
    std::string message;
    int64_t at = workflow.submitted_ms;
    for (const auto& task : workflow.tasks) {
      if (model::IsFailureText(task.status) && message.empty()) {
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
  return errors;
}

// The running workflows the caller may see that started first (10 at most), with their GPUs.
Json LongestRunning(const Views::Context& context, views::ReadAccess& may_read) {
  Json longest = Json::array();
  for (size_t w : context.overview.longest_running) {
    if (longest.size() >= 10) break;
    const store::WorkflowRecord& workflow = context.state->workflows[w];
    if (!may_read(workflow)) continue;
    int64_t gpus = 0;
    for (size_t t = 0; t < workflow.tasks.size(); ++t) {
      if (views::IsBoundTask(workflow.tasks[t].status)) {
        gpus += (*context.task_requests[w])[t][views::kGpu];
      }
    }
    longest.push_back({{"id", workflow.id},
                       {"name", workflow.name},
                       {"pool", workflow.pool},
                       {"user", workflow.user},
                       {"started_ms", StartedMs(workflow)},
                       {"gpus", gpus}});
  }
  return longest;
}

}  // namespace

Result<Json> Views::Overview(const Caller& caller) {
  ASSIGN_OR_RETURN(auto context_ptr, Current());
  const Context& context = *context_ptr;
  const LiveState& state = *context.state;
  views::ReadAccess may_read(context, caller);

  Json out = {{"at", state.at_ms}, {"leader", state.insight != nullptr}};
  AddClusterNumbers(context, out);
  out["idle_allocated"] = IdleAllocated(context, may_read);
  out["errors"] = RecentFailures(context, may_read);
  out["longest_running"] = LongestRunning(context, may_read);

  out["history"] = GpuHistory();
  return out;
}

Json Views::GpuHistory() {
  Json samples = Json::array();
  std::lock_guard lock(mu_);
  for (const auto& sample : samples_) {
    samples.push_back({{"at", sample->at_ms},
                       {"gpu_capacity", sample->gpu_capacity},
                       {"gpu_allocated", sample->gpu_allocated},
                       {"pending_gpus", sample->pending_gpus}});
  }
  return {{"interval_ms", options_.history_interval_ms}, {"samples", std::move(samples)}};
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
    if (request.node_pool && info.node_pool != *request.node_pool) continue;
    if (request.pool &&
        std::find(info.pools.begin(), info.pools.end(), *request.pool) == info.pools.end()) {
      continue;
    }
    if (!model::MatchesLabelSelector(selector, node.labels)) continue;
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
                     {"pools", info.pools},
                     {"platforms", info.platforms},
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
