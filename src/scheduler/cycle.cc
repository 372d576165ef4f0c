#include "scheduler/cycle.h"

#include <algorithm>
#include <chrono>

#include "scheduler/no_execute.h"
#include "scheduler/quota_table.h"
#include "scheduler/reclaim.h"

namespace gpupool::scheduler {

Cycle::Cycle(const SchedulerOptions& options, const ClusterSnapshot& snapshot, ClusterView* view,
             SetupMemo* memo)
    : options_(options),
      snapshot_(snapshot),
      own_view_(view == nullptr ? std::make_unique<ClusterView>(snapshot.nodes, snapshot.node_pools)
                                : nullptr),
      view_(view == nullptr ? *own_view_ : *view),
      memo_(memo),
      setup_(BuildCycleSetup(snapshot, view_, memo)),
      state_(view_, setup_.queues, QuotaTable::Resolve(setup_.queues, view_),
             std::move(setup_.pods)),
      reasons_(state_) {
  for (int pool = 0; pool < view_.NumPools(); ++pool) pool_names_.push_back(view_.PoolName(pool));
}

CycleResult Cycle::Run() {
  if (memo_ != nullptr) {
    BindPods(state_, setup_, snapshot_, *memo_);
  } else {
    BindPods(state_);
  }
  no_execute_deadlines_ = EvictNoExecute(state_, setup_.gangs, snapshot_);
  jobs_ = BuildJobs(state_, setup_.gangs);
  state_.ComputeFairShares(QueueDemand(state_));
  scorer_ = MakeScorer(options_, state_, jobs_);
  search_ = std::make_unique<NodeSearch>(options_, state_, *scorer_);
  order_ =
      MakeFairShareOrder({setup_.queues, state_.quota(), jobs_, pool_names_, snapshot_.over_quota});
  Allocate();
  const model::DisruptionBudgets budgets(snapshot_.disruption_budgets, snapshot_.pods);
  Reclaimer reclaimer(options_, state_, view_, setup_.gangs, *search_, *order_, budgets);
  reclaimer.Run(jobs_, failed_jobs_);
  blocked_evictions_ = reclaimer.TakeBlocked();
  CycleResult result = Collect();
  if (memo_ != nullptr) {
    const std::vector<int> changed = state_.PodsMaybeChanged();
    KeepPods(snapshot_, setup_, state_.TakePods(), changed, *memo_);
    memo_->bindings.node_pods = state_.TakeNodePods();
  }
  return result;
}

void Cycle::Allocate() {
  std::string reason;
  for (int j = order_->Next(); j >= 0; j = order_->Next()) {
    const auto start = options_.record_decision_latency ? std::chrono::steady_clock::now()
                                                        : std::chrono::steady_clock::time_point{};
    const bool placed = TryJob(jobs_[j], reason);
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

bool Cycle::TryJob(const Job& job, std::string& reason) {
  reason.clear();
  for (size_t i = 0; i < job.pools.size(); ++i) {
    // pool_reason_ keeps its capacity across decisions: copying a remembered reason into it
    // does not allocate.
    if (PlaceJobInPool(job, job.pools[i], pool_reason_)) return true;
    if (i > 0) reason += "; ";
    // Each node pool tried is named once: most reasons name it already.
    if (job.pools.size() > 1 &&
        pool_reason_.find("node pool " + pool_names_[job.pools[i]]) == std::string::npos) {
      reason += "node pool ";
      reason += pool_names_[job.pools[i]];
      reason += ": ";
    }
    reason += pool_reason_;
  }
  return false;
}

bool Cycle::PlaceJobInPool(const Job& job, int pool, std::string& reason) {
  std::string quota = order_->CheckQuota(job, pool);
  if (!quota.empty()) {
    reason = quota;
    return false;
  }
  const bool single = job.gang < 0;
  // A job of one pending pod (a single pod, or a gang's last pending member) holds no capacity
  // of its own while it searches, so its failures are remembered as a single pod's are.
  const bool lone = job.pods.size() == 1;
  const size_t checkpoint = state_.Checkpoint();
  std::vector<int> gang_nodes;
  int placed = 0;
  std::string first_failure;
  for (int pod : job.pods) {
    const PodState& p = state_.pod(pod);
    std::string why;
    const std::string* known = nullptr;
    if (lone) {
      StaticList& list = view_.Static(p.signature, pool, *p.pod);
      known = reasons_.Remembered(p, pool, list);
      if (known != nullptr && single) {
        reason = *known;
        return false;
      }
      if (known != nullptr) why = *known;
    }
    int device = -1;
    const int node = known != nullptr ? -1 : FindNodeOrWhy(job, p, pool, gang_nodes, &device, why);
    if (node < 0) {
      if (lone && known == nullptr) reasons_.Remember(p, pool, why);
      if (first_failure.empty()) first_failure = p.key + ": " + why;
      state_.SetReason(pod, why);
      // A gang that needs every remaining pod cannot succeed any more.
      if (single || job.need >= static_cast<int>(job.pods.size())) break;
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
  reason = single ? state_.pod(job.pods[0]).reason : GangShortReason(job, placed, first_failure);
  return false;
}

int Cycle::FindNodeOrWhy(const Job& job, const PodState& p, int pool,
                         const std::vector<int>& gang_nodes, int* device, std::string& why) {
  if (std::find(p.pools.begin(), p.pools.end(), pool) == p.pools.end()) {
    why = "node pool " + pool_names_[pool] + " is not in the pod's node pools";
    return -1;
  }
  StaticList& list = view_.Static(p.signature, pool, *p.pod);
  if (UnschedulableReasons::KnownNotToFit(p, list)) {
    why = reasons_.Explain(p, pool, list);
    return -1;
  }
  const int node = search_->FindNode(p, pool, list, gang_nodes, device);
  if (node >= 0) return node;
  why = reasons_.Explain(p, pool, list);
  // Only lone pods are remembered: a gang's later pods fail while its earlier pods hold
  // capacity that a rollback gives back.
  if (job.pods.size() == 1) UnschedulableReasons::RememberNotFitting(p, list);
  return -1;
}

std::string Cycle::GangShortReason(const Job& job, int placed, const std::string& first_failure) {
  return "gang " + job.gang_name + ": " + std::to_string(placed) + " of " +
         std::to_string(job.pods.size()) + " pending pods fit, gang-min " +
         std::to_string(job.gang_min) + " needs " + std::to_string(job.need) + "; " + first_failure;
}

CycleResult Cycle::Collect() {
  CycleResult result;
  result.bindings = state_.TakeBindings();
  result.evictions = state_.TakeEvictions();
  result.blocked_evictions = std::move(blocked_evictions_);
  result.no_execute_deadlines = std::move(no_execute_deadlines_);
  result.decision_latency_ns = std::move(decision_latency_ns_);
  CollectPending(result);
  CollectFairShares(result);
  return result;
}

std::vector<char> Cycle::InfeasiblePods() {
  std::vector<char> infeasible(state_.NumPods(), 0);
  std::vector<char> fits;  // per pod of the job: in some node pool that admits the job
  for (const Job& job : jobs_) {
    const bool pending = std::any_of(job.pods.begin(), job.pods.end(),
                                     [&](int pod) { return state_.pod(pod).node < 0; });
    if (!pending) continue;
    fits.assign(job.pods.size(), 0);
    const int need =
        job.gang < 0 ? 1
                     : std::max(1, job.gang_min - RunningMembers(state_, setup_.gangs, job.gang));
    bool enough = false;
    for (int pool : job.pools) {
      if (!order_->QuotaCouldAdmit(job, pool)) continue;
      int fitting = 0;
      for (size_t i = 0; i < job.pods.size(); ++i) {
        const PodState& p = state_.pod(job.pods[i]);
        if (p.node >= 0 || std::find(p.pools.begin(), p.pools.end(), pool) == p.pools.end() ||
            !reasons_.FitsEmptyNode(p, pool, view_.Static(p.signature, pool, *p.pod))) {
          continue;
        }
        fits[i] = 1;
        ++fitting;
      }
      enough |= fitting >= need;
    }
    for (size_t i = 0; i < job.pods.size(); ++i) {
      if (state_.pod(job.pods[i]).node < 0) infeasible[job.pods[i]] = !enough || !fits[i];
    }
  }
  return infeasible;
}

void Cycle::CollectPending(CycleResult& result) {
  const std::vector<char> infeasible = InfeasiblePods();
  for (int i : state_.PodsOffNodes()) {
    const PodState& p = state_.pod(i);
    std::string reason;
    PlacementOutcome outcome = PlacementOutcome::kUnschedulable;
    if (p.evicted) {
      reason = "requeued after eviction (" + std::string(EvictionReasonName(p.evict_reason)) +
               "): " + p.evict_message;
    } else if (!p.pod->node_name.empty()) {
      reason = "bound to node " + p.pod->node_name + ", which is not in the snapshot";
    } else if (!p.error.empty()) {
      reason = p.error;
      outcome = PlacementOutcome::kInfeasible;
    } else {
      reason = p.reason.empty() ? "not considered" : state_.TakeReason(i);
      if (infeasible[i]) outcome = PlacementOutcome::kInfeasible;
    }
    result.unschedulable.push_back({p.key, std::move(reason), outcome});
  }
  std::stable_sort(result.unschedulable.begin(), result.unschedulable.end(),
                   [](const PendingPod& a, const PendingPod& b) { return a.pod < b.pod; });
}

void Cycle::CollectFairShares(CycleResult& result) const {
  const QuotaTable& quota = state_.quota();
  const std::vector<QueueState>& queues = setup_.queues;
  for (int q = 0; q < static_cast<int>(queues.size()); ++q) {
    for (int pool = 0; pool < view_.NumPools(); ++pool) {
      QueueShare share;
      share.queue = queues[q].name;
      share.node_pool = pool_names_[pool];
      bool interesting =
          queues[q].config != nullptr && queues[q].config->resources.contains(share.node_pool);
      for (int r = 0; r < kQ; ++r) {
        ResourceShare& s = share.resources[r];
        s.deserved = quota.Deserved(q, pool, r);
        s.limit = quota.Limit(q, pool, r);
        s.fair_share = quota.FairShare(q, pool, r);
        s.allocated = quota.Allocated(q, pool, r);
        s.demand = quota.Demand(q, pool, r);
        s.over_quota_weight = quota.Weight(q, pool, r);
        if (s.fair_share != 0 || s.allocated != 0 || s.demand != 0) interesting = true;
      }
      if (interesting) result.fair_share.push_back(std::move(share));
    }
  }
  for (int pool = 0; pool < view_.NumPools(); ++pool) {
    NodePoolCapacity capacity;
    capacity.node_pool = pool_names_[pool];
    for (int r = 0; r < kQ; ++r) capacity.capacity[r] = view_.PoolCapacity(pool, r);
    result.node_pools.push_back(std::move(capacity));
  }
}

}  // namespace gpupool::scheduler
