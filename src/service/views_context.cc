// The views' shared machinery: the context they read (rebuilt when the state, the configs or the
// nodes change), what the scheduling loop publishes, the allocation history and the machine-pool
// cost and events.
#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "config/access.h"
#include "config/membership.h"
#include "model/k8s.h"
#include "service/views.h"
#include "service/views_internal.h"

namespace gpupool::service {
namespace views {

Result<int> ResourceIndex(std::string_view name) {
  for (int r = 0; r < model::kNumQuotaResources; ++r) {
    if (model::kQuotaResourceNames[r] == name) return r;
  }
  return InvalidArgumentError("resource \"" + std::string(name) +
                              "\": expected gpu, cpu or memory");
}

namespace {
const Json* Label(const Json& pod, const char* key) {
  if (!pod.is_object()) return nullptr;
  auto metadata = pod.find("metadata");
  if (metadata == pod.end() || !metadata->is_object()) return nullptr;
  auto labels = metadata->find("labels");
  if (labels == metadata->end() || !labels->is_object()) return nullptr;
  auto value = labels->find(key);
  return value == labels->end() || !value->is_string() ? nullptr : &*value;
}
}  // namespace

std::string WorkflowQueue(const store::WorkflowRecord& workflow) {
  for (const auto& task : workflow.tasks) {
    if (const Json* queue = Label(task.pod, scheduler::kQueueLabel))
      return queue->get<std::string>();
  }
  return workflow.pool;
}

std::string WorkflowPriority(const store::WorkflowRecord& workflow) {
  const Json& spec = workflow.spec;
  if (spec.is_object()) {
    auto it = spec.find("priority");
    if (it != spec.end() && it->is_string()) return it->get<std::string>();
    auto inner = spec.find("workflow");
    if (inner != spec.end() && inner->is_object()) {
      auto p = inner->find("priority");
      if (p != inner->end() && p->is_string()) return p->get<std::string>();
    }
  }
  return "NORMAL";
}

std::string NodePoolOf(const model::Node& node, const std::vector<model::NodePool>& sorted_pools) {
  for (const model::NodePool& pool : sorted_pools) {
    auto it = node.labels.find(pool.label_key);
    if (it != node.labels.end() && it->second == pool.label_value) return pool.name;
  }
  return std::string(model::kDefaultNodePool);
}

}  // namespace views

using views::Amounts;
using Json = nlohmann::ordered_json;

namespace {

// At most this many history samples are kept, whatever the interval (24 h at 30 s).
constexpr size_t kMaxSamples = 2880;

Amounts RequestsOf(const store::TaskRecord& task) {
  Amounts out{};
  auto requests = model::PodRequestsFromJson(task.pod);
  if (!requests.ok()) return out;
  for (int r = 0; r < model::kNumQuotaResources; ++r) {
    auto it = requests->find(std::string(model::kQuotaResourceK8sNames[r]));
    if (it == requests->end()) continue;
    out[r] = r == views::kMemory ? it->second.Value() : it->second.MilliValue();
  }
  return out;
}

Amounts AllocatableOf(const model::Node& node) {
  Amounts out{};
  for (int r = 0; r < model::kNumQuotaResources; ++r) {
    auto it = node.allocatable.find(std::string(model::kQuotaResourceK8sNames[r]));
    if (it == node.allocatable.end()) continue;
    out[r] = r == views::kMemory ? it->second.Value() : it->second.MilliValue();
  }
  return out;
}

std::string LabelOf(const model::Node& node, const char* key) {
  auto it = node.labels.find(key);
  return it == node.labels.end() ? "" : it->second;
}

}  // namespace

std::string PositionKey(std::string_view workflow_id, size_t index) {
  return std::string(workflow_id) + "." + std::to_string(index);
}

namespace {

// GPUs of each pool's nodes per node pool: pool -> node pool -> GPUs.
std::map<std::string, std::map<std::string, int64_t>> PoolGpusByNodePool(
    const config::ConfigSet& configs, const std::vector<model::Node>& nodes,
    const std::vector<model::NodePool>& node_pools) {
  std::map<std::string, std::map<std::string, int64_t>> out;
  auto membership = config::ComputeMembership(configs, nodes);
  if (!membership.ok()) return out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto gpu = nodes[i].allocatable.find("nvidia.com/gpu");
    int64_t gpus = gpu == nodes[i].allocatable.end() ? 0 : gpu->second.Value();
    if (gpus <= 0) continue;
    std::string node_pool(model::NodePoolOf(nodes[i], node_pools));
    std::set<std::string> pools;
    for (const config::PoolPlatform& m : (*membership)[i].memberships) pools.insert(m.pool);
    for (const std::string& pool : pools) out[pool][node_pool] += gpus;
  }
  return out;
}

// `total` whole GPUs in proportion to `weights` (largest remainder; ties by key order).
std::map<std::string, int64_t> SpreadGuarantee(int64_t total,
                                               const std::map<std::string, int64_t>& weights) {
  int64_t sum = 0;
  for (const auto& [name, w] : weights) sum += w;
  std::map<std::string, int64_t> out;
  std::vector<std::pair<int64_t, std::string>> remainders;
  int64_t given = 0;
  for (const auto& [name, w] : weights) {
    out[name] = total * w / sum;
    given += out[name];
    remainders.emplace_back(-(total * w % sum), name);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; given < total && i < remainders.size(); ++i, ++given) {
    ++out[remainders[i].second];
  }
  return out;
}

}  // namespace

void AddImplicitPoolQueues(const config::ConfigSet& configs, const std::vector<model::Node>& nodes,
                           const std::vector<model::NodePool>& node_pools,
                           std::vector<model::Queue>& queues) {
  std::map<std::string, std::map<std::string, int64_t>> gpus_by_node_pool;
  if (!node_pools.empty()) gpus_by_node_pool = PoolGpusByNodePool(configs, nodes, node_pools);
  for (const auto& [pool_name, pool] : configs.pools) {
    const std::string& name = pool_name;  // clang 14 cannot capture a structured binding
    bool configured = std::any_of(queues.begin(), queues.end(),
                                  [&](const model::Queue& q) { return q.name == name; });
    if (configured) continue;
    model::Queue queue;
    queue.name = name;
    queue.description = "implicit queue of pool " + name;
    config::GpuResource limits = pool.gpu.value_or(config::GpuResource{});
    std::map<std::string, int64_t> weights = {{std::string(model::kDefaultNodePool), 1}};
    if (auto it = gpus_by_node_pool.find(name); it != gpus_by_node_pool.end()) {
      weights = it->second;
    }
    std::map<std::string, int64_t> deserved;
    if (limits.guarantee >= 0) deserved = SpreadGuarantee(limits.guarantee, weights);
    for (const auto& [node_pool, weight] : weights) {
      model::ResourceQuota& gpu = queue.resources[node_pool][model::QuotaResource::kGpu];
      gpu.deserved_milli = limits.guarantee >= 0 ? deserved[node_pool] * 1000 : model::kUnlimited;
      gpu.limit_milli = limits.maximum >= 0 ? limits.maximum * 1000 : model::kUnlimited;
      gpu.over_quota_weight = limits.weight;
    }
    queues.push_back(std::move(queue));
  }
}

std::unordered_map<std::string, QueuePosition> RankPendingPods(
    const std::vector<model::PodScheduling>& pods, const std::set<std::string>& pending) {
  // A job: one pod, or the pending pods of one gang in one queue.
  struct Job {
    std::string queue;
    int32_t priority = 0;
    std::pair<int64_t, size_t> age;  // (creation time or max, first snapshot index)
    std::vector<std::string> pods;
  };
  std::vector<Job> jobs;
  std::map<std::pair<std::string, std::string>, size_t> gang_jobs;  // (queue, gang) -> job
  for (size_t i = 0; i < pods.size(); ++i) {
    const model::PodScheduling& pod = pods[i];
    std::string key = scheduler::PodKey(pod);
    if (!pending.contains(key)) continue;
    auto queue_label = pod.labels.find(scheduler::kQueueLabel);
    std::string queue =
        queue_label == pod.labels.end() ? scheduler::kDefaultQueue : queue_label->second;
    auto pod_priority = scheduler::PodPriority(pod);
    int32_t priority = pod_priority.ok() ? *pod_priority : 0;
    std::optional<int64_t> created = scheduler::ParseTimestampMillis(pod.creation_timestamp);
    std::pair<int64_t, size_t> age = {created.value_or(std::numeric_limits<int64_t>::max()), i};
    auto gang = pod.labels.find(scheduler::kGangLabel);
    Job* job = nullptr;
    if (gang != pod.labels.end() && !gang->second.empty()) {
      auto [it, inserted] = gang_jobs.try_emplace({queue, gang->second}, jobs.size());
      if (inserted) jobs.push_back({queue, priority, age, {}});
      job = &jobs[it->second];
    } else {
      jobs.push_back({queue, priority, age, {}});
      job = &jobs.back();
    }
    job->priority = std::max(job->priority, priority);
    job->age = std::min(job->age, age);
    job->pods.push_back(std::move(key));
  }
  std::map<std::string, std::vector<const Job*>> by_queue;
  for (const Job& job : jobs) by_queue[job.queue].push_back(&job);
  std::unordered_map<std::string, QueuePosition> out;
  for (auto& [queue, queue_jobs] : by_queue) {
    std::stable_sort(queue_jobs.begin(), queue_jobs.end(), [](const Job* a, const Job* b) {
      if (a->priority != b->priority) return a->priority > b->priority;
      return a->age < b->age;
    });
    for (size_t i = 0; i < queue_jobs.size(); ++i) {
      for (const std::string& pod : queue_jobs[i]->pods) {
        out[pod] = {queue, static_cast<int>(i) + 1, static_cast<int>(queue_jobs.size())};
      }
    }
  }
  return out;
}

bool Views::Context::MayRead(const Caller& caller, const store::WorkflowRecord& workflow) const {
  if (workflow.user == caller.user) return true;
  config::AccessRequest request{"GET", "/api/workflow/" + workflow.id, workflow.pool};
  return config::CheckAccess(caller.roles, request, configs()).ok();
}

Views::Views(Service& service, store::Store& store, const Clock& clock, ViewOptions options)
    : service_(service), store_(store), clock_(clock), options_(options) {
  if (options_.background_refresh) {
    // The first context is built now, at start-up, rather than inside the first request.
    refresh_requested_ = true;
    refresher_ = std::thread([this] { RefreshLoop(); });
  }
}

Views::~Views() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  refresh_wanted_.notify_all();
  built_.notify_all();
  if (refresher_.joinable()) refresher_.join();
}

Result<std::shared_ptr<const LiveState>> Views::State() {
  const int64_t now = clock_.NowMillis();
  {
    std::lock_guard lock(mu_);
    // The loop's last step, unless it stopped publishing (it lost its lease) a while ago.
    const int64_t max_age =
        std::max<int64_t>(options_.state_max_age_ms, options_.leader_max_age_ms);
    if (published_ != nullptr && now - published_->at_ms <= max_age) return published_;
    if (read_ != nullptr && now - read_->at_ms <= options_.state_max_age_ms) return read_;
  }
  store::WorkflowFilter filter;
  filter.unfinished_only = true;
  filter.limit = 0;
  ASSIGN_OR_RETURN(auto workflows, store_.ListWorkflows(filter));
  auto state = std::make_shared<LiveState>();
  state->at_ms = now;
  state->workflows = std::move(workflows);
  std::lock_guard lock(mu_);
  read_ = state;
  return std::shared_ptr<const LiveState>(state);
}

// Stale while revalidating: a request never waits for a store read or a rebuild once a context
// exists. When the context is older than state_max_age_ms, or the configs or nodes changed, or the
// loop published a newer state, the refresher thread builds the next one while requests keep the
// last. Before the first context exists, requests wait for the refresher to build it (one build,
// however many requests arrive at start-up).
Result<std::shared_ptr<const Views::Context>> Views::Current() {
  ASSIGN_OR_RETURN(Service::CachedInputs inputs, service_.Inputs());
  {
    std::unique_lock lock(mu_);
    last_read_ms_ = clock_.NowMillis();
    if (context_ != nullptr) {
      const bool current =
          context_->inputs.owner == inputs.owner && context_->inputs.nodes == inputs.nodes &&
          (published_ == nullptr
               ? clock_.NowMillis() - context_->state->at_ms <= options_.state_max_age_ms
               : context_->state == published_);
      if (current) return context_;
      if (options_.background_refresh) {
        RequestRefreshLocked();
        // Only the nodes or the loop's state moved on: the last context serves meanwhile. When
        // the configs changed, wait for a build that read them (one under way may have read the
        // older configs, hence up to two), so that `config update` then `queue list` shows the
        // update; other writes meanwhile do not make it wait longer.
        for (int i = 0; i < 2 && context_->inputs.owner != inputs.owner && !stopping_; ++i) {
          const uint64_t seen = builds_;
          RequestRefreshLocked();
          built_.wait(lock, [&] { return stopping_ || builds_ != seen; });
        }
        // The first read after a quiet spell: the states published meanwhile were not built
        // (BuildWantedLocked). Wait for the newest one (a build under way may be of an older).
        const std::shared_ptr<const LiveState> wanted = skipped_ ? published_ : nullptr;
        for (int i = 0; i < 2 && wanted != nullptr && !stopping_ && context_->state != wanted &&
                        context_->state->at_ms <= wanted->at_ms;
             ++i) {
          const uint64_t seen = builds_;
          RequestRefreshLocked();
          built_.wait(lock, [&] { return stopping_ || builds_ != seen; });
        }
        return context_;
      }
    } else if (options_.background_refresh) {
      RequestRefreshLocked();
      const uint64_t seen = builds_;
      built_.wait(lock, [&] { return stopping_ || builds_ != seen; });
      if (context_ != nullptr) return context_;
      if (stopping_) return UnavailableError("the views are stopping");
      return build_error_;
    }
  }
  return Build();
}

void Views::RequestRefreshLocked() {
  if (refresh_requested_) return;
  refresh_requested_ = true;
  refresh_wanted_.notify_one();
}

void Views::RefreshLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    refresh_wanted_.wait(lock, [this] { return stopping_ || refresh_requested_; });
    if (stopping_) return;
    refresh_requested_ = false;
    lock.unlock();
    auto built = Build();  // a failed read is retried at the next request
    if (built.ok()) Account(**built);
    lock.lock();
    ++builds_;
    build_error_ = built.ok() ? OkStatus() : built.status();
    built_.notify_all();
  }
}

namespace {

// The NODE_POOL (sorted by name, with the node pool names "default" first), MACHINE_POOL and
// QUEUE configs that decode; the views show what they can of the rest.
void ReadPoolAndQueueConfigs(const Service::CachedInputs& inputs, Views::Context& context) {
  for (const auto& [key, body] : *inputs.other) {
    if (key.first == "NODE_POOL") {
      auto pool = model::NodePoolFromJson(body, key.second);
      if (pool.ok()) context.node_pools.push_back(std::move(*pool));
    } else if (key.first == "MACHINE_POOL") {
      auto pool = model::MachinePoolFromJson(body, key.second);
      if (pool.ok()) context.machine_pools.push_back(std::move(*pool));
    } else if (key.first == "QUEUE") {
      auto queue = model::QueueFromJson(body, key.second);
      if (queue.ok()) context.queues.push_back(std::move(*queue));
    }
  }
  std::sort(context.node_pools.begin(), context.node_pools.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  context.node_pool_names.emplace_back(model::kDefaultNodePool);
  for (const auto& pool : context.node_pools) context.node_pool_names.push_back(pool.name);
}

// The queues as the last cycle saw them (with the implicit pool queues it derived), and any
// configured since, as written (the views show them without shares until the next cycle);
// without a cycle, the configured ones and the pools' implicit ones. Sorted by name.
void SettleQueues(const LiveState& state, const Service::CachedInputs& inputs,
                  Views::Context& context) {
  if (state.insight != nullptr) {
    std::vector<model::Queue> configured = std::move(context.queues);
    context.queues = state.insight->queues;
    for (model::Queue& queue : configured) {
      const bool seen = std::any_of(context.queues.begin(), context.queues.end(),
                                    [&](const model::Queue& q) { return q.name == queue.name; });
      if (!seen) context.queues.push_back(std::move(queue));
    }
  } else {
    AddImplicitPoolQueues(*inputs.configs, *inputs.nodes, context.node_pools, context.queues);
  }
  std::sort(context.queues.begin(), context.queues.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
}

// One NodeInfo per node of the inputs (its node pool, membership, capacity, labels the views
// show, readiness), and the index by name.
void DescribeNodes(const std::vector<model::Node>& nodes,
                   const std::vector<config::NodeMembership>& membership, Views::Context& context) {
  context.nodes.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    views::NodeInfo& info = context.nodes[i];
    info.node = &nodes[i];
    info.node_pool = views::NodePoolOf(nodes[i], context.node_pools);
    if (i < membership.size()) info.membership = &membership[i];
    info.capacity = AllocatableOf(nodes[i]);
    info.gpu_product = LabelOf(nodes[i], "nvidia.com/gpu.product");
    info.machine_pool = LabelOf(nodes[i], model::kMachinePoolLabel);
    info.ready =
        std::none_of(nodes[i].taints.begin(), nodes[i].taints.end(),
                     [](const model::Taint& t) { return t.key == "node.kubernetes.io/not-ready"; });
    context.node_index[nodes[i].name] = i;
  }
}

// Requests per task, each workflow's queue, and what the bound tasks take of their nodes. A
// task's pod never changes, so a workflow's list is reused from the previous context while its
// task count is the same.
void AllocateTasks(const LiveState& state, const Views::Context* previous,
                   Views::Context& context) {
  std::unordered_map<std::string_view, std::shared_ptr<const std::vector<Amounts>>> reuse;
  if (previous != nullptr) {
    for (size_t w = 0; w < previous->state->workflows.size(); ++w) {
      reuse[previous->state->workflows[w].id] = previous->task_requests[w];
    }
  }
  context.task_requests.reserve(state.workflows.size());
  for (const store::WorkflowRecord& workflow : state.workflows) {
    auto found = reuse.find(workflow.id);
    std::shared_ptr<const std::vector<Amounts>> requests;
    if (found != reuse.end() && found->second->size() == workflow.tasks.size()) {
      requests = found->second;
    } else {
      auto computed = std::make_shared<std::vector<Amounts>>();
      for (const auto& task : workflow.tasks) computed->push_back(RequestsOf(task));
      requests = std::move(computed);
    }
    for (size_t t = 0; t < workflow.tasks.size(); ++t) {
      const store::TaskRecord& task = workflow.tasks[t];
      if (!views::IsBoundTask(task.status)) continue;
      auto node = context.node_index.find(task.node);
      if (node == context.node_index.end()) continue;
      views::NodeInfo& info = context.nodes[node->second];
      for (int r = 0; r < model::kNumQuotaResources; ++r) info.allocated[r] += (*requests)[t][r];
      ++info.bound_tasks;
    }
    context.task_requests.push_back(std::move(requests));
    context.workflow_queues.push_back(views::WorkflowQueue(workflow));
  }
}

// The latest finished workflows, for the overview's failed ones: one bounded read, at most once
// per `max_age_ms` (the loop publishes more often). Finished workflows are written once, so the
// read never meets the rows the loop rewrites at every step.
void ReadRecentFinished(store::Store& store, int64_t max_age_ms, const Views::Context* previous,
                        Views::Context& context) {
  if (previous != nullptr && context.now_ms - previous->recent_read_ms < max_age_ms) {
    context.recent = previous->recent;
    context.recent_read_ms = previous->recent_read_ms;
    return;
  }
  store::WorkflowFilter recent;
  recent.finished_only = true;
  recent.newest_first = true;
  recent.limit = 200;
  auto latest = store.ListWorkflows(recent);
  if (latest.ok()) context.recent = std::move(*latest);
  context.recent_read_ms = context.now_ms;
}

}  // namespace

// The context of the current state, configs and nodes: the last one when none of them changed;
// the membership is computed again only when the configs or the nodes did.
Result<std::shared_ptr<const Views::Context>> Views::Build() {
  ASSIGN_OR_RETURN(std::shared_ptr<const LiveState> state, State());
  ASSIGN_OR_RETURN(Service::CachedInputs inputs, service_.Inputs());
  std::shared_ptr<const Context> previous;
  std::shared_ptr<const Membership> membership;
  {
    std::lock_guard lock(mu_);
    if (context_ != nullptr && context_->state == state && context_->inputs.owner == inputs.owner &&
        context_->inputs.nodes == inputs.nodes) {
      return context_;
    }
    previous = context_;
    membership = membership_;
  }
  if (membership == nullptr || membership->owner != inputs.owner ||
      membership->nodes != inputs.nodes) {
    auto fresh = std::make_shared<Membership>();
    fresh->owner = inputs.owner;
    fresh->nodes = inputs.nodes;
    auto computed = config::ComputeMembership(*inputs.configs, *inputs.nodes);
    if (computed.ok()) fresh->by_node = std::move(*computed);
    membership = std::move(fresh);
  }

  auto context = std::make_shared<Context>();
  context->inputs = inputs;
  context->state = state;
  context->membership = membership;
  context->now_ms = clock_.NowMillis();
  ReadPoolAndQueueConfigs(inputs, *context);
  SettleQueues(*state, inputs, *context);
  DescribeNodes(*inputs.nodes, membership->by_node, *context);
  AllocateTasks(*state, previous.get(), *context);
  ReadRecentFinished(store_, options_.state_max_age_ms, previous.get(), *context);
  views::Digest(*context);

  std::lock_guard lock(mu_);
  ++contexts_built_;
  if (skipped_ != nullptr && state->at_ms >= skipped_->at_ms) skipped_ = nullptr;  // built now
  membership_ = membership;
  // Another thread may have built a newer one meanwhile: keep whichever has the newer state.
  if (context_ == nullptr || context_->state->at_ms <= state->at_ms) context_ = context;
  return std::shared_ptr<const Context>(context);
}

void Views::Publish(const std::shared_ptr<const LiveState>& state) {
  if (state == nullptr) return;
  {
    std::lock_guard lock(mu_);
    published_ = state;
    for (const MachinePoolEvent& event : state->events) {
      events_.push_back(event);
      if (events_.size() > options_.max_events) events_.pop_front();
    }
    if (!BuildWantedLocked(*state)) {
      skipped_ = state;  // the next read waits for a build of the newest state
      return;
    }
    // The loop's thread only hands the state over: the refresher builds the views of it.
    if (options_.background_refresh) {
      RequestRefreshLocked();
      return;
    }
  }
  auto context = Build();
  if (context.ok()) Account(**context);
}

// A published state is built while the views are read, and when what is kept from the contexts
// needs it: the first context, a history sample that is due, and machine-pool cost (accrued from
// each context's nodes, so that a node count that changed is priced from when it changed). A
// state not built is built at the next read (Current waits for it).
bool Views::BuildWantedLocked(const LiveState& state) const {
  if (context_ == nullptr || !context_->machine_pools.empty()) return true;
  if (clock_.NowMillis() - last_read_ms_ < options_.idle_after_ms) return true;
  return state.insight != nullptr &&
         (samples_.empty() || state.at_ms - samples_.back()->at_ms >= options_.history_interval_ms);
}

uint64_t Views::ContextsBuilt() {
  std::lock_guard lock(mu_);
  return contexts_built_;
}

// Machine-pool cost and the history sample, for a context of a state the loop published (each
// state counted once: cost accrues over the time since the last one, a sample is due every
// history_interval_ms).
void Views::Account(const Context& context) {
  const LiveState& state = *context.state;
  if (state.insight == nullptr) return;
  bool due = false;
  {
    std::lock_guard lock(mu_);
    due = samples_.empty() || state.at_ms - samples_.back()->at_ms >= options_.history_interval_ms;
  }
  AccrueCost(state, context);
  if (due) RecordSample(state, context);
}

void Views::AccrueCost(const LiveState& state, const Context& context) {
  std::unordered_map<std::string, int64_t> nodes;
  for (const views::NodeInfo& node : context.nodes) {
    if (!node.machine_pool.empty()) ++nodes[node.machine_pool];
  }
  std::lock_guard lock(mu_);
  if (cost_since_ms_ == 0) cost_since_ms_ = state.at_ms;
  const int64_t elapsed = last_cost_ms_ == 0 ? 0 : state.at_ms - last_cost_ms_;
  last_cost_ms_ = state.at_ms;
  if (elapsed <= 0) return;
  const auto& price_of = service_.machine_pool_support().hourly_price_micros;
  for (const model::MachinePool& pool : context.machine_pools) {
    std::optional<int64_t> price = price_of ? price_of(pool) : std::nullopt;
    auto count = nodes.find(pool.name);
    if (!price || count == nodes.end()) continue;
    // micro-dollars: nodes x price per hour x hours, in 128 bits against overflow.
    __extension__ using Int128 = __int128;
    cost_micros_[pool.name] +=
        static_cast<int64_t>(Int128(count->second) * *price * elapsed / Int128(3600 * 1000));
  }
}

void Views::RecordSample(const LiveState& state, const Context& context) {
  auto sample = std::make_shared<Sample>();
  sample->at_ms = state.at_ms;
  for (const views::NodeInfo& node : context.nodes) {
    sample->gpu_capacity += node.capacity[views::kGpu];
    sample->gpu_allocated += node.allocated[views::kGpu];
  }
  for (size_t w = 0; w < state.workflows.size(); ++w) {
    const auto& tasks = state.workflows[w].tasks;
    for (size_t t = 0; t < tasks.size(); ++t) {
      if (views::IsPendingTask(tasks[t].status)) {
        sample->pending_gpus += (*context.task_requests[w])[t][views::kGpu];
      }
    }
  }
  for (const scheduler::QueueShare& share : state.insight->shares) {
    Sample::QueueRow row;
    row.queue = share.queue;
    row.node_pool = share.node_pool;
    for (int r = 0; r < model::kNumQuotaResources; ++r) {
      row.allocated[r] = share.resources[r].allocated;
      row.deserved[r] = share.resources[r].deserved;
      row.fair_share[r] = share.resources[r].fair_share;
    }
    sample->queues.push_back(std::move(row));
  }
  std::map<std::string, int> replicas;
  for (const model::MachinePool& pool : context.machine_pools) replicas[pool.name] = 0;
  for (const views::NodeInfo& node : context.nodes) {
    if (!node.machine_pool.empty()) ++replicas[node.machine_pool];
  }
  sample->replicas.assign(replicas.begin(), replicas.end());
  const size_t capacity =
      std::clamp<size_t>(static_cast<size_t>(options_.history_span_ms /
                                             std::max<int64_t>(1, options_.history_interval_ms)),
                         1, kMaxSamples);
  std::lock_guard lock(mu_);
  samples_.push_back(std::move(sample));
  while (samples_.size() > capacity) samples_.pop_front();
}

}  // namespace gpupool::service
