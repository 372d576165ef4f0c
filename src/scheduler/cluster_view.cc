#include "scheduler/cluster_view.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "common/saturating.h"
#include "model/match.h"
#include "model/queue.h"

namespace gpupool::scheduler {
namespace {

// Length-prefixed (raw bytes of the length), so the key is unambiguous without escaping.
void AppendField(std::string& key, std::string_view text) {
  const uint32_t size = static_cast<uint32_t>(text.size());
  key.append(reinterpret_cast<const char*>(&size), sizeof size);
  key += text;
}

void AppendRequirements(std::string& key, const std::vector<model::NodeSelectorRequirement>& reqs) {
  key += '[';
  for (const auto& r : reqs) {
    AppendField(key, r.key);
    key += static_cast<char>('0' + static_cast<int>(r.op));
    for (const auto& v : r.values) AppendField(key, v);
    key += ';';
  }
  key += ']';
}

void AppendTerm(std::string& key, const model::NodeSelectorTerm& term) {
  AppendRequirements(key, term.match_expressions);
  AppendRequirements(key, term.match_fields);
}

std::string SignatureKey(const model::PodScheduling& pod) {
  std::string key;
  key.reserve(128);
  key += "S";
  for (const auto& [k, v] : pod.node_selector) {
    AppendField(key, k);
    AppendField(key, v);
  }
  key += "T";
  for (const auto& t : pod.tolerations) {
    AppendField(key, t.key);
    key += t.op == model::TolerationOperator::kExists ? 'X' : 'E';
    AppendField(key, t.value);
    key += t.effect ? static_cast<char>('0' + static_cast<int>(*t.effect)) : '*';
    key += t.toleration_seconds ? std::to_string(*t.toleration_seconds) : "-";
  }
  key += "R";
  if (pod.affinity.required) {
    key += std::to_string(pod.affinity.required->size());
    for (const auto& term : *pod.affinity.required) AppendTerm(key, term);
  } else {
    key += "none";
  }
  key += "P";
  for (const auto& p : pod.affinity.preferred) {
    key += std::to_string(p.weight);
    AppendTerm(key, p.preference);
  }
  return key;
}

}  // namespace

int64_t DimAmount(std::string_view resource, const model::Quantity& q) {
  if (resource == "cpu") return q.MilliValue();
  return q.Value();
}

ClusterView::ClusterView(const std::vector<model::Node>& nodes,
                         const std::vector<model::NodePool>& node_pools) {
  InternDim("cpu");
  InternDim("memory");
  InternDim("pods");
  for (const auto& node : nodes) {
    for (const auto& [name, q] : node.allocatable) {
      if (name != "nvidia.com/gpu") InternDim(name);
    }
  }
  // Node pools sorted by name; "default" (nodes in no pool) is index 0.
  std::vector<const model::NodePool*> pools;
  for (const auto& p : node_pools) pools.push_back(&p);
  std::sort(pools.begin(), pools.end(),
            [](const auto* a, const auto* b) { return a->name < b->name; });
  pool_names_.emplace_back(model::kDefaultNodePool);
  topology_keys_.emplace_back();
  for (const auto* p : pools) {
    pool_names_.push_back(p->name);
    topology_keys_.push_back(p->topology_keys);
  }
  pool_nodes_.resize(pool_names_.size());
  pool_capacity_.assign(pool_names_.size() * 3, 0);
  nodes_.resize(nodes.size());
  int device_total = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeView& v = nodes_[i];
    v.node = &nodes[i];
    v.unschedulable = nodes[i].unschedulable;
    v.no_execute = std::any_of(nodes[i].taints.begin(), nodes[i].taints.end(), [](const auto& t) {
      return t.effect == model::TaintEffect::kNoExecute;
    });
    v.pool = 0;
    for (size_t p = 0; p < pools.size(); ++p) {
      auto it = nodes[i].labels.find(pools[p]->label_key);
      if (it != nodes[i].labels.end() && it->second == pools[p]->label_value) {
        v.pool = static_cast<int>(p) + 1;
        break;
      }
    }
    auto gpu = nodes[i].allocatable.find("nvidia.com/gpu");
    v.gpu_devices = gpu == nodes[i].allocatable.end()
                        ? 0
                        : static_cast<int>(std::clamp<int64_t>(gpu->second.Value(), 0, 1024));
    v.device_offset = device_total;
    v.full_free = v.gpu_devices;
    v.max_device_free = v.gpu_devices > 0 ? 1000 : 0;
    device_total += v.gpu_devices;
    pool_nodes_[v.pool].push_back(static_cast<int>(i));
    node_index_[nodes[i].name] = static_cast<int>(i);
  }
  device_free_.assign(device_total, 1000);
  std::vector<int> by_name(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) by_name[i] = static_cast<int>(i);
  std::sort(by_name.begin(), by_name.end(),
            [&](int a, int b) { return nodes[a].name < nodes[b].name; });
  for (size_t r = 0; r < by_name.size(); ++r) nodes_[by_name[r]].name_rank = static_cast<int>(r);
  std::map<std::pair<model::ResourceList, bool>, int> shapes;
  for (NodeView& v : nodes_) {
    auto [it, inserted] =
        shapes.try_emplace({v.node->allocatable, v.unschedulable}, static_cast<int>(shapes.size()));
    v.shape_class = it->second;
  }
  std::unordered_map<std::string, int> topology_ids;
  for (NodeView& v : nodes_) {
    for (const std::string& key : topology_keys_[v.pool]) {
      auto it = v.node->labels.find(key);
      if (it == v.node->labels.end()) {
        v.topology.push_back(-1);
        continue;
      }
      auto [id, inserted] =
          topology_ids.try_emplace(key + "=" + it->second, static_cast<int>(topology_ids.size()));
      v.topology.push_back(id->second);
    }
  }
  Finalize();
}

bool ClusterView::ResetForCycle(const std::vector<model::Node>& nodes) {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    NodeView& v = nodes_[i];
    v.node = &nodes[i];
    v.full_free = v.gpu_devices;
    v.max_device_free = v.gpu_devices > 0 ? 1000 : 0;
  }
  free_ = allocatable_;
  std::fill(device_free_.begin(), device_free_.end(), 1000);
  // A signature's static list depends on the nodes and the signature alone, so it stays; only
  // what a cycle learns in it goes. Signature ids are only ever looked up, never ordered, so
  // keeping them changes no decision. Bounded, for a long-lived caller seeing ever new pods.
  constexpr size_t kMaxKeptSignatures = 4096;
  if (signatures_.size() > kMaxKeptSignatures) {
    signatures_.clear();
    static_.clear();
    static_index_.clear();
    return false;
  }
  for (auto& [key, list] : static_) {
    list.failed.clear();
    list.next_start = 0;
  }
  return true;
}

int ClusterView::InternDim(const std::string& resource) {
  // The dimensions every pod asks for, once interned (first, by the constructor), without
  // hashing their names.
  if (dim_names_.size() > kMemoryDim) {
    if (resource == "cpu") return kCpuDim;
    if (resource == "memory") return kMemoryDim;
  }
  auto it = dim_index_.find(resource);
  if (it != dim_index_.end()) return it->second;
  int dim = static_cast<int>(dim_names_.size());
  dim_names_.push_back(resource);
  dim_index_[resource] = dim;
  if (!nodes_.empty()) Finalize();
  return dim;
}

// (Re)builds the free/allocatable arrays after the set of dimensions changed. Only called while
// nothing is placed yet, or with free == allocatable for new dimensions.
void ClusterView::Finalize() {
  const size_t old_stride = stride_;
  const size_t new_stride = dim_names_.size();
  std::vector<int64_t> allocatable(nodes_.size() * new_stride, 0);
  std::vector<int64_t> free(nodes_.size() * new_stride, 0);
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const model::Node& node = *nodes_[n].node;
    for (size_t d = 0; d < new_stride; ++d) {
      int64_t amount = 0;
      auto it = node.allocatable.find(dim_names_[d]);
      if (it != node.allocatable.end()) {
        amount = DimAmount(dim_names_[d], it->second);
      } else if (d == kPodsDim) {
        amount = kDefaultMaxPods;
      }
      allocatable[n * new_stride + d] = amount;
      free[n * new_stride + d] = d < old_stride ? free_[n * old_stride + d] : amount;
    }
  }
  allocatable_ = std::move(allocatable);
  free_ = std::move(free);
  stride_ = new_stride;
  std::fill(pool_capacity_.begin(), pool_capacity_.end(), 0);
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (nodes_[n].unschedulable) continue;
    int p = nodes_[n].pool;
    // Saturating: three nodes of `memory: 3Ei` hold more bytes than int64 counts.
    int64_t* capacity = &pool_capacity_[static_cast<size_t>(p) * 3];
    capacity[0] = SaturatingAdd(capacity[0], int64_t{nodes_[n].gpu_devices} * 1000);
    capacity[1] = SaturatingAdd(capacity[1], allocatable_[n * stride_ + kCpuDim]);
    capacity[2] = SaturatingAdd(capacity[2], allocatable_[n * stride_ + kMemoryDim]);
  }
}

int ClusterView::FindNode(const std::string& name) const {
  auto it = node_index_.find(name);
  return it == node_index_.end() ? -1 : it->second;
}

int ClusterView::FindPool(std::string_view name) const {
  for (size_t p = 0; p < pool_names_.size(); ++p) {
    if (pool_names_[p] == name) return static_cast<int>(p);
  }
  return -1;
}

int ClusterView::Signature(const model::PodScheduling& pod) {
  std::string key = SignatureKey(pod);
  auto [it, inserted] = signatures_.try_emplace(std::move(key), 0);
  if (inserted) it->second = static_cast<int>(signatures_.size()) - 1;
  return it->second;
}

StaticList& ClusterView::Static(int signature, int pool, const model::PodScheduling& pod) {
  const size_t index = static_cast<size_t>(signature) * pool_names_.size() + pool;
  if (index < static_index_.size() && static_index_[index] != nullptr) {
    return *static_index_[index];
  }
  if (index >= static_index_.size()) static_index_.resize(index + 1, nullptr);
  const int64_t key = int64_t{signature} * 4096 + pool;
  StaticList& list = static_[key];
  static_index_[index] = &list;
  const std::vector<int>& members = pool_nodes_[pool];
  list.pool_nodes = static_cast<int>(members.size());
  std::map<std::tuple<int, int32_t, int64_t>, int> classes;
  for (size_t position = 0; position < members.size(); ++position) {
    const int n = members[position];
    const model::Node& node = *nodes_[n].node;
    // kube-scheduler filter order: NodeUnschedulable, TaintToleration, NodeAffinity.
    if (nodes_[n].unschedulable) {
      bool tolerated = false;
      for (const auto& t : pod.tolerations) {
        if (model::ToleratesTaint(t, model::Taint{"node.kubernetes.io/unschedulable", "",
                                                  model::TaintEffect::kNoSchedule})) {
          tolerated = true;
        }
      }
      if (!tolerated) {
        ++list.static_reasons["node(s) were unschedulable"];
        continue;
      }
    }
    const model::Taint* taint = model::FindUntoleratedTaintPtr(node.taints, pod.tolerations);
    if (taint != nullptr) {
      ++list.static_reasons["node(s) had untolerated taint {" + taint->key + ": " + taint->value +
                            "}"];
      continue;
    }
    if (!model::MatchesNodeSelectorAndAffinity(pod, node)) {
      ++list.static_reasons["node(s) didn't match Pod's node affinity/selector"];
      continue;
    }
    StaticCandidate c;
    c.node = n;
    c.name_rank = nodes_[n].name_rank;
    c.intolerable_prefer_no_schedule =
        model::CountIntolerablePreferNoSchedule(node.taints, pod.tolerations);
    c.preferred_affinity = model::PreferredAffinityScore(pod.affinity, node);
    c.pristine_class = classes
                           .try_emplace({nodes_[n].shape_class, c.intolerable_prefer_no_schedule,
                                         c.preferred_affinity},
                                        static_cast<int>(classes.size()))
                           .first->second;
    list.candidates.push_back(c);
    list.positions.push_back(static_cast<int>(position));
  }
  list.num_classes = static_cast<int>(classes.size());
  list.candidate_at.assign(members.size(), -1);
  list.candidate_bits.assign((members.size() + 63) / 64, 0);
  list.class_at.assign(members.size(), -1);
  list.class_bits.assign(list.num_classes * list.candidate_bits.size(), 0);
  for (size_t i = 0; i < list.positions.size(); ++i) {
    const int position = list.positions[i];
    list.candidate_at[position] = static_cast<int>(i);
    list.class_at[position] = list.candidates[i].pristine_class;
    list.class_bits[list.candidates[i].pristine_class * list.candidate_bits.size() +
                    position / 64] |= uint64_t{1} << (position % 64);
    list.candidate_bits[position / 64] |= uint64_t{1} << (position % 64);
  }
  return list;
}

}  // namespace gpupool::scheduler
