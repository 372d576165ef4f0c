// SqlConnection over one libpq connection: parameterised statements only (prepared once per
// session with PQprepare, run with PQexecPrepared, text format), READ COMMITTED write transactions
// (SqlStore's statements lock what they check), REPEATABLE READ READ ONLY snapshots for reads, and
// a reconnect in Begin after a lost connection.

#include <libpq-fe.h>

#include <string>
#include <unordered_map>

#include "store/sql_connection.h"

namespace gpupool::store {
namespace {

// pg_advisory_xact_lock key that serialises migrations ("gpupool" in ASCII).
constexpr std::string_view kMigrationLockSql = "SELECT pg_advisory_xact_lock(103112112111111108)";

struct ResultDeleter {
  void operator()(PGresult* result) const { PQclear(result); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

void IgnoreNotice(void*, const char*) {}

class PostgresConnection final : public SqlConnection {
 public:
  explicit PostgresConnection(PGconn* conn) : conn_(conn) {}
  ~PostgresConnection() override { PQfinish(conn_); }
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  std::string_view Backend() const override { return "postgresql"; }
  const std::vector<Migration>& Migrations() const override { return PostgresMigrations(); }

  Result<std::vector<SqlRow>> Query(std::string_view sql, const SqlParams& params) override {
    std::vector<std::string> texts(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    for (size_t i = 0; i < params.size(); ++i) {
      if (const auto* text = std::get_if<std::string>(&params[i])) {
        values[i] = text->c_str();
      } else if (const auto* number = std::get_if<int64_t>(&params[i])) {
        texts[i] = std::to_string(*number);
        values[i] = texts[i].c_str();
      }
    }
    ASSIGN_OR_RETURN(const std::string* name, Prepare(sql, static_cast<int>(params.size())));
    PgResult result(PQexecPrepared(conn_, name->c_str(), static_cast<int>(params.size()),
                                   values.data(), nullptr, nullptr, /*resultFormat=*/0));
    ExecStatusType status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) return Fail(result.get(), sql);
    failure_ = {};
    std::vector<SqlRow> rows;
    int n_rows = PQntuples(result.get());
    int n_columns = PQnfields(result.get());
    rows.reserve(n_rows);
    for (int r = 0; r < n_rows; ++r) {
      std::vector<std::optional<std::string>> columns;
      columns.reserve(n_columns);
      for (int c = 0; c < n_columns; ++c) {
        if (PQgetisnull(result.get(), r, c)) {
          columns.emplace_back(std::nullopt);
        } else {
          columns.emplace_back(
              std::string(PQgetvalue(result.get(), r, c), PQgetlength(result.get(), r, c)));
        }
      }
      rows.emplace_back(std::move(columns));
    }
    return rows;
  }

  Status Script(std::string_view sql) override {
    std::string text(sql);
    PgResult result(PQexec(conn_, text.c_str()));
    ExecStatusType status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) return Fail(result.get(), sql);
    failure_ = {};
    return OkStatus();
  }

  Status Ready() override {
    if (PQstatus(conn_) != CONNECTION_OK) {
      statements_.clear();  // prepared statements die with the session
      PQreset(conn_);
      if (PQstatus(conn_) != CONNECTION_OK) {
        failure_ = {.transient = false, .connection_lost = true};
        return UnavailableError("postgresql: cannot reconnect: " + ErrorMessage());
      }
      Configure();
    }
    if (PQtransactionStatus(conn_) != PQTRANS_IDLE) Rollback();
    failure_ = {};
    return OkStatus();
  }

  Status Begin(bool write) override {
    RETURN_IF_ERROR(Ready());
    return Script(write ? "BEGIN ISOLATION LEVEL READ COMMITTED"
                        : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  }

  Status Commit() override { return Script("COMMIT"); }

  void Rollback() override {
    if (PQstatus(conn_) != CONNECTION_OK) return;
    if (PQtransactionStatus(conn_) == PQTRANS_IDLE) return;
    PgResult result(PQexec(conn_, "ROLLBACK"));
  }

  Status LockForMigration() override { return Query(kMigrationLockSql, {}).status(); }
  SqlFailure LastFailure() const override { return failure_; }

  // Per-session settings, also after a reconnect.
  void Configure() {
    PQsetNoticeProcessor(conn_, IgnoreNotice, nullptr);
    PgResult result(PQexec(conn_, "SET client_min_messages = warning"));
  }

 private:
  // Server-side prepared statement for `sql` (parsed and planned once per session).
  Result<const std::string*> Prepare(std::string_view sql, int n_params) {
    std::string key(sql);
    if (auto it = statements_.find(key); it != statements_.end()) return &it->second;
    std::string name = "gpupool_" + std::to_string(statements_.size() + 1);
    PgResult result(PQprepare(conn_, name.c_str(), key.c_str(), n_params, nullptr));
    if (!result || PQresultStatus(result.get()) != PGRES_COMMAND_OK) {
      return Fail(result.get(), sql);
    }
    return &statements_.emplace(std::move(key), std::move(name)).first->second;
  }

  std::string ErrorMessage() const {
    std::string message = PQerrorMessage(conn_);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.pop_back();
    }
    return message;
  }

  Status Fail(const PGresult* result, std::string_view what) {
    std::string state;
    if (result != nullptr) {
      const char* field = PQresultErrorField(result, PG_DIAG_SQLSTATE);
      if (field != nullptr) state = field;
    }
    failure_ = {};
    std::string message = "postgresql: " + ErrorMessage();
    if (!state.empty()) message += " [" + state + "]";
    if (what.size() < 200) message += " (in: " + std::string(what) + ")";
    if (PQstatus(conn_) != CONNECTION_OK || state.starts_with("08") || state == "57P01" ||
        state == "57P02" || state == "57P03") {
      failure_.connection_lost = true;
      return UnavailableError(std::move(message));
    }
    if (state == "40001" || state == "40P01") {
      failure_.transient = true;
      return AbortedError(std::move(message));
    }
    if (state == "23505") return AlreadyExistsError(std::move(message));
    // Class 22, data exception (invalid UTF-8, a value out of range): the value is at fault, not
    // the server; callers validate first, this keeps a value they missed from becoming a 500.
    if (state.starts_with("22")) return InvalidArgumentError(std::move(message));
    return InternalError(std::move(message));
  }

  PGconn* const conn_;
  std::unordered_map<std::string, std::string> statements_;  // SQL -> prepared statement name
  SqlFailure failure_;
};

}  // namespace

Result<std::unique_ptr<SqlConnection>> OpenPostgresConnection(const std::string& url) {
  PGconn* conn = PQconnectdb(url.c_str());
  if (conn == nullptr) return UnavailableError("postgresql: out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn);
    PQfinish(conn);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.pop_back();
    }
    return UnavailableError("postgresql: cannot connect: " + message);
  }
  auto connection = std::make_unique<PostgresConnection>(conn);
  connection->Configure();
  return std::unique_ptr<SqlConnection>(std::move(connection));
}

}  // namespace gpupool::store
