#pragma once
// What the view functions of views_*.cc share: the context one view call reads, built once per
// state (views_context.cc), and small helpers. Internal to the service module.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "config/config_set.h"
#include "config/membership.h"
#include "model/machine_pool.h"
#include "model/node_pool.h"
#include "model/task_state.h"
#include "service/views.h"

namespace gpupool::service::views {

using Json = nlohmann::ordered_json;

// gpu and cpu in milli-units, memory in bytes (the scheduler's accounting units).
using Amounts = std::array<int64_t, model::kNumQuotaResources>;
inline constexpr int kGpu = 0;
inline constexpr int kCpu = 1;
inline constexpr int kMemory = 2;

struct NodeInfo {
  const model::Node* node = nullptr;
  std::string node_pool;
  const config::NodeMembership* membership = nullptr;  // null when membership failed
  Amounts capacity{};
  Amounts allocated{};  // requests of the tasks bound to it (SCHEDULED, RUNNING)
  int bound_tasks = 0;
  std::string gpu_product;             // nvidia.com/gpu.product
  std::string machine_pool;            // node.kubernetes.io/machinepool
  bool ready = true;                   // no node.kubernetes.io/not-ready taint
  std::vector<std::string> pools;      // the pools it is in, by name
  std::vector<std::string> platforms;  // "pool/platform" it is in
};

// A pool's numbers, as Service::ListPools computes them (whole GPUs), with its platforms' and its
// occupancy by user.
struct PlatformNumbers {
  int64_t nodes = 0, gpu_capacity = 0, gpu_used = 0;
};
struct Occupancy {
  int64_t workflows = 0, running = 0, pending = 0, gpus = 0, cpu = 0;
};
struct PoolNumbers {
  std::vector<size_t> nodes;  // indices into Context::nodes
  int64_t capacity = 0, used = 0, quota_used = 0, quota_limit = 0;
  std::string status;
  std::map<std::string, PlatformNumbers> platforms;  // by platform name
  std::map<std::string, Occupancy> by_user;
  std::map<std::string, int64_t> shared;  // other pool -> nodes in both
};

// The overview's numbers that do not depend on who asks (views_digest.cc). Which workflows a
// caller may see is decided per request, over the lists kept here in the order they are shown.
struct OverviewNumbers {
  struct Use {
    int64_t nodes = 0, capacity = 0, allocated = 0, pending_tasks = 0;
  };
  int64_t gpu_capacity = 0, gpu_allocated = 0, running_tasks = 0, pending_tasks = 0;
  int64_t pending_workflows = 0, pending_gpus = 0, idle_allocated_gpus = 0;
  std::map<std::string, Use> by_product;    // products without GPUs left out
  std::map<std::string, Use> by_node_pool;  // every node pool
  std::map<std::string, std::pair<int64_t, int64_t>> pending_by_queue;  // tasks, gpus
  std::vector<std::pair<size_t, size_t>> idle;  // (workflow, task): SCHEDULED with GPUs
  std::vector<size_t> longest_running;          // RUNNING workflows, longest first
};

// Pending tasks and what they ask, per (queue, node pool they may use).
struct PendingCount {
  int64_t tasks = 0;
  Amounts requests{};
};

// The index of resource "gpu" | "cpu" | "memory"; InvalidArgument for any other name.
Result<int> ResourceIndex(std::string_view name);

// Task states that hold a node's capacity, and the ones waiting for one.
inline bool IsBoundTask(std::string_view status) { return model::IsBoundTaskText(status); }
inline bool IsPendingTask(std::string_view status) { return status == model::TaskStatus::kPending; }

// The queue a workflow's pods name (gpupool.io/queue), else its pool.
std::string WorkflowQueue(const store::WorkflowRecord& workflow);
// HIGH | NORMAL | LOW (the stored spec's priority; NORMAL when absent).
std::string WorkflowPriority(const store::WorkflowRecord& workflow);

// Opaque `continue` tokens of the paginated views: the last item's sort key, encoded.
std::string EncodeContinue(std::string_view key);
Result<std::string> DecodeContinue(std::string_view token);

// The node pool a node is in: the first NODE_POOL (by name) whose label it carries, else
// "default" (as scheduler/cluster_view.cc assigns them).
std::string NodePoolOf(const model::Node& node, const std::vector<model::NodePool>& sorted_pools);

}  // namespace gpupool::service::views

namespace gpupool::service {

struct Views::Membership {
  std::shared_ptr<const void> owner;  // the configs the membership was computed under
  std::shared_ptr<const std::vector<model::Node>> nodes;
  std::vector<config::NodeMembership> by_node;  // empty when it could not be computed
};

struct Views::Context {
  Service::CachedInputs inputs;
  std::shared_ptr<const LiveState> state;
  std::shared_ptr<const Membership> membership;
  int64_t now_ms = 0;
  std::vector<model::NodePool> node_pools;   // by name
  std::vector<std::string> node_pool_names;  // "default" first, then by name
  std::vector<model::Queue> queues;          // the scheduler's, else QUEUE configs + pools'
  std::vector<model::MachinePool> machine_pools;
  std::vector<views::NodeInfo> nodes;  // in inputs.nodes order
  std::unordered_map<std::string, size_t> node_index;
  // Per workflow of state->workflows, per task: its requests; and the workflow's queue.
  std::vector<std::shared_ptr<const std::vector<views::Amounts>>> task_requests;
  std::vector<std::string> workflow_queues;
  // The unfinished workflows (indices into state->workflows), newest first by (submitted_ms, id):
  // newest-first pages take them from here and only the finished ones from the store.
  std::vector<size_t> newest_first;
  std::vector<store::WorkflowRecord> recent;  // the 200 latest finished workflows, newest first
  int64_t recent_read_ms = 0;
  // Computed once per context, so that a request does only its own part (views_digest.cc).
  std::map<std::string, views::PoolNumbers> pools;
  views::OverviewNumbers overview;
  std::map<std::pair<std::string, std::string>, views::PendingCount> pending;

  const config::ConfigSet& configs() const { return *inputs.configs; }
  const SchedulerInsight* insight() const { return state ? state->insight.get() : nullptr; }
  // Whether `caller` may read workflow `workflow` (as Service::ListWorkflows decides).
  bool MayRead(const Caller& caller, const store::WorkflowRecord& workflow) const;
};

namespace views {

// Context::MayRead for one request: the decision depends on the workflow's owner and pool only,
// so it is made once per pool.
class ReadAccess {
 public:
  ReadAccess(const Views::Context& context, const Caller& caller)
      : context_(context), caller_(caller) {}
  bool operator()(const store::WorkflowRecord& workflow);

 private:
  const Views::Context& context_;
  const Caller& caller_;
  std::unordered_map<std::string, bool> by_pool_;
};

// Fills the context's pools, overview, pending and newest_first from its nodes and state.
void Digest(Views::Context& context);

}  // namespace views

struct Views::Sample {
  int64_t at_ms = 0;
  int64_t gpu_capacity = 0;
  int64_t gpu_allocated = 0;
  int64_t pending_gpus = 0;
  struct QueueRow {
    std::string queue;
    std::string node_pool;
    views::Amounts allocated{}, deserved{}, fair_share{};
  };
  std::vector<QueueRow> queues;
  std::vector<std::pair<std::string, int>> replicas;  // machine pool -> nodes
};

}  // namespace gpupool::service
