#pragma once
// `gpupool serve`: the HTTP API, the scheduling loop (leader-elected) and the sim backend in one
// process.
//
//   gpupool serve --listen 127.0.0.1:8080 --db URL --backend sim:CLUSTER_FILE
//                 (or --backend slurm:http://HOST:PORT | slurm:unix:PATH
//                  [--slurm-jwt-file FILE] [--slurm-user USER] [--slurm-output-dir DIR]
//                  [--slurm-partition P] [--node-sync 5s])
//                 (or --backend kubernetes [--kubeconfig FILE] [--context NAME]
//                  [--kube-qps 5 --kube-burst 10] [--kube-namespace gpupool])
//                 [--auth oidc --jwks FILE_OR_URL --issuer ISS --audience AUD
//                  [--roles-claim realm_access.roles] | --auth dev]
//                 [--max-body-bytes N] [--threads N] [--db-readers N] [--lease-ttl 5s]
//                 [--interval 200ms]
//                 [--no-scheduler] [--catalog FILE] [--provision-delay 60s]
//                 [--scale-down-after 10m] [--history-interval 60s]
//                 [--ui-client-id ID [--ui-scopes S] [--ui-token access_token|id_token]]
//
// The web dashboard is served at / (api/ui_routes.h), its data at /api/views/*.
//
// On start it opens the store (running migrations), writes the built-in configs to a new store,
// imports the backend's nodes, binds, prints `gpupool: listening on http://HOST:PORT` on stdout
// (and the dev-auth warning on stderr), then serves until SIGINT or SIGTERM.

#include <cstdint>
#include <string>

#include "common/limits.h"

// CLI11's namespace, named by the library.
namespace CLI {  // NOLINT(readability-identifier-naming)
class App;
}  // namespace CLI

namespace gpupool::app {

struct ServeOptions {
  std::string listen = "127.0.0.1:8080";
  std::string db;  // "" = $GPUPOOL_DB, else sqlite:~/.local/share/gpupool/gpupool.db
  std::string
      backend;  // sim:CLUSTER_FILE, slurm:URL, kubernetes; "" = no backend (API only, no loop)
  // slurm: the token file when $SLURM_JWT is unset, the user ("" = the OS user), where tasks
  // write their output ("" = /tmp), a partition for every job ("" = each node's default).
  std::string slurm_jwt_file;
  std::string slurm_user;
  std::string slurm_output_dir;
  std::string slurm_partition;
  // How often nodes are re-read from a backend that reports its own (slurm).
  std::string node_sync = "5s";
  // --backend kubernetes: where the API server is, how fast to talk to it, the namespace of
  // pools whose BACKEND config names none.
  std::string kubeconfig;
  std::string kube_context;
  double kube_qps = 5;
  int kube_burst = 10;
  std::string kube_namespace = "gpupool";
  std::string kube_event_repeat = "60s";  // a pending pod's FailedScheduling Event counted again
  std::string eviction_backoff = "30s";   // a refused eviction's victim is no victim meanwhile
  std::string auth = "oidc";              // oidc | dev
  std::string jwks;
  std::string issuer;
  std::string audience;
  std::string roles_claim = "roles";
  size_t max_body_bytes = kDefaultMaxInputBytes;
  int max_connections = 0;  // 0: ServerOptions' default (the descriptor limit less a reserve)
  int threads = 64;
  int io_threads = 0;  // 0: one per core, at least 2
  // Read connections beside the writer; 0 = as many as --threads for SQLite (a reader is a file
  // handle: none waits for another) and 16 for PostgreSQL (a reader is a server process).
  int db_readers = 0;
  std::string lease_ttl = "5s";
  std::string interval = "200ms";
  std::string log_slow_steps = "1s";  // a scheduling step at least this long logs its parts; 0: off
  bool no_scheduler = false;
  std::string placement = "fgd";  // fgd | gpu-packing | best-fit
  // Machine pools (MACHINE_POOL configs): instance catalog file ("" = built in), the time from a
  // node's launch to ready, and how long an empty node stays.
  std::string catalog;
  std::string provision_delay = "60s";
  std::string scale_down_after = "10m";
  std::string machine_pool_interval = "10s";
  // The dashboard: how often the leader samples allocation for its charts (24 hours are kept,
  // at most 2,880 samples), and the UI's OIDC client (authorization code with PKCE in the
  // browser): its client id, scopes and which token it sends to the API.
  std::string history_interval = "60s";
  std::string ui_client_id;
  std::string ui_scopes = "openid profile email";
  std::string ui_token = "access_token";
};

// Runs the server until SIGINT/SIGTERM. Returns the process exit code: 0 after a clean stop,
// 1 when start-up fails (the reason on stderr), 2 for bad options.
int RunServe(const ServeOptions& options);

// Adds the `serve` subcommand to `app`. When it is chosen, its callback runs RunServe (blocking)
// and stores the exit code in *exit_code; *exit_code is left untouched otherwise, so callers
// initialise it to -1 and, after app.parse(), return it when it is >= 0.
void AddServeSubcommand(CLI::App& app, int* exit_code);

}  // namespace gpupool::app
