#pragma once
// The quota tree and the node pools as a whole, checked when a QUEUE or NODE_POOL is written
// (DESIGN §3, seed 003):
//   - two levels: a department (no parent) holds projects (parent = a department); a parent that
//     does not exist, or is itself a project, is refused;
//   - a queue's resources name existing node pools (or `default`, also written `Default`);
//   - a node pool's label (key=value) selects it alone: two node pools with one label are refused;
//   - a project deserving more than its department in a node pool, or projects whose deserved
//     quotas add up to more than their department's, are accepted with a warning. Run:ai
//     recommends (does not require) a department quota at least the sum of its projects', and
//     KAI-Scheduler accepts any values: the fair share is divided top-down, so a project never
//     gets more than its department's share anyway.
// Errors name the config and the field path (`queue "nlp": parent: queue "rnd2" does not exist
// (did you mean "rnd"?)`) so the caller can point them at the user's file.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/k8s.h"
#include "model/node_pool.h"
#include "model/queue.h"

namespace gpupool::model {

// Seed 003 (Run:ai) writes the implicit node pool `Default`; both spellings are accepted where a
// node pool is named, and `default` (kDefaultNodePool) is the one stored and shown.
bool IsDefaultNodePoolName(std::string_view name);
// `default` for either spelling, else `name` unchanged.
std::string CanonicalNodePoolName(std::string_view name);

struct QuotaTreeFinding {
  std::string kind;  // "QUEUE" or "NODE_POOL": the config the finding is about
  std::string name;
  std::string message;  // `queue "nlp": parent: ...`
};

struct QuotaTreeCheck {
  std::vector<QuotaTreeFinding> errors;    // refuse the write
  std::vector<QuotaTreeFinding> warnings;  // accept, and say so
};

// Checks every queue and node pool. Findings come in kind, then name order.
QuotaTreeCheck CheckQuotaTree(const std::map<std::string, Queue>& queues,
                              const std::map<std::string, NodePool>& node_pools);

// Queues that name `node_pool` in their resources, and projects whose parent is `department`
// (for refusing deletes without --force). Sorted names.
std::vector<std::string> QueuesUsingNodePool(const std::map<std::string, Queue>& queues,
                                             std::string_view node_pool);
std::vector<std::string> ProjectsOf(const std::map<std::string, Queue>& queues,
                                    std::string_view department);

// The node pools whose label a node carries; more than one is a conflict the scheduler resolves
// by taking the first by name, so it is reported wherever nodes are shown.
std::vector<std::string> MatchingNodePools(const Node& node,
                                           const std::map<std::string, NodePool>& node_pools);

// `node "n" matches node pools a, b; it is scheduled in "a" (the first by name); give it one
// node pool's label` (`matches` as MatchingNodePools returns them, two or more).
std::string NodePoolConflictMessage(std::string_view node, const std::vector<std::string>& matches);

}  // namespace gpupool::model
