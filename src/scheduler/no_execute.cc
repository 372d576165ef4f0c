#include "scheduler/no_execute.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <string>

#include "common/clock.h"
#include "model/match.h"
#include "scheduler/cycle_setup.h"

namespace gpupool::scheduler {
namespace {

// timeAdded of a taint as the node object carries it (spec.taints[] with the same key, value and
// effect); nullopt when absent or malformed.
std::optional<int64_t> TaintTimeAdded(const model::Node& node, const model::Taint& taint) {
  const auto& raw = node.raw;
  if (!raw.is_object() || !raw.contains("spec") || !raw["spec"].is_object()) return std::nullopt;
  const auto& spec = raw["spec"];
  if (!spec.contains("taints") || !spec["taints"].is_array()) return std::nullopt;
  for (const auto& t : spec["taints"]) {
    if (!t.is_object()) continue;
    auto text = [&t](const char* field) {
      return t.contains(field) && t[field].is_string() ? t[field].get<std::string>() : "";
    };
    if (text("key") != taint.key || text("value") != taint.value ||
        text("effect") != model::TaintEffectName(taint.effect)) {
      continue;
    }
    const std::string added = text("timeAdded");
    if (added.empty()) return std::nullopt;
    return ParseTimestampMillis(added);
  }
  return std::nullopt;
}

std::string TaintText(const std::string& node, const model::Taint& taint) {
  return "node " + node + " has taint {" + taint.key + ": " + taint.value +
         "} with effect NoExecute";
}

// Why the pod goes now, or nullopt when it may stay.
std::optional<std::string> EvictionMessage(const NoExecuteVerdict& verdict, const std::string& node,
                                           int64_t now) {
  if (verdict.untolerated != nullptr) {
    return TaintText(node, *verdict.untolerated) + " that the pod does not tolerate";
  }
  if (verdict.bounded && verdict.immediate) {
    return TaintText(node, *verdict.taint) + " that the pod tolerates for " +
           std::to_string(verdict.toleration_seconds) + " s (tolerationSeconds <= 0: not at all)";
  }
  if (verdict.bounded && verdict.deadline_ms && now > 0 && *verdict.deadline_ms <= now) {
    return TaintText(node, *verdict.taint) + " that the pod tolerates for " +
           std::to_string(verdict.toleration_seconds) + " s (tolerationSeconds), until " +
           FormatTimestamp(*verdict.deadline_ms);
  }
  return std::nullopt;
}

}  // namespace

NoExecuteVerdict NoExecuteDeadlineOf(const model::PodScheduling& pod, const model::Node& node,
                                     std::optional<int64_t> bound_at_ms, int64_t now_ms) {
  NoExecuteVerdict verdict;
  bool have_deadline = false;
  for (const model::Taint& taint : node.taints) {
    if (taint.effect != model::TaintEffect::kNoExecute) continue;
    // Kubernetes' taint manager: the pod's first toleration that tolerates the taint.
    const model::Toleration* toleration = nullptr;
    for (const model::Toleration& t : pod.tolerations) {
      if (model::ToleratesTaint(t, taint)) {
        toleration = &t;
        break;
      }
    }
    if (toleration == nullptr) {
      verdict.untolerated = &taint;
      return verdict;
    }
    if (!toleration->toleration_seconds) continue;  // tolerated forever
    const int64_t seconds = *toleration->toleration_seconds;
    if (seconds <= 0) {  // Kubernetes: <= 0 means evict now
      verdict.bounded = true;
      verdict.immediate = true;
      verdict.taint = &taint;
      verdict.toleration_seconds = seconds;
      continue;
    }
    std::optional<int64_t> start = TaintTimeAdded(node, taint);
    if (bound_at_ms && (!start || *bound_at_ms > *start)) start = bound_at_ms;
    if (!start && now_ms > 0) start = now_ms;
    const bool first = !verdict.bounded;
    verdict.bounded = true;
    if (verdict.immediate) continue;
    if (!start) {
      if (first) {
        verdict.taint = &taint;
        verdict.toleration_seconds = seconds;
      }
      continue;
    }
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    const int64_t deadline = seconds > (kMax - *start) / 1000 ? kMax : *start + seconds * 1000;
    if (!have_deadline || deadline < *verdict.deadline_ms) {
      have_deadline = true;
      verdict.deadline_ms = deadline;
      verdict.taint = &taint;
      verdict.toleration_seconds = seconds;
    }
  }
  if (verdict.immediate) verdict.deadline_ms.reset();
  return verdict;
}

std::vector<NoExecuteDeadline> EvictNoExecute(CycleState& state, const Gangs& gangs,
                                              const ClusterSnapshot& snapshot) {
  std::vector<NoExecuteDeadline> deadlines;
  std::vector<int> deadline_pods;  // the pod of each deadline
  std::set<int> broken_gangs;
  // Most nodes carry no NoExecute taint: nothing to look up for their pods. The pods of those
  // that do (all bound before the cycle: nothing is placed yet), in snapshot order.
  std::vector<int> pods;
  for (int n = 0; n < state.view().NumNodes(); ++n) {
    if (!state.view().node(n).no_execute) continue;
    pods.insert(pods.end(), state.NodePods(n).begin(), state.NodePods(n).end());
  }
  std::sort(pods.begin(), pods.end());
  for (int i : pods) {
    const PodState& p = state.pod(i);
    if (!p.bound_initially || p.node < 0) continue;
    const model::Node& node = *state.view().node(p.node).node;
    std::optional<int64_t> bound_at;
    auto bound = snapshot.bound_at_ms.find(p.key);
    if (bound != snapshot.bound_at_ms.end()) bound_at = bound->second;
    const NoExecuteVerdict verdict = NoExecuteDeadlineOf(*p.pod, node, bound_at, snapshot.now_ms);
    std::optional<std::string> message = EvictionMessage(verdict, node.name, snapshot.now_ms);
    if (!message) {
      if (verdict.bounded) {
        deadlines.push_back({p.key, node.name, verdict.taint->ToString(),
                             verdict.toleration_seconds, verdict.deadline_ms});
        deadline_pods.push_back(i);
      }
      continue;
    }
    state.EvictNow(i, EvictionReason::kNoExecute, std::move(*message));
    if (p.gang >= 0) broken_gangs.insert(p.gang);
  }
  for (int g : broken_gangs) {
    const int running = RunningMembers(state, gangs, g);
    if (running == 0 || running >= gangs.min[g]) continue;
    for (int m : gangs.members[g]) {
      const PodState& p = state.pod(m);
      if (p.node < 0) continue;
      state.EvictNow(m, EvictionReason::kNoExecute,
                     "gang " + p.pod->labels.at(kGangLabel) + " fell below gang-min " +
                         std::to_string(gangs.min[g]) + " after a NoExecute eviction");
    }
  }
  // A pod evicted with its gang has no deadline left.
  size_t kept = 0;
  for (size_t d = 0; d < deadlines.size(); ++d) {
    if (state.pod(deadline_pods[d]).evicted) continue;
    if (kept != d) deadlines[kept] = std::move(deadlines[d]);
    ++kept;
  }
  deadlines.resize(kept);
  return deadlines;
}

}  // namespace gpupool::scheduler
