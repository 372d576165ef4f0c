#pragma once
// `gpupool replay`: a job trace played against scenario files in simulated time, one run per
// placement policy (replay/engine.h), with a progress bar on a terminal and the results as a
// table, JSON (-o json), CSV files (--csv DIR) or an HTML report (--report FILE); or, with
// --protocol fgd, the FGD paper's evaluation protocol (replay/protocol.h).

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/format.h"

namespace gpupool::cli {

struct ReplayFlags {
  bool chosen = false;
  std::vector<std::string> files;
  std::string trace;
  std::string trace_format;
  std::string policies;  // "" = fgd; with --protocol, every policy
  std::string period = "10s";
  std::string sample;
  std::string until;
  std::string queue_timeout;
  std::string exec_timeout;
  uint64_t seed = 1;
  double spot_rate = 0;
  std::vector<std::string> interrupts;
  std::string provision_delay = "60s";
  std::string scale_down_after = "10m";
  std::string catalog;
  int percentage = 0;
  std::string csv_dir;
  std::string report;
  bool no_progress = false;
  // --protocol fgd: the FGD paper's protocol (replay/protocol.h) instead of a replay.
  std::string protocol;
  double load = 130;
  int seeds = 10;
  uint64_t first_seed = 42;
  std::vector<int> at = {98, 130};
  int fgd_task_types = 0;
};

void AddReplaySubcommand(CLI::App& app, ReplayFlags& flags);

// Runs the replay the flags describe; returns the process exit code (errors on stderr).
int RunReplay(const ReplayFlags& flags, OutputFormat format);

}  // namespace gpupool::cli
