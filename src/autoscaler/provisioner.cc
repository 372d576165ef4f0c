#include "autoscaler/provisioner.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>

#include "model/duration.h"

namespace gpupool::autoscaler {
namespace {

const model::MachinePool* MachinePoolOf(const model::Node& node,
                                        const std::vector<model::MachinePool>& pools) {
  auto label = node.labels.find(model::kMachinePoolLabel);
  if (label == node.labels.end()) return nullptr;
  for (const auto& pool : pools) {
    if (pool.name == label->second) return &pool;
  }
  return nullptr;
}

bool HasTaint(const model::Node& node, std::string_view key, model::TaintEffect effect) {
  return std::any_of(node.taints.begin(), node.taints.end(),
                     [&](const model::Taint& t) { return t.key == key && t.effect == effect; });
}

void RemoveTaints(model::Node& node, std::string_view key) {
  std::erase_if(node.taints, [&](const model::Taint& t) { return t.key == key; });
}

// A millisecond timestamp kept in an annotation; nullopt when absent or not a number.
std::optional<int64_t> AnnotationMs(const model::Node& node, const char* key) {
  auto it = node.annotations.find(key);
  if (it == node.annotations.end()) return std::nullopt;
  int64_t value = 0;
  auto [end, error] =
      std::from_chars(it->second.data(), it->second.data() + it->second.size(), value);
  if (error != std::errc() || end != it->second.data() + it->second.size()) return std::nullopt;
  return value;
}

// Per node, the lifecycle transitions of this step. Returns false when the node is removed.
struct Lifecycle {
  const ProvisionOptions& options;
  int64_t now_ms;
  const std::map<std::string, int>& pods_on;
  std::map<std::string, int>& live_nodes;  // per machine pool, nodes not interrupted or removed
  ProvisionDecision& decision;
  std::vector<std::string>& interrupted;

  // `node` is updated in place; returns whether it stays.
  bool Step(model::Node& node, const model::MachinePool& pool, bool& changed) {
    const int pods = pods_on.contains(node.name) ? pods_on.at(node.name) : 0;
    std::optional<int64_t> ready_at = AnnotationMs(node, kReadyAtAnnotation);
    if (ready_at && now_ms >= *ready_at) {
      RemoveTaints(node, kNotReadyTaintKey);
      node.annotations.erase(kReadyAtAnnotation);
      Event(node, pool, "ready");
      changed = true;
      ready_at.reset();
    }
    if (std::optional<int64_t> deadline = AnnotationMs(node, kInterruptionDeadlineAnnotation)) {
      if (now_ms >= *deadline &&
          !HasTaint(node, kInterruptionTaintKey, model::TaintEffect::kNoExecute)) {
        node.taints.push_back(
            model::Taint{kInterruptionTaintKey, "true", model::TaintEffect::kNoExecute});
        Event(node, pool, "interruption deadline: tainted NoExecute, its pods are evicted");
        changed = true;
      }
      if (HasTaint(node, kInterruptionTaintKey, model::TaintEffect::kNoExecute) && pods == 0) {
        Remove(node, pool, "terminated: spot interruption");
        return false;
      }
      if (pool.capacity_type == model::CapacityType::kSpot) interrupted.push_back(node.name);
      return true;
    }
    if (ready_at) return true;  // still launching
    if (pods > 0) {
      changed = node.annotations.erase(kEmptySinceAnnotation) > 0 || changed;
      return true;
    }
    std::optional<int64_t> empty_since = AnnotationMs(node, kEmptySinceAnnotation);
    if (!empty_since) {
      node.annotations[kEmptySinceAnnotation] = std::to_string(now_ms);
      changed = true;
      return true;
    }
    if (now_ms - *empty_since >= options.scale_down_after_ms &&
        live_nodes[pool.name] > pool.min_replicas) {
      --live_nodes[pool.name];
      Remove(node, pool,
             "removed: empty for " + model::FormatDuration(options.scale_down_after_ms / 1000));
      return false;
    }
    return true;
  }

  void Event(const model::Node& node, const model::MachinePool& pool, std::string what) {
    decision.events.push_back({node.name, pool.name, std::move(what)});
  }
  void Remove(const model::Node& node, const model::MachinePool& pool, std::string why) {
    decision.deletes.push_back(node.name);
    Event(node, pool, std::move(why));
  }
};

}  // namespace

scheduler::ClusterSnapshot AfterCycle(const scheduler::ClusterSnapshot& before,
                                      const scheduler::CycleResult& cycle) {
  scheduler::ClusterSnapshot after = before;
  std::map<std::string, std::string> bound;
  for (const auto& b : cycle.bindings) bound[b.pod] = b.node;
  for (const auto& e : cycle.evictions) bound[e.pod] = "";
  for (auto& pod : after.pods) {
    auto it = bound.find(scheduler::PodKey(pod));
    if (it != bound.end()) pod.node_name = it->second;
  }
  return after;
}

Result<ProvisionDecision> Reconcile(const scheduler::ClusterSnapshot& cluster,
                                    const std::vector<model::MachinePool>& pools,
                                    const Catalog& catalog, int64_t now_ms,
                                    const ProvisionOptions& options) {
  ProvisionDecision decision;
  std::map<std::string, int> pods_on;
  for (const auto& pod : cluster.pods) {
    if (!pod.node_name.empty()) ++pods_on[pod.node_name];
  }
  std::map<std::string, int> live_nodes;
  for (const auto& node : cluster.nodes) {
    const model::MachinePool* pool = MachinePoolOf(node, pools);
    if (pool != nullptr && !AnnotationMs(node, kInterruptionDeadlineAnnotation)) {
      ++live_nodes[pool->name];
    }
  }
  std::vector<std::string> interrupted;
  Lifecycle lifecycle{options, now_ms, pods_on, live_nodes, decision, interrupted};

  // Planning sees the cluster as it will be: removed nodes gone, launching nodes as capacity.
  scheduler::ClusterSnapshot planning = cluster;
  planning.nodes.clear();
  for (const model::Node& original : cluster.nodes) {
    const model::MachinePool* pool = MachinePoolOf(original, pools);
    if (pool == nullptr) {
      planning.nodes.push_back(original);
      continue;
    }
    model::Node node = original;
    bool changed = false;
    if (!lifecycle.Step(node, *pool, changed)) continue;
    if (changed) decision.upserts.push_back(node);
    RemoveTaints(node, kNotReadyTaintKey);
    planning.nodes.push_back(std::move(node));
  }

  AutoscaleOptions plan_options;
  plan_options.scheduler = options.scheduler;
  plan_options.interrupt_nodes = interrupted;  // their replacements launch at the notice
  ASSIGN_OR_RETURN(AutoscaleResult plan, Simulate(planning, pools, catalog, plan_options));
  for (const ScaleUp& up : plan.scale_up) {
    const model::MachinePool* pool = nullptr;
    for (const auto& p : pools) {
      if (p.name == up.machine_pool) pool = &p;
    }
    for (const std::string& name : up.nodes) {
      model::Node node = TemplateNode(*pool, *catalog.Find(pool->instance_type), name);
      node.taints.push_back(model::Taint{kNotReadyTaintKey, "", model::TaintEffect::kNoSchedule});
      node.annotations[kReadyAtAnnotation] = std::to_string(now_ms + options.provision_delay_ms);
      decision.upserts.push_back(std::move(node));
      decision.events.push_back({name, pool->name, "launched (" + up.reason + ")"});
    }
  }
  return decision;
}

Result<model::Node> BeginInterruption(const model::Node& node,
                                      const std::vector<model::MachinePool>& pools,
                                      int64_t now_ms) {
  const model::MachinePool* pool = MachinePoolOf(node, pools);
  if (pool == nullptr || pool->capacity_type != model::CapacityType::kSpot) {
    return FailedPreconditionError("node " + node.name +
                                   " is not in a spot machine pool; only spot nodes get "
                                   "interruption notices");
  }
  if (node.annotations.contains(kInterruptionDeadlineAnnotation)) {
    return FailedPreconditionError("node " + node.name + " has already been given its notice");
  }
  model::Node out = node;
  out.taints.push_back(
      model::Taint{kInterruptionTaintKey, "true", model::TaintEffect::kNoSchedule});
  out.annotations[kInterruptionDeadlineAnnotation] =
      std::to_string(now_ms + kSpotInterruptionNoticeSeconds * 1000);
  return out;
}

}  // namespace gpupool::autoscaler
