#include "scheduler/unschedulable.h"

#include <algorithm>

namespace gpupool::scheduler {
namespace {

constexpr uint32_t kGpuShortBit = 1u << 31;

}  // namespace

size_t UnschedulableReasons::KeyHash::operator()(const Key& k) const {
  uint64_t h = static_cast<uint32_t>(k.signature);
  h = h * 0x9E3779B97F4A7C15ull ^ static_cast<uint32_t>(k.pool);
  h = h * 0x9E3779B97F4A7C15ull ^ static_cast<uint32_t>(k.shape);
  return static_cast<size_t>(h ^ (h >> 29));
}

std::string UnschedulableReasons::Explain(const PodState& p, int pool, const StaticList& list) {
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
  return Format(insufficient, pool, list);
}

const std::string* UnschedulableReasons::Remembered(const PodState& p, int pool, StaticList& list) {
  auto it = failures_.find({p.signature, pool, p.shape});
  if (it == failures_.end()) return nullptr;
  Failure& f = it->second;
  if (f.epoch != state_.PoolEpoch(pool)) {
    if (Refresh(p, pool, list, f)) f.reason = Format(f.insufficient, pool, list);
    f.epoch = state_.PoolEpoch(pool);
  }
  return &f.reason;
}

void UnschedulableReasons::Remember(const PodState& p, int pool, std::string reason) {
  failures_[{p.signature, pool, p.shape}] = {std::move(reason), state_.PoolEpoch(pool)};
}

bool UnschedulableReasons::KnownNotToFit(const PodState& p, const StaticList& list) {
  return std::any_of(list.failed.begin(), list.failed.end(), [&](const FailedShape& f) {
    if (f.gpu_whole > 0 && p.gpu_whole < f.gpu_whole) return false;
    if (f.gpu_fraction > 0 && (p.gpu_fraction < f.gpu_fraction || p.gpu_whole > 0)) return false;
    size_t i = 0;
    for (const auto& [dim, amount] : f.req) {
      while (i < p.req.size() && p.req[i].first < dim) ++i;
      if (i == p.req.size() || p.req[i].first != dim || p.req[i].second < amount) return false;
    }
    return true;
  });
}

void UnschedulableReasons::RememberNotFitting(const PodState& p, StaticList& list) {
  if (list.failed.size() < 32) list.failed.push_back({p.req, p.gpu_whole, p.gpu_fraction});
}

bool UnschedulableReasons::FitsEmptyNode(const PodState& p, int pool, const StaticList& list) {
  auto [it, inserted] = fits_empty_.try_emplace({p.signature, pool, p.shape}, false);
  if (!inserted) return it->second;
  if (num_shape_classes_ < 0) {
    num_shape_classes_ = 0;
    for (int n = 0; n < view_.NumNodes(); ++n) {
      num_shape_classes_ = std::max(num_shape_classes_, view_.node(n).shape_class + 1);
    }
  }
  class_seen_.assign(num_shape_classes_, 0);
  for (const StaticCandidate& c : list.candidates) {
    const NodeView& v = view_.node(c.node);
    if (class_seen_[v.shape_class]) continue;  // equal allocatable: the same verdict
    class_seen_[v.shape_class] = 1;
    const bool resources = std::all_of(p.req.begin(), p.req.end(), [&](const auto& request) {
      return view_.Allocatable(c.node, request.first) >= request.second;
    });
    const bool gpus =
        p.gpu_whole > 0 ? v.gpu_devices >= p.gpu_whole : p.gpu_fraction == 0 || v.gpu_devices > 0;
    if (resources && gpus) {
      it->second = true;
      break;
    }
  }
  return it->second;
}

const std::vector<std::string>& UnschedulableReasons::ResourceReasons() {
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

std::string UnschedulableReasons::Format(const std::vector<int>& insufficient, int pool,
                                         const StaticList& list) {
  // (count, text), the texts not copied: they live in the list and in resource_reasons_.
  const std::vector<std::string>& resource_reasons = ResourceReasons();
  std::vector<std::pair<int, const std::string*>>& entries = reason_entries_;
  entries.clear();
  for (const auto& [text, count] : list.static_reasons) entries.emplace_back(count, &text);
  for (int d = 0; d <= view_.Dims(); ++d) {
    if (insufficient[d] != 0) entries.emplace_back(insufficient[d], &resource_reasons[d]);
  }
  // kube-scheduler (FitError.Error) sorts the "<count> <reason>" strings with sort.Strings, i.e.
  // by their text ("1 Insufficient cpu" before "8 node(s) had untolerated taint"). gpupool orders
  // by count on purpose, most common first and then by text, so the reason that blocks most
  // nodes leads (DESIGN section 4: "8 node(s) had untolerated taint ..., 4 Insufficient ...").
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : *a.second < *b.second;
  });
  std::string out = "0/" + std::to_string(list.pool_nodes) + " nodes are available";
  // Once there are node pools, say which one was tried: a pod limited to its node pools may
  // miss nodes that would fit elsewhere. Without node pools the text is kube-scheduler's.
  if (list.pool_nodes == 0 || view_.NumPools() > 1) out += " in node pool " + view_.PoolName(pool);
  if (list.pool_nodes == 0) return out + ".";
  for (size_t i = 0; i < entries.size(); ++i) {
    out += i == 0 ? ": " : ", ";
    out += std::to_string(entries[i].first);
    out += ' ';
    out += *entries[i].second;
  }
  out += '.';
  return out;
}

uint32_t UnschedulableReasons::Shortfall(const PodState& p, int node) const {
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

bool UnschedulableReasons::Refresh(const PodState& p, int pool, StaticList& list, Failure& f) {
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

}  // namespace gpupool::scheduler
