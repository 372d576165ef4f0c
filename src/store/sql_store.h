#pragma once
// SqlStore: the one Store implementation, written against SqlConnection so that SQLite and
// PostgreSQL run the same statements and the same transaction logic.
//
// Concurrency: one writer connection, guarded by a mutex (write transactions of one SqlStore are
// serialised), and a pool of reader connections opened on demand (up to max_readers) for read
// transactions, so that reads run beside the writer and beside each other (SQLite WAL readers;
// PostgreSQL sessions). Workflow creates and audit appends are group-committed: a caller queues
// its write and either waits for it or leaves a callback; one commit thread (started with the
// first such write) writes everything queued in one transaction, then wakes the waiters and runs
// the callbacks of that batch once it committed (or failed). A batch's creates without an
// idempotency key, their tasks and its audit records go in multi-row INSERTs (a handful of
// statements per batch); keyed creates take one statement each. A write whose statement fails
// is dropped from the batch and the batch rerun without it, so it fails alone (after a failing
// multi-row statement, the batch is first rerun with one statement per write to find it).
// Sequence values are handed out from blocks reserved in a write transaction. Asynchronous
// version checks (GetWorkflowIfChangedAsync) are likewise answered by one read thread, all those
// queued in one statement.
//
// Between processes, correctness comes from the database: every write method is one
// transaction; a config write first bumps the one-row config_generation (serialising config
// writers store-wide), then config_heads (the revision counter of each written config), then checks
// the expected revision; workflow updates are `UPDATE ... WHERE version = $n`;
// leases are one conditional upsert. Transient failures (SQLite busy, PostgreSQL serialization
// failure or deadlock, a connection lost before commit) rerun the whole transaction a few times.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "store/batch_worker.h"
#include "store/sql_connection.h"
#include "store/store.h"

namespace gpupool::store {

class SqlStore final : public Store {
 public:
  using ConnectionFactory = std::function<Result<std::unique_ptr<SqlConnection>>()>;

  // Runs pending migrations on `connection` (the writer) first. `open_reader` opens a reader
  // connection to the same database (null: reads use the writer); at most `max_readers` are
  // opened. `clock` must outlive the store.
  static Result<std::unique_ptr<Store>> Open(std::unique_ptr<SqlConnection> connection,
                                             ConnectionFactory open_reader, int max_readers,
                                             const Clock& clock, TransactionObserver observe = {});
  ~SqlStore() override;

  std::string_view Backend() const override { return connection_->Backend(); }

  using Store::WriteConfigs;
  Result<std::vector<int64_t>> WriteConfigs(const std::vector<ConfigWrite>& writes,
                                            const Actor& actor, const WriteAlso& also) override;
  Result<ConfigRecord> GetConfig(std::string_view kind, std::string_view name) override;
  Result<std::vector<ConfigRecord>> ListConfigs(std::optional<std::string_view> kind) override;
  Result<std::vector<RevisionRecord>> History(std::optional<std::string_view> kind,
                                              std::optional<std::string_view> name,
                                              int limit) override;
  Result<RevisionRecord> GetRevision(std::string_view kind, std::string_view name,
                                     int64_t revision) override;
  Result<int64_t> ConfigGeneration() override;
  Result<Generations> GetGenerations() override;

  Status UpsertNodes(const std::vector<NodeRecord>& nodes, bool replace_all) override;
  Status DeleteNodes(const std::vector<std::string>& names) override;
  Result<std::vector<NodeRecord>> ListNodes() override;
  using Store::ChangeNodesIfUnchanged;
  Status ChangeNodesIfUnchanged(const std::vector<NodeChange>& changes,
                                const LeaseFence* fence) override;

  Result<WorkflowRecord> CreateWorkflow(const WorkflowRecord& workflow) override;
  Result<WorkflowRecord> CreateWorkflowWithAudit(
      WorkflowRecord workflow, const AuditRecord& audit,
      std::optional<Generations> if_generations = std::nullopt) override;
  void CreateWorkflowWithAuditAsync(WorkflowRecord workflow, AuditRecord audit,
                                    std::optional<Generations> if_generations,
                                    CreateDone done) override;
  Result<WorkflowRecord> GetWorkflow(std::string_view id) override;
  Result<std::optional<WorkflowRecord>> GetWorkflowIfChanged(std::string_view id,
                                                             int64_t known_version) override;
  void GetWorkflowIfChangedAsync(std::string id, int64_t known_version,
                                 IfChangedDone done) override;
  Result<std::vector<WorkflowRecord>> ListWorkflows(const WorkflowFilter& filter) override;
  Status UpdateWorkflow(const WorkflowRecord& workflow) override;
  Status UpdateWorkflowWithAudit(const WorkflowRecord& workflow, const AuditRecord& audit) override;
  Status UpdateWorkflowAsLeader(const WorkflowRecord& workflow, const LeaseFence& fence) override;
  Result<int64_t> NextSequence(std::string_view name) override;

  Status AppendAudit(const AuditRecord& record) override;
  Result<std::vector<AuditRecord>> ListAudit(int limit) override;

  Result<bool> TryAcquireLease(std::string_view name, std::string_view holder,
                               std::optional<int64_t> now_ms, int64_t ttl_ms) override;
  Status ReleaseLease(std::string_view name, std::string_view holder) override;

 private:
  SqlStore(std::unique_ptr<SqlConnection> connection, ConnectionFactory open_reader,
           int max_readers, const Clock& clock, TransactionObserver observe);

  // UpdateWorkflow, fenced by a lease when `fence` is given.
  Status WriteWorkflow(const WorkflowRecord& workflow, const LeaseFence* fence,
                       const AuditRecord* audit = nullptr);

  // How a body runs: in a write transaction on the writer; in a read transaction (a consistent
  // snapshot) on a reader; or as one read statement outside any transaction, on a reader.
  enum class Mode { kWrite, kRead, kStatement };

  Status Migrate();

  // What the observer is told of a group commit's transaction.
  struct BatchInfo {
    size_t writes = 0;
    std::chrono::steady_clock::time_point oldest_queued;  // when its first write was queued
  };
  // Runs `body(SqlConnection&)` (returning Status or Result<T>) as `mode` says, committing when it
  // succeeds and rerunning it on transient failures. The observer sees the transaction, and
  // `batch` when it is a group commit's.
  template <typename Body>
  auto Run(Mode mode, Body&& body, const BatchInfo* batch = nullptr)
      -> decltype(body(std::declval<SqlConnection&>()));
  template <typename Body>
  auto RunOnConnection(Mode mode, Body& body) -> decltype(body(std::declval<SqlConnection&>()));
  template <typename Body>
  auto RunOn(SqlConnection& db, Mode mode, Body& body) -> decltype(body(db));

  // A reader connection for one transaction (nullptr: none available, use the writer).
  SqlConnection* AcquireReader();
  void ReleaseReader(SqlConnection* reader);

  // One queued write of the group commit.
  struct PendingWrite {
    const WorkflowRecord* workflow = nullptr;   // create this workflow
    std::string spec;                           // workflow->spec, encoded
    std::vector<std::string> pods;              // the pod of each of workflow->tasks, encoded
    const AuditRecord* audit = nullptr;         // append this record
    std::optional<Generations> if_generations;  // refuse the create unless these are current
    int64_t audit_at_ms = 0;
    std::chrono::steady_clock::time_point queued_at;  // set by Enqueue
    // The outcome of the create: `inserted` (the caller's workflow was stored as given), or the
    // existing workflow an idempotency key named, or a refusal (kAlreadyExists).
    bool inserted = false;
    std::optional<WorkflowRecord> existing;
    Status status;  // the outcome of the whole write
    // Set and notified when the write is done: each waiter wakes for its own write only.
    std::atomic<bool> done{false};
    // A write nobody waits for (CreateWorkflowWithAuditAsync) owns what it writes and its
    // callback; the commit thread runs the callback and deletes the write.
    struct Owned {
      WorkflowRecord workflow;
      AuditRecord audit;
      CreateDone done;
    };
    std::unique_ptr<Owned> owned;
  };
  // Fills `write` for creating `workflow` (which must outlive the write).
  Status EncodeCreate(PendingWrite& write, const WorkflowRecord& workflow);
  // Fills `write` for creating `workflow` with `audit` (both must outlive the write).
  Status PrepareCreate(PendingWrite& write, const WorkflowRecord& workflow,
                       const AuditRecord& audit, std::optional<Generations> if_generations);
  // Queues `write` for the commit thread, noting when.
  void Enqueue(PendingWrite* write);
  // Queues `write` and returns once a batch holding it has committed or failed.
  void GroupCommit(PendingWrite& write);
  // The commit thread's batch: writes it, then wakes its waiters and runs its callbacks.
  void CommitBatch(std::vector<PendingWrite*>& batch);
  void WriteBatch(const std::vector<PendingWrite*>& batch);

  // One queued GetWorkflowIfChangedAsync.
  struct VersionCheck {
    std::string id;
    int64_t known_version = 0;
    IfChangedDone done;
  };
  // The read thread's batch.
  void CheckBatch(std::vector<VersionCheck>& batch);
  // The stored version of each of `ids` (distinct); absent ids are missing.
  Result<std::unordered_map<std::string, int64_t>> Versions(const std::vector<std::string>& ids);

  // Helpers that run inside a transaction.
  Result<WorkflowRecord> LoadWorkflow(SqlConnection& db, std::string_view id);
  // `pods`, when given, holds each task's pod already encoded.
  Status InsertTasks(SqlConnection& db, std::string_view workflow_id,
                     const std::vector<TaskRecord>& tasks,
                     const std::vector<std::string>* pods = nullptr);
  // The outcome of one create: inserted as given, the existing workflow of the same idempotency
  // key, or a refusal that left the transaction usable (kAlreadyExists). The Result fails on a
  // statement error (the transaction must be rolled back).
  struct CreateOutcome {
    bool inserted = false;
    std::optional<WorkflowRecord> existing;
    Status refused;
  };
  Result<CreateOutcome> CreateIn(SqlConnection& db, const PendingWrite& write);
  static Result<Generations> ReadGenerations(SqlConnection& db);
  // Refuses (kAborted, kStalePlan) each create whose if_generations are not the current ones.
  static Status RefuseStalePlans(SqlConnection& db, const std::vector<PendingWrite*>& todo,
                                 std::vector<CreateOutcome>& outcomes);
  // The creates of `todo` that CreateTogether writes (none when one_by_one).
  static std::vector<size_t> Together(const std::vector<PendingWrite*>& todo,
                                      const std::vector<CreateOutcome>& outcomes, bool one_by_one);
  // Creates the workflows of todo[together[...]] (none with an idempotency key, no two with one
  // id) in multi-row INSERTs, then their tasks, all deferred (SqlConnection::Defer), and marks
  // them inserted. A taken id fails the transaction: such a failure does not tell whose row
  // failed.
  Status CreateTogether(SqlConnection& db, const std::vector<PendingWrite*>& todo,
                        const std::vector<size_t>& together, std::vector<CreateOutcome>& outcomes);
  // Stores a queued create's result in a Result (the given workflow as stored, or what the
  // batch found).
  static Result<WorkflowRecord> Created(PendingWrite& write, WorkflowRecord workflow);

  const std::unique_ptr<SqlConnection> connection_;  // the writer
  const ConnectionFactory open_reader_;
  const int max_readers_;
  const Clock& clock_;
  const TransactionObserver observe_;
  std::mutex mu_;  // guards connection_ use

  // A caller waiting for a reader (FIFO).
  struct ReaderWaiter {
    std::condition_variable cv;
    SqlConnection* reader = nullptr;  // handed over by ReleaseReader
    bool failed = false;              // readers are given up: use the writer
  };
  std::mutex readers_mu_;
  std::vector<std::unique_ptr<SqlConnection>> readers_;  // all opened readers
  std::vector<SqlConnection*> idle_readers_;
  std::deque<ReaderWaiter*> reader_waiters_;
  int opening_readers_ = 0;
  bool readers_failed_ = false;  // opening a reader failed once: use the writer

  static constexpr int64_t kMaxSequenceBlock = 128;
  struct SequenceBlock {
    int64_t next = 0;        // the next value to return
    int64_t end = 0;         // one past the last reserved value
    int64_t size = 0;        // the size of the last reservation
    int64_t spare_next = 0;  // a block reserved ahead: [spare_next, spare_end)
    int64_t spare_end = 0;
    bool reserving = false;  // a reservation ahead is under way
  };
  // Reserves `size` values of sequence `name` in a transaction; returns the last one.
  Result<int64_t> ReserveSequence(std::string_view name, int64_t size);
  // The reserve thread's batch: a block ahead for each name.
  void ReserveAhead(std::vector<std::string>& names);
  std::mutex sequences_mu_;
  std::condition_variable sequences_cv_;
  std::unordered_map<std::string, SequenceBlock> sequences_;
  BatchWorker<std::string> reserver_{16, [this](auto& names) { ReserveAhead(names); }};

  // Last: closed (their queues processed) first when the store is destroyed. At most 256 writes
  // per transaction and 1,024 checks per batch, so that one batch's latency stays bounded.
  BatchWorker<PendingWrite*> committer_{256, [this](auto& batch) { CommitBatch(batch); }};
  BatchWorker<VersionCheck> checker_{1024, [this](auto& batch) { CheckBatch(batch); }};
};

}  // namespace gpupool::store
