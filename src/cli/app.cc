#include "cli/app.h"

#include <pwd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>

#include "autoscaler/autoscaler.h"
#include "cli/api.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/logs.h"
#include "cli/replay_command.h"
#include "client/client.h"
#include "common/clock.h"
#include "common/safe_text.h"
#include "common/strings.h"
#include "service/machine_pool_support.h"
#include "service/service.h"
#include "store/store.h"

namespace gpupool::cli {
namespace {

namespace fs = std::filesystem;

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

void AddGlobalOptions(CLI::App& app, Options& o) {
  app.add_option("--db", o.db,
                 "store URL: sqlite:PATH, PATH or postgresql://... (default $GPUPOOL_DB, else "
                 "~/.local/share/gpupool/gpupool.db)");
  app.add_option("--server", o.server, "talk to a gpupool server at URL instead of a store");
  app.add_option("-o,--output", o.output, "output format: table, json or yaml");
  app.add_option("--user", o.user, "offline identity (default: the OS user)");
  app.add_option("--roles", o.roles,
                 "offline roles, comma separated (default with no --user: osmo-admin)");
}

// The offline identity (app.h): --user and --roles, else the OS user with role osmo-admin.
service::Caller CallerOf(const Options& o) {
  service::Caller caller;
  caller.source = "cli";
  if (o.user.empty() && o.roles.empty()) {
    caller.user = OsUser();
    caller.roles = {"osmo-admin"};
  } else {
    caller.user = o.user.empty() ? OsUser() : o.user;
    for (const auto& r : Split(o.roles, ',')) {
      std::string role(Trim(r));
      if (!role.empty()) caller.roles.push_back(role);
    }
  }
  return caller;
}

int RunWorkflowLogs(WorkflowLogsFlags& flags, const Options& o) {
  if (o.server.empty()) {
    std::cerr << "error: workflow logs reads task output from the backend that ran the task: "
                 "pass --server URL of a gpupool server\n";
    return kExitUsage;
  }
  if (flags.retry >= 0) flags.logs.retry = flags.retry;
  auto client = client::Client::FromEnvironment(o.server);
  Status s = PrintWorkflowLogs(*client, flags.logs, std::cout, [](int64_t ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  });
  return s.ok() ? kExitOk : Failed(s, o);
}

// Offline: the command on the store --db names (created if need be), with the built-in configs.
int RunOffline(const Command& command, const Env& env) {
  const Options& o = env.opts;
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
  svc.SetMachinePoolSupport(service::MachinePoolSupportFor(autoscaler::Catalog::Builtin()));
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

}  // namespace

int RunCli(int argc, char** argv, const AddSubcommand& add_serve) {
  if (Status s = CheckArguments(argc, argv); !s.ok()) {
    std::cerr << "error: " << s.message() << "\n";
    return kExitUsage;
  }
  CLI::App app{"gpupool: pools, platforms and quotas for shared GPU clusters", "gpupool"};
  app.require_subcommand(1);
  app.fallthrough();
  Env env;
  Options& o = env.opts;
  AddGlobalOptions(app, o);

  // Which command runs, chosen by the subcommand callbacks.
  Command command;
  auto use = [&command](CLI::App* sub, Command fn) {
    sub->callback([&command, fn = std::move(fn)] { command = fn; });
  };
  AddConfigCommands(app, o, use);
  AddClusterCommands(app, o, use);
  WorkflowLogsFlags logs_flags;
  AddWorkflowCommands(app, o, use, logs_flags);

  // schedule: the offline what-if (no store needed).
  ScheduleFlags schedule_flags;
  AddScheduleCommand(app, schedule_flags);

  // replay: a trace in simulated time (cli/replay_command.h), offline.
  ReplayFlags replay_flags;
  AddReplaySubcommand(app, replay_flags);

  // serve: the HTTP server (app/serve_command.h), added by the binary that links it; it runs
  // inside parse() until stopped.
  int serve_exit = -1;
  if (add_serve) add_serve(app, &serve_exit);

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
  env.caller = CallerOf(o);
  if (replay_flags.chosen) return RunReplay(replay_flags, env.format);
  if (schedule_flags.chosen) {
    Status s = Schedule(schedule_flags, env);
    return s.ok() ? kExitOk : Failed(s, o);
  }
  if (logs_flags.chosen) return RunWorkflowLogs(logs_flags, o);
  if (!command) {
    std::cerr << "error: no command given; see gpupool --help\n";
    return kExitUsage;
  }
  if (!o.server.empty()) {
    // Online: the server decides who the caller is (GPUPOOL_TOKEN), not --user/--roles.
    auto api = RemoteApi(client::Client::FromEnvironment(o.server));
    Status status = command(*api, env);
    return status.ok() ? kExitOk : Failed(status, o);
  }
  return RunOffline(command, env);
}

}  // namespace gpupool::cli
