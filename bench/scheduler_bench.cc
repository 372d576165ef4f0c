// Scheduler benchmark (custom main, no timing assertions).
//
//   scheduler_bench [--nodes N] [--pods P] [--policy fgd|gpu-packing|best-fit] [--seed S]
//                   [--percentage 0..100]   (percentage_of_nodes_to_score; 0 = adaptive)
//   scheduler_bench --scaling          # 1k, 10k, 50k nodes with the same pending load
//   scheduler_bench --openb DIR        # placement quality on the openb trace, three policies
//   scheduler_bench --quick            # small run that validates every decision (for ctest)
//
// Synthetic cluster: nodes of mixed GPU types in 8 node pools, GPU nodes half tainted
// nvidia.com/gpu=true:NoSchedule, some PreferNoSchedule and dedicated NoExecute taints, 5%
// cordoned. 64 projects under 8 departments with deserved GPU quota in some pools. Pending pods
// with queue, 1-2 node pools, tolerations, nodeSelector on the GPU product for a third, whole
// and fractional GPUs, a few gangs. Reports pods decided per second (all pods / cycle time),
// p50/p99 time per decision (one job), and peak RSS (getrusage).

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "model/input_file.h"
#include "model/match.h"
#include "model/node_import.h"
#include "scheduler/scheduler.h"

namespace gpupool::scheduler {
namespace {

struct GpuType {
  const char* product;
  int gpus;
  int cpu;
  int memory_gi;
};
const GpuType kTypes[] = {{"NVIDIA-H100-80GB", 8, 192, 2048},
                          {"NVIDIA-A100-80GB", 8, 128, 1024},
                          {"NVIDIA-A100-40GB", 8, 96, 768},
                          {"NVIDIA-L40S", 4, 64, 512},
                          {"NVIDIA-V100", 4, 48, 384},
                          {"Tesla-T4", 1, 16, 64},
                          {"", 0, 64, 256}};
constexpr int kNumTypes = 7;
constexpr int kPools = 8;

model::Quantity Q(const std::string& text) { return *model::Quantity::Parse(text); }

model::Node MakeNode(int i, std::mt19937& rng) {
  std::uniform_int_distribution<int> pct(1, 100);
  const GpuType& t = kTypes[i % kNumTypes];
  model::Node n;
  n.name = "node-" + std::to_string(100000 + i);
  n.labels["kubernetes.io/hostname"] = n.name;
  n.labels["node-pool"] = "pool-" + std::to_string((i / kNumTypes) % kPools);
  n.labels["topology.kubernetes.io/zone"] = "zone-" + std::to_string(i % 3);
  if (t.gpus > 0) n.labels["nvidia.com/gpu.product"] = t.product;
  n.allocatable["cpu"] = Q(std::to_string(t.cpu));
  n.allocatable["memory"] = Q(std::to_string(t.memory_gi) + "Gi");
  n.allocatable["pods"] = Q("110");
  n.allocatable["ephemeral-storage"] = Q("1Ti");
  if (t.gpus > 0) n.allocatable["nvidia.com/gpu"] = Q(std::to_string(t.gpus));
  if (t.gpus > 0 && pct(rng) <= 50) {
    n.taints.push_back({"nvidia.com/gpu", "true", model::TaintEffect::kNoSchedule});
  }
  if (pct(rng) <= 10) n.taints.push_back({"spot", "true", model::TaintEffect::kPreferNoSchedule});
  if (pct(rng) <= 3) n.taints.push_back({"dedicated", "infra", model::TaintEffect::kNoExecute});
  n.unschedulable = pct(rng) <= 5;
  n.capacity = n.allocatable;
  return n;
}

ClusterSnapshot MakeSnapshot(int nodes, int pods, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pct(1, 100);
  ClusterSnapshot s;
  for (int p = 0; p < kPools; ++p) {
    model::NodePool pool;
    pool.name = "pool-" + std::to_string(p);
    pool.label_key = "node-pool";
    pool.label_value = pool.name;
    pool.topology_keys = {"topology.kubernetes.io/zone"};
    s.node_pools.push_back(pool);
  }
  for (int i = 0; i < nodes; ++i) s.nodes.push_back(MakeNode(i, rng));
  // Deserved: each department owns one pool (a fraction of it spread over its 8 projects).
  const int64_t gpus_per_pool = int64_t{nodes} * 33 / 7 / kPools;  // average 33 GPUs per 7 nodes
  for (int d = 0; d < 8; ++d) {
    model::Queue dept;
    dept.name = "dept-" + std::to_string(d);
    dept.resources["pool-" + std::to_string(d)][model::QuotaResource::kGpu].deserved_milli =
        gpus_per_pool * 1000 * 8 / 10;
    s.queues.push_back(dept);
    for (int p = 0; p < 8; ++p) {
      model::Queue q;
      q.name = dept.name + "-proj-" + std::to_string(p);
      q.parent = dept.name;
      auto& gpu = q.resources["pool-" + std::to_string(d)][model::QuotaResource::kGpu];
      gpu.deserved_milli = gpus_per_pool * 1000 / 10;
      gpu.over_quota_weight = 1 + p % 3;
      if (p == 7) gpu.limit_milli = gpus_per_pool * 1000 / 4;
      s.queues.push_back(q);
    }
  }
  int gang_id = 0;
  for (int i = 0; i < pods;) {
    const int queue = static_cast<int>(rng() % 64);
    const int dept = queue / 8;
    std::string pools = "pool-" + std::to_string(pct(rng) <= 70 ? dept : rng() % kPools);
    if (pct(rng) <= 40) pools += ",pool-" + std::to_string(rng() % kPools);
    const int shape = pct(rng);
    const GpuType& want = kTypes[rng() % (kNumTypes - 1)];
    const bool gang = pct(rng) <= 3;
    const int members = gang ? 2 + static_cast<int>(rng() % 3) : 1;
    const std::string gang_name = "gang-" + std::to_string(gang_id++);
    for (int m = 0; m < members && i < pods; ++m, ++i) {
      model::PodScheduling pod;
      pod.name = "pod-" + std::to_string(i);
      pod.namespace_ = "default";
      pod.labels["gpupool.io/queue"] =
          "dept-" + std::to_string(dept) + "-proj-" + std::to_string(queue % 8);
      pod.labels["gpupool.io/node-pool"] = pools;
      if (gang) pod.labels["gpupool.io/gang"] = gang_name;
      int gpus = 0;
      if (shape <= 15) {
        pod.requests["cpu"] = Q(std::to_string(1 + rng() % 8));
        pod.requests["memory"] = Q(std::to_string(2 + rng() % 30) + "Gi");
      } else if (shape <= 35) {
        pod.annotations["gpupool.io/gpu-fraction"] = pct(rng) <= 50 ? "0.5" : "0.25";
        pod.requests["cpu"] = Q("2");
        pod.requests["memory"] = Q("8Gi");
      } else {
        gpus = shape <= 80 ? 1 : shape <= 92 ? 2 : shape <= 98 ? 4 : 8;
        pod.requests["nvidia.com/gpu"] = Q(std::to_string(gpus));
        pod.requests["cpu"] = Q(std::to_string(4 * gpus));
        pod.requests["memory"] = Q(std::to_string(32 * gpus) + "Gi");
      }
      if (gpus > 0 || shape > 15) {
        pod.tolerations.push_back({"nvidia.com/gpu", model::TolerationOperator::kExists, "",
                                   model::TaintEffect::kNoSchedule, std::nullopt});
        if (pct(rng) <= 33) pod.node_selector["nvidia.com/gpu.product"] = want.product;
      }
      if (pct(rng) <= 10) {
        pod.tolerations.push_back(
            {"dedicated", model::TolerationOperator::kEqual, "infra", std::nullopt, std::nullopt});
      }
      pod.priority = pct(rng) <= 10 ? 100 : 0;
      s.pods.push_back(std::move(pod));
    }
  }
  return s;
}

long PeakRssKb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// Checks every binding against the filters and node capacity; returns the number of problems.
int Validate(const ClusterSnapshot& s, const CycleResult& r) {
  std::map<std::string, const model::Node*> nodes;
  for (const auto& n : s.nodes) nodes[n.name] = &n;
  std::map<std::string, const model::PodScheduling*> pods;
  for (const auto& p : s.pods) pods[p.name] = &p;
  std::map<std::string, std::map<std::string, int64_t>> used;
  int problems = 0;
  for (const Binding& b : r.bindings) {
    const model::PodScheduling& pod = *pods.at(b.pod);
    const model::Node& node = *nodes.at(b.node);
    if (model::FindUntoleratedTaintPtr(node.taints, pod.tolerations) != nullptr) ++problems;
    if (!model::MatchesNodeSelectorAndAffinity(pod, node)) ++problems;
    if (node.unschedulable) ++problems;
    for (const auto& [res, q] : pod.requests) used[b.node][res] += q.MilliValue();
    auto f = pod.annotations.find("gpupool.io/gpu-fraction");
    if (f != pod.annotations.end()) {
      used[b.node]["nvidia.com/gpu"] += model::Quantity::Parse(f->second)->MilliValue();
    }
  }
  for (const auto& [node, res] : used) {
    for (const auto& [name, milli] : res) {
      auto it = nodes.at(node)->allocatable.find(name);
      if (it == nodes.at(node)->allocatable.end() || milli > it->second.MilliValue()) ++problems;
    }
  }
  return problems + static_cast<int>(r.bindings.size() + r.unschedulable.size() != s.pods.size());
}

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

struct RunStats {
  double cpu_seconds = 0;
  double seconds = 0;
  size_t placed = 0;
  size_t pending = 0;
  int64_t p50_ns = 0, p99_ns = 0;
  uint64_t digest = 0;
};

// FNV-1a over every decision (bindings in order with devices, pending reasons, evictions): equal
// digests across builds show that an optimization changed no decision.
uint64_t Digest(const CycleResult& r) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::string_view text) {
    for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  };
  for (const Binding& b : r.bindings) {
    mix(b.pod);
    mix(b.node);
    mix(b.node_pool);
    mix(std::to_string(b.gpu_device));
  }
  for (const PendingPod& p : r.unschedulable) {
    mix(p.pod);
    mix(p.reason);
  }
  for (const Eviction& e : r.evictions) {
    mix(e.pod);
    mix(e.node);
  }
  return h;
}

RunStats RunOnce(const ClusterSnapshot& s, SchedulerOptions options, CycleResult* out = nullptr) {
  options.record_decision_latency = true;
  const double cpu_start = CpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  CycleResult r = Scheduler(options).RunCycle(s);
  RunStats stats;
  stats.cpu_seconds = CpuSeconds() - cpu_start;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats.placed = r.bindings.size();
  stats.pending = r.unschedulable.size();
  stats.digest = Digest(r);
  std::vector<int64_t> lat = r.decision_latency_ns;
  std::sort(lat.begin(), lat.end());
  if (!lat.empty()) {
    stats.p50_ns = lat[lat.size() / 2];
    stats.p99_ns = lat[std::min(lat.size() - 1, lat.size() * 99 / 100)];
  }
  if (out != nullptr) *out = std::move(r);
  return stats;
}

void PrintRun(int nodes, int pods, const RunStats& st) {
  std::printf(
      "nodes=%d pods=%d placed=%zu pending=%zu wall=%.3fs cpu=%.3fs pods/s(wall)=%.0f "
      "pods/s(cpu)=%.0f p50=%.1fus p99=%.1fus peak_rss=%.0fMiB digest=%016llx\n",
      nodes, pods, st.placed, st.pending, st.seconds, st.cpu_seconds, pods / st.seconds,
      pods / st.cpu_seconds, st.p50_ns / 1000.0, st.p99_ns / 1000.0, PeakRssKb() / 1024.0,
      static_cast<unsigned long long>(st.digest));
}

int RunOpenb(const std::string& dir, const std::vector<PlacementPolicy>& policies) {
  Result<std::string> node_text = model::ReadFile(dir + "/openb_node_list_all_node.csv");
  Result<std::string> pod_text = model::ReadFile(dir + "/openb_pod_list_default.csv");
  if (!node_text.ok() || !pod_text.ok()) {
    std::fprintf(stderr, "cannot read openb files in %s\n", dir.c_str());
    return 1;
  }
  Result<std::vector<model::Node>> nodes = model::ParseOpenbNodeCsv(*node_text, "nodes.csv");
  if (!nodes.ok()) {
    std::fprintf(stderr, "%s\n", nodes.status().ToString().c_str());
    return 1;
  }
  ClusterSnapshot s;
  s.nodes = *nodes;
  int64_t total_gpu_milli = 0;
  for (const auto& n : s.nodes) {
    auto it = n.allocatable.find("nvidia.com/gpu");
    if (it != n.allocatable.end()) total_gpu_milli += it->second.Value() * 1000;
  }
  // name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,...
  struct Row {
    int64_t created;
    model::PodScheduling pod;
    int64_t gpu_milli;
  };
  std::vector<Row> rows;
  size_t pos = pod_text->find('\n') + 1;
  while (pos < pod_text->size()) {
    size_t end = pod_text->find('\n', pos);
    if (end == std::string::npos) end = pod_text->size();
    std::string line = pod_text->substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    std::vector<std::string> f;
    size_t a = 0;
    while (true) {
      size_t b = line.find(',', a);
      f.push_back(line.substr(a, b == std::string::npos ? std::string::npos : b - a));
      if (b == std::string::npos) break;
      a = b + 1;
    }
    Row row;
    row.pod.name = f[0];
    row.pod.namespace_ = "default";
    row.pod.requests["cpu"] = model::Quantity::FromMilli(std::stoll(f[1]));
    row.pod.requests["memory"] = model::Quantity::FromUnits(std::stoll(f[2]) * 1024 * 1024);
    const int num_gpu = std::stoi(f[3]);
    const int gpu_milli = std::stoi(f[4]);
    if (num_gpu == 1 && gpu_milli > 0 && gpu_milli < 1000) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "0.%03d", gpu_milli);
      row.pod.annotations["gpupool.io/gpu-fraction"] = buf;
      row.gpu_milli = gpu_milli;
    } else if (num_gpu > 0) {
      row.pod.requests["nvidia.com/gpu"] = model::Quantity::FromUnits(num_gpu);
      row.gpu_milli = int64_t{num_gpu} * 1000;
    } else {
      row.gpu_milli = 0;
    }
    row.created = std::stoll(f[8]);
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.created < b.created; });
  int64_t arrived_gpu = 0;
  std::map<std::string, int64_t> gpu_of;
  for (const Row& r : rows) {
    s.pods.push_back(r.pod);
    arrived_gpu += r.gpu_milli;
    gpu_of[r.pod.name] = r.gpu_milli;
  }
  std::printf("openb: %zu nodes, %lld GPUs, %zu pods requesting %.1f GPUs (%.1f%% of capacity)\n",
              s.nodes.size(), static_cast<long long>(total_gpu_milli / 1000), s.pods.size(),
              arrived_gpu / 1000.0, 100.0 * arrived_gpu / total_gpu_milli);
  for (PlacementPolicy policy : policies) {
    SchedulerOptions options;
    options.policy = policy;
    options.percentage_of_nodes_to_score = 100;
    CycleResult r;
    RunStats st = RunOnce(s, options, &r);
    int64_t allocated = 0;
    for (const Binding& b : r.bindings) allocated += gpu_of[b.pod];
    // First failure of a GPU pod, in arrival order: the allocation ratio at that point.
    std::set<std::string> failed;
    for (const PendingPod& p : r.unschedulable) failed.insert(p.pod);
    int64_t before_first_failure = 0;
    for (const Row& row : rows) {
      if (row.gpu_milli > 0 && failed.count(row.pod.name)) break;
      if (!failed.count(row.pod.name)) before_first_failure += row.gpu_milli;
    }
    std::printf(
        "policy=%-11s placed=%zu unplaced=%zu gpu_alloc_ratio=%.2f%% "
        "gpu_alloc_at_first_gpu_failure=%.2f%% unallocated_gpus=%.1f wall=%.2fs cpu=%.2fs "
        "invalid=%d\n",
        std::string(PlacementPolicyName(policy)).c_str(), st.placed, st.pending,
        100.0 * allocated / total_gpu_milli, 100.0 * before_first_failure / total_gpu_milli,
        (total_gpu_milli - allocated) / 1000.0, st.seconds, st.cpu_seconds, Validate(s, r));
  }
  return 0;
}

int Main(int argc, char** argv) {
  int nodes = 10000, pods = 100000;
  uint32_t seed = 42;
  bool quick = false, scaling = false, policy_set = false;
  std::string openb;
  SchedulerOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--nodes") {
      nodes = std::stoi(value());
    } else if (arg == "--pods") {
      pods = std::stoi(value());
    } else if (arg == "--seed") {
      seed = static_cast<uint32_t>(std::stoul(value()));
    } else if (arg == "--policy") {
      Result<PlacementPolicy> p = ParsePlacementPolicy(value());
      if (!p.ok()) {
        std::fprintf(stderr, "%s\n", p.status().message().c_str());
        return 2;
      }
      options.policy = *p;
      policy_set = true;
    } else if (arg == "--percentage") {
      options.percentage_of_nodes_to_score = std::stoi(value());
    } else if (arg == "--quick") {
      quick = true;
    } else if (arg == "--scaling") {
      scaling = true;
    } else if (arg == "--openb") {
      openb = value();
    } else {
      std::fprintf(stderr, "unknown flag %s\n", arg.c_str());
      return 2;
    }
  }
  if (!openb.empty()) {
    if (policy_set) return RunOpenb(openb, {options.policy});
    return RunOpenb(
        openb, {PlacementPolicy::kBestFit, PlacementPolicy::kGpuPacking, PlacementPolicy::kFgd});
  }
  if (quick) {
    nodes = 300;
    pods = 3000;
  }
  std::vector<int> sizes = scaling ? std::vector<int>{1000, 10000, 50000} : std::vector<int>{nodes};
  std::printf("policy=%s\n", std::string(PlacementPolicyName(options.policy)).c_str());
  for (int n : sizes) {
    ClusterSnapshot s = MakeSnapshot(n, pods, seed);
    CycleResult r;
    RunStats st = RunOnce(s, options, &r);
    PrintRun(n, pods, st);
    const int problems = Validate(s, r);
    if (problems != 0) {
      std::fprintf(stderr, "INVALID: %d problems in the decisions\n", problems);
      return 1;
    }
    if (st.placed == 0) {
      std::fprintf(stderr, "INVALID: nothing placed\n");
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace gpupool::scheduler

int main(int argc, char** argv) { return gpupool::scheduler::Main(argc, argv); }
