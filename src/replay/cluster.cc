#include "replay/cluster.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "model/machine_pool.h"

namespace gpupool::replay {
namespace {

constexpr char kGpuProductLabel[] = "nvidia.com/gpu.product";

int32_t FractionOf(const model::PodScheduling& pod) {
  auto it = pod.annotations.find(scheduler::kGpuFractionAnnotation);
  if (it == pod.annotations.end()) return 0;
  double f = 0;
  if (std::sscanf(it->second.c_str(), "%lf", &f) != 1 || !(f > 0 && f < 1)) return 0;
  return static_cast<int32_t>(std::lround(f * 1000));  // f is in (0, 1)
}

}  // namespace

std::vector<model::PodScheduling> PodsOfJob(const TraceJob& job) {
  model::PodScheduling base;
  base.namespace_ = "default";
  base.labels = job.labels;
  if (!job.queue.empty()) base.labels[scheduler::kQueueLabel] = job.queue;
  if (!job.node_pools.empty()) base.labels[scheduler::kNodePoolLabel] = job.node_pools;
  if (job.pods > 1) {
    base.labels[scheduler::kGangLabel] = job.name;
    if (job.gang_min > 0) base.labels[scheduler::kGangMinLabel] = std::to_string(job.gang_min);
  }
  base.requests = job.requests;
  if (job.gpus > 0) base.requests[scheduler::kGpuResource] = model::Quantity::FromUnits(job.gpus);
  if (job.gpu_milli > 0) {
    char text[16];
    std::snprintf(text, sizeof text, "0.%03d", static_cast<int>(job.gpu_milli));
    base.annotations[scheduler::kGpuFractionAnnotation] = text;
  }
  if (job.gpu_products.size() == 1) {
    base.node_selector[kGpuProductLabel] = job.gpu_products[0];
  } else if (job.gpu_products.size() > 1) {
    model::NodeSelectorTerm term;
    term.match_expressions.push_back(
        {kGpuProductLabel, model::SelectorOperator::kIn, job.gpu_products});
    base.affinity.required = std::vector<model::NodeSelectorTerm>{term};
  }
  if (job.priority != 0) base.priority = job.priority;
  std::vector<model::PodScheduling> pods;
  for (int i = 0; i < job.pods; ++i) {
    model::PodScheduling pod = base;
    pod.name = job.pods == 1 ? job.name : job.name + "-" + std::to_string(i);
    pods.push_back(std::move(pod));
  }
  return pods;
}

ReplayCluster::ReplayCluster(const scheduler::ClusterSnapshot& initial, const Trace& trace) {
  snapshot_.nodes = initial.nodes;
  snapshot_.nodes_generation = 1;
  snapshot_.queues = initial.queues;
  snapshot_.node_pools = initial.node_pools;
  snapshot_.bound_at_ms = initial.bound_at_ms;
  pool_names_ = {std::string(model::kDefaultNodePool)};
  for (const model::NodePool& p : initial.node_pools) pool_names_.push_back(p.name);
  std::sort(pool_names_.begin() + 1, pool_names_.end());
  std::set<std::string> queues = {scheduler::kDefaultQueue};
  for (const model::Queue& q : initial.queues) queues.insert(q.name);
  queue_names_.assign(queues.begin(), queues.end());
  for (const model::PodScheduling& pod : initial.pods) AddPod(pod, -1);
  job_pods_.resize(trace.jobs.size());
  std::vector<TaskShape> pods;
  for (const TraceJob& job : trace.jobs) {
    const int64_t cpu = job.requests.contains("cpu") ? job.requests.at("cpu").MilliValue() : 0;
    for (int i = 0; i < job.pods; ++i) pods.push_back({cpu, job.gpus, job.gpu_milli, 0});
  }
  shapes_ = TypicalShapes(pods);
}

ReplayCluster::PodInfo ReplayCluster::InfoOf(const model::PodScheduling& pod) const {
  PodInfo info;
  auto gpu = pod.requests.find(scheduler::kGpuResource);
  info.whole = gpu == pod.requests.end() ? 0 : static_cast<int>(gpu->second.Value());
  info.fraction = FractionOf(pod);
  auto cpu = pod.requests.find("cpu");
  info.cpu_milli = cpu == pod.requests.end() ? 0 : cpu->second.MilliValue();
  auto queue = pod.labels.find(scheduler::kQueueLabel);
  const std::string name = queue == pod.labels.end() ? scheduler::kDefaultQueue : queue->second;
  auto it = std::lower_bound(queue_names_.begin(), queue_names_.end(), name);
  info.queue =
      it != queue_names_.end() && *it == name ? static_cast<int>(it - queue_names_.begin()) : 0;
  return info;
}

void ReplayCluster::AddPod(model::PodScheduling pod, int job) {
  PodInfo info = InfoOf(pod);
  info.job = job;
  if (pod.node_name.empty()) ++pending_pods_;
  serials_[scheduler::PodKey(pod)] = next_serial_;
  snapshot_.pod_ids.push_back(next_serial_++ << 32);
  snapshot_.pods.push_back(std::move(pod));
  info_.push_back(info);
}

int ReplayCluster::PositionOf(const std::string& pod) const {
  auto it = serials_.find(pod);
  if (it == serials_.end()) return -1;
  const std::vector<uint64_t>& ids = snapshot_.pod_ids;
  return static_cast<int>(std::lower_bound(ids.begin(), ids.end(), it->second << 32) - ids.begin());
}

void ReplayCluster::AddJobPods(int job, const TraceJob& trace_job) {
  for (model::PodScheduling& pod : PodsOfJob(trace_job)) {
    job_pods_[job].push_back(pod.name);
    AddPod(std::move(pod), job);
  }
}

void ReplayCluster::RemoveJobPods(int job) {
  for (const std::string& name : job_pods_[job]) {
    const int at = PositionOf(name);
    if (at < 0) continue;
    PodInfo& info = info_[at];
    if (info.removed) continue;
    model::PodScheduling& pod = snapshot_.pods[at];
    if (pod.node_name.empty()) --pending_pods_;
    snapshot_.bound_at_ms.erase(name);
    info.removed = true;
    serials_.erase(name);
    compact_needed_ = true;
  }
}

void ReplayCluster::Compact() {
  if (!compact_needed_) return;
  size_t out = 0;
  for (size_t i = 0; i < snapshot_.pods.size(); ++i) {
    if (info_[i].removed) continue;
    if (out != i) {
      snapshot_.pods[out] = std::move(snapshot_.pods[i]);
      snapshot_.pod_ids[out] = snapshot_.pod_ids[i];
      info_[out] = info_[i];
    }
    ++out;
  }
  snapshot_.pods.resize(out);
  snapshot_.pod_ids.resize(out);
  info_.resize(out);
  compact_needed_ = false;
}

const scheduler::ClusterSnapshot& ReplayCluster::snapshot() {
  Compact();
  return snapshot_;
}

int ReplayCluster::Bind(const std::string& pod, const std::string& node) {
  const int at = PositionOf(pod);
  if (at < 0) return -1;
  model::PodScheduling& p = snapshot_.pods[at];
  if (p.node_name.empty()) --pending_pods_;
  p.node_name = node;
  ++snapshot_.pod_ids[at];  // a changed pod for the scheduler
  snapshot_.bound_at_ms[pod] = snapshot_.now_ms;
  return info_[at].job;
}

int ReplayCluster::Unbind(const std::string& pod) {
  const int at = PositionOf(pod);
  if (at < 0) return -1;
  model::PodScheduling& p = snapshot_.pods[at];
  if (!p.node_name.empty()) ++pending_pods_;
  p.node_name.clear();
  ++snapshot_.pod_ids[at];  // a changed pod for the scheduler
  snapshot_.bound_at_ms.erase(pod);
  return info_[at].job;
}

int ReplayCluster::JobOfPod(const std::string& pod) const {
  const int at = PositionOf(pod);
  return at < 0 ? -1 : info_[at].job;
}

bool ReplayCluster::HasNoExecuteTaint() {
  if (!no_execute_) {
    no_execute_ = std::any_of(snapshot_.nodes.begin(), snapshot_.nodes.end(), [](const auto& n) {
      return std::any_of(n.taints.begin(), n.taints.end(), [](const model::Taint& t) {
        return t.effect == model::TaintEffect::kNoExecute;
      });
    });
  }
  return *no_execute_;
}

const model::Node* ReplayCluster::FindNode(const std::string& name) const {
  for (const model::Node& node : snapshot_.nodes) {
    if (node.name == name) return &node;
  }
  return nullptr;
}

void ReplayCluster::UpsertNode(model::Node node) {
  nodes_stale_ = true;
  hourly_.reset();
  no_execute_.reset();
  ++snapshot_.nodes_generation;  // the scheduler's kept view is stale too
  for (model::Node& existing : snapshot_.nodes) {
    if (existing.name == node.name) {
      existing = std::move(node);
      return;
    }
  }
  snapshot_.nodes.push_back(std::move(node));
}

void ReplayCluster::RemoveNode(const std::string& name) {
  nodes_stale_ = true;
  hourly_.reset();
  no_execute_.reset();
  ++snapshot_.nodes_generation;  // the scheduler's kept view is stale too
  std::erase_if(snapshot_.nodes, [&](const model::Node& n) { return n.name == name; });
}

const std::map<std::string, int64_t>& ReplayCluster::HourlyMicrosByMachinePool(
    const autoscaler::Catalog& catalog) {
  if (hourly_) return *hourly_;
  std::map<std::string, int64_t>& hourly = hourly_.emplace();
  for (const model::Node& node : snapshot_.nodes) {
    auto pool = node.labels.find(model::kMachinePoolLabel);
    auto type = node.labels.find(model::kInstanceTypeLabel);
    if (pool == node.labels.end() || type == node.labels.end()) continue;
    const model::InstanceType* t = catalog.Find(type->second);
    if (t == nullptr) continue;
    auto capacity = node.labels.find(model::kCapacityTypeLabel);
    const bool spot = capacity != node.labels.end() &&
                      capacity->second == model::CapacityTypeName(model::CapacityType::kSpot);
    hourly[pool->second] += spot ? t->spot_price_micros : t->on_demand_price_micros;
  }
  return hourly;
}

std::vector<std::string> ReplayCluster::NodePoolNames() const { return pool_names_; }
std::vector<std::string> ReplayCluster::QueueNames() const { return queue_names_; }

// Node pools as the scheduler assigns them: pools by name, the first whose label the node
// carries; none: the default pool.
void ReplayCluster::IndexNodes() {
  if (!nodes_stale_) return;
  std::vector<const model::NodePool*> pools;
  for (const model::NodePool& p : snapshot_.node_pools) pools.push_back(&p);
  std::sort(pools.begin(), pools.end(), [](auto* a, auto* b) { return a->name < b->name; });
  nodes_.assign(snapshot_.nodes.size(), NodeInfo{});
  node_index_.clear();
  for (size_t i = 0; i < snapshot_.nodes.size(); ++i) {
    const model::Node& node = snapshot_.nodes[i];
    NodeInfo& info = nodes_[i];
    for (size_t p = 0; p < pools.size(); ++p) {
      auto it = node.labels.find(pools[p]->label_key);
      if (it != node.labels.end() && it->second == pools[p]->label_value) {
        info.pool = static_cast<int>(p) + 1;
        break;
      }
    }
    auto gpu = node.allocatable.find(scheduler::kGpuResource);
    info.devices = gpu == node.allocatable.end()
                       ? 0
                       : static_cast<int>(std::clamp<int64_t>(gpu->second.Value(), 0, 1024));
    auto cpu = node.allocatable.find("cpu");
    info.cpu_milli = cpu == node.allocatable.end() ? 0 : cpu->second.MilliValue();
    auto mp = node.labels.find(model::kMachinePoolLabel);
    if (mp != node.labels.end()) info.machine_pool = mp->second;
    node_index_[node.name] = static_cast<int>(i);
  }
  nodes_stale_ = false;
}

// Devices are worked out as the scheduler does at the start of a cycle: bound pods in snapshot
// order, whole GPUs on the lowest fully free devices, a fraction on the fullest device that
// still has room.
ClusterMeasure ReplayCluster::Measure() {
  Compact();
  IndexNodes();
  std::vector<std::vector<int32_t>> devices(nodes_.size());
  std::vector<int64_t> cpu_free(nodes_.size());
  for (size_t n = 0; n < nodes_.size(); ++n) {
    devices[n].assign(nodes_[n].devices, 1000);
    cpu_free[n] = nodes_[n].cpu_milli;
  }
  ClusterMeasure m;
  std::vector<int64_t> queue_milli(queue_names_.size(), 0);
  std::vector<int64_t> pool_allocated(pool_names_.size(), 0);
  for (size_t i = 0; i < snapshot_.pods.size(); ++i) {
    const PodInfo& p = info_[i];
    const std::string& node_name = snapshot_.pods[i].node_name;
    if (node_name.empty()) {
      m.pending_gpu_milli += p.GpuMilli();
      continue;
    }
    auto it = node_index_.find(node_name);
    if (it == node_index_.end()) continue;
    const int n = it->second;
    cpu_free[n] -= p.cpu_milli;
    queue_milli[p.queue] += p.GpuMilli();
    pool_allocated[nodes_[n].pool] += p.GpuMilli();
    std::vector<int32_t>& dev = devices[n];
    if (p.fraction > 0) {
      int best = -1;
      for (size_t d = 0; d < dev.size(); ++d) {
        if (dev[d] >= p.fraction && (best < 0 || dev[d] < dev[best])) best = static_cast<int>(d);
      }
      if (best >= 0) dev[best] -= p.fraction;
    } else {
      int left = p.whole;
      for (size_t d = 0; d < dev.size() && left > 0; ++d) {
        if (dev[d] == 1000) {
          dev[d] = 0;
          --left;
        }
      }
    }
  }
  for (const std::string& name : pool_names_) m.node_pools[name];
  for (size_t n = 0; n < nodes_.size(); ++n) {
    PoolMeasure& pool = m.node_pools[pool_names_[nodes_[n].pool]];
    pool.capacity_milli += int64_t{nodes_[n].devices} * 1000;
    pool.fragmentation_milli +=
        NodeFragmentation(shapes_, devices[n], std::max<int64_t>(cpu_free[n], 0));
    if (!nodes_[n].machine_pool.empty()) ++m.machine_pool_nodes[nodes_[n].machine_pool];
  }
  for (size_t p = 0; p < pool_names_.size(); ++p) {
    m.node_pools[pool_names_[p]].allocated_milli = pool_allocated[p];
  }
  for (size_t q = 0; q < queue_names_.size(); ++q) {
    m.queue_allocated_milli[queue_names_[q]] = queue_milli[q];
  }
  return m;
}

}  // namespace gpupool::replay
