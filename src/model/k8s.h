#pragma once
// Kubernetes value types the pool layer reasons about, with strict JSON codecs. Wrong types are
// InvalidArgument errors naming the field path (`spec.tolerations[2].effect: expected one of
// NoSchedule, PreferNoSchedule, NoExecute, got "NoSchedul" (did you mean "NoSchedule"?)`).
// Pods otherwise stay nlohmann::ordered_json so unknown fields survive round trips.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/quantity.h"

namespace gpupool::model {

using Labels = std::map<std::string, std::string>;

enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute };
std::string_view TaintEffectName(TaintEffect effect);
Result<TaintEffect> ParseTaintEffect(std::string_view text, std::string_view field_path);

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;

  // "key=value:Effect" ("key:Effect" when value is empty).
  std::string ToString() const;
  friend bool operator==(const Taint&, const Taint&) = default;
};

// "key=value:Effect" or "key:Effect" (kubectl taint syntax).
Result<Taint> ParseTaintSpec(std::string_view text);

enum class TolerationOperator { kEqual, kExists };

struct Toleration {
  std::string key;                                     // empty + kExists = every taint
  TolerationOperator op = TolerationOperator::kEqual;  // "" in JSON means Equal
  std::string value;
  std::optional<TaintEffect> effect;  // nullopt = every effect
  std::optional<int64_t> toleration_seconds;

  friend bool operator==(const Toleration&, const Toleration&) = default;
};

enum class SelectorOperator { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };
std::string_view SelectorOperatorName(SelectorOperator op);

struct NodeSelectorRequirement {
  std::string key;
  SelectorOperator op = SelectorOperator::kIn;
  std::vector<std::string> values;

  friend bool operator==(const NodeSelectorRequirement&, const NodeSelectorRequirement&) = default;
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  std::vector<NodeSelectorRequirement> match_fields;  // only key "metadata.name"

  bool empty() const { return match_expressions.empty() && match_fields.empty(); }
  friend bool operator==(const NodeSelectorTerm&, const NodeSelectorTerm&) = default;
};

struct PreferredSchedulingTerm {
  int32_t weight = 0;  // 1..100
  NodeSelectorTerm preference;

  friend bool operator==(const PreferredSchedulingTerm&, const PreferredSchedulingTerm&) = default;
};

struct NodeAffinity {
  // requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms; nullopt = no requirement.
  std::optional<std::vector<NodeSelectorTerm>> required;
  // preferredDuringSchedulingIgnoredDuringExecution.
  std::vector<PreferredSchedulingTerm> preferred;

  friend bool operator==(const NodeAffinity&, const NodeAffinity&) = default;
};

struct Node {
  std::string name;
  Labels labels;
  Labels annotations;
  std::vector<Taint> taints;
  ResourceList capacity;
  ResourceList allocatable;  // from status.allocatable, else status.capacity
  bool unschedulable = false;
  // The object as read (unknown fields kept). NodeToJson writes the typed fields over it.
  nlohmann::ordered_json raw;
};

// Reads a v1 Node: metadata.{name,labels,annotations}, spec.{taints,unschedulable},
// status.{capacity,allocatable}. Requires metadata.name. Other fields are kept in `raw`.
Result<Node> NodeFromJson(const nlohmann::ordered_json& json);

// A v1 Node: `raw` with apiVersion/kind/metadata/spec/status fields replaced by the typed ones.
nlohmann::ordered_json NodeToJson(const Node& node);

Result<Taint> TaintFromJson(const nlohmann::ordered_json& json, std::string_view field_path);
nlohmann::ordered_json TaintToJson(const Taint& taint);
Result<Toleration> TolerationFromJson(const nlohmann::ordered_json& json,
                                      std::string_view field_path);
nlohmann::ordered_json TolerationToJson(const Toleration& toleration);
Result<NodeSelectorRequirement> NodeSelectorRequirementFromJson(const nlohmann::ordered_json& json,
                                                                std::string_view field_path);
Result<NodeSelectorTerm> NodeSelectorTermFromJson(const nlohmann::ordered_json& json,
                                                  std::string_view field_path);
// Reads `spec.affinity.nodeAffinity` (pass that object).
Result<NodeAffinity> NodeAffinityFromJson(const nlohmann::ordered_json& json,
                                          std::string_view field_path);
nlohmann::ordered_json NodeAffinityToJson(const NodeAffinity& affinity);
// A {string: string} object (labels, annotations, nodeSelector); null = empty.
Result<Labels> LabelsFromJson(const nlohmann::ordered_json& json, std::string_view field_path);

// The top of a Kubernetes manifest as the API server checks it: an object with no fields beyond
// apiVersion, kind, metadata, spec and status; `api_version` as its apiVersion; metadata an
// object whose name is a non-empty string, with only the metadata fields gpupool keeps. Returns
// the metadata.
Result<nlohmann::ordered_json> ManifestMetadata(const nlohmann::ordered_json& manifest,
                                                std::string_view api_version);

// What a scheduler needs from a Pod.
struct PodScheduling {
  std::string name;
  // NOLINTNEXTLINE(readability-identifier-naming): `namespace` is a keyword.
  std::string namespace_;  // "default" when absent
  Labels labels;
  Labels annotations;
  Labels node_selector;
  NodeAffinity affinity;  // spec.affinity.nodeAffinity
  std::vector<Toleration> tolerations;
  std::string node_name;  // spec.nodeName ("" = not bound)
  std::string priority_class_name;
  std::optional<int32_t> priority;  // spec.priority
  // Effective requests, as kube-scheduler computes them (resource.PodRequests):
  //   per container: requests, with limits standing in for missing requests;
  //   sum over regular containers and restartable (sidecar, restartPolicy: Always) init
  //   containers; each non-restartable init container needs its own request plus the sidecars
  //   started before it; result = max(that sum, each init container's need) + spec.overhead.
  ResourceList requests;
  // metadata.creationTimestamp as written (RFC 3339, e.g. "2026-01-02T03:04:05Z"); "" = absent.
  // Schedulers order pods of equal priority by it, older first.
  std::string creation_timestamp;
  // spec.terminationGracePeriodSeconds: how long the pod may take to stop once told to (after
  // its preStop hooks begin); nullopt = Kubernetes' default, kDefaultTerminationGracePeriodSeconds.
  std::optional<int64_t> termination_grace_period_seconds;
  // The containers' lifecycle.preStop hooks, in container order, each described as
  // "<container>: exec /bin/sh -c save_checkpoint.sh" (or "httpGet :8080/stop", "sleep 5s").
  std::vector<std::string> pre_stop;

  int64_t GracePeriodSeconds() const;
};

inline constexpr int64_t kDefaultTerminationGracePeriodSeconds = 30;

// Reads a v1 Pod (also accepts a Pod template without metadata.name). Errors name field paths.
Result<PodScheduling> PodSchedulingFromJson(const nlohmann::ordered_json& pod);

// Just the effective requests of a pod (see PodScheduling::requests).
Result<ResourceList> PodRequestsFromJson(const nlohmann::ordered_json& pod);

}  // namespace gpupool::model
