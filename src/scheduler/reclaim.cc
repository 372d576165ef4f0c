#include "scheduler/reclaim.h"

#include <algorithm>
#include <limits>
#include <set>

#include "common/saturating.h"
#include "common/strings.h"
#include "scheduler/cycle_setup.h"

namespace gpupool::scheduler {

// A node as it would be without some of its pods: the free amount of each of the pod's
// requests and the free milli-GPUs of each device.
class Reclaimer::NodeAfterEvictions {
 public:
  NodeAfterEvictions(const Reclaimer& reclaimer, const PodState& pod, int node)
      : reclaimer_(reclaimer),
        state_(reclaimer.state_),
        pod_(pod),
        node_(node),
        extra_(pod.req.size(), 0),
        devices_(state_.view().Devices(node),
                 state_.view().Devices(node) + state_.view().node(node).gpu_devices) {}

  bool Fits() const {
    for (size_t i = 0; i < pod_.req.size(); ++i) {
      if (state_.view().Free(node_, pod_.req[i].first) + extra_[i] < pod_.req[i].second) {
        return false;
      }
    }
    if (pod_.gpu_whole > 0) {
      return std::count(devices_.begin(), devices_.end(), 1000) >= pod_.gpu_whole;
    }
    if (pod_.gpu_fraction > 0) {
      return std::any_of(devices_.begin(), devices_.end(),
                         [&](int32_t f) { return f >= pod_.gpu_fraction; });
    }
    return true;
  }

  // Without (sign +1) or with again (sign -1) `victim` and its gang peers on this node.
  void Change(int victim, int sign) {
    for (int m : reclaimer_.WithGangPeers(victim)) {
      const PodState& mp = state_.pod(m);
      if (mp.node != node_) continue;
      for (size_t i = 0; i < pod_.req.size(); ++i) {
        for (const auto& [dim, amount] : mp.req) {
          if (dim == pod_.req[i].first) extra_[i] += sign * amount;
        }
      }
      for (int d : mp.devices) devices_[d] += sign * (mp.gpu_whole > 0 ? 1000 : mp.gpu_fraction);
    }
  }

 private:
  const Reclaimer& reclaimer_;
  const CycleState& state_;
  const PodState& pod_;
  const int node_;
  std::vector<int64_t> extra_;  // per request of the pod
  std::vector<int32_t> devices_;
};

Reclaimer::Reclaimer(const SchedulerOptions& options, CycleState& state, ClusterView& view,
                     const Gangs& gangs, NodeSearch& search, const QueueOrder& order,
                     const model::DisruptionBudgets& budgets)
    : options_(options),
      state_(state),
      view_(view),
      queues_(state.queues()),
      gangs_(gangs),
      search_(search),
      order_(order),
      budgets_(budgets) {}

void Reclaimer::Run(std::span<const Job> jobs, const std::vector<int>& failed) {
  if (!options_.enable_reclaim && !options_.enable_preempt) return;
  // Running preemptible pods per pool: without any, there is nothing to evict.
  std::vector<int> victims_in_pool(view_.NumPools(), 0);
  for (int pool = 0; pool < view_.NumPools(); ++pool) {
    victims_in_pool[pool] = state_.BoundPreemptible(pool);
  }
  for (int j : failed) {
    const Job& job = jobs[j];
    job_notes_.clear();
    bool placed = false;
    for (int pool : job.pools) {
      if (victims_in_pool[pool] == 0) continue;
      const PodState& first = state_.pod(job.pods[0]);
      const auto key = std::make_tuple(first.signature, pool, first.shape, job.queue, job.priority);
      if (job.gang < 0) {
        auto it = victim_failure_epoch_.find(key);
        if (it != victim_failure_epoch_.end() && it->second.epoch == state_.CommittedOps()) {
          job_notes_.insert(job_notes_.end(), it->second.notes.begin(), it->second.notes.end());
          continue;
        }
      }
      const size_t evictions_before = state_.evictions().size();
      const size_t notes_before = job_notes_.size();
      if ((options_.enable_reclaim && TryWithVictims(job, pool, true)) ||
          (options_.enable_preempt && TryWithVictims(job, pool, false))) {
        for (size_t e = evictions_before; e < state_.evictions().size(); ++e) {
          const int node = view_.FindNode(state_.evictions()[e].node);
          if (node >= 0) --victims_in_pool[view_.node(node).pool];
        }
        placed = true;
        break;
      }
      if (job.gang < 0) {
        victim_failure_epoch_[key] = {
            state_.CommittedOps(),
            std::vector<std::string>(job_notes_.begin() + notes_before, job_notes_.end())};
      }
    }
    if (placed || job_notes_.empty()) continue;
    std::sort(job_notes_.begin(), job_notes_.end());
    job_notes_.erase(std::unique(job_notes_.begin(), job_notes_.end()), job_notes_.end());
    for (int pod : job.pods) {
      if (state_.pod(pod).node >= 0) continue;
      state_.SetReason(
          pod, state_.pod(pod).reason + "; PodDisruptionBudget kept: " + Join(job_notes_, "; "));
    }
  }
}

bool Reclaimer::TryWithVictims(const Job& job, int pool, bool reclaim) {
  if (reclaim && (!order_.CheckQuota(job, pool).empty() || !ReclaimerEligible(job, pool))) {
    return false;
  }
  // Gang-min counts the members running now, not when the job was built (job.need): an earlier
  // reclaim or preemption in this cycle may have evicted some, and they do not come back in it.
  const int need =
      job.gang < 0 ? 1 : std::max(1, job.gang_min - RunningMembers(state_, gangs_, job.gang));
  const size_t checkpoint = state_.Checkpoint();
  std::vector<int> gang_nodes;
  int placed = 0;
  for (int pod : job.pods) {
    const PodState& p = state_.pod(pod);
    if (std::find(p.pools.begin(), p.pools.end(), pool) == p.pools.end()) break;
    int device = -1;
    int node =
        search_.FindNode(p, pool, view_.Static(p.signature, pool, *p.pod), gang_nodes, &device);
    if (node < 0) {
      std::vector<int> victims;
      node = CheapestVictims(pod, pool, reclaim, victims);
      if (node < 0) break;
      for (int v : victims) EvictWithGang(v, p, reclaim);
      if (!state_.Fits(p, node, &device)) break;
    }
    state_.Place(pod, node, device, pool);
    gang_nodes.push_back(node);
    ++placed;
  }
  if (placed < need || (!reclaim && !WithinQuotaAfterPreemption(job, pool))) {
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

int Reclaimer::CheapestVictims(int pod, int pool, bool reclaim, std::vector<int>& victims) {
  const PodState& p = state_.pod(pod);
  const StaticList& list = view_.Static(p.signature, pool, *p.pod);
  int best_node = -1;
  std::pair<size_t, int64_t> best_cost{std::numeric_limits<size_t>::max(), 0};
  for (const StaticCandidate& c : list.candidates) {
    std::vector<int> chosen;
    if (!SelectVictims(pod, c.node, pool, reclaim, chosen)) continue;
    size_t count = 0;
    int64_t priority_sum = 0;
    for (int v : chosen) {
      count += WithGangPeers(v).size();
      priority_sum += state_.pod(v).priority;
    }
    const std::pair<size_t, int64_t> cost{count, priority_sum};
    if (cost < best_cost) {
      best_cost = cost;
      best_node = c.node;
      victims = std::move(chosen);
    }
  }
  return best_node;
}

// Preemption frees quota of the same queue, so the limits are checked once the job is placed.
// CheckQuota adds the job's request again on top of what the queue now holds (the job's pods
// included), which is stricter than the limit: a preemption inside a queue at its limit does
// not pass.
bool Reclaimer::WithinQuotaAfterPreemption(const Job& job, int pool) const {
  if (!order_.CheckQuota(job, pool).empty()) return false;
  for (int q = job.queue; q >= 0; q = queues_[q].parent) {
    for (int r = 0; r < kQ; ++r) {
      const int64_t limit = quota().Limit(q, pool, r);
      if (limit != model::kUnlimited && quota().Allocated(q, pool, r) > limit) return false;
    }
  }
  if (job.priority < kNonPreemptiblePriority) return true;
  for (int r = 0; r < kQ; ++r) {
    const int64_t deserved = quota().Deserved(job.queue, pool, r);
    if (deserved != model::kUnlimited && quota().Applies(job.queue, pool, r) &&
        quota().AllocatedNonPreemptible(job.queue, pool, r) > deserved) {
      return false;
    }
  }
  return true;
}

std::vector<int> Reclaimer::VictimCandidates(const PodState& p, int node, bool reclaim) const {
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
  std::sort(candidates.begin(), candidates.end(), [&](int a, int b) {
    const PodState &x = state_.pod(a), &y = state_.pod(b);
    if (x.priority != y.priority) return x.priority < y.priority;
    if (x.quota[kGpuQ] != y.quota[kGpuQ]) return x.quota[kGpuQ] > y.quota[kGpuQ];
    if (x.arrival != y.arrival) return x.arrival > y.arrival;
    return x.key < y.key;
  });
  return candidates;
}

void Reclaimer::Take(TakenQuota& taken, int victim, int sign) const {
  for (int m : WithGangPeers(victim)) {
    const PodState& mp = state_.pod(m);
    const int in_pool = view_.node(mp.node).pool;
    for (int q = mp.queue; q >= 0; q = queues_[q].parent) {
      for (int r = 0; r < kQ; ++r) {
        int64_t& t = taken[{q, in_pool}][r];
        t = SaturatingAdd(t, sign * mp.quota[r]);
      }
    }
  }
}

bool Reclaimer::SelectVictims(int pod, int node, int pool, bool reclaim,
                              std::vector<int>& victims) {
  const PodState& p = state_.pod(pod);
  const std::vector<int> candidates = VictimCandidates(p, node, reclaim);
  if (candidates.empty()) return false;
  NodeAfterEvictions after(*this, p, node);
  TakenQuota taken;
  std::vector<int> chosen;
  for (int v : candidates) {
    if (after.Fits()) break;
    // A gang peer of a chosen victim already goes with it (and is already counted).
    const bool gone = std::any_of(chosen.begin(), chosen.end(), [&](int c) {
      return c == v || (state_.pod(v).gang >= 0 && state_.pod(c).gang == state_.pod(v).gang);
    });
    if (gone) continue;
    if (reclaim && !VictimAllowed(p, v, pool, taken)) continue;
    if (std::optional<std::string> why = BudgetBlocks(chosen, v)) {
      NoteBlocked(v, p, *why);
      continue;
    }
    after.Change(v, +1);
    Take(taken, v, +1);
    chosen.push_back(v);
  }
  if (!after.Fits()) return false;
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
    after.Change(chosen[i], -1);
    Take(taken, chosen[i], -1);
    if (after.Fits() && (!reclaim || reclaimer_side_holds(chosen[i]))) {
      chosen.erase(chosen.begin() + i);
    } else {
      after.Change(chosen[i], +1);
      Take(taken, chosen[i], +1);
    }
  }
  victims = std::move(chosen);
  return true;
}

// A peer placed earlier in this cycle never ran: it is withdrawn rather than evicted, and stays
// pending with the reason.
void Reclaimer::EvictWithGang(int victim, const PodState& evictor, bool reclaim) {
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

std::vector<int> Reclaimer::LevelsBelowSharedAncestor(int q, int other) const {
  std::set<int> shared;
  for (int a = other; a >= 0; a = queues_[a].parent) shared.insert(a);
  std::vector<int> levels;
  for (; q >= 0 && !shared.contains(q); q = queues_[q].parent) levels.push_back(q);
  return levels;
}

// Every member the cycle holds on a node: bound before the cycle, or placed earlier in it (by
// the allocate phase or an earlier reclaim or preemption, while some of its peers were already
// running). A gang is all or nothing, so evicting it must take the members placed in this cycle
// too, or they would run below gang-min. KAI does the same: a victim job gives up all its
// active allocated tasks, Allocated and Pipelined ones of the same session included
// (GetTasksToEvict). Sparing such a gang instead would only bind a pod in this cycle to evict
// its whole gang in the next.
std::vector<int> Reclaimer::WithGangPeers(int pod) const {
  const PodState& p = state_.pod(pod);
  if (p.gang < 0) return {pod};
  std::vector<int> out;
  for (int m : gangs_.members[p.gang]) {
    if (state_.pod(m).node >= 0) out.push_back(m);
  }
  return out;
}

std::optional<std::string> Reclaimer::BudgetBlocks(const std::vector<int>& chosen,
                                                   int victim) const {
  if (budgets_.empty()) return std::nullopt;
  std::vector<int> evicting = WithGangPeers(victim);
  for (int c : chosen) {
    for (int m : WithGangPeers(c)) evicting.push_back(m);
  }
  // Evictions already decided (committed, or earlier in this decision) are gone; a rollback
  // brings them back with their `evicted` flag.
  return budgets_.Blocks(evicting, [this](int pod) { return state_.pod(pod).evicted; });
}

void Reclaimer::NoteBlocked(int victim, const PodState& for_pod, const std::string& why) {
  const PodState& v = state_.pod(victim);
  const std::string node = v.node >= 0 ? view_.node(v.node).node->name : "";
  job_notes_.push_back("pod " + v.key + " on node " + node + " (" + why + ")");
  const bool seen = std::any_of(blocked_.begin(), blocked_.end(), [&](const BlockedEviction& b) {
    return b.pod == v.key && b.for_pod == for_pod.key;
  });
  if (!seen) blocked_.push_back({v.key, node, for_pod.key, why});
}

bool Reclaimer::ReclaimerEligible(const Job& job, int pool) const {
  const bool gpu = job.quota[kGpuQ] > 0;
  for (int r = 0; r < kQ; ++r) {
    if (gpu != (r == kGpuQ)) continue;
    if (SaturatingAdd(quota().Allocated(job.queue, pool, r), job.quota[r]) >
        quota().FairShare(job.queue, pool, r)) {
      return false;
    }
  }
  return true;
}

bool Reclaimer::GangEvictable(const PodState& evictor, int victim, bool reclaim) const {
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
bool Reclaimer::VictimAllowed(const PodState& reclaimer, int victim, int pool,
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
    for (int r = 0; r < kQ; ++r) sum[r] = SaturatingAdd(sum[r], state_.pod(m).quota[r]);
  }
  auto allocated = [&](int x, int in_pool, int r) {
    auto it = taken.find({x, in_pool});
    return quota().Allocated(x, in_pool, r) - (it == taken.end() ? 0 : it->second[r]);
  };
  for (int x : LevelsBelowSharedAncestor(v.queue, reclaimer.queue)) {
    for (int r = 0; r < kQ; ++r) {
      if (gpu != (r == kGpuQ) || freed[pool][r] == 0) continue;
      if (allocated(x, pool, r) <= quota().FairShare(x, pool, r)) return false;  // not above
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
bool Reclaimer::ReclaimerSideWithinFairShare(const PodState& reclaimer, int victim_queue, int pool,
                                             const TakenQuota& taken) const {
  const bool gpu = reclaimer.quota[kGpuQ] > 0;
  for (int x : LevelsBelowSharedAncestor(reclaimer.queue, victim_queue)) {
    if (x == reclaimer.queue) continue;
    auto it = taken.find({x, pool});
    for (int r = 0; r < kQ; ++r) {
      if (gpu != (r == kGpuQ)) continue;
      const int64_t freed = it == taken.end() ? 0 : it->second[r];
      if (SaturatingAdd(SaturatingSub(quota().Allocated(x, pool, r), freed), reclaimer.quota[r]) >
          quota().FairShare(x, pool, r)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace gpupool::scheduler
