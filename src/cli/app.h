#pragma once
// The `gpupool` command (DESIGN §7). Offline it opens the store named by --db (default
// $GPUPOOL_DB, else ~/.local/share/gpupool/gpupool.db) and calls the service functions directly.
//
// Offline identity: --user NAME --roles a,b. Without them the caller is the local OS user with
// role osmo-admin: whoever can write the database file owns it anyway, so pretending otherwise
// would protect nothing. --user without --roles has no roles (everyone has osmo-default).
//
// Exit codes: 0 ok, 1 the request failed (validation, denied, not found, conflict), 2 usage
// error. Errors go to stderr as "error: ...", warnings as "warning: ...".

#include <functional>

// CLI11's namespace, named by the library.
namespace CLI {  // NOLINT(readability-identifier-naming)
class App;
}  // namespace CLI

namespace gpupool::cli {

// Adds a subcommand that runs inside CLI::App::parse and leaves its exit code in *exit_code
// (untouched unless it ran): how the `gpupool` binary adds `serve` (app/serve_command.h), so
// that the CLI's library does not link the server.
using AddSubcommand = std::function<void(CLI::App& app, int* exit_code)>;

int RunCli(int argc, char** argv, const AddSubcommand& add_serve = {});

}  // namespace gpupool::cli
