#include "scheduler/invariant_checks.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "model/match.h"
#include "scheduler/test_util.h"

namespace gpupool::scheduler::invariants {

int64_t Dim(const model::ResourceList& list, const std::string& name) {
  auto it = list.find(name);
  if (it == list.end()) return 0;
  return name == "cpu" ? it->second.MilliValue() : it->second.Value();
}

int64_t GpuMilli(const model::PodScheduling& p) {
  auto f = p.annotations.find(kGpuFractionAnnotation);
  if (f != p.annotations.end()) return model::Quantity::Parse(f->second)->MilliValue();
  return Dim(p.requests, "nvidia.com/gpu") * 1000;
}

std::string PoolOf(const model::Node& node) {
  auto it = node.labels.find("node-pool");
  return it == node.labels.end() ? "default" : it->second;
}

// Final placement: pod key -> node name, for bound (not evicted) and newly placed pods.
std::map<std::string, std::string> FinalPlacement(const ClusterSnapshot& s, const CycleResult& r) {
  std::map<std::string, std::string> where;
  std::set<std::string> evicted;
  for (const Eviction& e : r.evictions) evicted.insert(e.pod);
  for (const auto& p : s.pods) {
    if (!p.node_name.empty() && !evicted.contains(PodKey(p))) where[PodKey(p)] = p.node_name;
  }
  for (const Binding& b : r.bindings) where[b.pod] = b.node;
  return where;
}

using QueuePool = std::pair<std::string, std::string>;  // (queue, node pool)

QuotaAmounts PodQuota(const model::PodScheduling& pod) {
  return {GpuMilli(pod), Dim(pod.requests, "cpu"), Dim(pod.requests, "memory")};
}

// A quota setting in the units of PodQuota (memory: milli-bytes rounded up to bytes).
int64_t QuotaUnits(int r, int64_t milli) {
  if (milli == model::kUnlimited || r != 2) return milli;
  return (milli + 999) / 1000;
}

// The queue and its ancestors, leaf first.
std::vector<const model::Queue*> QueuePath(const std::map<std::string, const model::Queue*>& queues,
                                           const model::PodScheduling& pod) {
  std::vector<const model::Queue*> path;
  auto q = pod.labels.find(kQueueLabel);
  if (q == pod.labels.end() || !queues.contains(q->second)) return path;
  for (const model::Queue* x = queues.at(q->second); x != nullptr;
       x = x->parent.empty() ? nullptr : queues.at(x->parent)) {
    path.push_back(x);
  }
  return path;
}

// What each queue (with its descendants) runs in each node pool after the cycle.
std::map<QueuePool, QuotaAmounts> QueueUse(
    const std::map<std::string, std::string>& where,
    const std::map<std::string, const model::Node*>& nodes,
    const std::map<std::string, const model::PodScheduling*>& pods,
    const std::map<std::string, const model::Queue*>& queues) {
  std::map<QueuePool, QuotaAmounts> use;
  for (const auto& [key, node_name] : where) {
    const model::PodScheduling& pod = *pods.at(key);
    const QuotaAmounts amounts = PodQuota(pod);
    const std::string pool = PoolOf(*nodes.at(node_name));
    for (const model::Queue* x : QueuePath(queues, pod)) {
      for (int r = 0; r < model::kNumQuotaResources; ++r) use[{x->name, pool}][r] += amounts[r];
    }
  }
  return use;
}

// "reclaimed by queue <name> for pod <pod>" -> name.
std::string ReclaimerQueue(const Eviction& e) {
  const std::string prefix = "reclaimed by queue ";
  if (e.message.rfind(prefix, 0) != 0) return "";
  const size_t end = e.message.find(' ', prefix.size());
  return e.message.substr(prefix.size(), end - prefix.size());
}

// The queue and its ancestors, by name.
std::set<std::string> QueueAndAncestors(const std::map<std::string, const model::Queue*>& queues,
                                        const std::string& name) {
  std::set<std::string> out;
  for (const model::Queue* q = queues.at(name); q != nullptr;
       q = q->parent.empty() ? nullptr : queues.at(q->parent)) {
    out.insert(q->name);
  }
  return out;
}

// Reclaim and preempt never evict a pod of priority >= 100. Reclaim never takes a queue below
// its deserved quota in a node pool, in a resource it takes: each queue of the victim's path
// below the queue it shares with the reclaimer (KAI compares where the two paths diverge; the
// shared queue and those above it keep what they hold). A queue's allocation only drops through
// evictions, each reclaim checked when made; later preemptions inside the queue (and reclaims
// between queues below it) may lower it legitimately, so they are added back before comparing
// with deserved.
void CheckEvictions(const CycleResult& r, const std::map<std::string, const model::Node*>& nodes,
                    const std::map<std::string, const model::PodScheduling*>& pods,
                    const std::map<std::string, const model::Queue*>& queues,
                    const std::map<QueuePool, QuotaAmounts>& use) {
  std::map<QueuePool, QuotaAmounts> reclaimed, slack;
  for (const Eviction& e : r.evictions) {
    if (e.reason == EvictionReason::kNoExecute) continue;
    const model::PodScheduling& pod = *pods.at(e.pod);
    EXPECT_LT(*PodPriority(pod), kNonPreemptiblePriority)
        << e.pod << " is not preemptible but was evicted (" << EvictionReasonName(e.reason)
        << "): " << e.message;
    const std::vector<const model::Queue*> path = QueuePath(queues, pod);
    if (path.empty()) continue;
    const std::string pool = PoolOf(*nodes.at(e.node));
    const QuotaAmounts amounts = PodQuota(pod);
    const std::string reclaimer = ReclaimerQueue(e);
    const std::set<std::string> shared =
        e.reason == EvictionReason::kReclaim && queues.contains(reclaimer)
            ? QueueAndAncestors(queues, reclaimer)
            : std::set<std::string>{};
    for (size_t level = 0; level < path.size(); ++level) {
      const bool checked = e.reason == EvictionReason::kReclaim &&
                           (level == 0 || (!shared.empty() && !shared.contains(path[level]->name)));
      QuotaAmounts& into = (checked ? reclaimed : slack)[{path[level]->name, pool}];
      for (int k = 0; k < model::kNumQuotaResources; ++k) into[k] += amounts[k];
    }
  }
  for (const auto& [key, taken] : reclaimed) {
    const model::NodePoolQuota& quota = queues.at(key.first)->QuotaIn(key.second);
    auto u = use.find(key);
    auto back = slack.find(key);
    for (int k = 0; k < model::kNumQuotaResources; ++k) {
      const int64_t deserved =
          QuotaUnits(k, quota[static_cast<model::QuotaResource>(k)].deserved_milli);
      if (taken[k] == 0 || deserved == model::kUnlimited) continue;
      const int64_t left =
          (u == use.end() ? 0 : u->second[k]) + (back == slack.end() ? 0 : back->second[k]);
      EXPECT_GE(left, deserved) << "reclaim took queue " << key.first << " below its deserved "
                                << model::kQuotaResourceK8sNames[k] << " in node pool "
                                << key.second;
    }
  }
}

// The pod an eviction names as its cause ("reclaimed by queue q for pod p", "preempted by pod p
// (priority n)"); empty for NoExecute, which no pod causes.
std::string EvictorPod(const Eviction& e) {
  for (const std::string marker : {" for pod ", "preempted by pod "}) {
    const size_t at = e.message.find(marker);
    if (at == std::string::npos) continue;
    const size_t begin = at + marker.size();
    return e.message.substr(begin, e.message.find(' ', begin) - begin);
  }
  return "";
}

// Whether the pod's job asks for GPUs: the pod, or its gang's members pending at the start (the
// scheduler's JobQuota).
bool JobAsksForGpus(const ClusterSnapshot& s, const model::PodScheduling& pod) {
  if (GpuMilli(pod) > 0) return true;
  auto gang = pod.labels.find(kGangLabel);
  if (gang == pod.labels.end()) return false;
  const auto queue = pod.labels.find(kQueueLabel);
  return std::any_of(s.pods.begin(), s.pods.end(), [&](const model::PodScheduling& peer) {
    auto peer_gang = peer.labels.find(kGangLabel);
    auto peer_queue = peer.labels.find(kQueueLabel);
    return peer.node_name.empty() && peer_gang != peer.labels.end() &&
           peer_gang->second == gang->second && peer_queue != peer.labels.end() &&
           queue != pod.labels.end() && peer_queue->second == queue->second && GpuMilli(peer) > 0;
  });
}

// The resources a reclaim compares with fair share, as the scheduler's `gpu != (r == kGpuQ)`:
// the GPUs of a GPU job or pod, the cpu and memory of a CPU-only one.
bool Compared(bool asks_for_gpus, int r) {
  return asks_for_gpus == (r == static_cast<int>(model::QuotaResource::kGpu));
}

// How often the random reclaims took the paths the reclaimer-side check is about.

// Reclaim on the reclaimer's side: the queues of the reclaiming pod's path below the queue it
// shares with a victim (where the two paths diverge, as on the victim's side) must stay within
// their fair share in the node pool with the pod, once the victims of its step are gone (KAI
// checks the reclaimer's queues on the state with the victims evicted). Its own leaf queue is
// checked for the whole job before the job starts, and only the job's pods join it, so it too is
// within its fair share after each step (in the resources compared for the job).
//
// Checked right after each step, not after the cycle: the fair shares are fixed for the cycle,
// but a queue's allocation at the end also carries decisions that were not compared at its
// level, e.g. a later reclaim between two of its children (it is their shared ancestor) or a
// preemption inside one of its projects that places a bigger pod than it evicts. The step is
// observable: bindings and evictions are each in decision order and every eviction names the
// pod it made room for, so right after pod P's step the cluster runs the pods bound at the start,
// minus the NoExecute evictions and the evictions for P and for the pods bound before P, plus
// the bindings up to P's. What the result does not show can only make the replayed allocation
// smaller than the scheduler's, which keeps the check sound: a gang member placed and withdrawn
// in the same cycle is in no binding (it counted while placed), and an eviction whose pod is not
// bound in the end (withdrawn with its gang, or a gang member that did not fit after all) is
// taken as gone from the start.
ReclaimCoverage CheckReclaimerSide(const ClusterSnapshot& s, const CycleResult& r,
                                   const std::map<std::string, const model::Node*>& nodes,
                                   const std::map<std::string, const model::PodScheduling*>& pods,
                                   const std::map<std::string, const model::Queue*>& queues) {
  std::map<std::string, size_t> binding_index;
  for (size_t i = 0; i < r.bindings.size(); ++i) binding_index[r.bindings[i].pod] = i;
  std::map<size_t, std::vector<const Eviction*>> evictions_of_step;  // by the evictor's binding
  std::set<std::string> gone_from_start;
  for (const Eviction& e : r.evictions) {
    auto evictor = binding_index.find(EvictorPod(e));
    if (evictor == binding_index.end()) {
      gone_from_start.insert(e.pod);
    } else {
      evictions_of_step[evictor->second].push_back(&e);
    }
  }
  std::map<QueuePool, const QueueShare*> shares;
  for (const QueueShare& share : r.fair_share) shares[{share.queue, share.node_pool}] = &share;
  auto fair_share = [&](const std::string& queue, const std::string& pool, int k) -> int64_t {
    auto it = shares.find({queue, pool});
    return it == shares.end() ? 0 : it->second->resources[k].fair_share;  // absent: 0 and unused
  };

  std::map<std::string, std::string> running;  // pod key -> node, as the steps go
  for (const auto& p : s.pods) {
    if (!p.node_name.empty() && !gone_from_start.contains(PodKey(p)))
      running[PodKey(p)] = p.node_name;
  }
  ReclaimCoverage coverage;
  size_t next_binding = 0;
  for (const auto& [index, evictions] : evictions_of_step) {
    for (; next_binding <= index; ++next_binding) {
      running[r.bindings[next_binding].pod] = r.bindings[next_binding].node;
    }
    for (const Eviction* e : evictions) running.erase(e->pod);
    const Binding& placed = r.bindings[index];
    const model::PodScheduling& reclaimer = *pods.at(placed.pod);
    const std::vector<const model::Queue*> path = QueuePath(queues, reclaimer);
    // The levels compared for some victim of the step, and what the step's victims free below
    // each queue of the path in the reclaim's node pool.
    std::set<size_t> compared_levels, divergence_levels;
    std::map<std::string, QuotaAmounts> freed_below;
    for (const Eviction* e : evictions) {
      if (e->reason != EvictionReason::kReclaim) continue;
      const model::PodScheduling& victim = *pods.at(e->pod);
      const std::vector<const model::Queue*> victim_path = QueuePath(queues, victim);
      if (victim_path.empty()) continue;
      const std::set<std::string> shared = QueueAndAncestors(queues, victim_path[0]->name);
      size_t level = 0;
      for (; level < path.size() && !shared.contains(path[level]->name); ++level) {
        compared_levels.insert(level);
      }
      divergence_levels.insert(level);
      if (PoolOf(*nodes.at(e->node)) != placed.node_pool) continue;
      for (const model::Queue* x : victim_path) {
        for (int k = 0; k < model::kNumQuotaResources; ++k) {
          freed_below[x->name][k] += PodQuota(victim)[k];
        }
      }
    }
    if (compared_levels.empty()) continue;  // preemption only
    ++coverage.steps;
    if (divergence_levels.size() > 1) ++coverage.victims_at_two_levels;

    const std::map<QueuePool, QuotaAmounts> use = QueueUse(running, nodes, pods, queues);
    const bool pod_asks_for_gpus = GpuMilli(reclaimer) > 0;
    const bool job_asks_for_gpus = JobAsksForGpus(s, reclaimer);
    bool relied = false;
    for (size_t level : compared_levels) {
      const std::string& queue = path[level]->name;
      auto u = use.find({queue, placed.node_pool});
      for (int k = 0; k < model::kNumQuotaResources; ++k) {
        if (!Compared(level == 0 ? job_asks_for_gpus : pod_asks_for_gpus, k)) continue;
        const int64_t allocated = u == use.end() ? 0 : u->second[k];
        const int64_t share = fair_share(queue, placed.node_pool, k);
        EXPECT_LE(allocated, share)
            << "reclaim for " << placed.pod << " took queue " << queue << " above its fair share "
            << model::kQuotaResourceK8sNames[k] << " in node pool " << placed.node_pool;
        relied |= level > 0 && allocated + freed_below[queue][k] > share;
      }
    }
    if (relied) ++coverage.relied_on_a_victim_of_the_step;
  }
  return coverage;
}

// The pods and queues of a scenario by name, and where each pod runs after the cycle.
struct Indexed {
  std::map<std::string, const model::Node*> nodes;
  std::map<std::string, const model::PodScheduling*> pods;
  std::map<std::string, const model::Queue*> queues;
  std::map<std::string, std::string> where;
};

// Every pod is accounted exactly once: running, or pending with a reason.
void CheckEveryPodAccounted(const Indexed& x, const CycleResult& r) {
  std::set<std::string> pending;
  for (const PendingPod& p : r.unschedulable) {
    EXPECT_TRUE(pending.insert(p.pod).second) << "listed twice: " << p.pod;
    EXPECT_FALSE(p.reason.empty());
    EXPECT_EQ(x.where.count(p.pod), 0u) << p.pod << " both pending and placed";
  }
  for (const auto& [key, pod] : x.pods) {
    EXPECT_TRUE(x.where.contains(key) || pending.contains(key)) << key << " was lost";
  }
  for (const Eviction& e : r.evictions) {
    EXPECT_TRUE(pending.count(e.pod)) << "evicted " << e.pod << " is not pending again";
  }
}

// Newly placed pods: taints, selector, affinity, node pool; pods left running tolerate the
// node's NoExecute taints.
void CheckPlacementsHonourTheNodes(const Indexed& x, const CycleResult& r) {
  for (const Binding& b : r.bindings) {
    const model::PodScheduling& pod = *x.pods.at(b.pod);
    const model::Node& node = *x.nodes.at(b.node);
    EXPECT_FALSE(model::FindUntoleratedTaint(node.taints, pod.tolerations).has_value())
        << b.pod << " on " << b.node << " with an untolerated taint";
    EXPECT_TRUE(model::MatchesNodeSelectorAndAffinity(pod, node)) << b.pod << " on " << b.node;
    if (node.unschedulable) {
      bool tolerated = false;
      for (const auto& t : pod.tolerations) {
        tolerated |= model::ToleratesTaint(
            t, {"node.kubernetes.io/unschedulable", "", model::TaintEffect::kNoSchedule});
      }
      EXPECT_TRUE(tolerated) << b.pod << " on cordoned " << b.node;
    }
    auto label = pod.labels.find(kNodePoolLabel);
    std::string pools = label == pod.labels.end() ? "default" : label->second;
    EXPECT_NE(("," + pools + ",").find("," + PoolOf(node) + ","), std::string::npos)
        << b.pod << " in pool " << PoolOf(node) << " not in " << pools;
  }
  for (const auto& [key, node_name] : x.where) {
    EXPECT_FALSE(model::FindUntoleratedTaint(x.nodes.at(node_name)->taints,
                                             x.pods.at(key)->tolerations,
                                             model::TaintEffectSet::NoExecuteOnly())
                     .has_value())
        << key << " still runs on " << node_name;
  }
}

// Capacity per node, on every resource, and per GPU device.
void CheckNodeCapacity(const Indexed& x, const CycleResult& r) {
  std::map<std::string, std::map<std::string, int64_t>> used;
  std::map<std::string, int64_t> gpu_used;
  for (const auto& [key, node_name] : x.where) {
    const model::PodScheduling& pod = *x.pods.at(key);
    for (const auto& [resource, q] : pod.requests) {
      if (resource != "nvidia.com/gpu") used[node_name][resource] += Dim(pod.requests, resource);
    }
    used[node_name]["pods"] += 1;
    gpu_used[node_name] += GpuMilli(pod);
  }
  for (const auto& [node_name, resources] : used) {
    const model::Node& node = *x.nodes.at(node_name);
    for (const auto& [resource, amount] : resources) {
      int64_t cap = resource == "pods" && !node.allocatable.contains("pods")
                        ? 110
                        : Dim(node.allocatable, resource);
      EXPECT_LE(amount, cap) << node_name << " over-committed on " << resource;
    }
    EXPECT_LE(gpu_used[node_name], Dim(node.allocatable, "nvidia.com/gpu") * 1000)
        << node_name << " over-committed on GPUs";
  }
  std::map<std::string, std::map<int, int64_t>> device_use;
  for (const Binding& b : r.bindings) {
    if (b.gpu_device >= 0) device_use[b.node][b.gpu_device] += GpuMilli(*x.pods.at(b.pod));
  }
  for (const auto& [node_name, devices] : device_use) {
    for (const auto& [device, milli] : devices) {
      EXPECT_LE(milli, 1000) << node_name << " device " << device;
    }
  }
}

// Queue limits (queue and parent) per node pool, on gpu, cpu and memory.
void CheckQueueLimits(const Indexed& x, const std::map<QueuePool, QuotaAmounts>& queue_use) {
  for (const auto& [key, amounts] : queue_use) {
    const model::NodePoolQuota& quota = x.queues.at(key.first)->QuotaIn(key.second);
    for (int r = 0; r < model::kNumQuotaResources; ++r) {
      const int64_t limit = QuotaUnits(r, quota[static_cast<model::QuotaResource>(r)].limit_milli);
      if (limit == model::kUnlimited) continue;
      EXPECT_LE(amounts[r], limit) << key.first << " over its " << model::kQuotaResourceK8sNames[r]
                                   << " limit in " << key.second;
    }
  }
}

// Gangs: running members are 0 or at least gang-min.
void CheckGangs(const Indexed& x) {
  std::map<std::string, std::pair<int, int>> gangs;  // gang -> (running, min)
  for (const auto& [key, pod] : x.pods) {
    auto g = pod->labels.find(kGangLabel);
    if (g == pod->labels.end()) continue;
    auto& entry = gangs[g->second];
    if (x.where.contains(key)) ++entry.first;
    auto m = pod->labels.find(kGangMinLabel);
    if (m != pod->labels.end()) entry.second = std::stoi(m->second);
  }
  for (const auto& [key, pod] : x.pods) {
    auto g = pod->labels.find(kGangLabel);
    if (g != pod->labels.end() && !pod->labels.contains(kGangMinLabel)) gangs[g->second].second++;
  }
  for (const auto& [gang, entry] : gangs) {
    EXPECT_TRUE(entry.first == 0 || entry.first >= entry.second)
        << "gang " << gang << " partly placed: " << entry.first << " of min " << entry.second;
  }
}

ReclaimCoverage CheckInvariants(const ClusterSnapshot& s, const CycleResult& r,
                                bool initial_consistent) {
  Indexed x;
  for (const auto& n : s.nodes) x.nodes[n.name] = &n;
  for (const auto& p : s.pods) x.pods[PodKey(p)] = &p;
  for (const auto& q : s.queues) x.queues[q.name] = &q;
  x.where = FinalPlacement(s, r);

  CheckEveryPodAccounted(x, r);
  CheckPlacementsHonourTheNodes(x, r);
  // Capacity and limits hold only when the scenario started within them.
  if (initial_consistent) CheckNodeCapacity(x, r);
  const auto queue_use = QueueUse(x.where, x.nodes, x.pods, x.queues);
  if (initial_consistent) CheckQueueLimits(x, queue_use);
  CheckEvictions(r, x.nodes, x.pods, x.queues, queue_use);
  const ReclaimCoverage coverage = CheckReclaimerSide(s, r, x.nodes, x.pods, x.queues);
  CheckGangs(x);
  return coverage;
}

}  // namespace gpupool::scheduler::invariants
