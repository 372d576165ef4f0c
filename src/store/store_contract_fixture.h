#pragma once
// The contract every Store implementation must meet, run once per backend: SQLite (a file in a
// temporary directory) and PostgreSQL (a fresh schema per test in the database named by env
// GPUPOOL_TEST_PG_URL; skipped when unset — scripts/pg-test-server.sh starts one). This header
// holds the two backends, the typed fixture and the records the tests build; the tests are in
// store_contract_*_test.cc by what they cover. The fixture is in a named namespace so that every
// test file registers its tests under the same fixture class, as GoogleTest requires of one suite.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <latch>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "store/sql_connection.h"
#include "store/store.h"

#ifdef GPUPOOL_WITH_POSTGRES
#include <libpq-fe.h>
#endif

namespace gpupool::store::contract_test {

using nlohmann::ordered_json;
using ::testing::ElementsAre;

inline std::string RandomSuffix() {
  static std::mt19937_64 rng(std::random_device{}());
  static std::mutex mu;
  std::lock_guard lock(mu);
  return std::to_string(rng() % 1'000'000'000'000ULL);
}

// ---- Backends ----

class SqliteBackend {
 public:
  static std::string SkipReason() { return ""; }

  SqliteBackend() {
    dir_ = std::filesystem::temp_directory_path() / ("gpupool_store_test_" + RandomSuffix());
    std::filesystem::create_directories(dir_);
  }
  ~SqliteBackend() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string Url() const { return "sqlite:" + Path(); }
  // A bare SqlConnection to the same database (the driver surface under SqlStore).
  Result<std::unique_ptr<SqlConnection>> Connect() const {
    std::filesystem::create_directories(dir_ / "sub");
    return OpenSqliteConnection(Path());
  }

  // Holds the database's write lock on a connection of its own until destroyed, so writers
  // (BEGIN IMMEDIATE) wait meanwhile. Test-only plumbing.
  class InsertBlock {
   public:
    explicit InsertBlock(const std::string& path) {
      EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
      EXPECT_EQ(sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
    }
    ~InsertBlock() {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      sqlite3_close(db_);
    }

   private:
    sqlite3* db_ = nullptr;
  };
  std::unique_ptr<InsertBlock> BlockWorkflowInserts() const {
    return std::make_unique<InsertBlock>(Path());
  }

 private:
  std::string Path() const { return (dir_ / "sub" / "store.db").string(); }

  std::filesystem::path dir_;
};

#ifdef GPUPOOL_WITH_POSTGRES
// Runs one statement on a fresh libpq connection; test-only plumbing.
inline bool PgExec(const std::string& url, const std::string& sql, std::string* error) {
  PGconn* conn = PQconnectdb(url.c_str());
  bool ok = PQstatus(conn) == CONNECTION_OK;
  if (ok) {
    PQclear(PQexec(conn, "SET client_min_messages = warning"));
    PGresult* result = PQexec(conn, sql.c_str());
    ok = PQresultStatus(result) == PGRES_COMMAND_OK || PQresultStatus(result) == PGRES_TUPLES_OK;
    PQclear(result);
  }
  if (!ok && error != nullptr) *error = PQerrorMessage(conn);
  PQfinish(conn);
  return ok;
}
#endif

// Each test gets its own schema, so tests may run in parallel against one server.
class PostgresBackend {
 public:
  static std::string BaseUrl() {
    const char* url = std::getenv("GPUPOOL_TEST_PG_URL");
    return url != nullptr ? url : "";
  }
#ifdef GPUPOOL_WITH_POSTGRES
  static std::string SkipReason() {
    return BaseUrl().empty() ? "GPUPOOL_TEST_PG_URL is not set (see scripts/pg-test-server.sh)"
                             : "";
  }
#else
  static std::string SkipReason() { return "built without PostgreSQL"; }
#endif

  PostgresBackend() {
#ifdef GPUPOOL_WITH_POSTGRES
    if (!SkipReason().empty()) return;
    schema_ = "gpupool_test_" + RandomSuffix();
    std::string error;
    if (!PgExec(BaseUrl(), "CREATE SCHEMA " + schema_, &error)) {
      ADD_FAILURE() << "cannot create schema " << schema_ << ": " << error;
    }
#endif
  }
  ~PostgresBackend() {
#ifdef GPUPOOL_WITH_POSTGRES
    if (!schema_.empty()) PgExec(BaseUrl(), "DROP SCHEMA " + schema_ + " CASCADE", nullptr);
#endif
  }
  std::string Url() const {
    std::string base = BaseUrl();
    return base + (base.find('?') == std::string::npos ? "?" : "&") +
           "options=-c%20search_path%3D" + schema_;
  }
  Result<std::unique_ptr<SqlConnection>> Connect() const {
#ifdef GPUPOOL_WITH_POSTGRES
    return OpenPostgresConnection(Url());
#else
    return UnavailableError("built without PostgreSQL");
#endif
  }

  // Holds a lock on the workflows table (in a transaction of a connection of its own) until
  // destroyed, so inserts into it wait meanwhile. Test-only plumbing.
  class InsertBlock {
   public:
#ifdef GPUPOOL_WITH_POSTGRES
    explicit InsertBlock(const std::string& url) : conn_(PQconnectdb(url.c_str())) {
      EXPECT_EQ(PQstatus(conn_), CONNECTION_OK) << PQerrorMessage(conn_);
      PGresult* result = PQexec(conn_, "BEGIN; LOCK TABLE workflows IN SHARE ROW EXCLUSIVE MODE");
      EXPECT_EQ(PQresultStatus(result), PGRES_COMMAND_OK) << PQerrorMessage(conn_);
      PQclear(result);
    }
    ~InsertBlock() {
      PQclear(PQexec(conn_, "ROLLBACK"));
      PQfinish(conn_);
    }

   private:
    PGconn* conn_;
#else
    explicit InsertBlock(const std::string&) {}
#endif
  };
  std::unique_ptr<InsertBlock> BlockWorkflowInserts() const {
    return std::make_unique<InsertBlock>(Url());
  }

 private:
  std::string schema_;
};

template <typename Backend>
class StoreContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string reason = Backend::SkipReason(); !reason.empty()) GTEST_SKIP() << reason;
    store_ = Open();
  }

  std::unique_ptr<Store> Open() {
    auto store = OpenStore(backend_.Url(), StoreOptions{.clock = &clock_});
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  Store& store() { return *store_; }

  // Writes one config, expecting success; returns its new revision.
  int64_t Put(std::string_view kind, std::string_view name, ordered_json body,
              std::optional<int64_t> expected = std::nullopt) {
    ConfigWrite write{.op = ConfigWrite::Op::kPut,
                      .kind = std::string(kind),
                      .name = std::string(name),
                      .body = std::move(body),
                      .expected_revision = expected};
    auto result = store_->WriteConfigs({write}, actor_);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? result->at(0) : -1;
  }

  FakeClock clock_{1'700'000'000'000};
  Actor actor_{"alice", "cli"};
  Backend backend_;
  std::unique_ptr<Store> store_;
};

using Backends = ::testing::Types<SqliteBackend, PostgresBackend>;
class BackendNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, SqliteBackend> ? "Sqlite" : "Postgres";
  }
};
TYPED_TEST_SUITE(StoreContractTest, Backends, BackendNames);

inline std::vector<std::string> Names(const std::vector<ConfigRecord>& records) {
  std::vector<std::string> names;
  for (const auto& r : records) names.push_back(r.kind + "/" + r.name);
  return names;
}

inline std::vector<std::string> Revisions(const std::vector<RevisionRecord>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) {
    out.push_back(r.kind + "/" + r.name + "@" + std::to_string(r.revision) + ":" + r.action);
  }
  return out;
}

inline ordered_json NodeObject(const std::string& name, int gpus) {
  return ordered_json{{"apiVersion", "v1"},
                      {"kind", "Node"},
                      {"metadata", {{"name", name}}},
                      {"status", {{"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}};
}

inline std::vector<std::string> NodeNames(const std::vector<NodeRecord>& nodes) {
  std::vector<std::string> names;
  for (const auto& n : nodes) names.push_back(n.name);
  return names;
}

inline WorkflowRecord MakeWorkflow(const std::string& id, const std::string& pool,
                                   const std::string& user, const std::string& status,
                                   int64_t submitted_ms) {
  WorkflowRecord w;
  w.id = id;
  w.name = id.substr(0, id.find('-'));
  w.pool = pool;
  w.user = user;
  w.status = status;
  w.submitted_ms = submitted_ms;
  w.spec = ordered_json::parse(R"({"workflow": {"name": "x", "tasks": [{"name": "t0"}]}})");
  TaskRecord a;
  a.group = "g0";
  a.name = "train";
  a.status = "PENDING";
  a.pod = ordered_json::parse(R"({"kind": "Pod", "metadata": {"name": "train"}, "zz": 1})");
  TaskRecord b = a;
  b.name = "eval";
  b.retry = 1;
  w.tasks = {a, b};
  return w;
}

}  // namespace gpupool::store::contract_test
