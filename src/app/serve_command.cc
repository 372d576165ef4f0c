#include "app/serve_command.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <thread>

#include "api/access_control.h"
#include "api/api.h"
#include "api/auth.h"
#include "api/http_server.h"
#include "api/log_routes.h"
#include "api/ui_routes.h"
#include "api/view_routes.h"
#include "api/what_if.h"
#include "autoscaler/autoscaler.h"
#include "backend/backend.h"
#include "backend/sim/sim_backend.h"
#include "common/strings.h"
#include "config/config_set.h"
#include "config/kinds.h"
#include "config/membership.h"
#include "controller/machine_pools.h"
#include "controller/node_sync.h"
#include "controller/scheduling_loop.h"
#include "metrics/store_metrics.h"
#include "model/duration.h"
#include "scheduler/scheduler.h"
#include "service/machine_pool_support.h"
#include "service/service.h"
#include "store/store.h"

namespace gpupool::app {
namespace {

// PostgreSQL read connections by default: a few per core of a typical server, far below its
// default max_connections of 100 even with several gpupool servers.
constexpr int kPostgresReaders = 16;

// GETs are answered on the I/O threads. A SQLite read is a few microseconds of CPU, so one loop
// per core. The hot PostgreSQL reads (GET /api/workflow/{id}) no longer wait on a loop (their
// version checks are batched on the store's read thread), but the other GETs (lists, resources,
// configs) still wait for a round trip, so two loops per core keep the cores busy meanwhile.
// Measured on loopback PostgreSQL (docs/benchmarks/server.md round 5), reads of 1,000 workflows:
// 2 loops 26,800-30,200/s, 4 loops 29,300/s, 8 loops 25,800-26,500/s; submissions alike.
// 0 leaves the HTTP server's default, one loop per core.
int DefaultIoThreads(const std::string& db) {
  if (!db.starts_with("postgres")) return 0;
  return 2 * std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop = true; }

Result<int64_t> ParseMillis(const std::string& text, const char* option) {
  if (EndsWith(text, "ms")) {
    char* end = nullptr;
    long long value = std::strtoll(text.c_str(), &end, 10);
    if (end != text.c_str() + text.size() - 2 || value < 0) {
      return InvalidArgumentError(std::string(option) + " \"" + text + "\": not a duration");
    }
    return static_cast<int64_t>(value);
  }
  auto seconds = model::ParseDurationSeconds(text);
  if (!seconds.ok()) return seconds.status().WithContext(option);
  return *seconds * 1000;
}

std::string DefaultDb() {
  if (const char* env = std::getenv("GPUPOOL_DB"); env != nullptr && *env != '\0') return env;
  const char* home = std::getenv("HOME");
  std::string dir = std::string(home ? home : ".") + "/.local/share/gpupool";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return "sqlite:" + dir + "/gpupool.db";
}

std::string HolderId() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::random_device random;
  return std::string(host) + ":" + std::to_string(getpid()) + ":" + std::to_string(random());
}

Result<std::unique_ptr<api::Authenticator>> MakeAuthenticator(const ServeOptions& o,
                                                              const Clock& clock) {
  if (o.auth == "dev") {
    std::cerr << "\n"
              << std::string(78, '!') << "\n"
              << api::kDevAuthWarning << "\n"
              << std::string(78, '!') << "\n\n";
    return api::MakeDevAuthenticator();
  }
  if (o.auth != "oidc") {
    return InvalidArgumentError("--auth \"" + o.auth + "\": expected oidc or dev");
  }
  if (o.jwks.empty() || o.issuer.empty() || o.audience.empty()) {
    return InvalidArgumentError(
        "--auth oidc needs --jwks, --issuer and --audience (or use "
        "--auth dev on a laptop)");
  }
  ASSIGN_OR_RETURN(api::KeySet keys, api::LoadKeySet(o.jwks));
  api::JwtOptions jwt;
  jwt.issuer = o.issuer;
  jwt.audience = o.audience;
  jwt.roles_claim = o.roles_claim;
  std::optional<api::JwksRefresh> refresh;
  if (StartsWith(o.jwks, "http://") || StartsWith(o.jwks, "https://")) {
    // An identity provider rotates its keys: re-fetch on an unknown key id (at most every 30 s)
    // and every 15 minutes.
    refresh = api::JwksRefresh{.fetch = [url = o.jwks] { return api::LoadKeySet(url); }};
  }
  return api::MakeOidcAuthenticator(
      std::make_unique<api::JwtVerifier>(jwt, std::move(keys), clock, std::move(refresh)));
}

Result<std::pair<std::string, int>> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgumentError("--listen \"" + listen + "\": expected HOST:PORT");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  char* end = nullptr;
  long port = std::strtol(listen.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 0 || port > 65535 || colon + 1 == listen.size()) {
    return InvalidArgumentError("--listen \"" + listen + "\": bad port");
  }
  return std::make_pair(host.empty() ? std::string("127.0.0.1") : host, static_cast<int>(port));
}

int Fail(const Status& status, int code = 1) {
  std::cerr << "gpupool serve: error: " << status.message() << "\n";
  return code;
}

// The options' values, parsed and checked (a refusal is a usage error: exit code 2).
struct ServeSettings {
  std::pair<std::string, int> listen;
  int64_t lease_ttl_ms = 0, interval_ms = 0, provision_delay_ms = 0, scale_down_after_ms = 0;
  int64_t node_sync_ms = 0, kube_event_repeat_ms = 0, eviction_backoff_ms = 0;
  int64_t history_interval_ms = 0, machine_pool_interval_ms = 0, slow_step_ms = 0;
  scheduler::PlacementPolicy placement{};
};

Result<ServeSettings> ParseSettings(const ServeOptions& o) {
  ServeSettings s;
  ASSIGN_OR_RETURN(s.listen, ParseListen(o.listen));
  ASSIGN_OR_RETURN(s.lease_ttl_ms, ParseMillis(o.lease_ttl, "--lease-ttl"));
  ASSIGN_OR_RETURN(s.interval_ms, ParseMillis(o.interval, "--interval"));
  ASSIGN_OR_RETURN(s.slow_step_ms, ParseMillis(o.log_slow_steps, "--log-slow-steps"));
  ASSIGN_OR_RETURN(s.placement, scheduler::ParsePlacementPolicy(o.placement));
  ASSIGN_OR_RETURN(s.provision_delay_ms, ParseMillis(o.provision_delay, "--provision-delay"));
  ASSIGN_OR_RETURN(s.scale_down_after_ms, ParseMillis(o.scale_down_after, "--scale-down-after"));
  ASSIGN_OR_RETURN(s.node_sync_ms, ParseMillis(o.node_sync, "--node-sync"));
  ASSIGN_OR_RETURN(s.kube_event_repeat_ms, ParseMillis(o.kube_event_repeat, "--kube-event-repeat"));
  ASSIGN_OR_RETURN(s.eviction_backoff_ms, ParseMillis(o.eviction_backoff, "--eviction-backoff"));
  ASSIGN_OR_RETURN(s.history_interval_ms, ParseMillis(o.history_interval, "--history-interval"));
  ASSIGN_OR_RETURN(s.machine_pool_interval_ms,
                   ParseMillis(o.machine_pool_interval, "--machine-pool-interval"));
  if (s.history_interval_ms < 1000) {
    return InvalidArgumentError("--history-interval \"" + o.history_interval +
                                "\": expected at least 1s");
  }
  if (o.ui_token != "access_token" && o.ui_token != "id_token") {
    return InvalidArgumentError("--ui-token \"" + o.ui_token +
                                "\": expected access_token or id_token");
  }
  return s;
}

// `--backend config:NAME`: the cluster the BACKEND config NAME says how to reach (its `slurm`
// settings; a --slurm-* flag given wins), with its nodes labelled gpupool.io/backend=NAME so that
// the pools naming NAME, and only those, are scheduled there. `spec` becomes the plain form.
Status ResolveBackendConfig(store::Store& store, std::string& spec,
                            backend::BackendOptions& options) {
  const std::string name = spec.substr(std::string_view("config:").size());
  const std::string flag = "--backend " + spec;
  auto record = store.GetConfig("BACKEND", name);
  if (!record.ok()) {
    if (record.status().code() != StatusCode::kNotFound) return record.status().WithContext(flag);
    return NotFoundError(flag + ": no BACKEND config \"" + name +
                         "\" in the store (create it: gpupool config update BACKEND " + name +
                         " --file FILE)");
  }
  ASSIGN_OR_RETURN(config::Backend backend, config::BackendFromJson(name, record->body));
  if (!backend.slurm) {
    return InvalidArgumentError(flag + ": BACKEND \"" + name +
                                "\" says no cluster to connect to (expected slurm.url)");
  }
  const config::SlurmConnection& slurm = *backend.slurm;
  spec = "slurm:" + slurm.url;
  for (auto [flag_value, config_value] :
       {std::pair{&options.slurm_jwt_file, &slurm.jwt_file},
        std::pair{&options.slurm_user, &slurm.user},
        std::pair{&options.slurm_partition, &slurm.partition},
        std::pair{&options.slurm_output_dir, &slurm.output_dir}}) {
    if (flag_value->empty()) *flag_value = *config_value;
  }
  options.node_labels[std::string(config::kBackendLabel)] = name;
  return OkStatus();
}

// The --backend's cluster (nullptr without one), its nodes upserted into the store. The sim
// backend also runs on the nodes imported before start-up.
Result<std::unique_ptr<backend::Backend>> OpenClusterBackend(const ServeOptions& o,
                                                             const ServeSettings& settings,
                                                             store::Store& store) {
  if (o.backend.empty()) return std::unique_ptr<backend::Backend>();
  backend::BackendOptions backend_options;
  backend_options.slurm_jwt_file = o.slurm_jwt_file;
  backend_options.slurm_user = o.slurm_user;
  backend_options.slurm_output_dir = o.slurm_output_dir;
  backend_options.slurm_partition = o.slurm_partition;
  backend_options.kubernetes = {o.kubeconfig, o.kube_context,   o.kube_qps,
                                o.kube_burst, o.kube_namespace, settings.kube_event_repeat_ms};
  std::string spec = o.backend;
  if (spec.starts_with("config:"))
    RETURN_IF_ERROR(ResolveBackendConfig(store, spec, backend_options));
  ASSIGN_OR_RETURN(std::unique_ptr<backend::Backend> backend,
                   backend::OpenBackend(spec, backend_options));
  ASSIGN_OR_RETURN(auto nodes, backend->ListNodes());
  std::vector<store::NodeRecord> records;
  for (const auto& node : nodes) {
    records.push_back({node["metadata"]["name"].get<std::string>(), node});
  }
  RETURN_IF_ERROR(store.UpsertNodes(records, /*replace_all=*/false));
  if (backend->Kind() == "sim") {
    // The simulated cluster also runs on the nodes imported into the store before start-up
    // (`gpupool node import`): the scheduler places on every node the store knows.
    ASSIGN_OR_RETURN(auto stored, store.ListNodes());
    std::vector<nlohmann::ordered_json> all;
    for (auto& node : stored) all.push_back(std::move(node.object));
    backend = std::make_unique<backend::SimBackend>(std::move(all));
  }
  return backend;
}

std::unique_ptr<controller::SchedulingLoop> MakeSchedulingLoop(
    const ServeSettings& settings, const autoscaler::Catalog& catalog, store::Store& store,
    backend::Backend& backend, const Clock& clock, metrics::Registry& registry,
    service::Views& views) {
  controller::LoopOptions loop_options;
  loop_options.holder = HolderId();
  loop_options.lease_ttl_ms = settings.lease_ttl_ms;
  loop_options.interval_ms = settings.interval_ms;
  loop_options.slow_step_ms = settings.slow_step_ms;
  loop_options.refused_eviction_backoff_ms = settings.eviction_backoff_ms;
  loop_options.scheduler.policy = settings.placement;
  loop_options.catalog = &catalog;
  loop_options.provision.provision_delay_ms = settings.provision_delay_ms;
  loop_options.provision.scale_down_after_ms = settings.scale_down_after_ms;
  loop_options.provision.scheduler = loop_options.scheduler;
  loop_options.views = &views;
  // Machine pools launch simulated nodes on the simulated cluster; on Kubernetes a pool with a
  // scale_target has its MachineSet or MachineDeployment scaled, and the cluster makes the nodes.
  loop_options.machine_pools = backend.Kind() == "sim";
  loop_options.scaled_machine_pools = backend.Kind() == "kubernetes";
  loop_options.scale_interval_ms = settings.machine_pool_interval_ms;
  return std::make_unique<controller::SchedulingLoop>(store, backend, clock, registry,
                                                      loop_options);
}

// /readyz: the store answers.
std::function<Status()> ReadyProbe(store::Store& store) {
  return [&store]() -> Status {
    auto probe = store.ListConfigs("ROLE");
    if (!probe.ok()) return UnavailableError("store: " + probe.status().message());
    return OkStatus();
  };
}

// Every route: the API, the dashboard's views, task logs and the dashboard itself.
api::Router BuildRouter(const ServeOptions& o, const api::ApiContext& context,
                        service::Views& views, const backend::Backend* backend) {
  service::Service& service = *context.service;
  api::Router router;
  api::AddApiRoutes(router, context);
  auto workflow_pool = [&service](const std::string& id) -> std::optional<std::string> {
    auto pool = service.WorkflowPool(id);
    if (!pool.ok()) return std::nullopt;  // the view reports NotFound
    return *pool;
  };
  api::AddViewRoutes(router, views, workflow_pool);
  api::AddLogRoutes(router, service, *context.store, backend, workflow_pool);
  api::UiOptions ui;
  ui.auth = o.auth;
  ui.issuer = o.issuer;
  ui.client_id = o.ui_client_id;
  ui.scopes = o.ui_scopes;
  ui.token = o.ui_token;
  api::AddUiRoutes(router, ui);
  return router;
}

// Serves (printing `banner` once everything runs) until SIGINT or SIGTERM, then stops the loop,
// the node sync and the server.
void ServeUntilSignal(api::HttpServer& http, controller::NodeSync* node_sync,
                      controller::SchedulingLoop* loop, const std::string& banner) {
  g_stop = false;
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  std::thread serving([&http] { http.Serve(); });
  if (node_sync) node_sync->Start();
  if (loop) loop->Start();
  std::cout << banner << std::endl;
  while (!g_stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::cout << "gpupool: stopping" << std::endl;
  if (loop) loop->Stop();
  if (node_sync) node_sync->Stop();
  http.Stop();
  serving.join();
}

}  // namespace

int RunServe(const ServeOptions& o) {
  SystemClock clock;
  auto settings = ParseSettings(o);
  if (!settings.ok()) return Fail(settings.status(), 2);
  if (o.auth == "oidc" && o.ui_client_id.empty()) {
    std::cerr << "gpupool serve: note: no --ui-client-id: the dashboard at / cannot log in with "
                 "OIDC\n";
  }
  std::optional<autoscaler::Catalog> own_catalog;
  if (!o.catalog.empty()) {
    auto loaded = autoscaler::LoadCatalogFile(o.catalog);
    if (!loaded.ok()) return Fail(loaded.status(), 2);
    own_catalog = std::move(*loaded);
  }
  const autoscaler::Catalog& catalog = own_catalog ? *own_catalog : autoscaler::Catalog::Builtin();
  auto authenticator = MakeAuthenticator(o, clock);
  if (!authenticator.ok()) {
    return Fail(authenticator.status(),
                authenticator.status().code() == StatusCode::kInvalidArgument ? 2 : 1);
  }

  std::string db = o.db.empty() ? DefaultDb() : o.db;
  metrics::Registry registry;
  store::StoreOptions store_options;
  store_options.clock = &clock;
  store_options.observe = metrics::ObserveStoreTransactions(registry);
  store_options.max_readers = o.db_readers > 0             ? o.db_readers
                              : db.starts_with("postgres") ? kPostgresReaders
                                                           : o.threads;
  auto store = store::OpenStore(db, store_options);
  if (!store.ok()) return Fail(store.status().WithContext("cannot open store " + db));
  service::Service service(**store, clock);
  service.SetMachinePoolSupport(service::MachinePoolSupportFor(catalog));
  // A new store's default pool: on Slurm without the osmo-ctrl sidecar, which nothing runs there
  // (`--backend config:NAME` needs a store that already has its configs).
  config::BuiltinOptions builtins;
  builtins.control_sidecar = !o.backend.starts_with("slurm:");
  if (Status s = service.EnsureBuiltins(builtins); !s.ok()) return Fail(s);
  service::ViewOptions view_options;
  view_options.history_interval_ms = settings->history_interval_ms;
  service::Views views(service, **store, clock, view_options);

  auto backend = OpenClusterBackend(o, *settings, **store);
  if (!backend.ok()) return Fail(backend.status());
  // A real cluster's nodes change under gpupool (down, drained, busy with others' jobs).
  std::unique_ptr<controller::NodeSync> node_sync;
  if (*backend && (*backend)->Kind() != "sim" && settings->node_sync_ms > 0) {
    node_sync = std::make_unique<controller::NodeSync>(
        **backend, **store, std::chrono::milliseconds(settings->node_sync_ms));
  }
  api::AccessControl access(**store, clock);
  std::unique_ptr<controller::SchedulingLoop> loop;
  if (*backend && !o.no_scheduler) {
    loop = MakeSchedulingLoop(*settings, catalog, **store, **backend, clock, registry, views);
    // A submission to an idle cluster is placed at once, not an interval later, and the loop
    // takes the stored record as it is rather than reading it back.
    service.SetSubmittedListener(
        [scheduling = loop.get()](std::shared_ptr<const store::WorkflowRecord> stored) {
          scheduling->Submitted(std::move(stored));
        });
  }

  api::ApiContext context;
  context.service = &service;
  context.store = store->get();
  context.access = &access;
  context.registry = &registry;
  context.clock = &clock;
  context.ready = ReadyProbe(*context.store);
  context.catalog = &catalog;
  context.what_if = api::MakeWhatIf(settings->placement, catalog, clock);

  api::ServerOptions server_options;
  server_options.max_body_bytes = o.max_body_bytes;
  server_options.threads = o.threads;
  server_options.io_threads = o.io_threads > 0 ? o.io_threads : DefaultIoThreads(db);
  server_options.max_connections = o.max_connections;
  api::HttpServer http(BuildRouter(o, context, views, backend->get()), authenticator->get(),
                       api::MakeAccessChecker(context), api::MakeAuditHook(context), registry,
                       server_options);
  const auto& [host, requested_port] = settings->listen;
  auto port = http.Bind(host, requested_port);
  if (!port.ok()) return Fail(port.status());
  ServeUntilSignal(http, node_sync.get(), loop.get(),
                   "gpupool: listening on http://" + host + ":" + std::to_string(*port) +
                       " (store " + std::string((*store)->Backend()) + ", auth " +
                       std::string((*authenticator)->Mode()) +
                       (loop ? ", scheduling loop on" : ", scheduling loop off") + ")");
  return 0;
}

namespace {

// --backend and its clusters' options (Slurm, Kubernetes), evictions and node sync.
void AddClusterOptions(CLI::App* serve, ServeOptions* options) {
  serve->add_option("--backend", options->backend,
                    "sim:CLUSTER_FILE (nodes as JSON/YAML), slurm:http://HOST:PORT or "
                    "slurm:unix:PATH (slurmrestd), kubernetes, or config:NAME (the cluster "
                    "BACKEND config NAME names; its nodes serve the pools of that BACKEND)");
  serve->add_option("--slurm-jwt-file", options->slurm_jwt_file,
                    "slurm: file holding the JWT when $SLURM_JWT is unset (`scontrol token`)");
  serve->add_option("--slurm-user", options->slurm_user,
                    "slurm: user the token belongs to (default: the OS user)");
  serve->add_option("--slurm-output-dir", options->slurm_output_dir,
                    "slurm: directory on the nodes for each task's output file (default /tmp)");
  serve->add_option("--slurm-partition", options->slurm_partition,
                    "slurm: partition for every job (default: each node's default partition)");
  serve->add_option("--kubeconfig", options->kubeconfig,
                    "kubernetes: kubeconfig (default: in-cluster, $KUBECONFIG, ~/.kube/config)");
  serve->add_option("--context", options->kube_context, "kubernetes: kubeconfig context");
  serve
      ->add_option("--kube-qps", options->kube_qps,
                   "kubernetes: API server requests per second (< 0: no limit)")
      ->capture_default_str();
  serve->add_option("--kube-burst", options->kube_burst, "kubernetes: API server request burst")
      ->capture_default_str();
  serve
      ->add_option("--kube-namespace", options->kube_namespace,
                   "kubernetes: namespace of task pods when the pool's BACKEND config names none")
      ->capture_default_str();
  serve
      ->add_option("--kube-event-repeat", options->kube_event_repeat,
                   "kubernetes: how often a pod left pending for the same reason gets its "
                   "FailedScheduling Event counted again")
      ->capture_default_str();
  serve
      ->add_option("--eviction-backoff", options->eviction_backoff,
                   "a task whose eviction the cluster refused (a PodDisruptionBudget) is not "
                   "chosen as a victim again for this long")
      ->capture_default_str();
  serve
      ->add_option("--node-sync", options->node_sync,
                   "how often a real cluster's nodes are re-read (0 = never)")
      ->capture_default_str();
}

// Authentication, the HTTP server's limits and threads, the store's readers.
void AddAuthAndHttpOptions(CLI::App* serve, ServeOptions* options) {
  serve->add_option("--auth", options->auth, "oidc or dev")->capture_default_str();
  serve->add_option("--jwks", options->jwks, "JWKS file or URL (--auth oidc)");
  serve->add_option("--issuer", options->issuer, "required token issuer (--auth oidc)");
  serve->add_option("--audience", options->audience, "required token audience (--auth oidc)");
  serve
      ->add_option("--roles-claim", options->roles_claim,
                   "claim path holding the roles, e.g. realm_access.roles")
      ->capture_default_str();
  serve->add_option("--max-body-bytes", options->max_body_bytes, "request body limit")
      ->capture_default_str();
  serve
      ->add_option("--max-connections", options->max_connections,
                   "open connections past which new ones wait in the kernel's backlog (0: the "
                   "descriptor limit, ulimit -n, less " +
                       std::to_string(api::kReservedDescriptors) + ")")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  serve
      ->add_option(
          "--threads", options->threads,
          "workers for requests that may wait on a write (all but GETs, HEADs and submissions)")
      ->capture_default_str();
  serve->add_option("--io-threads", options->io_threads,
                    "threads reading and writing connections and serving GETs (0: one per core for "
                    "SQLite, two per core for PostgreSQL)");
  serve
      ->add_option("--db-readers", options->db_readers,
                   "read connections beside the writer (0: --threads for SQLite, 16 for "
                   "PostgreSQL)")
      ->capture_default_str();
}

// The scheduling loop, machine pools and the dashboard's history.
void AddSchedulingOptions(CLI::App* serve, ServeOptions* options) {
  serve->add_option("--lease-ttl", options->lease_ttl, "scheduler leader lease time")
      ->capture_default_str();
  serve->add_option("--interval", options->interval, "scheduling step period")
      ->capture_default_str();
  serve
      ->add_option("--log-slow-steps", options->log_slow_steps,
                   "log how long each part of a scheduling step took when the step took at "
                   "least this long (0: never)")
      ->capture_default_str();
  serve
      ->add_option(
          "--placement", options->placement,
          "fgd, gpu-packing or best-fit (random and dot-product: the FGD paper's baselines)")
      ->capture_default_str();
  serve->add_option("--catalog", options->catalog,
                    "instance type catalog for machine pools (JSON/YAML); default: built in");
  serve
      ->add_option("--provision-delay", options->provision_delay,
                   "time from a machine-pool node's launch to ready")
      ->capture_default_str();
  serve
      ->add_option("--scale-down-after", options->scale_down_after,
                   "how long a machine-pool node stays empty before it is removed")
      ->capture_default_str();
  serve
      ->add_option("--machine-pool-interval", options->machine_pool_interval,
                   "how often machine pools with a scale_target are rescaled (kubernetes "
                   "backend; cluster-autoscaler's scan interval)")
      ->capture_default_str();
  serve
      ->add_option("--history-interval", options->history_interval,
                   "how often the dashboard's allocation history is sampled (24 hours kept)")
      ->capture_default_str();
}

// The web dashboard's login, and --no-scheduler.
void AddDashboardOptions(CLI::App* serve, ServeOptions* options) {
  serve->add_option("--ui-client-id", options->ui_client_id,
                    "OIDC client id of the web dashboard (--auth oidc; code flow with PKCE)");
  serve->add_option("--ui-scopes", options->ui_scopes, "OIDC scopes the dashboard asks for")
      ->capture_default_str();
  serve
      ->add_option("--ui-token", options->ui_token,
                   "which OIDC token the dashboard sends: access_token or id_token")
      ->capture_default_str();
  serve->add_flag("--no-scheduler", options->no_scheduler,
                  "serve the API only; never run the scheduling loop");
}

}  // namespace
void AddServeSubcommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ServeOptions>();
  CLI::App* serve = app.add_subcommand("serve", "run the HTTP API server and scheduling loop");
  serve->add_option("--listen", options->listen, "HOST:PORT to listen on")->capture_default_str();
  serve->add_option("--db", options->db, "store URL (sqlite:PATH or postgresql://...)");
  AddClusterOptions(serve, options.get());
  AddAuthAndHttpOptions(serve, options.get());
  AddSchedulingOptions(serve, options.get());
  AddDashboardOptions(serve, options.get());
  serve->callback([options, exit_code] { *exit_code = RunServe(*options); });
}

}  // namespace gpupool::app
