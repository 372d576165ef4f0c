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

namespace gpupool::cli {

int RunCli(int argc, char** argv);

}  // namespace gpupool::cli
