#include "scheduler/cycle_setup.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "common/saturating.h"
#include "common/strings.h"
#include "model/match.h"
#include "scheduler/cluster_view.h"
#include "scheduler/cycle_state.h"

namespace gpupool::scheduler {
namespace {

// The node pools of a pod without gpupool.io/node-pool: the default pool (index 0).
constexpr int kDefaultPoolOnly[] = {0};

// Label keys as strings: Labels is a std::map<std::string, ...> without heterogeneous lookup.
const std::string& QueueLabelKey() {
  static const std::string kKey(kQueueLabel);
  return kKey;
}
const std::string& NodePoolLabelKey() {
  static const std::string kKey(kNodePoolLabel);
  return kKey;
}
const std::string& GangLabelKey() {
  static const std::string kKey(kGangLabel);
  return kKey;
}
const std::string& GpuFractionAnnotationKey() {
  static const std::string kKey(kGpuFractionAnnotation);
  return kKey;
}

Result<int32_t> ParseFraction(const std::string& text) {
  // Decimal 0 < f < 1 with up to three digits after the point ("0.5", ".25").
  auto q = model::Quantity::Parse(text);
  if (!q.ok() || q->MilliValue() <= 0 || q->MilliValue() >= 1000) {
    return InvalidArgumentError("annotation " + std::string(kGpuFractionAnnotation) + "=\"" + text +
                                "\": expected a fraction between 0 and 1 (e.g. 0.5)");
  }
  return static_cast<int32_t>(q->MilliValue());
}

// Bounds what a long-lived caller's memo keeps of ever new node-pool values and pod shapes.
constexpr size_t kMaxMemoEntries = 4096;

class SetupBuilder {
 public:
  SetupBuilder(const ClusterSnapshot& snapshot, ClusterView& view, SetupMemo& memo)
      : snapshot_(snapshot), view_(view), memo_(memo) {}

  CycleSetup Build() {
    if (memo_.shape_ids.size() > kMaxMemoEntries || memo_.pool_labels.size() > kMaxMemoEntries) {
      memo_ = SetupMemo();
    }
    MatchKeptPods();
    BuildQueues();
    if (!QueuesAsKept()) {
      // Kept pods and bindings name queues by index.
      kept_.assign(kept_.size(), -1);
      memo_.bindings.Clear();
    }
    BuildPods();
    BuildGangs();
    return std::move(setup_);
  }

 private:
  void MatchKeptPods();
  bool UsesDefaultQueue(int index) const;
  void BuildQueues();
  bool QueuesAsKept() const;
  void BuildPods();
  void BuildPod(int index, PodState& p);
  void TakeOver(PodState& kept, PodState& p, int index);
  void ResolveQueue(PodState& p);
  void ResolvePools(PodState& p);
  void ResolveRequests(PodState& p);
  void RankByAge();
  void BuildGangs();

  const ClusterSnapshot& snapshot_;
  ClusterView& view_;
  SetupMemo& memo_;
  CycleSetup setup_;
  std::vector<int> kept_;        // per pod: the index in memo_.pods of the pod it takes over, or -1
  int kept_default_queue_ = -2;  // the default queue's index in memo_.queues, -2 when none
  std::unordered_map<std::string, int> queue_index_;
  std::unordered_map<std::string, int32_t> fractions_;  // by gpupool.io/gpu-fraction value
};

// Which kept pod each pod of the snapshot is: equal ids, both lists walked in order (ids that
// grow along the lists all match; others may be missed, and are then resolved afresh). Gang
// members are never taken over.
void SetupBuilder::MatchKeptPods() {
  const std::vector<uint64_t>& ids = snapshot_.pod_ids;
  const std::vector<uint64_t>& kept_ids = memo_.pod_ids;
  kept_.assign(snapshot_.pods.size(), -1);
  if (ids.size() != snapshot_.pods.size() || kept_ids.size() != memo_.pods.size() ||
      memo_.pod_gangs.size() != memo_.pods.size() ||
      memo_.binding_nodes.size() != memo_.pods.size()) {
    return;
  }
  size_t k = 0;
  for (size_t i = 0; i < ids.size() && k < kept_ids.size(); ++i) {
    if (ids[i] == 0) continue;
    while (k < kept_ids.size() && kept_ids[k] < ids[i]) ++k;
    if (k < kept_ids.size() && kept_ids[k] == ids[i]) {
      if (memo_.pod_gangs[k] < 0) kept_[i] = static_cast<int>(k);
      ++k;
    }
  }
}

// Whether pod `index` is in the default queue (no gpupool.io/queue, or "default"). A kept pod
// says so by the queue it was resolved to: had it named another queue that does not exist, its
// queue would be -1, and the default queue exists whenever a pod is in it.
bool SetupBuilder::UsesDefaultQueue(int index) const {
  if (kept_[index] >= 0) return memo_.pod_queues[kept_[index]] == kept_default_queue_;
  const model::PodScheduling& pod = snapshot_.pods[index];
  auto it = pod.labels.find(QueueLabelKey());
  return it == pod.labels.end() || it->second == kDefaultQueue;
}

// Kept pods were resolved against the last cycle's queues; the same names and departments
// resolve them the same way.
bool SetupBuilder::QueuesAsKept() const {
  const std::vector<QueueState>& queues = setup_.queues;
  if (queues.size() != memo_.queues.size()) return false;
  for (size_t i = 0; i < queues.size(); ++i) {
    if (queues[i].name != memo_.queues[i].first ||
        queues[i].has_children != memo_.queues[i].second) {
      return false;
    }
  }
  return true;
}

void SetupBuilder::BuildQueues() {
  std::vector<QueueState>& queues = setup_.queues;
  std::vector<const model::Queue*> sorted;
  for (const auto& q : snapshot_.queues) sorted.push_back(&q);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->name < b->name; });
  for (const auto* q : sorted) {
    if (queue_index_.contains(q->name)) continue;  // duplicates: first wins
    queue_index_[q->name] = static_cast<int>(queues.size());
    queues.push_back({q->name, q, -1, q->priority, false});
  }
  kept_default_queue_ = -2;  // no queue (-1 is a pod's unknown queue)
  for (size_t q = 0; q < memo_.queues.size(); ++q) {
    if (memo_.queues[q].first == kDefaultQueue) kept_default_queue_ = static_cast<int>(q);
  }
  bool need_default = false;
  for (size_t i = 0; i < snapshot_.pods.size() && !need_default; ++i) {
    need_default = UsesDefaultQueue(static_cast<int>(i));
  }
  if (need_default && !queue_index_.contains(kDefaultQueue)) {
    queue_index_[kDefaultQueue] = static_cast<int>(queues.size());
    queues.push_back({kDefaultQueue, nullptr, -1, 0, false});
  }
  for (auto& q : queues) {
    if (q.config == nullptr || q.config->parent.empty()) continue;
    auto it = queue_index_.find(q.config->parent);
    if (it != queue_index_.end()) {
      q.parent = it->second;
      queues[it->second].has_children = true;
    }
  }
  // Cycles in the tree (a -> b -> a) are cut at the first repeat.
  for (size_t i = 0; i < queues.size(); ++i) {
    std::set<int> seen = {static_cast<int>(i)};
    for (int q = queues[i].parent; q >= 0; q = queues[q].parent) {
      if (!seen.insert(q).second) {
        queues[i].parent = -1;
        break;
      }
    }
  }
}

void SetupBuilder::ResolveQueue(PodState& p) {
  const model::PodScheduling& pod = *p.pod;
  auto queue_label = pod.labels.find(QueueLabelKey());
  static const std::string kDefaultQueueName(kDefaultQueue);
  const std::string& queue =
      queue_label == pod.labels.end() ? kDefaultQueueName : queue_label->second;
  auto qit = queue_index_.find(queue);
  if (qit == queue_index_.end()) {
    std::vector<std::string> names;
    for (const auto& q : setup_.queues) names.push_back(q.name);
    if (p.error.empty()) p.error = "queue \"" + queue + "\" not found" + DidYouMean(queue, names);
  } else {
    p.queue = qit->second;
    if (setup_.queues[p.queue].has_children && p.error.empty()) {
      p.error = "queue " + queue + " is a department; submit to one of its projects";
    }
  }
}

void SetupBuilder::ResolvePools(PodState& p) {
  const model::PodScheduling& pod = *p.pod;
  auto pool_label = pod.labels.find(NodePoolLabelKey());
  if (pool_label == pod.labels.end() || Trim(pool_label->second).empty()) {
    p.pools = kDefaultPoolOnly;
    return;
  }
  // Parsed once per distinct label value.
  auto [it, inserted] = memo_.pool_labels.try_emplace(pool_label->second);
  SetupMemo::ParsedPools& parsed = it->second;
  if (inserted) {
    memo_.pool_lists.push_back(std::make_unique<std::vector<int>>());
    std::vector<int>& pools = *memo_.pool_lists.back();
    parsed.pools = &pools;
    for (const std::string& part : Split(pool_label->second, ',')) {
      std::string name(Trim(part));
      int pool = view_.FindPool(name);
      if (pool < 0) {
        std::vector<std::string> names;
        for (int i = 0; i < view_.NumPools(); ++i) names.push_back(view_.PoolName(i));
        if (parsed.error.empty()) {
          parsed.error = "node pool \"" + name + "\" not found" + DidYouMean(name, names);
        }
        continue;
      }
      if (std::find(pools.begin(), pools.end(), pool) == pools.end()) pools.push_back(pool);
    }
  }
  p.pools = *parsed.pools;
  if (p.error.empty()) p.error = parsed.error;
}

void SetupBuilder::ResolveRequests(PodState& p) {
  const model::PodScheduling& pod = *p.pod;
  for (const auto& [name, q] : pod.requests) {
    if (name == kGpuResource) {
      p.gpu_whole = static_cast<int>(std::clamp<int64_t>(q.Value(), 0, 1 << 20));
      continue;
    }
    int64_t amount = DimAmount(name, q);
    if (amount <= 0) continue;
    p.req.emplace_back(view_.InternDim(name), amount);
  }
  p.req.emplace_back(kPodsDim, 1);
  std::sort(p.req.begin(), p.req.end());
  auto fraction = pod.annotations.find(GpuFractionAnnotationKey());
  if (fraction != pod.annotations.end()) {
    auto known = fractions_.find(fraction->second);
    Result<int32_t> f = known != fractions_.end() ? Result<int32_t>(known->second)
                                                  : ParseFraction(fraction->second);
    if (f.ok() && known == fractions_.end()) fractions_.emplace(fraction->second, *f);
    if (!f.ok()) {
      if (p.error.empty()) p.error = f.status().message();
    } else if (p.gpu_whole > 1) {
      if (p.error.empty()) {
        p.error = "a pod with " + std::string(kGpuFractionAnnotation) +
                  " may request at most 1 nvidia.com/gpu";
      }
    } else {
      p.gpu_fraction = *f;
      p.gpu_whole = 0;
    }
  }
  for (const auto& [dim, amount] : p.req) {
    if (dim == kCpuDim) p.cpu_req = amount;
    if (dim == kMemoryDim) p.mem_req = amount;
  }
  p.quota[kCpuQ] = p.cpu_req;
  p.quota[kMemQ] = p.mem_req;
  p.quota[kGpuQ] = int64_t{p.gpu_whole} * 1000 + p.gpu_fraction;
}

void SetupBuilder::BuildPod(int index, PodState& p) {
  const model::PodScheduling& pod = snapshot_.pods[index];
  p.pod = &pod;
  p.key = PodKey(pod);
  p.arrival = index;
  Result<int32_t> priority = PodPriority(pod);
  if (!priority.ok()) {
    p.error = priority.status().message();
  } else {
    p.priority = *priority;
  }
  if (!pod.creation_timestamp.empty()) {
    p.created_ms = ParseTimestampMillis(pod.creation_timestamp);
    if (!p.created_ms && p.error.empty()) {
      p.error = "metadata.creationTimestamp: expected an RFC 3339 time, got \"" +
                pod.creation_timestamp + "\"";
    }
  }
  // kube-scheduler's NodeAffinity PreScore fails for a pod whose preferred terms do not parse
  // (a required term that does not parse just matches no node).
  for (size_t i = 0; i < pod.affinity.preferred.size() && p.error.empty(); ++i) {
    const model::PreferredSchedulingTerm& term = pod.affinity.preferred[i];
    if (term.weight != 0 && !term.preference.empty() && !model::TermParses(term.preference)) {
      p.error = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[" +
                std::to_string(i) +
                "].preference: not a valid node selector (a key or value that is not a valid "
                "label, or values its operator does not take)";
    }
  }
  p.preemptible = p.priority < kNonPreemptiblePriority;
  p.binding_node = pod.node_name.empty() ? -1 : view_.FindNode(pod.node_name);
  ResolveQueue(p);
  ResolvePools(p);
  ResolveRequests(p);
  p.signature = view_.Signature(pod);
  std::string shape_key;
  auto append = [&shape_key](int64_t v) {
    shape_key.append(reinterpret_cast<const char*>(&v), sizeof v);
  };
  append(p.gpu_whole);
  append(p.gpu_fraction);
  for (const auto& [dim, amount] : p.req) {
    append(dim);
    append(amount);
  }
  p.shape =
      memo_.shape_ids.try_emplace(std::move(shape_key), static_cast<int>(memo_.shape_ids.size()))
          .first->second;
}

// What a cycle changes of a pod, as a new PodState has it, except that a pod bound before the
// cycle keeps the node and devices binding gave it (an eviction keeps them): the next binding
// takes them over with its node (CycleState::BindAll), or binds the node's pods again.
void ResetPlacement(PodState& p) {
  const bool bound = p.binding_node >= 0 && p.bound_initially;
  p.node = bound ? p.binding_node : -1;
  if (!bound) p.devices.clear();
  p.bound_initially = bound;
  p.evicted = false;
  p.placed_now = false;
  p.placed_pool = -1;
  p.evict_reason = EvictionReason::kReclaim;
  p.evict_message.clear();
  p.last_node = -1;
  p.reason.clear();
}

// The kept pod, as BuildPod would resolve it again (same spec, queues and view), with what a
// cycle changes already reset (KeepPods did, for the pods the cycle changed). Its vectors and
// strings keep their capacity. A pod in its own place, in the same snapshot vector, is not even
// read: most of a replay's pods run through many cycles unchanged.
void SetupBuilder::TakeOver(PodState& kept, PodState& p, int index) {
  ++memo_.taken_over;
  const model::PodScheduling* pod = &snapshot_.pods[index];
  if (&p == &kept && memo_.snapshot_pods == snapshot_.pods.data() && memo_.arrival_is_index) {
    return;
  }
  if (&p != &kept) p = std::move(kept);
  p.pod = pod;
  p.arrival = index;
}

// The pods, in the kept vector itself when no pod comes from a later place than its own there
// (kept pods only move up, as when pods leave and new ones are appended): a pod's place is then
// free once the pods before it are done, and the kept pods are not moved twice.
void SetupBuilder::BuildPods() {
  const int n = static_cast<int>(snapshot_.pods.size());
  bool in_place = true;
  for (int i = 0; i < n && in_place; ++i) in_place = kept_[i] < 0 || kept_[i] >= i;
  std::vector<PodState>& pods = setup_.pods;
  if (in_place) {
    pods = std::move(memo_.pods);
    if (static_cast<int>(pods.size()) < n) pods.resize(n);
  } else {
    pods.resize(n);
  }
  std::vector<PodState>& from = in_place ? pods : memo_.pods;
  setup_.binding_nodes.resize(n);
  setup_.taken_over.resize(n);
  setup_.pod_created.resize(n);
  setup_.pod_queues.resize(n);
  setup_.pod_gangs.assign(n, -1);
  bool any_created = false;
  for (int i = 0; i < n; ++i) {
    const int k = kept_[i];
    setup_.taken_over[i] = k >= 0;
    if (k >= 0) {
      TakeOver(from[k], pods[i], i);
      // What the setup notes of each pod, from the kept notes (not from the pod: see TakeOver).
      setup_.binding_nodes[i] = memo_.binding_nodes[k];
      setup_.pod_queues[i] = memo_.pod_queues[k];
      setup_.pod_created[i] = memo_.pod_created[k];
    } else {
      if (in_place) pods[i] = PodState();
      BuildPod(i, pods[i]);
      setup_.binding_nodes[i] = pods[i].binding_node;
      setup_.pod_queues[i] = pods[i].queue;
      setup_.pod_created[i] = pods[i].created_ms.has_value();
    }
    any_created |= setup_.pod_created[i] != 0;
  }
  pods.resize(n);
  memo_.ForgetPods();
  if (any_created) RankByAge();  // else snapshot order, as BuildPod and TakeOver set it
  setup_.arrival_is_index = !any_created;
}

// Age order (PodState::arrival): by metadata.creationTimestamp, older first; pods without one
// (or an unreadable one) after those with one, as if created now; ties and pods without a time
// in snapshot order. A strict total order, so the decisions stay deterministic.
void SetupBuilder::RankByAge() {
  std::vector<PodState>& pods = setup_.pods;
  std::vector<std::pair<int64_t, int>> order;  // (creation time or max, snapshot index)
  order.reserve(pods.size());
  for (size_t i = 0; i < pods.size(); ++i) {
    const std::optional<int64_t>& created = pods[i].created_ms;
    order.emplace_back(created.value_or(std::numeric_limits<int64_t>::max()), static_cast<int>(i));
  }
  std::sort(order.begin(), order.end());
  for (size_t rank = 0; rank < order.size(); ++rank) {
    pods[order[rank].second].arrival = static_cast<int>(rank);
  }
}

void SetupBuilder::BuildGangs() {
  std::vector<PodState>& pods = setup_.pods;
  Gangs& gangs = setup_.gangs;
  std::map<std::tuple<int, std::string, std::string>, int> index;  // (queue, ns, name) -> gang
  for (size_t i = 0; i < pods.size(); ++i) {
    if (kept_[i] >= 0) continue;  // in no gang (gang members are resolved afresh)
    PodState& p = pods[i];
    auto g = p.pod->labels.find(GangLabelKey());
    if (g == p.pod->labels.end() || g->second.empty() || p.queue < 0) continue;
    auto key = std::make_tuple(p.queue, p.pod->namespace_, g->second);
    auto [it, inserted] = index.try_emplace(key, static_cast<int>(gangs.members.size()));
    if (inserted) {
      gangs.members.emplace_back();
      gangs.min.push_back(0);
    }
    p.gang = it->second;
    setup_.pod_gangs[i] = p.gang;
    gangs.members[p.gang].push_back(static_cast<int>(i));
  }
  for (size_t g = 0; g < gangs.members.size(); ++g) {
    const int members = static_cast<int>(gangs.members[g].size());
    gangs.min[g] = members;
    for (int m : gangs.members[g]) {
      auto it = pods[m].pod->labels.find(kGangMinLabel);
      if (it == pods[m].pod->labels.end()) continue;
      Result<int64_t> value = ParseGangMin(it->second);
      if (value.ok()) {
        gangs.min[g] = static_cast<int>(std::min<int64_t>(*value, members));
      } else {
        for (int pod : gangs.members[g]) {
          if (pods[pod].error.empty()) {
            pods[pod].error =
                "label " + std::string(kGangMinLabel) + ": " + value.status().message();
          }
        }
      }
      break;
    }
  }
}

QuotaVector JobQuota(const CycleState& state, const Job& job) {
  QuotaVector total{};
  for (int pod : job.pods) {
    for (int r = 0; r < kQ; ++r) total[r] = SaturatingAdd(total[r], state.pod(pod).quota[r]);
  }
  return total;
}

}  // namespace

CycleSetup BuildCycleSetup(const ClusterSnapshot& snapshot, ClusterView& view, SetupMemo* memo) {
  std::unique_ptr<SetupMemo> own_memo = memo == nullptr ? std::make_unique<SetupMemo>() : nullptr;
  CycleSetup setup = SetupBuilder(snapshot, view, memo == nullptr ? *own_memo : *memo).Build();
  setup.own_memo = std::move(own_memo);  // the pods view its node-pool lists
  return setup;
}

void KeepPods(const ClusterSnapshot& snapshot, CycleSetup& setup, std::vector<PodState> pods,
              std::span<const int> changed, SetupMemo& memo) {
  if (snapshot.pod_ids.size() != pods.size()) {
    memo.ForgetPods();
    return;
  }
  for (int pod : changed) ResetPlacement(pods[pod]);
  memo.pods = std::move(pods);
  memo.pod_ids = snapshot.pod_ids;
  memo.snapshot_pods = snapshot.pods.data();
  memo.arrival_is_index = setup.arrival_is_index;
  memo.binding_nodes = std::move(setup.binding_nodes);
  memo.pod_queues = std::move(setup.pod_queues);
  memo.pod_gangs = std::move(setup.pod_gangs);
  memo.pod_created = std::move(setup.pod_created);
  memo.queues.clear();
  for (const QueueState& q : setup.queues) memo.queues.emplace_back(q.name, q.has_children);
}

void BindPods(CycleState& state) {
  // Unbound, or bound to a node outside the snapshot (-1): not ours to account.
  std::vector<int> binding_nodes;
  binding_nodes.reserve(state.NumPods());
  for (const PodState& p : state.pods()) binding_nodes.push_back(p.binding_node);
  state.BindAll(binding_nodes, {}, {}, nullptr);
}

void BindPods(CycleState& state, const CycleSetup& setup, const ClusterSnapshot& snapshot,
              SetupMemo& memo) {
  state.BindAll(setup.binding_nodes, setup.taken_over, snapshot.pod_ids, &memo.bindings);
}

int RunningMembers(const CycleState& state, const Gangs& gangs, int gang) {
  int running = 0;
  for (int m : gangs.members[gang]) running += state.pod(m).node >= 0 ? 1 : 0;
  return running;
}

std::vector<Job> BuildJobs(const CycleState& state, const Gangs& gangs) {
  std::vector<Job> jobs;
  std::vector<int> gang_job(gangs.members.size(), -1);
  // Pods bound before the cycle are on their node or evicted.
  for (int i : state.Unbound()) {
    const PodState& p = state.pod(i);
    if (p.node >= 0 || p.evicted || !p.error.empty()) continue;
    if (p.gang < 0) {
      Job job;
      job.pods = {i};
      job.queue = p.queue;
      job.priority = p.priority;
      job.arrival = p.arrival;
      jobs.push_back(job);
      continue;
    }
    if (gang_job[p.gang] < 0) {
      gang_job[p.gang] = static_cast<int>(jobs.size());
      Job job;
      job.queue = p.queue;
      job.gang = p.gang;
      job.gang_name = p.pod->labels.at(kGangLabel);
      job.priority = p.priority;
      job.arrival = p.arrival;
      jobs.push_back(job);
    }
    Job& job = jobs[gang_job[p.gang]];
    job.pods.push_back(i);
    job.priority = std::max(job.priority, p.priority);
    job.arrival = std::min(job.arrival, p.arrival);  // a gang is as old as its oldest pod
  }
  for (Job& job : jobs) {
    if (job.gang < 0) continue;
    job.gang_min = gangs.min[job.gang];
    job.need = std::max(0, job.gang_min - RunningMembers(state, gangs, job.gang));
  }
  std::erase_if(jobs, [&](const Job& job) { return !state.pod(job.pods[0]).error.empty(); });
  for (Job& job : jobs) {
    job.quota = JobQuota(state, job);
    job.pools = state.pod(job.pods[0]).pools;
  }
  return jobs;
}

// A pending pod asks in each of its node pools, as a KAI podgroup asks in its shard: a fallback
// pool is a pool the job competes in, so the queue earns its deserved share there and may
// reclaim it (otherwise its fair share in a fallback pool would be 0 and reclaim could never
// start there). The price: a job that lists several pools weighs on the over-quota split of
// each of them.
std::vector<int64_t> QueueDemand(const CycleState& state) {
  const QuotaTable& quota = state.quota();
  std::vector<int64_t> demand(quota.Size(), 0);
  auto add = [&](const PodState& p, int pool) {
    for (int r = 0; r < kQ; ++r) {
      int64_t& d = demand[quota.At(p.queue, pool, r)];
      d = SaturatingAdd(d, p.quota[r]);
    }
  };
  // Pods on a node: what they hold there, as the table counts it.
  for (int q = 0; q < quota.NumQueues(); ++q) {
    for (int pool = 0; pool < quota.NumPools(); ++pool) {
      for (int r = 0; r < kQ; ++r) demand[quota.At(q, pool, r)] = quota.OwnAllocated(q, pool, r);
    }
  }
  for (int pod : state.PodsOffNodes()) {
    const PodState& p = state.pod(pod);
    if (p.queue < 0 || !p.error.empty()) continue;
    for (int pool : p.pools) add(p, pool);
  }
  return demand;
}

}  // namespace gpupool::scheduler
