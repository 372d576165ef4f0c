#pragma once
// What the view functions of views_*.cc share: the context one view call reads, built once per
// state (views_context.cc), and small helpers. Internal to the service module.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/config_set.h"
#include "config/membership.h"
#include "model/machine_pool.h"
#include "model/node_pool.h"
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
  std::string gpu_product;   // nvidia.com/gpu.product
  std::string machine_pool;  // node.kubernetes.io/machinepool
  bool ready = true;         // no node.kubernetes.io/not-ready taint
};

// Index -1 or a resource index; "gpu" | "cpu" | "memory".
int ResourceIndex(std::string_view name);

// Task states that hold a node's capacity, and the ones waiting for one.
bool IsBoundTask(std::string_view status);
inline bool IsPendingTask(std::string_view status) { return status == "PENDING"; }

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
  std::vector<store::WorkflowRecord> recent;  // the 200 latest submissions, newest first
  int64_t recent_read_ms = 0;

  const config::ConfigSet& configs() const { return *inputs.configs; }
  const SchedulerInsight* insight() const { return state ? state->insight.get() : nullptr; }
  // Whether `caller` may read workflow `workflow` (as Service::ListWorkflows decides).
  bool MayRead(const Caller& caller, const store::WorkflowRecord& workflow) const;
};

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
