#include "model/quota_tree.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "common/strings.h"

namespace gpupool::model {
namespace {

std::vector<std::string> Keys(const auto& map) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : map) keys.push_back(key);
  return keys;
}

QuotaTreeFinding QueueFinding(const std::string& queue, const std::string& text) {
  return {"QUEUE", queue, "queue " + Quoted(queue) + ": " + text};
}

void CheckParent(const Queue& queue, const std::map<std::string, Queue>& queues,
                 QuotaTreeCheck& out) {
  if (queue.parent.empty()) return;
  auto parent = queues.find(queue.parent);
  if (parent == queues.end()) {
    out.errors.push_back(QueueFinding(
        queue.name, "parent: queue " + Quoted(queue.parent) + " does not exist" +
                        DidYouMean(queue.parent, Keys(queues)) +
                        "; a project's parent is a department (a queue without parent)"));
  } else if (!parent->second.parent.empty()) {
    out.errors.push_back(QueueFinding(
        queue.name, "parent: queue " + Quoted(queue.parent) + " is a project (its parent is " +
                        Quoted(parent->second.parent) +
                        "); queues have two levels, department -> project"));
  }
}

void CheckNodePoolNames(const Queue& queue, const std::map<std::string, NodePool>& node_pools,
                        QuotaTreeCheck& out) {
  std::vector<std::string> known = Keys(node_pools);
  known.emplace_back(kDefaultNodePool);
  for (const auto& [pool, quota] : queue.resources) {
    if (pool == kDefaultNodePool || node_pools.contains(pool)) continue;
    out.errors.push_back(QueueFinding(queue.name, "resources." + pool + ": node pool " +
                                                      Quoted(pool) + " does not exist" +
                                                      DidYouMean(pool, known)));
  }
}

// Deserved above the department's, by one project or by the projects together: warnings.
void CheckDeserved(const Queue& department, const std::vector<const Queue*>& projects,
                   QuotaTreeCheck& out) {
  std::set<std::string> pools;
  for (const Queue* p : projects) {
    for (const auto& [pool, quota] : p->resources) pools.insert(pool);
  }
  for (const std::string& pool : pools) {
    const NodePoolQuota& dept = department.QuotaIn(pool);
    for (int r = 0; r < kNumQuotaResources; ++r) {
      const auto resource = static_cast<QuotaResource>(r);
      const int64_t cap = dept.resources[r].deserved_milli;
      if (cap == kUnlimited) continue;
      int64_t sum = 0;
      bool unlimited = false;
      for (const Queue* p : projects) {
        const int64_t d = p->QuotaIn(pool).resources[r].deserved_milli;
        if (d == kUnlimited) unlimited = true;
        if (d == kUnlimited || d > cap) {
          out.warnings.push_back(QueueFinding(
              p->name,
              "resources." + pool + "." + std::string(kQuotaResourceNames[r]) + ".deserved: " +
                  (d == kUnlimited ? std::string("unlimited") : FormatQuotaAmount(resource, d)) +
                  " is more than department " + Quoted(department.name) + " deserves (" +
                  FormatQuotaAmount(resource, cap) +
                  "); accepted, but the project never gets more than its department's share"));
        }
        if (d != kUnlimited) sum += d;
      }
      if (!unlimited && projects.size() > 1 && sum > cap) {
        out.warnings.push_back(QueueFinding(
            department.name, "resources." + pool + "." + std::string(kQuotaResourceNames[r]) +
                                 ".deserved: " + FormatQuotaAmount(resource, cap) +
                                 " is less than its projects deserve together (" +
                                 FormatQuotaAmount(resource, sum) +
                                 "); accepted, but their deserved quotas cannot all be met"));
      }
    }
  }
}

// Every node pool of a label shared with others is named, so that the one being written is.
void CheckLabels(const std::map<std::string, NodePool>& node_pools, QuotaTreeCheck& out) {
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> by_label;
  for (const auto& [name, pool] : node_pools) {
    by_label[{pool.label_key, pool.label_value}].push_back(name);
  }
  for (const auto& [name, pool] : node_pools) {
    const auto& sharing = by_label[{pool.label_key, pool.label_value}];
    if (sharing.size() < 2) continue;
    std::vector<std::string> others;
    for (const std::string& other : sharing) {
      if (other != name) others.push_back(Quoted(other));
    }
    out.errors.push_back({"NODE_POOL", name,
                          "node pool " + Quoted(name) + ": label_value: label " + pool.label_key +
                              "=" + pool.label_value + " also selects node pool " +
                              Join(others, ", ") + "; each node pool needs its own label"});
  }
}

}  // namespace

bool IsDefaultNodePoolName(std::string_view name) {
  return name == kDefaultNodePool || name == "Default";
}

std::string CanonicalNodePoolName(std::string_view name) {
  return IsDefaultNodePoolName(name) ? std::string(kDefaultNodePool) : std::string(name);
}

QuotaTreeCheck CheckQuotaTree(const std::map<std::string, Queue>& queues,
                              const std::map<std::string, NodePool>& node_pools) {
  QuotaTreeCheck out;
  std::map<std::string, std::vector<const Queue*>> projects;
  for (const auto& [name, queue] : queues) {
    CheckParent(queue, queues, out);
    CheckNodePoolNames(queue, node_pools, out);
    if (!queue.parent.empty()) projects[queue.parent].push_back(&queue);
  }
  for (const auto& [department, children] : projects) {
    auto it = queues.find(department);
    if (it == queues.end() || !it->second.parent.empty()) continue;  // refused above
    CheckDeserved(it->second, children, out);
  }
  CheckLabels(node_pools, out);
  auto order = [](const QuotaTreeFinding& a, const QuotaTreeFinding& b) {
    return std::tie(a.kind, a.name) < std::tie(b.kind, b.name);
  };
  std::stable_sort(out.errors.begin(), out.errors.end(), order);
  std::stable_sort(out.warnings.begin(), out.warnings.end(), order);
  return out;
}

std::vector<std::string> QueuesUsingNodePool(const std::map<std::string, Queue>& queues,
                                             std::string_view node_pool) {
  std::vector<std::string> out;
  for (const auto& [name, queue] : queues) {
    if (queue.resources.contains(std::string(node_pool))) out.push_back(name);
  }
  return out;
}

std::vector<std::string> ProjectsOf(const std::map<std::string, Queue>& queues,
                                    std::string_view department) {
  std::vector<std::string> out;
  for (const auto& [name, queue] : queues) {
    if (queue.parent == department) out.push_back(name);
  }
  return out;
}

std::vector<std::string> MatchingNodePools(const Node& node,
                                           const std::map<std::string, NodePool>& node_pools) {
  std::vector<std::string> out;
  for (const auto& [name, pool] : node_pools) {
    auto it = node.labels.find(pool.label_key);
    if (it != node.labels.end() && it->second == pool.label_value) out.push_back(name);
  }
  return out;
}

std::string NodePoolConflictMessage(std::string_view node,
                                    const std::vector<std::string>& matches) {
  return "node " + Quoted(node) + " matches node pools " + Join(matches, ", ") +
         "; it is scheduled in " + Quoted(matches.empty() ? "" : matches.front()) +
         " (the first by name); give it one node pool's label";
}

}  // namespace gpupool::model
