#pragma once
// What the command files of `gpupool` share: the parsed command line (Options), what a command
// runs with (Env), and the functions that add each concern's subcommands: config_commands.cc
// (config, apply), cluster_commands.cc (node, pool, resource, profile, queue, machinepool),
// workflow_commands.cc (workflow) and schedule_command.cc (schedule). app.cc parses the command
// line and runs the chosen command. Internal to the cli module.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cli/api.h"
#include "cli/format.h"
#include "cli/logs.h"
#include "common/status.h"
#include "service/service.h"

namespace gpupool::cli {

// gpupool's exit codes: done, failed, and a command line it could not parse.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Everything the parsed command line says.
struct Options {
  std::string db;
  std::string server;
  std::string output = "table";
  std::string user;
  std::string roles;

  // config / apply / node / pool / resource / workflow arguments
  std::string kind;
  std::string name;
  std::string extra;  // `config set ROLE NAME pool`: "pool"
  std::string file;
  std::vector<std::string> files;  // apply -f A -f B (kubectl's repeatable -f)
  std::string description;
  bool force = false;
  int64_t revision = 0;
  bool has_revision = false;
  int limit = 100;
  bool replace = false;
  std::string pool;
  std::string platform;
  std::vector<std::string> set_values;
  std::string node_pools;  // workflow submit --node-pools a,b
  std::string queue;       // workflow submit --queue PROJECT
  bool dry_run = false;
  std::string id;
  std::string status;
  std::string filter_user;
  std::string selector;          // resource list -l
  std::string resource = "gpu";  // queue list --resource
};

struct Env {
  Options opts;
  OutputFormat format = OutputFormat::kTable;
  service::Caller caller;
};

// A command that runs on the store (offline) or on a server (--server) alike, through Api.
using Command = std::function<Status(Api&, const Env&)>;
// Makes `fn` the command that runs when the subcommand is chosen.
using UseCommand = std::function<void(CLI::App* sub, Command fn)>;

// `config update|set|show|list|delete|history|rollback`, `apply`.
void AddConfigCommands(CLI::App& app, Options& o, const UseCommand& use);

// `node import`, `pool list`, `resource list`, `profile`, `queue list`, `machinepool list`.
void AddClusterCommands(CLI::App& app, Options& o, const UseCommand& use);

// `workflow logs` reads from a server, not through Api: app.cc runs it when `chosen`.
struct WorkflowLogsFlags {
  LogsOptions logs;
  int retry = -1;
  bool chosen = false;
};

// `workflow submit|query|list|cancel|logs`.
void AddWorkflowCommands(CLI::App& app, Options& o, const UseCommand& use,
                         WorkflowLogsFlags& logs_flags);

// `gpupool schedule -f SCENARIO...`: one scheduling cycle over the files, offline, and with
// MachinePools in them the autoscaler's plan (autoscaler/autoscaler.h). With --server the scenario
// and the --interrupt nodes go to the server's what-if endpoint (the server's catalog applies), and
// the answer prints as JSON (-o yaml: YAML).
struct ScheduleFlags {
  bool chosen = false;
  std::vector<std::string> files;
  std::string catalog;                  // instance catalog file; "" = the built-in one
  std::vector<std::string> interrupts;  // spot nodes that get the 2-minute notice
};

void AddScheduleCommand(CLI::App& app, ScheduleFlags& flags);

Status Schedule(const ScheduleFlags& flags, const Env& env);

}  // namespace gpupool::cli
