// The store contract: PostgreSQL only (reconnects), and the driver surface (deferred statements).
// The fixture and the backends: store_contract_fixture.h.

#include "store/store_contract_fixture.h"

namespace gpupool::store::contract_test {
namespace store_contract_postgres_test {

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

}  // namespace store_contract_postgres_test
}  // namespace gpupool::store::contract_test
