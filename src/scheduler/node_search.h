#pragma once
// NodeSearch: the node for one pod in one node pool, kube-scheduler style (module-internal).
//
// Filters, in kube-scheduler's order: NodeUnschedulable, TaintToleration and NodeAffinity hold
// per pod signature and node pool (ClusterView::Static: the candidates); then the fit of every
// request, `pods` and the GPUs (a whole-GPU pod needs that many fully free devices, a fractional
// pod one device with that much left), read from CycleState's fit columns as one bit per node,
// kept per pod shape and node pool and brought up to date from the pool's change log.
// Window: like kube-scheduler, the search visits the candidates in pool order from where the
// last search of the same signature stopped (StaticList::next_start), wrapping once, and stops
// once it has found numFeasibleNodesToFind of them (percentage_of_nodes_to_score; 0: adaptive,
// 50 - nodes/125 percent, at least 5 % and 100 nodes).
// Score: 2 x the policy's score (PlacementScorer, normalised to 0..100 over the visited nodes)
// + PreferNoSchedule (fewer untolerated, 0..100) + preferred node affinity (0..100) + topology
// proximity to the gang's pods placed so far (the pool's topology keys, 0..100). Ties go to the
// node first by name. Empty nodes of one class (equal allocatable, cordon state and static
// scores) score alike: one is scored and the class keeps its first node by name, unless the pod
// belongs to a gang and the pool has topology keys.
//
// Caches: the policy's score per node and pod shape while the node's version is unchanged;
// the fit bits per pod shape and node pool. Thread contract: one cycle, one thread.

#include <cstdint>
#include <vector>

#include "scheduler/cluster_view.h"
#include "scheduler/cycle_state.h"
#include "scheduler/cycle_types.h"
#include "scheduler/scheduler.h"
#include "scheduler/scorers/placement_scorer.h"

namespace gpupool::scheduler {

class NodeSearch {
 public:
  NodeSearch(const SchedulerOptions& options, const CycleState& state, PlacementScorer& scorer);

  // The best node for `pod` in `pool` (`list`: its static candidates there), -1 when none fits;
  // `*device` is the device a fractional pod takes there. `gang_nodes`: the nodes of the pod's
  // gang placed so far in this decision, first one first.
  int FindNode(const PodState& pod, int pool, StaticList& list, const std::vector<int>& gang_nodes,
               int* device);

  // How many feasible nodes the search looks for in a pool of `pool_nodes` nodes.
  static int NumFeasibleNodesToFind(int pool_nodes, int percentage);

 private:
  struct Pass;
  // The policy's score of a node for a pod shape, kept while the node's version is `version`.
  struct ShapeScore {
    double score = 0;
    uint32_t version = 0;  // 0: never scored (versions start at 1)
    int32_t device = -1;   // the device a fractional pod would take (GpuFits), else -1
  };
  struct ShapeFit {
    std::vector<uint64_t> bits;  // empty = not built
    size_t log_pos = 0;          // PoolLog(pool).size() when last brought up to date
  };

  // Which nodes of `pool` (bit per position in PoolNodes) fit pods of p's shape now.
  const std::vector<uint64_t>& ShapeFitBits(const PodState& p, int pool);
  ShapeScore* ShapeScores(int shape);  // by pool slot

  const int percentage_;
  const CycleState& state_;
  const ClusterView& view_;
  PlacementScorer& scorer_;
  std::vector<std::vector<ShapeScore>> shape_scores_;  // by shape, then pool slot; lazily
  std::vector<ShapeFit> shape_fit_;                    // by shape * NumPools() + pool
  // Per search: per class of the list, the index of its representative in scratch_ (or
  // unseen), and the last stretch of the window (1 up to the wrap, 2 after it) where its first
  // empty node was visited.
  std::vector<int> class_slot_;
  std::vector<int> class_stretch_;
  struct Candidate {
    int node;
    int name_rank;
    double resource_raw;
    int32_t taint_raw;
    int64_t affinity_raw;
    int topology;
    int device;  // the device a fractional pod takes
  };
  std::vector<Candidate> scratch_;  // the nodes scored in a search

  // Proximity of `node` to the gang's first node: the share of the pool's topology keys whose
  // values they share, 0..100.
  static int TopologyScore(const ClusterView& view, int pool, int node,
                           const std::vector<int>& gang_nodes);
  static const Candidate& BestCandidate(const Candidate* scored, int num_scored, double min_raw,
                                        double max_raw, int32_t max_taint, int64_t max_affinity);
};

}  // namespace gpupool::scheduler
