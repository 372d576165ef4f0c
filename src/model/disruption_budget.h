#pragma once
// policy/v1 PodDisruptionBudget (seed 004: "Use PodDisruptionBudgets - Control disruption"): how
// many of the pods a label selector picks may be taken down at once by a voluntary eviction
// (gpupool's reclaim and preemption, a spot node's drain). Involuntary endings (a NoExecute taint
// the pod does not tolerate, a node that is gone) ignore budgets, as in Kubernetes.
//
// Manifest: {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name, namespace},
//            spec: {selector: {matchLabels, matchExpressions}, minAvailable | maxUnavailable,
//                   unhealthyPodEvictionPolicy}}
// The config body (kind POD_DISRUPTION_BUDGET) is the spec. minAvailable and maxUnavailable are an
// integer (>= 0) or a percentage string ("50%", 0..100%); at most one of them. A selector that is
// absent selects no pod, `{}` selects every pod of the namespace (policy/v1).
//
// Arithmetic (Kubernetes' disruption controller, pkg/controller/disruption): expected = the pods
// the budget selects (gpupool has no controller scale: every selected pod, running or pending);
// healthy = those running (bound). desiredHealthy = minAvailable (an integer), or
// ceil(minAvailable% x expected), or expected - maxUnavailable, or expected -
// ceil(maxUnavailable% x expected): both percentages round up (so a maxUnavailable percentage may
// let slightly more than that share go). disruptionsAllowed = max(0, healthy - desiredHealthy).
// Neither field set: no limit.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "model/k8s.h"

namespace gpupool::model {

inline constexpr std::string_view kPodDisruptionBudgetApiVersion = "policy/v1";

// An IntOrString as minAvailable/maxUnavailable take it.
struct IntOrPercent {
  int64_t value = 0;
  bool percent = false;

  std::string ToString() const;  // "2" or "50%"
  friend bool operator==(const IntOrPercent&, const IntOrPercent&) = default;
};

struct PodDisruptionBudget {
  std::string name;
  // NOLINTNEXTLINE(readability-identifier-naming): `namespace` is a keyword.
  std::string namespace_ = "default";
  // ANDed requirements (matchLabels as In with one value); nullopt = no selector: selects nothing.
  std::optional<std::vector<NodeSelectorRequirement>> selector;
  std::optional<IntOrPercent> min_available;
  std::optional<IntOrPercent> max_unavailable;
  // A cluster's budget, as its API server shows it: the pods it selects (namespace, name) and
  // its status as the cluster's disruption controller counted it, over every pod it selects,
  // also those no scheduler snapshot holds. Set, they replace the selector and the counting over
  // the cycle's pods.
  struct Observed {
    std::set<std::pair<std::string, std::string>> pods;
    std::string rule;  // "minAvailable 2"
    int64_t disruptions_allowed = 0;
    int64_t current_healthy = 0;
    int64_t desired_healthy = 0;
    int64_t expected_pods = 0;
  };
  std::optional<Observed> observed;

  bool Selects(const PodScheduling& pod) const;
  // The pods that must stay healthy when `expected` pods are selected (percentages round up).
  int64_t DesiredHealthy(int64_t expected) const;
  // "minAvailable 2", "maxUnavailable 25%", "no limit".
  std::string Rule() const;
};

// Decodes a spec (the config body); `path` prefixes field paths ("spec"). Errors name the field:
// "spec.minAvailable: must not be greater than 100%, got \"150%\"".
Result<PodDisruptionBudget> PodDisruptionBudgetFromSpec(const nlohmann::ordered_json& spec,
                                                        std::string_view name,
                                                        std::string_view path = "");
// Decodes a policy/v1 manifest (apiVersion, kind, metadata.{name,namespace,labels,annotations},
// spec). Errors name the field path from the manifest's root.
Result<PodDisruptionBudget> PodDisruptionBudgetFromManifest(const nlohmann::ordered_json& manifest);
nlohmann::ordered_json PodDisruptionBudgetToSpec(const PodDisruptionBudget& budget);

// Reads a metav1.LabelSelector object strictly: matchLabels (label keys and values checked),
// matchExpressions [{key, operator: In|NotIn|Exists|DoesNotExist, values}] (In/NotIn need values,
// Exists/DoesNotExist none). `{}` = every pod (an empty list).
Result<std::vector<NodeSelectorRequirement>> LabelSelectorObjectFromJson(
    const nlohmann::ordered_json& json, std::string_view field_path);

// The budgets over a fixed list of pods (by index), for callers that decide evictions one after
// another. Counts nothing itself: the caller says which pods are already gone, so a decision that
// is rolled back needs no bookkeeping here.
class DisruptionBudgets {
 public:
  // A pod is healthy when it is bound (spec.nodeName) in `pods`, which must outlive this object.
  DisruptionBudgets(std::span<const PodDisruptionBudget> budgets,
                    std::span<const PodScheduling> pods);

  bool empty() const { return entries_.empty(); }
  // Why evicting `evicting` (pod indexes; duplicates are counted once) on top of the pods for
  // which `gone(i)` is true would break a budget: "PodDisruptionBudget web (minAvailable 2)
  // allows 0 disruptions: 2 of 3 pods healthy"; nullopt when every budget allows it. Pods that
  // are not running cost no disruption.
  std::optional<std::string> Blocks(std::span<const int> evicting,
                                    const std::function<bool(int)>& gone) const;
  // The budgets that select pod `i` (indexes into the constructor's list).
  const std::vector<int>& BudgetsOf(int pod) const;

 private:
  struct Entry {
    const PodDisruptionBudget* budget = nullptr;
    std::vector<int> members;
    int64_t healthy = 0;
    int64_t allowed = 0;  // disruptionsAllowed before any eviction
    int64_t expected = 0;
    int64_t desired = 0;
  };
  std::span<const PodScheduling> pods_;
  std::vector<Entry> entries_;
  std::vector<std::vector<int>> by_pod_;  // empty without budgets: a cycle builds one per run
};

}  // namespace gpupool::model
