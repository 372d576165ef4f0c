#pragma once
// The persistence layer: configs with full revision history, nodes, workflows with their tasks, an
// audit log, leader leases and named sequences. Two implementations sit behind one interface:
// SQLite (default; WAL: one writer connection plus a small pool of reader connections) and
// PostgreSQL (libpq; likewise one writer connection and a pool of reader connections). Select one
// with OpenStore(url). The store treats config bodies, node objects, pods and workflow specs as
// opaque JSON: it knows nothing of their semantics (validation lives in config/ and service/).
//
// Thread contract: every Store method may be called from any thread; every write method is one
// database transaction (all or nothing). Several processes may share one database (a SQLite file
// or a PostgreSQL server); conflicts surface as kAborted (optimistic lock / CAS) and never as lost
// updates.
//
// Errors: kNotFound (missing object), kAlreadyExists (CreateWorkflow with a taken id), kAborted
// (expected_revision or workflow version mismatch), kInvalidArgument (malformed request, e.g. an
// empty kind), kUnavailable (database cannot be reached), kInternal (anything else the database
// reports). No exception leaves this module.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace gpupool::store {

// Who made a change and from where ("cli", "127.0.0.1", ...).
struct Actor {
  std::string user;
  std::string source;
};

// The current state of one config (kind, name). Deleted configs have no ConfigRecord.
struct ConfigRecord {
  std::string kind;  // "POOL", "POD_TEMPLATE", ... (opaque to the store)
  std::string name;
  nlohmann::ordered_json body;
  int64_t revision = 0;  // revision of the change that produced this body
  std::string updated_by;
  int64_t updated_at_ms = 0;
};

// One change of one config. Kept forever, also after the config is deleted.
struct RevisionRecord {
  std::string kind;
  std::string name;
  int64_t revision = 0;
  std::string action;  // "update" | "delete" | "rollback" (whatever ConfigWrite::action said)
  std::string author;  // Actor::user
  int64_t created_at_ms = 0;
  std::string description;
  nlohmann::ordered_json body;  // the full body after the change; null for a delete
  std::string source;           // Actor::source
};

struct ConfigWrite {
  // kCheck writes nothing and records no revision: it only asserts expected_revision (required)
  // for a config the batch depends on but does not change, e.g. a pod template a written pool
  // references, so that a concurrent delete of it makes the batch fail with kAborted.
  enum class Op { kPut, kDelete, kCheck };
  Op op = Op::kPut;
  std::string kind;
  std::string name;
  nlohmann::ordered_json body;  // kPut only
  // Optimistic lock: when set, the write fails with kAborted unless the current revision equals
  // it. 0 means "must not exist" (never created, or deleted). Unset: last writer wins.
  std::optional<int64_t> expected_revision;
  std::string action;  // recorded in the revision; empty = "update" (kPut) / "delete" (kDelete)
  std::string description;
};

// A Kubernetes v1 Node object, keyed by metadata.name.
struct NodeRecord {
  std::string name;
  nlohmann::ordered_json object;
};

// One task (attempt) of a workflow. The store keeps a workflow's tasks as an ordered list, in the
// order given, and imposes no uniqueness on (group, name, retry).
struct TaskRecord {
  std::string workflow_id;  // filled in by the store on reads; ignored on writes
  std::string group;
  std::string name;
  std::string status;  // a model::TaskStatus's spelling (model/task_state.h), kept as text
  std::string node;
  nlohmann::ordered_json pod;
  int retry = 0;
  int64_t status_changed_ms = 0;
  int64_t started_ms = 0;
  int64_t finished_ms = 0;
  int exit_code = 0;
  std::string message;
};

struct WorkflowRecord {
  std::string id;
  std::string name;
  std::string pool;
  std::string user;
  std::string status;  // a model::WorkflowStatus's spelling, kept as text
  int64_t submitted_ms = 0;
  nlohmann::ordered_json spec;
  std::vector<TaskRecord> tasks;
  // CAS version. CreateWorkflow stores 1 (the given value is ignored); each successful
  // UpdateWorkflow stores version + 1.
  int64_t version = 0;
  std::string idempotency_key;  // empty = none; otherwise unique among all workflows
};

// Conditions AND together. Results are ordered by submitted_ms, then id (oldest first, the order
// a FIFO scheduler wants; or newest first), and include the tasks.
struct WorkflowFilter {
  std::optional<std::string> pool, user, status;
  bool unfinished_only = false;  // drop workflows whose status model::IsFinishedWorkflowText
  bool finished_only = false;    // keep only those
  int limit = 1000;              // <= 0: no limit
  // Pages (keyset pagination, stable under inserts): newest first instead of oldest first, and
  // only the workflows after `after` in that order.
  bool newest_first = false;
  struct Position {
    int64_t submitted_ms = 0;
    std::string id;
  };
  std::optional<Position> after;
  // Records the caller already holds, by id (the scheduling loop's, from its last step): a
  // workflow whose stored version equals its record's is copied from there instead of parsed
  // again. Sound because every write of a workflow, its tasks included, bumps its version.
  const std::unordered_map<std::string, WorkflowRecord>* known = nullptr;
};

struct AuditRecord {
  int64_t at_ms = 0;
  std::string user;
  std::string source;
  std::string action;  // e.g. "PUT /api/configs/POOL/a" or "config update"
  std::string target;
  std::string detail;
};

class Store {
 public:
  virtual ~Store() = default;

  // "sqlite" or "postgresql".
  virtual std::string_view Backend() const = 0;

  // ---- Configs ----
  // Applies all writes atomically (all or nothing), in order, one revision record each, and
  // returns the new revision of each write (for kCheck: the current revision, 0 if absent).
  // Revision numbers are per (kind, name), start at 1 and are never reused (delete then re-create
  // continues counting). A kDelete of a config that does not exist is kNotFound; a failed
  // expected_revision check is kAborted. Writes later in the batch see the effect of earlier
  // ones. Config write transactions are serialised store-wide (they are rare), so the checks of a
  // batch hold until it commits. Timestamps come from the store's Clock.
  //
  // The same transaction may also upsert nodes (as UpsertNodes does) and append
  // audit records, so that a change and its record (or an apply of configs and nodes) commit
  // together or not at all.
  struct WriteAlso {
    std::vector<NodeRecord> nodes;
    bool replace_all_nodes = false;  // as UpsertNodes(nodes, true): `nodes` become all nodes
    std::vector<AuditRecord> audit;  // at_ms == 0: the store's clock
  };
  virtual Result<std::vector<int64_t>> WriteConfigs(const std::vector<ConfigWrite>& writes,
                                                    const Actor& actor, const WriteAlso& also) = 0;
  Result<std::vector<int64_t>> WriteConfigs(const std::vector<ConfigWrite>& writes,
                                            const Actor& actor) {
    return WriteConfigs(writes, actor, WriteAlso{});
  }
  // kNotFound when the config does not exist (or was deleted).
  virtual Result<ConfigRecord> GetConfig(std::string_view kind, std::string_view name) = 0;
  // All live configs (of one kind when given), sorted by kind, then name.
  virtual Result<std::vector<ConfigRecord>> ListConfigs(std::optional<std::string_view> kind) = 0;
  // Revision records (of one kind / one config when given), newest first: the reverse of the
  // order in which they were written. limit <= 0: all.
  virtual Result<std::vector<RevisionRecord>> History(std::optional<std::string_view> kind,
                                                      std::optional<std::string_view> name,
                                                      int limit) = 0;
  // kNotFound when that revision does not exist.
  virtual Result<RevisionRecord> GetRevision(std::string_view kind, std::string_view name,
                                             int64_t revision) = 0;

  // A store-wide number that grows with every committed WriteConfigs that changed something
  // (also by other processes). Cheap: poll it to know when cached configs must be reloaded.
  virtual Result<int64_t> ConfigGeneration() = 0;

  // The config generation and the node generation (which grows with every committed UpsertNodes
  // or DeleteNodes, also by other processes), read together in one cheap statement.
  struct Generations {
    int64_t configs = 0;
    int64_t nodes = 0;
  };
  virtual Result<Generations> GetGenerations() = 0;

  // ---- Nodes ----
  // Inserts or replaces each node by name. replace_all: afterwards the store holds exactly these
  // nodes (others are deleted), in one transaction.
  virtual Status UpsertNodes(const std::vector<NodeRecord>& nodes, bool replace_all) = 0;
  // Deletes the named nodes; names that do not exist are ignored.
  virtual Status DeleteNodes(const std::vector<std::string>& names) = 0;
  // Sorted by name.
  virtual Result<std::vector<NodeRecord>> ListNodes() = 0;
  // Compare-and-set for controllers that read nodes, decide, then write (the machine-pool step):
  // every change applies only if its node is still exactly as `expected` (nullopt: the node must
  // not exist); `next` nullopt deletes it. All changes commit in one transaction, or none:
  // kAborted names the first node that someone else changed since it was read. With a fence
  // (the scheduling loop's machine-pool step), the changes commit only while the fence's holder
  // holds its lease (else kFailedPrecondition): a leader that lost its lease launches nothing.
  struct NodeChange {
    std::string name;
    std::optional<nlohmann::ordered_json> expected;
    std::optional<nlohmann::ordered_json> next;
  };
  // The writer's leader lease, checked inside a write's transaction (see UpdateWorkflowAsLeader).
  struct LeaseFence {
    std::string lease;
    std::string holder;
  };
  virtual Status ChangeNodesIfUnchanged(const std::vector<NodeChange>& changes,
                                        const LeaseFence* fence) = 0;
  Status ChangeNodesIfUnchanged(const std::vector<NodeChange>& changes) {
    return ChangeNodesIfUnchanged(changes, nullptr);
  }

  // ---- Workflows ----
  // Stores a new workflow with version 1 and returns it as stored. If idempotency_key is non-empty
  // and matches an existing workflow, returns that workflow unchanged (whatever its id). Otherwise
  // kAlreadyExists when the id is taken.
  //
  // Group commit: concurrent CreateWorkflow, CreateWorkflowWithAudit(Async) and AppendAudit calls
  // of one Store are written in one transaction (the store's commit thread writes everything
  // queued while its last transaction ran), and each call returns only after that transaction
  // committed: an OK result is durable as before. A call that fails (id taken, or a statement error
  // for its row) fails alone: the others of its batch are written without it.
  virtual Result<WorkflowRecord> CreateWorkflow(const WorkflowRecord& workflow) = 0;
  // CreateWorkflow and AppendAudit(audit) in one transaction (the record is appended also when the
  // idempotency key returns an existing workflow; not when the create fails).
  // Takes the workflow by value: a caller that moves it in saves a copy of its pods.
  //
  // `if_generations`: the config and node generations the workflow was planned against. The
  // create is then refused with kAborted and the message kStalePlan (nothing written, no audit
  // record) unless they are still the current ones when its transaction runs, so a submission
  // planned on cached configs and nodes needs no read of the generations of its own: the caller
  // plans again on fresh ones. (Same default in SqlStore.)
  virtual Result<WorkflowRecord> CreateWorkflowWithAudit(
      WorkflowRecord workflow, const AuditRecord& audit,
      std::optional<Generations> if_generations = std::nullopt) = 0;
  static constexpr std::string_view kStalePlan =
      "configs or nodes changed since the workflow was planned";
  // CreateWorkflowWithAudit without a thread waiting for it: queues the write and returns at once.
  // `done` receives what CreateWorkflowWithAudit would have returned, once the write's transaction
  // has committed (or failed). It runs on the store's commit thread, so it must be quick and must
  // not wait on a group-committed write of this store (that would wait on itself).
  using CreateDone = std::function<void(Result<WorkflowRecord>)>;
  virtual void CreateWorkflowWithAuditAsync(WorkflowRecord workflow, AuditRecord audit,
                                            std::optional<Generations> if_generations,
                                            CreateDone done) = 0;
  virtual Result<WorkflowRecord> GetWorkflow(std::string_view id) = 0;  // kNotFound
  // The workflow when its stored version differs from `known_version`; nullopt when it is equal
  // (a cache holding that version is current). kNotFound when missing. One cheap statement when
  // unchanged.
  virtual Result<std::optional<WorkflowRecord>> GetWorkflowIfChanged(std::string_view id,
                                                                     int64_t known_version) = 0;
  // GetWorkflowIfChanged without a thread waiting: `done` receives what it would have returned,
  // on the store's read thread (quick, and not waiting on the store). The checks queued while one
  // runs are answered together, with one statement for all of their versions; each check still
  // starts after it was queued, so an answer is as current as GetWorkflowIfChanged's.
  using IfChangedDone = std::function<void(Result<std::optional<WorkflowRecord>>)>;
  virtual void GetWorkflowIfChangedAsync(std::string id, int64_t known_version,
                                         IfChangedDone done) = 0;
  virtual Result<std::vector<WorkflowRecord>> ListWorkflows(const WorkflowFilter& filter) = 0;
  // Compare-and-set: succeeds only when the stored version equals workflow.version (else kAborted;
  // kNotFound when missing), then stores every field (name, pool, user, status, spec; id,
  // submitted_ms and idempotency_key are kept), replaces the task list and sets version + 1. On
  // success the caller's copy is stale by one: bump workflow.version or re-read.
  virtual Status UpdateWorkflow(const WorkflowRecord& workflow) = 0;
  // UpdateWorkflow that appends `audit` in the same transaction: both or neither.
  virtual Status UpdateWorkflowWithAudit(const WorkflowRecord& workflow,
                                         const AuditRecord& audit) = 0;
  // UpdateWorkflow by a leader, fenced by its lease: commits only while `holder` still holds lease
  // `lease` (else kFailedPrecondition, nothing written). The check locks the lease row inside the
  // write's transaction, so a new leader's TryAcquireLease waits for this write to commit and
  // then reads it: a leader that stalled past its lease can never bind what its successor binds.
  virtual Status UpdateWorkflowAsLeader(const WorkflowRecord& workflow,
                                        const LeaseFence& fence) = 0;

  // A per-name counter, e.g. for workflow ids "<name>-<n>": every value is returned once only,
  // across processes and restarts, and successive calls on one Store return increasing values
  // starting at 1 for a new name. Values are reserved transactionally in blocks (like a
  // PostgreSQL sequence cache): the first reservation of a Store takes 1 value, each further one
  // twice the last, up to 128; at that size the next block is reserved ahead, in the background,
  // while half of the current one is left, so a busy caller does not wait for the write. Values
  // reserved but not returned before the Store is closed (up to two blocks) are never used
  // (gaps), and two Stores on one database interleave.
  virtual Result<int64_t> NextSequence(std::string_view name) = 0;

  // ---- Audit ----
  // at_ms == 0 is replaced by the store's clock.
  virtual Status AppendAudit(const AuditRecord& record) = 0;
  // Newest first. limit <= 0: all.
  virtual Result<std::vector<AuditRecord>> ListAudit(int limit) = 0;

  // ---- Leader lease ----
  // Returns true when `holder` now holds lease `name` until now_ms + ttl_ms: it was free, expired
  // (expiry <= now_ms), or already held by `holder` (renewal). Returns false when another holder's
  // lease is still live. now_ms nullopt (what servers pass): the database's clock, which every
  // contender shares whatever its own clock says (PostgreSQL's clock_timestamp(); SQLite, a file
  // on one machine: the store's Clock). An explicit now_ms is the caller's clock (tests).
  virtual Result<bool> TryAcquireLease(std::string_view name, std::string_view holder,
                                       std::optional<int64_t> now_ms, int64_t ttl_ms) = 0;
  // Frees the lease when `holder` holds it; otherwise does nothing (OK).
  virtual Status ReleaseLease(std::string_view name, std::string_view holder) = 0;
};

// One transaction as operators' metrics see it (StoreOptions::observe).
struct TransactionObservation {
  // kRead: read transactions and single read statements (the batched version checks of reads).
  enum class Kind { kWrite, kRead };
  Kind kind = Kind::kWrite;
  // From the call to the commit or rollback: waits for the writer or a reader connection and
  // reruns after transient failures are included, as the caller waited for them.
  double seconds = 0;
  // false: rolled back, for a refused write (a revision conflict, say) or a database error.
  bool ok = true;
  // The writes a group commit carried (creates of workflows, each with its tasks and audit
  // record, and audit records alone); 0 for every other transaction.
  size_t batched_writes = 0;
  // A group commit's: how long the oldest of its writes had waited in the queue when the
  // transaction began (for the commit in progress, or for a rerun of this batch); 0 otherwise.
  double queued_seconds = 0;
};
using TransactionObserver = std::function<void(const TransactionObservation&)>;

struct StoreOptions {
  // Source of timestamps for revisions, configs and audit records. nullptr: the system clock.
  // Must outlive the store.
  const Clock* clock = nullptr;
  // Most connections opened (lazily) for read transactions beside the one writer connection, so
  // reads neither wait for the writer nor for each other. 0: reads use the writer connection.
  // An in-memory SQLite database has no readers (its data lives in the writer connection).
  int max_readers = 4;
  // Called after every transaction, on the thread that ran it (so it must be thread-safe and
  // cheap). Empty: nothing is observed.
  TransactionObserver observe;
};

// Opens (creating if needed) a store and runs pending migrations. url: "sqlite:PATH", a plain
// PATH, ":memory:" / "sqlite::memory:" (a private in-memory SQLite database), or
// "postgresql://..." / "postgres://..." (libpq connection URI).
Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const StoreOptions& options = {});

}  // namespace gpupool::store
