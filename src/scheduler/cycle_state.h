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

class CycleState {
 public:
  // `queues` must outlive the state (binding records name the queue).
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
};

}  // namespace gpupool::scheduler
