// The scheduler's public functions (scheduler.h); a cycle itself runs in cycle.cc.

#include "scheduler/scheduler.h"

#include <charconv>
#include <map>

#include "common/strings.h"
#include "scheduler/cycle.h"

namespace gpupool::scheduler {

Result<int64_t> ParseGangMin(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  // Digits only: from_chars takes no sign or blank, and refuses what int64 cannot hold.
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || text[0] < '0' || text[0] > '9' || ec != std::errc() || ptr != end ||
      value < 1) {
    return InvalidArgumentError("expected a positive integer, got \"" + std::string(text) + "\"");
  }
  return value;
}

std::string_view PlacementPolicyName(PlacementPolicy policy) {
  switch (policy) {
    case PlacementPolicy::kFgd:
      return "fgd";
    case PlacementPolicy::kGpuPacking:
      return "gpu-packing";
    case PlacementPolicy::kBestFit:
      return "best-fit";
    case PlacementPolicy::kRandom:
      return "random";
    case PlacementPolicy::kDotProduct:
      return "dot-product";
  }
  return "fgd";
}

Result<PlacementPolicy> ParsePlacementPolicy(std::string_view name) {
  std::vector<std::string> names;
  for (PlacementPolicy p :
       {PlacementPolicy::kFgd, PlacementPolicy::kGpuPacking, PlacementPolicy::kBestFit,
        PlacementPolicy::kRandom, PlacementPolicy::kDotProduct}) {
    if (name == PlacementPolicyName(p)) return p;
    names.emplace_back(PlacementPolicyName(p));
  }
  return InvalidArgumentError("unknown placement policy \"" + std::string(name) + "\"; expected " +
                              Join(names, ", ") + DidYouMean(name, names));
}

Status Validate(const SchedulerOptions& options) {
  if (options.percentage_of_nodes_to_score < 0 || options.percentage_of_nodes_to_score > 100) {
    return InvalidArgumentError("percentage_of_nodes_to_score: expected 0..100, got " +
                                std::to_string(options.percentage_of_nodes_to_score));
  }
  if (options.fgd_task_types < 1) {
    return InvalidArgumentError("fgd_task_types: expected at least 1");
  }
  return OkStatus();
}

std::string_view EvictionReasonName(EvictionReason reason) {
  switch (reason) {
    case EvictionReason::kReclaim:
      return "reclaim";
    case EvictionReason::kPreempt:
      return "preempt";
    case EvictionReason::kNoExecute:
      return "NoExecute";
  }
  return "reclaim";
}

std::string_view PlacementOutcomeName(PlacementOutcome outcome) {
  switch (outcome) {
    case PlacementOutcome::kPlaced:
      return "placed";
    case PlacementOutcome::kUnschedulable:
      return "unschedulable";
    case PlacementOutcome::kInfeasible:
      return "infeasible";
  }
  return "unschedulable";
}

std::optional<int64_t> ParseTimestampMillis(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+hh:mm|-hh:mm)
  auto digits = [&text](size_t at, size_t count, int64_t* out) {
    if (at + count > text.size()) return false;
    int64_t value = 0;
    for (size_t i = at; i < at + count; ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      value = value * 10 + (text[i] - '0');
    }
    *out = value;
    return true;
  };
  int64_t year, month, day, hour, minute, second;
  if (!digits(0, 4, &year) || text.size() < 20 || text[4] != '-' || !digits(5, 2, &month) ||
      text[7] != '-' || !digits(8, 2, &day) || (text[10] != 'T' && text[10] != 't') ||
      !digits(11, 2, &hour) || text[13] != ':' || !digits(14, 2, &minute) || text[16] != ':' ||
      !digits(17, 2, &second)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  size_t at = 19;
  int64_t millis = 0;
  if (text[at] == '.') {
    size_t count = 0;
    for (++at; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at, ++count) {
      if (count < 3) millis = millis * 10 + (text[at] - '0');
    }
    if (count == 0) return std::nullopt;
    for (; count < 3; ++count) millis *= 10;
  }
  int64_t offset_minutes = 0;
  if (at < text.size() && (text[at] == 'Z' || text[at] == 'z') && at + 1 == text.size()) {
    offset_minutes = 0;
  } else if (at + 6 == text.size() && (text[at] == '+' || text[at] == '-') && text[at + 3] == ':') {
    int64_t oh, om;
    if (!digits(at + 1, 2, &oh) || !digits(at + 4, 2, &om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset_minutes = (text[at] == '+' ? 1 : -1) * (oh * 60 + om);
  } else {
    return std::nullopt;
  }
  // Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
  const int64_t y = year - (month <= 2 ? 1 : 0);
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = era * 146097 + doe - 719468;
  const int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
  return seconds * 1000 + millis;
}

std::string PodKey(const model::PodScheduling& pod) {
  if (pod.namespace_.empty() || pod.namespace_ == "default") return pod.name;
  return pod.namespace_ + "/" + pod.name;
}

Result<int32_t> PodPriority(const model::PodScheduling& pod) {
  if (pod.priority) return *pod.priority;
  static const std::map<std::string, int32_t> kClasses = {{"", 0},
                                                          {"low", 50},
                                                          {"normal", 100},
                                                          {"high", 125},
                                                          {"system-cluster-critical", 2000000000},
                                                          {"system-node-critical", 2000001000}};
  auto it = kClasses.find(pod.priority_class_name);
  if (it == kClasses.end()) {
    return InvalidArgumentError("priorityClassName \"" + pod.priority_class_name +
                                "\" not found; expected high (125), normal (100), low (50) or "
                                "spec.priority" +
                                DidYouMean(pod.priority_class_name, {"high", "normal", "low"}));
  }
  return it->second;
}

ViewCache::ViewCache() : memo_(std::make_unique<SetupMemo>()) {}
ViewCache::~ViewCache() = default;

int64_t ViewCache::PodsTakenOver() const { return memo_->taken_over; }
int64_t ViewCache::NodesTakenOver() const { return memo_->bindings.nodes_taken_over; }

ClusterView& ViewCache::ViewFor(const ClusterSnapshot& snapshot) {
  if (view_ != nullptr && snapshot.nodes_generation != 0 &&
      snapshot.nodes_generation == generation_) {
    // The kept pods name the view's signatures: when it forgets them, the pods go too.
    if (!view_->ResetForCycle(snapshot.nodes)) memo_->ForgetPods();
    return *view_;
  }
  view_ = std::make_unique<ClusterView>(snapshot.nodes, snapshot.node_pools);
  *memo_ = SetupMemo();  // node pools, dimensions and signatures are the view's
  generation_ = snapshot.nodes_generation;
  ++builds_;
  return *view_;
}

CycleResult Scheduler::RunCycle(const ClusterSnapshot& snapshot, ViewCache* views) const {
  if (views == nullptr) return Cycle(options_, snapshot, nullptr, nullptr).Run();
  ClusterView& view = views->ViewFor(snapshot);
  return Cycle(options_, snapshot, &view, &views->memo()).Run();
}

}  // namespace gpupool::scheduler
