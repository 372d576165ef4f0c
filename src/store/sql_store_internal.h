#pragma once
// What the files of SqlStore (sql_store*.cc) share: the encodings of stored JSON, the multi-row
// INSERTs of tasks and audit records, the node upsert, the lease fence, and the definitions of
// the transaction runner's templates. Not for use outside them.

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "store/sql_store.h"

namespace gpupool::store::internal {

// Attempts of a transaction that fails transiently (SqlStore::RunOn).
inline constexpr int kMaxAttempts = 8;

// The stored text of a body. A string that is not UTF-8 (which the parsers do not produce) is
// refused, not stored altered; PostgreSQL would refuse the text anyway.
Result<std::string> DumpJson(const nlohmann::ordered_json& value, std::string_view what);

Result<nlohmann::ordered_json> ParseStoredJson(const SqlRow& row, size_t column,
                                               std::string_view what);

Status RequireNonEmpty(std::string_view value, std::string_view field);

// Appends "$<n>" for a new parameter.
std::string Param(SqlParams& params, SqlParam value);

// One row of a multi-row INSERT: "($1, $2, ...<tail>)", after ", " unless it is the first, with
// its values appended to `params`. `tail` holds literal columns ("1" for a new version).
void AppendRow(std::string& sql, SqlParams& params, std::vector<SqlParam> values, bool first,
               std::string_view tail = "");

// Runs a statement at once or, when `defer`, with the connection's next round trip (Defer).
Status Execute(SqlConnection& db, bool defer, std::string_view sql, SqlParams params);

// One row of the tasks table: the task at `position` of workflow `workflow_id`.
struct TaskRow {
  std::string_view workflow_id;
  int64_t position;
  const TaskRecord* task;
  const std::string* pod = nullptr;  // task->pod encoded, when it already is
};

// Inserts `rows` (of one workflow or several) in multi-row INSERTs, which save round trips.
Status InsertTaskRows(SqlConnection& db, const std::vector<TaskRow>& rows, bool defer);

// One row of the audit log: `record`, stamped `at_ms`.
struct AuditRow {
  const AuditRecord* record;
  int64_t at_ms;
};

// When `record` happened: its own time, else `now`.
inline int64_t AuditTime(const AuditRecord& record, int64_t now) {
  return record.at_ms != 0 ? record.at_ms : now;
}

// Appends `rows` in multi-row INSERTs, deferred or at once.
Status InsertAudits(SqlConnection& db, const std::vector<AuditRow>& rows, bool defer);

// Upserts `nodes` (their objects encoded in `objects`) and counts a node change.
Status UpsertNodesIn(SqlConnection& db, const std::vector<NodeRecord>& nodes,
                     const std::vector<std::string>& objects, bool replace_all);

// Checks the names and encodes the objects of `nodes`, outside any transaction.
Result<std::vector<std::string>> EncodeNodes(const std::vector<NodeRecord>& nodes);

// Fails (kFailedPrecondition) unless `fence.holder` holds lease `fence.lease`; otherwise keeps the
// lease row locked until the transaction ends, so a new leader's TryAcquireLease waits for it.
// A no-op UPDATE rather than a SELECT takes that lock (PostgreSQL); SQLite's write transaction
// already excludes every other writer.
Status HoldFence(SqlConnection& db, const Store::LeaseFence& fence);

}  // namespace gpupool::store::internal

namespace gpupool::store {

// The transaction runner (declared in sql_store.h), here so that every file of SqlStore can run
// its bodies.

template <typename Body>
auto SqlStore::RunOn(SqlConnection& db, Mode mode, Body& body) -> decltype(body(db)) {
  Status last;
  for (int attempt = 1; attempt <= internal::kMaxAttempts; ++attempt) {
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

}  // namespace gpupool::store
