#include "scheduler/cycle_state.h"

#include <algorithm>
#include <limits>

#include "common/saturating.h"

namespace gpupool::scheduler {

CycleState::CycleState(ClusterView& view, std::span<const QueueState> queues, QuotaTable quota,
                       std::vector<PodState> pods)
    : view_(view), queues_(queues), quota_(std::move(quota)), pods_(std::move(pods)) {
  node_pods_.assign(view_.NumNodes(), {});
  BuildPoolLayout();
}

void CycleState::BuildPoolLayout() {
  const int pools = view_.NumPools();
  node_version_.assign(view_.NumNodes(), 1);
  pool_epoch_.assign(pools, 1);
  pool_log_.assign(pools, {});
  pool_position_.assign(view_.NumNodes(), -1);
  pool_slot_.assign(view_.NumNodes(), -1);
  pool_offset_.assign(pools, 0);
  pool_fit_.assign(pools, {});
  bound_preemptible_.assign(pools, 0);
  int pool_offset = 0;
  for (int pool = 0; pool < pools; ++pool) {
    const std::vector<int>& nodes = view_.PoolNodes(pool);
    pool_offset_[pool] = pool_offset;
    for (size_t i = 0; i < nodes.size(); ++i) {
      pool_position_[nodes[i]] = static_cast<int>(i);
      pool_slot_[nodes[i]] = pool_offset + static_cast<int>(i);
    }
    pool_offset += static_cast<int>(nodes.size());
    PoolFit& fit = pool_fit_[pool];
    for (auto* column : {&fit.cpu, &fit.memory, &fit.pods}) column->resize(nodes.size());
    for (auto& column : fit.gpu) column.resize(nodes.size());
    fit.empty.assign((nodes.size() + 63) / 64, 0);
    fit.name_rank.resize(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) fit.name_rank[i] = view_.node(nodes[i]).name_rank;
    fit.ranks_ascending = std::is_sorted(fit.name_rank.begin(), fit.name_rank.end());
  }
  // The columns are filled once binding is done (BindAll).
}

bool CycleState::GpuFits(const PodState& p, int node, int* device) const {
  const NodeView& v = view_.node(node);
  *device = -1;
  if (p.gpu_whole > 0) return v.full_free >= p.gpu_whole;
  if (p.gpu_fraction == 0) return true;
  if (v.max_device_free < p.gpu_fraction) return false;
  const int32_t* dev = view_.Devices(node);
  int32_t best = std::numeric_limits<int32_t>::max();
  for (int d = 0; d < v.gpu_devices; ++d) {
    if (dev[d] >= p.gpu_fraction && dev[d] < best) {
      best = dev[d];
      *device = d;
    }
  }
  return *device >= 0;
}

bool CycleState::Fits(const PodState& p, int node, int* device) const {
  for (const auto& [dim, amount] : p.req) {
    if (view_.Free(node, dim) < amount) return false;
  }
  return GpuFits(p, node, device);
}

void CycleState::UpdateMaxDeviceFree(int node) {
  NodeView& v = view_.node(node);
  const int32_t* dev = view_.Devices(node);
  int32_t max_free = 0;
  for (int d = 0; d < v.gpu_devices; ++d) max_free = std::max(max_free, dev[d]);
  v.max_device_free = max_free;
}

void CycleState::SyncPoolFit(int node) {
  const NodeView& v = view_.node(node);
  PoolFit& fit = pool_fit_[v.pool];
  const int at = pool_position_[node];
  fit.cpu[at] = view_.Free(node, kCpuDim);
  fit.memory[at] = view_.Free(node, kMemoryDim);
  fit.pods[at] = view_.Free(node, kPodsDim);
  fit.gpu[0][at] = v.full_free;
  fit.gpu[1][at] = v.max_device_free;
  const uint64_t bit = uint64_t{1} << (at % 64);
  fit.empty[at / 64] =
      node_pods_[node].empty() ? fit.empty[at / 64] | bit : fit.empty[at / 64] & ~bit;
}

void CycleState::Touch(int node) {
  const int pool = view_.node(node).pool;
  ++node_version_[pool_slot_[node]];
  ++pool_epoch_[pool];
  pool_log_[pool].push_back(node);
}

void CycleState::Apply(int pod, int node, int device, const std::vector<int>* exact_devices) {
  PodState& p = pods_[pod];
  NodeView& v = view_.node(node);
  Touch(node);
  for (const auto& [dim, amount] : p.req) {
    int64_t& free = view_.Free(node, dim);
    free = SaturatingSub(free, amount);  // bound pods may over-commit a node
  }
  int32_t* dev = view_.Devices(node);
  if (exact_devices != nullptr) {
    std::vector<int> devices = *exact_devices;
    p.devices = devices;
    for (int d : devices) {
      if (dev[d] == 1000) --v.full_free;
      dev[d] -= p.gpu_whole > 0 ? 1000 : p.gpu_fraction;
    }
  } else if (p.gpu_whole > 0) {
    p.devices.clear();
    for (int d = 0; d < v.gpu_devices && static_cast<int>(p.devices.size()) < p.gpu_whole; ++d) {
      if (dev[d] == 1000) p.devices.push_back(d);
    }
    for (int d : p.devices) dev[d] = 0;
    v.full_free -= static_cast<int>(p.devices.size());
  } else if (p.gpu_fraction > 0 && device >= 0) {
    p.devices.clear();
    if (dev[device] == 1000) --v.full_free;
    dev[device] -= p.gpu_fraction;
    p.devices.push_back(device);
  } else {
    p.devices.clear();
  }
  UpdateMaxDeviceFree(node);
  p.node = node;
  node_pods_[node].push_back(pod);
  SyncPoolFit(node);
  quota_.Add(p.queue, v.pool, p.quota, p.preemptible, +1);
  if (p.bound_initially && p.preemptible) ++bound_preemptible_[v.pool];
}

void CycleState::Remove(int pod) {
  PodState& p = pods_[pod];
  const int node = p.node;
  NodeView& v = view_.node(node);
  Touch(node);
  for (const auto& [dim, amount] : p.req) {
    int64_t& free = view_.Free(node, dim);
    free = SaturatingAdd(free, amount);
  }
  int32_t* dev = view_.Devices(node);
  for (int d : p.devices) {
    dev[d] += p.gpu_whole > 0 ? 1000 : p.gpu_fraction;
    if (dev[d] == 1000) ++v.full_free;
  }
  UpdateMaxDeviceFree(node);
  quota_.Add(p.queue, v.pool, p.quota, p.preemptible, -1);
  if (p.bound_initially && p.preemptible) --bound_preemptible_[v.pool];
  if (p.bound_initially) left_.push_back(pod);
  std::erase(node_pods_[node], pod);
  SyncPoolFit(node);
  // Keep p.devices so a rollback can restore the exact devices.
  p.node = -1;
  p.last_node = node;
}

void CycleState::Bind(int pod, int node) {
  int device = -1;
  GpuFits(pods_[pod], node, &device);
  pods_[pod].bound_initially = true;
  Apply(pod, node, device);
}

void CycleState::BindAll(std::span<const int> binding_nodes, std::span<const char> taken_over,
                         std::span<const uint64_t> pod_ids, KeptBindings* kept) {
  const int nodes = view_.NumNodes();
  if (kept != nullptr && static_cast<int>(kept->node_pods.size()) == nodes) {
    node_pods_.swap(kept->node_pods);
    for (std::vector<int>& on_node : node_pods_) on_node.clear();
  }
  for (int i = 0; i < NumPods(); ++i) {
    const int node = binding_nodes[i];
    if (node >= 0) {
      node_pods_[node].push_back(i);
    } else {
      unbound_.push_back(i);
    }
  }
  if (kept != nullptr &&
      (pod_ids.size() != pods_.size() || static_cast<int>(kept->nodes.size()) != nodes ||
       kept->dims != view_.Dims())) {
    kept->nodes.assign(pod_ids.size() == pods_.size() ? nodes : 0, KeptNode());
    kept->dims = view_.Dims();
  }
  const bool keeping = kept != nullptr && !kept->nodes.empty();
  // Per node: how many of its first bound pods the kept state holds (-1: it holds other pods).
  std::vector<int> kept_pods(nodes, -1);
  for (int node = 0; node < nodes && keeping; ++node) {
    kept_pods[node] = KeptPrefix(node, pod_ids, kept->nodes[node]);
    if (kept_pods[node] > 0) {
      RestoreNode(node, kept->nodes[node]);
      ++kept->nodes_taken_over;
    }
  }
  if (keeping) RestorePods(binding_nodes, taken_over, kept_pods, *kept);
  // The nodes' other pods are bound as BindPods binds them, after the kept ones.
  std::vector<int> rest;
  for (int node = 0; node < nodes; ++node) {
    std::vector<int>& on_node = node_pods_[node];
    const size_t from = static_cast<size_t>(std::max(kept_pods[node], 0));
    if (kept_pods[node] >= 0 && on_node.size() == from) continue;  // as kept
    rest.assign(on_node.begin() + static_cast<std::ptrdiff_t>(from), on_node.end());
    on_node.resize(from);
    for (int pod : rest) Bind(pod, node);
    if (keeping) Keep(node, pod_ids, kept->nodes[node]);
  }
  for (int node = 0; node < nodes; ++node) SyncPoolFit(node);
}

// How many of the node's bound pods (node_pods_, in snapshot order) binding left in `kept`:
// all of kept's pods, when they begin the node's list; else -1.
int CycleState::KeptPrefix(int node, std::span<const uint64_t> pod_ids,
                           const KeptNode& kept) const {
  const std::vector<int>& on_node = node_pods_[node];
  if (!kept.valid || kept.pod_ids.size() > on_node.size()) return -1;
  for (size_t k = 0; k < kept.pod_ids.size(); ++k) {
    if (pod_ids[on_node[k]] != kept.pod_ids[k]) return -1;
  }
  return static_cast<int>(kept.pod_ids.size());
}

// The node as binding its kept pods left it (it was empty, as ResetForCycle left it).
void CycleState::RestoreNode(int node, const KeptNode& kept) {
  NodeView& v = view_.node(node);
  std::copy(kept.free.begin(), kept.free.end(), &view_.Free(node, 0));
  std::copy(kept.device_free.begin(), kept.device_free.end(), view_.Devices(node));
  v.full_free = kept.full_free;
  v.max_device_free = kept.max_device_free;
  for (const KeptNode::Quota& q : kept.quota) {
    quota_.Add(q.queue, v.pool, q.amounts, q.preemptible, +1);
  }
  bound_preemptible_[v.pool] += kept.bound_preemptible;
}

// The kept pods of the restored nodes that were resolved afresh (not taken over with their node
// and devices: gang members, pods whose ids came out of order) on their node, with the devices
// Bind gave them. Most pods were taken over: only the others are looked at.
void CycleState::RestorePods(std::span<const int> binding_nodes, std::span<const char> taken_over,
                             std::span<const int> kept_pods, const KeptBindings& kept) {
  for (int i = 0; i < NumPods(); ++i) {
    const int node = binding_nodes[i];
    if (node < 0 || (!taken_over.empty() && taken_over[i]) || kept_pods[node] <= 0) continue;
    const std::vector<int>& on_node = node_pods_[node];
    const int at =
        static_cast<int>(std::lower_bound(on_node.begin(), on_node.end(), i) - on_node.begin());
    if (at >= kept_pods[node]) continue;  // bound after the kept pods
    const KeptNode& k = kept.nodes[node];
    PodState& p = pods_[i];
    p.node = node;
    p.bound_initially = true;
    p.devices.assign(k.devices.begin() + (at == 0 ? 0 : k.device_end[at - 1]),
                     k.devices.begin() + k.device_end[at]);
  }
}

void CycleState::Keep(int node, std::span<const uint64_t> pod_ids, KeptNode& kept) const {
  const NodeView& v = view_.node(node);
  const std::vector<int>& on_node = node_pods_[node];
  kept.valid = true;
  kept.pod_ids.clear();
  kept.devices.clear();
  kept.device_end.clear();
  kept.quota.clear();
  kept.bound_preemptible = 0;
  for (int pod : on_node) {
    const PodState& p = pods_[pod];
    kept.valid &= pod_ids[pod] != 0;  // 0: not tracked, so never the same pod again
    kept.pod_ids.push_back(pod_ids[pod]);
    kept.devices.insert(kept.devices.end(), p.devices.begin(), p.devices.end());
    kept.device_end.push_back(static_cast<int>(kept.devices.size()));
    if (p.preemptible) ++kept.bound_preemptible;
    if (p.queue < 0) continue;
    auto q = std::find_if(kept.quota.begin(), kept.quota.end(), [&](const KeptNode::Quota& e) {
      return e.queue == p.queue && e.preemptible == p.preemptible;
    });
    if (q == kept.quota.end()) q = kept.quota.insert(q, {p.queue, p.preemptible, {}});
    for (int r = 0; r < kQ; ++r) q->amounts[r] = SaturatingAdd(q->amounts[r], p.quota[r]);
  }
  const int64_t* free = &view_.Free(node, 0);
  kept.free.assign(free, free + view_.Dims());
  const int32_t* devices = view_.Devices(node);
  kept.device_free.assign(devices, devices + v.gpu_devices);
  kept.full_free = v.full_free;
  kept.max_device_free = v.max_device_free;
}

std::vector<int> CycleState::PodsOffNodes() const {
  std::vector<int> left;
  for (int pod : left_) {
    if (pods_[pod].node < 0) left.push_back(pod);
  }
  std::sort(left.begin(), left.end());
  left.erase(std::unique(left.begin(), left.end()), left.end());
  std::vector<int> off;
  off.reserve(unbound_.size() + left.size());
  auto l = left.begin();
  for (int pod : unbound_) {
    if (pods_[pod].node >= 0) continue;
    for (; l != left.end() && *l < pod; ++l) off.push_back(*l);
    off.push_back(pod);
  }
  off.insert(off.end(), l, left.end());
  return off;
}

std::vector<int> CycleState::PodsMaybeChanged() const {
  std::vector<int> changed = unbound_;
  changed.insert(changed.end(), left_.begin(), left_.end());
  return changed;
}

void CycleState::ComputeFairShares(std::span<const int64_t> demand) {
  std::vector<int64_t> capacity(static_cast<size_t>(view_.NumPools()) * kQ);
  for (int pool = 0; pool < view_.NumPools(); ++pool) {
    for (int r = 0; r < kQ; ++r) capacity[pool * kQ + r] = view_.PoolCapacity(pool, r);
  }
  quota_.ComputeFairShares(demand, capacity);
}

void CycleState::EvictNow(int pod, EvictionReason reason, std::string message) {
  PodState& p = pods_[pod];
  const std::string& node = view_.node(p.node).node->name;
  p.evicted = true;
  p.evict_reason = reason;
  p.evict_message = std::move(message);
  evictions_.push_back({p.key, node, p.evict_reason, p.evict_message});
  Remove(pod);
}

void CycleState::Place(int pod, int node, int device, int pool) {
  Apply(pod, node, device);
  PodState& p = pods_[pod];
  p.placed_now = true;
  p.placed_pool = pool;
  undo_.push_back({Op::kPlace, pod});
}

void CycleState::Evict(int pod, EvictionReason reason, std::string message) {
  PodState& p = pods_[pod];
  p.evicted = true;
  p.evict_reason = reason;
  p.evict_message = std::move(message);
  Remove(pod);
  undo_.push_back({Op::kEvict, pod});
}

void CycleState::Withdraw(int pod, std::string message) {
  pods_[pod].evict_message = std::move(message);
  Remove(pod);
  undo_.push_back({Op::kWithdraw, pod});
}

void CycleState::Rollback(size_t checkpoint) {
  while (undo_.size() > checkpoint) {
    Op op = undo_.back();
    undo_.pop_back();
    PodState& p = pods_[op.pod];
    if (op.kind == Op::kPlace) {
      Remove(op.pod);
      p.placed_now = false;
      p.placed_pool = -1;
      p.last_node = -1;
    } else {
      std::vector<int> devices = p.devices;
      Apply(op.pod, p.last_node, -1, &devices);
      p.evicted = false;  // a withdrawn pod was never marked evicted
    }
  }
}

void CycleState::Commit(size_t checkpoint, int pool) {
  for (size_t i = checkpoint; i < undo_.size(); ++i) {
    PodState& p = pods_[undo_[i].pod];
    switch (undo_[i].kind) {
      case Op::kPlace: {
        Binding b;
        b.pod = p.key;
        b.node = view_.node(p.node).node->name;
        b.node_pool = view_.PoolName(pool);
        b.queue = queues_[p.queue].name;
        b.gpu_device = p.gpu_fraction > 0 && !p.devices.empty() ? p.devices[0] : -1;
        bindings_.push_back(std::move(b));
        p.reason.clear();
        break;
      }
      case Op::kEvict:
        evictions_.push_back(
            {p.key, view_.node(p.last_node).node->name, p.evict_reason, p.evict_message});
        break;
      case Op::kWithdraw: {
        // It never ran, so there is nothing to evict: its binding goes, and it stays pending.
        auto b = std::find_if(bindings_.begin(), bindings_.end(),
                              [&](const Binding& x) { return x.pod == p.key; });
        if (b != bindings_.end()) bindings_.erase(b);
        p.placed_now = false;
        p.placed_pool = -1;
        p.reason = p.evict_message;
        break;
      }
    }
  }
  committed_ops_ += undo_.size() - checkpoint;
  undo_.resize(checkpoint);
}

}  // namespace gpupool::scheduler
