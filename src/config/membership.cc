#include "config/membership.h"

#include <algorithm>
#include <set>

#include "config/json_fields.h"
#include "config/merge.h"
#include "config/variables.h"
#include "model/match.h"

namespace gpupool::config {

namespace {

bool Templated(const Json& value) { return HasPlaceholders(internal::Dump(value)); }

// Drops match expressions that hold a placeholder; a term left empty by that, or an affinity
// that still cannot be read, means "no requirement" for membership.
Result<model::NodeAffinity> ReadAffinity(const Json& node_affinity) {
  Result<model::NodeAffinity> direct =
      model::NodeAffinityFromJson(node_affinity, "spec.affinity.nodeAffinity");
  if (direct.ok() || !Templated(node_affinity)) return direct;
  if (!node_affinity.is_object()) return model::NodeAffinity{};  // "{{VAR}}" as the whole value
  Json cleaned = node_affinity;
  auto required = cleaned.find("requiredDuringSchedulingIgnoredDuringExecution");
  bool drop_required = false;
  if (required != cleaned.end() && required->is_object()) {
    auto terms = required->find("nodeSelectorTerms");
    if (terms != required->end() && terms->is_array()) {
      for (Json& term : *terms) {
        if (!term.is_object()) continue;
        bool had = false;
        for (const char* list : {"matchExpressions", "matchFields"}) {
          auto it = term.find(list);
          if (it == term.end() || !it->is_array()) continue;
          Json kept = Json::array();
          for (const Json& e : *it) {
            if (Templated(e)) {
              had = true;
            } else {
              kept.push_back(e);
            }
          }
          *it = kept;
        }
        bool empty = true;
        for (const char* list : {"matchExpressions", "matchFields"}) {
          auto it = term.find(list);
          if (it != term.end() && it->is_array() && !it->empty()) empty = false;
        }
        if (had && empty) drop_required = true;
      }
    }
  }
  if (drop_required) cleaned.erase("requiredDuringSchedulingIgnoredDuringExecution");
  cleaned.erase("preferredDuringSchedulingIgnoredDuringExecution");
  Result<model::NodeAffinity> retry =
      model::NodeAffinityFromJson(cleaned, "spec.affinity.nodeAffinity");
  if (retry.ok()) return retry;
  return model::NodeAffinity{};
}

}  // namespace

std::string_view NodeTypeName(NodeType type) {
  switch (type) {
    case NodeType::kReserved:
      return "RESERVED";
    case NodeType::kShared:
      return "SHARED";
    case NodeType::kUnused:
      return "UNUSED";
  }
  return "UNUSED";
}

Result<PlatformSelector> SelectorFromTemplate(const Json& pod_template) {
  PlatformSelector out;
  if (!pod_template.is_object()) return out;
  auto spec = pod_template.find("spec");
  if (spec == pod_template.end() || !spec->is_object()) return out;
  auto selector = spec->find("nodeSelector");
  if (selector != spec->end() && !selector->is_null()) {
    ASSIGN_OR_RETURN(out.node_selector, model::LabelsFromJson(*selector, "spec.nodeSelector"));
  }
  auto affinity = spec->find("affinity");
  if (affinity != spec->end() && affinity->is_object()) {
    auto node_affinity = affinity->find("nodeAffinity");
    if (node_affinity != affinity->end() && !node_affinity->is_null()) {
      ASSIGN_OR_RETURN(out.affinity, ReadAffinity(*node_affinity));
    }
  }
  auto tolerations = spec->find("tolerations");
  if (tolerations != spec->end() && tolerations->is_array()) {
    for (size_t i = 0; i < tolerations->size(); ++i) {
      const Json& t = (*tolerations)[i];
      std::string path = "spec.tolerations[" + std::to_string(i) + "]";
      Result<model::Toleration> parsed = model::TolerationFromJson(t, path);
      if (!parsed.ok()) {
        if (Templated(t)) continue;
        return parsed.status();
      }
      out.tolerations.push_back(std::move(*parsed));
    }
  }
  return out;
}

bool NodeMatchesSelector(const PlatformSelector& selector, const model::Node& node) {
  if (!model::MatchesNodeSelector(selector.node_selector, node)) return false;
  if (!model::MatchesRequiredAffinity(selector.affinity, node)) return false;
  return model::FindUntoleratedTaintPtr(node.taints, selector.tolerations,
                                        model::TaintEffectSet::Scheduling()) == nullptr;
}

Result<std::vector<NodeMembership>> ComputeMembership(const ConfigSet& set,
                                                      const std::vector<model::Node>& nodes) {
  std::vector<NodeMembership> out(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) out[i].node = nodes[i].name;
  for (const auto& [pool_name, pool] : set.pools) {
    for (const std::string& platform : pool.RouteNames()) {
      ASSIGN_OR_RETURN(Json merged, PlatformTemplate(pool, platform, set));
      Result<PlatformSelector> selector = SelectorFromTemplate(merged);
      if (!selector.ok()) {
        return selector.status().WithContext("pool \"" + pool_name + "\" platform \"" + platform +
                                             "\"");
      }
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (NodeInBackend(nodes[i], pool.backend) && NodeMatchesSelector(*selector, nodes[i])) {
          out[i].memberships.push_back(PoolPlatform{pool_name, platform});
        }
      }
    }
  }
  for (NodeMembership& m : out) {
    std::sort(m.memberships.begin(), m.memberships.end());
    std::set<std::string> pools;
    for (const PoolPlatform& pp : m.memberships) pools.insert(pp.pool);
    m.type = pools.empty() ? NodeType::kUnused
                           : (pools.size() == 1 ? NodeType::kReserved : NodeType::kShared);
  }
  return out;
}

Result<std::vector<const model::Node*>> PlatformNodes(const ConfigSet& set, const Pool& pool,
                                                      std::string_view platform,
                                                      const std::vector<model::Node>& nodes) {
  ASSIGN_OR_RETURN(Json merged, PlatformTemplate(pool, platform, set));
  return PlatformNodesOf(merged, nodes, pool.backend);
}

Result<std::vector<const model::Node*>> PlatformNodesOf(const Json& merged_template,
                                                        const std::vector<model::Node>& nodes,
                                                        std::string_view backend) {
  ASSIGN_OR_RETURN(PlatformSelector selector, SelectorFromTemplate(merged_template));
  std::vector<const model::Node*> out;
  for (const model::Node& node : nodes) {
    if (NodeInBackend(node, backend) && NodeMatchesSelector(selector, node)) out.push_back(&node);
  }
  return out;
}

bool NodeInBackend(const model::Node& node, std::string_view backend) {
  auto it = node.labels.find(std::string(kBackendLabel));
  return it == node.labels.end() || it->second == backend;
}

std::set<std::string> NodeBackends(const std::vector<model::Node>& nodes) {
  std::set<std::string> out;
  for (const model::Node& node : nodes) {
    auto it = node.labels.find(std::string(kBackendLabel));
    if (it != node.labels.end()) out.insert(it->second);
  }
  return out;
}

void ScopePodToBackend(model::PodScheduling& pod, std::string_view backend,
                       const std::set<std::string>& node_backends) {
  model::NodeSelectorRequirement others{
      std::string(kBackendLabel), model::SelectorOperator::kNotIn, {}};
  for (const std::string& name : node_backends) {
    if (name != backend) others.values.push_back(name);
  }
  if (others.values.empty()) return;
  if (!pod.affinity.required.has_value()) {
    pod.affinity.required.emplace(1);
    pod.affinity.required->front().match_expressions.push_back(std::move(others));
    return;
  }
  for (model::NodeSelectorTerm& term : *pod.affinity.required) {
    // An empty term matches no node; a requirement added to it would make it match some.
    if (!term.empty()) term.match_expressions.push_back(others);
  }
}

}  // namespace gpupool::config
