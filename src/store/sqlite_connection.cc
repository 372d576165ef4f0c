// SqlConnection over one sqlite3 handle: WAL journal, busy timeout, foreign keys, cached prepared
// statements, BEGIN IMMEDIATE for writes.

#include <sqlite3.h>

#include <string>
#include <unordered_map>

#include "common/strings.h"
#include "store/sql_connection.h"

namespace gpupool::store {
namespace {

constexpr int kBusyTimeoutMs = 10'000;

// "$1" -> "?1", leaving quoted text alone.
std::string ToSqliteParams(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  char quote = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    char c = sql[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '$' && i + 1 < sql.size() && sql[i + 1] >= '0' && sql[i + 1] <= '9') {
      c = '?';
    }
    out.push_back(c);
  }
  return out;
}

class SqliteConnection final : public SqlConnection {
 public:
  explicit SqliteConnection(sqlite3* db) : db_(db) {}
  ~SqliteConnection() override {
    for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
    sqlite3_close_v2(db_);
  }
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  std::string_view Backend() const override { return "sqlite"; }
  const std::vector<Migration>& Migrations() const override { return SqliteMigrations(); }

  Result<std::vector<SqlRow>> Query(std::string_view sql, const SqlParams& params) override {
    ASSIGN_OR_RETURN(sqlite3_stmt * stmt, Prepare(sql));
    struct ResetOnExit {
      sqlite3_stmt* stmt;
      ~ResetOnExit() {
        sqlite3_reset(stmt);
        sqlite3_clear_bindings(stmt);
      }
    } reset{stmt};
    for (size_t i = 0; i < params.size(); ++i) {
      // PostgreSQL refuses text that is not UTF-8 (a data exception, kInvalidArgument); so does
      // this driver, so that neither store holds bytes that JSON replies cannot carry.
      if (const auto* text = std::get_if<std::string>(&params[i]); text && !IsValidUtf8(*text)) {
        failure_ = {};
        return InvalidArgumentError("sqlite: parameter $" + std::to_string(i + 1) +
                                    " is not valid UTF-8 text");
      }
      int index = static_cast<int>(i) + 1;
      int rc = std::visit(
          [&](const auto& v) -> int {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::nullptr_t>) {
              return sqlite3_bind_null(stmt, index);
            } else if constexpr (std::is_same_v<T, int64_t>) {
              return sqlite3_bind_int64(stmt, index, v);
            } else {
              return sqlite3_bind_text(stmt, index, v.data(), static_cast<int>(v.size()),
                                       SQLITE_TRANSIENT);
            }
          },
          params[i]);
      if (rc != SQLITE_OK) return Fail(rc, "bind");
    }
    std::vector<SqlRow> rows;
    for (;;) {
      int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return Fail(rc, sql);
      int n = sqlite3_column_count(stmt);
      std::vector<std::optional<std::string>> columns;
      columns.reserve(n);
      for (int c = 0; c < n; ++c) {
        if (sqlite3_column_type(stmt, c) == SQLITE_NULL) {
          columns.emplace_back(std::nullopt);
        } else {
          const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
          columns.emplace_back(std::string(text, sqlite3_column_bytes(stmt, c)));
        }
      }
      rows.emplace_back(std::move(columns));
    }
    failure_ = {};
    return rows;
  }

  Status Defer(std::string_view sql, SqlParams params) override {
    return Query(sql, params).status();
  }

  Status Script(std::string_view sql) override {
    std::string text(sql);
    char* error = nullptr;
    int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
    sqlite3_free(error);
    if (rc != SQLITE_OK) return Fail(rc, "script");
    failure_ = {};
    return OkStatus();
  }

  Status Ready() override {
    Rollback();
    return OkStatus();
  }
  // BEGIN and COMMIT run as cached prepared statements (sqlite3_exec would parse them each time).
  Status Begin(bool write) override {
    Rollback();
    return Query(write ? "BEGIN IMMEDIATE" : "BEGIN", {}).status();
  }
  Status Commit() override { return Query("COMMIT", {}).status(); }
  void Rollback() override {
    if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Status LockForMigration() override { return OkStatus(); }
  SqlFailure LastFailure() const override { return failure_; }

 private:
  Result<sqlite3_stmt*> Prepare(std::string_view sql) {
    std::string key(sql);
    if (auto it = statements_.find(key); it != statements_.end()) return it->second;
    std::string text = ToSqliteParams(sql);
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, text.c_str(), static_cast<int>(text.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return Fail(rc, sql);
    statements_.emplace(std::move(key), stmt);
    return stmt;
  }

  Status Fail(int rc, std::string_view what) {
    int primary = rc & 0xff;
    failure_ = {};
    // A plain SQLITE_BUSY comes after the busy handler waited kBusyTimeoutMs: rerunning will not
    // help. The extended busy codes are returned at once and clear up on a rerun.
    failure_.transient =
        rc == SQLITE_BUSY_SNAPSHOT || rc == SQLITE_BUSY_RECOVERY || primary == SQLITE_LOCKED;
    std::string message = "sqlite: " + std::string(sqlite3_errmsg(db_));
    if (what.size() < 200) message += " (in: " + std::string(what) + ")";
    switch (primary) {
      case SQLITE_BUSY:
      case SQLITE_LOCKED:
      case SQLITE_CANTOPEN:
      case SQLITE_NOTADB:
      case SQLITE_READONLY:
        return UnavailableError(std::move(message));
      case SQLITE_CONSTRAINT:
        if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
          return AlreadyExistsError(std::move(message));
        }
        return InternalError(std::move(message));
      default:
        return InternalError(std::move(message));
    }
  }

  sqlite3* const db_;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
  SqlFailure failure_;
};

}  // namespace

Result<std::unique_ptr<SqlConnection>> OpenSqliteConnection(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return UnavailableError("sqlite: cannot open \"" + path + "\": " + message);
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  auto connection = std::make_unique<SqliteConnection>(db);
  // WAL lets readers run beside one writer. synchronous=FULL syncs the WAL at every commit, so an
  // acknowledged write survives a power loss too (NORMAL survives only a crash of the process).
  // Group commit (SqlStore) makes that one sync per batch: no slower under load, measured.
  Status status = connection->Script(
      "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;");
  if (!status.ok()) {
    return UnavailableError("sqlite: cannot open \"" + path + "\": " + status.message());
  }
  return std::unique_ptr<SqlConnection>(std::move(connection));
}

}  // namespace gpupool::store
