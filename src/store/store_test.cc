// Backend-independent parts of the store: URL handling, status classification, migrations.

#include "store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <set>

#include "store/migrations.h"

namespace gpupool::store {
namespace store_test {

class TempDir {
 public:
  TempDir() {
    path_ =
        std::filesystem::temp_directory_path() /
        ("gpupool_store_unit_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

TEST(OpenStoreTest, Urls) {
  TempDir dir;
  struct Case {
    std::string name;
    std::string url;
    StatusCode code;
    std::string created_file;  // relative to dir, when the open should create it
  };
  const std::vector<Case> cases = {
      {"empty", "", StatusCode::kInvalidArgument, ""},
      {"unknown scheme", "mysql://localhost/db", StatusCode::kInvalidArgument, ""},
      {"sqlite without path", "sqlite:", StatusCode::kInvalidArgument, ""},
      {"memory", ":memory:", StatusCode::kOk, ""},
      {"sqlite memory", "sqlite::memory:", StatusCode::kOk, ""},
      {"plain path, parent created", (dir.path() / "a" / "b" / "plain.db").string(),
       StatusCode::kOk, "a/b/plain.db"},
      {"sqlite: prefix", "sqlite:" + (dir.path() / "prefixed.db").string(), StatusCode::kOk,
       "prefixed.db"},
      {"sqlite:// prefix", "sqlite://" + (dir.path() / "slashes.db").string(), StatusCode::kOk,
       "slashes.db"},
      {"unreachable postgresql", "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2",
       StatusCode::kUnavailable, ""},
      {"unreachable postgres", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2",
       StatusCode::kUnavailable, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto store = OpenStore(c.url);
    EXPECT_EQ(store.status().code(), c.code) << store.status().ToString();
    if (store.ok()) {
      EXPECT_EQ((*store)->Backend(), "sqlite");
    }
    if (!c.created_file.empty()) {
      EXPECT_TRUE(std::filesystem::exists(dir.path() / c.created_file));
    }
  }
}

TEST(OpenStoreTest, MemoryStoresArePrivate) {
  auto a = OpenStore(":memory:");
  auto b = OpenStore(":memory:");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->UpsertNodes({{"n1", {{"kind", "Node"}}}}, false).ok());
  EXPECT_EQ((*a)->ListNodes()->size(), 1u);
  EXPECT_EQ((*b)->ListNodes()->size(), 0u);
}

TEST(MigrationsTest, VersionsIncreaseAndBackendsAgree) {
  for (const auto* list : {&SqliteMigrations(), &PostgresMigrations()}) {
    ASSERT_FALSE(list->empty());
    int previous = 0;
    for (const Migration& m : *list) {
      EXPECT_GT(m.version, previous) << m.name;
      EXPECT_FALSE(m.sql.empty()) << m.name;
      previous = m.version;
    }
  }
  ASSERT_EQ(SqliteMigrations().size(), PostgresMigrations().size());
  for (size_t i = 0; i < SqliteMigrations().size(); ++i) {
    EXPECT_EQ(SqliteMigrations()[i].version, PostgresMigrations()[i].version);
    EXPECT_EQ(SqliteMigrations()[i].name, PostgresMigrations()[i].name);
  }
}

std::set<int64_t> AppliedVersions(const std::string& path) {
  std::set<int64_t> versions;
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, "SELECT version FROM schema_migrations", -1, &stmt, nullptr);
  while (stmt != nullptr && sqlite3_step(stmt) == SQLITE_ROW) {
    versions.insert(sqlite3_column_int64(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return versions;
}

TEST(MigrationsTest, RecordedOnceAndNewerSchemaRefused) {
  TempDir dir;
  std::string path = (dir.path() / "m.db").string();
  std::set<int64_t> all;
  for (const Migration& m : SqliteMigrations()) all.insert(m.version);
  ASSERT_TRUE(OpenStore(path).ok());
  EXPECT_EQ(AppliedVersions(path), all);
  ASSERT_TRUE(OpenStore(path).ok());  // second open applies nothing new and does not fail
  EXPECT_EQ(AppliedVersions(path), all);

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "INSERT INTO schema_migrations (version, name, applied_at_ms) "
                         "VALUES (9999, 'from_the_future', 0)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto store = OpenStore(path);
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition) << store.status().ToString();
}

TEST(MigrationsTest, UpgradesAnOlderSchema) {
  TempDir dir;
  std::string path = (dir.path() / "v1.db").string();
  // A database as the first release left it: migration 1 only, with three config revisions.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string v1(SqliteMigrations().at(0).sql);
  v1 +=
      ";CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, "
      "applied_at_ms BIGINT NOT NULL);"
      "INSERT INTO schema_migrations VALUES (1, 'initial', 0);"
      "INSERT INTO configs VALUES ('POOL', 'p', '{\"b\":1,\"a\":2}', 3, 'old', 7);"
      "INSERT INTO config_heads VALUES ('POOL', 'p', 3);";
  for (int r = 1; r <= 3; ++r) {
    v1 +=
        "INSERT INTO config_revisions (kind, name, revision, action, author, source, "
        "created_at_ms, description, body) VALUES ('POOL', 'p', " +
        std::to_string(r) + ", 'update', 'old', 'cli', 7, '', '{}');";
  }
  char* error = nullptr;
  ASSERT_EQ(sqlite3_exec(db, v1.c_str(), nullptr, nullptr, &error), SQLITE_OK) << error;
  sqlite3_close(db);

  auto store = OpenStore(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::set<int64_t> all;
  for (const Migration& m : SqliteMigrations()) all.insert(m.version);
  EXPECT_EQ(AppliedVersions(path), all);
  auto p = (*store)->GetConfig("POOL", "p");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->body.dump(), R"({"b":1,"a":2})");
  EXPECT_EQ(*(*store)->ConfigGeneration(), 3);  // seeded from the existing history
  ConfigWrite write{.kind = "POOL", .name = "p", .body = {{"c", 3}}, .expected_revision = 3};
  auto written = (*store)->WriteConfigs({write}, Actor{"new", "cli"});
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written->at(0), 4);
  EXPECT_EQ(*(*store)->ConfigGeneration(), 4);
}

TEST(OpenStoreTest, CorruptFileIsUnavailable) {
  TempDir dir;
  std::string path = (dir.path() / "junk.db").string();
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("this is not a database, just some text long enough to have a header......", f);
    std::fclose(f);
  }
  auto store = OpenStore(path);
  EXPECT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kUnavailable) << store.status().ToString();
}

}  // namespace store_test
}  // namespace gpupool::store
