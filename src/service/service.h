#pragma once
// The service functions shared by the `gpupool` CLI (offline, on a store) and the HTTP server.
// Each function is one request: it reads what it needs from the store, validates, and performs
// at most one store transaction. No HTTP, no printing: callers encode results (ToJson helpers
// below give the one JSON shape both the CLI's `-o json` and the REST API return).
//
// Thread contract: safe to call from several threads when the Store is (store::Store is). The only
// state of a Service is a cache of the decoded configs and nodes keyed by the store's generations
// (store::Store::GetGenerations) and of read workflows keyed by their version, so writes by other
// processes are seen at the next call; copies share it.
//
// Errors: kInvalidArgument (bad input, failed validation), kNotFound, kPermissionDenied,
// kFailedPrecondition (in use, maintenance), kAborted (revision changed underneath).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "model/machine_pool.h"

namespace gpupool::store {
class Store;
struct WorkflowRecord;
}  // namespace gpupool::store
namespace gpupool::config {
struct ConfigSet;
struct BuiltinOptions;
}  // namespace gpupool::config

namespace gpupool::submit {
struct WorkflowSpec;
}  // namespace gpupool::submit

namespace gpupool::service {

// Who is asking. Offline (CLI on a DB file) the default is the OS user with role `osmo-admin`;
// the server fills it from the verified token.
struct Caller {
  std::string user;
  std::vector<std::string> roles;
  std::string source = "cli";  // "cli", or the client address for HTTP
  // Set by the HTTP layer when it has already checked this request's access (method and path)
  // for a workflow of this pool against the current roles: a workflow read of that pool then
  // skips the service's own check.
  std::optional<std::string> access_checked_pool;
};

// Config kinds as the CLI spells them: POOL, POD_TEMPLATE, RESOURCE_VALIDATION, ROLE, BACKEND.
// Lower-case and manifest spellings (`pool`, `Pool`, `PodTemplate`) are accepted too.
Result<std::string> NormalizeKind(std::string_view kind);

// ---- Config writes ------------------------------------------------------------------------

struct ConfigChange {
  std::string kind;
  std::string name;
  int64_t revision = 0;
  std::string action;  // "update" | "delete" | "rollback"
};

struct WriteResult {
  std::vector<ConfigChange> changes;  // one per written config, in write order
  std::vector<std::string> warnings;  // e.g. a pool used by unfinished workflows was modified
};

struct UpdateConfigRequest {
  std::string kind;                 // POOL, POD_TEMPLATE, ...
  std::optional<std::string> name;  // from the command line; absent for the map form
  nlohmann::ordered_json body;      // the parsed file: `{"name": ...}` or `{"<name>": {...}}`
  std::string file_name;            // for error messages ("request body" over HTTP)
  std::string description;          // revision note; default "gpupool config update KIND NAME"
  // Optimistic lock (one config only): the write succeeds only if the config is at this revision
  // (0: must not exist), checked by the store in the write's transaction; else kAborted.
  std::optional<int64_t> expected_revision;
  // The text `body` was parsed from (JSON, or one YAML document), so that errors give the line
  // and column of the field at fault: `pool.json:7:7: pool "p": platforms.a.descripton: unknown
  // field (did you mean "description"?)`. Empty: errors name the file only.
  std::string text;
  // Where `body` is in `text`, as a field path: "" (all of it), or "configs" for the bulk PUT's
  // {"configs": {...}}.
  std::string body_path;
};

// `PATCH /api/configs/{kind}/{name}`: a JSON merge patch (RFC 7396) of one config's body, e.g.
// `{"description": "x", "default_exec_timeout": null}` sets one field and removes another.
struct PatchConfigRequest {
  std::string kind;
  std::string name;
  nlohmann::ordered_json patch;  // must be an object (a config body is one)
  // The revision the patch was written against (If-Match): kAborted unless the config is at it.
  // Unset: the patch applies to the current body (reapplied if that changes concurrently).
  std::optional<int64_t> expected_revision;
  std::string description;  // default "gpupool config update KIND NAME"
};

// RFC 7396: objects merge recursively, null removes a member, anything else replaces. Members
// keep their order; new ones are appended.
nlohmann::ordered_json MergePatch(nlohmann::ordered_json target,
                                  const nlohmann::ordered_json& patch);

struct DeleteConfigRequest {
  std::string kind;
  std::string name;
  // Delete a pool that unfinished workflows use, or that a role grants by name (as osmo-user
  // grants the default pool); without it both are refused (409).
  bool force = false;
  std::string description;
};

struct RollbackRequest {
  std::string kind;
  std::string name;
  int64_t revision = 0;  // the revision whose body becomes current (as a new revision)
  std::string description;
};

// A manifest file as its author wrote it, so that errors name the file and the line and column
// of the field at fault ("pools.yaml:13:3: Queue q: spec.resourcez: unknown field ...").
struct ManifestFile {
  std::string
      name;  // the path the user gave ("/tmp/ap/pools.yaml"); "request body" over plain HTTP
  std::string text;  // multi-document YAML, or one JSON document
};

// `gpupool apply -f FILE|DIR`: manifests of config kinds (apiVersion gpupool.io/v1),
// `kind: Node` objects (also as NodeList items), which are imported as nodes, and batch/v1 Jobs,
// which run as workflows (submit/job_workflow.h) once the configs and nodes are written.
struct ApplyRequest {
  std::vector<ManifestFile> files;
  std::string description;  // revision note; default "gpupool apply -f <file names>"
};

// A batch/v1 Job of an apply, run as a workflow (submit/job_workflow.h).
struct AppliedJob {
  std::string name;         // the Job's
  std::string workflow_id;  // the workflow it runs as
  std::string pool;
  std::string queue;
  std::string status;
  int task_count = 0;
  bool unchanged = false;  // the same Job was applied before: its workflow, not a new one
};

struct ApplyResult {
  WriteResult configs;
  int nodes_imported = 0;
  std::vector<AppliedJob> jobs;  // in the order of the files
};

// ---- Config reads -------------------------------------------------------------------------

struct ConfigView {
  std::string kind;
  std::string name;
  int64_t revision = 0;
  std::string updated_by;
  int64_t updated_at_ms = 0;
  nlohmann::ordered_json body;
};

struct HistoryEntry {
  std::string kind;
  std::string name;
  int64_t revision = 0;
  std::string action;
  std::string author;
  int64_t created_at_ms = 0;
  std::string description;
  nlohmann::ordered_json body;  // full body after the change; null for delete
};

struct HistoryFilter {
  std::optional<std::string> kind;
  std::optional<std::string> name;
  int limit = 100;
};

// ---- Nodes and views ----------------------------------------------------------------------

struct NodeImportResult {
  int imported = 0;
  std::vector<std::string> names;
};

struct PoolRow {
  std::string name;
  std::string description;
  std::string status;  // ONLINE | OFFLINE | MAINTENANCE
  std::string backend;
  int64_t gpu_quota_used = 0;
  int64_t gpu_quota_limit = -1;  // -1: no limit (resources.gpu.maximum unset)
  int64_t gpu_used = 0;          // GPUs requested by unfinished workflows of the pool
  int64_t gpu_capacity = 0;      // allocatable GPUs of the pool's nodes
  std::vector<std::string> platforms;
};

// OSMO's profile: the caller, their roles, the pools they may submit to and the pool a workflow
// goes to when none is named (OSMO: the profile's setting, else the only pool; gpupool has no
// per-user setting: `default` when allowed, else the only allowed pool, else none).
struct ProfileView {
  std::string user;
  std::vector<std::string> roles;
  std::vector<std::string> pools;  // sorted
  std::string default_pool;        // "" when there is none
  // The QUEUE configs the roles may submit workflows to (--queue): projects, and top-level
  // queues without projects; sorted. Without one, a workflow counts in its pool's own queue.
  std::vector<std::string> queues;
};
nlohmann::ordered_json ToJson(const ProfileView& profile);

struct ResourceFilter {
  std::optional<std::string> pool;
  std::optional<std::string> platform;
  // A Kubernetes label selector (model/label_selector.h), as `oc get nodes -l` takes it; "" = all.
  std::string selector;
};

// One row per (node, pool, platform) membership; nodes in no platform get one UNUSED row.
struct ResourceRow {
  std::string node;
  std::string pool;      // "-" when UNUSED
  std::string platform;  // "-" when UNUSED
  std::string type;      // RESERVED (one pool) | SHARED (several) | UNUSED (none)
  // Each "used/capacity" as kube-scheduler counts it: cpu and gpu in milli-units, storage and
  // memory in bytes (which int64 milli-units could not hold: a node may have `memory: 3Ei`);
  // printed with Kubernetes units by the CLI.
  int64_t storage_used = 0, storage_capacity = 0;
  int64_t cpu_used = 0, cpu_capacity = 0;
  int64_t memory_used = 0, memory_capacity = 0;
  int64_t gpu_used = 0, gpu_capacity = 0;
  std::string gpu_product;  // nvidia.com/gpu.product label, "" if none
  // The node pools whose label the node carries (model::MatchingNodePools); none: `default`.
  // Two or more is a conflict, reported in `node_pool_conflict` (the scheduler takes the first).
  std::vector<std::string> node_pools;
  std::string node_pool_conflict;  // model::NodePoolConflictMessage, "" when none
};

// ---- Workflows ----------------------------------------------------------------------------

// How a submission's errors name a queue given as the REST API's `?queue=` (the CLI's client
// sends --queue so, and says `--queue` instead).
inline constexpr std::string_view kQueueParameterOrigin = "query parameter queue";

struct SubmitRequest {
  std::string pool;
  std::string spec_text;                          // the workflow YAML (or JSON) as written
  std::string file_name;                          // for error messages
  std::map<std::string, std::string> set_values;  // --set k=v
  std::vector<std::string> node_pools;            // --node-pools a,b: replaces the spec's
  std::string queue;                              // --queue PROJECT: replaces the spec's
  std::string queue_origin = "--queue";           // how errors about `queue` name it
  bool dry_run = false;
  std::string idempotency_key;  // optional; same key returns the existing workflow
  // A workflow built from another spelling (a Job of `apply -f`), used instead of spec_text.
  std::shared_ptr<const submit::WorkflowSpec> workflow;
};

struct SubmitResult {
  std::string workflow_id;  // "" for a dry run
  std::string name;
  std::string pool;
  std::string queue;   // the quota's queue: the chosen project, else the pool's own
  std::string status;  // PENDING, or "DRY_RUN"
  int task_count = 0;
  bool existing = false;  // the idempotency key named a workflow stored before: it is returned
  // One Kubernetes Pod per task, for a dry run only (a submission's reply is an acknowledgement,
  // as OSMO's: the stored workflow shows its tasks).
  std::vector<nlohmann::ordered_json> pods;
  std::vector<std::string> warnings;
};

struct TaskView {
  std::string group;
  std::string name;
  std::string platform;
  std::string status;
  std::string node;
  int exit_code = 0;
  std::string message;
};

struct WorkflowView {
  std::string id;
  std::string name;
  std::string pool;
  std::string queue;  // the queue its quota is counted in (spec "queue"; before: the pool)
  std::string user;
  std::string status;
  int64_t submitted_ms = 0;
  std::vector<TaskView> tasks;
  nlohmann::ordered_json spec;  // the expanded workflow as stored
};

struct WorkflowFilter {
  std::optional<std::string> pool;
  std::optional<std::string> user;
  std::optional<std::string> status;
  int limit = 100;
};

// What the service needs to know of machine pools, from the autoscaler's instance catalog (the
// server's --catalog, or the built-in one): service::MachinePoolSupportFor
// (service/machine_pool_support.h); tests may pass functions of their own.
struct MachinePoolSupport {
  // Refuses a MACHINE_POOL config that could never launch (its instance type is not in the
  // catalog) at write time, with the field named.
  std::function<Status(const model::MachinePool&)> check;
  // The hourly price of one node of the pool in micro-dollars (its capacity type's price), for
  // the dashboard's cost figures; nullopt when unknown.
  std::function<std::optional<int64_t>(const model::MachinePool&)> hourly_price_micros;
  // The node the pool would add (nullopt when it adds none). Submissions validate node rules
  // (K8_*) against these too: a GPU spot pool that scales from zero has no node yet, and a task
  // that only its nodes could run must be accepted and left pending for the autoscaler, as
  // Karpenter users expect, not refused because no such node exists today.
  std::function<std::optional<model::Node>(const model::MachinePool&)> template_node;
};

// Decodes every OSMO-kind config of the store into a ConfigSet; configs that fail to decode are
// skipped (the service refuses such writes, so this only happens after a manual DB edit).
Result<config::ConfigSet> LoadConfigSet(store::Store& store);

class Service {
 public:
  // `store` and `clock` must outlive the Service.
  Service(store::Store& store, const Clock& clock);
  ~Service();
  Service(Service&&) = delete;

  // Set once, before the Service is shared between threads.
  void SetMachinePoolSupport(MachinePoolSupport support);
  // Called (on the store's commit thread) after each workflow newly stored, with the record as
  // the store returned it: the server's scheduling loop takes it as a sign that work arrived and
  // holds the record for its next step (SchedulingLoop::Submitted). Set once, before the Service
  // is shared between threads; it must be cheap and must not block.
  using SubmittedListener = std::function<void(std::shared_ptr<const store::WorkflowRecord>)>;
  void SetSubmittedListener(SubmittedListener listener);

  // Writes the built-in configs (config::BuiltinConfigs(options)) as revision 1 by user
  // `system` when the store has no configs yet. Idempotent; called once after OpenStore.
  Status EnsureBuiltins(const config::BuiltinOptions& options);
  Status EnsureBuiltins();  // with the default options

  // `config update KIND [NAME] --file F` and `config set ROLE NAME -f F`. Accepts both file
  // shapes; the whole resulting ConfigSet is validated before one atomic write. Errors name the
  // file, and with the request's text the line and column of the field, the config and the
  // field path within it (as UpdateConfigRequest::text shows). A pool that
  // unfinished workflows use may change (with a warning naming them) unless the change removes a
  // platform they use (kFailedPrecondition; no --force for updates: delete with --force instead).
  Result<WriteResult> UpdateConfig(const Caller& caller, const UpdateConfigRequest& request);

  // Applies a merge patch to an existing config (kNotFound otherwise) and writes the result like
  // UpdateConfig (validated, one revision), checked against the revision it was applied to.
  Result<WriteResult> PatchConfig(const Caller& caller, const PatchConfigRequest& request);

  // `config set ROLE osmo-<prefix> pool`: writes the generated pool role.
  Result<WriteResult> SetPoolRole(const Caller& caller, std::string_view role_name,
                                  std::string_view description);

  // `config delete KIND NAME [--force]`. Refuses a template / validation set a pool uses (naming
  // the pools) and a pool that unfinished workflows use unless `force`.
  Result<WriteResult> DeleteConfig(const Caller& caller, const DeleteConfigRequest& request);

  // `config rollback KIND NAME --revision N`: writes the body of revision N as a new revision.
  Result<WriteResult> Rollback(const Caller& caller, const RollbackRequest& request);

  // `gpupool apply -f FILE|DIR`: manifests (DESIGN §2) of one or more files. Every document is
  // parsed, decoded and validated (configs together, and the caller's right to write nodes)
  // before anything is written; then the configs in one atomic write, then the nodes. An error
  // names the file, the line and column of the field, the manifest's kind and name and the field
  // path within the manifest: "pools.yaml:13:3: Queue q: spec.resourcez: unknown field ...".
  Result<ApplyResult> Apply(const Caller& caller, const ApplyRequest& request);

  // `config show KIND NAME [--revision N]`.
  Result<ConfigView> ShowConfig(std::string_view kind, std::string_view name,
                                std::optional<int64_t> revision = std::nullopt);
  // `config list [KIND]`, sorted by kind then name.
  Result<std::vector<ConfigView>> ListConfigs(std::optional<std::string_view> kind);
  // `config history [KIND [NAME]]`, newest first.
  Result<std::vector<HistoryEntry>> History(const HistoryFilter& filter);

  // `node import FILE`: kubectl NodeList/Node in JSON or YAML, or the openb node CSV.
  Result<NodeImportResult> ImportNodes(const Caller& caller, std::string_view text,
                                       std::string_view file_name, bool replace_all = false);

  // `pool list`, sorted by name.
  Result<std::vector<PoolRow>> ListPools(const Caller& caller);
  // `profile` (GET /api/profile): who the caller is and where they may submit.
  Result<ProfileView> Profile(const Caller& caller);
  // `resource list [--pool P] [--platform X]`; kNotFound for an unknown pool or platform.
  Result<std::vector<ResourceRow>> ListResources(const Caller& caller,
                                                 const ResourceFilter& filter);

  // `workflow submit FILE --pool P [--set k=v] [--dry-run]`: runs the submission pipeline
  // (submit::Submit) and, unless dry_run, stores the workflow PENDING with its pods.
  Result<SubmitResult> SubmitWorkflow(const Caller& caller, const SubmitRequest& request);
  // SubmitWorkflow without a thread waiting for the durable write: plans the submission on the
  // calling thread, queues the store's group-committed write and returns. `done` receives what
  // SubmitWorkflow would have returned: at once for a refusal or a dry run, else on the store's
  // commit thread once the workflow is durable (Store::CreateWorkflowWithAuditAsync).
  using SubmitDone = std::function<void(Result<SubmitResult>)>;
  void SubmitWorkflowAsync(const Caller& caller, const SubmitRequest& request, SubmitDone done);
  // Workflow reads are served from a cache of decoded workflows, revalidated by version at each
  // call (Store::GetWorkflowIfChanged: one cheap statement when unchanged).
  Result<WorkflowView> QueryWorkflow(const Caller& caller, std::string_view id);
  // QueryWorkflow's result as the JSON text of ToJson(WorkflowView) plus a newline (the REST
  // response body), encoded once per workflow version.
  Result<std::shared_ptr<const std::string>> QueryWorkflowJson(const Caller& caller,
                                                               std::string_view id);
  // QueryWorkflowJson without a thread waiting for the version check: `done` runs on the
  // store's read thread (Store::GetWorkflowIfChangedAsync, which checks concurrent reads in one
  // statement). The access check there reads no store when the caller owns the workflow or
  // Caller::access_checked_pool names its pool (as the HTTP layer sets it).
  using JsonDone = std::function<void(Result<std::shared_ptr<const std::string>>)>;
  void QueryWorkflowJsonAsync(const Caller& caller, const std::string& id, JsonDone done);
  // The pool of a workflow, for access checks before a workflow request (no access check here).
  // Reads through the same cache as QueryWorkflow, so a check followed by a query loads the
  // workflow once. kNotFound when it does not exist.
  Result<std::string> WorkflowPool(std::string_view id);
  Result<std::vector<WorkflowView>> ListWorkflows(const Caller& caller,
                                                  const WorkflowFilter& filter);
  // Marks every unfinished task and the workflow CANCELED; kFailedPrecondition when finished.
  Result<WorkflowView> CancelWorkflow(const Caller& caller, std::string_view id);

  // The decoded configs and nodes as this service has them cached (revalidated against the
  // store's generations), for read-only views (service/views.h).
  struct CachedInputs {
    std::shared_ptr<const void> owner;  // keeps `configs` and `other` alive
    const config::ConfigSet* configs = nullptr;
    // Bodies of the kinds ConfigSet does not hold (NODE_POOL, QUEUE, MACHINE_POOL), by (kind,
    // name).
    const std::map<std::pair<std::string, std::string>, nlohmann::ordered_json>* other = nullptr;
    std::shared_ptr<const std::vector<model::Node>> nodes;
  };
  Result<CachedInputs> Inputs();
  const MachinePoolSupport& machine_pool_support() const { return machine_pools_; }

 private:
  store::Store& store_;
  const Clock& clock_;
  MachinePoolSupport machine_pools_;
  SubmittedListener submitted_;  // SetSubmittedListener

  // A planned submission: the result so far and, unless a dry run, what to store.
  struct PreparedSubmission;
  // fresh: plan on configs and nodes read now, else on the cached ones (whose write is checked).
  // A refusal made on the cached ones sets *refused_on_cache: it stands only if they are current.
  Result<PreparedSubmission> PrepareSubmission(const Caller& caller, const SubmitRequest& request,
                                               bool fresh, bool* refused_on_cache);
  void SubmitAttempt(const Caller& caller, const SubmitRequest& request, int attempt,
                     SubmitDone done);
  // SubmitAttempt(attempt + 1), on fresh configs and nodes, on the replanner's thread.
  void Replan(const Caller& caller, const SubmitRequest& request, int attempt, SubmitDone done);

 public:
  struct SnapshotCache;  // service/snapshot_cache.h

 private:
  std::shared_ptr<SnapshotCache> cache_;
  // Plans again a submission whose write found its plan stale, on a thread of its own: not on
  // the store's commit thread, which would stop committing everyone's writes meanwhile (a fresh
  // plan reads the configs and nodes), nor on an I/O loop. Last: drained first when destroyed.
  struct Replanner;
  std::unique_ptr<Replanner> replanner_;
};

// The JSON shapes of the results (CLI `-o json|yaml` and the REST API).
nlohmann::ordered_json ToJson(const WriteResult& result);
nlohmann::ordered_json ToJson(const ApplyResult& result);
nlohmann::ordered_json ToJson(const ConfigView& view);
nlohmann::ordered_json ToJson(const HistoryEntry& entry);
nlohmann::ordered_json ToJson(const NodeImportResult& result);
nlohmann::ordered_json ToJson(const PoolRow& row);
nlohmann::ordered_json ToJson(const ResourceRow& row);
nlohmann::ordered_json ToJson(const SubmitResult& result);
nlohmann::ordered_json ToJson(const WorkflowView& view);

// Workflow states that are not final (used for "in use by unfinished workflows" checks).
bool IsUnfinishedStatus(std::string_view status);

}  // namespace gpupool::service
