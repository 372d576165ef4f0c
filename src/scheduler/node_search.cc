#include "scheduler/node_search.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace gpupool::scheduler {
namespace {

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

// The fit check of one pod shape against one pool's PoolFit columns: at least cpu, memory and
// pods free, and gpu_req in the GPU column (devices fully free, or most left on one device).
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

}  // namespace

NodeSearch::NodeSearch(const SchedulerOptions& options, const CycleState& state,
                       PlacementScorer& scorer)
    : percentage_(options.percentage_of_nodes_to_score),
      state_(state),
      view_(state.view()),
      scorer_(scorer) {}

int NodeSearch::NumFeasibleNodesToFind(int pool_nodes, int percentage) {
  if (pool_nodes < 100 || percentage >= 100) return pool_nodes;
  int adaptive = percentage;
  if (adaptive <= 0) adaptive = std::max(5, 50 - pool_nodes / 125);
  return std::max(100, pool_nodes * adaptive / 100);
}

const std::vector<uint64_t>& NodeSearch::ShapeFitBits(const PodState& p, int pool) {
  const size_t key = static_cast<size_t>(p.shape) * view_.NumPools() + pool;
  if (key >= shape_fit_.size()) shape_fit_.resize(key + 1);
  ShapeFit& sf = shape_fit_[key];
  // Same verdict as CycleState::Fits: a whole-GPU pod needs full_free >= gpu_whole, a fraction
  // needs one device with that much left (max_device_free), other pods need nothing (both >= 0).
  const PoolFit& fit = state_.pool_fit(pool);
  FitTest test{fit.cpu.data(), fit.memory.data(), fit.pods.data(),
               fit.gpu[p.gpu_whole > 0 ? 0 : 1].data()};
  test.gpu_req = p.gpu_whole > 0 ? p.gpu_whole : p.gpu_fraction;
  // Requests outside cpu/memory/pods: the general check through the state.
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

NodeSearch::ShapeScore* NodeSearch::ShapeScores(int shape) {
  if (static_cast<size_t>(shape) >= shape_scores_.size()) shape_scores_.resize(shape + 1);
  std::vector<ShapeScore>& scores = shape_scores_[shape];
  if (scores.empty()) scores.resize(view_.NumNodes());
  return scores.data();
}

// One search: the window it walks, the nodes it scored and their normalisation bounds. Raw
// pointers, all by pool position: the visit stores through `scored`, which would make the
// compiler reload each vector's data pointer for every node.
struct NodeSearch::Pass {
  const CycleState& state;
  PlacementScorer& scorer;
  const PodState& p;
  int pool;
  const StaticList& list;
  const std::vector<int>& gang_nodes;
  const bool topology;  // the score depends on the node's topology labels
  ShapeScore* const shape_scores;
  const uint32_t* const versions;
  const StaticCandidate* const candidates;
  const int* const candidate_at;
  const int* const class_at;
  int* const class_slot;
  int* const class_stretch;
  const int* const name_rank;
  const int* const node_at;
  Candidate* const scored;
  int num_scored = 0;
  // The normalisation bounds (scores are finite, so the first score sets both).
  double min_raw = std::numeric_limits<double>::infinity();
  double max_raw = -std::numeric_limits<double>::infinity();
  int32_t max_taint = 0;
  int64_t max_affinity = 0;
  int stretch = 1;

  // The members below are forced inline (hot path): called out of line, they would take the
  // pass's address and keep its counters in memory instead of registers.
  // Returns how many candidates the window covered.
  [[gnu::always_inline]] size_t Walk(const std::vector<uint64_t>& fits, const PoolFit& fit,
                                     int to_find);
  [[gnu::always_inline]] void Visit(int at, bool pristine);
  [[gnu::always_inline]] uint64_t StretchFirsts(uint64_t pristine, int w);
  [[gnu::always_inline]] const ShapeScore& Score(ShapeScore& entry, uint32_t version, int node);
};

int NodeSearch::FindNode(const PodState& p, int pool, StaticList& list,
                         const std::vector<int>& gang_nodes, int* device) {
  const size_t n = list.candidates.size();
  if (n == 0) return -1;
  // At most one entry per candidate: sized once, so the visit writes without a capacity check.
  if (scratch_.size() < n) scratch_.resize(n);
  class_slot_.assign(list.num_classes, kClassUnseen);
  class_stretch_.assign(list.num_classes, 0);
  const int pool_offset = state_.PoolOffset(pool);
  Pass pass{state_,
            scorer_,
            p,
            pool,
            list,
            gang_nodes,
            !gang_nodes.empty() && !view_.PoolTopologyKeys(pool).empty(),
            ShapeScores(p.shape) + pool_offset,
            state_.PoolVersions(pool),
            list.candidates.data(),
            list.candidate_at.data(),
            list.class_at.data(),
            class_slot_.data(),
            class_stretch_.data(),
            state_.pool_fit(pool).name_rank.data(),
            view_.PoolNodes(pool).data(),
            scratch_.data()};
  const size_t processed = pass.Walk(ShapeFitBits(p, pool), state_.pool_fit(pool),
                                     NumFeasibleNodesToFind(list.pool_nodes, percentage_));
  list.next_start = (list.next_start + processed) % n;
  if (pass.num_scored == 0) return -1;
  const Candidate& best = BestCandidate(pass.scored, pass.num_scored, pass.min_raw, pass.max_raw,
                                        pass.max_taint, pass.max_affinity);
  *device = best.device;
  return best.node;
}

// The rotating window over the candidates (in pool position order, from the candidate at
// next_start, wrapping once), a 64-position word at a time: candidate bits AND the pod shape's
// fit bits, up to the feasible node that makes `to_find`.
inline size_t NodeSearch::Pass::Walk(const std::vector<uint64_t>& fits, const PoolFit& fit,
                                     int to_find) {
  const std::vector<uint64_t>& candidate_bits = list.candidate_bits;
  const int start = list.positions[list.next_start % list.candidates.size()];
  const int words = static_cast<int>(candidate_bits.size());
  const int first_word = start / 64;
  const uint64_t from_start = ~uint64_t{0} << (start % 64);
  int feasible = 0;
  size_t processed = 0;
  // Steps: first word from `start`, the following words, wrap, the words before, and the first
  // word's bits before `start`.
  for (int step = 0; step <= words && feasible < to_find; ++step) {
    const int w = (first_word + step) % words;
    uint64_t range = ~uint64_t{0};
    if (step == 0) range = from_start;
    if (step == words) range = ~from_start;
    uint64_t in_window = candidate_bits[w] & range;
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
    const uint64_t pristine = topology ? 0 : found & fit.empty[w];
    // Names ascend with positions, so within one stretch of the window (up to the wrap, then
    // from position 0) a class's first empty node has its smallest name: the others cannot win
    // and are skipped a word at a time. After the wrap every name is smaller than those before
    // it, so the classes are looked at afresh.
    if (step > 0 && w == 0) ++stretch;
    if (pristine != 0 && fit.ranks_ascending) {
      found = (found & ~pristine) | StretchFirsts(pristine, w);
    }
    for (; found != 0; found &= found - 1) {
      const int bit = std::countr_zero(found);
      Visit(w * 64 + bit, (pristine >> bit) & 1);
    }
  }
  return processed;
}

// An empty node whose class already has a representative only competes for the class's first
// name (two ints read, not the candidate); any other node is scored.
inline void NodeSearch::Pass::Visit(int at, bool pristine) {
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
  const ShapeScore& cached = Score(shape_scores[at], versions[at], c.node);
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
                          topology ? TopologyScore(state.view(), pool, c.node, gang_nodes) : 0,
                          cached.device};
}

// Of the empty nodes `pristine` in word w, the first of each class not yet seen in this stretch
// of the window.
inline uint64_t NodeSearch::Pass::StretchFirsts(uint64_t pristine, int w) {
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
}

// The policy's score and the device it scores are a function of the node's state and the pod's
// shape only, so they are kept per node and shape until the node changes.
inline const NodeSearch::ShapeScore& NodeSearch::Pass::Score(ShapeScore& entry, uint32_t version,
                                                             int node) {
  if (entry.version != version) {
    int device = -1;
    if (p.gpu_fraction > 0) state.GpuFits(p, node, &device);
    entry.score = scorer.Score(p, node, device);
    entry.device = device;
    entry.version = version;
  }
  return entry;
}

int NodeSearch::TopologyScore(const ClusterView& view, int pool, int node,
                              const std::vector<int>& gang_nodes) {
  const std::vector<std::string>& keys = view.PoolTopologyKeys(pool);
  if (keys.empty() || gang_nodes.empty()) return 0;
  const std::vector<int>& anchor = view.node(gang_nodes[0]).topology;
  const std::vector<int>& mine = view.node(node).topology;
  int matched = 0;
  for (size_t k = 0; k < keys.size() && k < anchor.size() && k < mine.size(); ++k) {
    if (anchor[k] >= 0 && anchor[k] == mine[k]) ++matched;
  }
  return matched * 100 / static_cast<int>(keys.size());
}

// kube-scheduler's weighted sum of the scores normalised to 0..100 over the scored nodes
// (resource twice); ties go to the node first by name.
const NodeSearch::Candidate& NodeSearch::BestCandidate(const Candidate* scored, int num_scored,
                                                       double min_raw, double max_raw,
                                                       int32_t max_taint, int64_t max_affinity) {
  const bool spread = max_raw > min_raw;
  const double span = max_raw - min_raw;
  int best = 0;
  int64_t best_score = std::numeric_limits<int64_t>::min();
  int best_rank = 0;
  for (int i = 0; i < num_scored; ++i) {
    const Candidate& c = scored[i];
    // Rounded half up by truncating x + 0.5, as x is never negative; std::lround differs only at
    // 0.49999999999999994, and keeping this form keeps every placement as it was.
    const double resource_exact = spread ? (c.resource_raw - min_raw) * 100 / span : 100;
    const auto resource =
        static_cast<int64_t>(resource_exact + 0.5);  // NOLINT(bugprone-incorrect-roundings)
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

}  // namespace gpupool::scheduler
