#include "controller/evictions.h"

#include <algorithm>

namespace gpupool::controller {

void EvictionsInFlight::Asked(const std::string& key, const std::string& node,
                              std::string requeue_message) {
  in_flight_[key] = {node, std::move(requeue_message)};
  asked_this_cycle_[node].insert(key);
  refused_until_.erase(key);
}

std::optional<std::string> EvictionsInFlight::Evicted(const std::string& key) {
  auto it = in_flight_.find(key);
  if (it == in_flight_.end()) return std::nullopt;
  std::string message = std::move(it->second.requeue_message);
  in_flight_.erase(it);
  return message;
}

std::string EvictionsInFlight::Refused(const backend::RefusedEviction& refused, int64_t now_ms) {
  in_flight_.erase(refused.key);
  refused_until_[refused.key] = now_ms + refused_backoff_ms_;
  return "kept running: the cluster refused its eviction (" + refused.reason +
         "); not a victim again for " + std::to_string(refused_backoff_ms_ / 1000) + " s";
}

bool EvictionsInFlight::Protected(const std::string& key, int64_t now_ms) const {
  if (in_flight_.contains(key)) return true;
  auto it = refused_until_.find(key);
  return it != refused_until_.end() && now_ms < it->second;
}

std::vector<scheduler::Binding> EvictionsInFlight::HoldBindings(
    scheduler::CycleResult& cycle, const scheduler::ClusterSnapshot& snapshot) {
  std::vector<scheduler::Binding> held;
  if (asked_this_cycle_.empty()) return held;
  std::map<std::string, std::string> gang_of;  // pod key -> gang label
  for (const auto& pod : snapshot.pods) {
    auto gang = pod.labels.find(scheduler::kGangLabel);
    if (gang != pod.labels.end()) gang_of[scheduler::PodKey(pod)] = gang->second;
  }
  // The gangs with a member on a node being freed wait for all those nodes' victims.
  std::map<std::string, std::set<std::string>> waits;  // pod key or "gang:" + label -> victims
  auto unit = [&](const std::string& pod) {
    auto gang = gang_of.find(pod);
    return gang == gang_of.end() ? pod : "gang:" + gang->second;
  };
  for (const auto& binding : cycle.bindings) {
    auto victims = asked_this_cycle_.find(binding.node);
    if (victims == asked_this_cycle_.end()) continue;
    waits[unit(binding.pod)].insert(victims->second.begin(), victims->second.end());
  }
  asked_this_cycle_.clear();
  auto kept = std::stable_partition(cycle.bindings.begin(), cycle.bindings.end(),
                                    [&](const auto& b) { return !waits.contains(unit(b.pod)); });
  for (auto it = kept; it != cycle.bindings.end(); ++it) {
    held_[it->pod] = waits[unit(it->pod)];
    held.push_back(std::move(*it));
  }
  cycle.bindings.erase(kept, cycle.bindings.end());
  return held;
}

void EvictionsInFlight::LeaveOutHeld(scheduler::ClusterSnapshot& snapshot) const {
  if (held_.empty()) return;
  // ClusterSnapshot::pod_ids, when set, stays parallel to the pods.
  const bool ids = snapshot.pod_ids.size() == snapshot.pods.size();
  size_t kept = 0;
  for (size_t i = 0; i < snapshot.pods.size(); ++i) {
    const model::PodScheduling& pod = snapshot.pods[i];
    if (pod.node_name.empty() && held_.contains(scheduler::PodKey(pod))) continue;
    if (kept != i) {
      snapshot.pods[kept] = std::move(snapshot.pods[i]);
      if (ids) snapshot.pod_ids[kept] = snapshot.pod_ids[i];
    }
    ++kept;
  }
  snapshot.pods.erase(snapshot.pods.begin() + static_cast<std::ptrdiff_t>(kept),
                      snapshot.pods.end());
  if (ids) snapshot.pod_ids.resize(kept);
}

void EvictionsInFlight::Prune(const std::set<std::string>& running, int64_t now_ms) {
  std::erase_if(in_flight_, [&](const auto& entry) { return !running.contains(entry.first); });
  std::erase_if(refused_until_, [&](const auto& entry) {
    return now_ms >= entry.second || !running.contains(entry.first);
  });
  // A held pod goes back to the cycles once none of the evictions it waits for is in flight.
  std::erase_if(held_, [&](const auto& entry) {
    return std::none_of(entry.second.begin(), entry.second.end(),
                        [&](const std::string& key) { return in_flight_.contains(key); });
  });
}

void EvictionsInFlight::Clear() {
  in_flight_.clear();
  refused_until_.clear();
  asked_this_cycle_.clear();
  held_.clear();
}

}  // namespace gpupool::controller
