// SqlConnection over one libpq connection: parameterised statements only (prepared once per
// session with PQprepare, run with PQexecPrepared, text format), READ COMMITTED write transactions
// (SqlStore's statements lock what they check), REPEATABLE READ READ ONLY snapshots for reads, and
// a reconnect in Begin after a lost connection.
//
// Round trips are what a transaction costs on a busy machine (each wakes the server process and
// then this thread), so BEGIN is held back and deferred statements (Defer) are queued: both go to
// the server in one pipeline (libpq's pipeline mode) with the next Query or COMMIT. A group commit
// of creates is then one or two round trips instead of six or more.

#include <libpq-fe.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

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

// The rows of a result, as text (NULL as nullopt).
std::vector<SqlRow> Rows(const PGresult* result) {
  std::vector<SqlRow> rows;
  int n_rows = PQntuples(result);
  int n_columns = PQnfields(result);
  rows.reserve(n_rows);
  for (int r = 0; r < n_rows; ++r) {
    std::vector<std::optional<std::string>> columns;
    columns.reserve(n_columns);
    for (int c = 0; c < n_columns; ++c) {
      if (PQgetisnull(result, r, c)) {
        columns.emplace_back(std::nullopt);
      } else {
        columns.emplace_back(std::string(PQgetvalue(result, r, c), PQgetlength(result, r, c)));
      }
    }
    rows.emplace_back(std::move(columns));
  }
  return rows;
}

class PostgresConnection final : public SqlConnection {
 public:
  explicit PostgresConnection(PGconn* conn) : conn_(conn) {}
  ~PostgresConnection() override { PQfinish(conn_); }
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  std::string_view Backend() const override { return "postgresql"; }
  const std::vector<Migration>& Migrations() const override { return PostgresMigrations(); }

  Result<std::vector<SqlRow>> Query(std::string_view sql, const SqlParams& params) override {
    ASSIGN_OR_RETURN(const std::string* name, Prepare(sql, static_cast<int>(params.size())));
    PgResult result;
    if (HasPending()) {
      ASSIGN_OR_RETURN(result, SendPending(Step{sql, name, &params}));
    } else {
      ParamValues values(params);
      result.reset(PQexecPrepared(conn_, name->c_str(), values.Count(), values.Data(), nullptr,
                                  nullptr, /*resultFormat=*/0));
      ExecStatusType status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
      if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) return Fail(result.get(), sql);
    }
    failure_ = {};
    return Rows(result.get());
  }

  Status Defer(std::string_view sql, SqlParams params) override {
    ASSIGN_OR_RETURN(const std::string* name, Prepare(sql, static_cast<int>(params.size())));
    deferred_.push_back(Deferred{std::string(sql), name, std::move(params)});
    return OkStatus();
  }

  Status Script(std::string_view sql) override {
    if (HasPending()) RETURN_IF_ERROR(SendPending(std::nullopt).status());
    std::string text(sql);
    PgResult result(PQexec(conn_, text.c_str()));
    ExecStatusType status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) return Fail(result.get(), sql);
    failure_ = {};
    return OkStatus();
  }

  Status Ready() override {
    pending_begin_ = nullptr;
    deferred_.clear();
    // A pipeline left open by a failure mid-way cannot be resumed: start a new session.
    if (PQstatus(conn_) != CONNECTION_OK || PQpipelineStatus(conn_) != PQ_PIPELINE_OFF) {
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
    pending_begin_ = write ? "BEGIN ISOLATION LEVEL READ COMMITTED"
                           : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
    return OkStatus();
  }

  Status Commit() override {
    if (pending_begin_ != nullptr && deferred_.empty()) {
      pending_begin_ = nullptr;  // the transaction ran no statement: nothing to commit
      failure_ = {};
      return OkStatus();
    }
    if (!HasPending()) return Script("COMMIT");
    return SendPending(Step{"COMMIT", nullptr, nullptr}).status();
  }

  void Rollback() override {
    pending_begin_ = nullptr;
    deferred_.clear();
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
  // libpq's view of SqlParams: text (integers printed in decimal), NULL as a null pointer.
  class ParamValues {
   public:
    explicit ParamValues(const SqlParams& params)
        : numbers_(params.size()), values_(params.size(), nullptr) {
      for (size_t i = 0; i < params.size(); ++i) {
        if (const auto* text = std::get_if<std::string>(&params[i])) {
          values_[i] = text->c_str();
        } else if (const auto* number = std::get_if<int64_t>(&params[i])) {
          numbers_[i] = std::to_string(*number);
          values_[i] = numbers_[i].c_str();
        }
      }
    }
    int Count() const { return static_cast<int>(values_.size()); }
    const char* const* Data() const { return values_.data(); }

   private:
    std::vector<std::string> numbers_;
    std::vector<const char*> values_;
  };

  // One statement of a pipeline: a prepared statement with its parameters, or (name == nullptr)
  // parameterless SQL such as BEGIN or COMMIT.
  struct Step {
    std::string_view sql;
    const std::string* name;
    const SqlParams* params;
  };
  struct Deferred {
    std::string sql;
    const std::string* name;
    SqlParams params;
  };

  bool HasPending() const { return pending_begin_ != nullptr || !deferred_.empty(); }

  // Sends the held-back BEGIN, the deferred statements and then `last` in one pipeline, and
  // returns the result of the last statement sent. A failure is the first statement's that failed
  // (those after it are skipped by the server); the transaction is then aborted.
  Result<PgResult> SendPending(std::optional<Step> last) {
    std::vector<Step> steps;
    steps.reserve(deferred_.size() + 2);
    if (pending_begin_ != nullptr) steps.push_back(Step{pending_begin_, nullptr, nullptr});
    for (const Deferred& d : deferred_) steps.push_back(Step{d.sql, d.name, &d.params});
    if (last) steps.push_back(*last);
    auto result = RunPipeline(steps);
    pending_begin_ = nullptr;
    deferred_.clear();
    return result;
  }

  Result<PgResult> RunPipeline(const std::vector<Step>& steps) {
    if (PQenterPipelineMode(conn_) != 1) return Fail(nullptr, "pipeline mode");
    for (const Step& step : steps) {
      if (!Send(step)) return Broken(step.sql);
    }
    if (PQpipelineSync(conn_) != 1) return Broken("pipeline sync");
    // Results come in order, each statement's followed by a null; then the sync point's.
    Status failed;
    PgResult last;
    for (const Step& step : steps) {
      PgResult result(PQgetResult(conn_));
      if (result == nullptr) return Broken(step.sql);
      ExecStatusType status = PQresultStatus(result.get());
      if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) {
        last = std::move(result);
      } else if (status != PGRES_PIPELINE_ABORTED && failed.ok()) {
        failed = Fail(result.get(), step.sql);
      }
      PgResult end(PQgetResult(conn_));
    }
    PgResult sync(PQgetResult(conn_));
    if (sync == nullptr || PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC ||
        PQexitPipelineMode(conn_) != 1) {
      return Broken("pipeline sync");
    }
    if (!failed.ok()) return failed;
    return last;
  }

  bool Send(const Step& step) {
    if (step.name == nullptr) {
      std::string text(step.sql);
      return PQsendQueryParams(conn_, text.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0) == 1;
    }
    ParamValues values(*step.params);
    return PQsendQueryPrepared(conn_, step.name->c_str(), values.Count(), values.Data(), nullptr,
                               nullptr, /*resultFormat=*/0) == 1;
  }

  // The session is in an unknown state (a pipeline broken off): Ready reconnects, and the outcome
  // of a COMMIT sent is unknown, as when the connection is lost.
  Status Broken(std::string_view what) {
    failure_ = {.transient = false, .connection_lost = true};
    return UnavailableError("postgresql: " + ErrorMessage() + " (in: " + std::string(what) + ")");
  }

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
  const char* pending_begin_ = nullptr;  // the BEGIN of the open transaction, not yet sent
  std::vector<Deferred> deferred_;       // statements held back by Defer, not yet sent
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
