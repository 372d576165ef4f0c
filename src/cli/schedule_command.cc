#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "autoscaler/autoscaler.h"
#include "cli/commands.h"
#include "client/client.h"
#include "common/strings.h"
#include "model/input_file.h"
#include "scheduler/scenario.h"

namespace gpupool::cli {

Status Schedule(const ScheduleFlags& flags, const Env& env) {
  const std::vector<std::string>& files = flags.files;
  nlohmann::ordered_json result;
  if (!env.opts.server.empty()) {
    if (!flags.catalog.empty()) {
      return InvalidArgumentError(
          "--catalog works offline only: with --server the server's catalog is used (gpupool "
          "serve --catalog)");
    }
    // Checked here first, so that errors name the user's files and lines rather than the
    // request body that joins them; the server checks again.
    ASSIGN_OR_RETURN(scheduler::Scenario local, scheduler::LoadScenarioFiles(files));
    RETURN_IF_ERROR(scheduler::ValidateScenario(local));
    std::string text;
    for (const auto& f : files) {
      ASSIGN_OR_RETURN(std::string t, model::ReadFile(f));
      text += "---\n" + t + "\n";
    }
    auto client = client::Client::FromEnvironment(env.opts.server);
    // POST /api/schedule?interrupt=NODE,...: the server's what-if (api/what_if.h).
    const bool table = env.format == OutputFormat::kTable;
    std::string path =
        "/api/schedule" + client::Client::Query({{"interrupt", Join(flags.interrupts, ",")},
                                                 {"output", table ? "table" : ""}});
    ASSIGN_OR_RETURN(result, client->Call("POST", path, text, "application/yaml"));
    if (table && result.contains("table") && result["table"].is_string()) {
      std::cout << Shown(result["table"].get<std::string>());
    } else {
      std::cout << Render(result, env.format);
    }
    return OkStatus();
  }
  ASSIGN_OR_RETURN(scheduler::Scenario scenario, scheduler::LoadScenarioFiles(files));
  RETURN_IF_ERROR(scheduler::ValidateScenario(scenario));
  std::optional<autoscaler::Catalog> own_catalog;
  if (!flags.catalog.empty()) {
    ASSIGN_OR_RETURN(own_catalog, autoscaler::LoadCatalogFile(flags.catalog));
  }
  autoscaler::AutoscaleOptions options;
  options.interrupt_nodes = flags.interrupts;
  ASSIGN_OR_RETURN(
      autoscaler::AutoscaleResult what_if,
      autoscaler::SimulateScenario(
          scenario, own_catalog ? *own_catalog : autoscaler::Catalog::Builtin(), options));
  if (env.format == OutputFormat::kTable) {
    std::cout << autoscaler::AutoscaleResultToTable(what_if);
  } else {
    std::cout << Render(autoscaler::AutoscaleResultToJson(what_if), env.format);
  }
  return OkStatus();
}

void AddScheduleCommand(CLI::App& app, ScheduleFlags& flags) {
  CLI::App* schedule = app.add_subcommand(
      "schedule",
      "what-if: place the pending pods of scenario files (Nodes, Pods, Queues, NodePools, "
      "MachinePools); with machine pools, also which nodes the autoscaler adds or removes");
  schedule->add_option("-f,--file", flags.files, "scenario file (repeatable)")->required();
  schedule->add_option("--catalog", flags.catalog,
                       "instance type catalog (JSON/YAML) for machine pools; default: built in");
  schedule->add_option("--interrupt", flags.interrupts,
                       "spot node that gets its 2-minute interruption notice (repeatable)");
  schedule->callback([&flags] { flags.chosen = true; });
  schedule->fallthrough();
}

}  // namespace gpupool::cli
