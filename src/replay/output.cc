#include "replay/output.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/table.h"
#include "model/duration.h"

namespace gpupool::replay {
namespace {

using Json = nlohmann::ordered_json;

Json Seconds(int64_t ms) { return Round6(static_cast<double>(ms) / 1000.0); }

Json OptionalSeconds(const std::optional<int64_t>& ms) { return ms ? Seconds(*ms) : Json(nullptr); }

Json DurationText(const std::optional<int64_t>& ms) {
  return ms ? Json(model::FormatDuration((*ms + 999) / 1000)) : Json(nullptr);
}

Json DistributionToJson(const Distribution& d) {
  return Json{{"count", d.count},     {"mean", Round6(d.mean)}, {"p50", Round6(d.p50)},
              {"p90", Round6(d.p90)}, {"p99", Round6(d.p99)},   {"max", Round6(d.max)}};
}

Json Numbers(const std::vector<double>& values) {
  Json out = Json::array();
  for (double v : values) out.push_back(Round6(v));
  return out;
}

Json Numbers(const std::vector<std::optional<double>>& values) {
  Json out = Json::array();
  for (const auto& v : values) out.push_back(v ? Json(Round6(*v)) : Json(nullptr));
  return out;
}

Json SummaryToJson(const Summary& s) {
  return Json{{"jobs", s.jobs},
              {"completed", s.completed},
              {"running", s.running},
              {"pending", s.pending},
              {"queueTimeouts", s.queue_timeouts},
              {"execTimeouts", s.exec_timeouts},
              {"gpuAllocationMean", Round6(s.gpu_allocation_mean)},
              {"gpuAllocationPeak", Round6(s.gpu_allocation_peak)},
              {"fragmentationMeanGpus", Round6(s.fragmentation_mean_gpus)},
              {"queueingDelaySeconds", DistributionToJson(s.queueing_delay_s)},
              {"jctSeconds", DistributionToJson(s.jct_s)},
              {"preemptions", s.preemptions},
              {"reclaims", s.reclaims},
              {"noExecuteEvictions", s.no_execute_evictions},
              {"interruptions", s.interruptions},
              {"machinePoolCostUsd", Round6(s.machine_pool_cost_usd)},
              {"machinePoolNodesPeak", s.machine_pool_nodes_peak},
              {"cycles", s.cycles},
              {"endSeconds", Seconds(s.end_ms)}};
}

Json SeriesToJson(const Series& s) {
  Json t = Json::array();
  for (int64_t ms : s.t_ms) t.push_back(Seconds(ms));
  Json pools = Json::object();
  for (const auto& [name, p] : s.node_pools) {
    pools[name] = Json{{"capacityGpus", Numbers(p.capacity_gpus)},
                       {"allocatedGpus", Numbers(p.allocated_gpus)},
                       {"fragmentationGpus", Numbers(p.fragmentation_gpus)}};
  }
  Json queues = Json::object();
  for (const auto& [name, q] : s.queues) {
    queues[name] = Json{{"allocatedGpus", Numbers(q.allocated_gpus)},
                        {"deservedGpus", Numbers(q.deserved_gpus)},
                        {"fairShareGpus", Numbers(q.fair_share_gpus)}};
  }
  Json machine = Json::object();
  for (const auto& [name, m] : s.machine_pools) {
    machine[name] = Json{
        {"nodes", m.nodes}, {"costUsd", Numbers(m.cost_usd)}, {"interruptions", m.interruptions}};
  }
  return Json{{"tSeconds", t},
              {"nodePools", pools},
              {"pendingGpus", Numbers(s.pending_gpus)},
              {"pendingJobs", s.pending_jobs},
              {"runningJobs", s.running_jobs},
              {"queues", queues},
              {"machinePools", machine}};
}

Json JobToJson(const JobRecord& j) {
  Json out{{"name", j.name},
           {"queue", j.queue},
           {"pods", j.pods},
           {"gpus", Round6(static_cast<double>(j.gpu_milli) / 1000.0)},
           {"submit", Seconds(j.submit_ms)},
           {"start", OptionalSeconds(j.start_ms)},
           {"end", OptionalSeconds(j.end_ms)},
           {"outcome", std::string(JobOutcomeName(j.outcome))},
           {"preemptions", j.preemptions},
           {"reclaims", j.reclaims},
           {"interruptions", j.interruptions}};
  if (!j.reason.empty()) out["reason"] = j.reason;
  return out;
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string OptionalNumber(const std::optional<double>& v) { return v ? Number(*v) : ""; }

std::string OptionalSecondsText(const std::optional<int64_t>& ms) {
  return ms ? Number(static_cast<double>(*ms) / 1000.0) : "";
}

void AppendRow(std::string& out, const std::vector<std::string>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += ',';
    out += CsvField(fields[i]);
  }
  out += '\n';
}

std::vector<std::string> DistributionFields(const Distribution& d) {
  return {std::to_string(d.count), Number(d.mean), Number(d.p50),
          Number(d.p90),           Number(d.p99),  Number(d.max)};
}

std::vector<std::string> DistributionHeader(const std::string& prefix) {
  return {prefix + "_count", prefix + "_mean_s", prefix + "_p50_s",
          prefix + "_p90_s", prefix + "_p99_s",  prefix + "_max_s"};
}

template <typename T>
void Concat(std::vector<T>& a, const std::vector<T>& b) {
  a.insert(a.end(), b.begin(), b.end());
}

std::string SummaryCsv(const std::vector<PolicyRun>& runs) {
  std::string out;
  std::vector<std::string> header = {"policy",
                                     "jobs",
                                     "completed",
                                     "running",
                                     "pending",
                                     "queue_timeouts",
                                     "exec_timeouts",
                                     "gpu_allocation_mean",
                                     "gpu_allocation_peak",
                                     "fragmentation_mean_gpus"};
  Concat(header, DistributionHeader("queueing_delay"));
  Concat(header, DistributionHeader("jct"));
  Concat(header, {"preemptions", "reclaims", "no_execute_evictions", "interruptions",
                  "machine_pool_cost_usd", "machine_pool_nodes_peak", "cycles", "end_s"});
  AppendRow(out, header);
  for (const PolicyRun& r : runs) {
    const Summary& s = r.summary;
    std::vector<std::string> row = {r.policy,
                                    std::to_string(s.jobs),
                                    std::to_string(s.completed),
                                    std::to_string(s.running),
                                    std::to_string(s.pending),
                                    std::to_string(s.queue_timeouts),
                                    std::to_string(s.exec_timeouts),
                                    Number(s.gpu_allocation_mean),
                                    Number(s.gpu_allocation_peak),
                                    Number(s.fragmentation_mean_gpus)};
    Concat(row, DistributionFields(s.queueing_delay_s));
    Concat(row, DistributionFields(s.jct_s));
    Concat(row, {std::to_string(s.preemptions), std::to_string(s.reclaims),
                 std::to_string(s.no_execute_evictions), std::to_string(s.interruptions),
                 Number(s.machine_pool_cost_usd), std::to_string(s.machine_pool_nodes_peak),
                 std::to_string(s.cycles), Number(static_cast<double>(s.end_ms) / 1000.0)});
    AppendRow(out, row);
  }
  return out;
}

std::string QueuesCsv(const std::vector<PolicyRun>& runs) {
  std::string out;
  std::vector<std::string> header = {"policy", "queue", "jobs"};
  Concat(header, DistributionHeader("queueing_delay"));
  Concat(header, DistributionHeader("jct"));
  AppendRow(out, header);
  for (const PolicyRun& r : runs) {
    for (const auto& [queue, q] : r.queues) {
      std::vector<std::string> row = {r.policy, queue, std::to_string(q.jobs)};
      Concat(row, DistributionFields(q.queueing_delay_s));
      Concat(row, DistributionFields(q.jct_s));
      AppendRow(out, row);
    }
  }
  return out;
}

std::string JobsCsv(const std::vector<PolicyRun>& runs) {
  std::string out;
  AppendRow(out, {"policy", "job", "queue", "pods", "gpus", "submit_s", "start_s", "end_s",
                  "outcome", "preemptions", "reclaims", "interruptions", "reason"});
  for (const PolicyRun& r : runs) {
    for (const JobRecord& j : r.jobs) {
      AppendRow(out, {r.policy, j.name, j.queue, std::to_string(j.pods),
                      Number(static_cast<double>(j.gpu_milli) / 1000.0),
                      Number(static_cast<double>(j.submit_ms) / 1000.0),
                      OptionalSecondsText(j.start_ms), OptionalSecondsText(j.end_ms),
                      std::string(JobOutcomeName(j.outcome)), std::to_string(j.preemptions),
                      std::to_string(j.reclaims), std::to_string(j.interruptions), j.reason});
    }
  }
  return out;
}

std::string NodeEventsCsv(const std::vector<PolicyRun>& runs) {
  std::string out;
  AppendRow(out, {"policy", "t_s", "node", "machine_pool", "what"});
  for (const PolicyRun& r : runs) {
    for (const NodeEventRecord& e : r.node_events) {
      AppendRow(out, {r.policy, Number(static_cast<double>(e.t_ms) / 1000.0), e.node,
                      e.machine_pool, e.what});
    }
  }
  return out;
}

std::string SeriesCsv(const std::vector<PolicyRun>& runs) {
  std::string out;
  AppendRow(out, {"policy", "t_s", "series", "key", "value"});
  for (const PolicyRun& r : runs) {
    const Series& s = r.series;
    for (size_t i = 0; i < s.t_ms.size(); ++i) {
      const std::string t = Number(static_cast<double>(s.t_ms[i]) / 1000.0);
      auto row = [&](const char* series, const std::string& key, const std::string& value) {
        AppendRow(out, {r.policy, t, series, key, value});
      };
      for (const auto& [pool, p] : s.node_pools) {
        row("node_pool_capacity_gpus", pool, Number(p.capacity_gpus[i]));
        row("node_pool_allocated_gpus", pool, Number(p.allocated_gpus[i]));
        row("node_pool_fragmentation_gpus", pool, Number(p.fragmentation_gpus[i]));
      }
      row("pending_gpus", "", Number(s.pending_gpus[i]));
      row("pending_jobs", "", std::to_string(s.pending_jobs[i]));
      row("running_jobs", "", std::to_string(s.running_jobs[i]));
      for (const auto& [queue, q] : s.queues) {
        row("queue_allocated_gpus", queue, Number(q.allocated_gpus[i]));
        row("queue_deserved_gpus", queue, OptionalNumber(q.deserved_gpus[i]));
        row("queue_fair_share_gpus", queue, OptionalNumber(q.fair_share_gpus[i]));
      }
      for (const auto& [pool, m] : s.machine_pools) {
        row("machine_pool_nodes", pool, std::to_string(m.nodes[i]));
        row("machine_pool_cost_usd", pool, Number(m.cost_usd[i]));
        row("machine_pool_interruptions", pool, std::to_string(m.interruptions[i]));
      }
    }
  }
  return out;
}

std::string Percent(double ratio) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f%%", ratio * 100);
  return buf;
}

std::string SecondsText(double s) {
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%.1fm", s / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%.1fh", s / 3600);
  }
  return buf;
}

}  // namespace

double Round6(double value) {
  if (value == 0 || !std::isfinite(value)) return value == value ? value : 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return std::strtod(buf, nullptr);
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

Json InputsToJson(const RunInputs& in) {
  const ReplayOptions& o = in.options;
  Json interruptions = Json::array();
  for (const InterruptionAt& i : o.interruptions) {
    interruptions.push_back(Json{{"node", i.node}, {"at", Seconds(i.at_ms)}});
  }
  return Json{{"scenario", in.scenario_files},
              {"trace", Json{{"file", in.trace_file},
                             {"format", in.trace_format},
                             {"jobs", in.trace_jobs},
                             {"pods", in.trace_pods}}},
              {"cluster", Json{{"nodes", in.nodes},
                               {"queues", in.queues},
                               {"nodePools", in.node_pools},
                               {"machinePools", in.machine_pools}}},
              {"policies", in.policies},
              {"period", DurationText(o.cycle_period_ms)},
              {"sample", o.sample_period_ms > 0 ? DurationText(o.sample_period_ms) : Json("auto")},
              {"until", DurationText(o.until_ms)},
              {"queueTimeout", DurationText(o.queue_timeout_ms)},
              {"execTimeout", DurationText(o.exec_timeout_ms)},
              {"seed", o.seed},
              {"spotInterruptionsPerNodeHour", o.spot_interruptions_per_node_hour},
              {"interruptions", interruptions},
              {"provisionDelay", DurationText(o.provision_delay_ms)},
              {"scaleDownAfter", DurationText(o.scale_down_after_ms)},
              {"percentageOfNodesToScore", o.scheduler.percentage_of_nodes_to_score}};
}

Json RunToJson(const PolicyRun& run, bool with_jobs) {
  Json queues = Json::object();
  for (const auto& [name, q] : run.queues) {
    queues[name] = Json{{"jobs", q.jobs},
                        {"queueingDelaySeconds", DistributionToJson(q.queueing_delay_s)},
                        {"jctSeconds", DistributionToJson(q.jct_s)}};
  }
  Json events = Json::array();
  for (const NodeEventRecord& e : run.node_events) {
    events.push_back(Json{{"t", Seconds(e.t_ms)},
                          {"node", e.node},
                          {"machinePool", e.machine_pool},
                          {"what", e.what}});
  }
  Json out{{"policy", run.policy},
           {"summary", SummaryToJson(run.summary)},
           {"queues", queues},
           {"series", SeriesToJson(run.series)},
           {"nodeEvents", events}};
  if (with_jobs) {
    Json jobs = Json::array();
    for (const JobRecord& j : run.jobs) jobs.push_back(JobToJson(j));
    out["jobs"] = std::move(jobs);
  }
  return out;
}

Json ResultsToJson(const RunInputs& inputs, const std::vector<PolicyRun>& runs) {
  Json out{{"inputs", InputsToJson(inputs)}, {"runs", Json::array()}};
  for (const PolicyRun& r : runs) out["runs"].push_back(RunToJson(r));
  return out;
}

std::string ResultsToTable(const std::vector<PolicyRun>& runs) {
  std::vector<std::vector<std::string>> rows = {
      {"POLICY", "JOBS", "COMPLETED", "PENDING", "TIMED OUT", "GPU ALLOC (MEAN)", "PEAK",
       "FRAG (MEAN GPUS)", "DELAY P50", "DELAY P99", "JCT P50", "PREEMPT", "RECLAIM", "INTERRUPT",
       "COST USD"}};
  for (const PolicyRun& r : runs) {
    const Summary& s = r.summary;
    rows.push_back({r.policy, std::to_string(s.jobs), std::to_string(s.completed),
                    std::to_string(s.pending), std::to_string(s.queue_timeouts + s.exec_timeouts),
                    Percent(s.gpu_allocation_mean), Percent(s.gpu_allocation_peak),
                    Number(Round6(s.fragmentation_mean_gpus)), SecondsText(s.queueing_delay_s.p50),
                    SecondsText(s.queueing_delay_s.p99), SecondsText(s.jct_s.p50),
                    std::to_string(s.preemptions), std::to_string(s.reclaims),
                    std::to_string(s.interruptions), Number(Round6(s.machine_pool_cost_usd))});
  }
  std::string out = FormatTable(rows);
  std::vector<std::vector<std::string>> queues = {
      {"POLICY", "QUEUE", "JOBS", "DELAY MEAN", "DELAY P50", "DELAY P99", "JCT P50", "JCT P99"}};
  for (const PolicyRun& r : runs) {
    for (const auto& [name, q] : r.queues) {
      queues.push_back({r.policy, name, std::to_string(q.jobs),
                        SecondsText(q.queueing_delay_s.mean), SecondsText(q.queueing_delay_s.p50),
                        SecondsText(q.queueing_delay_s.p99), SecondsText(q.jct_s.p50),
                        SecondsText(q.jct_s.p99)});
    }
  }
  return out + "\n" + FormatTable(queues);
}

Status WriteFileAtomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << content;
    f.flush();
    if (!f) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      return InvalidArgumentError("cannot write " + path);
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return InvalidArgumentError("cannot write " + path + ": " + ec.message());
  }
  return OkStatus();
}

Status WriteCsv(const std::string& dir, const std::vector<PolicyRun>& runs) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgumentError("--csv " + dir + ": " + ec.message());
  const std::vector<std::pair<std::string, std::string>> files = {
      {"summary.csv", SummaryCsv(runs)},
      {"queues.csv", QueuesCsv(runs)},
      {"jobs.csv", JobsCsv(runs)},
      {"node_events.csv", NodeEventsCsv(runs)},
      {"series.csv", SeriesCsv(runs)}};
  std::vector<std::string> written;
  auto discard = [&] {
    for (const std::string& tmp : written) std::filesystem::remove(tmp, ec);
  };
  for (const auto& [name, content] : files) {
    const std::string tmp = (std::filesystem::path(dir) / (name + ".tmp")).string();
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << content;
    f.flush();
    written.push_back(tmp);
    if (!f) {
      discard();
      return InvalidArgumentError("--csv " + dir + ": cannot write " + name);
    }
  }
  for (const auto& [name, content] : files) {
    const std::filesystem::path target = std::filesystem::path(dir) / name;
    std::filesystem::rename(target.string() + ".tmp", target, ec);
    if (ec) {
      discard();
      return InvalidArgumentError("--csv " + dir + ": cannot write " + name + ": " + ec.message());
    }
  }
  return OkStatus();
}

}  // namespace gpupool::replay
