#include "replay/protocol.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>
#include <unordered_set>

#include "common/table.h"
#include "replay/cluster.h"
#include "replay/output.h"

namespace gpupool::replay {
namespace {

using Json = nlohmann::ordered_json;

// Uniform in [0, n) without modulo bias, from the generator's raw output (portable, unlike the
// standard distributions).
uint64_t Uniform(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

// Python's round(): half to even (the simulator's analysis rounds with it).
double RoundHalfEven(double x, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::nearbyint(x * scale) / scale;
}

// Allocation (percent) at each arrival of one seed's sequence.
struct Curve {
  std::vector<double> arrived;    // percent
  std::vector<double> allocated;  // percent
};

// The simulator's discretisation: mean allocation over the arrivals whose arrived demand rounds
// to `x` percent, else over those within one point; nullopt when there are none.
std::optional<double> At(const Curve& c, int x) {
  double sum = 0;
  int n = 0;
  for (int pass = 0; pass < 2 && n == 0; ++pass) {
    for (size_t i = 0; i < c.arrived.size(); ++i) {
      const double r = RoundHalfEven(c.arrived[i], 0);
      const bool in = pass == 0 ? r == x : (r >= x - 1 && r <= x + 1);
      if (in) {
        sum += RoundHalfEven(c.allocated[i], 2);
        ++n;
      }
    }
  }
  if (n == 0) return std::nullopt;
  return RoundHalfEven(sum / n, 2);
}

}  // namespace

Status Validate(const ProtocolOptions& o) {
  if (o.policies.empty()) return InvalidArgumentError("--policy: expected at least one policy");
  if (!(o.load_percent > 0 && o.load_percent <= 1000)) {
    return InvalidArgumentError("--load: expected a percentage above 0 and at most 1000");
  }
  if (o.seeds < 1 || o.seeds > 1000) return InvalidArgumentError("--seeds: expected 1 to 1000");
  for (int x : o.report_at) {
    if (x < 0 || x > o.load_percent) {
      return InvalidArgumentError("--at: " + std::to_string(x) +
                                  " is outside 0 .. the --load percentage");
    }
  }
  return OkStatus();
}

const std::vector<PaperResult>& PaperResults() {
  static const std::vector<PaperResult> kResults = {
      {"Random", "random", 98, 86.08},
      {"Random", "random", 130, 87.47},
      {"DotProd", "dot-product", 98, 90.61},
      {"DotProd", "dot-product", 130, 90.85},
      {"GpuClustering", "", 98, 91.63},
      {"GpuClustering", "", 130, 91.88},
      {"GpuPacking", "gpu-packing", 98, 91.76},
      {"GpuPacking", "gpu-packing", 130, 92.00},
      {"BestFit", "best-fit", 98, 92.85},
      {"BestFit", "best-fit", 130, 93.08},
      {"FGD", "fgd", 98, 95.21},
      {"FGD", "fgd", 130, 95.39},
  };
  return kResults;
}

namespace {

// One trace pod as a single pending pod of the default queue, named `name`.
model::PodScheduling SinglePod(const TraceJob& job, std::string name) {
  TraceJob single = job;
  single.name = std::move(name);
  single.queue.clear();
  single.node_pools.clear();
  single.pods = 1;
  single.gang_min = 0;
  return PodsOfJob(single).front();
}

// The nodes renamed "NNNN-name" by a permutation drawn from the seed, as the simulator names
// them (simulator.go): the scheduler breaks ties between equal scores by node name, so the
// ties follow a random node order per seed, as in the paper's runs, instead of the same
// alphabetical order in every seed. Its own generator (seeded apart from the arrivals'), so the
// arrivals stay those of the seed.
std::vector<model::Node> NodesInSeedOrder(const std::vector<model::Node>& nodes, uint64_t seed) {
  std::vector<model::Node> named = nodes;
  std::sort(named.begin(), named.end(),
            [](const model::Node& a, const model::Node& b) { return a.name < b.name; });
  std::vector<size_t> rank(named.size());
  for (size_t i = 0; i < rank.size(); ++i) rank[i] = i;
  std::mt19937_64 rng(seed ^ 0x6e6f646573ULL);  // "nodes"
  for (size_t i = rank.size(); i > 1; --i) std::swap(rank[i - 1], rank[Uniform(rng, i)]);
  for (size_t i = 0; i < named.size(); ++i) {
    char prefix[24];
    std::snprintf(prefix, sizeof prefix, "%04zu-", rank[i]);
    named[i].name = prefix + named[i].name;
  }
  return named;
}

// The allocation curve of one seed: the scheduler places the arrivals in one cycle, in their
// order, each once (no reclaim, no preemption, every node scored).
Curve PlaceSeed(const scheduler::Scheduler& scheduler, std::vector<model::Node> nodes,
                Arrivals arrivals, double capacity_milli, ProtocolRun& run) {
  scheduler::ClusterSnapshot snapshot;
  snapshot.nodes = std::move(nodes);  // the seed's own copy (NodesInSeedOrder)
  snapshot.pods = std::move(arrivals.pods);
  const std::clock_t start = std::clock();
  const scheduler::CycleResult r = scheduler.RunCycle(snapshot);
  run.cycle_cpu_seconds += static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  std::unordered_set<std::string> placed;
  for (const scheduler::Binding& b : r.bindings) placed.insert(b.pod);
  Curve c;
  int64_t arrived = 0, allocated = 0;
  for (size_t i = 0; i < snapshot.pods.size(); ++i) {
    arrived += arrivals.gpu_milli[i];
    if (placed.contains(snapshot.pods[i].name)) allocated += arrivals.gpu_milli[i];
    c.arrived.push_back(100.0 * static_cast<double>(arrived) / capacity_milli);
    c.allocated.push_back(100.0 * static_cast<double>(allocated) / capacity_milli);
  }
  run.pods_arrived.push_back(static_cast<int64_t>(snapshot.pods.size()));
  run.pods_placed.push_back(static_cast<int64_t>(placed.size()));
  return c;
}

// Mean over the seeds of the allocation at `x` percent arrived (seeds that never reach it left
// out); each seed's value goes to `per_seed` when given.
std::optional<double> MeanAt(const std::vector<Curve>& curves, int x,
                             std::vector<double>* per_seed) {
  double sum = 0;
  int n = 0;
  for (const Curve& c : curves) {
    if (std::optional<double> v = At(c, x)) {
      sum += *v;
      ++n;
      if (per_seed) per_seed->push_back(*v);
    }
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

// The trace's GPU demand in milli-GPUs; an error for a gang (the protocol places single pods).
Result<int64_t> TraceGpuMilli(const Trace& trace) {
  if (trace.jobs.empty()) return InvalidArgumentError(trace.file + ": no pods to place");
  int64_t milli = 0;
  for (const TraceJob& j : trace.jobs) {
    if (j.pods != 1) {
      return InvalidArgumentError(trace.file + ":" + std::to_string(j.line) + ": job " + j.name +
                                  " has " + std::to_string(j.pods) +
                                  " pods; the FGD protocol places single pods");
    }
    milli += j.GpuMilliPerPod();
  }
  return milli;
}

}  // namespace

Arrivals ProtocolArrivals(const Trace& trace, int64_t capacity_milli, double load_percent,
                          uint64_t seed) {
  std::vector<const TraceJob*> jobs;
  for (const TraceJob& j : trace.jobs) jobs.push_back(&j);
  // By name first, so that the sequence depends on the seed and the pods, not the file's order.
  std::sort(jobs.begin(), jobs.end(), [](auto* a, auto* b) { return a->name < b->name; });
  std::mt19937_64 rng(seed);
  for (size_t i = jobs.size(); i > 1; --i) std::swap(jobs[i - 1], jobs[Uniform(rng, i)]);
  Arrivals out;
  int64_t total = 0;
  for (const TraceJob* j : jobs) {
    out.pods.push_back(SinglePod(*j, j->name));
    out.gpu_milli.push_back(j->GpuMilliPerPod());
    total += j->GpuMilliPerPod();
  }
  const double target = load_percent / 100.0 * static_cast<double>(capacity_milli);
  for (int64_t i = 0; !jobs.empty(); ++i) {
    const TraceJob* j = jobs[Uniform(rng, jobs.size())];
    // The simulator stops at the first draw whose GPUs per device (not its total: its
    // tuneUpPods compares MilliGpu) would pass the target; kept for the same sequences.
    const int64_t per_device = j->gpu_milli > 0 ? j->gpu_milli : (j->gpus > 0 ? 1000 : 0);
    if (static_cast<double>(total + per_device) > target) break;
    out.pods.push_back(SinglePod(*j, j->name + "-tuned-" + std::to_string(i)));
    out.gpu_milli.push_back(j->GpuMilliPerPod());
    total += j->GpuMilliPerPod();
  }
  return out;
}

Result<ProtocolResult> RunProtocol(const std::vector<model::Node>& nodes, const Trace& trace,
                                   const ProtocolOptions& options,
                                   const std::function<void(int, int)>& progress) {
  RETURN_IF_ERROR(Validate(options));
  ASSIGN_OR_RETURN(const int64_t trace_milli, TraceGpuMilli(trace));
  ProtocolResult result;
  result.options = options;
  result.nodes = static_cast<int>(nodes.size());
  for (const model::Node& n : nodes) {
    auto gpu = n.allocatable.find(scheduler::kGpuResource);
    if (gpu != n.allocatable.end()) result.gpu_capacity_milli += gpu->second.Value() * 1000;
  }
  if (result.gpu_capacity_milli == 0) {
    return InvalidArgumentError("the FGD protocol needs nodes with GPUs");
  }
  result.trace_pods = static_cast<int64_t>(trace.jobs.size());
  const double capacity = static_cast<double>(result.gpu_capacity_milli);
  result.trace_gpu_percent = 100.0 * static_cast<double>(trace_milli) / capacity;
  const int total_steps = static_cast<int>(options.policies.size()) * options.seeds;
  int step = 0;
  for (scheduler::PlacementPolicy policy : options.policies) {
    ProtocolRun run;
    run.policy = std::string(scheduler::PlacementPolicyName(policy));
    scheduler::SchedulerOptions so;
    so.policy = policy;
    so.percentage_of_nodes_to_score = 100;
    so.enable_reclaim = false;
    so.enable_preempt = false;
    if (options.fgd_task_types > 0) so.fgd_task_types = options.fgd_task_types;
    const scheduler::Scheduler scheduler(so);
    std::vector<Curve> curves;
    for (int s = 0; s < options.seeds; ++s) {
      Arrivals arrivals = ProtocolArrivals(trace, result.gpu_capacity_milli, options.load_percent,
                                           options.first_seed + static_cast<uint64_t>(s));
      const uint64_t seed = options.first_seed + static_cast<uint64_t>(s);
      curves.push_back(
          PlaceSeed(scheduler, NodesInSeedOrder(nodes, seed), std::move(arrivals), capacity, run));
      if (progress) progress(++step, total_steps);
    }
    for (int x : options.report_at) {
      ProtocolPoint p;
      p.arrived_percent = x;
      p.allocated_percent = MeanAt(curves, x, &p.per_seed).value_or(0);
      p.unallocated_gpus = capacity / 1000.0 * (1 - p.allocated_percent / 100.0);
      run.points.push_back(std::move(p));
    }
    for (int x = 0; x <= static_cast<int>(options.load_percent); ++x) {
      run.curve.push_back(MeanAt(curves, x, nullptr));
    }
    result.runs.push_back(std::move(run));
  }
  return result;
}

Json ProtocolToJson(const ProtocolResult& r) {
  Json runs = Json::array();
  for (const ProtocolRun& run : r.runs) {
    Json points = Json::array();
    for (const ProtocolPoint& p : run.points) {
      Json per_seed = Json::array();
      for (double v : p.per_seed) per_seed.push_back(Round6(v));
      points.push_back(Json{{"arrivedPercent", p.arrived_percent},
                            {"allocatedPercent", Round6(p.allocated_percent)},
                            {"unallocatedGpus", Round6(p.unallocated_gpus)},
                            {"perSeed", per_seed}});
    }
    Json curve = Json::array();
    for (const auto& v : run.curve) curve.push_back(v ? Json(Round6(*v)) : Json(nullptr));
    runs.push_back(Json{{"policy", run.policy},
                        {"points", points},
                        {"curve", curve},
                        {"podsArrived", run.pods_arrived},
                        {"podsPlaced", run.pods_placed}});
  }
  Json paper = Json::array();
  for (const PaperResult& p : PaperResults()) {
    paper.push_back(Json{{"paperName", p.paper_name},
                         {"policy", p.policy.empty() ? Json(nullptr) : Json(p.policy)},
                         {"arrivedPercent", p.arrived_percent},
                         {"allocatedPercent", p.allocated_percent}});
  }
  return Json{{"protocol", "fgd"},
              {"cluster", Json{{"nodes", r.nodes},
                               {"gpus", Round6(static_cast<double>(r.gpu_capacity_milli) / 1000)},
                               {"tracePods", r.trace_pods},
                               {"traceGpuPercent", Round6(r.trace_gpu_percent)}}},
              {"options", Json{{"load", r.options.load_percent},
                               {"seeds", r.options.seeds},
                               {"firstSeed", r.options.first_seed},
                               {"at", r.options.report_at}}},
              {"runs", runs},
              {"paper", paper}};
}

std::string ProtocolToTable(const ProtocolResult& r) {
  std::vector<std::string> header = {"POLICY"};
  for (int x : r.options.report_at) {
    const std::string at = std::to_string(x) + "%";
    header.push_back("ALLOCATED AT " + at);
    header.emplace_back("UNALLOCATED");
    header.emplace_back("PAPER");
  }
  std::vector<std::vector<std::string>> rows = {header};
  auto percent = [](double v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.2f %%", v);
    return std::string(buf);
  };
  auto paper_at = [](const std::string& policy, int x) -> std::string {
    for (const PaperResult& p : PaperResults()) {
      if (p.policy == policy && p.arrived_percent == x) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%.2f %%", p.allocated_percent);
        return buf;
      }
    }
    return "-";
  };
  for (const ProtocolRun& run : r.runs) {
    std::vector<std::string> row = {run.policy};
    for (const ProtocolPoint& p : run.points) {
      char unallocated[16];
      std::snprintf(unallocated, sizeof unallocated, "%.0f", p.unallocated_gpus);
      row.push_back(percent(p.allocated_percent));
      row.emplace_back(unallocated);
      row.push_back(paper_at(run.policy, p.arrived_percent));
    }
    rows.push_back(std::move(row));
  }
  // The paper's policies that gpupool does not have (or did not run): the paper's figures only.
  std::vector<std::string> shown;
  for (const PaperResult& p : PaperResults()) {
    bool ran = false;
    for (const ProtocolRun& run : r.runs) ran = ran || run.policy == p.policy;
    if (ran || std::find(shown.begin(), shown.end(), p.paper_name) != shown.end()) continue;
    shown.push_back(p.paper_name);
    std::vector<std::string> row = {"(" + p.paper_name + ")"};
    for (int x : r.options.report_at) {
      std::string paper = "-";
      for (const PaperResult& q : PaperResults()) {
        if (q.paper_name == p.paper_name && q.arrived_percent == x)
          paper = percent(q.allocated_percent);
      }
      row.insert(row.end(), {"-", "-", paper});
    }
    rows.push_back(std::move(row));
  }
  char head[256];
  std::snprintf(head, sizeof head,
                "FGD protocol: %d nodes, %.0f GPUs; %lld trace pods (%.2f %% of the GPUs), "
                "inflated to %.0f %%, %d seeds from %llu\n",
                r.nodes, static_cast<double>(r.gpu_capacity_milli) / 1000,
                static_cast<long long>(r.trace_pods), r.trace_gpu_percent, r.options.load_percent,
                r.options.seeds, static_cast<unsigned long long>(r.options.first_seed));
  return head + FormatTable(rows);
}

}  // namespace gpupool::replay
