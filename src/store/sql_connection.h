#pragma once
// The small SQL surface SqlStore needs from a database driver. SQL is written once, in the subset
// both SQLite and PostgreSQL accept, with positional parameters $1, $2, ... (the SQLite driver
// rewrites them to ?1, ?2, ...). Values travel as text (or NULL) and 64-bit integers.
//
// Thread contract: a connection is used by one thread at a time (SqlStore hands each connection to
// one transaction at a time).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"
#include "store/migrations.h"

namespace gpupool::store {

using SqlParam = std::variant<std::nullptr_t, int64_t, std::string>;
using SqlParams = std::vector<SqlParam>;

// One result row; columns in SELECT order, NULL as nullopt.
class SqlRow {
 public:
  explicit SqlRow(std::vector<std::optional<std::string>> columns) : columns_(std::move(columns)) {}

  bool IsNull(size_t i) const { return !columns_.at(i).has_value(); }
  // "" for NULL.
  const std::string& Text(size_t i) const;
  // 0 for NULL or text that is not an integer.
  int64_t Int(size_t i) const;

 private:
  std::vector<std::optional<std::string>> columns_;
};

// Why a statement failed, beyond its Status: whether running the whole transaction again may
// succeed (SQLite busy, PostgreSQL serialization failure or deadlock) and whether the connection
// was lost (the driver reconnects on the next Begin).
struct SqlFailure {
  bool transient = false;
  bool connection_lost = false;
};

class SqlConnection {
 public:
  virtual ~SqlConnection() = default;

  virtual std::string_view Backend() const = 0;  // "sqlite" | "postgresql"
  virtual const std::vector<Migration>& Migrations() const = 0;

  // Runs one statement and returns its rows (none for statements without RETURNING).
  virtual Result<std::vector<SqlRow>> Query(std::string_view sql, const SqlParams& params) = 0;
  // Runs one statement whose rows are not needed, inside a transaction. A driver may hold it back
  // and send it with the next Query or Commit, in one round trip (PostgreSQL's pipeline mode); its
  // failure is then that call's failure. SQLite runs it at once.
  virtual Status Defer(std::string_view sql, SqlParams params) = 0;
  // Runs a parameterless script of one or more statements (migrations).
  virtual Status Script(std::string_view sql) = 0;

  // Makes the connection usable for a statement outside a transaction: re-establishes a lost
  // connection and ends a transaction left open. Begin calls it too.
  virtual Status Ready() = 0;

  // Transactions. Begin(write=true) takes the write lock up front where the database has one
  // (SQLite BEGIN IMMEDIATE); Begin(write=false) gives a consistent read snapshot. Begin also
  // re-establishes a lost connection. PostgreSQL sends BEGIN with the transaction's first
  // statement (its snapshot is taken there anyway), so a failure to begin may surface there.
  virtual Status Begin(bool write) = 0;
  virtual Status Commit() = 0;
  virtual void Rollback() = 0;  // best effort; never fails

  // Serialises schema migration among processes sharing the database, inside a write
  // transaction (PostgreSQL advisory lock; a no-op for SQLite, whose write lock suffices).
  virtual Status LockForMigration() = 0;

  // Classification of the last failure of Query, Script, Begin or Commit.
  virtual SqlFailure LastFailure() const = 0;
};

// Both return kUnavailable when the database cannot be opened or reached.
Result<std::unique_ptr<SqlConnection>> OpenSqliteConnection(const std::string& path);
Result<std::unique_ptr<SqlConnection>> OpenPostgresConnection(const std::string& url);

}  // namespace gpupool::store
