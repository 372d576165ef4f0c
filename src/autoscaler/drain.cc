#include "autoscaler/drain.h"

#include <algorithm>

#include "common/strings.h"
#include "model/duration.h"

namespace gpupool::autoscaler {

DrainDecision DecideDrain(const scheduler::ClusterSnapshot& cluster,
                          const model::DisruptionBudgets& budgets, const std::string& node,
                          int64_t deadline_ms, int64_t now_ms,
                          const std::function<bool(int)>& stopped) {
  DrainDecision decision;
  std::vector<int> told_now;
  auto gone = [&](int i) {
    return stopped(i) || std::find(told_now.begin(), told_now.end(), i) != told_now.end();
  };
  for (int i = 0; i < static_cast<int>(cluster.pods.size()); ++i) {
    const model::PodScheduling& pod = cluster.pods[i];
    if (pod.node_name != node || stopped(i)) continue;
    const int64_t grace_ms = pod.GracePeriodSeconds() * 1000;
    const int64_t latest_ms = deadline_ms - grace_ms;  // told later, it could not end in time
    const std::vector<int> evicting = {i};
    std::optional<std::string> kept = budgets.Blocks(evicting, gone);
    if (kept && now_ms < latest_ms) {
      decision.kept.emplace_back(scheduler::PodKey(pod), *kept);
      continue;
    }
    PodStop stop;
    stop.pod = scheduler::PodKey(pod);
    stop.node = node;
    stop.told_ms = now_ms;
    stop.end_ms = std::min(now_ms + grace_ms, deadline_ms);
    stop.grace_seconds = pod.GracePeriodSeconds();
    stop.pre_stop = pod.pre_stop;
    if (kept) stop.kept_by = *kept;
    decision.stop.push_back(std::move(stop));
    told_now.push_back(i);
  }
  return decision;
}

std::vector<PodStop> PlanDrain(const scheduler::ClusterSnapshot& cluster,
                               const model::DisruptionBudgets& budgets, const std::string& node,
                               int64_t notice_ms, int64_t deadline_ms,
                               std::vector<int>& stopped_pods) {
  auto stopped = [&](int i) {
    return std::find(stopped_pods.begin(), stopped_pods.end(), i) != stopped_pods.end();
  };
  auto index_of = [&](const std::string& key) {
    for (int i = 0; i < static_cast<int>(cluster.pods.size()); ++i) {
      if (scheduler::PodKey(cluster.pods[i]) == key) return i;
    }
    return -1;
  };
  DrainDecision at_notice = DecideDrain(cluster, budgets, node, deadline_ms, notice_ms, stopped);
  std::vector<PodStop> plan = at_notice.stop;
  for (const PodStop& stop : at_notice.stop) stopped_pods.push_back(index_of(stop.pod));
  // Nothing the what-if knows frees a budget before the deadline: the kept pods are told when
  // their grace period must begin to end by the deadline.
  for (const auto& [key, why] : at_notice.kept) {
    const int i = index_of(key);
    const model::PodScheduling& pod = cluster.pods[i];
    PodStop stop;
    stop.pod = key;
    stop.node = node;
    stop.grace_seconds = pod.GracePeriodSeconds();
    stop.told_ms = std::max(notice_ms, deadline_ms - stop.grace_seconds * 1000);
    stop.end_ms = deadline_ms;
    stop.pre_stop = pod.pre_stop;
    stop.kept_by = why;
    plan.push_back(std::move(stop));
    stopped_pods.push_back(i);
  }
  return plan;
}

std::string DescribeStop(const PodStop& stop) {
  std::string out = "told to stop: ";
  if (!stop.pre_stop.empty()) out += "preStop " + Join(stop.pre_stop, ", ") + ", then ";
  out += "SIGTERM; grace period " + model::FormatDuration(stop.grace_seconds) + ", gone after " +
         model::FormatDuration((stop.end_ms - stop.told_ms) / 1000);
  if (stop.end_ms - stop.told_ms < stop.grace_seconds * 1000) out += " (the node's deadline)";
  if (!stop.kept_by.empty()) out += "; kept running until then by " + stop.kept_by;
  return out;
}

}  // namespace gpupool::autoscaler
