#include "scheduler/scheduler.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>

#include "common/clock.h"
#include "common/strings.h"
#include "model/match.h"
#include "scheduler/cluster_view.h"
#include "scheduler/cycle_setup.h"
#include "scheduler/cycle_state.h"
#include "scheduler/cycle_types.h"
#include "scheduler/queue_order.h"
#include "scheduler/quota_table.h"
#include "scheduler/scorers/placement_scorer.h"

namespace gpupool::scheduler {
namespace {

struct Candidate {
  int node;
  int name_rank;
  double resource_raw;
  int32_t taint_raw;
  int64_t affinity_raw;
  int topology;
  int device;  // chosen fraction device
};

struct FailureKey {
  int signature;
  int pool;
  int shape;
  bool operator==(const FailureKey&) const = default;
};
struct FailureKeyHash {
  size_t operator()(const FailureKey& k) const {
    uint64_t h = static_cast<uint32_t>(k.signature);
    h = h * 0x9E3779B97F4A7C15ull ^ static_cast<uint32_t>(k.pool);
    h = h * 0x9E3779B97F4A7C15ull ^ static_cast<uint32_t>(k.shape);
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

class Cycle {
 public:
  Cycle(const SchedulerOptions& options, const ClusterSnapshot& snapshot)
      : options_(options),
        snapshot_(snapshot),
        view_(snapshot.nodes, snapshot.node_pools),
        setup_(BuildCycleSetup(snapshot, view_)),
        state_(view_, setup_.queues, QuotaTable::Resolve(setup_.queues, view_),
               std::move(setup_.pods)),
        queues_(setup_.queues),
        gangs_(setup_.gangs) {}

  CycleResult Run();

 private:
  const QuotaTable& quota() const { return state_.quota(); }
  // Phases.
  void EvictNoExecute();
  void Allocate();
  void ReclaimAndPreempt();
  CycleResult Collect();

  // Which nodes of `pool` (bit per position in PoolNodes) fit pods of p's shape now: kept per
  // shape and pool, brought up to date from the pool's change log when asked.
  const std::vector<uint64_t>& ShapeFitBits(const PodState& p, int pool);

  // Allocation.
  // On failure, `reason` is each node pool's reason, "; "-separated, each after its pool's
  // name when the pod lists several.
  bool TryJob(const Job& job, std::string& reason, bool use_cache);
  bool PlaceJobInPool(const Job& job, int pool, std::string& reason, bool use_cache);
  int FindNode(int pod, int pool, const std::vector<int>& gang_nodes, int* device,
               std::string* reason);
  bool ReclaimerEligible(const Job& job, int pool) const;
  // The scorer's score the device it scores are a function of the node's state and the pod's
  // shape only, so they are kept per node and shape until the node changes: `entry` is the
  // shape's entry of the node, `version` the node's version.
  struct ShapeScore;
  ShapeScore* ShapeScores(int shape);
  const ShapeScore& CachedResourceScore(const PodState& p, ShapeScore& entry, uint32_t version,
                                        int node);
  int TopologyScore(int pool, int node, const std::vector<int>& gang_nodes) const;
  std::string FailureReason(const PodState& p, int pool, StaticList& list);
  // `insufficient`: nodes short of each dimension (last entry: nvidia.com/gpu).
  std::string FormatFailureReason(const std::vector<int>& insufficient, int pool,
                                  const StaticList& list);
  // The reason text of nodes short of each dimension, the last one (view_.Dims())
  // nvidia.com/gpu.
  const std::vector<std::string>& ResourceReasons();
  // Bit i: the node lacks p.req[i]; kGpuShortBit: its GPUs do not fit.
  uint32_t Shortfall(const PodState& p, int node);
  // Brings a cached failure's counts up to date with the pool's changes since it was counted;
  // returns whether any count changed.
  struct CachedFailure;
  bool RefreshFailure(const PodState& p, int pool, StaticList& list, CachedFailure& f);

  // Reclaim / preempt.
  bool TryWithVictims(const Job& job, int pool, bool reclaim);
  bool SelectVictims(int pod, int node, int pool, bool reclaim, std::vector<int>& victims);
  // Takes `victim` and its gang peers (WithGangPeers) off their nodes for `evictor`.
  void EvictWithGang(int victim, const PodState& evictor, bool reclaim);
  // Quota already freed by the victims chosen so far, by (queue, node pool), ancestors included.
  using TakenQuota = std::map<std::pair<int, int>, QuotaVector>;
  bool VictimAllowed(const PodState& reclaimer, int victim, int pool,
                     const TakenQuota& taken) const;
  // Whether each queue on the reclaimer's path below the one it shares with `victim_queue`
  // (its own queue aside: ReclaimerEligible checks that one for the whole job) stays within its
  // fair share in `pool` with the pod, once the victims in `taken` are gone.
  bool ReclaimerSideWithinFairShare(const PodState& reclaimer, int victim_queue, int pool,
                                    const TakenQuota& taken) const;
  // Whether every pod that evicting `victim` takes along (WithGangPeers) may be evicted by
  // `evictor`: preemptible, and for preemption of strictly lower priority.
  bool GangEvictable(const PodState& evictor, int victim, bool reclaim) const;
  std::vector<int> WithGangPeers(int pod) const;
  // `q` and its ancestors, leaf first, up to (not including) the first one that is also `other`
  // or an ancestor of it: the levels where the two queues' paths have parted.
  std::vector<int> LevelsBelowSharedAncestor(int q, int other) const;

  const SchedulerOptions& options_;
  const ClusterSnapshot& snapshot_;
  ClusterView view_;
  CycleSetup setup_;
  CycleState state_;
  const std::vector<QueueState>& queues_;
  const Gangs& gangs_;
  int pools_ = 0;
  std::vector<Job> jobs_;
  std::vector<NoExecuteDeadline> no_execute_deadlines_;
  std::vector<int> no_execute_pods_;  // the pod of each no_execute_deadlines_ entry
  std::vector<int> failed_jobs_;
  std::unique_ptr<PlacementScorer> scorer_;
  std::vector<std::string> pool_names_;
  std::unique_ptr<QueueOrder> order_;
  // Single pods that found no node, by exact request: the reason and the pool's epoch when it
  // was computed (a later pod with the same key fails too; its reason is recounted only if the
  // pool changed since).
  struct CachedFailure {
    std::string reason;
    uint64_t epoch = 0;
    // Filled at the first recount: the shortfall of each candidate and the per-dimension counts
    // behind `reason`, as of PoolLog(pool).size() == log_pos. Later recounts only look at the
    // nodes changed since, instead of every candidate.
    std::vector<uint32_t> shortfall;
    std::vector<int> insufficient;
    size_t log_pos = 0;
  };
  // Resource score of each node for each pod shape, valid while the entry's version equals the
  // node's (the version moves on every change of the node; 0 = never scored).
  struct ShapeScore {
    double score = 0;
    uint32_t version = 0;
    int32_t device = -1;  // the device a fractional pod would take (GpuFits), else -1
  };
  // By pool slot: a pool's nodes are contiguous, in the order FindNode visits.
  std::vector<std::vector<ShapeScore>> shape_scores_;  // by shape id, then slot; filled lazily
  // FindNode: per pristine class of the list, kClassUnseen or the index of its representative
  // in scratch_ (only nodes that fit are visited, so there is no "does not fit" state).
  std::vector<int> class_slot_;
  // FindNode: per pristine class of the list, the last stretch of the window (1 up to the wrap,
  // 2 after it) where its first empty node was visited.
  std::vector<int> class_stretch_;
  struct ShapeFit {
    std::vector<uint64_t> bits;  // empty = not built
    size_t log_pos = 0;          // PoolLog(pool).size() when last brought up to date
  };
  std::vector<ShapeFit> shape_fit_;  // by shape * pools_ + pool
  // Keyed by (signature, pool, shape): everything that decides a single pod's fit.
  std::unordered_map<FailureKey, CachedFailure, FailureKeyHash> failure_cache_;
  // Keyed by (signature, pool, shape, queue, priority): CommittedOps() when the pod last found
  // no victims (a later try can only differ once something else was committed).
  std::map<std::tuple<int, int, int, int, int32_t>, size_t> victim_failure_epoch_;
  std::vector<int64_t> decision_latency_ns_;
  std::vector<Candidate> scratch_;
  std::vector<std::string> resource_reasons_;                       // ResourceReasons
  std::vector<std::pair<int, const std::string*>> reason_entries_;  // FormatFailureReason
  std::string pool_reason_;                                         // TryJob
};

struct FitTest {
  const int64_t *cpu, *memory, *pods;
  const int32_t* gpu;
  int64_t min_cpu = std::numeric_limits<int64_t>::min();
  int64_t min_memory = std::numeric_limits<int64_t>::min();
  int64_t min_pods = std::numeric_limits<int64_t>::min();
  int32_t gpu_req = 0;

  bool operator()(size_t at) const {
    return (cpu[at] >= min_cpu) & (memory[at] >= min_memory) & (pods[at] >= min_pods) &
           (gpu[at] >= gpu_req);
  }
  // Bit i: whether the node at position begin + i fits (end - begin <= 64).
  uint64_t Word(size_t begin, size_t end) const {
    uint64_t bits = 0;
    for (size_t at = begin; at < end; ++at) bits |= uint64_t{(*this)(at)} << (at - begin);
    return bits;
  }
};

const std::vector<uint64_t>& Cycle::ShapeFitBits(const PodState& p, int pool) {
  const size_t key = static_cast<size_t>(p.shape) * pools_ + pool;
  if (key >= shape_fit_.size()) shape_fit_.resize(key + 1);
  ShapeFit& sf = shape_fit_[key];
  // Same verdict as Fits: a whole-GPU pod needs full_free >= gpu_whole, a fraction needs one
  // device with that much left (max_device_free), other pods need nothing (both are >= 0).
  const PoolFit& fit = state_.pool_fit(pool);
  FitTest test{fit.cpu.data(), fit.memory.data(), fit.pods.data(),
               fit.gpu[p.gpu_whole > 0 ? 0 : 1].data()};
  test.gpu_req = p.gpu_whole > 0 ? p.gpu_whole : p.gpu_fraction;
  // Requests outside cpu/memory/pods: the general check through the view.
  bool general = false;
  for (const auto& [dim, amount] : p.req) {
    if (dim == kCpuDim) {
      test.min_cpu = amount;
    } else if (dim == kMemoryDim) {
      test.min_memory = amount;
    } else if (dim == kPodsDim) {
      test.min_pods = std::max(test.min_pods, amount);
    } else {
      general = true;
    }
  }
  const std::vector<int>& nodes = view_.PoolNodes(pool);
  auto fits = [&](size_t at) -> bool {
    if (general) {
      int device = -1;
      return state_.Fits(p, nodes[at], &device);
    }
    return test(at);
  };
  const std::vector<int>& log = state_.PoolLog(pool);
  // Replaying a change costs about as much as checking a node in the tight loop below (the
  // pool's columns stay in the cache either way), so the bits are rebuilt only when more than
  // half of the pool's nodes' worth of changes piled up since.
  if (sf.bits.empty() || log.size() - sf.log_pos > nodes.size() / 2) {
    sf.bits.assign((nodes.size() + 63) / 64, 0);
    for (size_t word = 0; word < sf.bits.size(); ++word) {
      const size_t begin = word * 64, end = std::min(nodes.size(), begin + 64);
      if (!general) {
        sf.bits[word] = test.Word(begin, end);
        continue;
      }
      uint64_t bits = 0;
      for (size_t at = begin; at < end; ++at) bits |= uint64_t{fits(at)} << (at - begin);
      sf.bits[word] = bits;
    }
  } else {
    for (size_t i = sf.log_pos; i < log.size(); ++i) {
      const int at = state_.PoolPosition(log[i]);
      const uint64_t bit = uint64_t{1} << (at % 64);
      sf.bits[at / 64] = fits(at) ? sf.bits[at / 64] | bit : sf.bits[at / 64] & ~bit;
    }
  }
  sf.log_pos = log.size();
  return sf.bits;
}

// ---------------------------------------------------------------------------------------------
// Placement

constexpr int kClassUnseen = -2;

// Position of the k-th (from 1) set bit of x; x has at least k set bits.
int NthSetBit(uint64_t x, int k) {
  int position = 0;
  for (int width = 32; width > 0; width /= 2) {
    const uint64_t low = x & ((uint64_t{1} << width) - 1);
    const int count = std::popcount(low);
    if (count < k) {
      k -= count;
      x >>= width;
      position += width;
    } else {
      x = low;
    }
  }
  return position;
}

int NumFeasibleNodesToFind(int pool_nodes, int percentage) {
  if (pool_nodes < 100 || percentage >= 100) return pool_nodes;
  int adaptive = percentage;
  if (adaptive <= 0) adaptive = std::max(5, 50 - pool_nodes / 125);
  return std::max(100, pool_nodes * adaptive / 100);
}

Cycle::ShapeScore* Cycle::ShapeScores(int shape) {
  if (static_cast<size_t>(shape) >= shape_scores_.size()) shape_scores_.resize(shape + 1);
  std::vector<ShapeScore>& scores = shape_scores_[shape];
  if (scores.empty()) scores.resize(view_.NumNodes());
  return scores.data();
}

const Cycle::ShapeScore& Cycle::CachedResourceScore(const PodState& p, ShapeScore& entry,
                                                    uint32_t version, int node) {
  if (entry.version != version) {
    int device = -1;
    if (p.gpu_fraction > 0) state_.GpuFits(p, node, &device);
    entry.score = scorer_->Score(p, node, device);
    entry.device = device;
    entry.version = version;
  }
  return entry;
}

int Cycle::TopologyScore(int pool, int node, const std::vector<int>& gang_nodes) const {
  const std::vector<std::string>& keys = view_.PoolTopologyKeys(pool);
  if (keys.empty() || gang_nodes.empty()) return 0;
  const std::vector<int>& anchor = view_.node(gang_nodes[0]).topology;
  const std::vector<int>& mine = view_.node(node).topology;
  int matched = 0;
  for (size_t k = 0; k < keys.size() && k < anchor.size() && k < mine.size(); ++k) {
    if (anchor[k] >= 0 && anchor[k] == mine[k]) ++matched;
  }
  return matched * 100 / static_cast<int>(keys.size());
}

std::string Cycle::FailureReason(const PodState& p, int pool, StaticList& list) {
  // Counted in arrays (no allocation per node), then merged with the static reasons.
  std::vector<int> insufficient(view_.Dims() + 1, 0);  // last: nvidia.com/gpu
  // Only whether the GPUs fit matters here, not which device: full_free and max_device_free
  // answer that without walking the devices (GpuFits' verdict is the same).
  const int gpu_dim = view_.Dims();
  for (const StaticCandidate& c : list.candidates) {
    for (const auto& [dim, amount] : p.req) {
      if (view_.Free(c.node, dim) < amount) ++insufficient[dim];
    }
    if (p.gpu_whole > 0) {
      if (view_.node(c.node).full_free < p.gpu_whole) ++insufficient[gpu_dim];
    } else if (p.gpu_fraction > 0) {
      if (view_.node(c.node).max_device_free < p.gpu_fraction) ++insufficient[gpu_dim];
    }
  }
  return FormatFailureReason(insufficient, pool, list);
}

const std::vector<std::string>& Cycle::ResourceReasons() {
  if (resource_reasons_.size() == static_cast<size_t>(view_.Dims()) + 1) return resource_reasons_;
  resource_reasons_.clear();  // a dimension was added since
  // NodeResourcesFit's wording: ErrReasonTooManyPods for the pod count, else "Insufficient".
  for (int d = 0; d <= view_.Dims(); ++d) {
    resource_reasons_.push_back(d == kPodsDim       ? "Too many pods"
                                : d == view_.Dims() ? "Insufficient " + std::string(kGpuResource)
                                                    : "Insufficient " + view_.DimName(d));
  }
  return resource_reasons_;
}

std::string Cycle::FormatFailureReason(const std::vector<int>& insufficient, int pool,
                                       const StaticList& list) {
  // (count, text), the texts not copied: they live in the list and in resource_reasons_.
  const std::vector<std::string>& resource_reasons = ResourceReasons();
  std::vector<std::pair<int, const std::string*>>& entries = reason_entries_;
  entries.clear();
  for (const auto& [text, count] : list.static_reasons) entries.push_back({count, &text});
  for (int d = 0; d <= view_.Dims(); ++d) {
    if (insufficient[d] != 0) entries.push_back({insufficient[d], &resource_reasons[d]});
  }
  // kube-scheduler (FitError.Error) sorts the "<count> <reason>" strings with sort.Strings, i.e.
  // by their text ("1 Insufficient cpu" before "8 node(s) had untolerated taint"). gpupool orders
  // by count on purpose, most common first and then by text, so the reason that blocks most
  // nodes leads (DESIGN section 4: "8 node(s) had untolerated taint ..., 4 Insufficient ...").
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : *a.second < *b.second;
  });
  std::string out = "0/" + std::to_string(list.pool_nodes) + " nodes are available";
  if (list.pool_nodes == 0) return out + " in node pool " + view_.PoolName(pool) + ".";
  for (size_t i = 0; i < entries.size(); ++i) {
    out += i == 0 ? ": " : ", ";
    out += std::to_string(entries[i].first);
    out += ' ';
    out += *entries[i].second;
  }
  out += '.';
  return out;
}

constexpr uint32_t kGpuShortBit = 1u << 31;

uint32_t Cycle::Shortfall(const PodState& p, int node) {
  uint32_t bits = 0;
  for (size_t i = 0; i < p.req.size(); ++i) {
    if (view_.Free(node, p.req[i].first) < p.req[i].second) bits |= 1u << i;
  }
  const NodeView& v = view_.node(node);
  if (p.gpu_whole > 0 ? v.full_free < p.gpu_whole
                      : p.gpu_fraction > 0 && v.max_device_free < p.gpu_fraction) {
    bits |= kGpuShortBit;
  }
  return bits;
}

bool Cycle::RefreshFailure(const PodState& p, int pool, StaticList& list, CachedFailure& f) {
  const std::vector<int>& log = state_.PoolLog(pool);
  auto count = [&](uint32_t bits, int sign) {
    for (size_t i = 0; i < p.req.size(); ++i) {
      if (bits & (1u << i)) f.insufficient[p.req[i].first] += sign;
    }
    if (bits & kGpuShortBit) f.insufficient[view_.Dims()] += sign;
  };
  if (p.req.size() >= 31) {  // does not fit the bits: recount everything
    f.insufficient.assign(view_.Dims() + 1, 0);
    for (const StaticCandidate& c : list.candidates) count(Shortfall(p, c.node), +1);
    return true;
  }
  if (f.shortfall.empty() && !list.candidates.empty()) {
    f.insufficient.assign(view_.Dims() + 1, 0);
    f.shortfall.resize(list.candidates.size());
    for (size_t i = 0; i < list.candidates.size(); ++i) {
      f.shortfall[i] = Shortfall(p, list.candidates[i].node);
      count(f.shortfall[i], +1);
    }
    f.log_pos = log.size();
    return true;
  }
  if (list.candidate_at.empty()) {
    list.candidate_at.assign(view_.PoolNodes(pool).size(), -1);
    for (size_t i = 0; i < list.candidates.size(); ++i) {
      list.candidate_at[state_.PoolPosition(list.candidates[i].node)] = static_cast<int>(i);
    }
  }
  bool changed = false;
  for (; f.log_pos < log.size(); ++f.log_pos) {
    const int at = list.candidate_at[state_.PoolPosition(log[f.log_pos])];
    if (at < 0) continue;
    const uint32_t now = Shortfall(p, list.candidates[at].node);
    if (now == f.shortfall[at]) continue;
    count(f.shortfall[at], -1);
    count(now, +1);
    f.shortfall[at] = now;
    changed = true;
  }
  return changed;
}

// kube-scheduler's weighted sum of the scores normalised to 0..100 over the scored nodes
// (resource twice); ties go to the node first by name.
const Candidate& BestCandidate(const Candidate* scored, int num_scored, double min_raw,
                               double max_raw, int32_t max_taint, int64_t max_affinity) {
  const bool spread = max_raw > min_raw;
  const double span = max_raw - min_raw;
  int best = 0;
  int64_t best_score = std::numeric_limits<int64_t>::min();
  int best_rank = 0;
  for (int i = 0; i < num_scored; ++i) {
    const Candidate& c = scored[i];
    const int64_t resource =
        spread ? static_cast<int64_t>((c.resource_raw - min_raw) * 100 / span + 0.5) : 100;
    // A raw 0 scores 100 (taint) and 0 (affinity) whatever the maximum: no division needed.
    const int64_t taint = c.taint_raw == 0 ? 100 : 100 - int64_t{c.taint_raw} * 100 / max_taint;
    const int64_t affinity =
        c.affinity_raw == 0 || max_affinity == 0 ? 0 : c.affinity_raw * 100 / max_affinity;
    const int64_t score = 2 * resource + taint + affinity + c.topology;
    if (score > best_score || (score == best_score && c.name_rank < best_rank)) {
      best = i;
      best_score = score;
      best_rank = c.name_rank;
    }
  }
  return scored[best];
}

bool Dominates(const PodState& p, const FailedShape& f) {
  if (f.gpu_whole > 0 && p.gpu_whole < f.gpu_whole) return false;
  if (f.gpu_fraction > 0 && (p.gpu_fraction < f.gpu_fraction || p.gpu_whole > 0)) return false;
  size_t i = 0;
  for (const auto& [dim, amount] : f.req) {
    while (i < p.req.size() && p.req[i].first < dim) ++i;
    if (i == p.req.size() || p.req[i].first != dim || p.req[i].second < amount) return false;
  }
  return true;
}

int Cycle::FindNode(int pod_index, int pool, const std::vector<int>& gang_nodes, int* device,
                    std::string* reason) {
  const PodState& p = state_.pod(pod_index);
  StaticList& list = view_.Static(p.signature, pool, *p.pod);
  const size_t n = list.candidates.size();
  const int to_find =
      NumFeasibleNodesToFind(list.pool_nodes, options_.percentage_of_nodes_to_score);
  // At most one entry per candidate: sized once, so the visit writes without a capacity check.
  if (scratch_.size() < n) scratch_.resize(n);
  Candidate* const scored = scratch_.data();
  int num_scored = 0;
  // Nodes with nothing on them and the same shape and static scores score the same: one
  // representative per class is scored, the class keeps its first node by name. Not for gang
  // pods with topology (their score depends on the node's labels).
  const bool topology = !gang_nodes.empty() && !view_.PoolTopologyKeys(pool).empty();
  const bool dedupe = !topology;
  class_slot_.assign(list.num_classes, kClassUnseen);
  class_stretch_.assign(list.num_classes, 0);
  int feasible = 0;
  size_t processed = 0;
  const PoolFit& fit = state_.pool_fit(pool);
  // The normalisation bounds (scores are finite, so the first score sets both).
  double min_raw = std::numeric_limits<double>::infinity();
  double max_raw = -std::numeric_limits<double>::infinity();
  int32_t max_taint = 0;
  int64_t max_affinity = 0;
  // Raw pointers, all by pool position: the visit stores through `scored`, which would make
  // the compiler reload each vector's data pointer for every node.
  const int pool_offset = state_.PoolOffset(pool);
  ShapeScore* const shape_scores = ShapeScores(p.shape) + pool_offset;
  const uint32_t* const versions = state_.PoolVersions(pool);
  const StaticCandidate* const candidates = list.candidates.data();
  const int* const candidate_at = list.candidate_at.data();
  const int* const class_at = list.class_at.data();
  int* const class_slot = class_slot_.data();
  int* const class_stretch = class_stretch_.data();
  const int* const name_rank = fit.name_rank.data();
  const int* const node_at = view_.PoolNodes(pool).data();
  // An empty node whose class already has a representative only competes for the class's
  // first name (two ints read, not the candidate); any other node is scored.
  auto visit = [&](int at, bool pristine) {
    if (pristine) {
      int& slot = class_slot[class_at[at]];
      if (slot >= 0) {
        Candidate& rep = scored[slot];
        if (name_rank[at] < rep.name_rank) {
          rep.node = node_at[at];
          rep.name_rank = name_rank[at];
        }
        return;
      }
      slot = num_scored;
    }
    const StaticCandidate& c = candidates[candidate_at[at]];
    const ShapeScore& cached = CachedResourceScore(p, shape_scores[at], versions[at], c.node);
    const double raw = cached.score;
    min_raw = std::min(min_raw, raw);
    max_raw = std::max(max_raw, raw);
    max_taint = std::max(max_taint, c.intolerable_prefer_no_schedule);
    max_affinity = std::max(max_affinity, c.preferred_affinity);
    scored[num_scored++] = {c.node,
                            c.name_rank,
                            raw,
                            c.intolerable_prefer_no_schedule,
                            c.preferred_affinity,
                            topology ? TopologyScore(pool, c.node, gang_nodes) : 0,
                            cached.device};
  };
  // Of the empty nodes `pristine` in word w, the first of each class not yet seen in this
  // stretch of the window.
  int stretch = 1;
  auto stretch_firsts = [&](uint64_t pristine, int w) {
    const uint64_t* class_bits = list.class_bits.data() + w;
    const size_t words = list.candidate_bits.size();
    uint64_t firsts = 0;
    for (uint64_t rest = pristine; rest != 0;) {
      const int c = class_at[w * 64 + std::countr_zero(rest)];
      if (class_stretch[c] != stretch) {
        class_stretch[c] = stretch;
        firsts |= rest & -rest;
      }
      rest &= ~class_bits[c * words];
    }
    return firsts;
  };
  // The rotating window over the candidates (in pool position order, from the candidate at
  // next_start, wrapping once), a 64-position word at a time: candidate bits AND the pod shape's
  // fit bits, up to the feasible node that makes `to_find`.
  if (n > 0) {
    const std::vector<uint64_t>& fits = ShapeFitBits(p, pool);
    const std::vector<uint64_t>& candidates = list.candidate_bits;
    const int start = list.positions[list.next_start % n];
    const int words = static_cast<int>(candidates.size());
    const int first_word = start / 64;
    const uint64_t from_start = ~uint64_t{0} << (start % 64);
    // Steps: first word from `start`, the following words, wrap, the words before, and the
    // first word's bits before `start`.
    for (int step = 0; step <= words && feasible < to_find; ++step) {
      const int w = (first_word + step) % words;
      uint64_t range = ~uint64_t{0};
      if (step == 0) range = from_start;
      if (step == words) range = ~from_start;
      uint64_t in_window = candidates[w] & range;
      uint64_t found = fits[w] & in_window;
      const int count = std::popcount(found);
      if (feasible + count >= to_find) {
        // The window ends at the (to_find - feasible)-th feasible node of this word.
        const int last = NthSetBit(found, to_find - feasible);
        const uint64_t upto = last == 63 ? ~uint64_t{0} : (uint64_t{2} << last) - 1;
        in_window &= upto;
        found &= upto;
      }
      processed += static_cast<size_t>(std::popcount(in_window));
      feasible += std::popcount(found);
      const uint64_t pristine = dedupe ? found & fit.empty[w] : 0;
      // Names ascend with positions, so within one stretch of the window (up to the wrap, then
      // from position 0) a class's first empty node has its smallest name: the others cannot
      // win and are skipped a word at a time. After the wrap every name is smaller than those
      // before it, so the classes are looked at afresh.
      if (step > 0 && w == 0) ++stretch;
      if (pristine != 0 && fit.ranks_ascending) {
        found = (found & ~pristine) | stretch_firsts(pristine, w);
      }
      for (; found != 0; found &= found - 1) {
        const int bit = std::countr_zero(found);
        visit(w * 64 + bit, (pristine >> bit) & 1);
      }
    }
  }
  if (n > 0) list.next_start = (list.next_start + processed) % n;
  if (num_scored == 0) {
    if (reason != nullptr) *reason = FailureReason(p, pool, list);
    return -1;
  }
  const Candidate& best =
      BestCandidate(scored, num_scored, min_raw, max_raw, max_taint, max_affinity);
  *device = best.device;
  return best.node;
}

// ---------------------------------------------------------------------------------------------
// Allocation

bool Cycle::PlaceJobInPool(const Job& job, int pool, std::string& reason, bool use_cache) {
  std::string quota = order_->CheckQuota(job, pool);
  if (!quota.empty()) {
    reason = quota;
    return false;
  }
  const size_t checkpoint = state_.Checkpoint();
  std::vector<int> gang_nodes;
  int placed = 0;
  std::string first_failure;
  for (int pod : job.pods) {
    const PodState& p = state_.pod(pod);
    std::string why;
    const bool cached = use_cache && job.gang < 0;
    const FailureKey key{p.signature, pool, p.shape};
    if (cached) {
      auto it = failure_cache_.find(key);
      if (it != failure_cache_.end()) {
        CachedFailure& f = it->second;
        if (f.epoch != state_.PoolEpoch(pool)) {
          StaticList& list = view_.Static(p.signature, pool, *p.pod);
          if (RefreshFailure(p, pool, list, f)) {
            f.reason = FormatFailureReason(f.insufficient, pool, list);
          }
          f.epoch = state_.PoolEpoch(pool);
        }
        reason = it->second.reason;
        return false;
      }
    }
    int device = -1;
    int node = -1;
    if (std::find(p.pools.begin(), p.pools.end(), pool) == p.pools.end()) {
      why = "node pool " + view_.PoolName(pool) + " is not in the pod's node pools";
    } else {
      StaticList& list = view_.Static(p.signature, pool, *p.pod);
      const bool dominated =
          use_cache && std::any_of(list.failed.begin(), list.failed.end(),
                                   [&](const FailedShape& f) { return Dominates(p, f); });
      if (dominated) {
        why = FailureReason(p, pool, list);
      } else {
        node = FindNode(pod, pool, gang_nodes, &device, &why);
        // Only single pods record: a gang's pods fail while its earlier pods hold capacity
        // that a rollback gives back.
        if (node < 0 && use_cache && job.gang < 0 && list.failed.size() < 32) {
          list.failed.push_back({p.req, p.gpu_whole, p.gpu_fraction});
        }
      }
    }
    if (node < 0) {
      if (cached) failure_cache_[key] = {why, state_.PoolEpoch(pool)};
      if (first_failure.empty()) first_failure = p.key + ": " + why;
      state_.SetReason(pod, why);
      // A gang that needs every remaining pod cannot succeed any more.
      if (job.gang < 0 || job.need >= static_cast<int>(job.pods.size())) break;
      continue;
    }
    state_.Place(pod, node, device, pool);
    gang_nodes.push_back(node);
    ++placed;
  }
  if (placed > 0 && placed >= job.need) {
    for (int pod : job.pods) {
      if (state_.pod(pod).placed_now) continue;
      state_.SetReason(pod, "gang " + job.gang_name + " started with " + std::to_string(placed) +
                                " pods (gang-min " + std::to_string(job.gang_min) +
                                "); this pod: " + state_.pod(pod).reason);
    }
    state_.Commit(checkpoint, pool);
    return true;
  }
  state_.Rollback(checkpoint);
  if (job.gang < 0) {
    reason = state_.pod(job.pods[0]).reason;
  } else {
    reason = "gang " + job.gang_name + ": " + std::to_string(placed) + " of " +
             std::to_string(job.pods.size()) + " pending pods fit, gang-min " +
             std::to_string(job.gang_min) + " needs " + std::to_string(job.need) + "; " +
             first_failure;
  }
  return false;
}

bool Cycle::TryJob(const Job& job, std::string& reason, bool use_cache) {
  const std::span<const int> pools = job.pools;
  reason.clear();
  for (size_t i = 0; i < pools.size(); ++i) {
    // pool_reason_ keeps its capacity across decisions: copying a cached reason into it does
    // not allocate.
    if (PlaceJobInPool(job, pools[i], pool_reason_, use_cache)) return true;
    if (i > 0) reason += "; ";
    if (pools.size() > 1) {
      reason += "node pool ";
      reason += view_.PoolName(pools[i]);
      reason += ": ";
    }
    reason += pool_reason_;
  }
  return false;
}

void Cycle::Allocate() {
  std::string reason;
  for (int j = order_->Next(); j >= 0; j = order_->Next()) {
    const auto start = options_.record_decision_latency ? std::chrono::steady_clock::now()
                                                        : std::chrono::steady_clock::time_point{};
    const bool placed = TryJob(jobs_[j], reason, /*use_cache=*/true);
    if (options_.record_decision_latency) {
      decision_latency_ns_.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::steady_clock::now() - start)
                                         .count());
    }
    if (!placed) {
      const std::vector<int>& job_pods = jobs_[j].pods;
      for (size_t i = 0; i + 1 < job_pods.size(); ++i) state_.SetReason(job_pods[i], reason);
      state_.SetReason(job_pods.back(), std::move(reason));
      failed_jobs_.push_back(j);
    }
    order_->Decided(j, placed);
  }
}

// ---------------------------------------------------------------------------------------------
// Reclaim and preempt

std::vector<int> Cycle::LevelsBelowSharedAncestor(int q, int other) const {
  std::set<int> shared;
  for (int a = other; a >= 0; a = queues_[a].parent) shared.insert(a);
  std::vector<int> levels;
  for (; q >= 0 && !shared.count(q); q = queues_[q].parent) levels.push_back(q);
  return levels;
}

// Every member the cycle holds on a node: bound before the cycle, or placed earlier in it (by
// the allocate phase or an earlier reclaim or preemption, while some of its peers were already
// running). A gang is all or nothing, so evicting it must take the members placed in this cycle
// too, or they would run below gang-min. KAI does the same: a victim job gives up all its
// active allocated tasks, Allocated and Pipelined ones of the same session included
// (GetTasksToEvict). Sparing such a gang instead would only bind a pod in this cycle to evict
// its whole gang in the next.
std::vector<int> Cycle::WithGangPeers(int pod) const {
  const PodState& p = state_.pod(pod);
  if (p.gang < 0) return {pod};
  std::vector<int> out;
  for (int m : gangs_.members[p.gang]) {
    if (state_.pod(m).node >= 0) out.push_back(m);
  }
  return out;
}

bool Cycle::ReclaimerEligible(const Job& job, int pool) const {
  const QuotaVector req = job.quota;
  const bool gpu = req[kGpuQ] > 0;
  for (int r = 0; r < kQ; ++r) {
    if (gpu != (r == kGpuQ)) continue;
    if (quota().Allocated(job.queue, pool, r) + req[r] > quota().FairShare(job.queue, pool, r))
      return false;
  }
  return true;
}

bool Cycle::GangEvictable(const PodState& evictor, int victim, bool reclaim) const {
  for (int m : WithGangPeers(victim)) {
    const PodState& peer = state_.pod(m);
    if (!peer.preemptible) return false;
    if (!reclaim && peer.priority >= evictor.priority) return false;
  }
  return true;
}

// A victim leaves with its whole gang (WithGangPeers), whose running members may sit on other
// nodes and in other node pools, so the quota checks add up what the gang holds in each node
// pool. The two sides are compared at every level below the queue they share (KAI compares
// siblings where the paths diverge; with departments, teams and projects each level below the
// shared ancestor is such a pair of siblings, and what the shared ancestor and those above it
// hold does not change). On the victim's side, each of those queues must be above its fair
// share in the reclaim pool, and stay at or above its deserved quota in every node pool the
// gang leaves, in every resource the gang frees there (KAI never reclaims deserved quota). On
// the reclaimer's side, each must stay within its fair share with the pod
// (ReclaimerSideWithinFairShare).
bool Cycle::VictimAllowed(const PodState& reclaimer, int victim, int pool,
                          const TakenQuota& taken) const {
  const PodState& v = state_.pod(victim);
  const bool gpu = reclaimer.quota[kGpuQ] > 0;
  bool frees = false;
  for (int r = 0; r < kQ; ++r) {
    if (gpu == (r == kGpuQ) && v.quota[r] > 0) frees = true;
  }
  if (!frees) return false;
  std::map<int, QuotaVector> freed;  // by node pool: the gang's running members there
  for (int m : WithGangPeers(victim)) {
    QuotaVector& sum = freed[view_.node(state_.pod(m).node).pool];
    for (int r = 0; r < kQ; ++r) sum[r] += state_.pod(m).quota[r];
  }
  auto allocated = [&](int x, int in_pool, int r) {
    auto it = taken.find({x, in_pool});
    return quota().Allocated(x, in_pool, r) - (it == taken.end() ? 0 : it->second[r]);
  };
  for (int x : LevelsBelowSharedAncestor(v.queue, reclaimer.queue)) {
    for (int r = 0; r < kQ; ++r) {
      if (gpu != (r == kGpuQ) || freed[pool][r] == 0) continue;
      if (allocated(x, pool, r) <= quota().FairShare(x, pool, r))
        return false;  // not above fair share
    }
    for (const auto& [in_pool, amounts] : freed) {
      for (int r = 0; r < kQ; ++r) {
        if (amounts[r] == 0 || !quota().Applies(x, in_pool, r)) continue;
        const int64_t deserved = quota().Deserved(x, in_pool, r);
        if (deserved == model::kUnlimited || allocated(x, in_pool, r) - amounts[r] < deserved) {
          return false;
        }
      }
    }
  }
  return ReclaimerSideWithinFairShare(reclaimer, v.queue, pool, taken);
}

// Against the allocation once the victims chosen so far are gone, as KAI checks the reclaimer's
// queues on the state with the victims evicted: a project's team may be at its fair share only
// because a sibling project runs above its own, and a victim of that sibling chosen in the same
// step makes room in the team for a victim of another team. The victims that freed it must then
// stay chosen: SelectVictims' reprieve checks this again before giving one back.
bool Cycle::ReclaimerSideWithinFairShare(const PodState& reclaimer, int victim_queue, int pool,
                                         const TakenQuota& taken) const {
  const bool gpu = reclaimer.quota[kGpuQ] > 0;
  for (int x : LevelsBelowSharedAncestor(reclaimer.queue, victim_queue)) {
    if (x == reclaimer.queue) continue;
    auto it = taken.find({x, pool});
    for (int r = 0; r < kQ; ++r) {
      if (gpu != (r == kGpuQ)) continue;
      const int64_t freed = it == taken.end() ? 0 : it->second[r];
      if (quota().Allocated(x, pool, r) - freed + reclaimer.quota[r] >
          quota().FairShare(x, pool, r)) {
        return false;
      }
    }
  }
  return true;
}

bool Cycle::SelectVictims(int pod, int node, int pool, bool reclaim, std::vector<int>& victims) {
  const PodState& p = state_.pod(pod);
  std::vector<int> candidates;
  for (int v : state_.NodePods(node)) {
    const PodState& vp = state_.pod(v);
    if (!vp.bound_initially || !vp.preemptible || vp.queue < 0 || vp.evicted) continue;
    if (reclaim ? vp.queue == p.queue : (vp.queue != p.queue || vp.priority >= p.priority)) {
      continue;
    }
    if (vp.gang >= 0 && (vp.gang == p.gang || !GangEvictable(p, v, reclaim))) continue;
    candidates.push_back(v);
  }
  if (candidates.empty()) return false;
  std::sort(candidates.begin(), candidates.end(), [&](int a, int b) {
    const PodState &x = state_.pod(a), &y = state_.pod(b);
    if (x.priority != y.priority) return x.priority < y.priority;
    if (x.quota[kGpuQ] != y.quota[kGpuQ]) return x.quota[kGpuQ] > y.quota[kGpuQ];
    if (x.arrival != y.arrival) return x.arrival > y.arrival;
    return x.key < y.key;
  });
  // Simulated node: extra free per needed dimension and device frees.
  const NodeView& nv = view_.node(node);
  std::vector<int64_t> extra(p.req.size(), 0);
  std::vector<int32_t> dev(view_.Devices(node), view_.Devices(node) + nv.gpu_devices);
  auto fits = [&]() {
    for (size_t i = 0; i < p.req.size(); ++i) {
      if (view_.Free(node, p.req[i].first) + extra[i] < p.req[i].second) return false;
    }
    if (p.gpu_whole > 0) {
      return std::count(dev.begin(), dev.end(), 1000) >= p.gpu_whole;
    }
    if (p.gpu_fraction > 0) {
      return std::any_of(dev.begin(), dev.end(), [&](int32_t f) { return f >= p.gpu_fraction; });
    }
    return true;
  };
  auto change = [&](int v, int sign) {
    for (int m : WithGangPeers(v)) {
      const PodState& mp = state_.pod(m);
      if (mp.node != node) continue;
      for (size_t i = 0; i < p.req.size(); ++i) {
        for (const auto& [dim, amount] : mp.req) {
          if (dim == p.req[i].first) extra[i] += sign * amount;
        }
      }
      for (int d : mp.devices) dev[d] += sign * (mp.gpu_whole > 0 ? 1000 : mp.gpu_fraction);
    }
  };
  TakenQuota taken;
  auto take = [&](int v, int sign) {
    for (int m : WithGangPeers(v)) {
      const int in_pool = view_.node(state_.pod(m).node).pool;
      for (int q = state_.pod(m).queue; q >= 0; q = queues_[q].parent) {
        for (int r = 0; r < kQ; ++r) taken[{q, in_pool}][r] += sign * state_.pod(m).quota[r];
      }
    }
  };
  std::vector<int> chosen;
  for (int v : candidates) {
    if (fits()) break;
    // A gang peer of a chosen victim already goes with it (and is already counted).
    const bool gone = std::any_of(chosen.begin(), chosen.end(), [&](int c) {
      return c == v || (state_.pod(v).gang >= 0 && state_.pod(c).gang == state_.pod(v).gang);
    });
    if (gone) continue;
    if (reclaim && !VictimAllowed(p, v, pool, taken)) continue;
    change(v, +1);
    take(v, +1);
    chosen.push_back(v);
  }
  if (!fits()) return false;
  // Whether every victim still chosen passes the reclaimer's side of VictimAllowed with what the
  // others free. Giving a victim back only raises the victims' queues, so their side still holds.
  auto reclaimer_side_holds = [&](int given_back) {
    return std::all_of(chosen.begin(), chosen.end(), [&](int c) {
      return c == given_back || ReclaimerSideWithinFairShare(p, state_.pod(c).queue, pool, taken);
    });
  };
  // Reprieve: give back victims, highest priority first, while the pod still fits and, for
  // reclaim, no victim left relied on the given-back one's share (ReclaimerSideWithinFairShare).
  for (int i = static_cast<int>(chosen.size()) - 1; i >= 0; --i) {
    change(chosen[i], -1);
    take(chosen[i], -1);
    if (fits() && (!reclaim || reclaimer_side_holds(chosen[i]))) {
      chosen.erase(chosen.begin() + i);
    } else {
      change(chosen[i], +1);
      take(chosen[i], +1);
    }
  }
  victims = chosen;
  return true;
}

bool Cycle::TryWithVictims(const Job& job, int pool, bool reclaim) {
  if (reclaim && (!order_->CheckQuota(job, pool).empty() || !ReclaimerEligible(job, pool)))
    return false;
  // Gang-min counts the members running now, not when the job was built (job.need): an earlier
  // reclaim or preemption in this cycle may have evicted some, and they do not come back in it.
  const int need =
      job.gang < 0 ? 1 : std::max(1, job.gang_min - RunningMembers(state_, gangs_, job.gang));
  const size_t checkpoint = state_.Checkpoint();
  std::vector<int> gang_nodes;
  int placed = 0;
  for (int pod : job.pods) {
    const std::span<const int> pools = state_.pod(pod).pools;
    if (std::find(pools.begin(), pools.end(), pool) == pools.end()) break;
    int device = -1;
    int node = FindNode(pod, pool, gang_nodes, &device, nullptr);
    if (node < 0) {
      const PodState& p = state_.pod(pod);
      StaticList& list = view_.Static(p.signature, pool, *p.pod);
      int best_node = -1;
      std::vector<int> best_victims;
      std::pair<size_t, int64_t> best_cost{std::numeric_limits<size_t>::max(), 0};
      for (const StaticCandidate& c : list.candidates) {
        std::vector<int> victims;
        if (!SelectVictims(pod, c.node, pool, reclaim, victims)) continue;
        size_t count = 0;
        int64_t priority_sum = 0;
        for (int v : victims) {
          count += WithGangPeers(v).size();
          priority_sum += state_.pod(v).priority;
        }
        std::pair<size_t, int64_t> cost{count, priority_sum};
        if (cost < best_cost) {
          best_cost = cost;
          best_node = c.node;
          best_victims = victims;
        }
      }
      if (best_node < 0) break;
      for (int v : best_victims) EvictWithGang(v, p, reclaim);
      if (!state_.Fits(p, best_node, &device)) break;
      node = best_node;
    }
    state_.Place(pod, node, device, pool);
    gang_nodes.push_back(node);
    ++placed;
  }
  bool ok = placed >= need;
  if (ok && !reclaim) {
    // Preemption frees quota of the same queue: check limits after the fact.
    Job placed_only = job;
    placed_only.pods.clear();
    ok = order_->CheckQuota(placed_only, pool).empty();
    for (int q = job.queue; ok && q >= 0; q = queues_[q].parent) {
      for (int r = 0; r < kQ; ++r) {
        const int64_t limit = quota().Limit(q, pool, r);
        if (limit != model::kUnlimited && quota().Allocated(q, pool, r) > limit) ok = false;
      }
    }
    if (ok && job.priority >= kNonPreemptiblePriority) {
      for (int r = 0; r < kQ; ++r) {
        const int64_t deserved = quota().Deserved(job.queue, pool, r);
        if (deserved != model::kUnlimited && quota().Applies(job.queue, pool, r) &&
            quota().AllocatedNonPreemptible(job.queue, pool, r) > deserved) {
          ok = false;
        }
      }
    }
  }
  if (!ok) {
    state_.Rollback(checkpoint);
    return false;
  }
  for (int pod : job.pods) {
    if (!state_.pod(pod).placed_now) {
      state_.SetReason(pod, "gang " + job.gang_name + " started without this pod");
    }
  }
  state_.Commit(checkpoint, pool);
  return true;
}

// A peer placed earlier in this cycle never ran: it is withdrawn (Op::kWithdraw) rather than
// evicted, and stays pending with the reason.
void Cycle::EvictWithGang(int victim, const PodState& evictor, bool reclaim) {
  const std::string message =
      reclaim ? "reclaimed by queue " + queues_[evictor.queue].name + " for pod " + evictor.key
              : "preempted by pod " + evictor.key + " (priority " +
                    std::to_string(evictor.priority) + ")";
  for (int m : WithGangPeers(victim)) {
    const PodState& mp = state_.pod(m);
    if (!mp.bound_initially) {
      state_.Withdraw(m, "placement withdrawn: gang " + mp.pod->labels.at(kGangLabel) + " was " +
                             message + " in the same cycle");
      continue;
    }
    state_.Evict(m, reclaim ? EvictionReason::kReclaim : EvictionReason::kPreempt, message);
  }
}

void Cycle::ReclaimAndPreempt() {
  if (!options_.enable_reclaim && !options_.enable_preempt) return;
  // Running preemptible pods per pool: without any, there is nothing to evict.
  std::vector<int> victims_in_pool(pools_, 0);
  for (const PodState& p : state_.pods()) {
    if (p.bound_initially && p.node >= 0 && p.preemptible)
      ++victims_in_pool[view_.node(p.node).pool];
  }
  for (int j : failed_jobs_) {
    const Job& job = jobs_[j];
    bool done = false;
    for (int pool : job.pools) {
      if (victims_in_pool[pool] == 0) continue;
      const PodState& first = state_.pod(job.pods[0]);
      const auto key = std::make_tuple(first.signature, pool, first.shape, job.queue, job.priority);
      if (job.gang < 0) {
        auto it = victim_failure_epoch_.find(key);
        if (it != victim_failure_epoch_.end() && it->second == state_.CommittedOps()) continue;
      }
      const size_t evictions_before = state_.evictions().size();
      if ((options_.enable_reclaim && TryWithVictims(job, pool, true)) ||
          (options_.enable_preempt && TryWithVictims(job, pool, false))) {
        for (size_t e = evictions_before; e < state_.evictions().size(); ++e) {
          int node = view_.FindNode(state_.evictions()[e].node);
          if (node >= 0) --victims_in_pool[view_.node(node).pool];
        }
        done = true;
        break;
      }
      if (job.gang < 0) victim_failure_epoch_[key] = state_.CommittedOps();
    }
    (void)done;
  }
}

// ---------------------------------------------------------------------------------------------
// NoExecute and results

// timeAdded of a taint as the node object carries it (spec.taints[] with the same key, value and
// effect); nullopt when absent or malformed.
std::optional<int64_t> TaintTimeAdded(const model::Node& node, const model::Taint& taint) {
  const auto& raw = node.raw;
  if (!raw.is_object() || !raw.contains("spec") || !raw["spec"].is_object()) return std::nullopt;
  const auto& spec = raw["spec"];
  if (!spec.contains("taints") || !spec["taints"].is_array()) return std::nullopt;
  for (const auto& t : spec["taints"]) {
    if (!t.is_object()) continue;
    auto text = [&t](const char* field) {
      return t.contains(field) && t[field].is_string() ? t[field].get<std::string>() : "";
    };
    if (text("key") != taint.key || text("value") != taint.value ||
        text("effect") != model::TaintEffectName(taint.effect)) {
      continue;
    }
    const std::string added = text("timeAdded");
    if (added.empty()) return std::nullopt;
    return ParseTimestampMillis(added);
  }
  return std::nullopt;
}

}  // namespace

NoExecuteVerdict NoExecuteDeadlineOf(const model::PodScheduling& pod, const model::Node& node,
                                     std::optional<int64_t> bound_at_ms, int64_t now_ms) {
  NoExecuteVerdict verdict;
  bool have_deadline = false;
  for (const model::Taint& taint : node.taints) {
    if (taint.effect != model::TaintEffect::kNoExecute) continue;
    // Kubernetes' taint manager: the pod's first toleration that tolerates the taint.
    const model::Toleration* toleration = nullptr;
    for (const model::Toleration& t : pod.tolerations) {
      if (model::ToleratesTaint(t, taint)) {
        toleration = &t;
        break;
      }
    }
    if (toleration == nullptr) {
      verdict.untolerated = &taint;
      return verdict;
    }
    if (!toleration->toleration_seconds) continue;  // tolerated forever
    const int64_t seconds = *toleration->toleration_seconds;
    if (seconds <= 0) {  // Kubernetes: <= 0 means evict now
      verdict.bounded = true;
      verdict.immediate = true;
      verdict.taint = &taint;
      verdict.toleration_seconds = seconds;
      continue;
    }
    std::optional<int64_t> start = TaintTimeAdded(node, taint);
    if (bound_at_ms && (!start || *bound_at_ms > *start)) start = bound_at_ms;
    if (!start && now_ms > 0) start = now_ms;
    const bool first = !verdict.bounded;
    verdict.bounded = true;
    if (verdict.immediate) continue;
    if (!start) {
      if (first) {
        verdict.taint = &taint;
        verdict.toleration_seconds = seconds;
      }
      continue;
    }
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    const int64_t deadline = seconds > (kMax - *start) / 1000 ? kMax : *start + seconds * 1000;
    if (!have_deadline || deadline < *verdict.deadline_ms) {
      have_deadline = true;
      verdict.deadline_ms = deadline;
      verdict.taint = &taint;
      verdict.toleration_seconds = seconds;
    }
  }
  if (verdict.immediate) verdict.deadline_ms.reset();
  return verdict;
}

namespace {

void Cycle::EvictNoExecute() {
  std::set<int> broken_gangs;
  const int64_t now = snapshot_.now_ms;
  for (int i = 0; i < state_.NumPods(); ++i) {
    const PodState& p = state_.pod(i);
    if (!p.bound_initially || p.node < 0) continue;
    const model::Node& node = *view_.node(p.node).node;
    std::optional<int64_t> bound_at;
    auto bound = snapshot_.bound_at_ms.find(p.key);
    if (bound != snapshot_.bound_at_ms.end()) bound_at = bound->second;
    const NoExecuteVerdict verdict = NoExecuteDeadlineOf(*p.pod, node, bound_at, now);
    std::string message;
    if (verdict.untolerated != nullptr) {
      const model::Taint* taint = verdict.untolerated;
      message = "node " + node.name + " has taint {" + taint->key + ": " + taint->value +
                "} with effect NoExecute that the pod does not tolerate";
    } else if (verdict.bounded && verdict.immediate) {
      const model::Taint* taint = verdict.taint;
      message = "node " + node.name + " has taint {" + taint->key + ": " + taint->value +
                "} with effect NoExecute that the pod tolerates for " +
                std::to_string(verdict.toleration_seconds) +
                " s (tolerationSeconds <= 0: not at all)";
    } else if (verdict.bounded && verdict.deadline_ms && now > 0 && *verdict.deadline_ms <= now) {
      const model::Taint* taint = verdict.taint;
      message = "node " + node.name + " has taint {" + taint->key + ": " + taint->value +
                "} with effect NoExecute that the pod tolerates for " +
                std::to_string(verdict.toleration_seconds) + " s (tolerationSeconds), until " +
                FormatTimestamp(*verdict.deadline_ms);
    } else {
      if (verdict.bounded) {
        no_execute_deadlines_.push_back({p.key, node.name, verdict.taint->ToString(),
                                         verdict.toleration_seconds, verdict.deadline_ms});
        no_execute_pods_.push_back(i);
      }
      continue;
    }
    state_.EvictNow(i, EvictionReason::kNoExecute, std::move(message));
    if (p.gang >= 0) broken_gangs.insert(p.gang);
  }
  // A gang that drops below its gang-min goes as a whole: no gang is left partly running.
  for (int g : broken_gangs) {
    const int running = RunningMembers(state_, gangs_, g);
    if (running == 0 || running >= gangs_.min[g]) continue;
    for (int m : gangs_.members[g]) {
      const PodState& p = state_.pod(m);
      if (p.node < 0) continue;
      state_.EvictNow(m, EvictionReason::kNoExecute,
                      "gang " + p.pod->labels.at(kGangLabel) + " fell below gang-min " +
                          std::to_string(gangs_.min[g]) + " after a NoExecute eviction");
    }
  }
  // A pod evicted with its gang has no deadline left.
  size_t kept = 0;
  for (size_t d = 0; d < no_execute_deadlines_.size(); ++d) {
    if (state_.pod(no_execute_pods_[d]).evicted) continue;
    if (kept != d) no_execute_deadlines_[kept] = std::move(no_execute_deadlines_[d]);
    ++kept;
  }
  no_execute_deadlines_.resize(kept);
}

CycleResult Cycle::Collect() {
  CycleResult result;
  result.bindings = state_.TakeBindings();
  result.evictions = state_.TakeEvictions();
  result.no_execute_deadlines = std::move(no_execute_deadlines_);
  result.decision_latency_ns = std::move(decision_latency_ns_);
  for (int i = 0; i < state_.NumPods(); ++i) {
    const PodState& p = state_.pod(i);
    if (p.node >= 0) continue;
    std::string reason;
    if (p.evicted) {
      reason = "requeued after eviction (" + std::string(EvictionReasonName(p.evict_reason)) +
               "): " + p.evict_message;
    } else if (!p.pod->node_name.empty()) {
      reason = "bound to node " + p.pod->node_name + ", which is not in the snapshot";
    } else if (!p.error.empty()) {
      reason = p.error;
    } else {
      reason = p.reason.empty() ? "not considered" : state_.TakeReason(i);
    }
    result.unschedulable.push_back({p.key, reason});
  }
  std::stable_sort(result.unschedulable.begin(), result.unschedulable.end(),
                   [](const PendingPod& a, const PendingPod& b) { return a.pod < b.pod; });
  for (size_t q = 0; q < queues_.size(); ++q) {
    for (int pool = 0; pool < pools_; ++pool) {
      QueueShare share;
      share.queue = queues_[q].name;
      share.node_pool = view_.PoolName(pool);
      bool interesting =
          queues_[q].config != nullptr && queues_[q].config->resources.count(share.node_pool) > 0;
      for (int r = 0; r < kQ; ++r) {
        ResourceShare& s = share.resources[r];
        s.deserved = quota().Deserved(static_cast<int>(q), pool, r);
        s.limit = quota().Limit(static_cast<int>(q), pool, r);
        s.fair_share = quota().FairShare(static_cast<int>(q), pool, r);
        s.allocated = quota().Allocated(static_cast<int>(q), pool, r);
        s.demand = quota().Demand(static_cast<int>(q), pool, r);
        s.over_quota_weight = quota().Weight(static_cast<int>(q), pool, r);
        if (s.fair_share != 0 || s.allocated != 0 || s.demand != 0) interesting = true;
      }
      if (interesting) result.fair_share.push_back(std::move(share));
    }
  }
  for (int pool = 0; pool < pools_; ++pool) {
    NodePoolCapacity capacity;
    capacity.node_pool = view_.PoolName(pool);
    for (int r = 0; r < kQ; ++r) capacity.capacity[r] = view_.PoolCapacity(pool, r);
    result.node_pools.push_back(std::move(capacity));
  }
  return result;
}

CycleResult Cycle::Run() {
  pools_ = view_.NumPools();
  BindPods(state_);
  EvictNoExecute();
  jobs_ = BuildJobs(state_, gangs_);
  state_.ComputeFairShares(QueueDemand(state_));
  scorer_ = MakeScorer(options_, state_, jobs_);
  for (int pool = 0; pool < pools_; ++pool) pool_names_.push_back(view_.PoolName(pool));
  order_ = MakeFairShareOrder({queues_, quota(), jobs_, pool_names_});
  Allocate();
  ReclaimAndPreempt();
  return Collect();
}

}  // namespace

std::string_view PlacementPolicyName(PlacementPolicy policy) {
  switch (policy) {
    case PlacementPolicy::kFgd:
      return "fgd";
    case PlacementPolicy::kGpuPacking:
      return "gpu-packing";
    case PlacementPolicy::kBestFit:
      return "best-fit";
  }
  return "fgd";
}

Result<PlacementPolicy> ParsePlacementPolicy(std::string_view name) {
  for (PlacementPolicy p :
       {PlacementPolicy::kFgd, PlacementPolicy::kGpuPacking, PlacementPolicy::kBestFit}) {
    if (name == PlacementPolicyName(p)) return p;
  }
  return InvalidArgumentError("unknown placement policy \"" + std::string(name) +
                              "\"; expected fgd, gpu-packing or best-fit" +
                              DidYouMean(name, {"fgd", "gpu-packing", "best-fit"}));
}

Status Validate(const SchedulerOptions& options) {
  if (options.percentage_of_nodes_to_score < 0 || options.percentage_of_nodes_to_score > 100) {
    return InvalidArgumentError("percentage_of_nodes_to_score: expected 0..100, got " +
                                std::to_string(options.percentage_of_nodes_to_score));
  }
  if (options.fgd_task_types < 1) {
    return InvalidArgumentError("fgd_task_types: expected at least 1");
  }
  return OkStatus();
}

std::string_view EvictionReasonName(EvictionReason reason) {
  switch (reason) {
    case EvictionReason::kReclaim:
      return "reclaim";
    case EvictionReason::kPreempt:
      return "preempt";
    case EvictionReason::kNoExecute:
      return "NoExecute";
  }
  return "reclaim";
}

std::optional<int64_t> ParseTimestampMillis(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+hh:mm|-hh:mm)
  auto digits = [&text](size_t at, size_t count, int64_t* out) {
    if (at + count > text.size()) return false;
    int64_t value = 0;
    for (size_t i = at; i < at + count; ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      value = value * 10 + (text[i] - '0');
    }
    *out = value;
    return true;
  };
  int64_t year, month, day, hour, minute, second;
  if (!digits(0, 4, &year) || text.size() < 20 || text[4] != '-' || !digits(5, 2, &month) ||
      text[7] != '-' || !digits(8, 2, &day) || (text[10] != 'T' && text[10] != 't') ||
      !digits(11, 2, &hour) || text[13] != ':' || !digits(14, 2, &minute) || text[16] != ':' ||
      !digits(17, 2, &second)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  size_t at = 19;
  int64_t millis = 0;
  if (text[at] == '.') {
    size_t count = 0;
    for (++at; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at, ++count) {
      if (count < 3) millis = millis * 10 + (text[at] - '0');
    }
    if (count == 0) return std::nullopt;
    for (; count < 3; ++count) millis *= 10;
  }
  int64_t offset_minutes = 0;
  if (at < text.size() && (text[at] == 'Z' || text[at] == 'z') && at + 1 == text.size()) {
    offset_minutes = 0;
  } else if (at + 6 == text.size() && (text[at] == '+' || text[at] == '-') && text[at + 3] == ':') {
    int64_t oh, om;
    if (!digits(at + 1, 2, &oh) || !digits(at + 4, 2, &om) || oh > 23 || om > 59) {
      return std::nullopt;
    }
    offset_minutes = (text[at] == '+' ? 1 : -1) * (oh * 60 + om);
  } else {
    return std::nullopt;
  }
  // Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
  const int64_t y = year - (month <= 2 ? 1 : 0);
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = era * 146097 + doe - 719468;
  const int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
  return seconds * 1000 + millis;
}

std::string PodKey(const model::PodScheduling& pod) {
  if (pod.namespace_.empty() || pod.namespace_ == "default") return pod.name;
  return pod.namespace_ + "/" + pod.name;
}

Result<int32_t> PodPriority(const model::PodScheduling& pod) {
  if (pod.priority) return *pod.priority;
  static const std::map<std::string, int32_t> kClasses = {{"", 0},
                                                          {"low", 50},
                                                          {"normal", 100},
                                                          {"high", 125},
                                                          {"system-cluster-critical", 2000000000},
                                                          {"system-node-critical", 2000001000}};
  auto it = kClasses.find(pod.priority_class_name);
  if (it == kClasses.end()) {
    return InvalidArgumentError("priorityClassName \"" + pod.priority_class_name +
                                "\" not found; expected high (125), normal (100), low (50) or "
                                "spec.priority" +
                                DidYouMean(pod.priority_class_name, {"high", "normal", "low"}));
  }
  return it->second;
}

CycleResult Scheduler::RunCycle(const ClusterSnapshot& snapshot) const {
  Cycle cycle(options_, snapshot);
  return cycle.Run();
}

}  // namespace gpupool::scheduler
