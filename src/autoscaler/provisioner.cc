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

using Json = nlohmann::ordered_json;

Json DrainJson(const model::Node& node) {
  auto it = node.annotations.find(kDrainAnnotation);
  if (it == node.annotations.end()) return Json::object();
  Json parsed = Json::parse(it->second, nullptr, false);
  return parsed.is_object() ? parsed : Json::object();
}

// This step's drain of an interrupted node before its deadline: the pods told to stop now, and
// those a budget keeps (each recorded once in gpupool.io/drain, with an event).
struct Drainer {
  const scheduler::ClusterSnapshot& cluster;
  const model::DisruptionBudgets budgets;
  std::set<std::string> told;  // pods told to stop, on every node (disrupted for the budgets)
  ProvisionDecision& decision;

  Drainer(const scheduler::ClusterSnapshot& c, ProvisionDecision& d)
      : cluster(c), budgets(c.disruption_budgets, c.pods), decision(d) {
    // A pod told to stop counts as disrupted while it is still there (once evicted it is
    // pending, and running again elsewhere it is healthy again).
    std::map<std::string, std::string> bound;
    for (const model::PodScheduling& pod : c.pods) bound[scheduler::PodKey(pod)] = pod.node_name;
    for (const model::Node& node : c.nodes) {
      for (const DrainEntry& e : DrainEntries(node)) {
        if (e.told_ms && bound[e.pod] == node.name) told.insert(e.pod);
      }
    }
  }

  void Step(model::Node& node, const model::MachinePool& pool, int64_t deadline_ms, int64_t now_ms,
            bool& changed) {
    auto stopped = [&](int i) { return told.contains(scheduler::PodKey(cluster.pods[i])); };
    DrainDecision step = DecideDrain(cluster, budgets, node.name, deadline_ms, now_ms, stopped);
    if (step.stop.empty() && step.kept.empty()) return;
    Json drain = DrainJson(node);
    for (const auto& [pod, why] : step.kept) {
      if (drain.contains(pod)) continue;
      drain[pod] = {{"kept", why}};
      decision.events.push_back({node.name, pool.name, "pod " + pod + " kept running: " + why});
    }
    for (PodStop& stop : step.stop) {
      if (drain.contains(stop.pod) && drain[stop.pod].contains("kept")) {
        stop.kept_by = drain[stop.pod]["kept"].get<std::string>();
      }
      const std::string why = DescribeStop(stop);
      drain[stop.pod] = {{"told", stop.told_ms}, {"end", stop.end_ms}, {"why", why}};
      decision.events.push_back({node.name, pool.name, "pod " + stop.pod + " " + why});
      told.insert(stop.pod);
      decision.stops.push_back(std::move(stop));
    }
    node.annotations[kDrainAnnotation] = drain.dump();
    changed = true;
  }
};

// Per node, the lifecycle transitions of this step. Returns false when the node is removed.
struct Lifecycle {
  const ProvisionOptions& options;
  int64_t now_ms;
  const std::map<std::string, int>& pods_on;
  std::map<std::string, int>& live_nodes;  // per machine pool, nodes not interrupted or removed
  ProvisionDecision& decision;
  std::vector<std::string>& interrupted;
  std::vector<std::string>& removable;  // empty long enough: removed unless the plan uses them

  // `node` is updated in place; returns whether it stays in planning.
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
      // Removed after planning, unless the plan puts pods there (a replacement launched for an
      // interrupted node's pods is empty until they leave it).
      --live_nodes[pool.name];
      removable.push_back(node.name);
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

std::optional<int64_t> AnnotationMs(const model::Node& node, const char* key) {
  auto it = node.annotations.find(key);
  if (it == node.annotations.end()) return std::nullopt;
  int64_t value = 0;
  auto [end, error] =
      std::from_chars(it->second.data(), it->second.data() + it->second.size(), value);
  if (error != std::errc() || end != it->second.data() + it->second.size()) return std::nullopt;
  return value;
}

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
  std::vector<std::string> interrupted, removable;
  Lifecycle lifecycle{options, now_ms, pods_on, live_nodes, decision, interrupted, removable};
  Drainer drainer(cluster, decision);

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
    const std::optional<int64_t> deadline = AnnotationMs(node, kInterruptionDeadlineAnnotation);
    if (deadline && now_ms < *deadline) drainer.Step(node, *pool, *deadline, now_ms, changed);
    if (!lifecycle.Step(node, *pool, changed)) continue;
    if (changed) decision.upserts.push_back(node);
    RemoveTaints(node, kNotReadyTaintKey);
    planning.nodes.push_back(std::move(node));
  }

  AutoscaleOptions plan_options;
  plan_options.scheduler = options.scheduler;
  plan_options.interrupt_nodes = interrupted;  // their replacements launch at the notice
  // A node terminated in this step keeps its name out of this step's launches.
  for (const model::Node& node : cluster.nodes) plan_options.reserved_names.push_back(node.name);
  ASSIGN_OR_RETURN(AutoscaleResult plan, Simulate(planning, pools, catalog, plan_options));
  std::set<std::string> used;
  for (const auto& binding : plan.cycle.bindings) used.insert(binding.node);
  for (const std::string& name : removable) {
    if (used.contains(name)) continue;
    std::erase_if(decision.upserts, [&](const model::Node& n) { return n.name == name; });
    const model::Node& node = *std::find_if(planning.nodes.begin(), planning.nodes.end(),
                                            [&](const model::Node& n) { return n.name == name; });
    lifecycle.Remove(
        node, *MachinePoolOf(node, pools),
        "removed: empty for " + model::FormatDuration(options.scale_down_after_ms / 1000));
  }
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

std::vector<DrainEntry> DrainEntries(const model::Node& node) {
  std::vector<DrainEntry> out;
  const Json drain = DrainJson(node);  // items() must not outlive it
  for (const auto& [pod, entry] : drain.items()) {
    if (!entry.is_object()) continue;
    DrainEntry e;
    e.pod = pod;
    if (entry.contains("told") && entry["told"].is_number_integer() && entry.contains("end") &&
        entry["end"].is_number_integer()) {
      e.told_ms = entry["told"].get<int64_t>();
      e.end_ms = entry["end"].get<int64_t>();
      e.why = entry.value("why", "");
    } else {
      e.why = entry.value("kept", "");
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::string> DrainedPods(const model::Node& node, int64_t now_ms) {
  std::vector<std::string> out;
  for (const DrainEntry& e : DrainEntries(node)) {
    if (e.told_ms && e.end_ms <= now_ms) out.push_back(e.pod);
  }
  return out;
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
