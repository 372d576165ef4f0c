#include "store/sql_store.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "codec/json_writer.h"
#include "store/sql_store_internal.h"

namespace gpupool::store {

using nlohmann::ordered_json;

namespace internal {

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

std::string Param(SqlParams& params, SqlParam value) {
  params.push_back(std::move(value));
  return "$" + std::to_string(params.size());
}

void AppendRow(std::string& sql, SqlParams& params, std::vector<SqlParam> values, bool first,
               std::string_view tail) {
  sql += first ? "(" : ", (";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) sql += ", ";
    sql += Param(params, std::move(values[i]));
  }
  if (!tail.empty()) sql += ", " + std::string(tail);
  sql += ")";
}

Status Execute(SqlConnection& db, bool defer, std::string_view sql, SqlParams params) {
  if (defer) return db.Defer(sql, std::move(params));
  return db.Query(sql, params).status();
}

}  // namespace internal

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

}  // namespace gpupool::store
