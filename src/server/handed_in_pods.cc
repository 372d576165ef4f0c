#include "server/handed_in_pods.h"

#include <algorithm>
#include <map>

namespace gpupool::server {

HandedIn AddHandedInPods(const backend::Backend& backend, const TaskPodIndex& tasks,
                         scheduler::ClusterSnapshot& snapshot) {
  HandedIn in;
  in.pods = backend.HandedInPods();
  for (size_t i = 0; i < in.pods.size(); ++i) {
    const backend::HandedInPod& pod = in.pods[i];
    if (!pod.unsupported.empty()) continue;  // stays pending, saying why (ActOnHandedInPods)
    std::string key = scheduler::PodKey(pod.pod);
    if (tasks.contains(key) || in.by_key.contains(key)) continue;  // a task's name: never
    in.by_key.emplace(std::move(key), i);
    snapshot.pods.push_back(pod.pod);
    if (!pod.pod.node_name.empty()) {  // never a victim: the loop cannot evict it
      auto& priority = snapshot.pods.back().priority;
      priority = std::max(priority.value_or(0), scheduler::kNonPreemptiblePriority);
    }
  }
  return in;
}

void ActOnHandedInPods(backend::Backend& backend, const HandedIn& in,
                       const scheduler::CycleResult& cycle) {
  std::map<std::string, std::vector<backend::PodBinding>> gangs;  // gang (or pod) -> bindings
  for (const auto& binding : cycle.bindings) {
    auto it = in.by_key.find(binding.pod);
    if (it == in.by_key.end()) continue;
    const backend::HandedInPod& pod = in.pods[it->second];
    if (!pod.pod.node_name.empty()) continue;
    auto gang = pod.pod.labels.find(scheduler::kGangLabel);
    std::string unit = gang != pod.pod.labels.end() ? "gang:" + gang->second : "pod:" + it->first;
    gangs[unit].push_back({pod.ref, binding.node});
  }
  // A refused gang stays pending (nothing of it bound); the next cycle decides again.
  for (const auto& [unit, bindings] : gangs) (void)backend.BindPods(bindings);
  auto report = [&](const backend::HandedInPod& pod, const std::string& message) {
    backend::Unschedulable why;
    why.pod = pod.ref;
    why.message = message;
    backend.ReportUnschedulable(why);
  };
  for (const auto& pending : cycle.unschedulable) {
    auto it = in.by_key.find(pending.pod);
    if (it != in.by_key.end() && in.pods[it->second].pod.node_name.empty()) {
      report(in.pods[it->second], pending.reason);
    }
  }
  for (const auto& pod : in.pods) {
    if (!pod.unsupported.empty()) report(pod, pod.unsupported);
  }
}

}  // namespace gpupool::server
