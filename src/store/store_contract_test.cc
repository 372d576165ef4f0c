// The contract every Store implementation must meet, run once per backend: SQLite (a file in a
// temporary directory) and PostgreSQL (a fresh schema per test in the database named by env
// GPUPOOL_TEST_PG_URL; skipped when unset — scripts/pg-test-server.sh starts one).

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

namespace gpupool::store {
namespace {

using nlohmann::ordered_json;
using ::testing::ElementsAre;

std::string RandomSuffix() {
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
bool PgExec(const std::string& url, const std::string& sql, std::string* error) {
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

std::vector<std::string> Names(const std::vector<ConfigRecord>& records) {
  std::vector<std::string> names;
  for (const auto& r : records) names.push_back(r.kind + "/" + r.name);
  return names;
}

std::vector<std::string> Revisions(const std::vector<RevisionRecord>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) {
    out.push_back(r.kind + "/" + r.name + "@" + std::to_string(r.revision) + ":" + r.action);
  }
  return out;
}

// ---- Configs ----

TYPED_TEST(StoreContractTest, PutGetListKeepsKeyOrderAndSorts) {
  ordered_json body = ordered_json::parse(R"({"zeta": 1, "alpha": {"y": [3, 1], "b": null}})");
  EXPECT_EQ(this->Put("POOL", "b_pool", body), 1);
  EXPECT_EQ(this->Put("POOL", "a_pool", {{"x", 1}}), 1);
  EXPECT_EQ(this->Put("POD_TEMPLATE", "Zed", {{"spec", {}}}), 1);

  auto got = this->store().GetConfig("POOL", "b_pool");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->body.dump(), body.dump());  // same text: key order survived
  EXPECT_EQ(got->revision, 1);
  EXPECT_EQ(got->updated_by, "alice");
  EXPECT_EQ(got->updated_at_ms, 1'700'000'000'000);

  auto all = this->store().ListConfigs(std::nullopt);
  ASSERT_TRUE(all.ok());
  EXPECT_THAT(Names(*all), ElementsAre("POD_TEMPLATE/Zed", "POOL/a_pool", "POOL/b_pool"));
  auto pools = this->store().ListConfigs("POOL");
  ASSERT_TRUE(pools.ok());
  EXPECT_THAT(Names(*pools), ElementsAre("POOL/a_pool", "POOL/b_pool"));

  auto missing = this->store().GetConfig("POOL", "nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TYPED_TEST(StoreContractTest, RevisionsCountPerConfig) {
  EXPECT_EQ(this->Put("POOL", "a", {{"v", 1}}), 1);
  EXPECT_EQ(this->Put("POOL", "a", {{"v", 2}}), 2);
  EXPECT_EQ(this->Put("POOL", "b", {{"v", 1}}), 1);
  EXPECT_EQ(this->Put("ROLE", "a", {{"v", 1}}), 1);  // same name, other kind
  EXPECT_EQ(this->Put("POOL", "a", {{"v", 3}}), 3);
  auto got = this->store().GetConfig("POOL", "a");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->revision, 3);
  EXPECT_EQ(got->body["v"], 3);
}

TYPED_TEST(StoreContractTest, BatchIsAtomic) {
  this->Put("POOL", "existing", {{"v", 1}});
  struct Case {
    std::string name;
    ConfigWrite bad;
    StatusCode code;
  };
  const std::vector<Case> cases = {
      {"stale expected revision",
       {.op = ConfigWrite::Op::kPut,
        .kind = "POOL",
        .name = "existing",
        .body = {{"v", 9}},
        .expected_revision = 7},
       StatusCode::kAborted},
      {"must not exist but does",
       {.op = ConfigWrite::Op::kPut,
        .kind = "POOL",
        .name = "existing",
        .body = {{"v", 9}},
        .expected_revision = 0},
       StatusCode::kAborted},
      {"delete of a missing config",
       {.op = ConfigWrite::Op::kDelete, .kind = "POOL", .name = "ghost"},
       StatusCode::kNotFound},
      {"empty name",
       {.op = ConfigWrite::Op::kPut, .kind = "POOL", .body = {{"v", 1}}},
       StatusCode::kInvalidArgument},
      {"null body",
       {.op = ConfigWrite::Op::kPut, .kind = "POOL", .name = "n"},
       StatusCode::kInvalidArgument},
      {"failed check",
       {.op = ConfigWrite::Op::kCheck, .kind = "POD_TEMPLATE", .name = "t", .expected_revision = 1},
       StatusCode::kAborted},
      {"check without expected revision",
       {.op = ConfigWrite::Op::kCheck, .kind = "POOL", .name = "existing"},
       StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<ConfigWrite> batch = {
        {.op = ConfigWrite::Op::kPut, .kind = "POOL", .name = "new1", .body = {{"v", 1}}},
        {.op = ConfigWrite::Op::kPut, .kind = "POOL", .name = "existing", .body = {{"v", 2}}},
        c.bad,
        {.op = ConfigWrite::Op::kPut, .kind = "POOL", .name = "new2", .body = {{"v", 1}}},
    };
    auto result = this->store().WriteConfigs(batch, this->actor_);
    EXPECT_EQ(result.status().code(), c.code) << result.status().ToString();

    auto all = this->store().ListConfigs(std::nullopt);
    ASSERT_TRUE(all.ok());
    EXPECT_THAT(Names(*all), ElementsAre("POOL/existing"));
    auto existing = this->store().GetConfig("POOL", "existing");
    ASSERT_TRUE(existing.ok());
    EXPECT_EQ(existing->revision, 1);
    EXPECT_EQ(existing->body["v"], 1);
    auto history = this->store().History(std::nullopt, std::nullopt, 0);
    ASSERT_TRUE(history.ok());
    EXPECT_THAT(Revisions(*history), ElementsAre("POOL/existing@1:update"));
  }
  // Failed batches consumed no revision numbers.
  EXPECT_EQ(this->Put("POOL", "existing", {{"v", 2}}), 2);
  EXPECT_EQ(this->Put("POOL", "new1", {{"v", 1}}), 1);
}

TYPED_TEST(StoreContractTest, BatchAppliesInOrderAndReturnsEachRevision) {
  this->Put("POOL", "a", {{"v", 1}});
  std::vector<ConfigWrite> batch = {
      {.op = ConfigWrite::Op::kPut,
       .kind = "POOL",
       .name = "a",
       .body = {{"v", 2}},
       .expected_revision = 1},
      {.op = ConfigWrite::Op::kPut,
       .kind = "POOL",
       .name = "a",
       .body = {{"v", 3}},
       .expected_revision = 2},  // sees the write before it
      {.op = ConfigWrite::Op::kPut,
       .kind = "ROLE",
       .name = "r",
       .body = {{"v", 1}},
       .expected_revision = 0},
  };
  auto result = this->store().WriteConfigs(batch, this->actor_);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_THAT(*result, ElementsAre(2, 3, 1));
}

TYPED_TEST(StoreContractTest, CheckAssertsWithoutWriting) {
  this->Put("POD_TEMPLATE", "t", {{"v", 1}});
  this->Put("POD_TEMPLATE", "t", {{"v", 2}});
  std::vector<ConfigWrite> batch = {
      {.op = ConfigWrite::Op::kCheck, .kind = "POD_TEMPLATE", .name = "t", .expected_revision = 2},
      {.op = ConfigWrite::Op::kCheck,
       .kind = "POD_TEMPLATE",
       .name = "absent",
       .expected_revision = 0},
      {.op = ConfigWrite::Op::kPut, .kind = "POOL", .name = "p", .body = {{"uses", "t"}}},
  };
  auto result = this->store().WriteConfigs(batch, this->actor_);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_THAT(*result, ElementsAre(2, 0, 1));
  auto history = this->store().History(std::nullopt, std::nullopt, 0);
  ASSERT_TRUE(history.ok());
  EXPECT_THAT(Revisions(*history),
              ElementsAre("POOL/p@1:update", "POD_TEMPLATE/t@2:update", "POD_TEMPLATE/t@1:update"));
  EXPECT_EQ(this->store().GetConfig("POD_TEMPLATE", "absent").status().code(),
            StatusCode::kNotFound);

  // The template changed after the snapshot: the dependent write is refused.
  this->Put("POD_TEMPLATE", "t", {{"v", 3}});
  ConfigWrite again = batch[2];
  again.body = nlohmann::ordered_json{{"uses", "t"}, {"again", true}};
  const std::vector<ConfigWrite> stale = {batch[0], batch[1], again};
  EXPECT_EQ(this->store().WriteConfigs(stale, this->actor_).status().code(), StatusCode::kAborted);
  EXPECT_EQ(this->store().GetConfig("POOL", "p")->revision, 1);
}

TYPED_TEST(StoreContractTest, ConfigGenerationCountsCommittedChanges) {
  auto g0 = this->store().ConfigGeneration();
  ASSERT_TRUE(g0.ok()) << g0.status().ToString();
  auto other = this->Open();  // a second connection sees the same counter
  ASSERT_NE(other, nullptr);
  struct Case {
    std::string name;
    std::vector<ConfigWrite> batch;
    bool ok;
    int64_t delta;
  };
  const std::vector<Case> cases = {
      {"one put", {{.kind = "POOL", .name = "a", .body = {{"v", 1}}}}, true, 1},
      {"a batch of three counts once",
       {{.kind = "POOL", .name = "b", .body = {{"v", 1}}},
        {.kind = "POOL", .name = "c", .body = {{"v", 1}}},
        {.kind = "POOL", .name = "a", .body = {{"v", 2}}}},
       true,
       1},
      {"failed batch",
       {{.kind = "POOL", .name = "a", .body = {{"v", 3}}, .expected_revision = 1}},
       false,
       0},
      {"checks only",
       {{.op = ConfigWrite::Op::kCheck, .kind = "POOL", .name = "a", .expected_revision = 2}},
       true,
       0},
      {"delete", {{.op = ConfigWrite::Op::kDelete, .kind = "POOL", .name = "c"}}, true, 1},
  };
  int64_t expected = *g0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(this->store().WriteConfigs(c.batch, this->actor_).ok(), c.ok);
    expected += c.delta;
    EXPECT_EQ(*this->store().ConfigGeneration(), expected);
    EXPECT_EQ(*other->ConfigGeneration(), expected);
  }
}

TYPED_TEST(StoreContractTest, OptimisticLock) {
  struct Case {
    std::string name;
    std::optional<int64_t> expected;
    StatusCode code;
    int64_t revision_after;
  };
  // Applied in order against one config.
  const std::vector<Case> cases = {
      {"create with must-not-exist", 0, StatusCode::kOk, 1},
      {"create again with must-not-exist", 0, StatusCode::kAborted, 1},
      {"matching revision", 1, StatusCode::kOk, 2},
      {"stale revision", 1, StatusCode::kAborted, 2},
      {"future revision", 5, StatusCode::kAborted, 2},
      {"no lock: last writer wins", std::nullopt, StatusCode::kOk, 3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ConfigWrite write{.op = ConfigWrite::Op::kPut,
                      .kind = "POOL",
                      .name = "p",
                      .body = {{"case", c.name}},
                      .expected_revision = c.expected};
    auto result = this->store().WriteConfigs({write}, this->actor_);
    EXPECT_EQ(result.status().code(), c.code) << result.status().ToString();
    auto got = this->store().GetConfig("POOL", "p");
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->revision, c.revision_after);
  }
  ConfigWrite stale_delete{
      .op = ConfigWrite::Op::kDelete, .kind = "POOL", .name = "p", .expected_revision = 2};
  EXPECT_EQ(this->store().WriteConfigs({stale_delete}, this->actor_).status().code(),
            StatusCode::kAborted);
}

TYPED_TEST(StoreContractTest, HistoryNewestFirstWithFilters) {
  this->Put("POOL", "a", {{"v", 1}});
  this->clock_.Advance(1000);
  this->Put("ROLE", "r", {{"v", 1}});
  this->Put("POOL", "b", {{"v", 1}});
  this->Put("POOL", "a", {{"v", 2}});
  ConfigWrite rollback{.op = ConfigWrite::Op::kPut,
                       .kind = "POOL",
                       .name = "a",
                       .body = {{"v", 1}},
                       .action = "rollback",
                       .description = "back to revision 1"};
  ASSERT_TRUE(this->store().WriteConfigs({rollback}, Actor{"bob", "10.0.0.7"}).ok());

  auto all = this->store().History(std::nullopt, std::nullopt, 0);
  ASSERT_TRUE(all.ok());
  EXPECT_THAT(Revisions(*all),
              ElementsAre("POOL/a@3:rollback", "POOL/a@2:update", "POOL/b@1:update",
                          "ROLE/r@1:update", "POOL/a@1:update"));
  EXPECT_EQ(all->at(0).author, "bob");
  EXPECT_EQ(all->at(0).source, "10.0.0.7");
  EXPECT_EQ(all->at(0).description, "back to revision 1");
  EXPECT_EQ(all->at(0).body, ordered_json({{"v", 1}}));
  EXPECT_EQ(all->at(0).created_at_ms, 1'700'000'001'000);
  EXPECT_EQ(all->back().created_at_ms, 1'700'000'000'000);

  auto limited = this->store().History(std::nullopt, std::nullopt, 2);
  ASSERT_TRUE(limited.ok());
  EXPECT_THAT(Revisions(*limited), ElementsAre("POOL/a@3:rollback", "POOL/a@2:update"));
  auto pools = this->store().History("POOL", std::nullopt, 0);
  ASSERT_TRUE(pools.ok());
  EXPECT_EQ(pools->size(), 4u);
  auto one = this->store().History("POOL", "b", 0);
  ASSERT_TRUE(one.ok());
  EXPECT_THAT(Revisions(*one), ElementsAre("POOL/b@1:update"));

  auto second = this->store().GetRevision("POOL", "a", 2);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->body, ordered_json({{"v", 2}}));
  EXPECT_EQ(second->author, "alice");
  EXPECT_EQ(this->store().GetRevision("POOL", "a", 9).status().code(), StatusCode::kNotFound);
}

TYPED_TEST(StoreContractTest, DeleteKeepsHistoryAndRevisionsContinue) {
  this->Put("POD_TEMPLATE", "t", {{"v", 1}});
  this->Put("POD_TEMPLATE", "t", {{"v", 2}});
  ConfigWrite del{
      .op = ConfigWrite::Op::kDelete, .kind = "POD_TEMPLATE", .name = "t", .expected_revision = 2};
  auto deleted = this->store().WriteConfigs({del}, this->actor_);
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_THAT(*deleted, ElementsAre(3));
  EXPECT_EQ(this->store().GetConfig("POD_TEMPLATE", "t").status().code(), StatusCode::kNotFound);
  auto listed = this->store().ListConfigs(std::nullopt);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());

  auto history = this->store().History("POD_TEMPLATE", "t", 0);
  ASSERT_TRUE(history.ok());
  EXPECT_THAT(Revisions(*history), ElementsAre("POD_TEMPLATE/t@3:delete", "POD_TEMPLATE/t@2:update",
                                               "POD_TEMPLATE/t@1:update"));
  EXPECT_TRUE(history->at(0).body.is_null());
  auto first = this->store().GetRevision("POD_TEMPLATE", "t", 1);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->body, ordered_json({{"v", 1}}));

  // Re-create: "must not exist" holds again, and numbering continues.
  EXPECT_EQ(this->Put("POD_TEMPLATE", "t", {{"v", 4}}, 0), 4);
  EXPECT_EQ(this->store().WriteConfigs({del}, this->actor_).status().code(), StatusCode::kAborted);
}

// ---- Nodes ----

ordered_json NodeObject(const std::string& name, int gpus) {
  return ordered_json{{"apiVersion", "v1"},
                      {"kind", "Node"},
                      {"metadata", {{"name", name}}},
                      {"status", {{"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}};
}

std::vector<std::string> NodeNames(const std::vector<NodeRecord>& nodes) {
  std::vector<std::string> names;
  for (const auto& n : nodes) names.push_back(n.name);
  return names;
}

TYPED_TEST(StoreContractTest, NodesUpsertReplaceDelete) {
  Store& s = this->store();
  ASSERT_TRUE(
      s.UpsertNodes({{"n2", NodeObject("n2", 8)}, {"n1", NodeObject("n1", 8)}}, false).ok());
  ASSERT_TRUE(
      s.UpsertNodes({{"n3", NodeObject("n3", 4)}, {"n1", NodeObject("n1", 2)}}, false).ok());
  auto nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n1", "n2", "n3"));
  EXPECT_EQ(nodes->at(0).object, NodeObject("n1", 2));  // upsert replaced n1

  ASSERT_TRUE(s.UpsertNodes({{"n4", NodeObject("n4", 1)}, {"n2", NodeObject("n2", 1)}}, true).ok());
  nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n2", "n4"));
  EXPECT_EQ(nodes->at(0).object, NodeObject("n2", 1));

  ASSERT_TRUE(s.DeleteNodes({"n4", "never-existed"}).ok());
  nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n2"));

  // A bad node fails the whole call.
  EXPECT_EQ(s.UpsertNodes({{"n9", NodeObject("n9", 1)}, {"", NodeObject("", 1)}}, true).code(),
            StatusCode::kInvalidArgument);
  nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n2"));
}

TYPED_TEST(StoreContractTest, ConfigsNodesAndAuditCommitTogetherOrNotAtAll) {
  Store& s = this->store();
  ASSERT_TRUE(s.UpsertNodes({{"n1", NodeObject("n1", 8)}}, false).ok());
  const int64_t revision = this->Put("POOL", "p", ordered_json{{"backend", "b"}});
  auto before = s.GetGenerations();
  ASSERT_TRUE(before.ok());
  ConfigWrite put{.op = ConfigWrite::Op::kPut,
                  .kind = "POOL",
                  .name = "p",
                  .body = ordered_json{{"backend", "c"}}};
  Store::WriteAlso also{.nodes = {{"n2", NodeObject("n2", 4)}, {"n1", NodeObject("n1", 2)}},
                        .audit = {{.user = "alice", .action = "apply", .target = "p"},
                                  {.at_ms = 7, .user = "alice", .action = "node import"}}};
  struct Case {
    std::string name;
    std::optional<int64_t> expected;  // of the pool write
    Store::WriteAlso also;
    StatusCode code;
  };
  const std::vector<Case> cases = {
      // Each fails after or before the configs were checked: nothing of the call stays.
      {"a stale revision", revision + 1, also, StatusCode::kAborted},
      {"a node without a name", revision,
       Store::WriteAlso{.nodes = {{"n3", NodeObject("n3", 1)}, {"", NodeObject("", 1)}},
                        .audit = also.audit},
       StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    put.expected_revision = c.expected;
    auto failed = s.WriteConfigs({put}, this->actor_, c.also);
    EXPECT_EQ(failed.status().code(), c.code) << failed.status().ToString();
    auto config = s.GetConfig("POOL", "p");
    ASSERT_TRUE(config.ok());
    EXPECT_EQ(config->revision, revision);
    auto nodes = s.ListNodes();
    ASSERT_TRUE(nodes.ok());
    EXPECT_THAT(NodeNames(*nodes), ElementsAre("n1"));
    EXPECT_EQ(nodes->at(0).object, NodeObject("n1", 8));
    auto audit = s.ListAudit(0);
    ASSERT_TRUE(audit.ok());
    EXPECT_TRUE(audit->empty());
    auto generations = s.GetGenerations();
    ASSERT_TRUE(generations.ok());
    EXPECT_EQ(generations->configs, before->configs);
    EXPECT_EQ(generations->nodes, before->nodes);
  }

  put.expected_revision = revision;
  auto written = s.WriteConfigs({put}, this->actor_, also);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_THAT(*written, ElementsAre(revision + 1));
  auto nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n1", "n2"));
  EXPECT_EQ(nodes->at(0).object, NodeObject("n1", 2));
  auto audit = s.ListAudit(0);
  ASSERT_TRUE(audit.ok());
  ASSERT_EQ(audit->size(), 2u);
  std::set<std::pair<std::string, int64_t>> records;
  for (const AuditRecord& r : *audit) records.insert({r.action, r.at_ms});
  EXPECT_THAT(records, ::testing::UnorderedElementsAre(
                           std::pair<std::string, int64_t>{"apply", 1'700'000'000'000},
                           std::pair<std::string, int64_t>{"node import", 7}));
  auto generations = s.GetGenerations();
  ASSERT_TRUE(generations.ok());
  EXPECT_GT(generations->nodes, before->nodes);
  EXPECT_GT(generations->configs, before->configs);

  // Nodes alone (no config write), replacing all of them.
  ASSERT_TRUE(s.WriteConfigs({}, this->actor_,
                             Store::WriteAlso{.nodes = {{"n5", NodeObject("n5", 1)}},
                                              .replace_all_nodes = true})
                  .ok());
  nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n5"));
}

TYPED_TEST(StoreContractTest, ChangeNodesIfUnchangedIsACompareAndSet) {
  Store& s = this->store();
  ASSERT_TRUE(
      s.UpsertNodes({{"n1", NodeObject("n1", 8)}, {"n2", NodeObject("n2", 8)}}, false).ok());
  auto g0 = s.GetGenerations();
  ASSERT_TRUE(g0.ok());
  // As read: insert n3, change n1, delete n2, all in one transaction.
  ASSERT_TRUE(s.ChangeNodesIfUnchanged({{"n3", std::nullopt, NodeObject("n3", 1)},
                                        {"n1", NodeObject("n1", 8), NodeObject("n1", 4)},
                                        {"n2", NodeObject("n2", 8), std::nullopt}})
                  .ok());
  auto nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n1", "n3"));
  EXPECT_EQ(nodes->at(0).object, NodeObject("n1", 4));
  EXPECT_GT(s.GetGenerations()->nodes, g0->nodes);

  // Another process changed n1 since: nothing of the batch is written, not even the insert.
  ASSERT_TRUE(this->Open()->UpsertNodes({{"n1", NodeObject("n1", 2)}}, false).ok());
  Status stale = s.ChangeNodesIfUnchanged(
      {{"n5", std::nullopt, NodeObject("n5", 1)}, {"n1", NodeObject("n1", 4), std::nullopt}});
  EXPECT_EQ(stale.code(), StatusCode::kAborted) << stale.ToString();
  EXPECT_NE(stale.message().find("\"n1\""), std::string::npos) << stale.message();
  nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n1", "n3"));
  EXPECT_EQ(nodes->at(0).object, NodeObject("n1", 2));
  // An insert of a node that exists, and a change of one that is gone, are stale too.
  EXPECT_EQ(s.ChangeNodesIfUnchanged({{"n3", std::nullopt, NodeObject("n3", 9)}}).code(),
            StatusCode::kAborted);
  EXPECT_EQ(s.ChangeNodesIfUnchanged({{"n2", NodeObject("n2", 8), NodeObject("n2", 1)}}).code(),
            StatusCode::kAborted);
}

TYPED_TEST(StoreContractTest, FencedNodeChangesCommitOnlyForTheLeaseHolder) {
  Store& s = this->store();
  const Store::LeaseFence a{"scheduler", "A"};
  const Store::LeaseFence b{"scheduler", "B"};
  // No one holds the lease yet: fenced off.
  EXPECT_EQ(s.ChangeNodesIfUnchanged({{"n1", std::nullopt, NodeObject("n1", 1)}}, &a).code(),
            StatusCode::kFailedPrecondition);
  ASSERT_TRUE(*s.TryAcquireLease("scheduler", "A", 1'000, 10'000));
  ASSERT_TRUE(s.ChangeNodesIfUnchanged({{"n1", std::nullopt, NodeObject("n1", 1)}}, &a).ok());
  // A stalled A loses the lease to B: A's next launch writes nothing, B's commits.
  ASSERT_TRUE(*this->Open()->TryAcquireLease("scheduler", "B", 20'000, 10'000));
  Status fenced = s.ChangeNodesIfUnchanged({{"n2", std::nullopt, NodeObject("n2", 1)}}, &a);
  EXPECT_EQ(fenced.code(), StatusCode::kFailedPrecondition) << fenced.ToString();
  ASSERT_TRUE(s.ChangeNodesIfUnchanged({{"n3", std::nullopt, NodeObject("n3", 1)}}, &b).ok());
  auto nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n1", "n3"));
}

// ---- Workflows ----

WorkflowRecord MakeWorkflow(const std::string& id, const std::string& pool, const std::string& user,
                            const std::string& status, int64_t submitted_ms) {
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

// Collects what a store reports of its transactions (StoreOptions::observe).
class TransactionLog {
 public:
  TransactionObserver Observer() {
    return [this](const TransactionObservation& seen) {
      std::lock_guard lock(mu_);
      seen_.push_back(seen);
    };
  }
  std::vector<TransactionObservation> TakeAll() {
    std::lock_guard lock(mu_);
    return std::exchange(seen_, {});
  }

 private:
  std::mutex mu_;
  std::vector<TransactionObservation> seen_;
};

TYPED_TEST(StoreContractTest, ObserverSeesEveryTransactionWithItsOutcome) {
  using Kind = TransactionObservation::Kind;
  TransactionLog log;
  auto opened = OpenStore(this->backend_.Url(),
                          StoreOptions{.clock = &this->clock_, .observe = log.Observer()});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Store& s = **opened;
  log.TakeAll();  // the migrations' transactions

  ConfigWrite put{.op = ConfigWrite::Op::kPut, .kind = "POOL", .name = "p", .body = {{"a", 1}}};
  ASSERT_TRUE(s.WriteConfigs({put}, this->actor_).ok());
  put.expected_revision = 7;  // a revision conflict: refused, rolled back
  ASSERT_EQ(s.WriteConfigs({put}, this->actor_).status().code(), StatusCode::kAborted);
  ASSERT_TRUE(s.GetConfig("POOL", "p").ok());
  auto seen = log.TakeAll();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].kind, Kind::kWrite);
  EXPECT_TRUE(seen[0].ok);
  EXPECT_EQ(seen[0].batched_writes, 0u);
  EXPECT_EQ(seen[0].queued_seconds, 0);
  EXPECT_EQ(seen[1].kind, Kind::kWrite);
  EXPECT_FALSE(seen[1].ok);
  EXPECT_EQ(seen[2].kind, Kind::kRead);
  EXPECT_TRUE(seen[2].ok);
  for (const auto& one : seen) EXPECT_GE(one.seconds, 0);

  // Creates go through the group commit: while inserts are blocked, the first create's batch
  // waits and the others queue, so they commit together in the next batch.
  constexpr int kCreates = 6;
  {
    auto block = this->backend_.BlockWorkflowInserts();
    std::latch started(kCreates);
    std::vector<std::thread> threads;
    for (int i = 0; i < kCreates; ++i) {
      threads.emplace_back([&, i] {
        started.count_down();
        EXPECT_TRUE(
            s.CreateWorkflow(MakeWorkflow("obs-" + std::to_string(i), "p", "u", "PENDING", 1))
                .ok());
      });
    }
    started.wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    block.reset();
    for (auto& thread : threads) thread.join();
  }
  size_t batched = 0;
  TransactionObservation largest;
  for (const auto& one : log.TakeAll()) {
    if (one.batched_writes == 0) continue;
    EXPECT_EQ(one.kind, Kind::kWrite);
    EXPECT_TRUE(one.ok);
    batched += one.batched_writes;
    if (one.batched_writes > largest.batched_writes) largest = one;
  }
  EXPECT_EQ(batched, static_cast<size_t>(kCreates));
  EXPECT_GT(largest.batched_writes, 1u);
  EXPECT_GT(largest.queued_seconds, 0);  // its writes queued behind the blocked commit
}

TYPED_TEST(StoreContractTest, WorkflowCreateGetList) {
  Store& s = this->store();
  auto created = s.CreateWorkflow(MakeWorkflow("wf-2", "p1", "alice", "PENDING", 200));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->version, 1);
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-1", "p1", "bob", "RUNNING", 100)).ok());
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-3", "p2", "alice", "COMPLETED", 300)).ok());
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-4", "p2", "bob", "FAILED_EXEC_TIMEOUT", 300)).ok());

  auto got = s.GetWorkflow("wf-2");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->pool, "p1");
  EXPECT_EQ(got->user, "alice");
  EXPECT_EQ(got->version, 1);
  EXPECT_EQ(got->spec.dump(), MakeWorkflow("wf-2", "p1", "alice", "PENDING", 200).spec.dump());
  ASSERT_EQ(got->tasks.size(), 2u);
  EXPECT_EQ(got->tasks[0].name, "train");
  EXPECT_EQ(got->tasks[1].name, "eval");
  EXPECT_EQ(got->tasks[1].retry, 1);
  EXPECT_EQ(got->tasks[0].workflow_id, "wf-2");
  EXPECT_EQ(got->tasks[0].pod.dump(), R"({"kind":"Pod","metadata":{"name":"train"},"zz":1})");
  EXPECT_EQ(s.GetWorkflow("nope").status().code(), StatusCode::kNotFound);

  struct Case {
    std::string name;
    WorkflowFilter filter;
    std::vector<std::string> ids;
  };
  const std::vector<Case> cases = {
      {"all, oldest first, ties by id", {}, {"wf-1", "wf-2", "wf-3", "wf-4"}},
      {"pool", {.pool = "p2"}, {"wf-3", "wf-4"}},
      {"user", {.user = "alice"}, {"wf-2", "wf-3"}},
      {"status", {.status = "RUNNING"}, {"wf-1"}},
      {"unfinished", {.unfinished_only = true}, {"wf-1", "wf-2"}},
      {"finished", {.finished_only = true}, {"wf-3", "wf-4"}},
      {"finished, newest first",
       {.finished_only = true, .limit = 1, .newest_first = true},
       {"wf-4"}},
      {"pool and user", {.pool = "p2", .user = "bob"}, {"wf-4"}},
      {"limit", {.limit = 2}, {"wf-1", "wf-2"}},
      {"no match", {.pool = "p9"}, {}},
      {"newest first", {.newest_first = true}, {"wf-4", "wf-3", "wf-2", "wf-1"}},
      {"page after a position, newest first",
       {.limit = 2, .newest_first = true, .after = WorkflowFilter::Position{300, "wf-3"}},
       {"wf-2", "wf-1"}},
      {"page after a position, oldest first",
       {.limit = 1, .after = WorkflowFilter::Position{100, "wf-1"}},
       {"wf-2"}},
      {"page with a filter",
       {.user = "alice", .newest_first = true, .after = WorkflowFilter::Position{300, "wf-3"}},
       {"wf-2"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto listed = s.ListWorkflows(c.filter);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    std::vector<std::string> ids;
    for (const auto& w : *listed) {
      ids.push_back(w.id);
      EXPECT_EQ(w.tasks.size(), 2u) << w.id;
    }
    EXPECT_EQ(ids, c.ids);
  }
}

TYPED_TEST(StoreContractTest, ManyTasksKeepTheirOrder) {
  WorkflowRecord w = MakeWorkflow("wf-big", "p", "u", "PENDING", 1);
  w.tasks.clear();
  for (int i = 0; i < 150; ++i) {
    TaskRecord t;
    t.group = "g" + std::to_string(i % 7);
    t.name = "task-" + std::to_string(149 - i);  // not in name order
    t.status = "PENDING";
    t.pod = {{"kind", "Pod"}, {"i", i}};
    t.exit_code = -i;
    w.tasks.push_back(t);
  }
  ASSERT_TRUE(this->store().CreateWorkflow(w).ok());
  auto got = this->store().GetWorkflow("wf-big");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->tasks.size(), 150u);
  for (int i = 0; i < 150; ++i) {
    EXPECT_EQ(got->tasks[i].name, w.tasks[i].name);
    EXPECT_EQ(got->tasks[i].group, w.tasks[i].group);
    EXPECT_EQ(got->tasks[i].pod, w.tasks[i].pod);
    EXPECT_EQ(got->tasks[i].exit_code, -i);
  }
  auto listed = this->store().ListWorkflows({});
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->at(0).tasks.size(), 150u);
  EXPECT_EQ(listed->at(0).tasks.back().name, "task-0");
}

TYPED_TEST(StoreContractTest, WorkflowCompareAndSet) {
  Store& s = this->store();
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-1", "p", "u", "PENDING", 1)).ok());
  auto w = s.GetWorkflow("wf-1");
  ASSERT_TRUE(w.ok());

  WorkflowRecord update = *w;
  update.status = "RUNNING";
  update.tasks.resize(1);
  update.tasks[0].status = "RUNNING";
  update.tasks[0].node = "n1";
  update.tasks[0].started_ms = 42;
  ASSERT_TRUE(s.UpdateWorkflow(update).ok());

  auto after = s.GetWorkflow("wf-1");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->version, 2);
  EXPECT_EQ(after->status, "RUNNING");
  ASSERT_EQ(after->tasks.size(), 1u);  // the task list was rewritten
  EXPECT_EQ(after->tasks[0].node, "n1");
  EXPECT_EQ(after->tasks[0].started_ms, 42);

  // The first copy is stale now.
  WorkflowRecord stale = *w;
  stale.status = "CANCELED";
  EXPECT_EQ(s.UpdateWorkflow(stale).code(), StatusCode::kAborted);
  EXPECT_EQ(s.GetWorkflow("wf-1")->status, "RUNNING");

  update.version = 2;
  update.status = "COMPLETED";
  ASSERT_TRUE(s.UpdateWorkflow(update).ok());
  auto unfinished = s.ListWorkflows({.unfinished_only = true});
  ASSERT_TRUE(unfinished.ok());
  EXPECT_TRUE(unfinished->empty());

  WorkflowRecord missing = update;
  missing.id = "wf-404";
  EXPECT_EQ(s.UpdateWorkflow(missing).code(), StatusCode::kNotFound);
}

// A workflow update and its audit record commit together: a stale update appends no record.
TYPED_TEST(StoreContractTest, WorkflowUpdateWithAuditIsOneTransaction) {
  Store& s = this->store();
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-1", "p", "u", "PENDING", 1)).ok());
  auto w = s.GetWorkflow("wf-1");
  ASSERT_TRUE(w.ok());
  AuditRecord audit;
  audit.user = "alice";
  audit.source = "127.0.0.1";
  audit.action = "workflow cancel";
  audit.target = "wf-1";

  WorkflowRecord canceled = *w;
  canceled.status = "CANCELED";
  ASSERT_TRUE(s.UpdateWorkflowWithAudit(canceled, audit).ok());
  EXPECT_EQ(s.GetWorkflow("wf-1")->status, "CANCELED");
  auto log = s.ListAudit(10);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->size(), 1u);
  EXPECT_EQ(log->at(0).action, "workflow cancel");
  EXPECT_EQ(log->at(0).user, "alice");
  EXPECT_NE(log->at(0).at_ms, 0);

  // `canceled` is stale by one now: refused, and no second record.
  EXPECT_EQ(s.UpdateWorkflowWithAudit(canceled, audit).code(), StatusCode::kAborted);
  EXPECT_EQ(s.ListAudit(10)->size(), 1u);
  WorkflowRecord missing = canceled;
  missing.id = "wf-404";
  EXPECT_EQ(s.UpdateWorkflowWithAudit(missing, audit).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ListAudit(10)->size(), 1u);
}

TYPED_TEST(StoreContractTest, LeaderWritesAreFencedByTheLease) {
  Store& s = this->store();
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-1", "p", "u", "PENDING", 1)).ok());
  ASSERT_TRUE(*s.TryAcquireLease("scheduler", "A", 0, 10));
  auto w = s.GetWorkflow("wf-1");
  ASSERT_TRUE(w.ok());
  WorkflowRecord bind = *w;
  bind.status = "RUNNING";
  ASSERT_TRUE(s.UpdateWorkflowAsLeader(bind, {"scheduler", "A"}).ok());
  EXPECT_EQ(s.GetWorkflow("wf-1")->version, 2);

  // A stalls past its lease; B takes it from another process. A's next write is refused and
  // leaves the workflow as it was; B's goes through.
  ASSERT_TRUE(*this->Open()->TryAcquireLease("scheduler", "B", 20, 10));
  bind.version = 2;
  bind.status = "COMPLETED";
  Status fenced = s.UpdateWorkflowAsLeader(bind, {"scheduler", "A"});
  EXPECT_EQ(fenced.code(), StatusCode::kFailedPrecondition) << fenced.ToString();
  EXPECT_EQ(s.GetWorkflow("wf-1")->status, "RUNNING");
  EXPECT_EQ(s.GetWorkflow("wf-1")->version, 2);
  ASSERT_TRUE(s.UpdateWorkflowAsLeader(bind, {"scheduler", "B"}).ok());
  EXPECT_EQ(s.GetWorkflow("wf-1")->status, "COMPLETED");
  // A lease nobody holds fences everyone off.
  bind.version = 3;
  EXPECT_EQ(s.UpdateWorkflowAsLeader(bind, {"no-such-lease", "B"}).code(),
            StatusCode::kFailedPrecondition);
}

TYPED_TEST(StoreContractTest, WorkflowIdempotencyKey) {
  Store& s = this->store();
  WorkflowRecord first = MakeWorkflow("wf-1", "p", "u", "PENDING", 1);
  first.idempotency_key = "req-123";
  ASSERT_TRUE(s.CreateWorkflow(first).ok());

  WorkflowRecord retry = MakeWorkflow("wf-2", "p", "u", "PENDING", 2);
  retry.idempotency_key = "req-123";
  auto again = s.CreateWorkflow(retry);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->id, "wf-1");
  EXPECT_EQ(again->idempotency_key, "req-123");
  EXPECT_EQ(s.GetWorkflow("wf-2").status().code(), StatusCode::kNotFound);

  WorkflowRecord same_id = MakeWorkflow("wf-1", "p", "u", "PENDING", 3);
  EXPECT_EQ(s.CreateWorkflow(same_id).status().code(), StatusCode::kAlreadyExists);
  same_id.idempotency_key = "req-456";  // new key, taken id
  EXPECT_EQ(s.CreateWorkflow(same_id).status().code(), StatusCode::kAlreadyExists);

  // Workflows without a key never collide on it.
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-3", "p", "u", "PENDING", 4)).ok());
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-4", "p", "u", "PENDING", 5)).ok());
  EXPECT_EQ(s.ListWorkflows({})->size(), 3u);
}

TYPED_TEST(StoreContractTest, GetWorkflowIfChangedComparesVersions) {
  Store& s = this->store();
  EXPECT_EQ(s.GetWorkflowIfChanged("nope", 0).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-1", "p", "u", "PENDING", 1)).ok());
  auto fresh = s.GetWorkflowIfChanged("wf-1", 0);  // no cached copy yet
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  ASSERT_TRUE(fresh->has_value());
  EXPECT_EQ((*fresh)->version, 1);
  EXPECT_EQ((*fresh)->tasks.size(), 2u);
  auto same = s.GetWorkflowIfChanged("wf-1", 1);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->has_value());
  WorkflowRecord next = **fresh;
  next.status = "RUNNING";
  ASSERT_TRUE(this->Open()->UpdateWorkflow(next).ok());  // by another store
  auto changed = s.GetWorkflowIfChanged("wf-1", 1);
  ASSERT_TRUE(changed.ok());
  ASSERT_TRUE(changed->has_value());
  EXPECT_EQ((*changed)->version, 2);
  EXPECT_EQ((*changed)->status, "RUNNING");
}

TYPED_TEST(StoreContractTest, NodeGenerationGrowsWithNodeWrites) {
  Store& s = this->store();
  auto g0 = s.GetGenerations();
  ASSERT_TRUE(g0.ok()) << g0.status().ToString();
  ASSERT_TRUE(s.UpsertNodes({{"n1", NodeObject("n1", 8)}}, false).ok());
  auto g1 = s.GetGenerations();
  ASSERT_TRUE(g1.ok());
  EXPECT_GT(g1->nodes, g0->nodes);
  EXPECT_EQ(g1->configs, g0->configs);
  auto other = this->Open();
  ASSERT_TRUE(other->DeleteNodes({"n1"}).ok());
  auto g2 = s.GetGenerations();
  ASSERT_TRUE(g2.ok());
  EXPECT_GT(g2->nodes, g1->nodes);
  this->Put("POOL", "a", {{"v", 1}});
  auto g3 = s.GetGenerations();
  ASSERT_TRUE(g3.ok());
  EXPECT_EQ(g3->nodes, g2->nodes);
  EXPECT_GT(g3->configs, g2->configs);
  EXPECT_EQ(g3->configs, *s.ConfigGeneration());
}

TYPED_TEST(StoreContractTest, Sequences) {
  Store& s = this->store();
  EXPECT_EQ(*s.NextSequence("workflow"), 1);
  EXPECT_EQ(*s.NextSequence("workflow"), 2);
  EXPECT_EQ(*s.NextSequence("other"), 1);
  EXPECT_EQ(*s.NextSequence("workflow"), 3);
}

// ---- Audit ----

TYPED_TEST(StoreContractTest, AuditNewestFirst) {
  Store& s = this->store();
  ASSERT_TRUE(s.AppendAudit({.at_ms = 5,
                             .user = "a",
                             .source = "cli",
                             .action = "config update",
                             .target = "POOL/x",
                             .detail = "rev 1"})
                  .ok());
  ASSERT_TRUE(s.AppendAudit({.user = "b", .action = "workflow submit", .target = "wf-1"}).ok());
  auto all = s.ListAudit(0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ(all->at(0).user, "b");
  EXPECT_EQ(all->at(0).at_ms, 1'700'000'000'000);  // filled from the store's clock
  EXPECT_EQ(all->at(1).action, "config update");
  EXPECT_EQ(all->at(1).target, "POOL/x");
  EXPECT_EQ(all->at(1).detail, "rev 1");
  EXPECT_EQ(all->at(1).at_ms, 5);
  auto one = s.ListAudit(1);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(one->at(0).user, "b");
}

// ---- Leases ----

TYPED_TEST(StoreContractTest, LeaseAcquireRenewExpireSteal) {
  Store& s = this->store();
  struct Step {
    std::string name;
    std::string holder;
    int64_t now;
    bool acquired;
  };
  const std::vector<Step> steps = {
      {"free lease is acquired", "A", 0, true},  // A until 10
      {"live lease is not stolen", "B", 5, false},
      {"holder renews", "A", 8, true},  // A until 18
      {"renewal extended it", "B", 15, false},
      {"expired lease is stolen", "B", 18, true},  // B until 28
      {"old holder lost it", "A", 19, false},
  };
  for (const Step& step : steps) {
    SCOPED_TRACE(step.name);
    auto got = s.TryAcquireLease("leader", step.holder, step.now, 10);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, step.acquired);
  }
  EXPECT_EQ(*s.TryAcquireLease("other", "A", 19, 10), true);  // leases are independent

  ASSERT_TRUE(s.ReleaseLease("leader", "A").ok());  // not the holder: no effect
  EXPECT_EQ(*s.TryAcquireLease("leader", "A", 20, 10), false);
  ASSERT_TRUE(s.ReleaseLease("leader", "B").ok());
  EXPECT_EQ(*s.TryAcquireLease("leader", "A", 20, 10), true);
  EXPECT_EQ(s.TryAcquireLease("leader", "A", 20, 0).status().code(), StatusCode::kInvalidArgument);
}

TYPED_TEST(StoreContractTest, LeaseWithoutATimeRunsOnTheDatabaseClock) {
  // Servers pass no time: the expiry is reckoned on the database's clock (PostgreSQL's own; a
  // SQLite file is on one machine, whose clock is the store's), never on a contender's.
  Store& s = this->store();
  constexpr int64_t kTtl = 600;
  ASSERT_TRUE(*s.TryAcquireLease("leader", "A", std::nullopt, kTtl));
  EXPECT_FALSE(*this->Open()->TryAcquireLease("leader", "B", std::nullopt, kTtl));
  // B's clock runs two hours ahead.
  this->clock_.Advance(2 * 3600 * 1000);
  const bool database_clock = std::is_same_v<TypeParam, PostgresBackend>;
  EXPECT_EQ(*this->Open()->TryAcquireLease("leader", "B", std::nullopt, kTtl), !database_clock)
      << "a contender's clock decided the expiry";
  if (!database_clock) return;
  // The lease expires once the database's clock has passed it; then B takes it over.
  ASSERT_TRUE(*s.TryAcquireLease("leader", "A", std::nullopt, kTtl));  // renewed
  std::this_thread::sleep_for(std::chrono::milliseconds(kTtl + 200));
  EXPECT_TRUE(*this->Open()->TryAcquireLease("leader", "B", std::nullopt, kTtl));
  EXPECT_FALSE(*s.TryAcquireLease("leader", "A", std::nullopt, kTtl));
}

// ---- Concurrency and durability ----

TYPED_TEST(StoreContractTest, ConcurrentReadModifyWriteLosesNoUpdate) {
  constexpr int kThreads = 4;
  constexpr int kIncrements = 15;
  this->Put("QUEUE", "counter", {{"n", 0}});
  // Half the threads share this->store(), half open their own connection.
  std::vector<std::unique_ptr<Store>> own;
  for (int t = 0; t < kThreads / 2; ++t) own.push_back(this->Open());
  std::atomic<int> conflicts = 0;
  std::atomic<int> failures = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    Store* s = t % 2 == 0 ? &this->store() : own[t / 2].get();
    threads.emplace_back([&, s, t] {
      for (int i = 0; i < kIncrements; ++i) {
        for (;;) {
          auto current = s->GetConfig("QUEUE", "counter");
          if (!current.ok()) {
            ++failures;
            return;
          }
          ordered_json body = current->body;
          body["n"] = body["n"].get<int>() + 1;
          std::this_thread::yield();  // widen the read-modify-write window
          ConfigWrite write{.op = ConfigWrite::Op::kPut,
                            .kind = "QUEUE",
                            .name = "counter",
                            .body = body,
                            .expected_revision = current->revision};
          auto written = s->WriteConfigs({write}, Actor{"t" + std::to_string(t), "test"});
          if (written.ok()) break;
          if (written.status().code() != StatusCode::kAborted) {
            ADD_FAILURE() << written.status().ToString();
            ++failures;
            return;
          }
          ++conflicts;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures, 0);
  auto final_state = this->store().GetConfig("QUEUE", "counter");
  ASSERT_TRUE(final_state.ok());
  EXPECT_EQ(final_state->body["n"], kThreads * kIncrements);
  EXPECT_EQ(final_state->revision, 1 + kThreads * kIncrements);
  auto history = this->store().History("QUEUE", "counter", 0);
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->size(), static_cast<size_t>(1 + kThreads * kIncrements));
}

TYPED_TEST(StoreContractTest, ConcurrentUnlockedWritesGetDistinctRevisions) {
  constexpr int kThreads = 4;
  constexpr int kWrites = 10;
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < kThreads; ++t) stores.push_back(this->Open());
  std::vector<std::vector<int64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        ConfigWrite write{.op = ConfigWrite::Op::kPut,
                          .kind = "POOL",
                          .name = "hot",
                          .body = {{"t", t}, {"i", i}}};
        auto written = stores[t]->WriteConfigs({write}, Actor{"t", "test"});
        ASSERT_TRUE(written.ok()) << written.status().ToString();
        seen[t].push_back(written->at(0));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<int64_t> all;
  for (const auto& v : seen) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  std::vector<int64_t> expected(kThreads * kWrites);
  std::iota(expected.begin(), expected.end(), 1);
  EXPECT_EQ(all, expected);  // 1..N, each once
}

TYPED_TEST(StoreContractTest, ConcurrentWorkflowUpdatesAndSequences) {
  constexpr int kThreads = 4;
  constexpr int kUpdates = 10;
  ASSERT_TRUE(this->store().CreateWorkflow(MakeWorkflow("wf-1", "p", "u", "RUNNING", 1)).ok());
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < kThreads; ++t) stores.push_back(this->Open());
  std::vector<std::vector<int64_t>> sequences(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Store& s = *stores[t];
      for (int i = 0; i < kUpdates; ++i) {
        for (;;) {
          auto w = s.GetWorkflow("wf-1");
          ASSERT_TRUE(w.ok()) << w.status().ToString();
          WorkflowRecord next = *w;
          next.tasks[0].retry += 1;  // the counter under test
          Status status = s.UpdateWorkflow(next);
          if (status.ok()) break;
          ASSERT_EQ(status.code(), StatusCode::kAborted) << status.ToString();
        }
        auto seq = s.NextSequence("wf");
        ASSERT_TRUE(seq.ok()) << seq.status().ToString();
        sequences[t].push_back(*seq);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  auto w = this->store().GetWorkflow("wf-1");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->tasks[0].retry, kThreads * kUpdates);
  EXPECT_EQ(w->version, 1 + kThreads * kUpdates);
  // Every value once only across the stores (blocks leave gaps), increasing per store.
  std::vector<int64_t> all;
  for (const auto& v : sequences) {
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
    all.insert(all.end(), v.begin(), v.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_EQ(all.size(), size_t{kThreads * kUpdates});
}

TYPED_TEST(StoreContractTest, SequenceValuesAreUniqueAcrossStoresAndRestarts) {
  constexpr int kStores = 2;
  constexpr int kThreadsPerStore = 3;
  constexpr int kValues = 300;  // per thread: several block reservations, some made ahead
  std::vector<std::unique_ptr<Store>> stores;
  for (int i = 0; i < kStores; ++i) stores.push_back(this->Open());
  std::vector<std::vector<int64_t>> values(kStores * kThreadsPerStore);
  std::vector<std::thread> threads;
  for (int t = 0; t < kStores * kThreadsPerStore; ++t) {
    threads.emplace_back([&, t] {
      Store& s = *stores[t % kStores];
      for (int i = 0; i < kValues; ++i) {
        auto value = s.NextSequence("workflow");
        ASSERT_TRUE(value.ok()) << value.status().ToString();
        values[t].push_back(*value);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<int64_t> all;
  for (const auto& v : values) {
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));  // one store hands out increasing values
    all.insert(all.end(), v.begin(), v.end());
  }
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), size_t{kStores * kThreadsPerStore * kValues});
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end())
      << "a value was handed out twice";
  EXPECT_GE(all.front(), 1);
  // A store opened after the others were closed continues above every value they reserved.
  int64_t highest = all.back();
  stores.clear();
  auto reopened = this->Open();
  ASSERT_NE(reopened, nullptr);
  auto next = reopened->NextSequence("workflow");
  ASSERT_TRUE(next.ok());
  EXPECT_GT(*next, highest);
}

TYPED_TEST(StoreContractTest, ConcurrentCreateWithOneIdempotencyKeyMakesOneWorkflow) {
  constexpr int kThreads = 4;
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < kThreads; ++t) stores.push_back(this->Open());
  std::vector<std::string> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      WorkflowRecord w = MakeWorkflow("wf-" + std::to_string(t), "p", "u", "PENDING", t);
      w.idempotency_key = "same-request";
      auto created = stores[t]->CreateWorkflow(w);
      ASSERT_TRUE(created.ok()) << created.status().ToString();
      ids[t] = created->id;
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(ids[t], ids[0]);
  auto listed = this->store().ListWorkflows({});
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->at(0).id, ids[0]);
}

TYPED_TEST(StoreContractTest, ConcurrentCreatesAreEachCommittedExactlyOnce) {
  // Many threads on one store: their creates and audit appends are group-committed.
  constexpr int kThreads = 16;
  constexpr int kPerThread = 20;
  Store& s = this->store();
  std::vector<std::thread> threads;
  std::atomic<int> failures = 0;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string id = "wf-" + std::to_string(t) + "-" + std::to_string(i);
        WorkflowRecord w = MakeWorkflow(id, "p", "u" + std::to_string(t), "PENDING", t * 100 + i);
        AuditRecord audit{0, "u" + std::to_string(t), "test", "workflow submit", id, "pool p"};
        auto created = i % 2 == 0 ? s.CreateWorkflowWithAudit(w, audit) : s.CreateWorkflow(w);
        if (!created.ok() || created->id != id || created->version != 1) ++failures;
        if (i % 2 == 1 && !s.AppendAudit(audit).ok()) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures, 0);
  auto listed = s.ListWorkflows({.limit = 0});
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), size_t{kThreads * kPerThread});
  std::set<std::string> ids;
  for (const WorkflowRecord& w : *listed) {
    ids.insert(w.id);
    EXPECT_EQ(w.tasks.size(), 2u) << w.id;
  }
  EXPECT_EQ(ids.size(), size_t{kThreads * kPerThread});
  auto audit = s.ListAudit(0);
  ASSERT_TRUE(audit.ok());
  EXPECT_EQ(audit->size(), size_t{kThreads * kPerThread});  // one record per create
  // A second store on the same database sees every acknowledged create (they are committed).
  auto other = this->Open();
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->ListWorkflows({.limit = 0})->size(), size_t{kThreads * kPerThread});
}

// Collects the outcomes of asynchronous creates: one slot per create, filled by its callback.
class AsyncOutcomes {
 public:
  explicit AsyncOutcomes(size_t n)
      : results_(n, Result<WorkflowRecord>(InternalError("not called"))), calls_(n, 0) {}
  Store::CreateDone For(size_t i) {
    return [this, i](Result<WorkflowRecord> result) {
      std::lock_guard lock(mu_);
      results_[i] = std::move(result);
      ++calls_[i];
      ++finished_;
      cv_.notify_all();
    };
  }
  void WaitAll() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return finished_ == results_.size(); });
  }
  const Result<WorkflowRecord>& operator[](size_t i) const { return results_[i]; }
  int Calls(size_t i) const { return calls_[i]; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Result<WorkflowRecord>> results_;
  std::vector<int> calls_;
  size_t finished_ = 0;
};

TYPED_TEST(StoreContractTest, AsyncCreatesReportEachOutcomeOnce) {
  Store& s = this->store();
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("taken-0", "p", "u", "DONE", 1)).ok());
  WorkflowRecord keyed = MakeWorkflow("keyed-0", "p", "u", "DONE", 2);
  keyed.idempotency_key = "key-0";
  ASSERT_TRUE(s.CreateWorkflow(keyed).ok());

  // Queued from one thread without waiting: new ids, a taken id, a known idempotency key under a
  // new id, and an empty id (refused before it is queued).
  constexpr size_t kNew = 40;
  std::vector<WorkflowRecord> writes;
  for (size_t i = 0; i < kNew; ++i) {
    writes.push_back(MakeWorkflow("async-" + std::to_string(i), "p", "u", "PENDING", 10));
  }
  writes.push_back(MakeWorkflow("taken-0", "p", "u", "PENDING", 11));
  WorkflowRecord again = MakeWorkflow("keyed-1", "p", "u", "PENDING", 12);
  again.idempotency_key = "key-0";
  writes.push_back(again);
  writes.push_back(MakeWorkflow("", "p", "u", "PENDING", 13));
  AsyncOutcomes outcomes(writes.size());
  for (size_t i = 0; i < writes.size(); ++i) {
    AuditRecord audit{0, "u", "test", "workflow submit", writes[i].id, ""};
    s.CreateWorkflowWithAuditAsync(writes[i], audit, std::nullopt, outcomes.For(i));
  }
  outcomes.WaitAll();

  for (size_t i = 0; i < writes.size(); ++i) EXPECT_EQ(outcomes.Calls(i), 1) << i;
  for (size_t i = 0; i < kNew; ++i) {
    ASSERT_TRUE(outcomes[i].ok()) << outcomes[i].status().ToString();
    EXPECT_EQ(outcomes[i]->id, writes[i].id);
    EXPECT_EQ(outcomes[i]->version, 1);
    ASSERT_EQ(outcomes[i]->tasks.size(), 2u);
    EXPECT_EQ(outcomes[i]->tasks[0].workflow_id, writes[i].id);
  }
  EXPECT_EQ(outcomes[kNew].status().code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(outcomes[kNew + 1].ok());
  EXPECT_EQ(outcomes[kNew + 1]->id, "keyed-0");  // the workflow stored under that key
  EXPECT_EQ(outcomes[kNew + 2].status().code(), StatusCode::kInvalidArgument);

  // Durable once reported: another store on the database sees them, with one audit record per
  // create that was not refused.
  auto other = this->Open();
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->ListWorkflows({.limit = 0})->size(), kNew + 2);
  EXPECT_EQ(other->ListAudit(0)->size(), kNew + 1);
  EXPECT_FALSE(other->GetWorkflow("keyed-1").ok());
}

TYPED_TEST(StoreContractTest, ClosingAStoreFinishesItsQueuedAsyncCreates) {
  constexpr size_t kWrites = 100;
  AsyncOutcomes outcomes(kWrites);
  {
    auto store = this->Open();
    ASSERT_NE(store, nullptr);
    for (size_t i = 0; i < kWrites; ++i) {
      WorkflowRecord w = MakeWorkflow("closing-" + std::to_string(i), "p", "u", "PENDING", 1);
      store->CreateWorkflowWithAuditAsync(w, AuditRecord{0, "u", "test", "submit", w.id, ""},
                                          std::nullopt, outcomes.For(i));
    }
  }  // closed at once: every queued write is written and reported before the store is gone
  for (size_t i = 0; i < kWrites; ++i) {
    EXPECT_EQ(outcomes.Calls(i), 1) << i;
    EXPECT_TRUE(outcomes[i].ok()) << i << ": " << outcomes[i].status().ToString();
  }
  EXPECT_EQ(this->store().ListWorkflows({.limit = 0})->size(), kWrites);
}

TYPED_TEST(StoreContractTest, AsyncVersionChecksAnswerLikeGetWorkflowIfChanged) {
  Store& s = this->store();
  // More distinct workflows than one statement checks (64), and several checks per workflow.
  constexpr int kWorkflows = 150;
  for (int i = 0; i < kWorkflows; ++i) {
    ASSERT_TRUE(
        s.CreateWorkflow(MakeWorkflow("v-" + std::to_string(i), "p", "u", "PENDING", i)).ok());
  }
  WorkflowRecord changed = *s.GetWorkflow("v-7");
  changed.status = "RUNNING";
  ASSERT_TRUE(s.UpdateWorkflow(changed).ok());  // now version 2

  struct Check {
    std::string id;
    int64_t known;
  };
  std::vector<Check> checks;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kWorkflows; ++i) checks.push_back({"v-" + std::to_string(i), 1});
  }
  checks.push_back({"v-7", 2});
  checks.push_back({"v-3", 0});  // nothing cached: the workflow comes back
  checks.push_back({"missing", 1});
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::optional<Result<std::optional<WorkflowRecord>>>> got(checks.size());
  std::vector<int> calls(checks.size(), 0);
  size_t answered = 0;
  for (size_t i = 0; i < checks.size(); ++i) {
    s.GetWorkflowIfChangedAsync(checks[i].id, checks[i].known,
                                [&, i](Result<std::optional<WorkflowRecord>> result) {
                                  std::lock_guard lock(mu);
                                  got[i].emplace(std::move(result));
                                  ++calls[i];
                                  ++answered;
                                  cv.notify_all();
                                });
  }
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return answered == checks.size(); });
  }
  for (size_t i = 0; i < checks.size(); ++i) {
    SCOPED_TRACE(checks[i].id + " known " + std::to_string(checks[i].known));
    EXPECT_EQ(calls[i], 1);
    const auto& result = *got[i];
    if (checks[i].id == "missing") {
      EXPECT_EQ(result.status().code(), StatusCode::kNotFound);
      continue;
    }
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    bool stale = (checks[i].id == "v-7" && checks[i].known == 1) || checks[i].known == 0;
    ASSERT_EQ(result->has_value(), stale);
    if (stale) {
      EXPECT_EQ((*result)->id, checks[i].id);
      EXPECT_EQ((*result)->tasks.size(), 2u);
      if (checks[i].id == "v-7") {
        EXPECT_EQ((*result)->version, 2);
        EXPECT_EQ((*result)->status, "RUNNING");
      }
    }
  }
}

TYPED_TEST(StoreContractTest, ClosingAStoreAnswersItsQueuedVersionChecks) {
  ASSERT_TRUE(this->store().CreateWorkflow(MakeWorkflow("c-1", "p", "u", "PENDING", 1)).ok());
  constexpr int kChecks = 200;
  std::atomic<int> unchanged = 0;
  std::atomic<int> calls = 0;
  {
    auto store = this->Open();
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < kChecks; ++i) {
      store->GetWorkflowIfChangedAsync("c-1", 1, [&](Result<std::optional<WorkflowRecord>> r) {
        ++calls;
        if (r.ok() && !r->has_value()) ++unchanged;
      });
    }
  }
  EXPECT_EQ(calls, kChecks);
  EXPECT_EQ(unchanged, kChecks);
}

TYPED_TEST(StoreContractTest, ACreatePlannedOnOldGenerationsIsRefused) {
  Store& s = this->store();
  auto planned = s.GetGenerations();
  ASSERT_TRUE(planned.ok());
  AuditRecord audit{0, "u", "test", "workflow submit", "", ""};
  ASSERT_TRUE(
      s.CreateWorkflowWithAudit(MakeWorkflow("g-1", "p", "u", "PENDING", 1), audit, *planned).ok());
  auto expect_stale = [&](const Result<WorkflowRecord>& result) {
    EXPECT_EQ(result.status().code(), StatusCode::kAborted);
    EXPECT_EQ(result.status().message(), Store::kStalePlan);
  };
  // A config write moves the config generation.
  this->Put("POOL", "p", ordered_json{{"backend", "default"}});
  expect_stale(
      s.CreateWorkflowWithAudit(MakeWorkflow("g-2", "p", "u", "PENDING", 2), audit, *planned));
  // So does a node write, also through the asynchronous path.
  auto after_config = s.GetGenerations();
  ASSERT_TRUE(after_config.ok());
  ASSERT_TRUE(this->Open()->UpsertNodes({{"n1", NodeObject("n1", 2)}}, false).ok());
  std::promise<Result<WorkflowRecord>> promise;
  s.CreateWorkflowWithAuditAsync(
      MakeWorkflow("g-3", "p", "u", "PENDING", 3), audit, *after_config,
      [&](Result<WorkflowRecord> r) { promise.set_value(std::move(r)); });
  expect_stale(promise.get_future().get());
  // Planned on the current ones: stored.
  auto now = s.GetGenerations();
  ASSERT_TRUE(now.ok());
  EXPECT_TRUE(
      s.CreateWorkflowWithAudit(MakeWorkflow("g-4", "p", "u", "PENDING", 4), audit, *now).ok());
  // The refused creates wrote nothing: no workflow, no audit record.
  EXPECT_FALSE(s.GetWorkflow("g-2").ok());
  EXPECT_FALSE(s.GetWorkflow("g-3").ok());
  EXPECT_EQ(s.ListWorkflows({.limit = 0})->size(), 2u);
  EXPECT_EQ(s.ListAudit(0)->size(), 2u);
}

TYPED_TEST(StoreContractTest, AFailingCreateInABatchFailsAlone) {
  constexpr int kThreads = 12;
  constexpr int kPerThread = 10;
  Store& s = this->store();
  for (int i = 0; i < kPerThread; ++i) {
    ASSERT_TRUE(
        s.CreateWorkflow(MakeWorkflow("taken-" + std::to_string(i), "p", "u", "DONE", i)).ok());
  }
  // Thread t % 3: 0 creates new workflows (must succeed), 1 creates taken ids (kAlreadyExists,
  // a refusal inside the batch), 2 creates workflows whose name is not valid UTF-8, which both
  // stores refuse (PostgreSQL with a statement error: the batch is rerun without it).
  std::vector<std::vector<Status>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string id = "wf-" + std::to_string(t) + "-" + std::to_string(i);
        if (t % 3 == 1) id = "taken-" + std::to_string(i);
        WorkflowRecord w = MakeWorkflow(id, "p", "u", "PENDING", i);
        if (t % 3 == 2) w.name = "bad\xff\xfename";
        AuditRecord audit{0, "u", "test", "workflow submit", id, ""};
        results[t].push_back(s.CreateWorkflowWithAudit(w, audit).status());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  int expected_rows = kPerThread;  // the taken ones
  int expected_audit = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (const Status& status : results[t]) {
      SCOPED_TRACE("thread " + std::to_string(t) + ": " + status.ToString());
      if (t % 3 == 0) {
        EXPECT_TRUE(status.ok());
      } else if (t % 3 == 1) {
        EXPECT_EQ(status.code(), StatusCode::kAlreadyExists);
      } else {
        EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
      }
      if (status.ok()) {
        ++expected_rows;
        ++expected_audit;
      }
    }
  }
  auto listed = s.ListWorkflows({.limit = 0});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), size_t(expected_rows));
  for (const WorkflowRecord& w : *listed) {
    if (w.id.starts_with("taken-")) {
      EXPECT_EQ(w.status, "DONE");  // untouched by the refused creates
    }
  }
  EXPECT_EQ(s.ListAudit(0)->size(), size_t(expected_audit));  // no record for a failed create
}

// One write of a batch submitted at once (BatchedCreatesKeepEachOutcome).
struct BatchWrite {
  enum class Expect {
    kInserted,         // stored as given
    kRefused,          // kAlreadyExists: the id is taken
    kExisting,         // the workflow `existing_id` (its idempotency key)
    kOneOfGroup,       // exactly one write of `group` is inserted, the others are refused
    kOneKeyOfGroup,    // every write of `group` (one key) gets the same one of their workflows
    kInvalidArgument,  // fails alone on both (text that is not UTF-8: both refuse it)
    kAuditOnly,        // AppendAudit, no create
  };
  WorkflowRecord workflow;
  Expect expect = Expect::kInserted;
  std::string existing_id;                                       // kExisting
  std::string group;                                             // kOneOfGroup, kOneKeyOfGroup
  Result<WorkflowRecord> result = InternalError("not written");  // an empty record: audit only
};

// The writes of one BatchedCreatesKeepEachOutcome round; ids start with `prefix`.
std::vector<BatchWrite> MixedBatch(const std::string& prefix, bool with_failures) {
  using Expect = BatchWrite::Expect;
  std::vector<BatchWrite> writes;
  auto add = [&](const std::string& id, Expect expect, const std::string& key = "",
                 const std::string& group = "") {
    BatchWrite write;
    write.workflow = MakeWorkflow(id, "p", "u", "PENDING", static_cast<int64_t>(writes.size()));
    write.workflow.idempotency_key = key;
    write.expect = expect;
    write.group = group;
    writes.push_back(std::move(write));
    return &writes.back();
  };
  // More new key-less creates than one multi-row INSERT holds (64), with 0 to 3 tasks each.
  for (int i = 0; i < 90; ++i) {
    BatchWrite* write = add(prefix + "new-" + std::to_string(i), Expect::kInserted);
    TaskRecord task = write->workflow.tasks[0];
    write->workflow.tasks.resize(i % 4, task);
    for (size_t t = 0; t < write->workflow.tasks.size(); ++t) {
      write->workflow.tasks[t].name = "t" + std::to_string(t);
    }
  }
  // More tasks than one multi-row INSERT of tasks holds (64), in order.
  BatchWrite* big = add(prefix + "big", Expect::kInserted);
  TaskRecord task = big->workflow.tasks[0];
  big->workflow.tasks.resize(100, task);
  for (size_t t = 0; t < big->workflow.tasks.size(); ++t) {
    big->workflow.tasks[t].name = "task-" + std::to_string(99 - t);
  }
  for (int i = 0; i < 3; ++i) add("taken-" + std::to_string(i), Expect::kRefused);
  add("taken-0", Expect::kRefused, prefix + "key-taken");  // a new key, a taken id
  for (int i = 0; i < 4; ++i) {
    // One of the two without tasks, so that their task rows cannot collide either (a write
    // wrongly taken as inserted shows in its outcome, not as a failing statement).
    std::string id = prefix + "twin-" + std::to_string(i);
    add(id, Expect::kOneOfGroup, "", id)->workflow.tasks.resize(i % 2 == 0 ? 0 : 2);
    add(id, Expect::kOneOfGroup, "", id)->workflow.tasks.resize(i % 2 == 0 ? 2 : 0);
  }
  for (int i = 0; i < 2; ++i) {  // one id, once without and once with a key
    std::string id = prefix + "mixed-" + std::to_string(i);
    add(id, Expect::kOneOfGroup, "", id);
    add(id, Expect::kOneOfGroup, id + "-key", id);
  }
  for (int i = 0; i < 10; ++i) {
    add(prefix + "keyed-" + std::to_string(i), Expect::kInserted,
        prefix + "key-" + std::to_string(i));
  }
  for (int i = 0; i < 3; ++i) {
    add(prefix + "retry-" + std::to_string(i), Expect::kExisting, "key-old")->existing_id =
        "keyed-old";
  }
  add(prefix + "shared-a", Expect::kOneKeyOfGroup, prefix + "key-shared", "shared");
  add(prefix + "shared-b", Expect::kOneKeyOfGroup, prefix + "key-shared", "shared");
  for (int i = 0; i < 4; ++i) add(prefix + "audit-" + std::to_string(i), Expect::kAuditOnly);
  if (with_failures) {
    add(prefix + "bad-name", Expect::kInvalidArgument)->workflow.name = "bad\xff\xfename";
    add(prefix + "bad-task", Expect::kInvalidArgument)->workflow.tasks[1].message = "bad\xff";
    add(prefix + "bad-pod", Expect::kInvalidArgument)->workflow.tasks[0].pod["x"] = "bad\xff";
    add(prefix + "after-bad", Expect::kInserted);
  }
  return writes;
}

TYPED_TEST(StoreContractTest, BatchedCreatesKeepEachOutcome) {
  using Expect = BatchWrite::Expect;
  Store& s = this->store();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        s.CreateWorkflow(MakeWorkflow("taken-" + std::to_string(i), "p", "u", "DONE", -1)).ok());
  }
  WorkflowRecord keyed_old = MakeWorkflow("keyed-old", "p", "u", "DONE", -1);
  keyed_old.idempotency_key = "key-old";
  ASSERT_TRUE(s.CreateWorkflow(keyed_old).ok());

  std::map<std::string, WorkflowRecord> stored = {{"keyed-old", keyed_old}};
  for (int i = 0; i < 3; ++i) {
    stored.emplace("taken-" + std::to_string(i),
                   MakeWorkflow("taken-" + std::to_string(i), "p", "u", "DONE", -1));
  }
  size_t audit_records = 0;
  // Round 0: every write is valid, so the batch commits in multi-row statements. Round 1: some
  // writes fail, so the batch is rerun one statement per write to find them.
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string prefix = "r" + std::to_string(round) + "-";
    std::vector<BatchWrite> writes = MixedBatch(prefix, round == 1);
    {
      // While inserts are blocked, the first write's batch waits and every other write queues;
      // they are then written together (up to 256 in one batch).
      auto block = this->backend_.BlockWorkflowInserts();
      std::latch started(static_cast<ptrdiff_t>(writes.size()));
      std::vector<std::thread> threads;
      for (BatchWrite& write : writes) {
        threads.emplace_back([&] {
          AuditRecord audit{0, "u", "test", "workflow submit", write.workflow.id, ""};
          started.count_down();
          if (write.expect == Expect::kAuditOnly) {
            Status status = s.AppendAudit(audit);
            write.result = status.ok() ? Result<WorkflowRecord>(WorkflowRecord{}) : status;
          } else {
            write.result = s.CreateWorkflowWithAudit(write.workflow, audit);
          }
        });
      }
      started.wait();
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      block.reset();
      for (auto& thread : threads) thread.join();
    }

    std::map<std::string, std::vector<const BatchWrite*>> groups;
    for (const BatchWrite& write : writes) {
      const std::string& id = write.workflow.id;
      SCOPED_TRACE(id + ": " + write.result.status().ToString());
      if (write.result.ok()) ++audit_records;
      switch (write.expect) {
        case Expect::kInserted:
          ASSERT_TRUE(write.result.ok());
          EXPECT_EQ(write.result->id, id);
          EXPECT_EQ(write.result->version, 1);
          stored.emplace(id, write.workflow);
          break;
        case Expect::kRefused:
          EXPECT_EQ(write.result.status().code(), StatusCode::kAlreadyExists);
          break;
        case Expect::kExisting:
          ASSERT_TRUE(write.result.ok());
          EXPECT_EQ(write.result->id, write.existing_id);
          EXPECT_EQ(write.result->submitted_ms, -1);
          break;
        case Expect::kOneOfGroup:
        case Expect::kOneKeyOfGroup:
          groups[write.group].push_back(&write);
          break;
        case Expect::kInvalidArgument:
          EXPECT_EQ(write.result.status().code(), StatusCode::kInvalidArgument);
          break;
        case Expect::kAuditOnly:
          EXPECT_TRUE(write.result.ok());
          break;
      }
    }
    for (const auto& [group, members] : groups) {
      SCOPED_TRACE("group " + group);
      const BatchWrite* winner = nullptr;
      for (const BatchWrite* write : members) {
        if (write->expect == Expect::kOneOfGroup) {
          if (write->result.ok()) {
            EXPECT_EQ(winner, nullptr) << "two writes of one id inserted";
            EXPECT_EQ(write->result->id, write->workflow.id);
            winner = write;
          } else {
            EXPECT_EQ(write->result.status().code(), StatusCode::kAlreadyExists);
          }
        } else {
          ASSERT_TRUE(write->result.ok()) << write->result.status().ToString();
          if (write->result->id == write->workflow.id) {
            EXPECT_EQ(winner, nullptr) << "two writes of one key inserted";
            winner = write;
          }
        }
      }
      ASSERT_NE(winner, nullptr);
      for (const BatchWrite* write : members) {
        if (write->result.ok()) {
          EXPECT_EQ(write->result->id, winner->workflow.id);
        }
      }
      stored.emplace(winner->workflow.id, winner->workflow);
    }

    // Every inserted workflow is stored once, as its winning write gave it, tasks in order.
    auto listed = s.ListWorkflows({.limit = 0});
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    ASSERT_EQ(listed->size(), stored.size());
    for (const WorkflowRecord& got : *listed) {
      SCOPED_TRACE(got.id);
      auto it = stored.find(got.id);
      ASSERT_NE(it, stored.end());
      const WorkflowRecord& want = it->second;
      EXPECT_EQ(got.name, want.name);
      EXPECT_EQ(got.submitted_ms, want.submitted_ms);
      EXPECT_EQ(got.idempotency_key, want.idempotency_key);
      EXPECT_EQ(got.version, 1);
      ASSERT_EQ(got.tasks.size(), want.tasks.size());
      for (size_t t = 0; t < want.tasks.size(); ++t) {
        EXPECT_EQ(got.tasks[t].name, want.tasks[t].name);
        EXPECT_EQ(got.tasks[t].message, want.tasks[t].message);
      }
    }
    // One audit record per successful write (an idempotent retry included), none for the rest.
    EXPECT_EQ(s.ListAudit(0)->size(), audit_records);
  }
}

TYPED_TEST(StoreContractTest, OneLeaseHolderAmongContenders) {
  constexpr int kThreads = 6;
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < kThreads; ++t) stores.push_back(this->Open());
  std::atomic<int> winners = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto got = stores[t]->TryAcquireLease("leader", "server-" + std::to_string(t), 1000, 5000);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      if (*got) ++winners;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(winners, 1);
}

TYPED_TEST(StoreContractTest, ReopenKeepsData) {
  this->Put("POOL", "a", {{"v", 1}});
  this->Put("POOL", "a", {{"v", 2}});
  ASSERT_TRUE(this->store().UpsertNodes({{"n1", NodeObject("n1", 8)}}, false).ok());
  ASSERT_TRUE(this->store().CreateWorkflow(MakeWorkflow("wf-1", "p", "u", "PENDING", 1)).ok());
  ASSERT_TRUE(*this->store().TryAcquireLease("leader", "A", 0, 100));
  ASSERT_EQ(*this->store().NextSequence("wf"), 1);
  this->store_.reset();

  this->store_ = this->Open();  // migrations find the schema current
  ASSERT_NE(this->store_, nullptr);
  Store& s = this->store();
  auto a = s.GetConfig("POOL", "a");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->revision, 2);
  EXPECT_EQ(a->body, ordered_json({{"v", 2}}));
  EXPECT_EQ(s.History("POOL", "a", 0)->size(), 2u);
  EXPECT_THAT(NodeNames(*s.ListNodes()), ElementsAre("n1"));
  EXPECT_EQ(s.GetWorkflow("wf-1")->tasks.size(), 2u);
  EXPECT_EQ(*s.TryAcquireLease("leader", "B", 50, 100), false);
  EXPECT_EQ(*s.NextSequence("wf"), 2);
  EXPECT_EQ(this->Put("POOL", "a", {{"v", 3}}), 3);
}

// ---- PostgreSQL only ----

#ifdef GPUPOOL_WITH_POSTGRES
TEST(PostgresStoreTest, ReconnectsAfterTheServerDropsTheConnection) {
  if (std::string reason = PostgresBackend::SkipReason(); !reason.empty()) GTEST_SKIP() << reason;
  PostgresBackend backend;
  const std::string app = "gpupool_reconnect_" + RandomSuffix();
  auto opened = OpenStore(backend.Url() + "&application_name=" + app);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Store& s = **opened;
  ConfigWrite write{.op = ConfigWrite::Op::kPut, .kind = "POOL", .name = "p", .body = {{"v", 1}}};
  ASSERT_TRUE(s.WriteConfigs({write}, Actor{"a", "t"}).ok());

  std::string error;
  ASSERT_TRUE(PgExec(PostgresBackend::BaseUrl(),
                     "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE application_name = '" +
                         app + "'",
                     &error))
      << error;
  // Both a read and a write succeed on a new connection (same schema: the URL is reused).
  auto got = s.GetConfig("POOL", "p");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->revision, 1);
  ASSERT_TRUE(PgExec(PostgresBackend::BaseUrl(),
                     "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE application_name = '" +
                         app + "'",
                     &error))
      << error;
  auto written = s.WriteConfigs({write}, Actor{"a", "t"});
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_THAT(*written, ElementsAre(2));
}
#endif

// ---- The driver surface: deferred statements (PostgreSQL pipelines them) ----

template <typename Backend>
class SqlConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string reason = Backend::SkipReason(); !reason.empty()) GTEST_SKIP() << reason;
    auto db = backend_.Connect();
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    ASSERT_TRUE(db_->Script("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)").ok());
  }

  Status Insert(int64_t id, std::string v) {
    return db_->Defer("INSERT INTO t (id, v) VALUES ($1, $2)", {id, std::move(v)});
  }
  // The rows of t, as "id=v", in id order (in a read transaction of its own).
  std::vector<std::string> Rows() {
    std::vector<std::string> out;
    EXPECT_TRUE(db_->Begin(false).ok());
    auto rows = db_->Query("SELECT id, v FROM t ORDER BY id", {});
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    if (rows.ok()) {
      for (const SqlRow& row : *rows) out.push_back(row.Text(0) + "=" + row.Text(1));
    }
    EXPECT_TRUE(db_->Commit().ok());
    return out;
  }

  Backend backend_;
  std::unique_ptr<SqlConnection> db_;
};
TYPED_TEST_SUITE(SqlConnectionTest, Backends, BackendNames);

TYPED_TEST(SqlConnectionTest, DeferredStatementsRunBeforeTheNextQueryInOrder) {
  SqlConnection& db = *this->db_;
  ASSERT_TRUE(db.Begin(true).ok());
  ASSERT_TRUE(this->Insert(1, "a").ok());
  ASSERT_TRUE(this->Insert(2, "b").ok());
  ASSERT_TRUE(db.Defer("UPDATE t SET v = $1 WHERE id = $2", {std::string("b2"), int64_t{2}}).ok());
  auto seen = db.Query("SELECT COUNT(*), MAX(v) FROM t", {});
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  EXPECT_EQ(seen->at(0).Int(0), 2);
  EXPECT_EQ(seen->at(0).Text(1), "b2");  // the UPDATE ran after both INSERTs
  ASSERT_TRUE(this->Insert(3, "c").ok());
  ASSERT_TRUE(db.Commit().ok());  // carries the last deferred INSERT
  EXPECT_THAT(this->Rows(), ElementsAre("1=a", "2=b2", "3=c"));
}

TYPED_TEST(SqlConnectionTest, ADeferredFailureFailsTheTransactionAndNamesItsStatement) {
  SqlConnection& db = *this->db_;
  ASSERT_TRUE(db.Begin(true).ok());
  ASSERT_TRUE(this->Insert(1, "kept").ok());
  ASSERT_TRUE(db.Commit().ok());
  // Where the failure surfaces: at the next Query, or at the Commit carrying it (SQLite: Defer).
  struct Case {
    std::string name;
    bool then_query;  // a Query follows the failing Defer
  };
  for (const Case& c : std::vector<Case>{{"at the commit", false}, {"at the next query", true}}) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(db.Begin(true).ok());
    Status failed = this->Insert(5, "lost");
    if (failed.ok()) failed = this->Insert(1, "taken");  // the id is taken
    if (failed.ok()) failed = this->Insert(6, "after");
    if (failed.ok() && c.then_query) failed = db.Query("SELECT COUNT(*) FROM t", {}).status();
    if (failed.ok()) failed = db.Commit();
    EXPECT_EQ(failed.code(), StatusCode::kAlreadyExists) << failed.ToString();
    EXPECT_NE(failed.message().find("INSERT INTO t"), std::string::npos) << failed.ToString();
    EXPECT_FALSE(db.LastFailure().transient);
    db.Rollback();
    EXPECT_THAT(this->Rows(), ElementsAre("1=kept"));  // nothing of it stayed; still usable
  }
}

TYPED_TEST(SqlConnectionTest, RollbackDropsWhatWasDeferred) {
  SqlConnection& db = *this->db_;
  ASSERT_TRUE(db.Begin(true).ok());
  ASSERT_TRUE(this->Insert(1, "a").ok());
  db.Rollback();
  ASSERT_TRUE(db.Begin(true).ok());
  ASSERT_TRUE(this->Insert(2, "b").ok());
  ASSERT_TRUE(db.Commit().ok());
  EXPECT_THAT(this->Rows(), ElementsAre("2=b"));
}

TYPED_TEST(SqlConnectionTest, ATransactionWithoutStatementsCommits) {
  SqlConnection& db = *this->db_;
  for (bool write : {true, false}) {
    ASSERT_TRUE(db.Begin(write).ok());
    EXPECT_TRUE(db.Commit().ok());
  }
  ASSERT_TRUE(db.Begin(false).ok());
  db.Rollback();
  EXPECT_TRUE(db.Ready().ok());
  EXPECT_TRUE(this->Rows().empty());
}

}  // namespace
}  // namespace gpupool::store
