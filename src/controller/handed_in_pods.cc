#include "controller/handed_in_pods.h"

#include <algorithm>
#include <map>

namespace gpupool::controller {

namespace {

std::string Label(const model::PodScheduling& pod, const char* key) {
  auto it = pod.labels.find(key);
  return it == pod.labels.end() ? "" : it->second;
}

// Gang -> why its pending members wait, for gangs with fewer pods than their gang-min.
std::map<std::string, std::string> IncompleteGangs(const std::vector<HandedInMemo::Pod*>& pods) {
  struct Count {
    int64_t members = 0;
    int64_t min = 0;
  };
  std::map<std::string, Count> gangs;
  for (const HandedInMemo::Pod* pod : pods) {
    if (pod->gang.empty()) continue;
    Count& count = gangs[pod->gang];
    ++count.members;
    count.min = std::max(count.min, pod->gang_min);
  }
  std::map<std::string, std::string> incomplete;
  for (const auto& [gang, count] : gangs) {
    if (count.members >= count.min) continue;
    incomplete[gang] = "waiting for gang " + gang + ": " + std::to_string(count.members) +
                       " of the " + std::to_string(count.min) + " pods its " +
                       scheduler::kGangMinLabel + " asks for exist";
  }
  return incomplete;
}

}  // namespace

void HandedInMemo::BeginStep(const scheduler::ClusterSettings& settings) {
  ++step_;
  seen_ = 0;
  next_ = 0;
  new_order_.clear();
  if (settings.node_pools != settings_.node_pools || settings.cpu_quota != settings_.cpu_quota ||
      settings.over_quota != settings_.over_quota) {
    pods_.clear();  // all anew: their new ids still grow along the order
    latest_.clear();
    order_.clear();
    settings_ = settings;
  }
}

HandedInMemo::Pod& HandedInMemo::Seen(Pod& entry) {
  if (entry.seen == step_) return entry;  // handed in twice: its first place stands
  entry.seen = step_;
  ++seen_;
  entry.place = new_order_.size();
  new_order_.push_back(&entry);
  return entry;
}

HandedInMemo::Pod& HandedInMemo::Find(const std::shared_ptr<const backend::HandedInPod>& pod) {
  if (next_ < order_.size() && order_[next_]->pod.get() == pod.get()) {
    return Seen(*order_[next_++]);  // where it was in the last step's order
  }
  auto [it, inserted] = pods_.try_emplace(pod.get());
  Pod& entry = it->second;
  if (!inserted) {
    // Carry on from its place: the pods the last step had before it are gone or moved.
    if (entry.seen != step_ && entry.place >= next_) next_ = entry.place + 1;
    return Seen(entry);
  }
  Seen(entry);
  entry.pod = pod;
  entry.key = scheduler::PodKey(pod->pod);
  entry.handed_in_key = backend::HandedInKey(pod->ref);
  entry.gang = Label(pod->pod, scheduler::kGangLabel);
  if (!entry.gang.empty()) {
    auto min = scheduler::ParseGangMin(Label(pod->pod, scheduler::kGangMinLabel));
    if (min.ok()) entry.gang_min = *min;  // malformed: the scheduler says so
  }
  auto [last, first] = latest_.try_emplace(entry.handed_in_key, pod.get());
  auto before = first ? pods_.end() : pods_.find(last->second);
  if (before != pods_.end()) {
    entry.id = before->second.id + 1;  // changed: the next id of its place in the order
    entry.raised = before->second.raised;
  } else {
    entry.id = next_serial_++ << 32;
  }
  last->second = pod.get();
  return entry;
}

uint64_t HandedInMemo::Id(Pod& pod, bool raised) {
  if (raised == pod.raised) return pod.id;
  pod.raised = raised;
  // The latest object of its pod continues its ids (as a change would); another (the backend
  // handed in two under one key) takes a new one, never used before.
  auto last = latest_.find(pod.handed_in_key);
  pod.id =
      last != latest_.end() && last->second == pod.pod.get() ? pod.id + 1 : next_serial_++ << 32;
  return pod.id;
}

void HandedInMemo::EndStep() {
  if (seen_ != pods_.size()) {  // some gone: each was in the last step's order, once
    for (Pod* entry : order_) {
      if (entry->seen == step_) continue;
      const backend::HandedInPod* gone = entry->pod.get();
      auto last = latest_.find(entry->handed_in_key);
      if (last != latest_.end() && last->second == gone) latest_.erase(last);
      pods_.erase(gone);
    }
  }
  order_.swap(new_order_);
  new_order_.clear();
}

HandedIn AddHandedInPods(HandedInPods pods, const TaskPodIndex& tasks,
                         const std::function<bool(const std::string&)>& protect, HandedInMemo& memo,
                         scheduler::ClusterSnapshot& snapshot) {
  HandedIn in;
  in.pods = std::move(pods);
  std::vector<HandedInMemo::Pod*> kept;  // entries of memo: their addresses stay for the step
  kept.reserve(in.pods.size());
  for (const auto& pod : in.pods) kept.push_back(&memo.Find(pod));
  const std::map<std::string, std::string> incomplete = IncompleteGangs(kept);
  // Room for all at once: at 20,000 pods handed in, growing the vector step by step moved them
  // all again several times per step.
  snapshot.pods.reserve(snapshot.pods.size() + in.pods.size());
  snapshot.pod_ids.resize(snapshot.pods.size(), 0);  // the tasks' pods: not tracked
  snapshot.pod_ids.reserve(snapshot.pods.size() + in.pods.size());
  in.by_key.reserve(in.pods.size());
  for (size_t i = 0; i < in.pods.size(); ++i) {
    const backend::HandedInPod& pod = *in.pods[i];
    HandedInMemo::Pod& memo_pod = *kept[i];
    if (!pod.unsupported.empty()) continue;  // stays pending, saying why (ActOnHandedInPods)
    if (pod.pod.node_name.empty() && !incomplete.empty()) {
      auto waiting = incomplete.find(memo_pod.gang);
      if (waiting != incomplete.end()) {
        in.held.emplace_back(i, waiting->second);
        continue;
      }
    }
    if (tasks.contains(memo_pod.key) || in.by_key.contains(memo_pod.key)) continue;  // a task's
    in.by_key.emplace(memo_pod.key, i);
    const bool raised = !pod.pod.node_name.empty() && protect(memo_pod.handed_in_key);
    snapshot.pods.push_back(pod.pod);
    if (raised) {
      auto& priority = snapshot.pods.back().priority;  // being evicted, or refused lately
      priority = std::max(priority.value_or(0), scheduler::kNonPreemptiblePriority);
    }
    snapshot.pod_ids.push_back(memo.Id(memo_pod, raised));
  }
  memo.EndStep();
  return in;
}

void ActOnHandedInPods(backend::Backend& backend, const HandedIn& in,
                       const scheduler::CycleResult& cycle) {
  std::map<std::string, std::vector<backend::PodBinding>> gangs;  // gang (or pod) -> bindings
  for (const auto& binding : cycle.bindings) {
    auto it = in.by_key.find(binding.pod);
    if (it == in.by_key.end()) continue;
    const backend::HandedInPod& pod = *in.pods[it->second];
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
    if (it != in.by_key.end() && in.pods[it->second]->pod.node_name.empty()) {
      report(*in.pods[it->second], pending.reason);
    }
  }
  for (const auto& pod : in.pods) {
    if (!pod->unsupported.empty()) report(*pod, pod->unsupported);
  }
  for (const auto& [index, message] : in.held) report(*in.pods[index], message);
}

}  // namespace gpupool::controller
