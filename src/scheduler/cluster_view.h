#pragma once
// ClusterView: the per-cycle, precomputed form of a snapshot that the hot path works on.
// Resources are interned into dimensions with int64 amounts (cpu in millicores, every other
// resource in whole units: memory and storage in bytes, `pods` in pods); GPUs are tracked per
// device in milli-GPUs so fractional pods share a device. Node pools are resolved once per node.
// Static filters (unschedulable, taints, selector, required affinity) are evaluated once per pod
// "signature" (nodeSelector + affinity + tolerations) and node pool, through model/match.h.

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/k8s.h"
#include "model/node_pool.h"

namespace gpupool::scheduler {

inline constexpr int kCpuDim = 0;
inline constexpr int kMemoryDim = 1;
inline constexpr int kPodsDim = 2;
// Pods allowed on a node that does not report `pods` (the kubelet's default maxPods).
inline constexpr int64_t kDefaultMaxPods = 110;

// Amount of `resource` in the accounting unit of its dimension.
int64_t DimAmount(std::string_view resource, const model::Quantity& q);

struct NodeView {
  const model::Node* node = nullptr;
  int pool = 0;
  bool unschedulable = false;
  bool no_execute = false;  // carries a NoExecute taint
  int gpu_devices = 0;
  int device_offset = 0;        // into ClusterView::device_free
  int full_free = 0;            // devices with 1000 milli free
  int32_t max_device_free = 0;  // the most milli-GPUs left on one device
  int name_rank = 0;            // position in name order: ties between nodes break by name
  int shape_class = 0;          // nodes with equal allocatable and cordon state share a class
  std::vector<int> topology;    // interned values of the pool's topology keys (-1 = absent)
};

// Requests of a pod that found no node; a later pod asking at least as much of everything
// cannot fit either while capacity only shrinks (the allocate phase).
struct FailedShape {
  std::vector<std::pair<int, int64_t>> req;
  int gpu_whole = 0;
  int32_t gpu_fraction = 0;
};

// One statically feasible node for a signature, with the static score inputs.
struct StaticCandidate {
  int node = 0;
  int name_rank = 0;  // copy of NodeView::name_rank, so the search does not load the NodeView
  int32_t intolerable_prefer_no_schedule = 0;
  int64_t preferred_affinity = 0;
  // Class of equal (shape_class, intolerable_prefer_no_schedule, preferred_affinity) within the
  // list: while empty, two nodes of one class fit and score alike (0..StaticList::num_classes).
  int pristine_class = 0;
};

struct StaticList {
  std::vector<StaticCandidate> candidates;
  std::vector<int> positions;  // of each candidate in PoolNodes(pool), for pool-local arrays
  std::map<std::string, int> static_reasons;  // reason -> node count
  int pool_nodes = 0;
  int num_classes = 0;  // distinct StaticCandidate::pristine_class values
  std::vector<FailedShape> failed;
  size_t next_start = 0;  // rotating start, like kube-scheduler's nextStartNodeIndex
  // Index into `candidates` of each node of the pool (by position in PoolNodes), -1 when not a
  // candidate, and the same as a bit set (bit i of word i / 64).
  std::vector<int> candidate_at;
  std::vector<uint64_t> candidate_bits;
  std::vector<int> class_at;  // pristine_class of the candidate at each position, -1 when none
  // Bit set of each class's positions: class c, word w at c * candidate_bits.size() + w.
  std::vector<uint64_t> class_bits;
};

class ClusterView {
 public:
  ClusterView(const std::vector<model::Node>& nodes,
              const std::vector<model::NodePool>& node_pools);

  // Makes a view built for earlier nodes serve a new cycle on `nodes`, which must be those nodes
  // again (same order, labels, taints, allocatable, cordon state; ViewCache's contract): node
  // pointers rebound, every node empty again, what the last cycle learnt in the static lists
  // (failed shapes, rotating start) forgotten. The rest (dimensions, node pools, name ranks,
  // shape classes, topology, pool capacity, each signature's static list) is kept: building it
  // was most of a cycle's cost in a replay. False when it forgot the signatures (ids handed out
  // before are void): they are bounded, for a long-lived caller seeing ever new pods.
  bool ResetForCycle(const std::vector<model::Node>& nodes);

  int Dims() const { return static_cast<int>(dim_names_.size()); }
  // Interns a resource name (not nvidia.com/gpu, which is tracked per device).
  int InternDim(const std::string& resource);
  const std::string& DimName(int dim) const { return dim_names_[dim]; }

  int NumNodes() const { return static_cast<int>(nodes_.size()); }
  NodeView& node(int n) { return nodes_[n]; }
  const NodeView& node(int n) const { return nodes_[n]; }
  int64_t& Free(int n, int dim) { return free_[static_cast<size_t>(n) * stride_ + dim]; }
  int64_t Free(int n, int dim) const { return free_[static_cast<size_t>(n) * stride_ + dim]; }
  int64_t Allocatable(int n, int dim) const {
    return allocatable_[static_cast<size_t>(n) * stride_ + dim];
  }
  // data() + offset, not &device_free_[offset]: a cluster without GPUs has no devices at all,
  // and indexing an empty vector binds a reference to null (undefined, whatever the offset).
  int32_t* Devices(int n) { return device_free_.data() + nodes_[n].device_offset; }
  const int32_t* Devices(int n) const { return device_free_.data() + nodes_[n].device_offset; }
  int FindNode(const std::string& name) const;

  int NumPools() const { return static_cast<int>(pool_names_.size()); }
  const std::string& PoolName(int pool) const { return pool_names_[pool]; }
  int FindPool(std::string_view name) const;  // -1 when unknown
  const std::vector<int>& PoolNodes(int pool) const { return pool_nodes_[pool]; }
  const std::vector<std::string>& PoolTopologyKeys(int pool) const { return topology_keys_[pool]; }

  // Capacity of a pool in quota units (gpu milli, cpu milli, memory bytes), over schedulable
  // nodes.
  int64_t PoolCapacity(int pool, int quota_resource) const {
    return pool_capacity_[pool * 3 + quota_resource];
  }

  // Static feasibility of pods like `pod` on the nodes of `pool`, computed once per signature.
  StaticList& Static(int signature, int pool, const model::PodScheduling& pod);
  // Signature id of a pod (equal nodeSelector, affinity and tolerations share one).
  int Signature(const model::PodScheduling& pod);

 private:
  void Finalize();

  std::vector<NodeView> nodes_;
  std::vector<std::string> dim_names_;
  std::unordered_map<std::string, int> dim_index_;
  size_t stride_ = 0;
  std::vector<int64_t> free_;
  std::vector<int64_t> allocatable_;
  std::vector<int32_t> device_free_;
  std::unordered_map<std::string, int> node_index_;
  std::vector<std::string> pool_names_;
  std::vector<std::vector<int>> pool_nodes_;
  std::vector<std::vector<std::string>> topology_keys_;
  std::vector<int64_t> pool_capacity_;
  std::unordered_map<std::string, int> signatures_;
  std::unordered_map<int64_t, StaticList> static_;
  std::vector<StaticList*> static_index_;  // by signature * NumPools() + pool; nullptr = not built
};

}  // namespace gpupool::scheduler
