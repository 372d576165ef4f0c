// Invariants on thousands of seeded random scenarios: two cycles each (the second starts from
// the first one's placements, adds work and a NoExecute taint), checked against an independent
// recomputation from the model types.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <random>
#include <set>

#include "model/match.h"
#include "scheduler/scenario.h"
#include "scheduler/scheduler.h"
#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace {

using testing::Json;
using testing::MakeNodePool;
using testing::MakeQueue;
using testing::NodeBuilder;
using testing::PodBuilder;

constexpr int kScenarios = 1500;
const std::vector<std::string> kPools = {"a100", "v100", "t4"};

// A queue tree, each queue after its parent: (name, parent). Pods go to the leaves.
struct QueueTree {
  std::vector<std::pair<std::string, std::string>> queues;
  std::vector<std::string> leaves;
};
// Departments and projects.
const QueueTree kTwoLevels = {
    {{"d1", ""}, {"d2", ""}, {"d1-p1", "d1"}, {"d1-p2", "d1"}, {"d2-p1", "d2"}, {"d2-p2", "d2"}},
    {"d1-p1", "d1-p2", "d2-p1", "d2-p2"}};
// Departments, teams and projects: reclaim between teams of one department, or across
// departments, must respect the levels in between as well.
const QueueTree kThreeLevels = {
    {{"d1", ""},
     {"d2", ""},
     {"d1-t1", "d1"},
     {"d1-t2", "d1"},
     {"d2-t1", "d2"},
     {"d2-t2", "d2"},
     {"d1-t1-p1", "d1-t1"},
     {"d1-t1-p2", "d1-t1"},
     {"d1-t2-p1", "d1-t2"},
     {"d2-t1-p1", "d2-t1"},
     {"d2-t2-p1", "d2-t2"},
     {"d2-t2-p2", "d2-t2"}},
    {"d1-t1-p1", "d1-t1-p2", "d1-t2-p1", "d2-t1-p1", "d2-t2-p1", "d2-t2-p2"}};

class Generator {
 public:
  Generator(uint32_t seed, const std::vector<std::string>& leaves) : rng_(seed), leaves_(leaves) {}
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(int percent) { return Int(1, 100) <= percent; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Int(0, static_cast<int>(v.size()) - 1)];
  }

  model::Node Node(int i) {
    NodeBuilder n("node-" + std::to_string(i));
    n.Cpu(std::to_string(Int(4, 64))).Memory(std::to_string(Int(16, 512)) + "Gi");
    const int gpus = Pick(std::vector<int>{0, 1, 2, 4, 8});
    if (gpus > 0) n.Gpus(gpus);
    if (Chance(75)) n.Label("node-pool", Pick(kPools));
    n.Label("gpu", Pick(std::vector<std::string>{"a100", "v100", "none"}));
    n.Label("rack", "r" + std::to_string(Int(0, 3)));
    if (gpus > 0 && Chance(50)) n.Taint("nvidia.com/gpu", "true", "NoSchedule");
    if (Chance(10)) n.Taint("dedicated", Pick(std::vector<std::string>{"x", "y"}), "NoExecute");
    if (Chance(20)) n.Taint("spot", "", "PreferNoSchedule");
    if (Chance(5)) n.Unschedulable();
    if (Chance(10)) n.Alloc("pods", std::to_string(Int(1, 4)));
    if (Chance(20)) n.Alloc("example.com/fpga", std::to_string(Int(0, 2)));
    if (Chance(20)) n.Alloc("hugepages-2Mi", std::to_string(Int(0, 4) * 256) + "Mi");
    return n.Build();
  }

  // Gang members share node pools and gang-min.
  model::PodScheduling Pod(const std::string& name, int gang_size, const std::string& gang,
                           const std::string& gang_pools = "", int gang_min = 0) {
    PodBuilder p(name);
    p.Cpu(std::to_string(Int(1, 16000)) + "m").Memory(std::to_string(Int(1, 64)) + "Gi");
    const int kind = Int(0, 9);
    if (kind < 4) {
      p.Gpus(Pick(std::vector<int>{1, 1, 2, 4, 8}));
    } else if (kind < 6) {
      p.Fraction(Pick(std::vector<std::string>{"0.25", "0.5", "0.75"}));
    }
    p.Queue(gang_size > 0 ? leaves_[std::hash<std::string>{}(gang) % leaves_.size()]
                          : Pick(leaves_));
    if (gang_size > 0) {
      if (!gang_pools.empty()) p.NodePools(gang_pools);
    } else if (Chance(60)) {
      p.NodePools(Pools());
    }
    if (Chance(50)) p.Toleration({{"key", "nvidia.com/gpu"}, {"operator", "Exists"}});
    if (Chance(10)) p.Toleration({{"key", "dedicated"}, {"value", "x"}});
    if (Chance(5)) p.Toleration({{"operator", "Exists"}});
    if (Chance(20)) p.Selector("gpu", Pick(std::vector<std::string>{"a100", "v100"}));
    if (Chance(15)) {
      p.NodeAffinity({{"requiredDuringSchedulingIgnoredDuringExecution",
                       {{"nodeSelectorTerms",
                         Json::array({{{"matchExpressions",
                                        Json::array({{{"key", "rack"},
                                                      {"operator", Chance(50) ? "In" : "NotIn"},
                                                      {"values", {"r0", "r1"}}}})}}})}}}});
    }
    if (Chance(5)) p.Request("example.com/fpga", "1");
    if (Chance(5)) p.Request("hugepages-2Mi", std::to_string(Int(1, 4) * 256) + "Mi");
    if (Chance(10)) {  // the pod needs max(init container, containers)
      p.json()["spec"]["initContainers"] =
          Json::array({{{"name", "init"},
                        {"image", "busybox"},
                        {"resources",
                         {{"requests",
                           {{"cpu", std::to_string(Int(1, 24000)) + "m"},
                            {"memory", std::to_string(Int(1, 96)) + "Gi"}}}}}}});
    }
    p.Priority(Pick(std::vector<int>{0, 0, 10, 50, 100, 125}));
    if (gang_size > 0) p.Gang(gang, gang_min);
    return p.Build();
  }

  std::string Pools() {
    std::string pools = Pick(kPools);
    if (Chance(40)) pools += "," + Pick(kPools);
    return pools;
  }

  model::Queue Queue(const std::string& name, const std::string& parent) {
    model::Queue q = MakeQueue(name, parent, {});
    for (const std::string& pool : kPools) {
      if (!Chance(60)) continue;
      model::ResourceQuota& gpu = q.resources[pool][model::QuotaResource::kGpu];
      gpu.deserved_milli = int64_t{Int(0, 8)} * 1000;
      gpu.limit_milli =
          Chance(30) ? gpu.deserved_milli + int64_t{Int(0, 8)} * 1000 : model::kUnlimited;
      gpu.over_quota_weight = Int(0, 3);
      if (Chance(30)) {
        model::ResourceQuota& cpu = q.resources[pool][model::QuotaResource::kCpu];
        cpu.deserved_milli = int64_t{Int(0, 32)} * 1000;
        cpu.limit_milli =
            Chance(50) ? cpu.deserved_milli + int64_t{Int(0, 64)} * 1000 : model::kUnlimited;
      }
      if (Chance(30)) {  // memory quota is in milli-bytes
        constexpr int64_t kGiMilli = int64_t{1000} << 30;
        model::ResourceQuota& memory = q.resources[pool][model::QuotaResource::kMemory];
        memory.deserved_milli = Int(0, 128) * kGiMilli;
        memory.limit_milli =
            Chance(50) ? memory.deserved_milli + Int(0, 256) * kGiMilli : model::kUnlimited;
      }
    }
    return q;
  }

  void AddPods(ClusterSnapshot& s, const std::string& prefix, int count) {
    for (int i = 0; i < count;) {
      if (Chance(15)) {
        const int size = Int(2, 3);
        const std::string gang = prefix + "g" + std::to_string(i);
        const std::string pools = Chance(60) ? Pools() : "";
        const int gang_min = Chance(30) ? Int(1, size) : 0;
        for (int k = 0; k < size; ++k) {
          s.pods.push_back(Pod(prefix + std::to_string(i) + "-" + std::to_string(k), size, gang,
                               pools, gang_min));
        }
        i += size;
      } else {
        s.pods.push_back(Pod(prefix + std::to_string(i), 0, ""));
        ++i;
      }
    }
  }

 private:
  std::mt19937 rng_;
  const std::vector<std::string>& leaves_;  // the queues that take pods
};

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
    if (!p.node_name.empty() && !evicted.count(PodKey(p))) where[PodKey(p)] = p.node_name;
  }
  for (const Binding& b : r.bindings) where[b.pod] = b.node;
  return where;
}

using QuotaAmounts = std::array<int64_t, model::kNumQuotaResources>;  // gpu milli, cpu milli, bytes
using QueuePool = std::pair<std::string, std::string>;                // (queue, node pool)

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
  if (q == pod.labels.end() || !queues.count(q->second)) return path;
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
        e.reason == EvictionReason::kReclaim && queues.count(reclaimer)
            ? QueueAndAncestors(queues, reclaimer)
            : std::set<std::string>{};
    for (size_t level = 0; level < path.size(); ++level) {
      const bool checked = e.reason == EvictionReason::kReclaim &&
                           (level == 0 || (!shared.empty() && !shared.count(path[level]->name)));
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
struct ReclaimCoverage {
  int steps = 0;  // pods placed by reclaim
  // ... whose victims diverge from the reclaimer at different levels (a sibling project's pod
  // and another team's in one step)
  int victims_at_two_levels = 0;
  // ... where a queue above the reclaimer's own is within its fair share only because a victim
  // of the same step below it is gone (what ReclaimerSideWithinFairShare's `taken` is for)
  int relied_on_a_victim_of_the_step = 0;

  ReclaimCoverage& operator+=(const ReclaimCoverage& o) {
    steps += o.steps;
    victims_at_two_levels += o.victims_at_two_levels;
    relied_on_a_victim_of_the_step += o.relied_on_a_victim_of_the_step;
    return *this;
  }
};

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
    if (!p.node_name.empty() && !gone_from_start.count(PodKey(p))) running[PodKey(p)] = p.node_name;
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
      for (; level < path.size() && !shared.count(path[level]->name); ++level) {
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

ReclaimCoverage CheckInvariants(const ClusterSnapshot& s, const CycleResult& r,
                                bool initial_consistent) {
  std::map<std::string, const model::Node*> nodes;
  for (const auto& n : s.nodes) nodes[n.name] = &n;
  std::map<std::string, const model::PodScheduling*> pods;
  for (const auto& p : s.pods) pods[PodKey(p)] = &p;
  std::map<std::string, const model::Queue*> queues;
  for (const auto& q : s.queues) queues[q.name] = &q;
  const auto where = FinalPlacement(s, r);

  // Every pod is accounted exactly once: running, or pending with a reason.
  std::set<std::string> pending;
  for (const PendingPod& p : r.unschedulable) {
    EXPECT_TRUE(pending.insert(p.pod).second) << "listed twice: " << p.pod;
    EXPECT_FALSE(p.reason.empty());
    EXPECT_EQ(where.count(p.pod), 0u) << p.pod << " both pending and placed";
  }
  for (const auto& [key, pod] : pods) {
    EXPECT_TRUE(where.count(key) || pending.count(key)) << key << " was lost";
  }
  for (const Eviction& e : r.evictions) {
    EXPECT_TRUE(pending.count(e.pod)) << "evicted " << e.pod << " is not pending again";
  }

  // Newly placed pods: taints, selector, affinity, node pool.
  for (const Binding& b : r.bindings) {
    const model::PodScheduling& pod = *pods.at(b.pod);
    const model::Node& node = *nodes.at(b.node);
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
  // Pods left running tolerate the node's NoExecute taints.
  for (const auto& [key, node_name] : where) {
    EXPECT_FALSE(model::FindUntoleratedTaint(nodes.at(node_name)->taints, pods.at(key)->tolerations,
                                             model::TaintEffectSet::NoExecuteOnly())
                     .has_value())
        << key << " still runs on " << node_name;
  }

  // Capacity per node, on every resource.
  std::map<std::string, std::map<std::string, int64_t>> used;
  std::map<std::string, int64_t> gpu_used;
  for (const auto& [key, node_name] : where) {
    const model::PodScheduling& pod = *pods.at(key);
    for (const auto& [resource, q] : pod.requests) {
      if (resource != "nvidia.com/gpu") used[node_name][resource] += Dim(pod.requests, resource);
    }
    used[node_name]["pods"] += 1;
    gpu_used[node_name] += GpuMilli(pod);
  }
  std::map<std::string, std::map<int, int64_t>> device_use;
  for (const Binding& b : r.bindings) {
    if (b.gpu_device >= 0) device_use[b.node][b.gpu_device] += GpuMilli(*pods.at(b.pod));
  }
  if (initial_consistent) {
    for (const auto& [node_name, resources] : used) {
      const model::Node& node = *nodes.at(node_name);
      for (const auto& [resource, amount] : resources) {
        int64_t cap = resource == "pods" && !node.allocatable.count("pods")
                          ? 110
                          : Dim(node.allocatable, resource);
        EXPECT_LE(amount, cap) << node_name << " over-committed on " << resource;
      }
      EXPECT_LE(gpu_used[node_name], Dim(node.allocatable, "nvidia.com/gpu") * 1000)
          << node_name << " over-committed on GPUs";
    }
    for (const auto& [node_name, devices] : device_use) {
      for (const auto& [device, milli] : devices) {
        EXPECT_LE(milli, 1000) << node_name << " device " << device;
      }
    }
  }

  // Queue limits (queue and parent) per node pool, on gpu, cpu and memory.
  const auto queue_use = QueueUse(where, nodes, pods, queues);
  if (initial_consistent) {
    for (const auto& [key, amounts] : queue_use) {
      const model::NodePoolQuota& quota = queues.at(key.first)->QuotaIn(key.second);
      for (int r = 0; r < model::kNumQuotaResources; ++r) {
        const int64_t limit =
            QuotaUnits(r, quota[static_cast<model::QuotaResource>(r)].limit_milli);
        if (limit == model::kUnlimited) continue;
        EXPECT_LE(amounts[r], limit)
            << key.first << " over its " << model::kQuotaResourceK8sNames[r] << " limit in "
            << key.second;
      }
    }
  }
  CheckEvictions(r, nodes, pods, queues, queue_use);
  const ReclaimCoverage coverage = CheckReclaimerSide(s, r, nodes, pods, queues);

  // Gangs: running members are 0 or at least gang-min.
  std::map<std::string, std::pair<int, int>> gangs;  // gang -> (running, min)
  for (const auto& [key, pod] : pods) {
    auto g = pod->labels.find(kGangLabel);
    if (g == pod->labels.end()) continue;
    auto& entry = gangs[g->second];
    if (where.count(key)) ++entry.first;
    auto m = pod->labels.find(kGangMinLabel);
    if (m != pod->labels.end()) entry.second = std::stoi(m->second);
  }
  for (const auto& [key, pod] : pods) {
    auto g = pod->labels.find(kGangLabel);
    if (g != pod->labels.end() && !pod->labels.count(kGangMinLabel)) gangs[g->second].second++;
  }
  for (const auto& [gang, entry] : gangs) {
    EXPECT_TRUE(entry.first == 0 || entry.first >= entry.second)
        << "gang " << gang << " partly placed: " << entry.first << " of min " << entry.second;
  }
  return coverage;
}

// The shape where the reclaimer's side depends on the victims of its own step (kThreeLevels, one
// node pool): project d1-t1-p1 reclaims while its team d1-t1 holds about its deserved quota only
// because the sibling project d1-t1-p2 runs above its own, and the other team d1-t2 runs above
// its share too, their pods sharing the nodes. Deserved quotas are derived from what each queue
// runs (table below) and over-quota weights are mostly 0, so that fair shares sit at or near the
// deserved quotas; the sizes stay random so that the victims' order, the reprieve and the fit
// decide.
ClusterSnapshot TeamReclaimScenario(Generator& gen) {
  const std::string pool = "a100";
  ClusterSnapshot s;
  s.node_pools = {MakeNodePool(pool)};
  struct Free {
    int gpus, cpus, memory_gi;
  };
  std::vector<Free> free;
  const int node_count = gen.Int(1, 3);
  for (int i = 0; i < node_count; ++i) {
    free.push_back({gen.Pick(std::vector<int>{2, 4, 8}), gen.Int(8, 32), gen.Int(32, 128)});
    s.nodes.push_back(NodeBuilder("node-" + std::to_string(i))
                          .Gpus(free.back().gpus)
                          .Cpu(std::to_string(free.back().cpus))
                          .Memory(std::to_string(free.back().memory_gi) + "Gi")
                          .Label("node-pool", pool)
                          .Build());
  }
  // Pod sizes by queue, mostly as in the shape: the sibling project's pods hold GPUs, the other
  // team's hold CPUs, the reclaimer needs both (or CPUs only); now and then any size.
  struct PodShape {
    std::string queue;
    std::vector<int> gpus;
    int cpus_low, cpus_high;
  };
  const std::vector<PodShape> shapes = {{"d1-t1-p2", {1, 2, 2, 3}, 1, 4},
                                        {"d1-t2-p1", {1, 1, 2}, 4, 12},
                                        {"d1-t1-p1", {0, 1, 2, 2, 3}, 2, 12}};
  const PodShape any_size = {"", {0, 1, 1, 2, 3}, 1, 12};
  // Running pods are sometimes not preemptible; pending ones always are.
  auto pod = [&](const std::string& name, const std::string& queue, bool running) {
    auto shape = std::find_if(shapes.begin(), shapes.end(),
                              [&](const PodShape& x) { return x.queue == queue; });
    const PodShape& size = shape == shapes.end() || gen.Chance(25) ? any_size : *shape;
    const int gpus = gen.Pick(size.gpus);
    PodBuilder p(name);
    p.Cpu(std::to_string(gen.Int(size.cpus_low, size.cpus_high)))
        .Memory(std::to_string(gen.Int(1, 16)) + "Gi");
    if (gpus > 0) p.Gpus(gpus);
    return p.Queue(queue).NodePools(pool).Priority(
        gen.Pick(running ? std::vector<int>{0, 0, 10, 50, 100} : std::vector<int>{0, 10, 50}));
  };
  // Running: on each node a pod of the sibling project and one of the other team first (when they
  // fit), then a mix, mostly of the same two.
  const std::vector<std::string> running_queues = {"d1-t1-p2", "d1-t1-p2", "d1-t2-p1",
                                                   "d1-t2-p1", "d1-t1-p1", "d2-t1-p1"};
  for (int i = 0; i < node_count; ++i) {
    const int attempts = gen.Int(3, 6);
    for (int attempt = 0; attempt < attempts; ++attempt) {
      const std::string queue = attempt == 0   ? "d1-t1-p2"
                                : attempt == 1 ? "d1-t2-p1"
                                               : gen.Pick(running_queues);
      model::PodScheduling p =
          pod("run-" + std::to_string(i) + "-" + std::to_string(attempt), queue, true)
              .On(s.nodes[i].name)
              .Build();
      const int gpus = static_cast<int>(GpuMilli(p) / 1000);
      const int cpus = static_cast<int>(Dim(p.requests, "cpu") / 1000);
      const int memory_gi = static_cast<int>(Dim(p.requests, "memory") >> 30);
      if (gpus > free[i].gpus || cpus > free[i].cpus || memory_gi > free[i].memory_gi) continue;
      free[i] = {free[i].gpus - gpus, free[i].cpus - cpus, free[i].memory_gi - memory_gi};
      s.pods.push_back(std::move(p));
    }
  }
  // Pending: the reclaimer's pods (now and then a gang), and sometimes demand elsewhere.
  for (int i = gen.Int(1, 3); i > 0; --i) {
    const std::string name = "r" + std::to_string(i);
    if (gen.Chance(20)) {
      for (int m = 0; m < 2; ++m) {
        s.pods.push_back(pod(name + "-" + std::to_string(m), "d1-t1-p1", false).Gang(name).Build());
      }
    } else {
      s.pods.push_back(pod(name, "d1-t1-p1", false).Build());
    }
  }
  if (gen.Chance(30)) s.pods.push_back(pod("extra", gen.Pick(kThreeLevels.leaves), false).Build());

  // What each queue (with its descendants) runs, or asks for when it has no pod running.
  std::map<std::string, std::string> parent_of(kThreeLevels.queues.begin(),
                                               kThreeLevels.queues.end());
  std::map<std::string, QuotaAmounts> runs, asks;
  for (const auto& p : s.pods) {
    for (std::string q = p.labels.at(kQueueLabel); !q.empty(); q = parent_of[q]) {
      QuotaAmounts& into = (p.node_name.empty() ? asks : runs)[q];
      for (int k = 0; k < model::kNumQuotaResources; ++k) into[k] += PodQuota(p)[k];
    }
  }
  // Deserved = a random percentage, in [low, high], of what the queue runs (the reclaimer's
  // project: of what it runs and asks for), rounded to whole GPUs, cores and GiB; over-quota
  // weight picked from `weights` (mostly 0 on the victims' side, so that they run above their
  // fair share).
  struct QuotaRule {
    std::string queue;
    int low, high;
    std::vector<int> weights;
  };
  const std::vector<QuotaRule> rules = {
      {"d1", 100, 200, {0, 1}},      {"d2", 0, 200, {0, 1}},         {"d1-t1", 90, 130, {0}},
      {"d1-t2", 0, 40, {0}},         {"d2-t1", 0, 200, {0, 1}},      {"d2-t2", 0, 200, {0, 1}},
      {"d1-t1-p1", 80, 200, {0, 1}}, {"d1-t1-p2", 0, 40, {0, 0, 1}}, {"d1-t2-p1", 0, 40, {0, 0, 1}},
      {"d2-t1-p1", 0, 200, {0, 1}},  {"d2-t2-p1", 0, 200, {0, 1}},   {"d2-t2-p2", 0, 200, {0, 1}}};
  // One GPU, one core, one GiB, in PodQuota's units and in quota milli-units.
  const QuotaAmounts unit = {1000, 1000, int64_t{1} << 30};
  const QuotaAmounts unit_milli = {1000, 1000, int64_t{1000} << 30};
  // cpu and memory quota in some scenarios only: then they bind victims' deserved quota too.
  const bool cpu_quota = gen.Chance(50), memory_quota = gen.Chance(25);
  for (const auto& [queue_name, parent] : kThreeLevels.queues) {
    // A named copy: clang 14 cannot capture a structured binding in a lambda.
    const std::string& name = queue_name;
    model::Queue q = MakeQueue(name, parent, {});
    const auto rule = std::find_if(rules.begin(), rules.end(),
                                   [&](const QuotaRule& x) { return x.queue == name; });
    for (int k = 0; k < model::kNumQuotaResources; ++k) {
      if ((k == 1 && !cpu_quota) || (k == 2 && !memory_quota)) continue;
      const int64_t base = runs[name][k] + (name == "d1-t1-p1" ? asks[name][k] : 0);
      const int64_t percent = gen.Int(rule->low, rule->high);
      model::ResourceQuota& quota = q.resources[pool][static_cast<model::QuotaResource>(k)];
      quota.deserved_milli = (base * percent / 100 + unit[k] / 2) / unit[k] * unit_milli[k];
      quota.over_quota_weight = gen.Pick(rule->weights);
    }
    s.queues.push_back(std::move(q));
  }
  return s;
}

void RunRandomScenarios(const QueueTree& tree) {
  for (int seed = 1; seed <= kScenarios; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Generator gen(static_cast<uint32_t>(seed), tree.leaves);
    ClusterSnapshot s;
    for (const std::string& pool : kPools) {
      s.node_pools.push_back(MakeNodePool(
          pool, gen.Chance(50) ? std::vector<std::string>{"rack"} : std::vector<std::string>{}));
    }
    const int node_count = gen.Int(2, 24);
    for (int i = 0; i < node_count; ++i) s.nodes.push_back(gen.Node(i));
    for (const auto& [name, parent] : tree.queues) s.queues.push_back(gen.Queue(name, parent));
    gen.AddPods(s, "a", gen.Int(1, 40));
    SchedulerOptions options;
    options.policy = gen.Pick(std::vector<PlacementPolicy>{
        PlacementPolicy::kFgd, PlacementPolicy::kGpuPacking, PlacementPolicy::kBestFit});
    const CycleResult first = Scheduler(options).RunCycle(s);
    CheckInvariants(s, first, /*initial_consistent=*/true);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << ScheduleResultToJson(first).dump(1);
      return;
    }

    // Second cycle: the placements become bound pods, new work arrives, a node gets tainted.
    ClusterSnapshot next = s;
    std::map<std::string, std::string> placed;
    for (const Binding& b : first.bindings) placed[b.pod] = b.node;
    for (auto& pod : next.pods) {
      auto it = placed.find(PodKey(pod));
      if (it != placed.end()) pod.node_name = it->second;
    }
    std::erase_if(next.pods, [&](const model::PodScheduling& p) { return p.node_name.empty(); });
    gen.AddPods(next, "b", gen.Int(1, 40));
    if (gen.Chance(30)) {
      next.nodes[gen.Int(0, node_count - 1)].taints.push_back(
          {"maintenance", "true", model::TaintEffect::kNoExecute});
    }
    const CycleResult second = Scheduler(options).RunCycle(next);
    CheckInvariants(next, second, /*initial_consistent=*/true);
    // Same input, same output.
    const CycleResult again = Scheduler(options).RunCycle(next);
    Scenario scenario;
    EXPECT_EQ(ScheduleResultToJson(second), ScheduleResultToJson(again));
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(InvariantTest, RandomScenarios) { RunRandomScenarios(kTwoLevels); }

TEST(InvariantTest, RandomScenariosThreeLevels) { RunRandomScenarios(kThreeLevels); }

TEST(InvariantTest, RandomReclaimsAcrossTeamsAndSiblingProjects) {
  ReclaimCoverage coverage;
  for (int seed = 1; seed <= kScenarios; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Generator gen(static_cast<uint32_t>(seed), kThreeLevels.leaves);
    const ClusterSnapshot s = TeamReclaimScenario(gen);
    SchedulerOptions options;
    options.policy = gen.Pick(std::vector<PlacementPolicy>{
        PlacementPolicy::kFgd, PlacementPolicy::kGpuPacking, PlacementPolicy::kBestFit});
    const CycleResult r = Scheduler(options).RunCycle(s);
    coverage += CheckInvariants(s, r, /*initial_consistent=*/true);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << ScheduleResultToJson(r).dump(1);
      return;
    }
  }
  // The shape must keep reaching the path it is built for: an over-strict reclaimer side (one
  // that ignores the victims of the same step) breaks no invariant, it only stops these reclaims.
  EXPECT_GE(coverage.relied_on_a_victim_of_the_step, kScenarios / 50)
      << coverage.steps << " reclaims, " << coverage.victims_at_two_levels
      << " with victims at two levels";
}

}  // namespace
}  // namespace gpupool::scheduler
