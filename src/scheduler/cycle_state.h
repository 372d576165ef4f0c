#pragma once
// CycleState: what a scheduling cycle has decided so far, and the only code that changes it
// (module-internal). It owns the pods (cycle_types.h; their placement fields change only here),
// the pods on each node, the free capacity in the ClusterView, the queues' allocation in the
// QuotaTable, the bindings and evictions, and an undo log.
//
// A decision takes a Checkpoint, places pods and evicts others (Place, Evict, Withdraw), then
// either Commits (bindings and evictions are recorded, in decision order) or Rolls back to the
// checkpoint (every pod back on its node with its exact devices, the allocation as it was).
// Devices: a whole-GPU pod takes the lowest fully free devices; a fractional pod the device
// its caller chose (GpuFits picks the fullest device that still fits). A pod bound before the
// cycle (Bind) takes its capacity even if that over-commits the node.
//
// In step with every change it also keeps what the node search and the reason caches key on:
// a version per node (any change of the node moves it), an epoch and a change log per node pool,
// and the columns the fit check reads per node pool (PoolFit), stored by a node's position in
// ClusterView::PoolNodes (its pool slot: pools one after the other).
//
// Binding can take over what the last cycle on the same view left on each node (KeptBindings):
// a node's state after binding depends only on its bound pods, in snapshot order, so a node whose
// pods are those of the last cycle (by ClusterSnapshot::pod_ids), or those followed by more,
// starts from the kept state; any other node is bound afresh. A replay's cycle then costs the
// nodes that changed, not its ~8,000 bound pods.
//
// Thread contract: one cycle, one thread.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "scheduler/cluster_view.h"
#include "scheduler/cycle_types.h"
#include "scheduler/quota_table.h"

namespace gpupool::scheduler {

// What the fit check reads for the nodes of one node pool, by position in PoolNodes: small
// enough to stay in the L1 cache while the search checks hundreds of the pool's nodes per pod.
struct PoolFit {
  std::vector<int64_t> cpu, memory, pods;  // free
  // gpu[0]: devices with 1000 milli free; gpu[1]: the most milli-GPUs left on one device.
  std::array<std::vector<int32_t>, 2> gpu;
  std::vector<uint64_t> empty;   // bit per position: no pods on the node
  std::vector<int> name_rank;    // NodeView::name_rank
  bool ranks_ascending = false;  // name_rank grows with the position (nodes listed by name)
};

// What binding left on one node: kept across the cycles of one view (SetupMemo).
struct KeptNode {
  bool valid = false;             // false: nothing kept (or a pod without an id)
  std::vector<uint64_t> pod_ids;  // the bound pods, in snapshot order
  std::vector<int> devices;       // their PodState::devices, one after the other
  std::vector<int> device_end;    // per pod: the end of its devices in `devices`
  std::vector<int64_t> free;      // ClusterView::Free by dimension
  std::vector<int32_t> device_free;
  int full_free = 0;
  int32_t max_device_free = 0;
  struct Quota {
    int queue = -1;
    bool preemptible = true;
    QuotaVector amounts{};
  };
  std::vector<Quota> quota;  // the pods' quota summed by (queue, preemptible)
  int bound_preemptible = 0;
};

// Binding's result on every node of a view, valid for the view's dimensions and the queues the
// pods were resolved against (the setup clears it when those change).
struct KeptBindings {
  std::vector<KeptNode> nodes;              // by node; empty: nothing kept
  int dims = 0;                             // ClusterView::Dims() they were kept with
  int64_t nodes_taken_over = 0;             // nodes whose state was taken over so far (tests)
  std::vector<std::vector<int>> node_pods;  // the last cycle's lists, reused for their capacity
  void Clear() { nodes.clear(); }
};

class CycleState {
 public:
  // `queues` must outlive the state (binding records name the queue). BindAll comes first.
  CycleState(ClusterView& view, std::span<const QueueState> queues, QuotaTable quota,
             std::vector<PodState> pods);
  CycleState(const CycleState&) = delete;
  CycleState& operator=(const CycleState&) = delete;

  const ClusterView& view() const { return view_; }
  const QuotaTable& quota() const { return quota_; }
  std::span<const QueueState> queues() const { return queues_; }
  int NumPods() const { return static_cast<int>(pods_.size()); }
  const PodState& pod(int i) const { return pods_[i]; }
  std::span<const PodState> pods() const { return pods_; }
  const std::vector<int>& NodePods(int node) const { return node_pods_[node]; }

  // Whether p's GPUs fit the node now; for a fractional pod `device` is the fullest device with
  // enough left (else -1).
  bool GpuFits(const PodState& p, int node, int* device) const;
  // Whether every request of p and its GPUs fit the node now.
  bool Fits(const PodState& p, int node, int* device) const;

  // Change tracking.
  uint32_t NodeVersion(int node) const { return node_version_[pool_slot_[node]]; }
  // Node versions of `pool`'s nodes, by position.
  const uint32_t* PoolVersions(int pool) const { return node_version_.data() + pool_offset_[pool]; }
  int PoolOffset(int pool) const { return pool_offset_[pool]; }  // slot of its first node
  int PoolPosition(int node) const { return pool_position_[node]; }
  const PoolFit& pool_fit(int pool) const { return pool_fit_[pool]; }
  uint64_t PoolEpoch(int pool) const { return pool_epoch_[pool]; }
  const std::vector<int>& PoolLog(int pool) const { return pool_log_[pool]; }  // nodes changed
  // Undo log entries committed so far (bindings and evictions come and, with withdrawals, go,
  // so their sizes do not tell whether anything changed).
  size_t CommittedOps() const { return committed_ops_; }

  // Setup: `pod`, bound before the cycle to `node` (not undoable).
  void Bind(int pod, int node);
  // Setup: every pod bound before the cycle (`binding_nodes`, parallel to the pods: their
  // PodState::binding_node) as Bind in snapshot order would bind them. With `kept`, a node whose
  // bound pods (by `pod_ids`, parallel to the pods) begin with those kept there is taken over
  // from it, and `kept` then holds this cycle's binding; nullptr: every node bound afresh. The
  // pods marked in `taken_over` (parallel to the pods, or empty) still hold the node and devices
  // the kept binding gave them (SetupMemo): on a node taken over, they are not set again.
  void BindAll(std::span<const int> binding_nodes, std::span<const char> taken_over,
               std::span<const uint64_t> pod_ids, KeptBindings* kept);
  // The pods on each node, for the next cycle's BindAll to reuse (the state is done with then).
  std::vector<std::vector<int>> TakeNodePods() { return std::move(node_pods_); }
  // Pods that were not bound before the cycle (PodState::binding_node -1), in snapshot order.
  const std::vector<int>& Unbound() const { return unbound_; }
  // Pods on no node now, in snapshot order: unbound ones not placed and bound ones evicted.
  std::vector<int> PodsOffNodes() const;
  // The pods whose placement fields may differ from what binding set: those not bound before
  // the cycle and those that left their node (in no particular order, maybe repeated).
  std::vector<int> PodsMaybeChanged() const;
  // Running pods bound before the cycle that are preemptible, on the nodes of `pool`.
  int BoundPreemptible(int pool) const { return bound_preemptible_[pool]; }
  // Fair shares of every queue from their demand (QueueDemand) and the pools' capacity.
  void ComputeFairShares(std::span<const int64_t> demand);
  // Evicts a bound pod at once (NoExecute; not undoable) and records the eviction.
  void EvictNow(int pod, EvictionReason reason, std::string message);

  // Undoable changes.
  size_t Checkpoint() const { return undo_.size(); }
  void Place(int pod, int node, int device, int pool);
  // A pod bound before the cycle leaves its node.
  void Evict(int pod, EvictionReason reason, std::string message);
  // A pod placed earlier in the cycle leaves its node again with its evicted gang: it never ran,
  // so Commit drops its binding and it stays pending with `message` as its reason.
  void Withdraw(int pod, std::string message);
  void Rollback(size_t checkpoint);
  // Keeps the changes since `checkpoint`; `pool` is the node pool the placed pods went to.
  void Commit(size_t checkpoint, int pool);

  // Why a pending pod is still pending.
  void SetReason(int pod, std::string reason) { pods_[pod].reason = std::move(reason); }

  const std::vector<Binding>& bindings() const { return bindings_; }
  const std::vector<Eviction>& evictions() const { return evictions_; }
  std::vector<Binding> TakeBindings() { return std::move(bindings_); }
  std::vector<Eviction> TakeEvictions() { return std::move(evictions_); }
  std::string TakeReason(int pod) { return std::move(pods_[pod].reason); }
  // The pods, for the next cycle's setup (SetupMemo); the state is done with then.
  std::vector<PodState> TakePods() { return std::move(pods_); }

 private:
  struct Op {
    enum Kind { kPlace, kEvict, kWithdraw } kind;
    int pod;
  };
  // Puts a pod on a node: whole GPUs on the lowest free devices, a fraction on `device`, or
  // exactly `exact_devices` when restoring an evicted pod.
  void Apply(int pod, int node, int device, const std::vector<int>* exact_devices = nullptr);
  void Remove(int pod);
  void Touch(int node);  // the node changed: version, epoch, log
  void UpdateMaxDeviceFree(int node);
  void SyncPoolFit(int node);
  void BuildPoolLayout();
  // BindAll's parts: how many of the node's bound pods (node_pods_) `kept` holds, when they
  // start the list (else -1); the kept state put back (node, then pods); the node's state kept.
  int KeptPrefix(int node, std::span<const uint64_t> pod_ids, const KeptNode& kept) const;
  void RestoreNode(int node, const KeptNode& kept);
  void RestorePods(std::span<const int> binding_nodes, std::span<const char> taken_over,
                   std::span<const int> kept_pods, const KeptBindings& kept);
  void Keep(int node, std::span<const uint64_t> pod_ids, KeptNode& kept) const;

  ClusterView& view_;
  const std::span<const QueueState> queues_;
  QuotaTable quota_;
  std::vector<PodState> pods_;
  std::vector<std::vector<int>> node_pods_;
  std::vector<Op> undo_;
  size_t committed_ops_ = 0;
  std::vector<Binding> bindings_;
  std::vector<Eviction> evictions_;
  std::vector<uint32_t> node_version_;  // by pool slot
  std::vector<uint64_t> pool_epoch_;
  std::vector<std::vector<int>> pool_log_;
  std::vector<int> pool_position_;  // node -> index in view_.PoolNodes(its pool)
  std::vector<int> pool_slot_;      // node -> its pool's offset + pool_position_
  std::vector<int> pool_offset_;    // pool -> slot of its first node
  std::vector<PoolFit> pool_fit_;
  std::vector<int> bound_preemptible_;  // by pool
  std::vector<int> unbound_;            // Unbound()
  std::vector<int> left_;  // pods bound before the cycle that left their node (may repeat)
};

}  // namespace gpupool::scheduler
