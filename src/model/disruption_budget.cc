#include "model/disruption_budget.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "codec/field_path.h"
#include "codec/json_reader.h"
#include "common/strings.h"
#include "model/k8s.h"
#include "model/label_selector.h"
#include "model/match.h"

namespace gpupool::model {
namespace {

using codec::FieldPath;
using codec::IndexPath;
using codec::JsonTypeName;
using Json = nlohmann::ordered_json;

// minAvailable / maxUnavailable: an integer >= 0 or "N%" with 0 <= N <= 100 (Kubernetes'
// ValidatePositiveIntOrPercent and IsNotMoreThan100Percent).
Result<IntOrPercent> IntOrPercentFromJson(const Json& value, const std::string& path) {
  IntOrPercent out;
  constexpr int64_t kMax = (int64_t{1} << 31) - 1;  // an int32 in Kubernetes
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() > static_cast<uint64_t>(kMax)) {
      return InvalidArgumentError(path + ": " + value.dump() + " is out of range");
    }
    out.value = static_cast<int64_t>(value.get<uint64_t>());
    return out;
  }
  if (value.is_number_integer()) {
    if (value.get<int64_t>() < 0) {
      return InvalidArgumentError(path + ": must be greater than or equal to 0, got " +
                                  value.dump());
    }
    if (value.get<int64_t>() > kMax) {
      return InvalidArgumentError(path + ": " + value.dump() + " is out of range");
    }
    out.value = value.get<int64_t>();
    return out;
  }
  if (!value.is_string()) {
    return InvalidArgumentError(path + ": expected an integer or a percentage (\"50%\"), got " +
                                JsonTypeName(value));
  }
  const std::string text = value.get<std::string>();
  const std::string_view digits = std::string_view(text).substr(0, text.size() - 1);
  int64_t number = -1;
  if (text.size() >= 2 && text.back() == '%' && digits.front() != '-' && digits.front() != '+') {
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
    if (error != std::errc() || end != digits.data() + digits.size()) number = -1;
  }
  if (number < 0) {
    if (!text.empty() && text.front() == '-') {
      return InvalidArgumentError(path + ": must be greater than or equal to 0, got \"" + text +
                                  "\"");
    }
    return InvalidArgumentError(path + ": expected an integer or a percentage (\"50%\"), got \"" +
                                text + "\"");
  }
  if (number > 100) {
    return InvalidArgumentError(path + ": must not be greater than 100%, got \"" + text + "\"");
  }
  out.value = number;
  out.percent = true;
  return out;
}

Json IntOrPercentToJson(const IntOrPercent& v) {
  return v.percent ? Json(v.ToString()) : Json(v.value);
}

// ceil(percent x total / 100), as intstr.GetScaledValueFromIntOrPercent(..., roundUp=true).
int64_t Scaled(const IntOrPercent& v, int64_t total) {
  if (!v.percent) return v.value;
  return (v.value * total + 99) / 100;
}

}  // namespace

std::string IntOrPercent::ToString() const { return std::to_string(value) + (percent ? "%" : ""); }

bool PodDisruptionBudget::Selects(const PodScheduling& pod) const {
  if (observed) {
    return observed->pods.contains(
        {pod.namespace_.empty() ? std::string("default") : pod.namespace_, pod.name});
  }
  if (!selector || pod.namespace_ != namespace_) return false;
  return MatchesLabelSelector(*selector, pod.labels);
}

int64_t PodDisruptionBudget::DesiredHealthy(int64_t expected) const {
  if (max_unavailable) return std::max<int64_t>(0, expected - Scaled(*max_unavailable, expected));
  if (min_available) return Scaled(*min_available, expected);
  return 0;
}

std::string PodDisruptionBudget::Rule() const {
  if (observed && !observed->rule.empty()) return observed->rule;
  if (min_available) return "minAvailable " + min_available->ToString();
  if (max_unavailable) return "maxUnavailable " + max_unavailable->ToString();
  return "no limit";
}

Result<std::vector<NodeSelectorRequirement>> LabelSelectorObjectFromJson(
    const Json& json, std::string_view field_path) {
  std::vector<NodeSelectorRequirement> out;
  if (!json.is_object()) {
    return InvalidArgumentError(std::string(field_path) + ": expected an object, got " +
                                JsonTypeName(json));
  }
  RETURN_IF_ERROR(codec::CheckKnownFields(json, field_path, {"matchLabels", "matchExpressions"}));
  if (auto it = json.find("matchLabels"); it != json.end() && !it->is_null()) {
    const std::string path = FieldPath(field_path, "matchLabels");
    ASSIGN_OR_RETURN(Labels labels, LabelsFromJson(*it, path));
    for (auto& [key, value] : labels) {
      if (!IsQualifiedName(key)) {
        return InvalidArgumentError(FieldPath(path, key) + ": not a valid label key");
      }
      if (!IsValidLabelValue(value)) {
        return InvalidArgumentError(FieldPath(path, key) + ": \"" + value +
                                    "\" is not a valid label value");
      }
      out.push_back({key, SelectorOperator::kIn, {value}});
    }
  }
  auto it = json.find("matchExpressions");
  if (it == json.end() || it->is_null()) return out;
  const std::string list_path = FieldPath(field_path, "matchExpressions");
  if (!it->is_array()) {
    return InvalidArgumentError(list_path + ": expected a list, got " + JsonTypeName(*it));
  }
  static const std::vector<std::string> kOperators = {"In", "NotIn", "Exists", "DoesNotExist"};
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string path = IndexPath(list_path, i);
    ASSIGN_OR_RETURN(NodeSelectorRequirement r, NodeSelectorRequirementFromJson((*it)[i], path));
    if (r.op == SelectorOperator::kGt || r.op == SelectorOperator::kLt) {
      return InvalidArgumentError(FieldPath(path, "operator") +
                                  ": expected one of In, NotIn, Exists, DoesNotExist, got \"" +
                                  std::string(SelectorOperatorName(r.op)) + "\"");
    }
    if (r.key.empty() || !IsQualifiedName(r.key)) {
      return InvalidArgumentError(FieldPath(path, "key") + ": expected a label key");
    }
    const bool needs_values = r.op == SelectorOperator::kIn || r.op == SelectorOperator::kNotIn;
    if (needs_values == r.values.empty()) {
      return InvalidArgumentError(FieldPath(path, "values") +
                                  (needs_values ? ": required (at least one) for operator "
                                                : ": must be empty for operator ") +
                                  std::string(SelectorOperatorName(r.op)));
    }
    out.push_back(std::move(r));
  }
  return out;
}

Result<PodDisruptionBudget> PodDisruptionBudgetFromSpec(const Json& spec, std::string_view name,
                                                        std::string_view path) {
  PodDisruptionBudget budget;
  budget.name = std::string(name);
  if (spec.is_null()) return budget;
  if (!spec.is_object()) {
    return InvalidArgumentError((path.empty() ? std::string("spec") : std::string(path)) +
                                ": expected an object, got " + JsonTypeName(spec));
  }
  RETURN_IF_ERROR(codec::CheckKnownFields(
      spec, path, {"selector", "minAvailable", "maxUnavailable", "unhealthyPodEvictionPolicy"}));
  if (auto it = spec.find("selector"); it != spec.end() && !it->is_null()) {
    ASSIGN_OR_RETURN(budget.selector,
                     LabelSelectorObjectFromJson(*it, FieldPath(path, "selector")));
  }
  for (const char* field : {"minAvailable", "maxUnavailable"}) {
    auto it = spec.find(field);
    if (it == spec.end() || it->is_null()) continue;
    ASSIGN_OR_RETURN(IntOrPercent value, IntOrPercentFromJson(*it, FieldPath(path, field)));
    (std::string_view(field) == "minAvailable" ? budget.min_available : budget.max_unavailable) =
        value;
  }
  if (budget.min_available && budget.max_unavailable) {
    return InvalidArgumentError(FieldPath(path, "maxUnavailable") +
                                ": minAvailable and maxUnavailable cannot be both set");
  }
  if (auto it = spec.find("unhealthyPodEvictionPolicy"); it != spec.end() && !it->is_null()) {
    static const std::vector<std::string> kPolicies = {"IfHealthyBudget", "AlwaysAllow"};
    const std::string text = it->is_string() ? it->get<std::string>() : it->dump();
    if (std::find(kPolicies.begin(), kPolicies.end(), text) == kPolicies.end()) {
      return InvalidArgumentError(FieldPath(path, "unhealthyPodEvictionPolicy") +
                                  ": expected IfHealthyBudget or AlwaysAllow, got \"" + text +
                                  "\"" + DidYouMean(text, kPolicies));
    }
  }
  return budget;
}

Result<PodDisruptionBudget> PodDisruptionBudgetFromManifest(const Json& manifest) {
  ASSIGN_OR_RETURN(const Json metadata, ManifestMetadata(manifest, kPodDisruptionBudgetApiVersion));
  std::string ns = "default";
  if (auto it = metadata.find("namespace"); it != metadata.end() && !it->is_null()) {
    if (!it->is_string()) {
      return InvalidArgumentError("metadata.namespace: expected a string, got " +
                                  JsonTypeName(*it));
    }
    if (!it->get<std::string>().empty()) ns = it->get<std::string>();
  }
  ASSIGN_OR_RETURN(PodDisruptionBudget budget,
                   PodDisruptionBudgetFromSpec(manifest.value("spec", Json()),
                                               metadata["name"].get<std::string>(), "spec"));
  budget.namespace_ = std::move(ns);
  return budget;
}

Json PodDisruptionBudgetToSpec(const PodDisruptionBudget& budget) {
  Json spec = Json::object();
  if (budget.selector) {
    Json labels = Json::object();
    Json expressions = Json::array();
    for (const NodeSelectorRequirement& r : *budget.selector) {
      if (r.op == SelectorOperator::kIn && r.values.size() == 1 && !labels.contains(r.key)) {
        labels[r.key] = r.values[0];
        continue;
      }
      Json e = {{"key", r.key}, {"operator", std::string(SelectorOperatorName(r.op))}};
      if (!r.values.empty()) e["values"] = r.values;
      expressions.push_back(std::move(e));
    }
    Json selector = Json::object();
    if (!labels.empty()) selector["matchLabels"] = std::move(labels);
    if (!expressions.empty()) selector["matchExpressions"] = std::move(expressions);
    spec["selector"] = std::move(selector);
  }
  if (budget.min_available) spec["minAvailable"] = IntOrPercentToJson(*budget.min_available);
  if (budget.max_unavailable) spec["maxUnavailable"] = IntOrPercentToJson(*budget.max_unavailable);
  return spec;
}

DisruptionBudgets::DisruptionBudgets(std::span<const PodDisruptionBudget> budgets,
                                     std::span<const PodScheduling> pods)
    : pods_(pods), by_pod_(budgets.empty() ? 0 : pods.size()) {
  for (const PodDisruptionBudget& budget : budgets) {
    Entry entry;
    entry.budget = &budget;
    for (size_t i = 0; i < pods.size(); ++i) {
      if (!budget.Selects(pods[i])) continue;
      entry.members.push_back(static_cast<int>(i));
      if (!pods[i].node_name.empty()) ++entry.healthy;
    }
    if (entry.members.empty()) continue;
    if (budget.observed) {
      entry.healthy = budget.observed->current_healthy;
      entry.expected = budget.observed->expected_pods;
      entry.desired = budget.observed->desired_healthy;
      entry.allowed = std::max<int64_t>(0, budget.observed->disruptions_allowed);
    } else {
      entry.expected = static_cast<int64_t>(entry.members.size());
      entry.desired = budget.DesiredHealthy(entry.expected);
      entry.allowed = std::max<int64_t>(0, entry.healthy - entry.desired);
    }
    for (int m : entry.members) by_pod_[m].push_back(static_cast<int>(entries_.size()));
    entries_.push_back(std::move(entry));
  }
}

const std::vector<int>& DisruptionBudgets::BudgetsOf(int pod) const {
  static const std::vector<int> kNone;
  return by_pod_.empty() ? kNone : by_pod_[pod];
}

std::optional<std::string> DisruptionBudgets::Blocks(std::span<const int> evicting,
                                                     const std::function<bool(int)>& gone) const {
  if (entries_.empty()) return std::nullopt;
  std::set<int> touched;
  for (int pod : evicting) touched.insert(by_pod_[pod].begin(), by_pod_[pod].end());
  const std::set<int> evicting_set(evicting.begin(), evicting.end());
  for (int e : touched) {
    const Entry& entry = entries_[e];
    int64_t gone_count = 0;      // healthy before the cycle, evicted since
    int64_t evicting_count = 0;  // healthy now, in `evicting`
    for (int m : entry.members) {
      if (pods_[m].node_name.empty()) continue;  // never healthy: costs no disruption
      if (gone(m)) {
        ++gone_count;
      } else if (evicting_set.contains(m)) {
        ++evicting_count;
      }
    }
    if (gone_count + evicting_count <= entry.allowed) continue;
    const int64_t left = std::max<int64_t>(0, entry.allowed - gone_count);
    return "PodDisruptionBudget " + entry.budget->name + " (" + entry.budget->Rule() + ") allows " +
           std::to_string(left) + " more disruption" + (left == 1 ? "" : "s") + ": " +
           std::to_string(entry.healthy - gone_count) + " of " + std::to_string(entry.expected) +
           " pods healthy, " + std::to_string(entry.desired) + " needed";
  }
  return std::nullopt;
}

}  // namespace gpupool::model
