// The `gpupool` binary on hostile text: bytes that are not UTF-8 already in the store (written
// by an older version or by hand), control and bidi characters in what tables show, arguments
// that are not UTF-8, and the default pool's deletion. Each test gets a fresh SQLite file.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/run_command.h"

namespace cli_hardening_test {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using ::testing::HasSubstr;

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class CliHardeningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpupool-hardening-XXXXXX";
    dir_ = mkdtemp(tmpl);
    db_ = dir_ / "gpupool.db";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Exit code and stdout; stderr goes to stdout after "--stderr--".
  gpupool::testing::Outcome Gpupool(const std::vector<std::string>& args) {
    std::string cmd = "cd " + ShellQuote(dir_.string()) +
                      " && GPUPOOL_DB=" + ShellQuote("sqlite:" + db_.string()) + " " +
                      ShellQuote(GPUPOOL_BIN);
    for (const auto& a : args) cmd += " " + ShellQuote(a);
    cmd += " 2>" + ShellQuote((dir_ / "stderr").string()) + "; code=$?; echo --stderr--; cat " +
           ShellQuote((dir_ / "stderr").string()) + "; exit $code";
    return gpupool::testing::RunCommand(cmd);
  }
  static std::string Out(const gpupool::testing::Outcome& r) {
    return r.out.substr(0, r.out.rfind("--stderr--\n"));
  }
  static std::string Err(const gpupool::testing::Outcome& r) {
    size_t at = r.out.rfind("--stderr--\n");
    return at == std::string::npos ? "" : r.out.substr(at + 11);
  }

  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }

  // SQL on the store's file behind the CLI's back.
  void WriteBehindTheStore(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(db_.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
  }

  fs::path dir_;
  fs::path db_;
};

// `gpupool config history -o json` aborted (nlohmann's type_error.316, uncaught) on a store
// holding a description that is not UTF-8. Every output format now shows such bytes replaced
// (JSON, YAML) or escaped (tables).
TEST_F(CliHardeningTest, HistoryOfAStoreHoldingBytesThatAreNotUtf8) {
  ASSERT_EQ(Gpupool({"config", "list"}).code, 0);  // creates the store with the built-ins
  WriteBehindTheStore(
      "UPDATE config_revisions SET description = CAST(X'6F6C64FFFE' AS TEXT) "
      "WHERE kind = 'POOL' AND name = 'default';");
  auto as_json = Gpupool({"config", "history", "-o", "json"});
  ASSERT_EQ(as_json.code, 0) << as_json.out;
  json history = json::parse(Out(as_json), nullptr, false);
  ASSERT_TRUE(history.is_array()) << as_json.out;
  bool found = false;
  for (const auto& entry : history) {
    if (entry["name"] == "default") {
      found = true;
      EXPECT_EQ(entry["description"], "old\xEF\xBF\xBD\xEF\xBF\xBD");
    }
  }
  EXPECT_TRUE(found);
  auto as_yaml = Gpupool({"config", "history", "-o", "yaml"});
  EXPECT_EQ(as_yaml.code, 0) << as_yaml.out;
  auto as_table = Gpupool({"config", "history"});
  ASSERT_EQ(as_table.code, 0) << as_table.out;
  EXPECT_THAT(Out(as_table), HasSubstr("old\\xff\\xfe"));
}

// Descriptions are shown in tables with their control and bidi characters escaped: ESC would
// start a terminal escape sequence, NUL cuts the line short, U+202E reverses what follows.
TEST_F(CliHardeningTest, TablesEscapeControlAndBidiCharacters) {
  Write("pool.json", R"({"name": "tricky", "backend": "default", "platforms": {"p": {}},
      "description": "a\u0000b\u001b[2Jc\u202ed\u2066e"})");
  ASSERT_EQ(Gpupool({"config", "update", "POOL", "tricky", "--file", "pool.json", "--description",
                     "note\x1b]0;title\x07 \xE2\x80\xAEreversed"})
                .code,
            0);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"pool", "list"}, {"config", "history", "POOL", "tricky"}}) {
    SCOPED_TRACE(args[0] + " " + args[1]);
    auto r = Gpupool(args);
    ASSERT_EQ(r.code, 0) << r.out;
    const std::string out = Out(r);
    EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
    EXPECT_EQ(out.find('\0'), std::string::npos) << out;
    EXPECT_EQ(out.find('\x07'), std::string::npos) << out;
    EXPECT_EQ(out.find("\xE2\x80\xAE"), std::string::npos) << out;
    if (args[0] == "pool") {
      EXPECT_THAT(out, HasSubstr("a\\x00b\\x1b[2Jc\\u202ed\\u2066e"));
    } else {
      EXPECT_THAT(out, HasSubstr("note\\x1b]0;title\\x07 \\u202ereversed"));
    }
  }
}

TEST_F(CliHardeningTest, ArgumentsThatAreNotUtf8AreRefused) {
  auto r = Gpupool({"config", "delete", "POOL", "x", "--description", "caf\xE9"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(Err(r), HasSubstr("argument 6 (\"caf\\xe9\") is not valid UTF-8 (byte 0xe9 at "
                                "column 4)"));
}

TEST_F(CliHardeningTest, TheDefaultPoolNeedsForceToDelete) {
  auto refused = Gpupool({"config", "delete", "POOL", "default"});
  EXPECT_EQ(refused.code, 1);
  EXPECT_THAT(Err(refused), HasSubstr("pool \"default\" is granted by name by role osmo-user"));
  EXPECT_EQ(Gpupool({"config", "show", "POOL", "default"}).code, 0);
  auto forced = Gpupool({"config", "delete", "POOL", "default", "--force"});
  EXPECT_EQ(forced.code, 0) << forced.out;
  EXPECT_THAT(Err(forced), HasSubstr("warning: pool \"default\" is granted by name"));
  EXPECT_EQ(Gpupool({"config", "show", "POOL", "default"}).code, 1);
}

}  // namespace cli_hardening_test
