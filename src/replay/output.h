#pragma once
// A replay's results as JSON (`gpupool replay -o json`), CSV files for notebooks (`--csv DIR`)
// and a plain-text table (the default output). docs/REPLAY.md describes every field.
//
// JSON: {"inputs": {...}, "runs": [{"policy", "summary", "queues", "series", "nodeEvents",
// "jobs"}]}; times in seconds, GPUs as numbers of devices, money in USD; numbers rounded to 6
// significant digits. CSV (one row per record, header first): summary.csv, queues.csv,
// jobs.csv, node_events.csv and series.csv in long form (policy, t_s, series, key, value).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "replay/engine.h"

namespace gpupool::replay {

// What the run was given, for the report and the JSON's "inputs".
struct RunInputs {
  std::vector<std::string> scenario_files;
  std::string trace_file;
  std::string trace_format;
  int64_t trace_jobs = 0;
  int64_t trace_pods = 0;
  std::vector<std::string> policies;
  ReplayOptions options;
  int nodes = 0;
  int queues = 0;
  int node_pools = 0;
  int machine_pools = 0;
};

nlohmann::ordered_json InputsToJson(const RunInputs& inputs);
nlohmann::ordered_json RunToJson(const PolicyRun& run, bool with_jobs = true);
nlohmann::ordered_json ResultsToJson(const RunInputs& inputs, const std::vector<PolicyRun>& runs);

// The summary table, one row per policy, and per-queue delays.
std::string ResultsToTable(const std::vector<PolicyRun>& runs);

// Writes the CSV files into `dir` (created when missing). All files are written under temporary
// names first and renamed once every one is complete.
Status WriteCsv(const std::string& dir, const std::vector<PolicyRun>& runs);

// Writes `content` to `path` through a temporary file in the same directory and a rename.
Status WriteFileAtomically(const std::string& path, const std::string& content);

// CSV field with RFC 4180 quoting when it needs it.
std::string CsvField(const std::string& text);

// `value` rounded to 6 significant digits (0 stays 0), for compact, stable output.
double Round6(double value);

}  // namespace gpupool::replay
