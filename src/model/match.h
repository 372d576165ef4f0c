#pragma once
// Kubernetes node-matching semantics (taints/tolerations, nodeSelector, node affinity), exactly
// as kube-scheduler and the API server implement them. The match functions do not allocate and
// never touch JSON: the scheduler calls them millions of times.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/k8s.h"

namespace gpupool::model {

// Toleration matches taint: toleration effect empty = all effects, else equal; key empty = all
// keys, else equal; Exists = any value; Equal (or empty operator) = values equal.
bool ToleratesTaint(const Toleration& toleration, const Taint& taint);

// True if any toleration tolerates the taint.
bool TaintToleratedBy(const Taint& taint, std::span<const Toleration> tolerations);

// Which taint effects a filter considers.
struct TaintEffectSet {
  bool no_schedule = true;
  bool prefer_no_schedule = false;
  bool no_execute = true;

  bool Contains(TaintEffect effect) const;
  // NoSchedule + NoExecute: the scheduler's filter.
  static TaintEffectSet Scheduling() { return {true, false, true}; }
  static TaintEffectSet NoExecuteOnly() { return {false, false, true}; }
  static TaintEffectSet All() { return {true, true, true}; }
};

// The first taint (in node order) whose effect is in `effects` and that no toleration tolerates.
std::optional<Taint> FindUntoleratedTaint(std::span<const Taint> taints,
                                          std::span<const Toleration> tolerations,
                                          TaintEffectSet effects = TaintEffectSet::Scheduling());
// Same, returning a pointer into `taints` (no copy); nullptr when all are tolerated.
const Taint* FindUntoleratedTaintPtr(std::span<const Taint> taints,
                                     std::span<const Toleration> tolerations,
                                     TaintEffectSet effects = TaintEffectSet::Scheduling());

// Number of PreferNoSchedule taints not tolerated, counting only tolerations whose effect is
// empty or PreferNoSchedule (kube-scheduler TaintToleration score).
int CountIntolerablePreferNoSchedule(std::span<const Taint> taints,
                                     std::span<const Toleration> tolerations);

// Every selector entry equals the node's label.
bool MatchesNodeSelector(const Labels& selector, const Node& node);
bool MatchesNodeSelector(const Labels& selector, const Labels& node_labels);

// One matchExpressions requirement against node labels: In (present and in set), NotIn (absent
// or not in set), Exists, DoesNotExist, Gt/Lt (present, both parse as base-10 int64, strict).
// Malformed requirements (e.g. Gt with two values) match nothing.
bool MatchesRequirement(const NodeSelectorRequirement& requirement, const Node& node);
bool MatchesLabelRequirement(const NodeSelectorRequirement& requirement, const Labels& labels);
// One matchFields requirement: only key "metadata.name" with In/NotIn and one value.
bool MatchesFieldRequirement(const NodeSelectorRequirement& requirement, const Node& node);

// Whether kube-scheduler's nodeaffinity parses the term's matchExpressions into a selector: each
// requirement's key a qualified name, each value a valid label value (at most 63 characters of
// `(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?`), the values its operator needs. The API server
// does not check the values, so a pod may carry a term that does not parse: it matches no node.
bool TermParses(const NodeSelectorTerm& term);

// Expressions and fields ANDed. An empty term matches nothing, nor does one that does not parse
// (TermParses): required, it selects no node; preferred, it adds no weight.
bool MatchesTerm(const NodeSelectorTerm& term, const Node& node);

// Required node affinity: no requirement = match; terms ORed (all-empty = no match).
bool MatchesRequiredAffinity(const NodeAffinity& affinity, const Node& node);

// nodeSelector AND required node affinity (kube-scheduler NodeAffinity filter).
bool MatchesNodeSelectorAndAffinity(const PodScheduling& pod, const Node& node);

// Sum of weights of the preferred terms that match (zero-weight and empty terms skipped).
int64_t PreferredAffinityScore(const NodeAffinity& affinity, const Node& node);

// DNS-1123 subdomain, as Kubernetes requires of object names: lowercase alphanumerics, '-' and
// '.', alphanumeric at both ends, at most 253 characters.
bool IsDnsSubdomain(std::string_view s);
// Label key syntax: optional DNS-subdomain prefix and '/', then a name of at most 63
// alphanumerics, '-', '_', '.' starting and ending with an alphanumeric.
bool IsQualifiedName(std::string_view name);
// Empty, or at most 63 characters of the name syntax above.
bool IsValidLabelValue(std::string_view value);

// API-server validation (pkg/apis/core/validation). Errors name `field_path` plus index/field:
// empty key requires Exists; Exists requires an empty value; tolerationSeconds only with
// NoExecute; keys must be qualified names.
Status ValidateToleration(const Toleration& toleration, std::string_view field_path);
Status ValidateTolerations(std::span<const Toleration> tolerations, std::string_view field_path);
// In/NotIn need >= 1 value; Exists/DoesNotExist need none; Gt/Lt exactly one int64 value.
Status ValidateRequirement(const NodeSelectorRequirement& requirement, std::string_view field_path);
// matchFields: key metadata.name, In/NotIn, exactly one value.
Status ValidateFieldRequirement(const NodeSelectorRequirement& requirement,
                                std::string_view field_path);
Status ValidateNodeAffinity(const NodeAffinity& affinity, std::string_view field_path);

// A pod's scheduling fields as the API server would check them: spec.nodeSelector keys and
// values, spec.affinity.nodeAffinity, spec.tolerations (paths start with "spec.").
Status ValidatePodScheduling(const PodScheduling& pod);

}  // namespace gpupool::model
