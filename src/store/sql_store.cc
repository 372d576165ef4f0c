#include "store/sql_store.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <chrono>
#include <set>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "codec/json_writer.h"

namespace gpupool::store {
namespace {

using nlohmann::ordered_json;

constexpr int kMaxAttempts = 8;

std::string ConfigKey(std::string_view kind, std::string_view name) {
  return std::string(kind) + "/" + std::string(name);
}

// The stored text of a body. A string that is not UTF-8 (which the parsers do not produce) is
// refused, not stored altered; PostgreSQL would refuse the text anyway.
Result<std::string> DumpJson(const ordered_json& value, std::string_view what) {
  bool invalid_utf8 = false;
  std::string text = codec::DumpCompact(value, &invalid_utf8);
  if (invalid_utf8) {
    return InvalidArgumentError(std::string(what) + ": cannot encode JSON: text is not UTF-8");
  }
  return text;
}

Result<ordered_json> ParseStoredJson(const SqlRow& row, size_t column, std::string_view what) {
  if (row.IsNull(column)) return ordered_json(nullptr);
  try {
    return ordered_json::parse(row.Text(column));
  } catch (const std::exception& e) {
    return InternalError(std::string(what) + ": stored JSON is corrupt: " + e.what());
  }
}

Status RequireNonEmpty(std::string_view value, std::string_view field) {
  if (value.empty()) return InvalidArgumentError(std::string(field) + " must not be empty");
  return OkStatus();
}

// Appends "$<n>" for a new parameter.
std::string Param(SqlParams& params, SqlParam value) {
  params.push_back(std::move(value));
  return "$" + std::to_string(params.size());
}

// One row of a multi-row INSERT: "($1, $2, ...<tail>)", after ", " unless it is the first, with
// its values appended to `params`. `tail` holds literal columns ("1" for a new version).
void AppendRow(std::string& sql, SqlParams& params, std::vector<SqlParam> values, bool first,
               std::string_view tail = "") {
  sql += first ? "(" : ", (";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) sql += ", ";
    sql += Param(params, std::move(values[i]));
  }
  if (!tail.empty()) sql += ", " + std::string(tail);
  sql += ")";
}

constexpr std::string_view kConfigColumns = "kind, name, body, revision, updated_by, updated_at_ms";

Result<ConfigRecord> ConfigFromRow(const SqlRow& row) {
  ConfigRecord record;
  record.kind = row.Text(0);
  record.name = row.Text(1);
  ASSIGN_OR_RETURN(record.body, ParseStoredJson(row, 2, ConfigKey(record.kind, record.name)));
  record.revision = row.Int(3);
  record.updated_by = row.Text(4);
  record.updated_at_ms = row.Int(5);
  return record;
}

constexpr std::string_view kRevisionColumns =
    "kind, name, revision, action, author, created_at_ms, description, body, source";

Result<RevisionRecord> RevisionFromRow(const SqlRow& row) {
  RevisionRecord record;
  record.kind = row.Text(0);
  record.name = row.Text(1);
  record.revision = row.Int(2);
  record.action = row.Text(3);
  record.author = row.Text(4);
  record.created_at_ms = row.Int(5);
  record.description = row.Text(6);
  ASSIGN_OR_RETURN(record.body, ParseStoredJson(row, 7,
                                                ConfigKey(record.kind, record.name) + " revision " +
                                                    std::to_string(record.revision)));
  record.source = row.Text(8);
  return record;
}

constexpr std::string_view kWorkflowColumns =
    "id, name, pool, user_name, status, submitted_ms, spec, version, idempotency_key";

Result<WorkflowRecord> WorkflowFromRow(const SqlRow& row) {
  WorkflowRecord record;
  record.id = row.Text(0);
  record.name = row.Text(1);
  record.pool = row.Text(2);
  record.user = row.Text(3);
  record.status = row.Text(4);
  record.submitted_ms = row.Int(5);
  ASSIGN_OR_RETURN(record.spec, ParseStoredJson(row, 6, "workflow " + record.id));
  record.version = row.Int(7);
  record.idempotency_key = row.Text(8);
  return record;
}

constexpr std::string_view kTaskColumns =
    "workflow_id, group_name, name, status, node, pod, retry, status_changed_ms, started_ms, "
    "finished_ms, exit_code, message";

Result<TaskRecord> TaskFromRow(const SqlRow& row) {
  TaskRecord task;
  task.workflow_id = row.Text(0);
  task.group = row.Text(1);
  task.name = row.Text(2);
  task.status = row.Text(3);
  task.node = row.Text(4);
  ASSIGN_OR_RETURN(task.pod, ParseStoredJson(row, 5, "task " + task.workflow_id + "/" + task.name));
  task.retry = static_cast<int>(row.Int(6));
  task.status_changed_ms = row.Int(7);
  task.started_ms = row.Int(8);
  task.finished_ms = row.Int(9);
  task.exit_code = static_cast<int>(row.Int(10));
  task.message = row.Text(11);
  return task;
}

// Shared WHERE clause of ListWorkflows' two queries.
std::string WorkflowWhere(const WorkflowFilter& filter, SqlParams& params) {
  std::string where = " WHERE 1 = 1";
  if (filter.pool) where += " AND pool = " + Param(params, *filter.pool);
  if (filter.user) where += " AND user_name = " + Param(params, *filter.user);
  if (filter.status) where += " AND status = " + Param(params, *filter.status);
  if (filter.unfinished_only) where += " AND finished = 0";
  if (filter.finished_only) where += " AND finished = 1";
  if (filter.after) {
    const char* op = filter.newest_first ? " < " : " > ";
    const std::string ms = Param(params, filter.after->submitted_ms);
    where += " AND (submitted_ms" + std::string(op) + ms + " OR (submitted_ms = " + ms + " AND id" +
             op + Param(params, filter.after->id) + "))";
  }
  where +=
      filter.newest_first ? " ORDER BY submitted_ms DESC, id DESC" : " ORDER BY submitted_ms, id";
  if (filter.limit > 0) where += " LIMIT " + Param(params, int64_t{filter.limit});
  return where;
}

// Rows per multi-row INSERT of tasks (13 parameters each): a statement of 1 to 64 rows, so at
// most 64 distinct SQL texts (each a prepared statement of the PostgreSQL writer session).
constexpr size_t kTasksPerInsert = 64;

// One row of the tasks table: the task at `position` of workflow `workflow_id`.
struct TaskRow {
  std::string_view workflow_id;
  int64_t position;
  const TaskRecord* task;
  const std::string* pod = nullptr;  // task->pod encoded, when it already is
};

// Runs a statement at once or, when `defer`, with the connection's next round trip (Defer).
Status Execute(SqlConnection& db, bool defer, std::string_view sql, SqlParams params) {
  if (defer) return db.Defer(sql, std::move(params));
  return db.Query(sql, params).status();
}

// Inserts `rows` (of one workflow or several) in multi-row INSERTs, which save round trips.
Status InsertTaskRows(SqlConnection& db, const std::vector<TaskRow>& rows, bool defer) {
  for (size_t begin = 0; begin < rows.size(); begin += kTasksPerInsert) {
    size_t end = std::min(rows.size(), begin + kTasksPerInsert);
    SqlParams params;
    params.reserve((end - begin) * 13);
    std::string sql =
        "INSERT INTO tasks (workflow_id, position, group_name, name, status, node, pod, retry, "
        "status_changed_ms, started_ms, finished_ms, exit_code, message) VALUES ";
    for (size_t i = begin; i < end; ++i) {
      const TaskRecord& t = *rows[i].task;
      std::string pod;
      if (rows[i].pod != nullptr) {
        pod = *rows[i].pod;
      } else {
        ASSIGN_OR_RETURN(
            pod, DumpJson(t.pod, "task " + std::string(rows[i].workflow_id) + "/" + t.name));
      }
      AppendRow(sql, params,
                {std::string(rows[i].workflow_id), rows[i].position, t.group, t.name, t.status,
                 t.node, std::move(pod), int64_t{t.retry}, t.status_changed_ms, t.started_ms,
                 t.finished_ms, int64_t{t.exit_code}, t.message},
                i == begin);
    }
    RETURN_IF_ERROR(Execute(db, defer, sql, std::move(params)));
  }
  return OkStatus();
}

// One row of the audit log: `record`, stamped `at_ms`.
struct AuditRow {
  const AuditRecord* record;
  int64_t at_ms;
};

// When `record` happened: its own time, else `now`.
int64_t AuditTime(const AuditRecord& record, int64_t now) {
  return record.at_ms != 0 ? record.at_ms : now;
}

// Appends `rows` in multi-row INSERTs, deferred or at once.
Status InsertAudits(SqlConnection& db, const std::vector<AuditRow>& rows, bool defer) {
  constexpr size_t kRowsPerInsert = 64;  // 6 parameters each
  for (size_t begin = 0; begin < rows.size(); begin += kRowsPerInsert) {
    size_t end = std::min(rows.size(), begin + kRowsPerInsert);
    SqlParams params;
    std::string sql =
        "INSERT INTO audit_log (at_ms, user_name, source, action, target, detail) VALUES ";
    for (size_t i = begin; i < end; ++i) {
      const AuditRecord& a = *rows[i].record;
      AppendRow(sql, params, {rows[i].at_ms, a.user, a.source, a.action, a.target, a.detail},
                i == begin);
    }
    RETURN_IF_ERROR(Execute(db, defer, sql, std::move(params)));
  }
  return OkStatus();
}

// Upserts `nodes` (their objects encoded in `objects`) and counts a node change.
Status UpsertNodesIn(SqlConnection& db, const std::vector<NodeRecord>& nodes,
                     const std::vector<std::string>& objects, bool replace_all) {
  RETURN_IF_ERROR(
      db.Query("UPDATE node_generation SET value = value + 1 WHERE id = 1", {}).status());
  if (replace_all) RETURN_IF_ERROR(db.Query("DELETE FROM nodes", {}).status());
  for (size_t i = 0; i < nodes.size(); ++i) {
    RETURN_IF_ERROR(db.Query("INSERT INTO nodes (name, object) VALUES ($1, $2) "
                             "ON CONFLICT (name) DO UPDATE SET object = excluded.object",
                             {nodes[i].name, objects[i]})
                        .status());
  }
  return OkStatus();
}

// Checks the names and encodes the objects of `nodes`, outside any transaction.
Result<std::vector<std::string>> EncodeNodes(const std::vector<NodeRecord>& nodes) {
  std::vector<std::string> objects;
  objects.reserve(nodes.size());
  for (const NodeRecord& node : nodes) {
    RETURN_IF_ERROR(RequireNonEmpty(node.name, "node name"));
    ASSIGN_OR_RETURN(std::string object, DumpJson(node.object, "node " + node.name));
    objects.push_back(std::move(object));
  }
  return objects;
}

// Fails (kFailedPrecondition) unless `fence.holder` holds lease `fence.lease`; otherwise keeps the
// lease row locked until the transaction ends, so a new leader's TryAcquireLease waits for it.
// A no-op UPDATE rather than a SELECT takes that lock (PostgreSQL); SQLite's write transaction
// already excludes every other writer.
Status HoldFence(SqlConnection& db, const Store::LeaseFence& fence) {
  ASSIGN_OR_RETURN(auto held, db.Query("UPDATE leases SET holder = holder "
                                       "WHERE name = $1 AND holder = $2 RETURNING holder",
                                       {fence.lease, fence.holder}));
  if (held.empty()) {
    return FailedPreconditionError("lease " + fence.lease + " is no longer held by " +
                                   fence.holder + "; the write was fenced off");
  }
  return OkStatus();
}

}  // namespace

const std::string& SqlRow::Text(size_t i) const {
  static const std::string kEmpty;
  const auto& column = columns_.at(i);
  return column ? *column : kEmpty;
}

int64_t SqlRow::Int(size_t i) const {
  const auto& column = columns_.at(i);
  if (!column) return 0;
  int64_t value = 0;
  std::from_chars(column->data(), column->data() + column->size(), value);
  return value;
}

SqlStore::SqlStore(std::unique_ptr<SqlConnection> connection, ConnectionFactory open_reader,
                   int max_readers, const Clock& clock, TransactionObserver observe)
    : connection_(std::move(connection)),
      open_reader_(std::move(open_reader)),
      max_readers_(open_reader_ ? std::max(0, max_readers) : 0),
      clock_(clock),
      observe_(std::move(observe)) {}

SqlStore::~SqlStore() {
  // Before any member goes: what is queued is written and answered.
  committer_.Close();
  checker_.Close();
  reserver_.Close();  // last: a write still queued may belong to a submission that takes ids
}

Result<std::unique_ptr<Store>> SqlStore::Open(std::unique_ptr<SqlConnection> connection,
                                              ConnectionFactory open_reader, int max_readers,
                                              const Clock& clock, TransactionObserver observe) {
  std::unique_ptr<SqlStore> store(new SqlStore(std::move(connection), std::move(open_reader),
                                               max_readers, clock, std::move(observe)));
  RETURN_IF_ERROR(store->Migrate());
  return std::unique_ptr<Store>(std::move(store));
}

SqlConnection* SqlStore::AcquireReader() {
  if (max_readers_ == 0) return nullptr;
  std::unique_lock lock(readers_mu_);
  if (readers_failed_) return nullptr;
  // Readers are handed out first come, first served: a released reader goes to the longest
  // waiting caller, so a caller that just released one cannot overtake the waiters.
  if (!idle_readers_.empty() && reader_waiters_.empty()) {
    SqlConnection* reader = idle_readers_.back();
    idle_readers_.pop_back();
    return reader;
  }
  if (static_cast<int>(readers_.size()) + opening_readers_ >= max_readers_) {
    ReaderWaiter waiter;
    reader_waiters_.push_back(&waiter);
    waiter.cv.wait(lock, [&] { return waiter.reader != nullptr || waiter.failed; });
    return waiter.reader;
  }
  // Open a new reader outside the lock (a PostgreSQL connection takes a round trip or more).
  ++opening_readers_;
  lock.unlock();
  auto opened = open_reader_();
  lock.lock();
  --opening_readers_;
  if (!opened.ok()) {
    // Use the writer from now on; wake everyone waiting for a reader.
    readers_failed_ = true;
    for (ReaderWaiter* waiter : reader_waiters_) {
      waiter->failed = true;
      waiter->cv.notify_one();
    }
    reader_waiters_.clear();
    return nullptr;
  }
  readers_.push_back(std::move(*opened));
  return readers_.back().get();
}

void SqlStore::ReleaseReader(SqlConnection* reader) {
  std::lock_guard lock(readers_mu_);
  if (!reader_waiters_.empty()) {
    ReaderWaiter* waiter = reader_waiters_.front();
    reader_waiters_.pop_front();
    waiter->reader = reader;
    waiter->cv.notify_one();
    return;
  }
  idle_readers_.push_back(reader);
}

template <typename Body>
auto SqlStore::RunOn(SqlConnection& db, Mode mode, Body& body) -> decltype(body(db)) {
  Status last;
  for (int attempt = 1; attempt <= kMaxAttempts; ++attempt) {
    if (attempt > 1) std::this_thread::sleep_for(std::chrono::milliseconds(2 * attempt));
    last = mode == Mode::kStatement ? db.Ready() : db.Begin(mode == Mode::kWrite);
    if (!last.ok()) {
      if (db.LastFailure().transient || db.LastFailure().connection_lost) continue;
      return last;
    }
    auto result = body(db);
    if (result.ok()) {
      if (mode == Mode::kStatement) return result;
      last = db.Commit();
      if (last.ok()) return result;
      SqlFailure failure = db.LastFailure();
      db.Rollback();
      // A commit whose outcome is unknown (connection lost) is not retried: it may have applied.
      if (failure.transient && !failure.connection_lost) continue;
      return last;
    }
    SqlFailure failure = db.LastFailure();
    db.Rollback();
    if constexpr (std::is_same_v<decltype(body(db)), Status>) {
      last = result;
    } else {
      last = result.status();
    }
    if (!failure.transient && !failure.connection_lost) return result;
  }
  return last;
}

template <typename Body>
auto SqlStore::Run(Mode mode, Body&& body, const BatchInfo* batch)
    -> decltype(body(std::declval<SqlConnection&>())) {
  if (!observe_) return RunOnConnection(mode, body);
  using Seconds = std::chrono::duration<double>;
  const auto start = std::chrono::steady_clock::now();
  auto result = RunOnConnection(mode, body);
  TransactionObservation seen;
  seen.kind = mode == Mode::kWrite ? TransactionObservation::Kind::kWrite
                                   : TransactionObservation::Kind::kRead;
  seen.seconds = Seconds(std::chrono::steady_clock::now() - start).count();
  seen.ok = result.ok();
  if (batch != nullptr) {
    seen.batched_writes = batch->writes;
    seen.queued_seconds = Seconds(start - batch->oldest_queued).count();
  }
  observe_(seen);
  return result;
}

template <typename Body>
auto SqlStore::RunOnConnection(Mode mode, Body& body)
    -> decltype(body(std::declval<SqlConnection&>())) {
  if (mode != Mode::kWrite) {
    if (SqlConnection* reader = AcquireReader(); reader != nullptr) {
      struct Release {
        SqlStore* store;
        SqlConnection* reader;
        ~Release() { store->ReleaseReader(reader); }
      } release{this, reader};
      return RunOn(*reader, mode, body);
    }
  }
  std::lock_guard lock(mu_);
  return RunOn(*connection_, mode, body);
}

Status SqlStore::Migrate() {
  const std::vector<Migration>& migrations = connection_->Migrations();
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Status {
    RETURN_IF_ERROR(db.LockForMigration());
    RETURN_IF_ERROR(
        db.Script("CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, "
                  "name TEXT NOT NULL, applied_at_ms BIGINT NOT NULL)"));
    ASSIGN_OR_RETURN(auto rows, db.Query("SELECT version FROM schema_migrations", {}));
    std::set<int64_t> applied;
    for (const SqlRow& row : rows) applied.insert(row.Int(0));
    int64_t newest_known = migrations.empty() ? 0 : migrations.back().version;
    if (!applied.empty() && *applied.rbegin() > newest_known) {
      return FailedPreconditionError(
          "store: the database schema is at version " + std::to_string(*applied.rbegin()) +
          ", newer than this gpupool knows (" + std::to_string(newest_known) + ")");
    }
    for (const Migration& migration : migrations) {
      if (applied.contains(migration.version)) continue;
      Status status = db.Script(migration.sql);
      if (!status.ok()) {
        return status.WithContext("store: migration " + std::to_string(migration.version) + "_" +
                                  std::string(migration.name));
      }
      RETURN_IF_ERROR(
          db.Query("INSERT INTO schema_migrations (version, name, applied_at_ms) "
                   "VALUES ($1, $2, $3)",
                   {int64_t{migration.version}, std::string(migration.name), clock_.NowMillis()})
              .status());
    }
    return OkStatus();
  });
}

// ---- Configs ----

Result<std::vector<int64_t>> SqlStore::WriteConfigs(const std::vector<ConfigWrite>& writes,
                                                    const Actor& actor, const WriteAlso& also) {
  ASSIGN_OR_RETURN(std::vector<std::string> node_objects, EncodeNodes(also.nodes));
  // Validate and encode outside the transaction.
  std::vector<std::optional<std::string>> bodies;
  bodies.reserve(writes.size());
  for (size_t i = 0; i < writes.size(); ++i) {
    const ConfigWrite& w = writes[i];
    std::string where = "config write " + std::to_string(i);
    RETURN_IF_ERROR(RequireNonEmpty(w.kind, where + ": kind"));
    RETURN_IF_ERROR(RequireNonEmpty(w.name, where + ": name"));
    if (w.op == ConfigWrite::Op::kCheck && !w.expected_revision) {
      return InvalidArgumentError(where + " (" + ConfigKey(w.kind, w.name) +
                                  "): a check needs expected_revision");
    }
    if (w.op == ConfigWrite::Op::kPut) {
      if (w.body.is_null() || w.body.is_discarded()) {
        return InvalidArgumentError(where + " (" + ConfigKey(w.kind, w.name) +
                                    "): body must not be null");
      }
      ASSIGN_OR_RETURN(std::string body, DumpJson(w.body, ConfigKey(w.kind, w.name)));
      bodies.emplace_back(std::move(body));
    } else {
      bodies.emplace_back(std::nullopt);
    }
  }
  bool changes = std::any_of(writes.begin(), writes.end(),
                             [](const ConfigWrite& w) { return w.op != ConfigWrite::Op::kCheck; });
  int64_t now = clock_.NowMillis();
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Result<std::vector<int64_t>> {
    // First statement: the row lock it takes serialises config writers until commit, so the
    // revision checks below cannot race with another writer.
    if (changes) {
      RETURN_IF_ERROR(
          db.Query("UPDATE config_generation SET value = value + 1 WHERE id = 1", {}).status());
    }
    std::vector<int64_t> revisions;
    revisions.reserve(writes.size());
    for (size_t i = 0; i < writes.size(); ++i) {
      const ConfigWrite& w = writes[i];
      const std::string key = ConfigKey(w.kind, w.name);
      ASSIGN_OR_RETURN(auto current_rows,
                       db.Query("SELECT revision FROM configs WHERE kind = $1 AND "
                                "name = $2",
                                {w.kind, w.name}));
      int64_t current = current_rows.empty() ? 0 : current_rows[0].Int(0);
      if (w.expected_revision && *w.expected_revision != current) {
        return AbortedError("config " + key + ": expected revision " +
                            std::to_string(*w.expected_revision) + " but it is " +
                            (current == 0 ? std::string("absent") : std::to_string(current)) +
                            " (changed concurrently; reload and retry)");
      }
      if (w.op == ConfigWrite::Op::kCheck) {
        revisions.push_back(current);
        continue;
      }
      if (w.op == ConfigWrite::Op::kDelete && current == 0) {
        return NotFoundError("config " + key + " does not exist");
      }
      ASSIGN_OR_RETURN(auto head,
                       db.Query("INSERT INTO config_heads (kind, name, last_revision) "
                                "VALUES ($1, $2, 1) ON CONFLICT (kind, name) DO UPDATE SET "
                                "last_revision = config_heads.last_revision + 1 "
                                "RETURNING last_revision",
                                {w.kind, w.name}));
      if (head.size() != 1) return InternalError("store: config head of " + key + " not returned");
      int64_t revision = head[0].Int(0);
      std::string action = w.action;
      if (w.op == ConfigWrite::Op::kPut) {
        if (action.empty()) action = "update";
        RETURN_IF_ERROR(
            db.Query("INSERT INTO configs (kind, name, body, revision, updated_by, "
                     "updated_at_ms) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (kind, name) "
                     "DO UPDATE SET body = excluded.body, revision = excluded.revision, "
                     "updated_by = excluded.updated_by, updated_at_ms = excluded.updated_at_ms",
                     {w.kind, w.name, *bodies[i], revision, actor.user, now})
                .status());
      } else {
        if (action.empty()) action = "delete";
        RETURN_IF_ERROR(
            db.Query("DELETE FROM configs WHERE kind = $1 AND name = $2", {w.kind, w.name})
                .status());
      }
      SqlParam body = bodies[i] ? SqlParam(*bodies[i]) : SqlParam(nullptr);
      RETURN_IF_ERROR(
          db.Query("INSERT INTO config_revisions (kind, name, revision, action, author, "
                   "source, created_at_ms, description, body) "
                   "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                   {w.kind, w.name, revision, action, actor.user, actor.source, now, w.description,
                    body})
              .status());
      revisions.push_back(revision);
    }
    if (!also.nodes.empty() || also.replace_all_nodes) {
      RETURN_IF_ERROR(UpsertNodesIn(db, also.nodes, node_objects, also.replace_all_nodes));
    }
    std::vector<AuditRow> audit;
    for (const AuditRecord& record : also.audit) {
      audit.push_back({&record, AuditTime(record, now)});
    }
    RETURN_IF_ERROR(InsertAudits(db, audit, /*defer=*/false));
    return revisions;
  });
}

Result<ConfigRecord> SqlStore::GetConfig(std::string_view kind, std::string_view name) {
  return Run(Mode::kRead, [&](SqlConnection& db) -> Result<ConfigRecord> {
    ASSIGN_OR_RETURN(auto rows, db.Query("SELECT " + std::string(kConfigColumns) +
                                             " FROM configs WHERE kind = $1 AND name = $2",
                                         {std::string(kind), std::string(name)}));
    if (rows.empty()) return NotFoundError("config " + ConfigKey(kind, name) + " not found");
    return ConfigFromRow(rows[0]);
  });
}

Result<std::vector<ConfigRecord>> SqlStore::ListConfigs(std::optional<std::string_view> kind) {
  SqlParams params;
  std::string sql = "SELECT " + std::string(kConfigColumns) + " FROM configs";
  if (kind) sql += " WHERE kind = " + Param(params, std::string(*kind));
  sql += " ORDER BY kind, name";
  return Run(Mode::kRead, [&](SqlConnection& db) -> Result<std::vector<ConfigRecord>> {
    ASSIGN_OR_RETURN(auto rows, db.Query(sql, params));
    std::vector<ConfigRecord> records;
    records.reserve(rows.size());
    for (const SqlRow& row : rows) {
      ASSIGN_OR_RETURN(ConfigRecord record, ConfigFromRow(row));
      records.push_back(std::move(record));
    }
    return records;
  });
}

Result<std::vector<RevisionRecord>> SqlStore::History(std::optional<std::string_view> kind,
                                                      std::optional<std::string_view> name,
                                                      int limit) {
  SqlParams params;
  std::string sql =
      "SELECT " + std::string(kRevisionColumns) + " FROM config_revisions WHERE 1 = 1";
  if (kind) sql += " AND kind = " + Param(params, std::string(*kind));
  if (name) sql += " AND name = " + Param(params, std::string(*name));
  sql += " ORDER BY seq DESC";
  if (limit > 0) sql += " LIMIT " + Param(params, int64_t{limit});
  return Run(Mode::kRead, [&](SqlConnection& db) -> Result<std::vector<RevisionRecord>> {
    ASSIGN_OR_RETURN(auto rows, db.Query(sql, params));
    std::vector<RevisionRecord> records;
    records.reserve(rows.size());
    for (const SqlRow& row : rows) {
      ASSIGN_OR_RETURN(RevisionRecord record, RevisionFromRow(row));
      records.push_back(std::move(record));
    }
    return records;
  });
}

Result<RevisionRecord> SqlStore::GetRevision(std::string_view kind, std::string_view name,
                                             int64_t revision) {
  return Run(Mode::kRead, [&](SqlConnection& db) -> Result<RevisionRecord> {
    ASSIGN_OR_RETURN(auto rows, db.Query("SELECT " + std::string(kRevisionColumns) +
                                             " FROM config_revisions WHERE kind = $1 AND "
                                             "name = $2 AND revision = $3",
                                         {std::string(kind), std::string(name), revision}));
    if (rows.empty()) {
      return NotFoundError("config " + ConfigKey(kind, name) + " has no revision " +
                           std::to_string(revision));
    }
    return RevisionFromRow(rows[0]);
  });
}

Result<int64_t> SqlStore::ConfigGeneration() {
  return Run(Mode::kStatement, [&](SqlConnection& db) -> Result<int64_t> {
    ASSIGN_OR_RETURN(auto rows, db.Query("SELECT value FROM config_generation WHERE id = 1", {}));
    if (rows.size() != 1) return InternalError("store: config_generation has no row");
    return rows[0].Int(0);
  });
}

Result<Store::Generations> SqlStore::ReadGenerations(SqlConnection& db) {
  ASSIGN_OR_RETURN(auto rows, db.Query("SELECT c.value, n.value FROM config_generation c, "
                                       "node_generation n WHERE c.id = 1 AND n.id = 1",
                                       {}));
  if (rows.size() != 1) return InternalError("store: a generation row is missing");
  return Generations{rows[0].Int(0), rows[0].Int(1)};
}

Result<Store::Generations> SqlStore::GetGenerations() {
  return Run(Mode::kStatement, [&](SqlConnection& db) { return ReadGenerations(db); });
}

// ---- Nodes ----

Status SqlStore::UpsertNodes(const std::vector<NodeRecord>& nodes, bool replace_all) {
  ASSIGN_OR_RETURN(std::vector<std::string> objects, EncodeNodes(nodes));
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Status {
    return UpsertNodesIn(db, nodes, objects, replace_all);
  });
}

Status SqlStore::DeleteNodes(const std::vector<std::string>& names) {
  if (names.empty()) return OkStatus();
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Status {
    RETURN_IF_ERROR(
        db.Query("UPDATE node_generation SET value = value + 1 WHERE id = 1", {}).status());
    for (const std::string& name : names) {
      RETURN_IF_ERROR(db.Query("DELETE FROM nodes WHERE name = $1", {name}).status());
    }
    return OkStatus();
  });
}

// One conditional statement per change; RETURNING tells whether it matched (both databases).
Status SqlStore::ChangeNodesIfUnchanged(const std::vector<NodeChange>& changes,
                                        const LeaseFence* fence) {
  struct Texts {
    std::string expected, next;
  };
  std::vector<Texts> texts(changes.size());
  for (size_t i = 0; i < changes.size(); ++i) {
    RETURN_IF_ERROR(RequireNonEmpty(changes[i].name, "node name"));
    const std::string what = "node " + changes[i].name;
    if (changes[i].expected) {
      ASSIGN_OR_RETURN(texts[i].expected, DumpJson(*changes[i].expected, what));
    }
    if (changes[i].next) {
      ASSIGN_OR_RETURN(texts[i].next, DumpJson(*changes[i].next, what));
    }
  }
  if (changes.empty()) return OkStatus();
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Status {
    if (fence != nullptr) RETURN_IF_ERROR(HoldFence(db, *fence));
    RETURN_IF_ERROR(
        db.Query("UPDATE node_generation SET value = value + 1 WHERE id = 1", {}).status());
    for (size_t i = 0; i < changes.size(); ++i) {
      const NodeChange& change = changes[i];
      Result<std::vector<SqlRow>> rows = std::vector<SqlRow>{};
      if (!change.expected) {
        rows = db.Query(
            "INSERT INTO nodes (name, object) VALUES ($1, $2) "
            "ON CONFLICT (name) DO NOTHING RETURNING name",
            {change.name, texts[i].next});
      } else if (change.next) {
        rows = db.Query(
            "UPDATE nodes SET object = $3 WHERE name = $1 AND object = $2 "
            "RETURNING name",
            {change.name, texts[i].expected, texts[i].next});
      } else {
        rows = db.Query("DELETE FROM nodes WHERE name = $1 AND object = $2 RETURNING name",
                        {change.name, texts[i].expected});
      }
      if (!rows.ok()) return rows.status();
      if (rows->empty()) {
        return AbortedError("node \"" + change.name +
                            "\" changed since it was read; nothing was written");
      }
    }
    return OkStatus();
  });
}

Result<std::vector<NodeRecord>> SqlStore::ListNodes() {
  return Run(Mode::kRead, [&](SqlConnection& db) -> Result<std::vector<NodeRecord>> {
    ASSIGN_OR_RETURN(auto rows, db.Query("SELECT name, object FROM nodes ORDER BY name", {}));
    std::vector<NodeRecord> nodes;
    nodes.reserve(rows.size());
    for (const SqlRow& row : rows) {
      NodeRecord node;
      node.name = row.Text(0);
      ASSIGN_OR_RETURN(node.object, ParseStoredJson(row, 1, "node " + node.name));
      nodes.push_back(std::move(node));
    }
    return nodes;
  });
}

// ---- Workflows ----

Result<WorkflowRecord> SqlStore::LoadWorkflow(SqlConnection& db, std::string_view id) {
  ASSIGN_OR_RETURN(auto rows, db.Query("SELECT " + std::string(kWorkflowColumns) +
                                           " FROM workflows WHERE id = $1",
                                       {std::string(id)}));
  if (rows.empty()) return NotFoundError("workflow " + std::string(id) + " not found");
  ASSIGN_OR_RETURN(WorkflowRecord workflow, WorkflowFromRow(rows[0]));
  ASSIGN_OR_RETURN(auto task_rows,
                   db.Query("SELECT " + std::string(kTaskColumns) +
                                " FROM tasks WHERE workflow_id = $1 ORDER BY position",
                            {std::string(id)}));
  workflow.tasks.reserve(task_rows.size());
  for (const SqlRow& row : task_rows) {
    ASSIGN_OR_RETURN(TaskRecord task, TaskFromRow(row));
    workflow.tasks.push_back(std::move(task));
  }
  return workflow;
}

Status SqlStore::InsertTasks(SqlConnection& db, std::string_view workflow_id,
                             const std::vector<TaskRecord>& tasks,
                             const std::vector<std::string>* pods) {
  std::vector<TaskRow> rows;
  rows.reserve(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    rows.push_back(TaskRow{workflow_id, static_cast<int64_t>(i), &tasks[i],
                           pods != nullptr ? &(*pods)[i] : nullptr});
  }
  return InsertTaskRows(db, rows, /*defer=*/false);
}

Result<SqlStore::CreateOutcome> SqlStore::CreateIn(SqlConnection& db, const PendingWrite& write) {
  const WorkflowRecord& workflow = *write.workflow;
  const std::string& spec = write.spec;
  SqlParam key =
      workflow.idempotency_key.empty() ? SqlParam(nullptr) : SqlParam(workflow.idempotency_key);
  auto find_by_key = [&]() -> Result<std::optional<WorkflowRecord>> {
    if (workflow.idempotency_key.empty()) return std::optional<WorkflowRecord>();
    ASSIGN_OR_RETURN(auto rows, db.Query("SELECT id FROM workflows WHERE idempotency_key = $1",
                                         {workflow.idempotency_key}));
    if (rows.empty()) return std::optional<WorkflowRecord>();
    ASSIGN_OR_RETURN(WorkflowRecord existing, LoadWorkflow(db, rows[0].Text(0)));
    return std::optional<WorkflowRecord>(std::move(existing));
  };
  CreateOutcome outcome;
  ASSIGN_OR_RETURN(outcome.existing, find_by_key());
  if (outcome.existing) return outcome;
  // DO NOTHING on any conflict (id or idempotency key), so a taken id is a refusal that leaves
  // the transaction (and the rest of its batch) usable. With PostgreSQL it waits for a concurrent
  // insert of the same key to commit, so the second lookup below sees it.
  ASSIGN_OR_RETURN(
      auto inserted,
      db.Query("INSERT INTO workflows (id, name, pool, user_name, status, finished, "
               "submitted_ms, spec, version, idempotency_key) "
               "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9) "
               "ON CONFLICT DO NOTHING RETURNING id",
               {workflow.id, workflow.name, workflow.pool, workflow.user, workflow.status,
                int64_t{IsFinishedWorkflowStatus(workflow.status) ? 1 : 0}, workflow.submitted_ms,
                spec, key}));
  if (inserted.empty()) {
    ASSIGN_OR_RETURN(outcome.existing, find_by_key());
    if (!outcome.existing) {
      outcome.refused = AlreadyExistsError("workflow " + workflow.id + " already exists");
    }
    return outcome;
  }
  RETURN_IF_ERROR(InsertTasks(db, workflow.id, workflow.tasks, &write.pods));
  outcome.inserted = true;
  return outcome;
}

void SqlStore::Enqueue(PendingWrite* write) {
  write->queued_at = std::chrono::steady_clock::now();
  committer_.Push(write);
}

void SqlStore::GroupCommit(PendingWrite& write) {
  Enqueue(&write);
  write.done.wait(false);
}

void SqlStore::CommitBatch(std::vector<PendingWrite*>& batch) {
  WriteBatch(batch);
  for (PendingWrite* write : batch) {
    if (write->owned) {
      std::unique_ptr<PendingWrite> own(write);
      auto parts = std::move(write->owned);
      parts->done(Created(*write, std::move(parts->workflow)));
    } else {
      write->done.store(true);
      write->done.notify_one();
    }
  }
}

Status SqlStore::CreateTogether(SqlConnection& db, const std::vector<PendingWrite*>& todo,
                                const std::vector<size_t>& together,
                                std::vector<CreateOutcome>& outcomes) {
  // Rows per multi-row INSERT (8 parameters each): the largest power of two up to 64 that the
  // rest fills, so at most 7 distinct SQL texts (1, 2, 4, ..., 64 rows) and at most 7 statements
  // for 127 creates.
  constexpr size_t kWorkflowsPerInsert = 64;
  // Deferred: PostgreSQL sends them with the batch's COMMIT. A taken id (no ON CONFLICT clause)
  // fails the statement and with it the transaction; WriteBatch then writes the batch one create
  // at a time, where CreateIn refuses that create alone. Ids come from sequences, so that is rare.
  std::vector<TaskRow> tasks;
  for (size_t begin = 0; begin < together.size();) {
    size_t end = begin + std::min(kWorkflowsPerInsert, std::bit_floor(together.size() - begin));
    SqlParams params;
    params.reserve((end - begin) * 8);
    std::string sql =
        "INSERT INTO workflows (id, name, pool, user_name, status, finished, submitted_ms, spec, "
        "version) VALUES ";
    for (size_t k = begin; k < end; ++k) {
      const PendingWrite& write = *todo[together[k]];
      const WorkflowRecord& w = *write.workflow;
      AppendRow(sql, params,
                {w.id, w.name, w.pool, w.user, w.status,
                 int64_t{IsFinishedWorkflowStatus(w.status) ? 1 : 0}, w.submitted_ms, write.spec},
                k == begin, "1");
      outcomes[together[k]].inserted = true;
      for (size_t i = 0; i < w.tasks.size(); ++i) {
        tasks.push_back(TaskRow{w.id, static_cast<int64_t>(i), &w.tasks[i], &write.pods[i]});
      }
    }
    RETURN_IF_ERROR(db.Defer(sql, std::move(params)));
    begin = end;
  }
  return InsertTaskRows(db, tasks, /*defer=*/true);
}

Status SqlStore::RefuseStalePlans(SqlConnection& db, const std::vector<PendingWrite*>& todo,
                                  std::vector<CreateOutcome>& outcomes) {
  bool any = std::any_of(todo.begin(), todo.end(),
                         [](const PendingWrite* w) { return w->if_generations.has_value(); });
  if (!any) return OkStatus();
  ASSIGN_OR_RETURN(Generations now, ReadGenerations(db));
  for (size_t i = 0; i < todo.size(); ++i) {
    const std::optional<Generations>& planned = todo[i]->if_generations;
    if (planned && (planned->configs != now.configs || planned->nodes != now.nodes)) {
      outcomes[i].refused = AbortedError(std::string(kStalePlan));
    }
  }
  return OkStatus();
}

std::vector<size_t> SqlStore::Together(const std::vector<PendingWrite*>& todo,
                                       const std::vector<CreateOutcome>& outcomes,
                                       bool one_by_one) {
  // The creates that go together: no idempotency key, and an id that no earlier write of the
  // batch has. Written first, each still gets the outcome it would get in batch order: none
  // can conflict with an earlier write of the batch (a key-less create conflicts on its id
  // only), and the later writes of its id still come after it. The other creates (keyed, or a
  // repeated id) run one at a time in batch order, as CreateIn. Refused creates write nothing.
  std::vector<size_t> together;
  if (one_by_one) return together;
  std::unordered_set<std::string_view> ids;
  for (size_t i = 0; i < todo.size(); ++i) {
    const WorkflowRecord* workflow = todo[i]->workflow;
    if (workflow == nullptr || !outcomes[i].refused.ok()) continue;
    if (ids.insert(workflow->id).second && workflow->idempotency_key.empty()) {
      together.push_back(i);
    }
  }
  return together;
}

void SqlStore::WriteBatch(const std::vector<PendingWrite*>& batch) {
  std::vector<PendingWrite*> todo = batch;
  // Multi-row statements write the batch's creates without an idempotency key, their tasks and
  // the audit records, deferred to the COMMIT (one round trip with PostgreSQL). A failing shared
  // statement does not tell whose row failed, so the batch is then rerun with one statement per
  // write, none deferred (and stays so), to find the write that fails.
  bool one_by_one = false;
  while (!todo.empty()) {
    std::vector<CreateOutcome> outcomes;
    size_t failed = todo.size();  // the write whose statement failed, if one did
    bool shared_failed = false;   // a shared statement (or one sent with them) failed
    auto write_batch = [&](SqlConnection& db) -> Status {
      outcomes.assign(todo.size(), CreateOutcome{});
      failed = todo.size();
      shared_failed = false;
      RETURN_IF_ERROR(RefuseStalePlans(db, todo, outcomes));
      std::vector<size_t> together = Together(todo, outcomes, one_by_one);
      std::vector<bool> is_together(todo.size(), false);
      for (size_t i : together) is_together[i] = true;
      shared_failed = true;  // SQLite runs deferred statements at once
      RETURN_IF_ERROR(CreateTogether(db, todo, together, outcomes));
      // The next statement sent carries the deferred ones: its failure may be theirs.
      bool deferred = !together.empty();
      std::vector<AuditRow> audited;
      for (size_t i = 0; i < todo.size(); ++i) {
        const PendingWrite& write = *todo[i];
        failed = i;
        shared_failed = deferred;
        if (write.workflow != nullptr) {
          if (!outcomes[i].refused.ok()) continue;  // planned against changed configs or nodes
          if (!is_together[i]) {
            ASSIGN_OR_RETURN(outcomes[i], CreateIn(db, write));
            deferred = false;
          }
          if (!outcomes[i].refused.ok()) continue;  // no audit record for a refused create
        }
        if (write.audit == nullptr) continue;
        AuditRow row{write.audit, write.audit_at_ms};
        if (one_by_one) {
          RETURN_IF_ERROR(InsertAudits(db, {row}, /*defer=*/false));
        } else {
          audited.push_back(row);
        }
      }
      failed = todo.size();
      shared_failed = !one_by_one;  // the COMMIT carries the deferred statements
      return InsertAudits(db, audited, /*defer=*/true);
    };
    // Writes are queued in order, so the batch's first one waited longest.
    BatchInfo info{todo.size(), batch.front()->queued_at};
    Status status = Run(Mode::kWrite, write_batch, &info);
    if (status.ok()) {
      for (size_t i = 0; i < todo.size(); ++i) {
        CreateOutcome& outcome = outcomes[i];
        todo[i]->status = outcome.refused;
        todo[i]->inserted = outcome.inserted;
        todo[i]->existing = std::move(outcome.existing);
      }
      return;
    }
    // A lost connection leaves the COMMIT's outcome unknown: the whole batch fails (retryable),
    // as rerunning it could refuse creates that did commit.
    if (shared_failed && !one_by_one && status.code() != StatusCode::kUnavailable) {
      one_by_one = true;
      continue;
    }
    if (failed >= todo.size()) {
      // Begin or commit failed: the whole batch failed (after the retries of Run).
      for (PendingWrite* write : todo) write->status = status;
      return;
    }
    // One write's statement failed: it fails alone; rerun the others without it.
    todo[failed]->status = status;
    todo.erase(todo.begin() + static_cast<ptrdiff_t>(failed));
  }
}

Result<WorkflowRecord> SqlStore::Created(PendingWrite& write, WorkflowRecord workflow) {
  if (!write.status.ok()) return write.status;
  if (write.existing) return std::move(*write.existing);
  workflow.version = 1;
  for (TaskRecord& task : workflow.tasks) task.workflow_id = workflow.id;
  return workflow;
}

// Encodes the workflow's spec and its tasks' pods on the caller's thread, not the commit
// thread, which every create waits on.
Status SqlStore::EncodeCreate(PendingWrite& write, const WorkflowRecord& workflow) {
  RETURN_IF_ERROR(RequireNonEmpty(workflow.id, "workflow id"));
  write.workflow = &workflow;
  ASSIGN_OR_RETURN(write.spec, DumpJson(workflow.spec, "workflow " + workflow.id));
  write.pods.clear();
  write.pods.reserve(workflow.tasks.size());
  for (const TaskRecord& task : workflow.tasks) {
    ASSIGN_OR_RETURN(std::string pod, DumpJson(task.pod, "task " + workflow.id + "/" + task.name));
    write.pods.push_back(std::move(pod));
  }
  return OkStatus();
}

Result<WorkflowRecord> SqlStore::CreateWorkflow(const WorkflowRecord& workflow) {
  PendingWrite write;
  RETURN_IF_ERROR(EncodeCreate(write, workflow));
  GroupCommit(write);
  if (!write.status.ok()) return write.status;
  if (write.existing) return std::move(*write.existing);
  return Created(write, workflow);
}

Status SqlStore::PrepareCreate(PendingWrite& write, const WorkflowRecord& workflow,
                               const AuditRecord& audit,
                               std::optional<Generations> if_generations) {
  RETURN_IF_ERROR(EncodeCreate(write, workflow));
  write.audit = &audit;
  write.audit_at_ms = AuditTime(audit, clock_.NowMillis());
  write.if_generations = if_generations;
  return OkStatus();
}

Result<WorkflowRecord> SqlStore::CreateWorkflowWithAudit(
    WorkflowRecord workflow, const AuditRecord& audit, std::optional<Generations> if_generations) {
  PendingWrite write;
  RETURN_IF_ERROR(PrepareCreate(write, workflow, audit, if_generations));
  GroupCommit(write);
  return Created(write, std::move(workflow));
}

void SqlStore::CreateWorkflowWithAuditAsync(WorkflowRecord workflow, AuditRecord audit,
                                            std::optional<Generations> if_generations,
                                            CreateDone done) {
  auto write = std::make_unique<PendingWrite>();
  write->owned = std::make_unique<PendingWrite::Owned>(
      PendingWrite::Owned{std::move(workflow), std::move(audit), std::move(done)});
  PendingWrite::Owned& owned = *write->owned;
  if (Status s = PrepareCreate(*write, owned.workflow, owned.audit, if_generations); !s.ok()) {
    return owned.done(s);
  }
  Enqueue(write.release());
}

Result<WorkflowRecord> SqlStore::GetWorkflow(std::string_view id) {
  return Run(Mode::kRead, [&](SqlConnection& db) { return LoadWorkflow(db, id); });
}

Result<std::optional<WorkflowRecord>> SqlStore::GetWorkflowIfChanged(std::string_view id,
                                                                     int64_t known_version) {
  ASSIGN_OR_RETURN(
      auto version, Run(Mode::kStatement, [&](SqlConnection& db) -> Result<int64_t> {
        ASSIGN_OR_RETURN(
            auto rows, db.Query("SELECT version FROM workflows WHERE id = $1", {std::string(id)}));
        if (rows.empty()) {
          return NotFoundError("workflow " + std::string(id) + " not found");
        }
        return rows[0].Int(0);
      }));
  if (version == known_version) return std::optional<WorkflowRecord>();
  ASSIGN_OR_RETURN(WorkflowRecord workflow, GetWorkflow(id));
  return std::optional<WorkflowRecord>(std::move(workflow));
}

void SqlStore::GetWorkflowIfChangedAsync(std::string id, int64_t known_version,
                                         IfChangedDone done) {
  checker_.Push(VersionCheck{std::move(id), known_version, std::move(done)});
}

Result<std::unordered_map<std::string, int64_t>> SqlStore::Versions(
    const std::vector<std::string>& ids) {
  // Ids per statement: a power of two up to 64 (padded with the last id), so that at most 7
  // distinct SQL texts are prepared.
  constexpr size_t kIdsPerStatement = 64;
  std::unordered_map<std::string, int64_t> versions;
  for (size_t begin = 0; begin < ids.size();) {
    size_t n = std::min(kIdsPerStatement, std::bit_ceil(ids.size() - begin));
    size_t end = std::min(ids.size(), begin + n);
    SqlParams params;
    std::string sql = "SELECT id, version FROM workflows WHERE id IN (";
    for (size_t k = 0; k < n; ++k) {
      if (k > 0) sql += ", ";
      sql += "$" + std::to_string(k + 1);
      params.emplace_back(ids[std::min(begin + k, end - 1)]);
    }
    sql += ")";
    ASSIGN_OR_RETURN(
        auto rows, Run(Mode::kStatement, [&](SqlConnection& db) { return db.Query(sql, params); }));
    for (const SqlRow& row : rows) versions[std::string(row.Text(0))] = row.Int(1);
    begin = end;
  }
  return versions;
}

void SqlStore::CheckBatch(std::vector<VersionCheck>& batch) {
  // Many checks of a batch may name one workflow (a popular one, or a client polling).
  std::vector<std::string> ids;
  std::unordered_set<std::string_view> seen;
  for (const VersionCheck& check : batch) {
    if (seen.insert(check.id).second) ids.push_back(check.id);
  }
  auto versions = Versions(ids);
  // A changed workflow is loaded once for all its checks (it may be newer than the version just
  // read: still current as of each check).
  std::unordered_map<std::string, Result<WorkflowRecord>> loaded;
  for (VersionCheck& check : batch) {
    if (!versions.ok()) {
      check.done(versions.status());
      continue;
    }
    auto found = versions->find(check.id);
    if (found == versions->end()) {
      check.done(NotFoundError("workflow " + check.id + " not found"));
      continue;
    }
    if (found->second == check.known_version) {
      check.done(std::optional<WorkflowRecord>());
      continue;
    }
    auto it = loaded.find(check.id);
    if (it == loaded.end()) it = loaded.emplace(check.id, GetWorkflow(check.id)).first;
    if (!it->second.ok()) {
      check.done(it->second.status());
    } else {
      check.done(std::optional<WorkflowRecord>(*it->second));
    }
  }
}

Result<std::vector<WorkflowRecord>> SqlStore::ListWorkflows(const WorkflowFilter& filter) {
  SqlParams params;
  std::string where = WorkflowWhere(filter, params);
  std::string workflows_sql = "SELECT " + std::string(kWorkflowColumns) + " FROM workflows" + where;
  std::string tasks_sql = "SELECT t." + std::string(kTaskColumns) +
                          " FROM tasks t JOIN (SELECT id FROM workflows" + where +
                          ") w ON t.workflow_id = w.id ORDER BY t.workflow_id, t.position";
  return Run(Mode::kRead, [&](SqlConnection& db) -> Result<std::vector<WorkflowRecord>> {
    ASSIGN_OR_RETURN(auto rows, db.Query(workflows_sql, params));
    std::vector<WorkflowRecord> workflows;
    workflows.reserve(rows.size());
    std::unordered_map<std::string, size_t> index;
    for (const SqlRow& row : rows) {
      ASSIGN_OR_RETURN(WorkflowRecord workflow, WorkflowFromRow(row));
      index.emplace(workflow.id, workflows.size());
      workflows.push_back(std::move(workflow));
    }
    if (workflows.empty()) return workflows;
    ASSIGN_OR_RETURN(auto task_rows, db.Query(tasks_sql, params));
    for (const SqlRow& row : task_rows) {
      ASSIGN_OR_RETURN(TaskRecord task, TaskFromRow(row));
      auto it = index.find(task.workflow_id);
      if (it != index.end()) workflows[it->second].tasks.push_back(std::move(task));
    }
    return workflows;
  });
}

Status SqlStore::UpdateWorkflow(const WorkflowRecord& workflow) {
  return WriteWorkflow(workflow, nullptr);
}

Status SqlStore::UpdateWorkflowWithAudit(const WorkflowRecord& workflow, const AuditRecord& audit) {
  return WriteWorkflow(workflow, nullptr, &audit);
}

Status SqlStore::UpdateWorkflowAsLeader(const WorkflowRecord& workflow, const LeaseFence& fence) {
  return WriteWorkflow(workflow, &fence);
}

Status SqlStore::WriteWorkflow(const WorkflowRecord& workflow, const LeaseFence* fence,
                               const AuditRecord* audit) {
  RETURN_IF_ERROR(RequireNonEmpty(workflow.id, "workflow id"));
  ASSIGN_OR_RETURN(std::string spec, DumpJson(workflow.spec, "workflow " + workflow.id));
  const int64_t audit_at_ms = audit == nullptr ? 0 : AuditTime(*audit, clock_.NowMillis());
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Status {
    if (fence != nullptr) RETURN_IF_ERROR(HoldFence(db, *fence));
    ASSIGN_OR_RETURN(
        auto updated,
        db.Query(
            "UPDATE workflows SET name = $2, pool = $3, user_name = $4, "
            "status = $5, finished = $6, spec = $7, version = version + 1 "
            "WHERE id = $1 AND version = $8 RETURNING version",
            {workflow.id, workflow.name, workflow.pool, workflow.user, workflow.status,
             int64_t{IsFinishedWorkflowStatus(workflow.status) ? 1 : 0}, spec, workflow.version}));
    if (updated.empty()) {
      ASSIGN_OR_RETURN(auto rows,
                       db.Query("SELECT version FROM workflows WHERE id = $1", {workflow.id}));
      if (rows.empty()) return NotFoundError("workflow " + workflow.id + " not found");
      return AbortedError("workflow " + workflow.id + ": version " +
                          std::to_string(workflow.version) + " is stale (stored version is " +
                          std::to_string(rows[0].Int(0)) + "); reload and retry");
    }
    RETURN_IF_ERROR(db.Query("DELETE FROM tasks WHERE workflow_id = $1", {workflow.id}).status());
    RETURN_IF_ERROR(InsertTasks(db, workflow.id, workflow.tasks));
    if (audit == nullptr) return OkStatus();
    return InsertAudits(db, {AuditRow{audit, audit_at_ms}}, /*defer=*/false);
  });
}

Result<int64_t> SqlStore::ReserveSequence(std::string_view name, int64_t size) {
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Result<int64_t> {
    ASSIGN_OR_RETURN(auto rows, db.Query("INSERT INTO sequences (name, value) VALUES ($1, $2) "
                                         "ON CONFLICT (name) DO UPDATE "
                                         "SET value = sequences.value + $2 RETURNING value",
                                         {std::string(name), size}));
    if (rows.size() != 1) return InternalError("store: sequence " + std::string(name));
    return rows[0].Int(0);
  });
}

Result<int64_t> SqlStore::NextSequence(std::string_view name) {
  RETURN_IF_ERROR(RequireNonEmpty(name, "sequence name"));
  std::unique_lock lock(sequences_mu_);
  SequenceBlock& block = sequences_[std::string(name)];
  while (block.next >= block.end) {
    if (block.spare_next < block.spare_end) {
      block.next = std::exchange(block.spare_next, 0);
      block.end = std::exchange(block.spare_end, 0);
      break;
    }
    if (block.reserving) {  // the next block is on its way
      sequences_cv_.wait(lock);
      continue;
    }
    // Blocks start at one value (a CLI process that takes one id leaves no gap) and double with
    // each reservation up to kMaxSequenceBlock (a busy server reserves rarely).
    int64_t size = std::clamp<int64_t>(block.size * 2, 1, kMaxSequenceBlock);
    ASSIGN_OR_RETURN(int64_t last, ReserveSequence(name, size));
    block.next = last - size + 1;
    block.end = last + 1;
    block.size = size;
  }
  int64_t value = block.next++;
  // A busy store (its blocks at full size) reserves the next block on the reserve thread while
  // half of this one is left, so that callers (the server's I/O loops) do not wait for a write.
  if (block.size == kMaxSequenceBlock && !block.reserving && block.spare_next == block.spare_end &&
      block.end - block.next <= kMaxSequenceBlock / 2) {
    block.reserving = true;
    reserver_.Push(std::string(name));
  }
  return value;
}

void SqlStore::ReserveAhead(std::vector<std::string>& names) {
  for (const std::string& name : names) {
    // Reserved after the current block was, so every value of it is higher. A failure leaves no
    // spare: the caller that runs out reserves itself and meets the failure.
    auto last = ReserveSequence(name, kMaxSequenceBlock);
    std::lock_guard lock(sequences_mu_);
    SequenceBlock& block = sequences_[name];
    block.reserving = false;
    if (last.ok()) {
      block.spare_next = *last - kMaxSequenceBlock + 1;
      block.spare_end = *last + 1;
    }
  }
  sequences_cv_.notify_all();
}

// ---- Audit ----

Status SqlStore::AppendAudit(const AuditRecord& record) {
  PendingWrite write;
  write.audit = &record;
  write.audit_at_ms = AuditTime(record, clock_.NowMillis());
  GroupCommit(write);
  return write.status;
}

Result<std::vector<AuditRecord>> SqlStore::ListAudit(int limit) {
  SqlParams params;
  std::string sql =
      "SELECT at_ms, user_name, source, action, target, detail FROM audit_log ORDER BY id DESC";
  if (limit > 0) sql += " LIMIT " + Param(params, int64_t{limit});
  return Run(Mode::kRead, [&](SqlConnection& db) -> Result<std::vector<AuditRecord>> {
    ASSIGN_OR_RETURN(auto rows, db.Query(sql, params));
    std::vector<AuditRecord> records;
    records.reserve(rows.size());
    for (const SqlRow& row : rows) {
      records.push_back(
          AuditRecord{row.Int(0), row.Text(1), row.Text(2), row.Text(3), row.Text(4), row.Text(5)});
    }
    return records;
  });
}

// ---- Leases ----

Result<bool> SqlStore::TryAcquireLease(std::string_view name, std::string_view holder,
                                       std::optional<int64_t> now_ms, int64_t ttl_ms) {
  RETURN_IF_ERROR(RequireNonEmpty(name, "lease name"));
  RETURN_IF_ERROR(RequireNonEmpty(holder, "lease holder"));
  if (ttl_ms <= 0) return InvalidArgumentError("lease ttl must be positive");
  // Servers on one PostgreSQL may disagree about the time; the expiry is then reckoned on the
  // database server's clock, so a server whose clock runs ahead cannot take a live lease.
  const bool database_clock = !now_ms && connection_->Backend() == "postgresql";
  if (!now_ms) now_ms = clock_.NowMillis();
  // Explicit: $3 is the new expiry, $4 now. Database clock: $3 is the ttl.
  const std::string now =
      database_clock ? "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)" : "$4";
  const std::string expiry = database_clock ? now + " + $3" : "$3";
  const std::string sql = "INSERT INTO leases (name, holder, expires_ms) VALUES ($1, $2, " +
                          expiry +
                          ") ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
                          "expires_ms = excluded.expires_ms "
                          "WHERE leases.holder = excluded.holder OR leases.expires_ms <= " +
                          now + " RETURNING holder";
  SqlParams params = {std::string(name), std::string(holder)};
  if (database_clock) {
    params.push_back(ttl_ms);
  } else {
    params.push_back(*now_ms + ttl_ms);
    params.push_back(*now_ms);
  }
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Result<bool> {
    ASSIGN_OR_RETURN(auto rows, db.Query(sql, params));
    return !rows.empty();
  });
}

Status SqlStore::ReleaseLease(std::string_view name, std::string_view holder) {
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Status {
    return db
        .Query("DELETE FROM leases WHERE name = $1 AND holder = $2",
               {std::string(name), std::string(holder)})
        .status();
  });
}

}  // namespace gpupool::store
