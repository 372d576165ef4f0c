#include "model/k8s.h"

#include <limits>

#include "codec/field_path.h"
#include "codec/json_reader.h"
#include "common/strings.h"

namespace gpupool::model {
namespace {

using codec::FieldPath;
using codec::IndexPath;
using codec::JsonTypeName;
using nlohmann::ordered_json;

Status TypeError(std::string_view path, std::string_view expected, const ordered_json& got) {
  return InvalidArgumentError(std::string(path) + ": expected " + std::string(expected) + ", got " +
                              JsonTypeName(got));
}

using codec::CheckKnownFields;

// Optional member lookup: nullptr when absent or null.
const ordered_json* Member(const ordered_json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(std::string(key));
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

Result<std::string> StringField(const ordered_json& object, std::string_view key,
                                std::string_view path) {
  const ordered_json* v = Member(object, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return TypeError(FieldPath(path, key), "a string", *v);
  return v->get<std::string>();
}

Result<bool> BoolField(const ordered_json& object, std::string_view key, std::string_view path) {
  const ordered_json* v = Member(object, key);
  if (v == nullptr) return false;
  if (!v->is_boolean()) return TypeError(FieldPath(path, key), "true or false", *v);
  return v->get<bool>();
}

Result<std::optional<int64_t>> IntField(const ordered_json& object, std::string_view key,
                                        std::string_view path, int64_t min, int64_t max) {
  const ordered_json* v = Member(object, key);
  if (v == nullptr) return std::optional<int64_t>();
  std::string field = FieldPath(path, key);
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(max)) {
      return InvalidArgumentError(field + ": " + std::to_string(u) + " is out of range");
    }
    return std::optional<int64_t>(static_cast<int64_t>(u));
  }
  if (v->is_number_integer()) {
    int64_t i = v->get<int64_t>();
    if (i < min || i > max) {
      return InvalidArgumentError(field + ": " + std::to_string(i) + " is out of range");
    }
    return std::optional<int64_t>(i);
  }
  return TypeError(field, "an integer", *v);
}

Result<const ordered_json*> ObjectMember(const ordered_json& object, std::string_view key,
                                         std::string_view path) {
  const ordered_json* v = Member(object, key);
  if (v != nullptr && !v->is_object()) return TypeError(FieldPath(path, key), "an object", *v);
  return v;
}

Result<const ordered_json*> ArrayMember(const ordered_json& object, std::string_view key,
                                        std::string_view path) {
  const ordered_json* v = Member(object, key);
  if (v != nullptr && !v->is_array()) return TypeError(FieldPath(path, key), "a list", *v);
  return v;
}

Result<std::vector<Taint>> TaintsFromJson(const ordered_json* list, std::string_view path) {
  std::vector<Taint> taints;
  if (list == nullptr) return taints;
  for (size_t i = 0; i < list->size(); ++i) {
    ASSIGN_OR_RETURN(Taint taint, TaintFromJson((*list)[i], IndexPath(path, i)));
    taints.push_back(std::move(taint));
  }
  return taints;
}

Result<ResourceList> ContainerRequests(const ordered_json& container, std::string_view path) {
  if (!container.is_object()) return TypeError(path, "an object", container);
  ASSIGN_OR_RETURN(const ordered_json* resources, ObjectMember(container, "resources", path));
  ResourceList requests;
  if (resources == nullptr) return requests;
  std::string resources_path = FieldPath(path, "resources");
  ResourceList limits;
  if (const ordered_json* r = Member(*resources, "requests")) {
    ASSIGN_OR_RETURN(requests, ParseResourceList(*r, FieldPath(resources_path, "requests")));
  }
  if (const ordered_json* l = Member(*resources, "limits")) {
    ASSIGN_OR_RETURN(limits, ParseResourceList(*l, FieldPath(resources_path, "limits")));
  }
  // API-server defaulting: a limit stands in for a missing request.
  for (const auto& [name, q] : limits) requests.emplace(name, q);
  return requests;
}

Result<std::vector<Toleration>> TolerationsFromJson(const ordered_json* list,
                                                    std::string_view path) {
  std::vector<Toleration> out;
  if (list == nullptr) return out;
  for (size_t i = 0; i < list->size(); ++i) {
    ASSIGN_OR_RETURN(Toleration t, TolerationFromJson((*list)[i], IndexPath(path, i)));
    out.push_back(std::move(t));
  }
  return out;
}

Result<std::vector<NodeSelectorRequirement>> RequirementsFromJson(const ordered_json& object,
                                                                  std::string_view key,
                                                                  std::string_view path) {
  std::vector<NodeSelectorRequirement> out;
  ASSIGN_OR_RETURN(const ordered_json* list, ArrayMember(object, key, path));
  if (list == nullptr) return out;
  std::string list_path = FieldPath(path, key);
  for (size_t i = 0; i < list->size(); ++i) {
    ASSIGN_OR_RETURN(NodeSelectorRequirement r,
                     NodeSelectorRequirementFromJson((*list)[i], IndexPath(list_path, i)));
    out.push_back(std::move(r));
  }
  return out;
}

ordered_json RequirementToJson(const NodeSelectorRequirement& r) {
  ordered_json out = ordered_json::object();
  out["key"] = r.key;
  out["operator"] = std::string(SelectorOperatorName(r.op));
  if (!r.values.empty()) out["values"] = r.values;
  return out;
}

ordered_json TermToJson(const NodeSelectorTerm& term) {
  ordered_json out = ordered_json::object();
  if (!term.match_expressions.empty()) {
    ordered_json list = ordered_json::array();
    for (const auto& r : term.match_expressions) list.push_back(RequirementToJson(r));
    out["matchExpressions"] = std::move(list);
  }
  if (!term.match_fields.empty()) {
    ordered_json list = ordered_json::array();
    for (const auto& r : term.match_fields) list.push_back(RequirementToJson(r));
    out["matchFields"] = std::move(list);
  }
  return out;
}

// `labels` written over `raw`, keeping the raw order of keys that remain.
ordered_json MergeLabels(const ordered_json* raw, const Labels& labels) {
  ordered_json out = ordered_json::object();
  if (raw != nullptr && raw->is_object()) {
    for (const auto& [key, unused] : raw->items()) {
      auto it = labels.find(key);
      if (it != labels.end()) out[key] = it->second;
    }
  }
  for (const auto& [k, v] : labels) {
    if (!out.contains(k)) out[k] = v;
  }
  return out;
}

// Writes `typed` over `raw` (a JSON object of quantities), keeping raw strings that parse to the
// same value and the raw order.
ordered_json MergeResourceList(const ordered_json* raw, const ResourceList& typed) {
  ordered_json out = ordered_json::object();
  if (raw != nullptr && raw->is_object()) {
    for (const auto& [name, value] : raw->items()) {
      auto it = typed.find(name);
      if (it == typed.end()) continue;
      auto parsed = ParseQuantityJson(value, name);
      out[name] =
          parsed.ok() && *parsed == it->second ? value : ordered_json(it->second.ToString());
    }
  }
  for (const auto& [name, q] : typed) {
    if (!out.contains(name)) out[name] = q.ToString();
  }
  return out;
}

ordered_json& EnsureObject(ordered_json& parent, const char* key) {
  ordered_json& child = parent[key];
  if (!child.is_object()) child = ordered_json::object();
  return child;
}

}  // namespace

std::string_view TaintEffectName(TaintEffect effect) {
  switch (effect) {
    case TaintEffect::kNoSchedule:
      return "NoSchedule";
    case TaintEffect::kPreferNoSchedule:
      return "PreferNoSchedule";
    case TaintEffect::kNoExecute:
      return "NoExecute";
  }
  return "NoSchedule";
}

Result<TaintEffect> ParseTaintEffect(std::string_view text, std::string_view field_path) {
  if (text == "NoSchedule") return TaintEffect::kNoSchedule;
  if (text == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (text == "NoExecute") return TaintEffect::kNoExecute;
  std::vector<std::string> names = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
  return InvalidArgumentError(std::string(field_path) +
                              ": expected one of NoSchedule, PreferNoSchedule, NoExecute, got \"" +
                              std::string(text) + "\"" + DidYouMean(text, names));
}

std::string_view SelectorOperatorName(SelectorOperator op) {
  switch (op) {
    case SelectorOperator::kIn:
      return "In";
    case SelectorOperator::kNotIn:
      return "NotIn";
    case SelectorOperator::kExists:
      return "Exists";
    case SelectorOperator::kDoesNotExist:
      return "DoesNotExist";
    case SelectorOperator::kGt:
      return "Gt";
    case SelectorOperator::kLt:
      return "Lt";
  }
  return "In";
}

std::string Taint::ToString() const {
  std::string out = key;
  if (!value.empty()) out += "=" + value;
  out += ":";
  out += TaintEffectName(effect);
  return out;
}

Result<Taint> ParseTaintSpec(std::string_view text) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return InvalidArgumentError("invalid taint \"" + std::string(text) +
                                "\": expected key=value:Effect or key:Effect");
  }
  Taint taint;
  std::string_view head = text.substr(0, colon);
  size_t eq = head.find('=');
  taint.key = std::string(head.substr(0, eq));
  if (eq != std::string_view::npos) taint.value = std::string(head.substr(eq + 1));
  if (taint.key.empty()) {
    return InvalidArgumentError("invalid taint \"" + std::string(text) + "\": empty key");
  }
  ASSIGN_OR_RETURN(taint.effect, ParseTaintEffect(text.substr(colon + 1),
                                                  "taint \"" + std::string(text) + "\" effect"));
  return taint;
}

Result<ordered_json> ManifestMetadata(const ordered_json& manifest, std::string_view api_version) {
  if (!manifest.is_object()) {
    return InvalidArgumentError("manifest: expected an object, got " + JsonTypeName(manifest));
  }
  RETURN_IF_ERROR(
      codec::CheckKnownFields(manifest, "", {"apiVersion", "kind", "metadata", "spec", "status"}));
  const ordered_json given = manifest.value("apiVersion", ordered_json());
  if (!given.is_string() || given.get<std::string>() != api_version) {
    return InvalidArgumentError("apiVersion: expected \"" + std::string(api_version) + "\", got " +
                                given.dump());
  }
  ordered_json metadata = manifest.value("metadata", ordered_json());
  if (!metadata.is_object() || !metadata.contains("name") || !metadata["name"].is_string() ||
      metadata["name"].get<std::string>().empty()) {
    return InvalidArgumentError("metadata.name: required string");
  }
  RETURN_IF_ERROR(codec::CheckKnownFields(metadata, "metadata",
                                          {"name", "namespace", "labels", "annotations", "uid",
                                           "resourceVersion", "creationTimestamp", "generation"}));
  return metadata;
}

Result<Labels> LabelsFromJson(const ordered_json& json, std::string_view field_path) {
  Labels labels;
  if (json.is_null()) return labels;
  if (!json.is_object()) return TypeError(field_path, "an object of strings", json);
  for (const auto& [key, value] : json.items()) {
    if (!value.is_string()) return TypeError(FieldPath(field_path, key), "a string", value);
    labels[key] = value.get<std::string>();
  }
  return labels;
}

Result<Taint> TaintFromJson(const ordered_json& json, std::string_view field_path) {
  if (!json.is_object()) return TypeError(field_path, "an object", json);
  RETURN_IF_ERROR(CheckKnownFields(json, field_path, {"key", "value", "effect", "timeAdded"}));
  Taint taint;
  ASSIGN_OR_RETURN(taint.key, StringField(json, "key", field_path));
  if (taint.key.empty()) return InvalidArgumentError(FieldPath(field_path, "key") + ": required");
  ASSIGN_OR_RETURN(taint.value, StringField(json, "value", field_path));
  ASSIGN_OR_RETURN(std::string effect, StringField(json, "effect", field_path));
  if (effect.empty()) {
    return InvalidArgumentError(FieldPath(field_path, "effect") +
                                ": required (NoSchedule, PreferNoSchedule or NoExecute)");
  }
  ASSIGN_OR_RETURN(taint.effect, ParseTaintEffect(effect, FieldPath(field_path, "effect")));
  return taint;
}

ordered_json TaintToJson(const Taint& taint) {
  ordered_json out = ordered_json::object();
  out["key"] = taint.key;
  if (!taint.value.empty()) out["value"] = taint.value;
  out["effect"] = std::string(TaintEffectName(taint.effect));
  return out;
}

Result<Toleration> TolerationFromJson(const ordered_json& json, std::string_view field_path) {
  if (!json.is_object()) return TypeError(field_path, "an object", json);
  RETURN_IF_ERROR(CheckKnownFields(json, field_path,
                                   {"key", "operator", "value", "effect", "tolerationSeconds"}));
  Toleration t;
  ASSIGN_OR_RETURN(t.key, StringField(json, "key", field_path));
  ASSIGN_OR_RETURN(std::string op, StringField(json, "operator", field_path));
  if (op.empty() || op == "Equal") {
    t.op = TolerationOperator::kEqual;
  } else if (op == "Exists") {
    t.op = TolerationOperator::kExists;
  } else {
    return InvalidArgumentError(FieldPath(field_path, "operator") +
                                ": expected Equal or Exists, got \"" + op + "\"" +
                                DidYouMean(op, {"Equal", "Exists"}));
  }
  ASSIGN_OR_RETURN(t.value, StringField(json, "value", field_path));
  ASSIGN_OR_RETURN(std::string effect, StringField(json, "effect", field_path));
  if (!effect.empty()) {
    ASSIGN_OR_RETURN(t.effect, ParseTaintEffect(effect, FieldPath(field_path, "effect")));
  }
  ASSIGN_OR_RETURN(t.toleration_seconds, IntField(json, "tolerationSeconds", field_path,
                                                  std::numeric_limits<int64_t>::min(),
                                                  std::numeric_limits<int64_t>::max()));
  return t;
}

ordered_json TolerationToJson(const Toleration& t) {
  ordered_json out = ordered_json::object();
  if (!t.key.empty()) out["key"] = t.key;
  out["operator"] = t.op == TolerationOperator::kExists ? "Exists" : "Equal";
  if (!t.value.empty()) out["value"] = t.value;
  if (t.effect) out["effect"] = std::string(TaintEffectName(*t.effect));
  if (t.toleration_seconds) out["tolerationSeconds"] = *t.toleration_seconds;
  return out;
}

Result<NodeSelectorRequirement> NodeSelectorRequirementFromJson(const ordered_json& json,
                                                                std::string_view field_path) {
  if (!json.is_object()) return TypeError(field_path, "an object", json);
  RETURN_IF_ERROR(CheckKnownFields(json, field_path, {"key", "operator", "values"}));
  NodeSelectorRequirement r;
  ASSIGN_OR_RETURN(r.key, StringField(json, "key", field_path));
  ASSIGN_OR_RETURN(std::string op, StringField(json, "operator", field_path));
  static const std::vector<std::string> kOperators = {"In",           "NotIn", "Exists",
                                                      "DoesNotExist", "Gt",    "Lt"};
  bool found = false;
  for (size_t i = 0; i < kOperators.size(); ++i) {
    if (op == kOperators[i]) {
      r.op = static_cast<SelectorOperator>(i);
      found = true;
    }
  }
  if (!found) {
    return InvalidArgumentError(
        FieldPath(field_path, "operator") +
        ": expected one of In, NotIn, Exists, DoesNotExist, Gt, Lt, got \"" + op + "\"" +
        DidYouMean(op, kOperators));
  }
  ASSIGN_OR_RETURN(const ordered_json* values, ArrayMember(json, "values", field_path));
  if (values != nullptr) {
    std::string values_path = FieldPath(field_path, "values");
    for (size_t i = 0; i < values->size(); ++i) {
      const ordered_json& v = (*values)[i];
      if (!v.is_string()) return TypeError(IndexPath(values_path, i), "a string", v);
      r.values.push_back(v.get<std::string>());
    }
  }
  return r;
}

Result<NodeSelectorTerm> NodeSelectorTermFromJson(const ordered_json& json,
                                                  std::string_view field_path) {
  if (!json.is_object()) return TypeError(field_path, "an object", json);
  RETURN_IF_ERROR(CheckKnownFields(json, field_path, {"matchExpressions", "matchFields"}));
  NodeSelectorTerm term;
  ASSIGN_OR_RETURN(term.match_expressions,
                   RequirementsFromJson(json, "matchExpressions", field_path));
  ASSIGN_OR_RETURN(term.match_fields, RequirementsFromJson(json, "matchFields", field_path));
  return term;
}

Result<NodeAffinity> NodeAffinityFromJson(const ordered_json& json, std::string_view field_path) {
  NodeAffinity affinity;
  if (json.is_null()) return affinity;
  if (!json.is_object()) return TypeError(field_path, "an object", json);
  RETURN_IF_ERROR(CheckKnownFields(json, field_path,
                                   {"requiredDuringSchedulingIgnoredDuringExecution",
                                    "preferredDuringSchedulingIgnoredDuringExecution"}));
  ASSIGN_OR_RETURN(
      const ordered_json* required,
      ObjectMember(json, "requiredDuringSchedulingIgnoredDuringExecution", field_path));
  if (required != nullptr) {
    std::string required_path =
        FieldPath(field_path, "requiredDuringSchedulingIgnoredDuringExecution");
    RETURN_IF_ERROR(CheckKnownFields(*required, required_path, {"nodeSelectorTerms"}));
    ASSIGN_OR_RETURN(const ordered_json* terms,
                     ArrayMember(*required, "nodeSelectorTerms", required_path));
    std::vector<NodeSelectorTerm> parsed;
    if (terms != nullptr) {
      std::string terms_path = FieldPath(required_path, "nodeSelectorTerms");
      for (size_t i = 0; i < terms->size(); ++i) {
        ASSIGN_OR_RETURN(NodeSelectorTerm term,
                         NodeSelectorTermFromJson((*terms)[i], IndexPath(terms_path, i)));
        parsed.push_back(std::move(term));
      }
    }
    affinity.required = std::move(parsed);
  }
  ASSIGN_OR_RETURN(
      const ordered_json* preferred,
      ArrayMember(json, "preferredDuringSchedulingIgnoredDuringExecution", field_path));
  if (preferred != nullptr) {
    std::string preferred_path =
        FieldPath(field_path, "preferredDuringSchedulingIgnoredDuringExecution");
    for (size_t i = 0; i < preferred->size(); ++i) {
      const ordered_json& item = (*preferred)[i];
      std::string item_path = IndexPath(preferred_path, i);
      if (!item.is_object()) return TypeError(item_path, "an object", item);
      RETURN_IF_ERROR(CheckKnownFields(item, item_path, {"weight", "preference"}));
      PreferredSchedulingTerm term;
      ASSIGN_OR_RETURN(std::optional<int64_t> weight,
                       IntField(item, "weight", item_path, std::numeric_limits<int32_t>::min(),
                                std::numeric_limits<int32_t>::max()));
      term.weight = static_cast<int32_t>(weight.value_or(0));
      const ordered_json* preference = Member(item, "preference");
      if (preference != nullptr) {
        ASSIGN_OR_RETURN(term.preference,
                         NodeSelectorTermFromJson(*preference, FieldPath(item_path, "preference")));
      }
      affinity.preferred.push_back(std::move(term));
    }
  }
  return affinity;
}

ordered_json NodeAffinityToJson(const NodeAffinity& affinity) {
  ordered_json out = ordered_json::object();
  if (affinity.required) {
    ordered_json terms = ordered_json::array();
    for (const auto& term : *affinity.required) terms.push_back(TermToJson(term));
    out["requiredDuringSchedulingIgnoredDuringExecution"] = {{"nodeSelectorTerms", terms}};
  }
  if (!affinity.preferred.empty()) {
    ordered_json list = ordered_json::array();
    for (const auto& p : affinity.preferred) {
      ordered_json item = ordered_json::object();
      item["weight"] = p.weight;
      item["preference"] = TermToJson(p.preference);
      list.push_back(std::move(item));
    }
    out["preferredDuringSchedulingIgnoredDuringExecution"] = std::move(list);
  }
  return out;
}

Result<Node> NodeFromJson(const ordered_json& json) {
  if (!json.is_object()) return TypeError("node", "an object", json);
  ASSIGN_OR_RETURN(std::string kind, StringField(json, "kind", ""));
  if (!kind.empty() && kind != "Node") {
    return InvalidArgumentError("kind: expected Node, got \"" + kind + "\"");
  }
  Node node;
  node.raw = json;
  ASSIGN_OR_RETURN(const ordered_json* metadata, ObjectMember(json, "metadata", ""));
  if (metadata == nullptr) return InvalidArgumentError("metadata.name: required");
  ASSIGN_OR_RETURN(node.name, StringField(*metadata, "name", "metadata"));
  if (node.name.empty()) return InvalidArgumentError("metadata.name: required");
  auto with_node = [&](const Status& s) { return s.WithContext("node \"" + node.name + "\""); };
  if (const ordered_json* labels = Member(*metadata, "labels")) {
    auto parsed = LabelsFromJson(*labels, "metadata.labels");
    if (!parsed.ok()) return with_node(parsed.status());
    node.labels = std::move(parsed).value();
  }
  if (const ordered_json* annotations = Member(*metadata, "annotations")) {
    auto parsed = LabelsFromJson(*annotations, "metadata.annotations");
    if (!parsed.ok()) return with_node(parsed.status());
    node.annotations = std::move(parsed).value();
  }
  auto spec = ObjectMember(json, "spec", "");
  if (!spec.ok()) return with_node(spec.status());
  if (*spec != nullptr) {
    auto taints = ArrayMember(**spec, "taints", "spec");
    if (!taints.ok()) return with_node(taints.status());
    auto parsed = TaintsFromJson(*taints, "spec.taints");
    if (!parsed.ok()) return with_node(parsed.status());
    node.taints = std::move(parsed).value();
    auto unschedulable = BoolField(**spec, "unschedulable", "spec");
    if (!unschedulable.ok()) return with_node(unschedulable.status());
    node.unschedulable = *unschedulable;
  }
  auto status = ObjectMember(json, "status", "");
  if (!status.ok()) return with_node(status.status());
  if (*status != nullptr) {
    if (const ordered_json* capacity = Member(**status, "capacity")) {
      auto parsed = ParseResourceList(*capacity, "status.capacity");
      if (!parsed.ok()) return with_node(parsed.status());
      node.capacity = std::move(parsed).value();
    }
    if (const ordered_json* allocatable = Member(**status, "allocatable")) {
      auto parsed = ParseResourceList(*allocatable, "status.allocatable");
      if (!parsed.ok()) return with_node(parsed.status());
      node.allocatable = std::move(parsed).value();
    } else {
      node.allocatable = node.capacity;
    }
  }
  return node;
}

ordered_json NodeToJson(const Node& node) {
  ordered_json out = node.raw.is_object() ? node.raw : ordered_json::object();
  if (!out.contains("apiVersion")) out["apiVersion"] = "v1";
  if (!out.contains("kind")) out["kind"] = "Node";
  ordered_json& metadata = EnsureObject(out, "metadata");
  metadata["name"] = node.name;
  if (!node.labels.empty() || metadata.contains("labels")) {
    metadata["labels"] = MergeLabels(Member(metadata, "labels"), node.labels);
  }
  if (!node.annotations.empty() || metadata.contains("annotations")) {
    metadata["annotations"] = MergeLabels(Member(metadata, "annotations"), node.annotations);
  }
  bool had_spec = out.contains("spec");
  if (had_spec || !node.taints.empty() || node.unschedulable) {
    ordered_json& spec = EnsureObject(out, "spec");
    if (!node.taints.empty()) {
      // Keep raw taints (timeAdded etc.) when they are the same taints.
      auto raw_taints = TaintsFromJson(Member(spec, "taints"), "spec.taints");
      if (!raw_taints.ok() || *raw_taints != node.taints) {
        ordered_json list = ordered_json::array();
        for (const Taint& t : node.taints) list.push_back(TaintToJson(t));
        spec["taints"] = std::move(list);
      }
    } else {
      spec.erase("taints");
    }
    if (node.unschedulable) {
      spec["unschedulable"] = true;
    } else {
      spec.erase("unschedulable");
    }
  }
  if (out.contains("status") || !node.capacity.empty() || !node.allocatable.empty()) {
    ordered_json& status = EnsureObject(out, "status");
    if (!node.capacity.empty() || status.contains("capacity")) {
      status["capacity"] = MergeResourceList(Member(status, "capacity"), node.capacity);
    }
    status["allocatable"] = MergeResourceList(Member(status, "allocatable"), node.allocatable);
  }
  return out;
}

Result<ResourceList> PodRequestsFromJson(const ordered_json& pod) {
  ResourceList requests;
  if (!pod.is_object()) return TypeError("pod", "an object", pod);
  ASSIGN_OR_RETURN(const ordered_json* spec, ObjectMember(pod, "spec", ""));
  if (spec == nullptr) return requests;
  ASSIGN_OR_RETURN(const ordered_json* containers, ArrayMember(*spec, "containers", "spec"));
  if (containers != nullptr) {
    for (size_t i = 0; i < containers->size(); ++i) {
      ASSIGN_OR_RETURN(ResourceList r,
                       ContainerRequests((*containers)[i], IndexPath("spec.containers", i)));
      AddResources(requests, r);
    }
  }
  ASSIGN_OR_RETURN(const ordered_json* init_containers,
                   ArrayMember(*spec, "initContainers", "spec"));
  if (init_containers != nullptr) {
    ResourceList sidecars;   // restartable init containers started so far
    ResourceList init_peak;  // max over init containers of what runs while each starts
    for (size_t i = 0; i < init_containers->size(); ++i) {
      std::string path = IndexPath("spec.initContainers", i);
      const ordered_json& c = (*init_containers)[i];
      ASSIGN_OR_RETURN(ResourceList r, ContainerRequests(c, path));
      ASSIGN_OR_RETURN(std::string restart_policy, StringField(c, "restartPolicy", path));
      if (restart_policy == "Always") {
        // A sidecar keeps running next to the regular containers.
        AddResources(requests, r);
        AddResources(sidecars, r);
        MaxResources(init_peak, sidecars);
      } else {
        if (!restart_policy.empty()) {
          return InvalidArgumentError(FieldPath(path, "restartPolicy") +
                                      ": only \"Always\" is allowed, got \"" + restart_policy +
                                      "\"");
        }
        ResourceList need = r;
        AddResources(need, sidecars);
        MaxResources(init_peak, need);
      }
    }
    MaxResources(requests, init_peak);
  }
  if (const ordered_json* overhead = Member(*spec, "overhead")) {
    ASSIGN_OR_RETURN(ResourceList o, ParseResourceList(*overhead, "spec.overhead"));
    AddResources(requests, o);
  }
  return requests;
}

namespace {

// "exec /bin/sh -c save_checkpoint.sh", "httpGet :8080/stop", "sleep 5s": what a preStop hook
// (a LifecycleHandler) runs.
Result<std::string> DescribeHandler(const ordered_json& handler, std::string_view path) {
  if (!handler.is_object()) return TypeError(path, "an object", handler);
  RETURN_IF_ERROR(CheckKnownFields(handler, path, {"exec", "httpGet", "tcpSocket", "sleep"}));
  if (handler.size() != 1) {
    return InvalidArgumentError(std::string(path) +
                                ": expected exactly one of exec, httpGet, tcpSocket, sleep");
  }
  const auto only = handler.begin();  // not items(): its proxy is a temporary the names outlive
  const std::string& kind = only.key();
  const ordered_json& body = only.value();
  const std::string body_path = FieldPath(path, kind);
  if (!body.is_object()) return TypeError(body_path, "an object", body);
  if (kind == "exec") {
    ASSIGN_OR_RETURN(const ordered_json* command, ArrayMember(body, "command", body_path));
    std::vector<std::string> words;
    for (size_t i = 0; command != nullptr && i < command->size(); ++i) {
      if (!(*command)[i].is_string()) {
        return TypeError(IndexPath(FieldPath(body_path, "command"), i), "a string", (*command)[i]);
      }
      words.push_back((*command)[i].get<std::string>());
    }
    if (words.empty()) return InvalidArgumentError(FieldPath(body_path, "command") + ": required");
    return "exec " + Join(words, " ");
  }
  if (kind == "sleep") {
    ASSIGN_OR_RETURN(std::optional<int64_t> seconds,
                     IntField(body, "seconds", body_path, 0, std::numeric_limits<int32_t>::max()));
    if (!seconds) return InvalidArgumentError(FieldPath(body_path, "seconds") + ": required");
    return "sleep " + std::to_string(*seconds) + "s";
  }
  const ordered_json* port = Member(body, "port");
  std::string where =
      port == nullptr ? "" : ":" + (port->is_string() ? port->get<std::string>() : port->dump());
  if (kind == "httpGet") {
    ASSIGN_OR_RETURN(std::string http_path, StringField(body, "path", body_path));
    return "httpGet " + where + http_path;
  }
  return "tcpSocket " + where;
}

Result<std::vector<std::string>> PreStopHooks(const ordered_json& spec) {
  std::vector<std::string> hooks;
  ASSIGN_OR_RETURN(const ordered_json* containers, ArrayMember(spec, "containers", "spec"));
  for (size_t i = 0; containers != nullptr && i < containers->size(); ++i) {
    const ordered_json& c = (*containers)[i];
    const std::string path = IndexPath("spec.containers", i);
    if (!c.is_object()) continue;  // PodRequestsFromJson reports it
    ASSIGN_OR_RETURN(const ordered_json* lifecycle, ObjectMember(c, "lifecycle", path));
    if (lifecycle == nullptr) continue;
    const ordered_json* pre_stop = Member(*lifecycle, "preStop");
    if (pre_stop == nullptr) continue;
    ASSIGN_OR_RETURN(std::string name, StringField(c, "name", path));
    ASSIGN_OR_RETURN(
        std::string what,
        DescribeHandler(*pre_stop, FieldPath(FieldPath(path, "lifecycle"), "preStop")));
    hooks.push_back((name.empty() ? "container " + std::to_string(i) : name) + ": " + what);
  }
  return hooks;
}

}  // namespace

int64_t PodScheduling::GracePeriodSeconds() const {
  return termination_grace_period_seconds.value_or(kDefaultTerminationGracePeriodSeconds);
}

Result<PodScheduling> PodSchedulingFromJson(const ordered_json& pod) {
  if (!pod.is_object()) return TypeError("pod", "an object", pod);
  PodScheduling out;
  ASSIGN_OR_RETURN(const ordered_json* metadata, ObjectMember(pod, "metadata", ""));
  if (metadata != nullptr) {
    ASSIGN_OR_RETURN(out.name, StringField(*metadata, "name", "metadata"));
    ASSIGN_OR_RETURN(out.namespace_, StringField(*metadata, "namespace", "metadata"));
    ASSIGN_OR_RETURN(out.creation_timestamp,
                     StringField(*metadata, "creationTimestamp", "metadata"));
    if (const ordered_json* labels = Member(*metadata, "labels")) {
      ASSIGN_OR_RETURN(out.labels, LabelsFromJson(*labels, "metadata.labels"));
    }
    if (const ordered_json* annotations = Member(*metadata, "annotations")) {
      ASSIGN_OR_RETURN(out.annotations, LabelsFromJson(*annotations, "metadata.annotations"));
    }
  }
  if (out.namespace_.empty()) out.namespace_ = "default";
  ASSIGN_OR_RETURN(const ordered_json* spec, ObjectMember(pod, "spec", ""));
  if (spec != nullptr) {
    if (const ordered_json* selector = Member(*spec, "nodeSelector")) {
      ASSIGN_OR_RETURN(out.node_selector, LabelsFromJson(*selector, "spec.nodeSelector"));
    }
    ASSIGN_OR_RETURN(const ordered_json* affinity, ObjectMember(*spec, "affinity", "spec"));
    if (affinity != nullptr) {
      if (const ordered_json* node_affinity = Member(*affinity, "nodeAffinity")) {
        ASSIGN_OR_RETURN(out.affinity,
                         NodeAffinityFromJson(*node_affinity, "spec.affinity.nodeAffinity"));
      }
    }
    ASSIGN_OR_RETURN(const ordered_json* tolerations, ArrayMember(*spec, "tolerations", "spec"));
    ASSIGN_OR_RETURN(out.tolerations, TolerationsFromJson(tolerations, "spec.tolerations"));
    ASSIGN_OR_RETURN(out.node_name, StringField(*spec, "nodeName", "spec"));
    ASSIGN_OR_RETURN(out.priority_class_name, StringField(*spec, "priorityClassName", "spec"));
    ASSIGN_OR_RETURN(std::optional<int64_t> priority,
                     IntField(*spec, "priority", "spec", std::numeric_limits<int32_t>::min(),
                              std::numeric_limits<int32_t>::max()));
    if (priority) out.priority = static_cast<int32_t>(*priority);
    ASSIGN_OR_RETURN(out.termination_grace_period_seconds,
                     IntField(*spec, "terminationGracePeriodSeconds", "spec", 0,
                              std::numeric_limits<int64_t>::max()));
    ASSIGN_OR_RETURN(out.pre_stop, PreStopHooks(*spec));
  }
  ASSIGN_OR_RETURN(out.requests, PodRequestsFromJson(pod));
  return out;
}

}  // namespace gpupool::model
