#include "model/match.h"

#include <charconv>

#include "codec/field_path.h"

namespace gpupool::model {
namespace {

using codec::FieldPath;
using codec::IndexPath;

// strconv.ParseInt(s, 10, 64): optional sign, decimal digits, no spaces.
bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  if (s[0] == '+') {
    s.remove_prefix(1);
    if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  }
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 10);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool Contains(const std::vector<std::string>& values, const std::string& value) {
  for (const std::string& v : values) {
    if (v == value) return true;
  }
  return false;
}

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63 characters.
bool IsQualifiedNamePart(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  if (!IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

}  // namespace

bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  auto lower_alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!lower_alnum(s.front()) || !lower_alnum(s.back())) return false;
  for (char c : s) {
    if (!lower_alnum(c) && c != '-' && c != '.') return false;
  }
  return true;
}

bool IsQualifiedName(std::string_view name) {
  size_t slash = name.find('/');
  if (slash == std::string_view::npos) return IsQualifiedNamePart(name);
  return IsDnsSubdomain(name.substr(0, slash)) && IsQualifiedNamePart(name.substr(slash + 1));
}

bool IsValidLabelValue(std::string_view value) {
  return value.empty() || IsQualifiedNamePart(value);
}

bool ToleratesTaint(const Toleration& toleration, const Taint& taint) {
  if (toleration.effect && *toleration.effect != taint.effect) return false;
  if (!toleration.key.empty() && toleration.key != taint.key) return false;
  switch (toleration.op) {
    case TolerationOperator::kExists:
      return true;
    case TolerationOperator::kEqual:
      return toleration.value == taint.value;
  }
  return false;
}

bool TaintToleratedBy(const Taint& taint, std::span<const Toleration> tolerations) {
  for (const Toleration& t : tolerations) {
    if (ToleratesTaint(t, taint)) return true;
  }
  return false;
}

bool TaintEffectSet::Contains(TaintEffect effect) const {
  switch (effect) {
    case TaintEffect::kNoSchedule:
      return no_schedule;
    case TaintEffect::kPreferNoSchedule:
      return prefer_no_schedule;
    case TaintEffect::kNoExecute:
      return no_execute;
  }
  return false;
}

const Taint* FindUntoleratedTaintPtr(std::span<const Taint> taints,
                                     std::span<const Toleration> tolerations,
                                     TaintEffectSet effects) {
  for (const Taint& taint : taints) {
    if (!effects.Contains(taint.effect)) continue;
    if (!TaintToleratedBy(taint, tolerations)) return &taint;
  }
  return nullptr;
}

std::optional<Taint> FindUntoleratedTaint(std::span<const Taint> taints,
                                          std::span<const Toleration> tolerations,
                                          TaintEffectSet effects) {
  const Taint* taint = FindUntoleratedTaintPtr(taints, tolerations, effects);
  if (taint == nullptr) return std::nullopt;
  return *taint;
}

int CountIntolerablePreferNoSchedule(std::span<const Taint> taints,
                                     std::span<const Toleration> tolerations) {
  int count = 0;
  for (const Taint& taint : taints) {
    if (taint.effect != TaintEffect::kPreferNoSchedule) continue;
    bool tolerated = false;
    for (const Toleration& t : tolerations) {
      if (t.effect && *t.effect != TaintEffect::kPreferNoSchedule) continue;
      if (ToleratesTaint(t, taint)) {
        tolerated = true;
        break;
      }
    }
    if (!tolerated) ++count;
  }
  return count;
}

bool MatchesNodeSelector(const Labels& selector, const Labels& node_labels) {
  for (const auto& [key, value] : selector) {
    auto it = node_labels.find(key);
    if (it == node_labels.end() || it->second != value) return false;
  }
  return true;
}

bool MatchesNodeSelector(const Labels& selector, const Node& node) {
  return MatchesNodeSelector(selector, node.labels);
}

bool MatchesLabelRequirement(const NodeSelectorRequirement& requirement, const Labels& labels) {
  auto it = labels.find(requirement.key);
  bool present = it != labels.end();
  switch (requirement.op) {
    case SelectorOperator::kIn:
      // An empty value set is invalid and selects nothing.
      return present && Contains(requirement.values, it->second);
    case SelectorOperator::kNotIn:
      if (requirement.values.empty()) return false;
      return !present || !Contains(requirement.values, it->second);
    case SelectorOperator::kExists:
      return requirement.values.empty() && present;
    case SelectorOperator::kDoesNotExist:
      return requirement.values.empty() && !present;
    case SelectorOperator::kGt:
    case SelectorOperator::kLt: {
      if (requirement.values.size() != 1 || !present) return false;
      int64_t want;
      int64_t have;
      if (!ParseInt64(requirement.values[0], &want) || !ParseInt64(it->second, &have)) {
        return false;
      }
      return requirement.op == SelectorOperator::kGt ? have > want : have < want;
    }
  }
  return false;
}

bool MatchesRequirement(const NodeSelectorRequirement& requirement, const Node& node) {
  return MatchesLabelRequirement(requirement, node.labels);
}

bool MatchesFieldRequirement(const NodeSelectorRequirement& requirement, const Node& node) {
  if (requirement.key != "metadata.name" || requirement.values.size() != 1) return false;
  switch (requirement.op) {
    case SelectorOperator::kIn:
      return node.name == requirement.values[0];
    case SelectorOperator::kNotIn:
      return node.name != requirement.values[0];
    default:
      return false;
  }
}

namespace {

// Whether kube-scheduler can turn the requirement into a label selector (labels.NewRequirement):
// a qualified key, the values its operator needs (Gt and Lt: one base-10 int64), and every value
// a valid label value (so Gt "-5" does not parse: '-' cannot start a label value).
bool LabelRequirementParses(const NodeSelectorRequirement& r) {
  if (!IsQualifiedName(r.key)) return false;
  switch (r.op) {
    case SelectorOperator::kIn:
    case SelectorOperator::kNotIn:
      if (r.values.empty()) return false;
      break;
    case SelectorOperator::kExists:
    case SelectorOperator::kDoesNotExist:
      if (!r.values.empty()) return false;
      break;
    case SelectorOperator::kGt:
    case SelectorOperator::kLt: {
      int64_t unused;
      if (r.values.size() != 1 || !ParseInt64(r.values[0], &unused)) return false;
      break;
    }
  }
  for (const std::string& value : r.values) {
    if (!IsValidLabelValue(value)) return false;
  }
  return true;
}

}  // namespace

bool TermParses(const NodeSelectorTerm& term) {
  for (const NodeSelectorRequirement& r : term.match_expressions) {
    if (!LabelRequirementParses(r)) return false;
  }
  return true;
}

bool MatchesTerm(const NodeSelectorTerm& term, const Node& node) {
  if (term.empty() || !TermParses(term)) return false;
  for (const NodeSelectorRequirement& r : term.match_expressions) {
    if (!MatchesRequirement(r, node)) return false;
  }
  for (const NodeSelectorRequirement& r : term.match_fields) {
    if (!MatchesFieldRequirement(r, node)) return false;
  }
  return true;
}

bool MatchesRequiredAffinity(const NodeAffinity& affinity, const Node& node) {
  if (!affinity.required) return true;
  for (const NodeSelectorTerm& term : *affinity.required) {
    if (MatchesTerm(term, node)) return true;
  }
  return false;
}

bool MatchesNodeSelectorAndAffinity(const PodScheduling& pod, const Node& node) {
  return MatchesNodeSelector(pod.node_selector, node) &&
         MatchesRequiredAffinity(pod.affinity, node);
}

int64_t PreferredAffinityScore(const NodeAffinity& affinity, const Node& node) {
  int64_t score = 0;
  for (const PreferredSchedulingTerm& term : affinity.preferred) {
    if (term.weight == 0) continue;
    if (MatchesTerm(term.preference, node)) score += term.weight;
  }
  return score;
}

Status ValidateToleration(const Toleration& toleration, std::string_view field_path) {
  if (!toleration.key.empty() && !IsQualifiedName(toleration.key)) {
    return InvalidArgumentError(FieldPath(field_path, "key") + ": \"" + toleration.key +
                                "\" is not a valid label name (an optional DNS prefix and '/', "
                                "then up to 63 alphanumerics, '-', '_' or '.')");
  }
  if (toleration.key.empty() && toleration.op != TolerationOperator::kExists) {
    return InvalidArgumentError(FieldPath(field_path, "operator") +
                                ": must be Exists when `key` is empty, which means \"match all "
                                "values and all keys\"");
  }
  if (toleration.toleration_seconds &&
      (!toleration.effect || *toleration.effect != TaintEffect::kNoExecute)) {
    return InvalidArgumentError(FieldPath(field_path, "effect") +
                                ": must be 'NoExecute' when `tolerationSeconds` is set");
  }
  if (toleration.op == TolerationOperator::kExists && !toleration.value.empty()) {
    return InvalidArgumentError(FieldPath(field_path, "operator") +
                                ": value must be empty when `operator` is 'Exists'");
  }
  if (toleration.op == TolerationOperator::kEqual && !IsValidLabelValue(toleration.value)) {
    return InvalidArgumentError(FieldPath(field_path, "value") + ": \"" + toleration.value +
                                "\" is not a valid label value (up to 63 alphanumerics, '-', '_' "
                                "or '.', starting and ending with an alphanumeric)");
  }
  return OkStatus();
}

Status ValidateTolerations(std::span<const Toleration> tolerations, std::string_view field_path) {
  for (size_t i = 0; i < tolerations.size(); ++i) {
    RETURN_IF_ERROR(ValidateToleration(tolerations[i], IndexPath(field_path, i)));
  }
  return OkStatus();
}

Status ValidateRequirement(const NodeSelectorRequirement& requirement,
                           std::string_view field_path) {
  if (!IsQualifiedName(requirement.key)) {
    return InvalidArgumentError(FieldPath(field_path, "key") + ": \"" + requirement.key +
                                "\" is not a valid label name");
  }
  std::string values_path = FieldPath(field_path, "values");
  switch (requirement.op) {
    case SelectorOperator::kIn:
    case SelectorOperator::kNotIn:
      if (requirement.values.empty()) {
        return InvalidArgumentError(values_path +
                                    ": must be specified when `operator` is 'In' or 'NotIn'");
      }
      break;
    case SelectorOperator::kExists:
    case SelectorOperator::kDoesNotExist:
      if (!requirement.values.empty()) {
        return InvalidArgumentError(
            values_path + ": may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
      }
      break;
    case SelectorOperator::kGt:
    case SelectorOperator::kLt: {
      if (requirement.values.size() != 1) {
        return InvalidArgumentError(
            values_path + ": must be specified single value when `operator` is 'Lt' or 'Gt'");
      }
      int64_t unused;
      if (!ParseInt64(requirement.values[0], &unused)) {
        return InvalidArgumentError(IndexPath(values_path, 0) + ": \"" + requirement.values[0] +
                                    "\" is not an integer (Gt and Lt compare int64 values)");
      }
      break;
    }
  }
  return OkStatus();
}

Status ValidateFieldRequirement(const NodeSelectorRequirement& requirement,
                                std::string_view field_path) {
  if (requirement.key != "metadata.name") {
    return InvalidArgumentError(FieldPath(field_path, "key") + ": \"" + requirement.key +
                                "\" is not a supported field (only metadata.name)");
  }
  if (requirement.op != SelectorOperator::kIn && requirement.op != SelectorOperator::kNotIn) {
    return InvalidArgumentError(FieldPath(field_path, "operator") +
                                ": matchFields supports only In and NotIn, got " +
                                std::string(SelectorOperatorName(requirement.op)));
  }
  if (requirement.values.size() != 1) {
    return InvalidArgumentError(FieldPath(field_path, "values") +
                                ": must be only one value when `key` is 'metadata.name'");
  }
  return OkStatus();
}

namespace {

Status ValidateTerm(const NodeSelectorTerm& term, std::string_view path) {
  for (size_t i = 0; i < term.match_expressions.size(); ++i) {
    RETURN_IF_ERROR(ValidateRequirement(term.match_expressions[i],
                                        IndexPath(FieldPath(path, "matchExpressions"), i)));
  }
  for (size_t i = 0; i < term.match_fields.size(); ++i) {
    RETURN_IF_ERROR(ValidateFieldRequirement(term.match_fields[i],
                                             IndexPath(FieldPath(path, "matchFields"), i)));
  }
  return OkStatus();
}

}  // namespace

Status ValidateNodeAffinity(const NodeAffinity& affinity, std::string_view field_path) {
  if (affinity.required) {
    std::string terms_path =
        FieldPath(FieldPath(field_path, "requiredDuringSchedulingIgnoredDuringExecution"),
                  "nodeSelectorTerms");
    if (affinity.required->empty()) {
      return InvalidArgumentError(terms_path + ": must have at least one node selector term");
    }
    for (size_t i = 0; i < affinity.required->size(); ++i) {
      RETURN_IF_ERROR(ValidateTerm((*affinity.required)[i], IndexPath(terms_path, i)));
    }
  }
  std::string preferred_path =
      FieldPath(field_path, "preferredDuringSchedulingIgnoredDuringExecution");
  for (size_t i = 0; i < affinity.preferred.size(); ++i) {
    const PreferredSchedulingTerm& p = affinity.preferred[i];
    std::string item_path = IndexPath(preferred_path, i);
    if (p.weight < 1 || p.weight > 100) {
      return InvalidArgumentError(FieldPath(item_path, "weight") +
                                  ": must be in the range 1-100, got " + std::to_string(p.weight));
    }
    RETURN_IF_ERROR(ValidateTerm(p.preference, FieldPath(item_path, "preference")));
  }
  return OkStatus();
}

Status ValidatePodScheduling(const PodScheduling& pod) {
  for (const auto& [key, value] : pod.node_selector) {
    std::string path = FieldPath("spec.nodeSelector", key);
    if (!IsQualifiedName(key)) {
      return InvalidArgumentError(path + ": \"" + key + "\" is not a valid label name");
    }
    if (!IsValidLabelValue(value)) {
      return InvalidArgumentError(path + ": \"" + value + "\" is not a valid label value");
    }
  }
  RETURN_IF_ERROR(ValidateNodeAffinity(pod.affinity, "spec.affinity.nodeAffinity"));
  return ValidateTolerations(pod.tolerations, "spec.tolerations");
}

}  // namespace gpupool::model
