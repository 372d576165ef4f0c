#include "backend/sim/sim_backend.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace gpupool::backend {
namespace sim_backend_test {

using Json = nlohmann::ordered_json;

Json MakeNode(const std::string& name) {
  return Json{{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}};
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("gpupool_sim_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text) const {
    auto file = path_ / name;
    std::ofstream(file) << text;
    return file.string();
  }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(SimBackendTest, TaskEndsAfterItsDurationWithItsExitCode) {
  SimBackend sim(std::vector<Json>{MakeNode("n1"), MakeNode("n2")});
  ASSERT_TRUE(sim.Launch({"wf/g/a/0", "n1", 1000, 500, 0}).ok());
  ASSERT_TRUE(sim.Launch({"wf/g/b/0", "n2", 1000, 200, 3}).ok());
  EXPECT_EQ(sim.RunningCount(), 2u);
  EXPECT_TRUE(sim.Poll(1199).empty());
  auto exits = sim.Poll(1200);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].key, "wf/g/b/0");
  EXPECT_EQ(exits[0].exit_code, 3);
  EXPECT_EQ(exits[0].finished_ms, 1200);
  EXPECT_TRUE(sim.Poll(1300).empty());  // reported once
  exits = sim.Poll(5000);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].key, "wf/g/a/0");
  EXPECT_EQ(exits[0].finished_ms, 1500);
  EXPECT_EQ(sim.RunningCount(), 0u);
}

TEST(SimBackendTest, PollOrdersByEndTime) {
  SimBackend sim(std::vector<Json>{MakeNode("n1")});
  ASSERT_TRUE(sim.Launch({"a", "n1", 0, 300, 0}).ok());
  ASSERT_TRUE(sim.Launch({"b", "n1", 0, 100, 0}).ok());
  ASSERT_TRUE(sim.Launch({"c", "n1", 0, 200, 0}).ok());
  auto exits = sim.Poll(1000);
  ASSERT_EQ(exits.size(), 3u);
  EXPECT_EQ(exits[0].key, "b");
  EXPECT_EQ(exits[1].key, "c");
  EXPECT_EQ(exits[2].key, "a");
}

TEST(SimBackendTest, LaunchIsIdempotentAndKillStopsTheTask) {
  SimBackend sim(std::vector<Json>{MakeNode("n1")});
  ASSERT_TRUE(sim.Launch({"a", "n1", 0, 100, 0}).ok());
  ASSERT_TRUE(sim.Launch({"a", "n1", 50, 100, 0}).ok());  // re-adopt: first record wins
  EXPECT_EQ(sim.RunningCount(), 1u);
  ASSERT_TRUE(sim.Kill("a").ok());
  ASSERT_TRUE(sim.Kill("never-started").ok());
  EXPECT_TRUE(sim.Poll(1000).empty());
}

TEST(SimBackendTest, RejectsUnknownNodeAndNegativeDuration) {
  SimBackend sim(std::vector<Json>{MakeNode("n1")});
  Status unknown = sim.Launch({"a", "n9", 0, 100, 0});
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("n9"), std::string::npos);
  EXPECT_EQ(sim.Launch({"a", "n1", 0, -1, 0}).code(), StatusCode::kInvalidArgument);
}

TEST(SimBackendTest, RunsOnNodesTheControlPlaneKnows) {
  SimBackend sim(std::vector<Json>{MakeNode("n1")});
  sim.SetKnownNodes({"launched-1"});  // e.g. a machine pool's new node
  EXPECT_TRUE(sim.Launch({"a", "launched-1", 0, 100, 0}).ok());
  EXPECT_TRUE(sim.Launch({"b", "n1", 0, 100, 0}).ok());  // the file's nodes stay
  sim.SetKnownNodes({});                                 // removed again
  EXPECT_EQ(sim.Launch({"c", "launched-1", 0, 100, 0}).code(), StatusCode::kInvalidArgument);
}

TEST(LoadClusterNodesTest, ReadsYamlJsonListsAndDirectories) {
  TempDir dir;
  dir.Write("a.yaml",
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: y1\n  labels:\n"
            "    gpu: \"8\"\nstatus:\n  allocatable:\n    nvidia.com/gpu: 8\n---\n"
            "kind: ConfigMap\nmetadata: {name: skipped}\n");
  dir.Write("b.json",
            R"({"kind": "NodeList", "items": [{"kind": "Node", "metadata": {"name": "j1"}},
                {"kind": "Node", "metadata": {"name": "j2"}}]})");
  dir.Write("ignored.txt", "not a manifest");
  auto nodes = LoadClusterNodes(dir.path());
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[0]["metadata"]["name"], "y1");
  EXPECT_EQ((*nodes)[0]["metadata"]["labels"]["gpu"], "8");  // quoted stays a string
  EXPECT_EQ((*nodes)[0]["status"]["allocatable"]["nvidia.com/gpu"], 8);
  EXPECT_EQ((*nodes)[2]["metadata"]["name"], "j2");
}

TEST(LoadClusterNodesTest, ErrorsNameTheFile) {
  TempDir dir;
  struct Case {
    std::string name;
    std::string file;
    std::string text;
    StatusCode code;
  };
  std::vector<Case> cases = {
      {"malformed json", "bad.json", "{\"kind\": ", StatusCode::kInvalidArgument},
      {"malformed yaml", "bad.yaml", "kind: [Node\n", StatusCode::kInvalidArgument},
      {"node without name", "anon.yaml", "kind: Node\nmetadata: {}\n",
       StatusCode::kInvalidArgument},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string path = dir.Write(c.file, c.text);
    auto nodes = LoadClusterNodes(path);
    ASSERT_FALSE(nodes.ok());
    EXPECT_EQ(nodes.status().code(), c.code);
    EXPECT_NE(nodes.status().message().find(c.file), std::string::npos) << nodes.status().message();
  }
  EXPECT_EQ(LoadClusterNodes(dir.path() + "/missing.yaml").status().code(), StatusCode::kNotFound);
}

TEST(LoadClusterNodesTest, YamlIsReadByTheModelParser) {
  TempDir dir;
  // Core-schema typing as in configs and workflows.
  std::string typed =
      dir.Write("t.yaml", "kind: Node\nmetadata: {name: n1}\nx: [0x10, TRUE, '7']\n");
  auto nodes = LoadClusterNodes(typed);
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  EXPECT_EQ((*nodes)[0]["x"], Json::parse(R"([16, true, "7"])"));
  // Errors name the file, line and column.
  std::string duplicate = dir.Write("dup.yaml", "kind: Node\nmetadata: {name: n1}\nkind: Node\n");
  EXPECT_EQ(LoadClusterNodes(duplicate).status().message(),
            duplicate + ":3:1: duplicate key \"kind\"");
  std::string broken = dir.Write("bad.yaml", "kind: [Node\n");
  EXPECT_EQ(LoadClusterNodes(broken).status().message().rfind(broken + ":2:1: malformed YAML", 0),
            0u)
      << LoadClusterNodes(broken).status().message();
}

TEST(OpenBackendTest, ParsesSpec) {
  TempDir dir;
  std::string file = dir.Write("c.yaml", "kind: Node\nmetadata: {name: n1}\n");
  auto backend = OpenBackend("sim:" + file);
  ASSERT_TRUE(backend.ok()) << backend.status().ToString();
  EXPECT_EQ((*backend)->Kind(), "sim");
  EXPECT_EQ((*backend)->ListNodes()->size(), 1u);
  EXPECT_EQ(OpenBackend("kubernetes:foo").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace sim_backend_test
}  // namespace gpupool::backend
