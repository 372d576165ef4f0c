#pragma once
// Read-only views for the web dashboard (and, later, the CLI's tables of the same things): each
// function answers one page with plain JSON, computed from
//   * the configs and nodes the Service has cached (Service::Inputs), and
//   * the cluster's live state: the unfinished workflows with their tasks and, on the server
//     that runs the scheduling loop (the leader), what its last cycle knew that the store does
//     not: fair shares with what they were computed from, node-pool capacities, each pending
//     task's position in its queue, machine-pool events. The loop hands it over after every step
//     (Publish). Without a loop (a follower, or `serve --no-scheduler`) the workflows are read
//     from the store at most once per ViewOptions::state_max_age_ms, and the scheduler's part is
//     absent (the JSON says `"leader": false`).
// The leader also keeps a bounded history in memory (one sample every history_interval_ms, 24
// hours by default): GPU allocation of the cluster, allocated / deserved / fair share per queue
// and node pool, replicas per machine pool; and accrues machine-pool cost while it runs.
//
// What a caller sees follows its roles: pools it may not use are left out of the pool views, and
// workflows it may not read out of every workflow list (as Service::ListPools / ListWorkflows).
// Aggregates (capacity, allocation, queues, nodes) are shown to every caller the HTTP layer let
// through.
//
// Quantities are in the scheduler's units: gpu and cpu in milli-units, memory in bytes; a limit or
// deserved quota of -1 is unlimited. Pool views count whole GPUs, as `pool list` does.
//
// Thread contract: thread-safe. Publish is called by the scheduling loop's thread; the views from
// any number of HTTP threads; they share immutable snapshots (shared_ptr swaps under a mutex).

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "config/config_set.h"
#include "config/kinds.h"
#include "model/node_pool.h"
#include "model/queue.h"
#include "scheduler/scheduler.h"
#include "service/service.h"
#include "store/store.h"

namespace gpupool::service {

// A pending task's place among the pending jobs of its queue, in the order the scheduler takes
// them inside a queue (scheduler.h: priority, highest first, then age; a gang is one job, as old
// as its oldest pod). Which queue goes first is decided anew at every allocation step (fair
// share), so the position is within the queue only.
struct QueuePosition {
  std::string queue;
  int position = 0;  // 1 = next
  int length = 0;    // pending jobs in the queue
};

// Positions of the pods of `pods` whose key (scheduler::PodKey) is in `pending`, by key.
std::unordered_map<std::string, QueuePosition> RankPendingPods(
    const std::vector<model::PodScheduling>& pods, const std::set<std::string>& pending);

struct MachinePoolEvent {
  int64_t at_ms = 0;
  std::string machine_pool;
  std::string node;
  std::string what;  // "launched (pending pods)", "ready", "spot interruption notice", ...
};

// What the leader's last scheduling cycle knew.
struct SchedulerInsight {
  std::vector<scheduler::QueueShare> shares;            // CycleResult::fair_share
  std::vector<scheduler::NodePoolCapacity> node_pools;  // CycleResult::node_pools
  std::vector<model::Queue> queues;  // the queues the cycle ran with (incl. pools' implicit ones)
  // By the snapshot pod name the loop gives task t of workflow w: "<w>.<t>".
  std::unordered_map<std::string, QueuePosition> positions;
};

// The cluster as one scheduling step left it.
struct LiveState {
  int64_t at_ms = 0;
  std::vector<store::WorkflowRecord> workflows;     // every unfinished workflow, with its tasks
  std::shared_ptr<const SchedulerInsight> insight;  // null: not from a scheduling loop
  std::vector<MachinePoolEvent> events;             // machine-pool events of this step
};

// The snapshot pod name of task `index` of `workflow_id` (the key of SchedulerInsight::positions).
std::string PositionKey(std::string_view workflow_id, size_t index);

// Pods name their pool as their queue (gpupool.io/queue). A pool without a QUEUE config of the
// same name gets one, as OSMO creates a KAI queue per pool: GPU deserved = resources.gpu
// guarantee, limit = maximum, weight = weight; -1 or absent means unlimited, as in KAI (so
// NORMAL-priority work of a pool without a guarantee may use the whole node set, as in OSMO); cpu
// and memory unlimited. Without NODE_POOL configs all of it is in the `default` node pool. With
// them, the quota goes to every node pool the pool's nodes (those of its platforms) are in: the
// limit and the weight as they are in each, the guarantee spread in proportion to the pool's GPUs
// in each node pool (whole GPUs; the remainder one at a time to the largest fractions, ties by
// node pool name), so NORMAL work within the guarantee runs in whichever node pools the pool's
// nodes are in. A pool with no GPU node keeps it all in `default`. The scheduling loop and the
// views use it.
void AddImplicitPoolQueues(const config::ConfigSet& configs, const std::vector<model::Node>& nodes,
                           const std::vector<model::NodePool>& node_pools,
                           std::vector<model::Queue>& queues);

struct ViewOptions {
  int64_t history_interval_ms = 60'000;
  int64_t history_span_ms = int64_t{24} * 3600 * 1000;
  size_t max_events = 500;
  int64_t state_max_age_ms = 1000;  // without a loop: how long workflows read from the store last
  // How long the loop's last published state is used before the store is read instead (a slow
  // step at a large scale is still the freshest view; a lost lease stops the publishing).
  int64_t leader_max_age_ms = 60'000;
  // Requests are answered from the last context while a refresher thread builds the next one,
  // the first one at construction, and the loop's Publish only hands its state over (false:
  // requests and Publish build it themselves when it is stale, on their own thread).
  bool background_refresh = true;  // Nobody read a view for this long: the states the loop
                                   // publishes are no longer built into
  // contexts (a build walks every node and workflow; the loop publishes every step, 5 times a
  // second), but for a history sample that is due and while machine pools accrue cost. The next
  // read then waits for a context of the newest state, so a view never shows a state older than
  // the last published one by more than a build.
  int64_t idle_after_ms = 10'000;
};

struct WorkflowPageRequest {
  std::optional<std::string> pool, user, status, queue;
  int limit = 50;              // 1..500
  std::string continue_token;  // from the previous page's "continue"
};

struct NodePageRequest {
  std::string selector;  // label selector (model/label_selector.h)
  std::optional<std::string> pool, node_pool;
  int limit = 100;  // 1..1000
  std::string continue_token;
};

class Views {
 public:
  // All references must outlive the Views.
  Views(Service& service, store::Store& store, const Clock& clock, ViewOptions options = {});
  ~Views();

  // The scheduling loop's state after a step (the loop's thread). Keeps the events; once the views
  // of the state are built, records a history sample when the last one is history_interval_ms
  // old and accrues machine-pool cost.
  void Publish(const std::shared_ptr<const LiveState>& state);

  using Json = nlohmann::ordered_json;
  Result<Json> Overview(const Caller& caller);
  Result<Json> Pools(const Caller& caller);
  Result<Json> Pool(const Caller& caller, std::string_view name);
  // resource: gpu | cpu | memory.
  Result<Json> Queues(const Caller& caller, std::string_view resource);
  // One queue in one node pool ("" = the first it has quota or allocation in): its numbers, their
  // history and how the water-filling reached its fair share, level by level.
  Result<Json> Queue(const Caller& caller, std::string_view name, std::string_view node_pool,
                     std::string_view resource);
  Result<Json> Workflows(const Caller& caller, const WorkflowPageRequest& request);
  Result<Json> Workflow(const Caller& caller, std::string_view id);
  Result<Json> Nodes(const Caller& caller, const NodePageRequest& request);
  Result<Json> MachinePools(const Caller& caller);

  // How many contexts were built (tests: the states published while nobody reads are not).
  uint64_t ContextsBuilt();

  struct Context;  // views_internal.h
  struct Sample;

 private:
  // The current context (the last one while the next is built), and building one now.
  Result<std::shared_ptr<const Context>> Current();
  Result<std::shared_ptr<const Context>> Build();
  void RefreshLoop();
  void RequestRefreshLocked();                           // mu_ held
  bool BuildWantedLocked(const LiveState& state) const;  // mu_ held
  void Account(const Context& context);
  Result<std::shared_ptr<const LiveState>> State();
  void RecordSample(const LiveState& state, const Context& context);
  // The history samples as the views show them: the cluster's GPUs (Overview), and one queue's
  // numbers of resource `r` in one node pool (Queue).
  Json GpuHistory();
  Json QueueHistory(const std::string& queue, const std::string& node_pool, int r);
  void AccrueCost(const LiveState& state, const Context& context);

  Service& service_;
  store::Store& store_;
  const Clock& clock_;
  const ViewOptions options_;

  std::mutex mu_;
  std::shared_ptr<const LiveState> published_;  // from the loop
  std::shared_ptr<const LiveState> read_;       // from the store (no loop)
  std::shared_ptr<const Context> context_;
  std::deque<std::shared_ptr<const Sample>> samples_;
  std::deque<MachinePoolEvent> events_;
  std::unordered_map<std::string, int64_t> cost_micros_;  // per machine pool, accrued
  int64_t cost_since_ms_ = 0;
  int64_t last_cost_ms_ = 0;
  // Membership of nodes in pools and platforms, for the configs and nodes it was computed from.
  struct Membership;
  std::shared_ptr<const Membership> membership_;
  bool refresh_requested_ = false;
  int64_t last_read_ms_ = 0;  // when a view was last asked for
  // The newest state published and not built since (nobody read), or null.
  std::shared_ptr<const LiveState> skipped_;
  uint64_t contexts_built_ = 0;
  bool stopping_ = false;
  std::condition_variable refresh_wanted_;
  uint64_t builds_ = 0;  // contexts the refresher built (or failed to)
  Status build_error_;   // of its last build
  std::condition_variable built_;
  std::thread refresher_;  // last: started after everything above
};

}  // namespace gpupool::service
