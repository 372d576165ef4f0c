// Autoscaler benchmark (custom main, no timing assertions): the machine-pool what-if
// (autoscaler::Simulate) on a large cluster.
//
//   autoscaler_bench [--nodes N] [--pods P] [--seed S]   # default 1,000 nodes, 10,000 pods
//   autoscaler_bench --quick                              # small run that validates the plan
//
// Cluster: one machine pool per built-in catalog type (15 pools; GPU types on spot with the GPU
// spot taints, CPU types on demand), max_replicas 400 each, and N existing nodes spread over them
// (template nodes, so they look like what the pools launch). Pending pods: 40% CPU-only (1-8 cpu,
// 2-32Gi), 60% GPU (1, 2, 4 or 8 GPUs, tolerating the GPU taints; a third select a GPU product),
// 3% in gangs of 4. Reports the plan's wall and CPU time, scheduler cycles run, nodes added and
// removed, pods placed, and peak RSS. --quick checks: every placement is on a node of the
// snapshot or the plan, no pool above max_replicas, every added node got a pod, same input same
// plan.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <random>
#include <set>
#include <string>

#include "autoscaler/autoscaler.h"

namespace gpupool::autoscaler {
namespace {

struct Setup {
  scheduler::ClusterSnapshot snapshot;
  std::vector<model::MachinePool> pools;
};

model::Quantity Q(const std::string& text) { return *model::Quantity::Parse(text); }

Setup MakeSetup(int nodes, int pods, unsigned seed) {
  std::mt19937 rng(seed);
  Setup setup;
  const auto& types = Catalog::Builtin().types();
  for (const auto& type : types) {
    model::MachinePool pool;
    pool.name = "mp-" + type.name;
    for (char& c : pool.name) c = c == '.' ? '-' : c;
    pool.instance_type = type.name;
    pool.capacity_type = type.gpu.count > 0 && type.spot_price_micros > 0
                             ? model::CapacityType::kSpot
                             : model::CapacityType::kOnDemand;
    pool.max_replicas = 400;
    model::ApplyDefaultTaints(type, pool);
    setup.pools.push_back(pool);
  }
  for (int i = 0; i < nodes; ++i) {
    const model::MachinePool& pool = setup.pools[size_t(i) % setup.pools.size()];
    setup.snapshot.nodes.push_back(TemplateNode(pool, *Catalog::Builtin().Find(pool.instance_type),
                                                "existing-" + std::to_string(i)));
  }
  std::vector<std::string> products;
  for (const auto& type : types) {
    if (type.gpu.count > 0) products.push_back(type.gpu.product);
  }
  std::uniform_int_distribution<int> pct(1, 100);
  for (int i = 0; i < pods; ++i) {
    model::PodScheduling pod;
    pod.name = "pod-" + std::to_string(i);
    pod.namespace_ = "default";
    if (pct(rng) <= 40) {
      pod.requests["cpu"] = model::Quantity::FromUnits(1 + rng() % 8);
      pod.requests["memory"] = Q(std::to_string(2 << (rng() % 5)) + "Gi");
    } else {
      const int gpu_options[] = {1, 1, 1, 2, 4, 8};
      int gpus = gpu_options[rng() % 6];
      pod.requests["nvidia.com/gpu"] = model::Quantity::FromUnits(gpus);
      pod.requests["cpu"] = model::Quantity::FromUnits(2 * gpus);
      pod.requests["memory"] = Q(std::to_string(8 * gpus) + "Gi");
      pod.tolerations.push_back({"nvidia.com/gpu", model::TolerationOperator::kExists, "", {}, {}});
      pod.tolerations.push_back({"spot", model::TolerationOperator::kExists, "", {}, {}});
      if (pct(rng) <= 33) {
        pod.node_selector["nvidia.com/gpu.product"] = products[rng() % products.size()];
      }
      if (pct(rng) <= 3) pod.labels[scheduler::kGangLabel] = "gang-" + std::to_string(i / 4);
    }
    setup.snapshot.pods.push_back(std::move(pod));
  }
  return setup;
}

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

// Problems with the plan ("" = none).
std::string Validate(const Setup& setup, const AutoscaleResult& r) {
  std::set<std::string> nodes;
  for (const auto& n : setup.snapshot.nodes) nodes.insert(n.name);
  std::set<std::string> used;
  for (const auto& b : r.cycle.bindings) used.insert(b.node);
  std::map<std::string, int32_t> max;
  for (const auto& p : setup.pools) max[p.name] = p.max_replicas;
  for (const auto& up : r.scale_up) {
    if (up.target > max[up.machine_pool]) return up.machine_pool + " above max_replicas";
    for (const auto& n : up.nodes) {
      nodes.insert(n);
      if (!used.contains(n)) return "added node " + n + " got no pod";
    }
  }
  for (const auto& b : r.cycle.bindings) {
    if (!nodes.contains(b.node)) return "placement on unknown node " + b.node;
  }
  return "";
}

int Run(int nodes, int pods, unsigned seed, bool quick) {
  Setup setup = MakeSetup(nodes, pods, seed);
  auto wall0 = std::chrono::steady_clock::now();
  double cpu0 = CpuSeconds();
  auto result = Simulate(setup.snapshot, setup.pools, Catalog::Builtin(), {});
  double cpu = CpuSeconds() - cpu0;
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  if (!result.ok()) {
    std::fprintf(stderr, "simulate: %s\n", result.status().ToString().c_str());
    return 1;
  }
  int added = 0;
  for (const auto& up : result->scale_up) added += up.target - up.current;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf(
      "nodes=%d pods=%d pools=%zu placed=%zu pending=%zu added_nodes=%d scale_up_pools=%zu "
      "removable=%zu hourly=%s plan_wall=%.3fs plan_cpu=%.3fs peak_rss=%ldMiB\n",
      nodes, pods, setup.pools.size(), result->cycle.bindings.size(),
      result->cycle.unschedulable.size(), added, result->scale_up.size(), result->scale_down.size(),
      AutoscaleResultToJson(*result)["cost"]["hourly"].get<std::string>().c_str(), wall, cpu,
      usage.ru_maxrss / 1024);
  // Why pods stay pending, most common first (the reason text up to the first number).
  std::map<std::string, int> reasons;
  for (const auto& n : result->not_scaled) reasons[n.reason.substr(0, 160)]++;
  std::vector<std::pair<int, std::string>> top;
  for (const auto& [reason, count] : reasons) top.push_back({count, reason});
  std::sort(top.rbegin(), top.rend());
  for (size_t i = 0; i < top.size() && i < 3; ++i) {
    std::printf("  pending x%d: %s\n", top[i].first, top[i].second.c_str());
  }
  if (!quick) return 0;
  std::string problem = Validate(setup, *result);
  auto again = Simulate(setup.snapshot, setup.pools, Catalog::Builtin(), {});
  if (problem.empty() &&
      AutoscaleResultToJson(*again).dump() != AutoscaleResultToJson(*result).dump()) {
    problem = "same input gave another plan";
  }
  if (problem.empty() && added == 0) problem = "the quick run should add nodes";
  if (!problem.empty()) {
    std::fprintf(stderr, "invalid plan: %s\n", problem.c_str());
    return 1;
  }
  std::printf("plan valid\n");
  return 0;
}

}  // namespace
}  // namespace gpupool::autoscaler

int main(int argc, char** argv) {
  int nodes = 1000, pods = 10000;
  unsigned seed = 1;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    auto next = [&]() { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
    if (std::strcmp(argv[i], "--nodes") == 0) {
      nodes = next();
    } else if (std::strcmp(argv[i], "--pods") == 0) {
      pods = next();
    } else if (std::strcmp(argv[i], "--seed") == 0) {
      seed = static_cast<unsigned>(next());
    } else if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
      nodes = 60;
      pods = 600;
    } else {
      std::fprintf(stderr, "usage: autoscaler_bench [--nodes N] [--pods P] [--seed S] [--quick]\n");
      return 2;
    }
  }
  return gpupool::autoscaler::Run(nodes, pods, seed, quick);
}
