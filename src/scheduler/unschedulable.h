#pragma once
// UnschedulableReasons: why a pod found no node in a node pool, in kube-scheduler's words, and
// what the cycle remembers about failures (module-internal).
//
// A reason counts the pool's nodes per cause, most common cause first, then by text (kube-
// scheduler sorts by text alone; leading with the cause that blocks most nodes is gpupool's
// choice): the static causes of the pod's signature ("8 node(s) had untolerated taint {k: v}",
// "node(s) were unschedulable", "node(s) didn't match Pod's node affinity/selector"), then, over
// the statically feasible nodes, each resource they are short of ("4 Insufficient nvidia.com/gpu",
// "Too many pods"), e.g. "0/12 nodes are available: 8 node(s) had untolerated taint
// {nvidia.com/gpu: true}, 4 Insufficient nvidia.com/gpu.".
//
// Memory of failures, for lone pods only (a single pod, or a gang's only pending pod: a gang's
// later pod fails while its earlier pods hold capacity that a rollback gives back): the reason per
// (signature, node pool, shape), recounted from the pool's change log only when the pool changed
// since; and per static list the shapes that found no node, so a later pod asking at least as much
// of everything is known not to fit (while the allocate phase runs, capacity only shrinks).
//
// FitsEmptyNode: whether any candidate could host the pod once empty (its allocatable and GPU
// devices), for PlacementOutcome::kInfeasible; kept per (signature, node pool, shape), and one
// node is looked at per node shape (ClusterView's shape classes).

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "scheduler/cluster_view.h"
#include "scheduler/cycle_state.h"
#include "scheduler/cycle_types.h"

namespace gpupool::scheduler {

class UnschedulableReasons {
 public:
  explicit UnschedulableReasons(const CycleState& state) : state_(state), view_(state.view()) {}

  // Why `pod` fits none of the candidates of `list` (its static list in `pool`) now.
  std::string Explain(const PodState& pod, int pool, const StaticList& list);

  // The reason a single pod of the same signature and shape found no node in `pool` before,
  // brought up to date with the pool's changes since; nullptr when none is remembered.
  const std::string* Remembered(const PodState& pod, int pool, StaticList& list);
  void Remember(const PodState& pod, int pool, std::string reason);

  // Whether a pod that asked no more of anything than `pod` found no node in `list` before.
  static bool KnownNotToFit(const PodState& pod, const StaticList& list);
  static void RememberNotFitting(const PodState& pod, StaticList& list);

  // Whether some candidate of `list` (the pod's static list in `pool`) could host `pod` empty.
  bool FitsEmptyNode(const PodState& pod, int pool, const StaticList& list);

 private:
  struct Key {
    int signature;
    int pool;
    int shape;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Failure {
    std::string reason;
    uint64_t epoch = 0;  // the pool's epoch the reason is of
    // Filled at the first recount: the shortfall of each candidate and the per-dimension counts
    // behind `reason`, as of PoolLog(pool).size() == log_pos. Later recounts only look at the
    // nodes changed since, instead of every candidate.
    std::vector<uint32_t> shortfall;
    std::vector<int> insufficient;
    size_t log_pos = 0;
  };

  // `insufficient`: nodes short of each dimension (last entry: nvidia.com/gpu).
  std::string Format(const std::vector<int>& insufficient, int pool, const StaticList& list);
  // The reason text of nodes short of each dimension, the last one nvidia.com/gpu.
  const std::vector<std::string>& ResourceReasons();
  // Bit i: the node lacks p.req[i]; kGpuShortBit: its GPUs do not fit.
  uint32_t Shortfall(const PodState& p, int node) const;
  // Brings a failure's counts up to date with the pool's changes since it was counted; returns
  // whether any count changed.
  bool Refresh(const PodState& p, int pool, StaticList& list, Failure& f);

  const CycleState& state_;
  const ClusterView& view_;
  std::unordered_map<Key, Failure, KeyHash> failures_;
  std::unordered_map<Key, bool, KeyHash> fits_empty_;  // FitsEmptyNode
  std::vector<char> class_seen_;                       // FitsEmptyNode's scratch
  int num_shape_classes_ = -1;                         // NodeView::shape_class bound; -1: unknown
  std::vector<std::string> resource_reasons_;          // ResourceReasons
  std::vector<std::pair<int, const std::string*>> reason_entries_;  // Format's scratch
};

}  // namespace gpupool::scheduler
