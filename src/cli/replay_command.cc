#include "cli/replay_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <optional>

#include "autoscaler/autoscaler.h"
#include "cli/commands.h"
#include "common/strings.h"
#include "model/duration.h"
#include "replay/engine.h"
#include "replay/inputs.h"
#include "replay/output.h"
#include "replay/protocol.h"
#include "replay/report.h"
#include "replay/trace.h"

namespace gpupool::cli {
namespace {

// A one-line progress bar on stderr, redrawn at most ten times a second, only on a terminal.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled && isatty(STDERR_FILENO) == 1) {}

  // `now` of `end` simulated milliseconds; or, with a `unit`, steps of that unit.
  void Update(const std::string& label, int64_t now, int64_t end, const char* unit = nullptr) {
    if (!enabled_) return;
    const auto wall = std::chrono::steady_clock::now();
    if (wall - last_ < std::chrono::milliseconds(100)) return;
    last_ = wall;
    const double ratio =
        end > 0 ? std::clamp(static_cast<double>(now) / static_cast<double>(end), 0.0, 1.0) : 0.0;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(ratio * kWidth);
    std::string bar(filled, '#');
    bar.resize(kWidth, '.');
    const std::string done = unit ? std::to_string(now) : model::FormatDuration(now / 1000);
    const std::string all =
        unit ? std::to_string(end) + " " + unit : model::FormatDuration(end / 1000);
    std::fprintf(stderr, "\r%-12s [%s] %3.0f%%  %s of %s   ", label.c_str(), bar.c_str(),
                 ratio * 100, done.c_str(), all.c_str());
    std::fflush(stderr);
  }

  void Done(const std::string& line) {
    if (!enabled_) return;
    std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), line.empty() ? "" : "\n");
    std::fflush(stderr);
  }

 private:
  const bool enabled_;
  std::chrono::steady_clock::time_point last_{};
};

Result<int64_t> DurationMs(const std::string& flag, const std::string& text) {
  Result<int64_t> s = model::ParseDurationSeconds(text);
  if (!s.ok()) return InvalidArgumentError(flag + ": " + s.status().message());
  return *s * 1000;
}

Result<std::optional<int64_t>> OptionalDurationMs(const std::string& flag,
                                                  const std::string& text) {
  if (text.empty()) return std::optional<int64_t>();
  ASSIGN_OR_RETURN(int64_t ms, DurationMs(flag, text));
  return std::optional<int64_t>(ms);
}

Result<std::vector<scheduler::PlacementPolicy>> ParsePolicies(const std::string& text) {
  std::vector<scheduler::PlacementPolicy> policies;
  for (const std::string& part : Split(text, ',')) {
    std::string_view name = Trim(part);
    if (name.empty()) continue;
    Result<scheduler::PlacementPolicy> p = scheduler::ParsePlacementPolicy(name);
    if (!p.ok()) return InvalidArgumentError("--policy: " + p.status().message());
    if (std::find(policies.begin(), policies.end(), *p) != policies.end()) {
      return InvalidArgumentError("--policy: " + std::string(name) + " is named twice");
    }
    policies.push_back(*p);
  }
  if (policies.empty()) return InvalidArgumentError("--policy: expected at least one policy");
  return policies;
}

Result<replay::ReplayOptions> OptionsFrom(const ReplayFlags& f) {
  replay::ReplayOptions o;
  o.scheduler.percentage_of_nodes_to_score = f.percentage;
  ASSIGN_OR_RETURN(o.cycle_period_ms, DurationMs("--period", f.period));
  if (!f.sample.empty()) {
    ASSIGN_OR_RETURN(o.sample_period_ms, DurationMs("--sample", f.sample));
  }
  ASSIGN_OR_RETURN(o.until_ms, OptionalDurationMs("--until", f.until));
  ASSIGN_OR_RETURN(o.queue_timeout_ms, OptionalDurationMs("--queue-timeout", f.queue_timeout));
  ASSIGN_OR_RETURN(o.exec_timeout_ms, OptionalDurationMs("--exec-timeout", f.exec_timeout));
  ASSIGN_OR_RETURN(o.provision_delay_ms, DurationMs("--provision-delay", f.provision_delay));
  ASSIGN_OR_RETURN(o.scale_down_after_ms, DurationMs("--scale-down-after", f.scale_down_after));
  o.seed = f.seed;
  o.spot_interruptions_per_node_hour = f.spot_rate;
  for (const std::string& text : f.interrupts) {
    ASSIGN_OR_RETURN(replay::InterruptionAt at, replay::ParseInterruptionAt(text));
    o.interruptions.push_back(std::move(at));
  }
  return o;
}

double CpuSeconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// --protocol fgd: the trace's pods, inflated to --load percent of the nodes' GPUs, per seed.
Status Protocol(const ReplayFlags& flags, OutputFormat format) {
  if (flags.protocol != "fgd") {
    return InvalidArgumentError("--protocol: expected fgd, got \"" + flags.protocol + "\"");
  }
  replay::ProtocolOptions options;
  ASSIGN_OR_RETURN(
      options.policies,
      ParsePolicies(flags.policies.empty() ? "fgd,gpu-packing,best-fit,dot-product,random"
                                           : flags.policies));
  options.load_percent = flags.load;
  options.seeds = flags.seeds;
  options.first_seed = flags.first_seed;
  options.report_at = flags.at;
  options.fgd_task_types = flags.fgd_task_types;
  RETURN_IF_ERROR(replay::Validate(options));
  ASSIGN_OR_RETURN(scheduler::Scenario scenario, replay::LoadReplayScenario(flags.files));
  ASSIGN_OR_RETURN(replay::Trace trace, replay::LoadTrace(flags.trace, flags.trace_format));
  ProgressBar bar(!flags.no_progress);
  ASSIGN_OR_RETURN(
      replay::ProtocolResult result,
      replay::RunProtocol(scenario.snapshot.nodes, trace, options, [&](int done, int total) {
        bar.Update("fgd protocol", done, total, "seeds");
      }));
  bar.Done("");
  if (format == OutputFormat::kTable) {
    std::cout << replay::ProtocolToTable(result);
  } else {
    std::cout << Render(replay::ProtocolToJson(result), format);
  }
  return OkStatus();
}

Status Replay(const ReplayFlags& flags, OutputFormat format) {
  if (!flags.protocol.empty()) return Protocol(flags, format);
  ASSIGN_OR_RETURN(std::vector<scheduler::PlacementPolicy> policies,
                   ParsePolicies(flags.policies.empty() ? "fgd" : flags.policies));
  ASSIGN_OR_RETURN(replay::ReplayOptions options, OptionsFrom(flags));
  RETURN_IF_ERROR(replay::Validate(options));
  ASSIGN_OR_RETURN(scheduler::Scenario scenario, replay::LoadReplayScenario(flags.files));
  ASSIGN_OR_RETURN(replay::Trace trace, replay::LoadTrace(flags.trace, flags.trace_format));
  std::optional<autoscaler::Catalog> own_catalog;
  if (!flags.catalog.empty()) {
    ASSIGN_OR_RETURN(own_catalog, autoscaler::LoadCatalogFile(flags.catalog));
  }
  const autoscaler::Catalog& catalog = own_catalog ? *own_catalog : autoscaler::Catalog::Builtin();
  replay::ReplayInput input{&scenario, &trace, &catalog};
  RETURN_IF_ERROR(replay::CheckInput(input));

  replay::RunInputs inputs;
  inputs.scenario_files = flags.files;
  inputs.trace_file = flags.trace;
  inputs.trace_format = trace.format;
  inputs.trace_jobs = static_cast<int64_t>(trace.jobs.size());
  for (const replay::TraceJob& j : trace.jobs) inputs.trace_pods += j.pods;
  inputs.options = options;
  inputs.nodes = static_cast<int>(scenario.snapshot.nodes.size());
  inputs.queues = static_cast<int>(scenario.snapshot.queues.size());
  inputs.node_pools = static_cast<int>(scenario.snapshot.node_pools.size());
  inputs.machine_pools = static_cast<int>(scenario.machine_pools.size());

  ProgressBar bar(!flags.no_progress);
  std::vector<replay::PolicyRun> runs;
  for (scheduler::PlacementPolicy policy : policies) {
    const std::string name(scheduler::PlacementPolicyName(policy));
    inputs.policies.push_back(name);
    replay::ReplayOptions run_options = options;
    run_options.scheduler.policy = policy;
    const double cpu = CpuSeconds();
    ASSIGN_OR_RETURN(replay::PolicyRun run,
                     replay::Run(input, run_options,
                                 [&](int64_t now, int64_t end) { bar.Update(name, now, end); }));
    char line[160];
    std::snprintf(line, sizeof line, "%s: %lld jobs, %lld cycles, %.2f s CPU", name.c_str(),
                  static_cast<long long>(run.summary.jobs),
                  static_cast<long long>(run.summary.cycles), CpuSeconds() - cpu);
    bar.Done(line);
    runs.push_back(std::move(run));
  }
  if (!flags.csv_dir.empty()) RETURN_IF_ERROR(replay::WriteCsv(flags.csv_dir, runs));
  if (!flags.report.empty()) {
    RETURN_IF_ERROR(replay::WriteFileAtomically(flags.report, replay::HtmlReport(inputs, runs)));
  }
  if (format == OutputFormat::kTable) {
    std::cout << replay::ResultsToTable(runs);
  } else {
    std::cout << Render(replay::ResultsToJson(inputs, runs), format);
  }
  return OkStatus();
}

}  // namespace

void AddReplaySubcommand(CLI::App& app, ReplayFlags& f) {
  CLI::App* cmd = app.add_subcommand(
      "replay",
      "play a job trace (openb, DLRM, CSV or JSONL) against scenario files in simulated time, "
      "one run per placement policy; see docs/REPLAY.md");
  cmd->add_option("-f,--file", f.files,
                  "scenario file: Nodes, Queues, NodePools, MachinePools (YAML/JSON) or an "
                  "openb node CSV (repeatable)")
      ->required();
  cmd->add_option("--trace", f.trace, "job trace file")->required();
  cmd->add_option("--trace-format", f.trace_format, "openb, dlrm, csv or jsonl (default: detect)");
  cmd->add_option("--policy", f.policies,
                  "placement policies, comma separated (default fgd; with --protocol, all)");
  cmd->add_option("--period", f.period, "scheduling cycle period (default 10s)");
  cmd->add_option("--sample", f.sample, "time between samples of the series (default: ~400)");
  cmd->add_option("--until", f.until, "stop after this much simulated time");
  cmd->add_option("--queue-timeout", f.queue_timeout, "give up jobs not started after this long");
  cmd->add_option("--exec-timeout", f.exec_timeout, "stop jobs running longer than this");
  cmd->add_option("--seed", f.seed, "seed of the spot interruption draws (default 1)");
  cmd->add_option("--spot-interruption-rate", f.spot_rate,
                  "spot interruption notices per spot node and hour (default 0)");
  cmd->add_option("--interrupt", f.interrupts,
                  "NODE@TIME: a spot interruption notice at TIME (repeatable)");
  cmd->add_option("--provision-delay", f.provision_delay,
                  "machine-pool node launch to ready (default 60s)");
  cmd->add_option("--scale-down-after", f.scale_down_after,
                  "remove machine-pool nodes empty this long (default 10m)");
  cmd->add_option("--catalog", f.catalog, "instance type catalog (JSON/YAML); default: built in");
  cmd->add_option("--percentage", f.percentage,
                  "kube-scheduler percentageOfNodesToScore (0 = adaptive, 100 = every node)");
  cmd->add_option("--csv", f.csv_dir, "also write CSV files into this directory");
  cmd->add_option("--report", f.report,
                  "also write a self-contained HTML report (charts over time, tables) to FILE");
  cmd->add_flag("--no-progress", f.no_progress, "no progress bar on a terminal");
  cmd->add_option("--protocol", f.protocol,
                  "fgd: the FGD paper's protocol (the trace's pods without times, inflated to "
                  "--load percent of the GPUs, per seed) instead of a replay");
  cmd->add_option("--load", f.load, "--protocol: arrived GPU demand to reach, percent (130)");
  cmd->add_option("--seeds", f.seeds, "--protocol: number of seeds (10)");
  cmd->add_option("--first-seed", f.first_seed, "--protocol: the first seed (42)");
  cmd->add_option("--at", f.at, "--protocol: arrived demand to report at, percent (98,130)")
      ->delimiter(',');
  cmd->add_option("--fgd-task-types", f.fgd_task_types,
                  "--protocol: GPU demands in FGD's typical workload (default: the scheduler's)");
  cmd->callback([&f] { f.chosen = true; });
  cmd->fallthrough();
}

int RunReplay(const ReplayFlags& flags, OutputFormat format) {
  Status s = Replay(flags, format);
  if (!s.ok()) {
    std::cerr << "error: " << s.message() << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace gpupool::cli
