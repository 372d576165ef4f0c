#pragma once
// Node <-> (pool, platform) membership (research/osmo.md §1.9, DESIGN §1 "Platform").
// A node belongs to a platform when the platform's merged template (pool common_pod_template
// then override_pod_template, UNRENDERED, so a templated selector value never matches) selects
// it with full Kubernetes semantics (model/match.h):
//   * spec.nodeSelector is a subset of the node's labels;
//   * spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution matches;
//   * spec.tolerations tolerate every NoSchedule and NoExecute taint of the node
//     (PreferNoSchedule taints are ignored; an empty-key Exists toleration tolerates all, as in
//     Kubernetes, unlike OSMO).
// Tolerations or affinity terms that cannot be decoded because they hold a `{{VAR}}` are
// skipped (they could not match a node either); other decode errors are reported.
// Node type: RESERVED (in exactly one pool), SHARED (in more than one), UNUSED (none).

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "config/config_set.h"
#include "model/k8s.h"

namespace gpupool::config {

struct PlatformSelector {
  model::Labels node_selector;
  model::NodeAffinity affinity;
  std::vector<model::Toleration> tolerations;
};

// Reads the selector parts of a (merged, unrendered) pod template.
Result<PlatformSelector> SelectorFromTemplate(const Json& pod_template);

bool NodeMatchesSelector(const PlatformSelector& selector, const model::Node& node);

enum class NodeType { kReserved, kShared, kUnused };
std::string_view NodeTypeName(NodeType type);  // RESERVED, SHARED, UNUSED

struct PoolPlatform {
  std::string pool;
  std::string platform;
  friend bool operator==(const PoolPlatform&, const PoolPlatform&) = default;
  friend auto operator<=>(const PoolPlatform&, const PoolPlatform&) = default;
};

struct NodeMembership {
  std::string node;
  std::vector<PoolPlatform> memberships;  // sorted by pool, platform
  NodeType type = NodeType::kUnused;
};

// One entry per node (input order). Pools whose templates are missing are an error.
Result<std::vector<NodeMembership>> ComputeMembership(const ConfigSet& set,
                                                      const std::vector<model::Node>& nodes);

// Backends split one cluster's nodes by the node label gpupool.io/backend: a node carrying it
// belongs to that backend alone; a node without it belongs to the cluster the server runs and
// serves the pools of every backend (one server, one cluster: the common case needs no label).
inline constexpr std::string_view kBackendLabel = "gpupool.io/backend";
bool NodeInBackend(const model::Node& node, std::string_view backend);

// What keeps a pool's pods off other backends' nodes in the scheduler: a required node-affinity
// requirement `gpupool.io/backend NotIn (node_backends minus backend)`, ANDed into every required
// term (one term of its own when the pod has none). `node_backends`: the label's values on the
// cluster's nodes. Nothing when no node belongs to another backend.
void ScopePodToBackend(model::PodScheduling& pod, std::string_view backend,
                       const std::set<std::string>& node_backends);
std::set<std::string> NodeBackends(const std::vector<model::Node>& nodes);

// The nodes of one platform (pointers into `nodes`, input order).
Result<std::vector<const model::Node*>> PlatformNodes(const ConfigSet& set, const Pool& pool,
                                                      std::string_view platform,
                                                      const std::vector<model::Node>& nodes);
// The same, from the platform's merged pod template (PlatformTemplate) when the caller has it,
// for a pool of `backend`.
Result<std::vector<const model::Node*>> PlatformNodesOf(const Json& merged_template,
                                                        const std::vector<model::Node>& nodes,
                                                        std::string_view backend);

}  // namespace gpupool::config
