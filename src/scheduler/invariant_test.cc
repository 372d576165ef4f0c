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
#include "scheduler/invariant_checks.h"
#include "scheduler/scenario.h"
#include "scheduler/scheduler.h"
#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace invariant_test {

using invariants::CheckInvariants;
using invariants::Dim;
using invariants::GpuMilli;
using invariants::PodQuota;
using invariants::QuotaAmounts;
using invariants::ReclaimCoverage;
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

// The queues of TeamReclaimScenario (kThreeLevels) with deserved quotas derived from what each
// queue runs, or asks for when it has no pod running.
void AddTeamReclaimQueues(ClusterSnapshot& s, Generator& gen, const std::string& pool) {
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

  AddTeamReclaimQueues(s, gen, pool);
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
    // Compared as values (every field); the JSON only to show a difference.
    const CycleResult again = Scheduler(options).RunCycle(next);
    if (!(second == again)) {
      ADD_FAILURE() << "same input, another result:\n"
                    << ScheduleResultToJson(second).dump(1) << "\nagainst\n"
                    << ScheduleResultToJson(again).dump(1);
    }
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

}  // namespace invariant_test
}  // namespace gpupool::scheduler
