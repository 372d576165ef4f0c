// Hostile input to the real `gpupool` binary, offline: every command that reads a file refuses
// documents nested too deep and files over the input limit with one clear error (exit code 1,
// nothing on stdout) and writes nothing. Each test gets a fresh directory and SQLite file.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace bad_input_test {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string Repeat(std::string_view piece, int n) {
  std::string out;
  out.reserve(piece.size() * n);
  for (int i = 0; i < n; ++i) out += piece;
  return out;
}

// The commands that read a file given as their last argument.
std::vector<std::vector<std::string>> FileCommands() {
  return {{"config", "update", "POOL", "--file"},
          {"config", "update", "POD_TEMPLATE", "--file"},
          {"apply", "-f"},
          {"node", "import"},
          {"workflow", "submit", "--pool", "default"},
          {"workflow", "submit", "--pool", "default", "--dry-run"},
          {"schedule", "-f"}};
}

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpupool-bad-input-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  Outcome Gpupool(const std::vector<std::string>& args, const std::string& env = "") {
    std::string cmd = "cd " + ShellQuote(dir_.string()) +
                      " && GPUPOOL_DB=" + ShellQuote("sqlite:" + (dir_ / "gpupool.db").string()) +
                      " " + env + " " + ShellQuote(GPUPOOL_BIN);
    for (const auto& a : args) cmd += " " + ShellQuote(a);
    cmd += " >" + ShellQuote((dir_ / "stdout").string()) + " 2>" +
           ShellQuote((dir_ / "stderr").string());
    const int status = std::system(cmd.c_str());
    Outcome r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;  // -1: killed (a crash)
    r.out = ReadAll(dir_ / "stdout");
    r.err = ReadAll(dir_ / "stderr");
    return r;
  }

  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }

  // Everything the store holds that a command could have written.
  std::string StoreState() {
    std::string state;
    for (const std::vector<std::string>& read :
         {std::vector<std::string>{"config", "history", "-o", "json"},
          {"resource", "list", "-o", "json"},
          {"workflow", "list", "-o", "json"}}) {
      Outcome r = Gpupool(read);
      EXPECT_EQ(r.code, 0) << r.err;
      state += r.out;
    }
    return state;
  }

  // Each file command on `file`: exit code 1, exactly `error` on stderr, nothing on stdout, and
  // the store as it was.
  // `config update` reads JSON only: a YAML file is its syntax error, not this one.
  void ExpectEveryCommandRefuses(const std::string& file, const std::string& error,
                                 bool yaml = false) {
    const std::string before = StoreState();
    for (std::vector<std::string> args : FileCommands()) {
      if (yaml && args[0] == "config") continue;
      args.insert(args[0] == "workflow" ? args.begin() + 2 : args.end(), file);
      std::string joined;
      for (const auto& a : args) joined += a + " ";
      SCOPED_TRACE(joined);
      Outcome r = Gpupool(args);
      EXPECT_EQ(r.code, 1);
      EXPECT_EQ(r.err, error);
      EXPECT_EQ(r.out, "");
    }
    EXPECT_EQ(StoreState(), before);
  }

  fs::path dir_;
};

TEST_F(BadInputTest, DocumentsNestedTooDeepAreRefusedByEveryCommand) {
  const std::string too_deep = "nested deeper than 512 levels of arrays and objects\n";
  struct Case {
    std::string name;
    std::string file;
    std::string text;
    std::string error;
  };
  const Case cases[] = {
      // 100,000 levels in 200 KB: once a stack overflow (exit 139) in each of these commands.
      {"JSON array", "deep.json", Repeat("[", 100000) + Repeat("]", 100000),
       "error: deep.json:1:513: " + too_deep},
      {"JSON config body", "pool.json",
       "{\"name\": \"p\",\n \"backend\": " + Repeat("[", 100000) + Repeat("]", 100000) + "}",
       "error: pool.json:2:524: " + too_deep},
      // A pod template 20,000 deep was stored, after which config show and dry runs crashed.
      {"pod template", "template.json",
       "{\"t\": {\"spec\": " + Repeat("{\"a\": ", 20000) + "1" + Repeat("}", 20000) + "}}",
       "error: template.json:1:3076: " + too_deep},
      {"YAML", "deep.yaml", Repeat("- ", 100000) + "x\n", "error: deep.yaml:1:1025: " + too_deep},
      // Flow collections: libyaml's work per token grows with the open levels, so reading on
      // past the bound took minutes.
      {"YAML flow", "flow.yaml", "a: " + Repeat("{b: ", 100000) + "c" + Repeat("}", 100000) + "\n",
       "error: flow.yaml:1:2048: " + too_deep},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Write(c.file, c.text);
    ExpectEveryCommandRefuses(c.file, c.error, c.file.ends_with(".yaml"));
  }
}

TEST_F(BadInputTest, FilesOverTheInputLimitAreRefusedByEveryCommand) {
  // Blanks read as an empty document, so only the limit can refuse the file.
  Write("big.json", std::string((size_t{8} << 20) + 1, ' '));
  const std::string limit =
      "error: big.json: the file is 8.0 MiB (8388609 bytes), over the input limit of 8 MiB "
      "(8388608 bytes) (set GPUPOOL_MAX_INPUT_BYTES to read larger files)\n";
  ExpectEveryCommandRefuses("big.json", limit);
  // The variable sets another limit: a larger one lets the file through to its own error.
  Outcome raised =
      Gpupool({"config", "update", "POOL", "--file", "big.json"}, "GPUPOOL_MAX_INPUT_BYTES=9Mi");
  EXPECT_EQ(raised.code, 1);
  EXPECT_EQ(raised.err.find("input limit"), std::string::npos) << raised.err;
  Write("small.yaml", "apiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: q}\n");
  Outcome lowered = Gpupool({"apply", "-f", "small.yaml"}, "GPUPOOL_MAX_INPUT_BYTES=16");
  EXPECT_EQ(lowered.code, 1);
  EXPECT_EQ(lowered.err,
            "error: small.yaml: the file is 58 bytes, over the input limit of 16 bytes (set "
            "GPUPOOL_MAX_INPUT_BYTES to read larger files)\n");
}

}  // namespace bad_input_test
