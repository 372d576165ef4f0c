#include "autoscaler/autoscaler.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "common/strings.h"
#include "common/table.h"
#include "model/duration.h"
#include "model/match.h"
#include "model/node_pool.h"

namespace gpupool::autoscaler {
namespace {

using Json = nlohmann::ordered_json;
using model::CapacityType;

constexpr char kGpu[] = "nvidia.com/gpu";
constexpr int64_t kMi = int64_t{1} << 20;

// ---- Template nodes -------------------------------------------------------------------------

// EKS's kube-reserved cpu: 6% of the first core, 1% of the second, 0.5% of the next two, 0.25%
// of every core above four. In milli-cores.
int64_t ReservedCpuMilli(int64_t cpu_milli) {
  auto band = [&](int64_t from, int64_t to) {
    return std::clamp<int64_t>(cpu_milli - from, 0, to - from);
  };
  // Per 10,000 of each band: 600 = 6%, 100 = 1%, 50 = 0.5%, 25 = 0.25%.
  int64_t reserved_x10000 = band(0, 1000) * 600 + band(1000, 2000) * 100 + band(2000, 4000) * 50 +
                            band(4000, INT64_MAX / 4) * 25;
  return reserved_x10000 / 10000;
}

int64_t ReservedMemoryBytes() { return 255 * kMi + 11 * kMi * kTemplateMaxPods + 100 * kMi; }

std::string PoolPrefix(const std::string& pool) {
  // Node names are DNS labels: lower case, '-' for '_' and '.'.
  std::string out;
  for (char c : pool) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += (l == '_' || l == '.') ? '-' : l;
  }
  return out;
}

// ---- Pods -----------------------------------------------------------------------------------

// The resources a template node has besides GPUs (a pod asking for anything else fits no
// template: StaticMisfit says "Insufficient <resource>").
constexpr std::array<const char*, 4> kDims = {"cpu", "memory", "ephemeral-storage", "pods"};
using DimVector = std::array<int64_t, kDims.size()>;

struct PodNeed {
  const model::PodScheduling* pod = nullptr;
  std::string key;
  std::string gang;                      // "" = alone
  int64_t gpu_whole = 0;                 // devices
  int64_t gpu_fraction = 0;              // milli of one device, 0 = none
  std::map<std::string, int64_t> milli;  // every other resource, plus "pods"
  DimVector dims{};                      // milli of kDims, for packing
};

PodNeed NeedOf(const model::PodScheduling& pod) {
  PodNeed need;
  need.pod = &pod;
  need.key = scheduler::PodKey(pod);
  auto gang = pod.labels.find(scheduler::kGangLabel);
  if (gang != pod.labels.end() && !gang->second.empty()) {
    auto queue = pod.labels.find(scheduler::kQueueLabel);
    need.gang =
        (queue == pod.labels.end() ? std::string(scheduler::kDefaultQueue) : queue->second) + "/" +
        gang->second;
  }
  for (const auto& [name, q] : pod.requests) {
    if (name == kGpu) {
      need.gpu_whole = q.Value();
    } else if (q.MilliValue() > 0) {
      need.milli[name] = q.MilliValue();
    }
  }
  need.milli["pods"] += 1000;
  for (size_t d = 0; d < kDims.size(); ++d) {
    auto it = need.milli.find(kDims[d]);
    need.dims[d] = it == need.milli.end() ? 0 : it->second;
  }
  auto fraction = pod.annotations.find(scheduler::kGpuFractionAnnotation);
  if (fraction != pod.annotations.end()) {
    auto f = model::Quantity::Parse(fraction->second);
    if (f.ok() && f->MilliValue() > 0 && f->MilliValue() < 1000) {
      need.gpu_fraction = f->MilliValue();
      need.gpu_whole = 0;
    }
  }
  return need;
}

std::vector<std::string> PodNodePools(const model::PodScheduling& pod) {
  auto label = pod.labels.find(scheduler::kNodePoolLabel);
  if (label == pod.labels.end() || Trim(label->second).empty()) {
    return {std::string(model::kDefaultNodePool)};
  }
  std::vector<std::string> out;
  for (const std::string& part : Split(label->second, ',')) out.emplace_back(Trim(part));
  return out;
}

// ---- Machine pools during the simulation ----------------------------------------------------

// A node the plan adds: what is left of it while pods are packed.
struct NewNode {
  std::string name;
  DimVector free{};                  // milli of kDims
  std::vector<int64_t> device_free;  // milli per GPU device
  std::string reason;                // "pending pods" | "min_replicas"
};

struct PoolState {
  const model::MachinePool* pool = nullptr;
  const model::InstanceType* type = nullptr;
  model::Node template_node;
  std::string node_pool;  // the node pool the template's labels put it in
  int64_t price_micros = 0;
  std::string unusable;  // why the pool cannot launch at all ("" = it can)
  int32_t current = 0;
  std::vector<NewNode> added;
};

int64_t NodePrice(const model::MachinePool& pool, const model::InstanceType& type) {
  return pool.capacity_type == CapacityType::kSpot ? type.spot_price_micros
                                                   : type.on_demand_price_micros;
}

std::string Unusable(const model::MachinePool& pool, const model::InstanceType& type) {
  if (pool.max_replicas == 0) return "max_replicas is 0";
  if (pool.capacity_type != CapacityType::kSpot) return "";
  if (type.spot_price_micros <= 0) return "instance type " + type.name + " is not offered as spot";
  int64_t cap = pool.max_price_micros.value_or(type.on_demand_price_micros);
  if (type.spot_price_micros > cap) {
    return "spot price " + model::FormatPriceMicros(type.spot_price_micros) + " is above " +
           (pool.max_price_micros ? "max_price " : "the on-demand price ") +
           model::FormatPriceMicros(cap);
  }
  return "";
}

// Why `need` can never run on a node of `state` ("" = it can, on an empty node).
std::string StaticMisfit(const PodNeed& need, const PoolState& state) {
  const model::PodScheduling& pod = *need.pod;
  const model::Node& node = state.template_node;
  if (auto taint = model::FindUntoleratedTaint(node.taints, pod.tolerations)) {
    return "untolerated taint {" + taint->key + ": " + taint->value + "}";
  }
  if (!model::MatchesNodeSelectorAndAffinity(pod, node)) {
    return "didn't match Pod's node affinity/selector";
  }
  std::vector<std::string> wanted = PodNodePools(pod);
  if (std::find(wanted.begin(), wanted.end(), state.node_pool) == wanted.end()) {
    return "its nodes are in node pool " + state.node_pool + ", the pod asks for " +
           Join(wanted, ",");
  }
  int64_t devices = static_cast<int64_t>(state.type->gpu.count);
  if (need.gpu_whole > devices || (need.gpu_fraction > 0 && devices == 0)) {
    return "Insufficient nvidia.com/gpu";
  }
  for (const auto& [name, milli] : need.milli) {
    auto it = node.allocatable.find(name);
    int64_t have = it == node.allocatable.end() ? 0 : it->second.MilliValue();
    if (milli > have) return "Insufficient " + name;
  }
  return "";
}

NewNode EmptyNode(const PoolState& state, std::string name, std::string reason) {
  NewNode node;
  node.name = std::move(name);
  node.reason = std::move(reason);
  for (size_t d = 0; d < kDims.size(); ++d) {
    auto it = state.template_node.allocatable.find(kDims[d]);
    node.free[d] = it == state.template_node.allocatable.end() ? 0 : it->second.MilliValue();
  }
  node.device_free.assign(static_cast<size_t>(state.type->gpu.count), 1000);
  return node;
}

// Puts `need` on `node` if it fits: whole GPUs on fully free devices, a fraction on the fullest
// device that still has room (best fit).
bool TryPut(const PodNeed& need, NewNode& node) {
  for (size_t d = 0; d < kDims.size(); ++d) {
    if (node.free[d] < need.dims[d]) return false;
  }
  std::vector<size_t> whole;
  for (size_t d = 0; d < node.device_free.size() && whole.size() < size_t(need.gpu_whole); ++d) {
    if (node.device_free[d] == 1000) whole.push_back(d);
  }
  if (whole.size() < size_t(need.gpu_whole)) return false;
  int best = -1;
  if (need.gpu_fraction > 0) {
    for (size_t d = 0; d < node.device_free.size(); ++d) {
      int64_t f = node.device_free[d];
      if (f >= need.gpu_fraction && (best < 0 || f < node.device_free[size_t(best)])) {
        best = static_cast<int>(d);
      }
    }
    if (best < 0) return false;
  }
  for (size_t d = 0; d < kDims.size(); ++d) node.free[d] -= need.dims[d];
  for (size_t d : whole) node.device_free[d] = 0;
  if (best >= 0) node.device_free[size_t(best)] -= need.gpu_fraction;
  return true;
}

// A name no node has: "<pool>-<n>" counting on from the pool's size.
std::string FreshName(const PoolState& state, std::set<std::string>& taken) {
  std::string prefix = PoolPrefix(state.pool->name) + "-";
  for (int n = state.current + static_cast<int>(state.added.size()) + 1;; ++n) {
    std::string name = prefix + std::to_string(n);
    if (taken.insert(name).second) return name;
  }
}

// Packs a job (one pod or a whole gang) into one pool, first fit over the pool's new nodes, adding
// nodes up to max_replicas. All or nothing: on failure the pool is left as it was (the nodes the
// job touched are restored from copies; only gangs touch more than one).
bool PackJob(const std::vector<const PodNeed*>& job, PoolState& state,
             std::set<std::string>& taken) {
  const size_t added_before = state.added.size();
  std::vector<std::pair<size_t, NewNode>> originals;
  auto rollback = [&] {
    for (auto it = originals.rbegin(); it != originals.rend(); ++it) {
      state.added[it->first] = std::move(it->second);
    }
    for (size_t i = added_before; i < state.added.size(); ++i) taken.erase(state.added[i].name);
    state.added.resize(added_before);
    return false;
  };
  for (const PodNeed* need : job) {
    bool placed = false;
    for (size_t i = 0; i < state.added.size() && !placed; ++i) {
      NewNode before = job.size() > 1 && i < added_before ? state.added[i] : NewNode{};
      if (TryPut(*need, state.added[i])) {
        placed = true;
        if (job.size() > 1 && i < added_before) originals.emplace_back(i, std::move(before));
      }
    }
    if (placed) continue;
    if (state.current + static_cast<int32_t>(state.added.size()) >= state.pool->max_replicas) {
      return rollback();
    }
    state.added.push_back(EmptyNode(state, FreshName(state, taken), "pending pods"));
    if (!TryPut(*need, state.added.back())) return rollback();
  }
  return true;
}

// Sort key of a job for first-fit decreasing: GPUs, cpu, memory (largest first), then name.
struct JobOrder {
  int64_t gpu_milli = 0, cpu_milli = 0, memory_milli = 0;
  std::string first;
  bool operator<(const JobOrder& o) const {
    if (gpu_milli != o.gpu_milli) return gpu_milli > o.gpu_milli;
    if (cpu_milli != o.cpu_milli) return cpu_milli > o.cpu_milli;
    if (memory_milli != o.memory_milli) return memory_milli > o.memory_milli;
    return first < o.first;
  }
};

JobOrder OrderOf(const std::vector<const PodNeed*>& job) {
  JobOrder order;
  order.first = job.front()->key;
  for (const PodNeed* n : job) {
    order.gpu_milli += n->gpu_whole * 1000 + n->gpu_fraction;
    auto cpu = n->milli.find("cpu");
    if (cpu != n->milli.end()) order.cpu_milli += cpu->second;
    auto mem = n->milli.find("memory");
    if (mem != n->milli.end()) order.memory_milli += mem->second;
  }
  return order;
}

// ---- The plan -------------------------------------------------------------------------------

struct Plan {
  std::vector<PoolState> pools;                // by machine pool name
  std::map<std::string, std::string> not_fit;  // pod -> why no pool could take it
  std::map<std::string, std::string> planned;  // pod -> machine pool it was packed into
};

// The notice's drain is planned on the snapshot as it was (times from the notice), then the
// nodes go with their pods.
Status Interrupt(const std::vector<std::string>& nodes, const std::vector<PoolState>& pools,
                 scheduler::ClusterSnapshot& snapshot, std::vector<Interruption>& out) {
  const scheduler::ClusterSnapshot before = snapshot;
  const model::DisruptionBudgets budgets(before.disruption_budgets, before.pods);
  std::vector<int> stopped_pods;
  for (const std::string& name : nodes) {
    auto it = std::find_if(snapshot.nodes.begin(), snapshot.nodes.end(),
                           [&](const model::Node& n) { return n.name == name; });
    if (it == snapshot.nodes.end()) {
      // Worded for both callers: `schedule --interrupt NODE` and `POST /api/schedule?interrupt=`.
      return NotFoundError("interrupt " + name + ": no such node in the scenario");
    }
    auto label = it->labels.find(model::kMachinePoolLabel);
    const PoolState* pool = nullptr;
    for (const auto& p : pools) {
      if (label != it->labels.end() && p.pool->name == label->second) pool = &p;
    }
    if (pool == nullptr) {
      return InvalidArgumentError("interrupt " + name +
                                  ": only nodes of a spot machine pool get interruption notices, "
                                  "and this node's " +
                                  std::string(model::kMachinePoolLabel) +
                                  " label names no machine pool of the scenario");
    }
    if (pool->pool->capacity_type != CapacityType::kSpot) {
      return InvalidArgumentError("interrupt " + name + ": machine pool " + pool->pool->name +
                                  " is on demand; only spot nodes get interruption notices");
    }
    Interruption interruption;
    interruption.node = name;
    interruption.machine_pool = pool->pool->name;
    interruption.stops =
        PlanDrain(before, budgets, name, 0, interruption.notice_seconds * 1000, stopped_pods);
    for (auto& pod : snapshot.pods) {
      if (pod.node_name == name) {
        pod.node_name.clear();
        interruption.pods.push_back(scheduler::PodKey(pod));
      }
    }
    snapshot.nodes.erase(it);
    out.push_back(std::move(interruption));
  }
  return OkStatus();
}

Result<std::vector<PoolState>> PoolStates(const scheduler::ClusterSnapshot& snapshot,
                                          const std::vector<model::MachinePool>& pools,
                                          const Catalog& catalog) {
  std::vector<PoolState> states;
  for (const model::MachinePool& pool : pools) {
    PoolState state;
    state.pool = &pool;
    state.type = catalog.Find(pool.instance_type);
    if (state.type == nullptr) {
      return InvalidArgumentError("MachinePool " + pool.name + ": instance_type \"" +
                                  pool.instance_type + "\" is not in the catalog");
    }
    state.template_node = TemplateNode(pool, *state.type, PoolPrefix(pool.name) + "-template");
    state.node_pool = std::string(model::NodePoolOf(state.template_node, snapshot.node_pools));
    state.price_micros = NodePrice(pool, *state.type);
    state.unusable = Unusable(pool, *state.type);
    states.push_back(std::move(state));
  }
  std::sort(states.begin(), states.end(),
            [](const PoolState& a, const PoolState& b) { return a.pool->name < b.pool->name; });
  return states;
}

void CountCurrent(const scheduler::ClusterSnapshot& snapshot, std::vector<PoolState>& pools) {
  for (PoolState& state : pools) {
    state.current = static_cast<int32_t>(
        std::count_if(snapshot.nodes.begin(), snapshot.nodes.end(), [&](const model::Node& n) {
          auto it = n.labels.find(model::kMachinePoolLabel);
          return it != n.labels.end() && it->second == state.pool->name;
        }));
  }
}

// The jobs (pods alone, gangs together) among the pending pods, in first-fit-decreasing order.
std::vector<std::vector<const PodNeed*>> Jobs(const std::vector<PodNeed>& needs) {
  std::map<std::string, std::vector<const PodNeed*>> gangs;
  std::vector<std::vector<const PodNeed*>> jobs;
  for (const PodNeed& need : needs) {
    if (need.gang.empty()) {
      jobs.push_back({&need});
    } else {
      gangs[need.gang].push_back(&need);
    }
  }
  for (auto& [gang, members] : gangs) jobs.push_back(std::move(members));
  std::vector<std::pair<JobOrder, size_t>> order;
  for (size_t i = 0; i < jobs.size(); ++i) order.emplace_back(OrderOf(jobs[i]), i);
  std::sort(order.begin(), order.end());
  std::vector<std::vector<const PodNeed*>> sorted;
  for (const auto& [key, i] : order) sorted.push_back(std::move(jobs[i]));
  return sorted;
}

void PlanJob(const std::vector<const PodNeed*>& job, Plan& plan, std::set<std::string>& taken) {
  // Pools every pod of the job fits, cheapest node first.
  std::vector<PoolState*> candidates;
  std::vector<std::string> misfits;
  for (PoolState& state : plan.pools) {
    std::string why = state.unusable;
    for (const PodNeed* need : job) {
      if (!why.empty()) break;
      why = StaticMisfit(*need, state);
    }
    if (why.empty()) {
      candidates.push_back(&state);
    } else {
      misfits.push_back(state.pool->name + ": " + why);
    }
  }
  std::stable_sort(
      candidates.begin(), candidates.end(),
      [](const PoolState* a, const PoolState* b) { return a->price_micros < b->price_micros; });
  for (PoolState* state : candidates) {
    if (PackJob(job, *state, taken)) {
      for (const PodNeed* need : job) plan.planned[need->key] = state->pool->name;
      return;
    }
    misfits.push_back(state->pool->name + ": max node group size reached (" +
                      std::to_string(state->pool->max_replicas) + ")");
  }
  std::sort(misfits.begin(), misfits.end());
  std::string why = misfits.empty() ? "no machine pools" : Join(misfits, "; ");
  if (job.size() > 1) why = "gang of " + std::to_string(job.size()) + " pods: " + why;
  for (const PodNeed* need : job) plan.not_fit[need->key] = why;
}

void PlanMinReplicas(Plan& plan, std::set<std::string>& taken) {
  for (PoolState& state : plan.pools) {
    while (state.current + static_cast<int32_t>(state.added.size()) < state.pool->min_replicas &&
           state.unusable.empty()) {
      state.added.push_back(EmptyNode(state, FreshName(state, taken), "min_replicas"));
    }
  }
}

// The snapshot plus every node the plan adds.
scheduler::ClusterSnapshot WithAdded(const scheduler::ClusterSnapshot& base, const Plan& plan) {
  scheduler::ClusterSnapshot out = base;
  for (const PoolState& state : plan.pools) {
    for (const NewNode& node : state.added) {
      out.nodes.push_back(TemplateNode(*state.pool, *state.type, node.name));
    }
  }
  return out;
}

// Drops added nodes the cycle left empty (min_replicas nodes stay). Returns whether any went.
bool DropUnused(const scheduler::CycleResult& cycle, Plan& plan) {
  std::set<std::string> used;
  for (const auto& b : cycle.bindings) used.insert(b.node);
  bool dropped = false;
  for (PoolState& state : plan.pools) {
    auto unused = [&](const NewNode& n) {
      return n.reason != "min_replicas" && !used.contains(n.name);
    };
    size_t before = state.added.size();
    state.added.erase(std::remove_if(state.added.begin(), state.added.end(), unused),
                      state.added.end());
    dropped = dropped || state.added.size() != before;
  }
  return dropped;
}

void Report(const scheduler::ClusterSnapshot& snapshot, const Plan& plan, AutoscaleResult& result) {
  std::map<std::string, std::vector<std::string>> pods_on;
  for (const auto& b : result.cycle.bindings) pods_on[b.node].push_back(b.pod);
  std::set<std::string> busy;
  for (const auto& pod : snapshot.pods) {
    if (!pod.node_name.empty()) busy.insert(pod.node_name);
  }
  for (const auto& [node, pods] : pods_on) busy.insert(node);
  for (const PoolState& state : plan.pools) {
    int32_t total = state.current + static_cast<int32_t>(state.added.size());
    if (!state.added.empty()) {
      ScaleUp up;
      up.machine_pool = state.pool->name;
      up.instance_type = state.type->name;
      up.capacity_type = state.pool->capacity_type;
      up.current = state.current;
      up.target = total;
      bool for_pods = false;
      for (const NewNode& node : state.added) {
        up.nodes.push_back(node.name);
        for (const std::string& pod : pods_on[node.name]) up.pods.push_back(pod);
        for_pods = for_pods || node.reason == "pending pods";
      }
      up.reason = for_pods ? "pending pods" : "min_replicas";
      up.added_hourly_price_micros = state.price_micros * static_cast<int64_t>(state.added.size());
      result.scale_up.push_back(std::move(up));
    }
    // Scale-down: the pool's empty existing nodes above min_replicas, newest (highest name) first.
    std::vector<std::string> empty;
    for (const model::Node& node : snapshot.nodes) {
      auto it = node.labels.find(model::kMachinePoolLabel);
      if (it != node.labels.end() && it->second == state.pool->name && !busy.contains(node.name)) {
        empty.push_back(node.name);
      }
    }
    std::sort(empty.rbegin(), empty.rend());
    int32_t removable = std::max(0, total - state.pool->min_replicas);
    for (size_t i = 0; i < empty.size() && static_cast<int32_t>(i) < removable; ++i) {
      result.scale_down.push_back({state.pool->name, empty[i],
                                   "empty; removed after " +
                                       model::FormatDuration(kScaleDownUnneededSeconds) +
                                       " unneeded"});
    }
    PoolCost cost;
    cost.machine_pool = state.pool->name;
    cost.capacity_type = state.pool->capacity_type;
    cost.nodes = total;
    cost.hourly_micros = state.price_micros * total;
    cost.on_demand_hourly_micros = state.type->on_demand_price_micros * total;
    result.cost.push_back(cost);
  }
  for (const auto& pending : result.cycle.unschedulable) {
    auto not_fit = plan.not_fit.find(pending.pod);
    auto planned = plan.planned.find(pending.pod);
    std::string reason;
    if (not_fit != plan.not_fit.end()) {
      reason = "pod didn't trigger scale-up: " + not_fit->second;
    } else if (planned != plan.planned.end()) {
      reason = "pod didn't trigger scale-up: it fits machine pool " + planned->second +
               ", but the scheduler keeps it pending: " + pending.reason;
    } else {
      reason = "pod didn't trigger scale-up: " + pending.reason;
    }
    result.not_scaled.push_back({pending.pod, reason});
  }
}

int64_t RequestMilli(const model::PodScheduling& pod, const char* resource) {
  auto it = pod.requests.find(resource);
  return it == pod.requests.end() ? 0 : it->second.MilliValue();
}

// The pod's dominant share of the node, in parts per million (at most one million).
int64_t DominantSharePpm(const model::PodScheduling& pod, const model::Node& node) {
  int64_t share = 0;
  for (const char* resource : {kGpu, "cpu", "memory"}) {
    auto it = node.allocatable.find(resource);
    int64_t have = it == node.allocatable.end() ? 0 : it->second.MilliValue();
    int64_t want = RequestMilli(pod, resource);
    if (resource == std::string_view(kGpu)) {
      auto fraction = pod.annotations.find(scheduler::kGpuFractionAnnotation);
      auto f = fraction == pod.annotations.end() ? Result<model::Quantity>(NotFoundError(""))
                                                 : model::Quantity::Parse(fraction->second);
      if (f.ok()) want = f->MilliValue();
    }
    if (have > 0 && want > 0) {
      // Memory in milli-bytes reaches 1e15: scale both down before multiplying by a million.
      while (want > INT64_MAX / 1'000'000) {
        want >>= 10;
        have >>= 10;
      }
      if (have > 0) share = std::max(share, want * 1'000'000 / have);
    }
  }
  return std::min<int64_t>(share, 1'000'000);
}

std::vector<QueueCost> CostByQueue(const scheduler::ClusterSnapshot& cluster, const Plan& plan,
                                   const scheduler::CycleResult& cycle) {
  std::map<std::string, int64_t> price_of_pool;
  for (const PoolState& state : plan.pools) price_of_pool[state.pool->name] = state.price_micros;
  std::map<std::string, const model::PodScheduling*> pods;
  for (const auto& pod : cluster.pods) pods[scheduler::PodKey(pod)] = &pod;
  std::set<std::string> evicted;
  for (const auto& e : cycle.evictions) evicted.insert(e.pod);
  // Node -> (queue, pod) running there after the cycle.
  std::map<std::string, std::vector<std::pair<std::string, const model::PodScheduling*>>> on_node;
  for (const auto& pod : cluster.pods) {
    if (pod.node_name.empty() || evicted.contains(scheduler::PodKey(pod))) continue;
    auto queue = pod.labels.find(scheduler::kQueueLabel);
    on_node[pod.node_name].push_back(
        {queue == pod.labels.end() ? std::string(scheduler::kDefaultQueue) : queue->second, &pod});
  }
  for (const auto& b : cycle.bindings) on_node[b.node].push_back({b.queue, pods[b.pod]});
  std::map<std::string, int64_t> cost;
  for (const model::Node& node : cluster.nodes) {
    auto label = node.labels.find(model::kMachinePoolLabel);
    if (label == node.labels.end() || !price_of_pool.contains(label->second)) continue;
    const int64_t price = price_of_pool[label->second];
    int64_t paid = 0;
    for (const auto& [queue, pod] : on_node[node.name]) {
      int64_t share = price * DominantSharePpm(*pod, node) / 1'000'000;
      cost[queue] += share;
      paid += share;
    }
    cost[kIdleCostQueue] += std::max<int64_t>(0, price - paid);
  }
  std::vector<QueueCost> out;
  for (const auto& [queue, micros] : cost) out.push_back({queue, micros});
  return out;  // "(idle)" sorts first: '(' is below every letter and digit
}

}  // namespace

model::Node TemplateNode(const model::MachinePool& pool, const model::InstanceType& type,
                         const std::string& node_name) {
  model::Node node;
  node.name = node_name;
  node.labels = pool.labels;
  node.labels[model::kMachinePoolLabel] = pool.name;
  node.labels[model::kInstanceTypeLabel] = type.name;
  node.labels[model::kCapacityTypeLabel] = std::string(model::CapacityTypeName(pool.capacity_type));
  node.labels["kubernetes.io/hostname"] = node_name;
  node.labels["kubernetes.io/os"] = "linux";
  if (type.gpu.count > 0) {
    node.labels["nvidia.com/gpu.product"] = type.gpu.product;
    node.labels["nvidia.com/gpu.count"] = std::to_string(type.gpu.count);
    node.labels["nvidia.com/gpu.memory"] = std::to_string(type.gpu.memory.Value() / kMi);
    node.labels.emplace("node-type", "gpu");
  }
  node.taints = pool.taints;
  int64_t cpu = type.cpu.MilliValue();
  int64_t memory = type.memory.Value();
  int64_t disk = int64_t{pool.disk_size_gib > 0 ? pool.disk_size_gib : model::kDefaultDiskSizeGib};
  node.capacity["cpu"] = model::Quantity::FromMilli(cpu);
  node.capacity["memory"] = *model::Quantity::Parse(std::to_string(memory / kMi) + "Mi");
  node.capacity["ephemeral-storage"] = *model::Quantity::Parse(std::to_string(disk) + "Gi");
  node.capacity["pods"] = model::Quantity::FromUnits(kTemplateMaxPods);
  if (type.gpu.count > 0) node.capacity[kGpu] = model::Quantity::FromUnits(type.gpu.count);
  node.allocatable = node.capacity;
  node.allocatable["cpu"] = model::Quantity::FromMilli(cpu - ReservedCpuMilli(cpu));
  int64_t allocatable_memory = std::max<int64_t>(0, memory - ReservedMemoryBytes());
  node.allocatable["memory"] =
      *model::Quantity::Parse(std::to_string(allocatable_memory / kMi) + "Mi");
  return node;
}

Status CheckInstanceType(const model::MachinePool& pool, const Catalog& catalog,
                         std::string_view prefix) {
  if (catalog.Find(pool.instance_type) != nullptr) return OkStatus();
  std::vector<std::string> known;
  for (const auto& t : catalog.types()) known.push_back(t.name);
  return InvalidArgumentError(std::string(prefix) + "instance_type: \"" + pool.instance_type +
                              "\" is not in the instance catalog" +
                              DidYouMean(pool.instance_type, known));
}

Result<std::vector<model::MachinePool>> MachinePoolsFromManifests(
    const std::vector<Json>& manifests, const Catalog& catalog) {
  std::vector<model::MachinePool> pools;
  std::set<std::string> names;
  for (const Json& manifest : manifests) {
    auto pool = model::MachinePoolFromManifest(manifest);
    std::string name = manifest.is_object() && manifest.contains("metadata") &&
                               manifest["metadata"].is_object() &&
                               manifest["metadata"].value("name", Json()).is_string()
                           ? manifest["metadata"]["name"].get<std::string>()
                           : std::string();
    if (!pool.ok()) {
      return InvalidArgumentError("MachinePool " + name + ": " + pool.status().message());
    }
    RETURN_IF_ERROR(CheckInstanceType(*pool, catalog, "MachinePool " + pool->name + ": spec."));
    const model::InstanceType* type = catalog.Find(pool->instance_type);
    if (!names.insert(pool->name).second) {
      return InvalidArgumentError("MachinePool " + pool->name + ": defined twice");
    }
    model::ApplyDefaultTaints(*type, *pool);
    pools.push_back(std::move(pool).value());
  }
  std::sort(pools.begin(), pools.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return pools;
}

Result<AutoscaleResult> Simulate(const scheduler::ClusterSnapshot& snapshot,
                                 const std::vector<model::MachinePool>& pools,
                                 const Catalog& catalog, const AutoscaleOptions& options) {
  AutoscaleResult result;
  result.has_machine_pools = !pools.empty();
  Plan plan;
  ASSIGN_OR_RETURN(plan.pools, PoolStates(snapshot, pools, catalog));
  scheduler::ClusterSnapshot base = snapshot;
  RETURN_IF_ERROR(Interrupt(options.interrupt_nodes, plan.pools, base, result.interruptions));
  CountCurrent(base, plan.pools);

  const scheduler::Scheduler scheduler(options.scheduler);
  scheduler::CycleResult first = scheduler.RunCycle(base);
  std::set<std::string> pending;
  for (const auto& p : first.unschedulable) pending.insert(p.pod);
  std::vector<PodNeed> needs;
  for (const auto& pod : base.pods) {
    if (pod.node_name.empty() && pending.contains(scheduler::PodKey(pod))) {
      needs.push_back(NeedOf(pod));
    }
  }
  std::set<std::string> taken;  // names a new node must not get (interrupted ones included)
  for (const auto& node : snapshot.nodes) taken.insert(node.name);
  taken.insert(options.reserved_names.begin(), options.reserved_names.end());
  for (const auto& job : Jobs(needs)) PlanJob(job, plan, taken);
  PlanMinReplicas(plan, taken);

  // Re-decide with the new nodes until every added node is used (a few rounds at most: each
  // round only removes nodes).
  result.cycle = scheduler.RunCycle(WithAdded(base, plan));
  for (int round = 0; round < 4 && DropUnused(result.cycle, plan); ++round) {
    result.cycle = scheduler.RunCycle(WithAdded(base, plan));
  }
  // The interrupted nodes' pods were told to stop during the notice (drain.h), at the latest
  // evicted by the NoExecute taint at its deadline.
  std::vector<scheduler::Eviction> evictions;
  for (const Interruption& i : result.interruptions) {
    for (const PodStop& stop : i.stops) {
      evictions.push_back({stop.pod, i.node, scheduler::EvictionReason::kNoExecute,
                           "spot interruption (node terminated " +
                               model::FormatDuration(i.notice_seconds) +
                               " after the notice): " + DescribeStop(stop)});
    }
  }
  result.cycle.evictions.insert(result.cycle.evictions.begin(), evictions.begin(), evictions.end());
  Report(base, plan, result);
  result.queue_cost = CostByQueue(WithAdded(base, plan), plan, result.cycle);
  return result;
}

Result<AutoscaleResult> SimulateScenario(const scheduler::Scenario& scenario,
                                         const Catalog& catalog, const AutoscaleOptions& options) {
  if (scenario.machine_pools.empty() && options.interrupt_nodes.empty()) {
    AutoscaleResult result;
    result.cycle = scheduler::Schedule(scenario, options.scheduler);
    return result;
  }
  ASSIGN_OR_RETURN(auto pools, MachinePoolsFromManifests(scenario.machine_pools, catalog));
  return Simulate(scheduler::SwitchedSnapshot(scenario), pools, catalog, options);
}

}  // namespace gpupool::autoscaler
