#include "cli/app.h"

#include <pwd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "autoscaler/autoscaler.h"
#include "cli/api.h"
#include "cli/format.h"
#include "cli/logs.h"
#include "cli/replay_command.h"
#include "cli/view_tables.h"
#include "common/clock.h"
#include "common/json_text.h"
#include "common/safe_text.h"
#include "common/strings.h"
#include "model/json_io.h"
#include "model/quantity.h"
#include "scheduler/scenario.h"
#include "server/client.h"
#include "server/machine_pools.h"
#include "server/serve_command.h"
#include "service/service.h"
#include "store/store.h"
#include "submit/workflow.h"

namespace gpupool::cli {
namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int64_t kGi = int64_t{1} << 30;

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

std::string OsUser() {
  if (const char* u = std::getenv("USER"); u != nullptr && *u != '\0') return u;
  if (const passwd* pw = getpwuid(getuid()); pw != nullptr) return pw->pw_name;
  return "unknown";
}

Result<std::string> DefaultDbUrl() {
  if (const char* env = std::getenv("GPUPOOL_DB"); env != nullptr && *env != '\0')
    return std::string(env);
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') {
    return InvalidArgumentError("no --db given, GPUPOOL_DB unset and HOME unset");
  }
  return "sqlite:" + std::string(home) + "/.local/share/gpupool/gpupool.db";
}

// Creates the directory of a SQLite database file.
Status PrepareDb(const std::string& url) {
  if (StartsWith(url, "postgres")) return OkStatus();
  std::string path = StartsWith(url, "sqlite:") ? url.substr(7) : url;
  if (path.empty() || path == ":memory:") return OkStatus();
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) return OkStatus();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return UnavailableError("cannot create " + dir.string() + ": " + ec.message());
  return OkStatus();
}

std::string Timestamp(int64_t ms) { return ms == 0 ? "-" : FormatTimestamp(ms); }

// Text from the store or the server (names, descriptions, messages) as the terminal may show
// it: tables do this themselves (common/table.h); lines printed directly go through here.
std::string Shown(std::string_view text) { return TerminalSafe(text, Newlines::kKeep); }

void PrintWarnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) std::cerr << "warning: " << Shown(w) << "\n";
}

// ---- Commands -----------------------------------------------------------------------------

Status PrintWrite(const Env& env, const service::WriteResult& result) {
  PrintWarnings(result.warnings);
  if (env.format != OutputFormat::kTable) {
    std::cout << Render(service::ToJson(result), env.format);
    return OkStatus();
  }
  for (const auto& c : result.changes) {
    std::string verb = c.action == "delete"     ? "deleted"
                       : c.action == "rollback" ? "rolled back"
                                                : "updated";
    std::cout << verb << " " << c.kind << " " << Shown(c.name) << " (revision " << c.revision
              << ")\n";
  }
  return OkStatus();
}

Status ConfigUpdate(Api& svc, const Env& env) {
  if (env.opts.file.empty()) {
    return InvalidArgumentError("config update needs --file FILE (the config as JSON)");
  }
  service::UpdateConfigRequest req;
  ASSIGN_OR_RETURN(req.text, model::ReadFile(env.opts.file));
  ASSIGN_OR_RETURN(req.body, model::ParseJson(req.text, env.opts.file));
  req.kind = env.opts.kind;
  if (!env.opts.name.empty()) req.name = env.opts.name;
  req.file_name = env.opts.file;
  req.description = env.opts.description;
  ASSIGN_OR_RETURN(auto result, svc.UpdateConfig(env.caller, req));
  return PrintWrite(env, result);
}

Status ConfigSet(Api& svc, const Env& env) {
  ASSIGN_OR_RETURN(std::string kind, service::NormalizeKind(env.opts.kind));
  if (env.opts.extra == "pool") {
    if (kind != "ROLE") {
      return InvalidArgumentError("config set " + kind + " NAME pool: only ROLE can be generated");
    }
    ASSIGN_OR_RETURN(auto result, svc.SetPoolRole(env.caller, env.opts.name, env.opts.description));
    return PrintWrite(env, result);
  }
  return ConfigUpdate(svc, env);
}

Status ConfigShow(Api& svc, const Env& env) {
  std::optional<int64_t> revision;
  if (env.opts.has_revision) revision = env.opts.revision;
  ASSIGN_OR_RETURN(auto view, svc.ShowConfig(env.opts.kind, env.opts.name, revision));
  if (env.format == OutputFormat::kTable) {
    // The body itself, as JSON: what `config update` takes back. JSON escapes the C0 controls
    // already; bidi controls become \u escapes, which JSON reads back as the same text.
    std::cout << Shown(DumpJson(view.body, 2)) << "\n";
  } else {
    std::cout << Render(service::ToJson(view), env.format);
  }
  return OkStatus();
}

Status ConfigList(Api& svc, const Env& env) {
  std::optional<std::string_view> kind;
  if (!env.opts.kind.empty()) kind = env.opts.kind;
  ASSIGN_OR_RETURN(auto views, svc.ListConfigs(kind));
  if (env.format != OutputFormat::kTable) {
    json out = json::array();
    for (const auto& v : views) {
      json j = service::ToJson(v);
      j.erase("body");
      out.push_back(std::move(j));
    }
    std::cout << Render(out, env.format);
    return OkStatus();
  }
  Table table({"KIND", "NAME", "REVISION", "UPDATED BY", "UPDATED AT"});
  for (const auto& v : views) {
    table.AddRow(
        {v.kind, v.name, std::to_string(v.revision), v.updated_by, Timestamp(v.updated_at_ms)});
  }
  std::cout << table.ToString();
  return OkStatus();
}

Status ConfigDelete(Api& svc, const Env& env) {
  service::DeleteConfigRequest req{env.opts.kind, env.opts.name, env.opts.force,
                                   env.opts.description};
  ASSIGN_OR_RETURN(auto result, svc.DeleteConfig(env.caller, req));
  return PrintWrite(env, result);
}

Status ConfigHistory(Api& svc, const Env& env) {
  service::HistoryFilter filter;
  if (!env.opts.kind.empty()) filter.kind = env.opts.kind;
  if (!env.opts.name.empty()) filter.name = env.opts.name;
  filter.limit = env.opts.limit;
  ASSIGN_OR_RETURN(auto entries, svc.History(filter));
  if (env.format != OutputFormat::kTable) {
    json out = json::array();
    for (const auto& e : entries) out.push_back(service::ToJson(e));
    std::cout << Render(out, env.format);
    return OkStatus();
  }
  Table table(
      {"CONFIG TYPE", "NAME", "REVISION", "ACTION", "USERNAME", "CREATED AT", "DESCRIPTION"});
  for (const auto& e : entries) {
    table.AddRow({e.kind, e.name, std::to_string(e.revision), e.action, e.author,
                  Timestamp(e.created_at_ms), e.description});
  }
  std::cout << table.ToString();
  return OkStatus();
}

Status ConfigRollback(Api& svc, const Env& env) {
  if (!env.opts.has_revision) return InvalidArgumentError("config rollback needs --revision N");
  service::RollbackRequest req{env.opts.kind, env.opts.name, env.opts.revision,
                               env.opts.description};
  ASSIGN_OR_RETURN(auto result, svc.Rollback(env.caller, req));
  return PrintWrite(env, result);
}

Result<std::vector<std::string>> ManifestFiles(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return NotFoundError(path + ": no such file or directory");
  if (!fs::is_directory(path, ec)) return std::vector<std::string>{path};
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) return InvalidArgumentError(path + ": no .yaml, .yml or .json files");
  return files;
}

Status Apply(Api& svc, const Env& env) {
  if (env.opts.file.empty()) return InvalidArgumentError("apply needs -f FILE|DIR");
  ASSIGN_OR_RETURN(auto files, ManifestFiles(env.opts.file));
  service::ApplyRequest req;
  req.description =
      env.opts.description.empty() ? "gpupool apply -f " + env.opts.file : env.opts.description;
  // Sent as they are (also to a server), so that errors name each file and its lines.
  for (const auto& f : files) {
    ASSIGN_OR_RETURN(std::string text, model::ReadFile(f));
    req.files.push_back(service::ManifestFile{f, std::move(text)});
  }
  ASSIGN_OR_RETURN(auto result, svc.Apply(env.caller, req));
  PrintWarnings(result.configs.warnings);
  if (env.format != OutputFormat::kTable) {
    std::cout << Render(service::ToJson(result), env.format);
    return OkStatus();
  }
  for (const auto& c : result.configs.changes) {
    std::cout << "applied " << c.kind << " " << Shown(c.name) << " (revision " << c.revision
              << ")\n";
  }
  if (result.nodes_imported > 0) std::cout << "imported " << result.nodes_imported << " nodes\n";
  return OkStatus();
}

Status NodeImport(Api& svc, const Env& env) {
  ASSIGN_OR_RETURN(std::string text, model::ReadFile(env.opts.file));
  ASSIGN_OR_RETURN(auto result, svc.ImportNodes(env.caller, text, env.opts.file, env.opts.replace));
  if (env.format != OutputFormat::kTable) {
    std::cout << Render(service::ToJson(result), env.format);
  } else {
    std::cout << "imported " << result.imported << " nodes from " << env.opts.file << "\n";
  }
  return OkStatus();
}

std::string GpuCell(int64_t used, int64_t limit) {
  return std::to_string(used) + "/" + (limit < 0 ? std::string("-") : std::to_string(limit));
}

Status PoolList(Api& svc, const Env& env) {
  ASSIGN_OR_RETURN(auto rows, svc.ListPools(env.caller));
  if (env.format != OutputFormat::kTable) {
    json out = json::array();
    for (const auto& r : rows) out.push_back(service::ToJson(r));
    std::cout << Render(out, env.format);
    return OkStatus();
  }
  Table table({"POOL", "DESCRIPTION", "STATUS", "GPU QUOTA USED/LIMIT", "GPU TOTAL USED/CAPACITY"});
  for (const auto& r : rows) {
    table.AddRow({r.name, r.description, r.status, GpuCell(r.gpu_quota_used, r.gpu_quota_limit),
                  GpuCell(r.gpu_used, r.gpu_capacity)});
  }
  std::cout << table.ToString();
  return OkStatus();
}

Status ResourceList(Api& svc, const Env& env) {
  service::ResourceFilter filter;
  if (!env.opts.pool.empty()) filter.pool = env.opts.pool;
  if (!env.opts.platform.empty()) filter.platform = env.opts.platform;
  filter.selector = env.opts.selector;
  ASSIGN_OR_RETURN(auto rows, svc.ListResources(env.caller, filter));
  if (env.format != OutputFormat::kTable) {
    json out = json::array();
    for (const auto& r : rows) out.push_back(service::ToJson(r));
    std::cout << Render(out, env.format);
    return OkStatus();
  }
  Table table({"NODE", "POOL", "PLATFORM", "TYPE", "NODE POOL", "STORAGE [Gi]", "CPU [#]",
               "MEMORY [Gi]", "GPU [#]"});
  std::set<std::string> conflicts;
  for (const auto& r : rows) {
    // A node in two node pools shows both, marked, and is reported once below the table.
    std::string node_pool = r.node_pools.empty() ? "default" : Join(r.node_pools, ",");
    if (!r.node_pool_conflict.empty()) {
      node_pool += " (conflict)";
      conflicts.insert(r.node_pool_conflict);
    }
    table.AddRow({r.node, r.pool, r.platform, r.type, node_pool,
                  UsedOfCapacity(r.storage_used, r.storage_capacity, kGi),
                  UsedOfCapacity(r.cpu_used, r.cpu_capacity, 1000),
                  UsedOfCapacity(r.memory_used, r.memory_capacity, kGi),
                  UsedOfCapacity(r.gpu_used, r.gpu_capacity, 1000)});
  }
  std::cout << table.ToString();
  for (const std::string& conflict : conflicts) std::cerr << "warning: " << conflict << "\n";
  if (rows.empty()) std::cerr << "no nodes match\n";
  return OkStatus();
}

Status WorkflowSubmit(Api& svc, const Env& env) {
  if (env.opts.pool.empty()) return InvalidArgumentError("workflow submit needs --pool POOL");
  service::SubmitRequest req;
  req.pool = env.opts.pool;
  ASSIGN_OR_RETURN(req.spec_text, model::ReadFile(env.opts.file));
  req.file_name = env.opts.file;
  for (const auto& kv : env.opts.set_values) {
    ASSIGN_OR_RETURN(auto pair, submit::ParseSetValue(kv));
    req.set_values[pair.first] = pair.second;
  }
  if (!env.opts.node_pools.empty()) {
    auto pools = submit::ParseNodePoolList(env.opts.node_pools);
    if (!pools.ok()) return InvalidArgumentError("--node-pools: " + pools.status().message());
    req.node_pools = std::move(*pools);
  }
  req.queue = env.opts.queue;
  req.dry_run = env.opts.dry_run;
  ASSIGN_OR_RETURN(auto result, svc.SubmitWorkflow(env.caller, req));
  PrintWarnings(result.warnings);
  if (env.format == OutputFormat::kJson) {
    std::cout << Render(service::ToJson(result), env.format);
    return OkStatus();
  }
  if (req.dry_run) {
    // The Kubernetes Pods, as a multi-document YAML stream.
    for (size_t i = 0; i < result.pods.size(); ++i) {
      if (i > 0 || env.format == OutputFormat::kYaml) std::cout << "---\n";
      std::cout << model::ToYaml(result.pods[i]);
    }
    return OkStatus();
  }
  if (env.format == OutputFormat::kYaml) {
    std::cout << Render(service::ToJson(result), env.format);
    return OkStatus();
  }
  std::cout << "Workflow submit successful.\n"
            << "Workflow ID - " << Shown(result.workflow_id) << "\n"
            << "Status - " << result.status << " (" << result.task_count << " tasks in pool "
            << Shown(result.pool) << ", queue " << Shown(result.queue) << ")\n";
  return OkStatus();
}

void PrintWorkflowTable(const std::vector<service::WorkflowView>& views) {
  Table table({"WORKFLOW ID", "POOL", "QUEUE", "USER", "STATUS", "TASKS", "SUBMITTED"});
  for (const auto& v : views) {
    table.AddRow({v.id, v.pool, v.queue, v.user, v.status, std::to_string(v.tasks.size()),
                  Timestamp(v.submitted_ms)});
  }
  std::cout << table.ToString();
}

Status WorkflowQuery(Api& svc, const Env& env) {
  ASSIGN_OR_RETURN(auto view, svc.QueryWorkflow(env.caller, env.opts.id));
  if (env.format != OutputFormat::kTable) {
    std::cout << Render(service::ToJson(view), env.format);
    return OkStatus();
  }
  std::cout << "Workflow ID : " << Shown(view.id) << "\n"
            << "Status      : " << Shown(view.status) << "\n"
            << "User        : " << Shown(view.user) << "\n"
            << "Pool        : " << Shown(view.pool) << "\n"
            << "Queue       : " << Shown(view.queue) << "\n"
            << "Submit Time : " << Timestamp(view.submitted_ms) << "\n\n";
  Table table({"GROUP", "TASK", "PLATFORM", "STATUS", "NODE", "MESSAGE"});
  for (const auto& t : view.tasks) {
    table.AddRow({t.group, t.name, t.platform, t.status, t.node.empty() ? "-" : t.node, t.message});
  }
  std::cout << table.ToString();
  return OkStatus();
}

Status WorkflowList(Api& svc, const Env& env) {
  service::WorkflowFilter filter;
  if (!env.opts.pool.empty()) filter.pool = env.opts.pool;
  if (!env.opts.filter_user.empty()) filter.user = env.opts.filter_user;
  if (!env.opts.status.empty()) filter.status = env.opts.status;
  filter.limit = env.opts.limit;
  ASSIGN_OR_RETURN(auto views, svc.ListWorkflows(env.caller, filter));
  if (env.format != OutputFormat::kTable) {
    json out = json::array();
    for (const auto& v : views) out.push_back(service::ToJson(v));
    std::cout << Render(out, env.format);
    return OkStatus();
  }
  PrintWorkflowTable(views);
  return OkStatus();
}

Status WorkflowCancel(Api& svc, const Env& env) {
  ASSIGN_OR_RETURN(auto view, svc.CancelWorkflow(env.caller, env.opts.id));
  if (env.format != OutputFormat::kTable) {
    std::cout << Render(service::ToJson(view), env.format);
  } else {
    std::cout << "Workflow " << view.id << " canceled.\n";
  }
  return OkStatus();
}

// `gpupool schedule -f SCENARIO...`: one scheduling cycle over the files, offline, and with
// MachinePools in them the autoscaler's plan (autoscaler/autoscaler.h). With --server the scenario
// and the --interrupt nodes go to the server's what-if endpoint (the server's catalog applies), and
// the answer prints as JSON (-o yaml: YAML).
struct ScheduleFlags {
  std::vector<std::string> files;
  std::string catalog;                  // instance catalog file; "" = the built-in one
  std::vector<std::string> interrupts;  // spot nodes that get the 2-minute notice
};

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
    auto client = server::Client::FromEnvironment(env.opts.server);
    // POST /api/schedule?interrupt=NODE,...: the server's what-if (server/what_if.h).
    const bool table = env.format == OutputFormat::kTable;
    std::string path =
        "/api/schedule" + server::Client::Query({{"interrupt", Join(flags.interrupts, ",")},
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

// Prints a failed command's error and returns the exit code. Over --server a request refused for
// want of a valid token says what to set, and a denied one says so with its HTTP status.
int Failed(const Status& status, const Options& o) {
  if (!o.server.empty() && status.code() == StatusCode::kUnauthenticated) {
    const char* token = std::getenv("GPUPOOL_TOKEN");
    if (token == nullptr || *token == '\0') {
      std::cerr << "error: " << o.server
                << " needs a token (HTTP 401): set GPUPOOL_TOKEN to a bearer token it accepts "
                   "(server: "
                << Shown(status.message()) << ")\n";
    } else {
      std::cerr << "error: " << o.server
                << " refused the token in GPUPOOL_TOKEN (HTTP 401): " << Shown(status.message())
                << "\n";
    }
    return kExitFailure;
  }
  if (!o.server.empty() && status.code() == StatusCode::kPermissionDenied) {
    std::cerr << "error: permission denied (HTTP 403): " << Shown(status.message()) << "\n";
    return kExitFailure;
  }
  std::cerr << "error: " << Shown(status.message()) << "\n";
  return kExitFailure;
}

// Arguments become names, descriptions and file names that go into the store and into JSON,
// which hold UTF-8 only: anything else is refused before it is used.
Status CheckArguments(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (auto bad = FindInvalidUtf8(argv[i])) {
      return InvalidArgumentError("argument " + std::to_string(i) + " (\"" + TerminalSafe(argv[i]) +
                                  "\") is not valid UTF-8 (byte " + bad->ByteText() +
                                  " at column " + std::to_string(bad->column) + ")");
    }
  }
  return OkStatus();
}

}  // namespace

int RunCli(int argc, char** argv) {
  if (Status s = CheckArguments(argc, argv); !s.ok()) {
    std::cerr << "error: " << s.message() << "\n";
    return kExitUsage;
  }
  CLI::App app{"gpupool: pools, platforms and quotas for shared GPU clusters", "gpupool"};
  app.require_subcommand(1);
  app.fallthrough();
  Env env;
  Options& o = env.opts;
  app.add_option("--db", o.db,
                 "store URL: sqlite:PATH, PATH or postgresql://... (default $GPUPOOL_DB, else "
                 "~/.local/share/gpupool/gpupool.db)");
  app.add_option("--server", o.server, "talk to a gpupool server at URL instead of a store");
  app.add_option("-o,--output", o.output, "output format: table, json or yaml");
  app.add_option("--user", o.user, "offline identity (default: the OS user)");
  app.add_option("--roles", o.roles,
                 "offline roles, comma separated (default with no --user: osmo-admin)");

  // Which command runs, chosen by the subcommand callbacks.
  std::function<Status(Api&, const Env&)> command;
  auto use = [&command](CLI::App* sub, std::function<Status(Api&, const Env&)> fn) {
    sub->callback([&command, fn = std::move(fn)] { command = fn; });
  };

  // config
  CLI::App* config = app.add_subcommand("config",
                                        "configs: update, set, show, list, delete, "
                                        "history, rollback");
  config->require_subcommand(1);
  auto add_file = [&o](CLI::App* sub) {
    sub->add_option("-f,--file", o.file, "config file (JSON)");
  };
  auto add_description = [&o](CLI::App* sub) {
    sub->add_option("--description", o.description, "note recorded with the revision");
  };
  CLI::App* update = config->add_subcommand("update", "create or replace configs from a file");
  update->add_option("KIND", o.kind, "POOL, POD_TEMPLATE, RESOURCE_VALIDATION, ROLE, BACKEND, ...")
      ->required();
  update->add_option("NAME", o.name, "config name (omit for a file holding {name: body, ...})");
  update->add_option("-f,--file", o.file, "config file (JSON)")->required();
  add_description(update);
  use(update, ConfigUpdate);

  CLI::App* set = config->add_subcommand(
      "set", "ROLE NAME -f FILE, or ROLE osmo-<prefix> pool (generated pool role)");
  set->add_option("KIND", o.kind)->required();
  set->add_option("NAME", o.name)->required();
  set->add_option("TYPE", o.extra, "pool: generate the role for pools named <prefix>*")
      ->check(CLI::IsMember({"pool"}));
  add_file(set);
  add_description(set);
  use(set, ConfigSet);

  CLI::App* show = config->add_subcommand("show", "print a config (or one of its revisions)");
  show->add_option("KIND", o.kind)->required();
  show->add_option("NAME", o.name)->required();
  show->add_option("--revision", o.revision)->each([&o](const std::string&) {
    o.has_revision = true;
  });
  use(show, ConfigShow);

  CLI::App* list = config->add_subcommand("list", "list configs");
  list->add_option("KIND", o.kind);
  use(list, ConfigList);

  CLI::App* del = config->add_subcommand("delete", "delete a config");
  del->add_option("KIND", o.kind)->required();
  del->add_option("NAME", o.name)->required();
  del->add_flag("--force", o.force,
                "delete a pool even if unfinished workflows use it or a role grants it by name "
                "(as osmo-user grants the default pool)");
  add_description(del);
  use(del, ConfigDelete);

  CLI::App* history = config->add_subcommand("history", "revisions, newest first");
  history->add_option("KIND", o.kind);
  history->add_option("NAME", o.name);
  history->add_option("--limit", o.limit, "at most this many revisions (default 100)");
  use(history, ConfigHistory);

  CLI::App* rollback =
      config->add_subcommand("rollback", "make an earlier revision current (a new revision)");
  rollback->add_option("KIND", o.kind)->required();
  rollback->add_option("NAME", o.name)->required();
  rollback->add_option("--revision", o.revision)->required()->each([&o](const std::string&) {
    o.has_revision = true;
  });
  add_description(rollback);
  use(rollback, ConfigRollback);

  // apply
  CLI::App* apply = app.add_subcommand("apply", "apply gpupool.io/v1 manifests (and v1 Nodes)");
  apply->add_option("-f,--file", o.file, "manifest file or directory")->required();
  add_description(apply);
  use(apply, Apply);

  // node
  CLI::App* node = app.add_subcommand("node", "cluster nodes");
  node->require_subcommand(1);
  CLI::App* import = node->add_subcommand(
      "import", "import kubectl Node/NodeList (JSON or YAML) or the openb node CSV");
  import->add_option("FILE", o.file)->required();
  import->add_flag("--replace", o.replace, "afterwards hold exactly these nodes");
  use(import, NodeImport);

  // pool
  CLI::App* pool = app.add_subcommand("pool", "pools");
  pool->require_subcommand(1);
  use(pool->add_subcommand("list", "pools with status and GPU quota"), PoolList);

  // resource
  CLI::App* resource = app.add_subcommand("resource", "nodes by pool and platform");
  resource->require_subcommand(1);
  CLI::App* rlist = resource->add_subcommand("list", "nodes with pool, platform, type, usage");
  rlist->add_option("-p,--pool", o.pool);
  rlist->add_option("--platform", o.platform);
  rlist->add_option("-l,--selector", o.selector,
                    "label selector, as `oc get nodes -l`: k=v, k!=v, k in (a,b), k notin (a,b), "
                    "k, !k; comma-joined");
  use(rlist, ResourceList);

  // profile
  CLI::App* profile =
      app.add_subcommand("profile", "who you are, your roles, the pools you may use");
  use(profile, [](Api& svc, const Env& env) { return PrintProfile(svc, env.caller, env.format); });

  // queue, machinepool: the read-only views as tables
  CLI::App* queue = app.add_subcommand("queue", "departments and projects (quota per node pool)");
  queue->require_subcommand(1);
  CLI::App* qlist = queue->add_subcommand("list", "quota, fair share, allocation, pending");
  qlist->add_option("--resource", o.resource, "gpu, cpu or memory")->capture_default_str();
  use(qlist, [](Api& svc, const Env& env) {
    return PrintQueueList(svc, env.caller, env.format, env.opts.resource);
  });
  CLI::App* machinepool = app.add_subcommand("machinepool", "autoscaled machine pools");
  machinepool->require_subcommand(1);
  CLI::App* mlist = machinepool->add_subcommand("list", "replicas, prices, cost, last scale event");
  use(mlist,
      [](Api& svc, const Env& env) { return PrintMachinePoolList(svc, env.caller, env.format); });

  // workflow
  CLI::App* workflow =
      app.add_subcommand("workflow", "submit, query, list, cancel workflows; their logs");
  workflow->require_subcommand(1);
  CLI::App* wsubmit = workflow->add_subcommand("submit", "submit a workflow file to a pool");
  wsubmit->add_option("FILE", o.file)->required();
  wsubmit->add_option("-p,--pool", o.pool)->required();
  wsubmit->add_option("--set", o.set_values, "k=v for {{k}} in the file (repeatable)");
  wsubmit->add_option("--node-pools", o.node_pools,
                      "node pools in preference order, e.g. a100-80,default (replaces the "
                      "workflow's node_pools; default: those of the platform's nodes)");
  wsubmit->add_option("--queue", o.queue,
                      "the project (QUEUE) whose quota the workflow uses; your roles must allow "
                      "it (replaces the workflow's queue; default: the pool's own quota)");
  wsubmit->add_flag("--dry-run", o.dry_run, "print the Kubernetes Pods, store nothing");
  use(wsubmit, WorkflowSubmit);
  CLI::App* wquery = workflow->add_subcommand("query", "one workflow and its tasks");
  wquery->add_option("ID", o.id)->required();
  use(wquery, WorkflowQuery);
  CLI::App* wlist = workflow->add_subcommand("list", "workflows");
  wlist->add_option("-p,--pool", o.pool);
  wlist->add_option("--status", o.status);
  wlist->add_option("--submitted-by", o.filter_user);
  wlist->add_option("--limit", o.limit);
  use(wlist, WorkflowList);
  CLI::App* wcancel = workflow->add_subcommand("cancel", "cancel a workflow");
  wcancel->add_option("ID", o.id)->required();
  use(wcancel, WorkflowCancel);
  LogsOptions logs;
  int logs_retry = -1;
  CLI::App* wlogs = workflow->add_subcommand(
      "logs", "a workflow's task output, from the server's backend (--server)");
  wlogs->add_option("WORKFLOW", logs.workflow)->required();
  wlogs->add_option("TASK", logs.task, "task name, or GROUP/NAME (default: every task)");
  wlogs->add_option("--retry", logs_retry, "an earlier attempt (default: the latest)");
  wlogs->add_flag("-f,--follow", logs.follow, "keep printing until the tasks have ended");
  bool logs_chosen = false;
  wlogs->callback([&logs_chosen] { logs_chosen = true; });

  // schedule: the offline what-if (no store needed).
  ScheduleFlags schedule_flags;
  CLI::App* schedule = app.add_subcommand(
      "schedule",
      "what-if: place the pending pods of scenario files (Nodes, Pods, Queues, NodePools, "
      "MachinePools); with machine pools, also which nodes the autoscaler adds or removes");
  schedule->add_option("-f,--file", schedule_flags.files, "scenario file (repeatable)")->required();
  schedule->add_option("--catalog", schedule_flags.catalog,
                       "instance type catalog (JSON/YAML) for machine pools; default: built in");
  schedule->add_option("--interrupt", schedule_flags.interrupts,
                       "spot node that gets its 2-minute interruption notice (repeatable)");
  bool schedule_chosen = false;
  schedule->callback([&schedule_chosen] { schedule_chosen = true; });

  // replay: a trace in simulated time (cli/replay_command.h), offline.
  ReplayFlags replay_flags;
  AddReplaySubcommand(app, replay_flags);

  // serve: the HTTP server (server/serve_command.h); runs inside parse() until stopped.
  int serve_exit = -1;
  server::AddServeSubcommand(app, &serve_exit);

  for (CLI::App* sub :
       {config, apply, node, pool, resource, queue, machinepool, profile, workflow, schedule}) {
    sub->fallthrough();
  }
  for (CLI::App* sub : {update, set, show, list, del, history, rollback, import, rlist, qlist,
                        mlist, wsubmit, wquery, wlist, wcancel, wlogs}) {
    sub->fallthrough();
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }

  if (serve_exit >= 0) return serve_exit;

  auto format = ParseOutputFormat(o.output);
  if (!format.ok()) {
    std::cerr << "error: " << format.status().message() << "\n";
    return kExitUsage;
  }
  env.format = *format;
  env.caller.source = "cli";
  if (o.user.empty() && o.roles.empty()) {
    env.caller.user = OsUser();
    env.caller.roles = {"osmo-admin"};
  } else {
    env.caller.user = o.user.empty() ? OsUser() : o.user;
    for (const auto& r : Split(o.roles, ',')) {
      std::string role(Trim(r));
      if (!role.empty()) env.caller.roles.push_back(role);
    }
  }
  if (replay_flags.chosen) return RunReplay(replay_flags, env.format);
  if (schedule_chosen) {
    Status s = Schedule(schedule_flags, env);
    return s.ok() ? kExitOk : Failed(s, o);
  }
  if (logs_chosen) {
    if (o.server.empty()) {
      std::cerr << "error: workflow logs reads task output from the backend that ran the task: "
                   "pass --server URL of a gpupool server\n";
      return kExitUsage;
    }
    if (logs_retry >= 0) logs.retry = logs_retry;
    auto client = server::Client::FromEnvironment(o.server);
    Status s = PrintWorkflowLogs(*client, logs, std::cout, [](int64_t ms) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    });
    return s.ok() ? kExitOk : Failed(s, o);
  }
  if (!command) {
    std::cerr << "error: no command given; see gpupool --help\n";
    return kExitUsage;
  }
  if (!o.server.empty()) {
    // Online: the server decides who the caller is (GPUPOOL_TOKEN), not --user/--roles.
    auto api = RemoteApi(server::Client::FromEnvironment(o.server));
    Status status = command(*api, env);
    return status.ok() ? kExitOk : Failed(status, o);
  }

  std::string url = o.db;
  if (url.empty()) {
    auto d = DefaultDbUrl();
    if (!d.ok()) {
      std::cerr << "error: " << d.status().message() << "\n";
      return kExitFailure;
    }
    url = *d;
  }
  if (Status s = PrepareDb(url); !s.ok()) {
    std::cerr << "error: " << s.message() << "\n";
    return kExitFailure;
  }
  SystemClock clock;
  store::StoreOptions store_options;
  store_options.clock = &clock;
  auto store = store::OpenStore(url, store_options);
  if (!store.ok()) {
    std::cerr << "error: cannot open store " << url << ": " << store.status().message() << "\n";
    return kExitFailure;
  }
  service::Service svc(**store, clock);
  // Offline, machine pools are checked against the built-in instance catalog.
  svc.SetMachinePoolSupport(server::MachinePoolSupportFor(autoscaler::Catalog::Builtin()));
  if (Status s = svc.EnsureBuiltins(); !s.ok()) {
    std::cerr << "error: cannot write the built-in configs: " << s.message() << "\n";
    return kExitFailure;
  }
  auto api = LocalApi(svc, **store, clock);
  Status status = command(*api, env);
  if (!status.ok()) {
    std::cerr << "error: " << Shown(status.message()) << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace gpupool::cli
