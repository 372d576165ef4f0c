// The queue views: Run:ai's projects table per node pool (department -> project), who borrows and
// who is starved, and one queue's fair share explained level by level with the scheduler's own
// water-filling (scheduler/fair_share.h's trace).
#include <algorithm>
#include <cmath>
#include <map>

#include "scheduler/fair_share.h"
#include "service/views.h"
#include "service/views_internal.h"

namespace gpupool::service {

using Json = nlohmann::ordered_json;

namespace {

// The water-filling's unit per resource: 1 GPU, 1 millicore, 1 byte (scheduler.cc's kQuotaUnit).
constexpr std::array<int64_t, model::kNumQuotaResources> kUnit = {1000, 1, 1};

std::string Amount(int r, int64_t value) {
  if (value == model::kUnlimited) return "unlimited";
  if (r == views::kMemory) {
    const double gib = static_cast<double>(value) / (1024.0 * 1024 * 1024);
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f GiB", gib);
    return text;
  }
  const char* unit = r == views::kGpu ? " GPU" : " cores";
  std::string number = std::to_string(value / 1000);
  if (value % 1000 != 0) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.2f", static_cast<double>(value) / 1000);
    number = text;
  }
  return number + unit + (r == views::kGpu && value != 1000 ? "s" : "");
}

struct Row {
  const model::Queue* queue = nullptr;
  std::string node_pool;
  int depth = 0;
  const scheduler::ResourceShare* share = nullptr;  // null without the scheduler's insight
  int64_t pending_tasks = 0, pending = 0;
};

// Pending tasks and what they ask of resource `r`, per (queue, node pool) they may use.
std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> Pending(
    const Views::Context& context, int r) {
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> out;
  for (const auto& [key, pending] : context.pending) {
    out[key] = {pending.tasks, pending.requests[r]};
  }
  return out;
}

// Departments by name, each followed by its projects by name (and projects whose parent is
// unknown at the end, as departments).
std::vector<std::pair<const model::Queue*, int>> TreeOrder(
    const std::vector<model::Queue>& queues) {
  std::vector<std::pair<const model::Queue*, int>> out;
  auto known = [&](const std::string& name) {
    return std::any_of(queues.begin(), queues.end(), [&](const auto& q) { return q.name == name; });
  };
  for (const model::Queue& top : queues) {
    if (!top.parent.empty() && known(top.parent)) continue;
    out.emplace_back(&top, 0);
    for (const model::Queue& child : queues) {
      if (child.parent == top.name) out.emplace_back(&child, 1);
    }
  }
  return out;
}

const scheduler::QueueShare* FindShare(const SchedulerInsight* insight, std::string_view queue,
                                       std::string_view node_pool) {
  if (insight == nullptr) return nullptr;
  for (const auto& share : insight->shares) {
    if (share.queue == queue && share.node_pool == node_pool) return &share;
  }
  return nullptr;
}

Json RowJson(const Row& row, int r) {
  const model::ResourceQuota& quota = row.queue->QuotaIn(row.node_pool).resources[r];
  Json out = {{"queue", row.queue->name},
              {"parent", row.queue->parent},
              {"depth", row.depth},
              {"node_pool", row.node_pool},
              {"priority", row.queue->priority}};
  if (row.share != nullptr) {
    const scheduler::ResourceShare& s = *row.share;
    out["deserved"] = s.deserved;
    out["limit"] = s.limit;
    out["weight"] = s.over_quota_weight;
    out["fair_share"] = s.fair_share;
    out["allocated"] = s.allocated;
    out["demand"] = s.demand;
    out["ratio"] = s.deserved > 0
                       ? Json(static_cast<double>(s.allocated) / static_cast<double>(s.deserved))
                       : Json(nullptr);
    out["borrowing"] = s.deserved != model::kUnlimited && s.allocated > s.deserved;
    out["starved"] = row.pending_tasks > 0 && s.allocated < s.fair_share;
  } else {
    out["deserved"] = quota.deserved_milli;
    out["limit"] = quota.limit_milli;
    out["weight"] = quota.over_quota_weight;
    for (const char* key : {"fair_share", "allocated", "demand", "ratio"}) out[key] = nullptr;
    out["borrowing"] = false;
    out["starved"] = false;
  }
  out["pending_tasks"] = row.pending_tasks;
  out["pending"] = row.pending;
  return out;
}

}  // namespace

Result<Json> Views::Queues(const Caller& caller, std::string_view resource) {
  (void)caller;
  ASSIGN_OR_RETURN(const int r, views::ResourceIndex(resource));
  ASSIGN_OR_RETURN(auto context_ptr, Current());
  const Context& context = *context_ptr;
  const SchedulerInsight* insight = context.insight();
  auto pending = Pending(context, r);
  Json pools = Json::array();
  Json rows = Json::array();
  for (const std::string& pool : context.node_pool_names) {
    Json capacity = nullptr;
    if (insight != nullptr) {
      for (const auto& c : insight->node_pools) {
        if (c.node_pool == pool) capacity = c.capacity[r];
      }
    }
    pools.push_back({{"name", pool}, {"capacity", capacity}});
    for (const auto& [queue, depth] : TreeOrder(context.queues)) {
      Row row{queue, pool, depth, nullptr};
      if (const scheduler::QueueShare* share = FindShare(insight, queue->name, pool)) {
        row.share = &share->resources[r];
      } else if (!queue->resources.contains(pool)) {
        continue;  // nothing to show for this queue here
      }
      // Else a queue configured since the loop's last cycle: its quota as written, no shares yet.
      auto p = pending.find({queue->name, pool});
      if (p != pending.end()) std::tie(row.pending_tasks, row.pending) = p->second;
      rows.push_back(RowJson(row, r));
    }
  }
  return Json{{"at", context.state->at_ms},
              {"leader", insight != nullptr},
              {"resource", resource},
              {"node_pools", std::move(pools)},
              {"rows", std::move(rows)}};
}

namespace {

struct Member {
  std::string name;
  scheduler::SiblingInput input;
  bool on_path = false;
};

// One level of the water-filling: the members' inputs, the traced division and its words.
Json ExplainLevel(const std::string& title, int64_t capacity, const std::vector<Member>& members,
                  int r, std::vector<int64_t>& shares) {
  std::vector<scheduler::SiblingInput> inputs;
  for (const Member& m : members) inputs.push_back(m.input);
  scheduler::FairShareTrace trace;
  shares = scheduler::DivideAmongSiblings(capacity, inputs, kUnit[r], &trace);
  Json text = Json::array();
  int asking = 0;
  for (const Member& m : members) asking += m.input.demand > 0 ? 1 : 0;
  text.push_back(title + " has " + Amount(r, capacity) + " to share; " + std::to_string(asking) +
                 " of its " + std::to_string(members.size()) + " queue(s) ask for any.");
  // Queues that ask for nothing get nothing at any step: only the others are named.
  std::string pass =
      "Deserved pass: each queue gets its deserved quota, up to what it asks (its demand, capped "
      "by its limit): ";
  bool first_asking = true;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].input.demand <= 0) continue;
    pass += (first_asking ? "" : "; ") + members[i].name + " " + Amount(r, trace.deserved_pass[i]) +
            " (deserves " + Amount(r, members[i].input.deserved) + ", asks " +
            Amount(r, trace.requestable[i]) + ")";
    first_asking = false;
  }
  text.push_back(first_asking ? std::string("Nobody asks for any: every fair share is 0.")
                              : pass + ".");
  if (trace.left_after_deserved <= 0) {
    text.push_back("Nothing is left for over-quota shares (the deserved quotas given take " +
                   Amount(r, capacity - trace.left_after_deserved) + ").");
  } else {
    text.push_back(Amount(r, trace.left_after_deserved) + " left for over-quota shares.");
  }
  for (size_t k = 0; k < trace.rounds.size(); ++k) {
    const auto& round = trace.rounds[k];
    std::string line = "Over-quota round " + std::to_string(k + 1) + " (priority " +
                       std::to_string(round.priority) + "): " + Amount(r, round.available) +
                       " shared by weight (total " + std::to_string(round.weight_sum) + "): ";
    bool first = true;
    for (size_t i = 0; i < members.size(); ++i) {
      if (round.given[i] == 0) continue;
      line += (first ? "" : "; ") + members[i].name + " (weight " +
              std::to_string(members[i].input.over_quota_weight) + ") +" +
              Amount(r, round.given[i]);
      first = false;
    }
    text.push_back(line + (first ? "nobody could take a whole unit." : "."));
  }
  std::string leftover;
  for (size_t i = 0; i < members.size(); ++i) {
    if (trace.leftover[i] == 0) continue;
    leftover +=
        (leftover.empty() ? "" : "; ") + members[i].name + " +" + Amount(r, trace.leftover[i]);
  }
  if (!leftover.empty()) {
    text.push_back("Leftover units to the largest remainders of the weighted split: " + leftover +
                   ".");
  }
  if (trace.unused > 0) {
    text.push_back(Amount(r, trace.unused) + " stay unused: no queue asks for more.");
  }
  Json rows = Json::array();
  for (size_t i = 0; i < members.size(); ++i) {
    int64_t over = trace.leftover[i];
    for (const auto& round : trace.rounds) over += round.given[i];
    rows.push_back({{"name", members[i].name},
                    {"priority", members[i].input.priority},
                    {"deserved", members[i].input.deserved},
                    {"limit", members[i].input.limit},
                    {"weight", members[i].input.over_quota_weight},
                    {"demand", members[i].input.demand},
                    {"deserved_pass", trace.deserved_pass[i]},
                    {"over_quota", over},
                    {"fair_share", shares[i]},
                    {"on_path", members[i].on_path}});
  }
  return {{"title", title},
          {"capacity", capacity},
          {"text", std::move(text)},
          {"members", std::move(rows)}};
}

// The inputs of the siblings under `parent` ("" = top level) in `node_pool`, with subtree demand,
// and the parent's own pods as one more sibling when it has any (as ComputeFairShares does).
std::vector<Member> Siblings(const Views::Context& context, const std::string& parent,
                             const std::string& node_pool, int r, const std::string& on_path) {
  const SchedulerInsight& insight = *context.insight();
  auto own = [&](const std::string& queue) -> int64_t {
    const scheduler::QueueShare* share = FindShare(&insight, queue, node_pool);
    return share ? share->resources[r].demand : 0;
  };
  auto is_top = [&](const model::Queue& q) {
    return q.parent.empty() ||
           std::none_of(context.queues.begin(), context.queues.end(),
                        [&](const model::Queue& p) { return p.name == q.parent; });
  };
  std::vector<Member> members;
  for (const model::Queue& q : context.queues) {
    if (parent.empty() ? !is_top(q) : q.parent != parent) continue;
    Member m;
    m.name = q.name;
    m.on_path = q.name == on_path;
    m.input.priority = q.priority;
    int64_t demand = own(q.name);
    for (const model::Queue& child : context.queues) {
      if (child.parent == q.name) demand += own(child.name);
    }
    m.input.demand = demand;
    if (const scheduler::QueueShare* share = FindShare(&insight, q.name, node_pool)) {
      m.input.deserved = share->resources[r].deserved;
      m.input.limit = share->resources[r].limit;
      m.input.over_quota_weight = share->resources[r].over_quota_weight;
    } else {
      const model::ResourceQuota& quota = q.QuotaIn(node_pool).resources[r];
      m.input.deserved = quota.deserved_milli;
      m.input.limit = quota.limit_milli;
      m.input.over_quota_weight = quota.over_quota_weight;
    }
    members.push_back(std::move(m));
  }
  if (!parent.empty() && own(parent) > 0) {
    Member m;
    m.name = parent + " (its own pods)";
    m.input = {0, 0, scheduler::kUnlimitedAmount, 1, own(parent)};
    for (const model::Queue& q : context.queues) {
      if (q.name == parent) m.input.priority = q.priority;
    }
    members.push_back(std::move(m));
  }
  return members;
}

// The node pools `queue` has numbers in (the scheduler's shares, else its configured quota);
// the default node pool when it has none.
std::vector<std::string> NodePoolsWithNumbers(const Views::Context& context,
                                              const model::Queue& queue) {
  const SchedulerInsight* insight = context.insight();
  std::vector<std::string> pools;
  for (const std::string& pool : context.node_pool_names) {
    if (FindShare(insight, queue.name, pool) != nullptr ||
        (insight == nullptr && queue.resources.contains(pool))) {
      pools.push_back(pool);
    }
  }
  if (pools.empty()) pools.emplace_back(model::kDefaultNodePool);
  return pools;
}

// How the scheduler's water-filling reached `queue`'s fair share in `pool`, level by level from
// the node pool down (department, then project), and whether it matches `scheduler_fair_share`
// (the last cycle's; the queues may have changed since).
Json Explanation(const Views::Context& context, const model::Queue& queue, const std::string& pool,
                 int r, int64_t scheduler_fair_share) {
  int64_t capacity = 0;
  for (const auto& c : context.insight()->node_pools) {
    if (c.node_pool == pool) capacity = c.capacity[r];
  }
  // Root to the queue: the department, then the project.
  std::vector<std::string> path = {queue.name};
  if (!queue.parent.empty() &&
      std::any_of(context.queues.begin(), context.queues.end(),
                  [&](const model::Queue& q) { return q.name == queue.parent; })) {
    path.insert(path.begin(), queue.parent);
  }
  Json levels = Json::array();
  std::string parent;
  int64_t result = 0;
  for (const std::string& step : path) {
    std::vector<Member> members = Siblings(context, parent, pool, r, step);
    std::vector<int64_t> shares;
    const std::string title =
        parent.empty() ? "Node pool " + pool : "Department " + parent + "'s fair share";
    levels.push_back(ExplainLevel(title, capacity, members, r, shares));
    for (size_t i = 0; i < members.size(); ++i) {
      if (members[i].name == step) capacity = result = shares[i];
    }
    parent = step;
  }
  const bool matches = result == scheduler_fair_share;
  return {{"levels", std::move(levels)},
          {"fair_share", result},
          {"matches_scheduler", matches},
          {"summary",
           "Fair share of " + queue.name + " in node pool " + pool + ": " + Amount(r, result) +
               (matches ? " (as the scheduler's last cycle computed)."
                        : " (the scheduler's last cycle computed " +
                              Amount(r, scheduler_fair_share) + "; the queues changed since).")}};
}

}  // namespace

Json Views::QueueHistory(const std::string& queue, const std::string& node_pool, int r) {
  Json history = Json::array();
  std::lock_guard lock(mu_);
  for (const auto& sample : samples_) {
    for (const auto& q : sample->queues) {
      if (q.queue != queue || q.node_pool != node_pool) continue;
      history.push_back({{"at", sample->at_ms},
                         {"allocated", q.allocated[r]},
                         {"deserved", q.deserved[r]},
                         {"fair_share", q.fair_share[r]}});
    }
  }
  return history;
}

Result<Json> Views::Queue(const Caller& caller, std::string_view name, std::string_view node_pool,
                          std::string_view resource) {
  (void)caller;
  ASSIGN_OR_RETURN(const int r, views::ResourceIndex(resource));
  ASSIGN_OR_RETURN(auto context_ptr, Current());
  const Context& context = *context_ptr;
  const SchedulerInsight* insight = context.insight();
  auto queue = std::find_if(context.queues.begin(), context.queues.end(),
                            [&](const model::Queue& q) { return q.name == name; });
  if (queue == context.queues.end()) {
    return NotFoundError("queue \"" + std::string(name) + "\" does not exist");
  }
  // The node pools the queue has numbers in; the requested one must be among them.
  std::vector<std::string> pools = NodePoolsWithNumbers(context, *queue);
  std::string pool = node_pool.empty() ? pools.front() : std::string(node_pool);
  if (std::find(context.node_pool_names.begin(), context.node_pool_names.end(), pool) ==
      context.node_pool_names.end()) {
    return NotFoundError("node pool \"" + pool + "\" does not exist");
  }
  Row row{&*queue, pool, queue->parent.empty() ? 0 : 1, nullptr};
  if (const scheduler::QueueShare* share = FindShare(insight, queue->name, pool)) {
    row.share = &share->resources[r];
  }
  const auto pending = Pending(context, r);
  Json out = {{"at", context.state->at_ms}, {"leader", insight != nullptr}, {"queue", queue->name},
              {"node_pool", pool},          {"resource", resource},         {"node_pools", pools}};
  if (auto it = pending.find({queue->name, pool}); it != pending.end()) {
    std::tie(row.pending_tasks, row.pending) = it->second;
  }
  out["row"] = RowJson(row, r);
  out["history"] = QueueHistory(queue->name, pool, r);

  if (insight == nullptr || row.share == nullptr) {
    out["explanation"] = nullptr;
    out["explanation_missing"] =
        insight == nullptr ? "Fair shares are computed by the server running the scheduling loop."
                           : "The scheduler has no share for this queue in this node pool.";
    return out;
  }
  out["explanation"] = Explanation(context, *queue, pool, r, row.share->fair_share);
  return out;
}

}  // namespace gpupool::service
