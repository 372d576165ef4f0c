// End-to-end tests, through the real `gpupool` binary offline and against `gpupool serve`, of
// the OSMO, Run:ai and ROSA designs used together: the quota tree checked on write (department
// -> project, node pools named by queues, one label per node pool, deleting what is still
// referenced) and a node matching two node pools; seed 004's machine-pool defaults, `machinepool
// list`, `queue list` and `resource list -l`; role globs without a leading slash and `profile`.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/run_command.h"

namespace together_e2e_test {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

constexpr char kNodes[] = R"(apiVersion: v1
kind: NodeList
items:
- apiVersion: v1
  kind: Node
  metadata: {name: a100-1, labels: {node-pool: a100-80, net: ib}}
  status: {allocatable: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}}
- apiVersion: v1
  kind: Node
  metadata: {name: l40s-1, labels: {node-pool: l40s}}
  status: {allocatable: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "4"}}
)";

// A refused write: the exact start of stderr (file:line:column: config: field path: what).
struct RefusedCase {
  std::string name;
  std::string file;
  std::string text;
  std::vector<std::string> args;
  std::string error;
};

std::vector<RefusedCase> RefusedCases() {
  return {
      {"unknown parent",
       "nlp.json",
       "{\n  \"parent\": \"rdn\"\n}\n",
       {"config", "update", "QUEUE", "nlp", "--file", "nlp.json"},
       "error: nlp.json:2:3: queue \"nlp\": parent: queue \"rdn\" does not exist (did you mean "
       "\"rnd\"?); a project's parent is a department (a queue without parent)\n"},
      {"a third level",
       "deep.json",
       "{\n  \"parent\": \"cv\"\n}\n",
       {"config", "update", "QUEUE", "deep", "--file", "deep.json"},
       "error: deep.json:2:3: queue \"deep\": parent: queue \"cv\" is a project (its parent is "
       "\"rnd\"); queues have two levels, department -> project\n"},
      {"unknown node pool",
       "ops.json",
       "{\n  \"resources\": {\n    \"a100-8\": {\"gpu\": {\"deserved\": 1}}\n  }\n}\n",
       {"config", "update", "QUEUE", "ops", "--file", "ops.json"},
       "error: ops.json:3:5: queue \"ops\": resources.a100-8: node pool \"a100-8\" does not exist "
       "(did you mean \"a100-80\"?)\n"},
      {"a pool's unknown default node pool",
       "p.json",
       "{\n  \"backend\": \"default\",\n  \"default_node_pools\": [\"a100-8\"]\n}\n",
       {"config", "update", "POOL", "p", "--file", "p.json"},
       "error: p.json:3:26: pool \"p\": default_node_pools[0]: node pool \"a100-8\" does not "
       "exist (did you mean \"a100-80\"?); node pools: a100-80, default, l40s\n"},
      {"a platform's unknown default node pool",
       "p.json",
       "{\"backend\": \"default\",\n \"platforms\": {\"x\": {\n  \"default_node_pools\": "
       "[\"default\", \"l4Os\"]}}}\n",
       {"config", "update", "POOL", "p", "--file", "p.json"},
       "error: p.json:3:37: pool \"p\": platforms.x.default_node_pools[1]: node pool \"l4Os\" "
       "does not exist (did you mean \"l40s\"?); node pools: a100-80, default, l40s\n"},
      {"a label that already selects a node pool",
       "big.json",
       "{\n  \"label_key\": \"node-pool\",\n  \"label_value\": \"l40s\"\n}\n",
       {"config", "update", "NODE_POOL", "big", "--file", "big.json"},
       "error: big.json:3:3: node pool \"big\": label_value: label node-pool=l40s also "
       "selects node pool \"l40s\"; each node pool needs its own label\n"},
  };
}

class TogetherTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpupool-quota-tree-XXXXXX";
    dir_ = mkdtemp(tmpl);
    if (GetParam()) StartServer();
  }
  void TearDown() override {
    if (!url_.empty()) {
      const std::string pid = std::to_string(std::stol(ReadAll(dir_ / "serve.pid")));
      const std::string stop = "kill " + pid + " && for i in $(seq 1 100); do kill -0 " + pid +
                               " 2>/dev/null || exit 0; sleep 0.05; done; exit 1";
      EXPECT_EQ(std::system(stop.c_str()), 0) << "gpupool serve did not stop";
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // `gpupool serve` on 127.0.0.1, port 0, on a simulated cluster of kNodes, with a short
  // scheduling step (its log is checked).
  void StartServer() {
    Write("cluster.yaml", kNodes);  // the simulated cluster's nodes
    const std::string start =
        "cd " + ShellQuote(dir_.string()) + " && (" + ShellQuote(GPUPOOL_BIN) +
        " serve --listen 127.0.0.1:0 --interval 50ms --backend sim:cluster.yaml --db " +
        ShellQuote("sqlite:" + (dir_ / "server.db").string()) +
        " --auth dev >serve.out 2>serve.err & echo $! >serve.pid)";
    ASSERT_EQ(std::system(start.c_str()), 0);
    const std::string marker = "listening on ";
    for (int i = 0; i < 200 && url_.empty(); ++i) {
      const std::string out = ReadAll(dir_ / "serve.out");
      const size_t at = out.find(marker);
      if (at == std::string::npos) {
        usleep(50 * 1000);
        continue;
      }
      const size_t begin = at + marker.size();
      url_ = out.substr(begin, out.find(' ', begin) - begin);
    }
    ASSERT_FALSE(url_.empty()) << ReadAll(dir_ / "serve.err");
  }

  // The binary offline (GPUPOOL_DB) or with --server and an administrator's token.
  Outcome Gpupool(const std::vector<std::string>& args) {
    std::string cmd = "cd " + ShellQuote(dir_.string()) + " && ";
    if (url_.empty()) {
      cmd += "GPUPOOL_DB=" + ShellQuote("sqlite:" + (dir_ / "cli.db").string()) + " " +
             ShellQuote(GPUPOOL_BIN);
    } else {
      cmd += "GPUPOOL_TOKEN=dev:erin:osmo-admin " + ShellQuote(GPUPOOL_BIN) + " --server " + url_;
    }
    for (const auto& a : args) cmd += " " + ShellQuote(a);
    cmd += " 2>" + ShellQuote((dir_ / "stderr").string());
    gpupool::testing::Outcome r = gpupool::testing::RunCommand(cmd);
    return {r.code, r.out, ReadAll(dir_ / "stderr")};
  }
  Outcome Ok(const std::vector<std::string>& args) {
    Outcome r = Gpupool(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.code, 0) << joined << "\nstdout: " << r.out << "\nstderr: " << r.err;
    return r;
  }
  std::string Write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  void Update(const std::string& kind, const std::string& name, const std::string& body) {
    Write(name + ".json", body);
    Ok({"config", "update", kind, name, "--file", name + ".json"});
  }

  // Node pools a100-80 and l40s, department rnd with project cv, and two nodes.
  void LoadTree() {
    if (url_.empty()) {  // the server has them from its simulated cluster
      Write("nodes.yaml", kNodes);
      Ok({"node", "import", "nodes.yaml"});
    }
    Update("NODE_POOL", "a100-80", R"({"label_key": "node-pool", "label_value": "a100-80"})");
    Update("NODE_POOL", "l40s", R"({"label_key": "node-pool", "label_value": "l40s"})");
    Update("QUEUE", "rnd", R"({"resources": {"a100-80": {"gpu": {"deserved": 8}}}})");
    Update("QUEUE", "cv",
           R"({"parent": "rnd", "resources": {"a100-80": {"gpu": {"deserved": 4}}}})");
  }

  fs::path dir_;
  std::string url_;
};

TEST_P(TogetherTest, RefusesABadTreeWithFileLineAndFieldAndWritesNothing) {
  LoadTree();
  for (const RefusedCase& c : RefusedCases()) {
    SCOPED_TRACE(c.name);
    const std::string history = Ok({"config", "history", "-o", "json"}).out;
    Write(c.file, c.text);
    Outcome r = Gpupool(c.args);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_EQ(r.err, c.error);
    EXPECT_EQ(Ok({"config", "history", "-o", "json"}).out, history);
  }
}

TEST_P(TogetherTest, WarnsWhenProjectsDeserveMoreThanTheirDepartment) {
  LoadTree();
  Write("nlp.json", R"({"parent": "rnd", "resources": {"a100-80": {"gpu": {"deserved": 6}}}})");
  Outcome r = Ok({"config", "update", "QUEUE", "nlp", "--file", "nlp.json"});
  EXPECT_EQ(r.out, "updated QUEUE nlp (revision 1)\n");
  EXPECT_EQ(r.err,
            "warning: queue \"rnd\": resources.a100-80.gpu.deserved: 8 is less than its projects "
            "deserve together (10); accepted, but their deserved quotas cannot all be met\n");
  Write("nlp.json", R"({"parent": "rnd", "resources": {"a100-80": {"gpu": {"deserved": 9}}}})");
  r = Ok({"config", "update", "QUEUE", "nlp", "--file", "nlp.json"});
  EXPECT_THAT(r.err, HasSubstr("warning: queue \"nlp\": resources.a100-80.gpu.deserved: 9 is more "
                               "than department \"rnd\" deserves (8); accepted"));
}

TEST_P(TogetherTest, DefaultNodePoolHasOneSpelling) {
  LoadTree();
  Update("QUEUE", "ops", R"({"resources": {"Default": {"gpu": {"deserved": 2}}}})");
  json shown = json::parse(Ok({"config", "show", "QUEUE", "ops", "-o", "json"}).out);
  EXPECT_TRUE(shown["body"]["resources"].contains("default")) << shown.dump();
  EXPECT_FALSE(shown["body"]["resources"].contains("Default")) << shown.dump();
  Write("np.json", R"({"label_key": "k", "label_value": "v"})");
  Outcome r = Gpupool({"config", "update", "NODE_POOL", "Default", "--file", "np.json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("\"Default\" is reserved for the nodes in no node pool"));
}

TEST_P(TogetherTest, DeletingWhatQueuesUseNeedsForce) {
  LoadTree();
  Outcome r = Gpupool({"config", "delete", "NODE_POOL", "a100-80"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("node pool \"a100-80\" holds quota of queues cv, rnd; change them "
                               "first, or pass --force to delete it anyway"));
  r = Gpupool({"config", "delete", "QUEUE", "rnd"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("department \"rnd\" has projects cv;"));
  // Unreferenced: no --force needed.
  EXPECT_EQ(Ok({"config", "delete", "NODE_POOL", "l40s"}).err, "");
  r = Ok({"config", "delete", "QUEUE", "rnd", "--force"});
  EXPECT_THAT(r.err, HasSubstr("warning: department \"rnd\" has projects cv: deleted anyway"));
  r = Ok({"config", "delete", "NODE_POOL", "a100-80", "--force"});
  EXPECT_THAT(r.err, HasSubstr("warning: node pool \"a100-80\" holds quota of queues cv: deleted "
                               "anyway (--force)"));
}

// A pool's default_node_pools (seed 003's `Default` kept as `default`) are its tasks' node pools
// when the workflow names none; a node pool they name is deleted only with --force.
TEST_P(TogetherTest, DefaultNodePoolsOfAPool) {
  LoadTree();
  Update("POOL", "p", R"({"backend": "default", "default_platform": "x",
      "default_node_pools": ["l40s", "Default"], "platforms": {"x": {}}})");
  json shown = json::parse(Ok({"config", "show", "POOL", "p", "-o", "json"}).out);
  EXPECT_EQ(shown["body"]["default_node_pools"], json::parse(R"(["l40s", "default"])"));
  Write("wf.yaml", "workflow:\n  name: w\n  tasks:\n  - {name: t, image: i}\n");
  json dry = json::parse(
      Ok({"workflow", "submit", "wf.yaml", "--pool", "p", "--dry-run", "-o", "json"}).out);
  EXPECT_EQ(dry["pods"][0]["metadata"]["labels"]["gpupool.io/node-pool"], "l40s,default");
  dry = json::parse(Ok({"workflow", "submit", "wf.yaml", "--pool", "p", "--node-pools", "a100-80",
                        "--dry-run", "-o", "json"})
                        .out);
  EXPECT_EQ(dry["pods"][0]["metadata"]["labels"]["gpupool.io/node-pool"], "a100-80");
  Outcome r = Gpupool({"config", "delete", "NODE_POOL", "l40s"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("node pool \"l40s\" is a default node pool of pools p; change "
                               "them first, or pass --force"));
}

TEST_P(TogetherTest, ANodeInTwoNodePoolsIsReported) {
  LoadTree();
  // Another label key: accepted, but node a100-1 carries both labels.
  Update("NODE_POOL", "fast", R"({"label_key": "net", "label_value": "ib"})");
  const std::string conflict =
      "node \"a100-1\" matches node pools a100-80, fast; it is scheduled in \"a100-80\" (the "
      "first by name); give it one node pool's label";
  Outcome table = Ok({"resource", "list"});
  EXPECT_THAT(table.out, HasSubstr("NODE POOL"));
  EXPECT_THAT(table.out, HasSubstr("a100-80,fast (conflict)"));
  EXPECT_EQ(table.err, "warning: " + conflict + "\n");
  json rows = json::parse(Ok({"resource", "list", "-o", "json"}).out);
  ASSERT_EQ(rows.size(), 2u) << rows.dump();
  for (const json& row : rows) {
    if (row["node"] == "a100-1") {
      EXPECT_EQ(row["node_pool"], "a100-80");
      EXPECT_EQ(row["node_pool_conflict"], conflict);
    } else {
      EXPECT_EQ(row["node_pools"], json::array({"l40s"}));
      EXPECT_EQ(row["node_pool_conflict"], "");
    }
  }
  if (url_.empty()) return;
  // The server's scheduling loop logs it (bounded wait: 10 s).
  std::string log;
  for (int i = 0; i < 200 && log.find(conflict) == std::string::npos; ++i) {
    usleep(50 * 1000);
    log = ReadAll(dir_ / "serve.err");
  }
  EXPECT_THAT(log, HasSubstr("gpupool serve: " + conflict));
}

// `resource list -l` takes what `oc get nodes -l` takes.
TEST_P(TogetherTest, ResourceListLabelSelector) {
  LoadTree();
  struct Case {
    std::string selector;
    std::vector<std::string> nodes;
  };
  const std::vector<Case> cases = {
      {"node-pool=a100-80", {"a100-1"}},
      {"node-pool==l40s", {"l40s-1"}},
      {"node-pool!=a100-80", {"l40s-1"}},
      {"node-pool in (a100-80, l40s)", {"a100-1", "l40s-1"}},
      {"node-pool notin (l40s)", {"a100-1"}},
      {"net", {"a100-1"}},
      {"!net", {"l40s-1"}},
      {"net=ib,node-pool=l40s", {}},
      {"", {"a100-1", "l40s-1"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.selector);
    json rows = json::parse(Ok({"resource", "list", "-l", c.selector, "-o", "json"}).out);
    std::vector<std::string> nodes;
    for (const json& row : rows) nodes.push_back(row["node"]);
    EXPECT_EQ(nodes, c.nodes);
  }
  Outcome bad = Gpupool({"resource", "list", "-l", "node-pool in (a100-80"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_THAT(bad.err, HasSubstr("error: -l/selector: "));
  EXPECT_EQ(bad.out, "");
}

// Seed 004's defaults for the fields a machine pool leaves out, shown by `machinepool list`.
TEST_P(TogetherTest, MachinePoolDefaultsAndList) {
  Update("MACHINE_POOL", "additional", R"({"description": "seed 004 defaults"})");
  Update("MACHINE_POOL", "ml-training", R"({"capacity_type": "spot"})");
  json shown = json::parse(Ok({"machinepool", "list", "-o", "json"}).out);
  ASSERT_EQ(shown["pools"].size(), 2u) << shown.dump();
  const json& additional = shown["pools"][0];
  EXPECT_EQ(additional["name"], "additional");
  EXPECT_EQ(additional["instance_type"], "m5.xlarge");
  EXPECT_EQ(additional["capacity_type"], "on_demand");
  EXPECT_EQ(additional["min"], 1);
  EXPECT_EQ(additional["max"], 5);
  EXPECT_TRUE(additional["status"].is_string());
  const json& spot = shown["pools"][1];
  EXPECT_EQ(spot["instance_type"], "g4dn.xlarge");
  EXPECT_EQ(spot["capacity_type"], "spot");
  EXPECT_EQ(spot["min"], 0);
  EXPECT_EQ(spot["max"], 3);
  Outcome table = Ok({"machinepool", "list"});
  for (const char* header : {"NAME", "INSTANCE TYPE", "CAPACITY TYPE", "REPLICAS", "PRICE/HOUR",
                             "COST SO FAR", "STATUS", "LAST SCALE EVENT"}) {
    EXPECT_THAT(table.out, HasSubstr(header));
  }
  EXPECT_THAT(table.out, HasSubstr("ml-training"));
  EXPECT_THAT(table.out, HasSubstr("g4dn.xlarge"));
  EXPECT_THAT(table.out, HasSubstr("0/0-3"));  // current/min-max
}

// Departments then their projects, per node pool, as Run:ai's projects table.
TEST_P(TogetherTest, QueueList) {
  LoadTree();
  json view = json::parse(Ok({"queue", "list", "-o", "json"}).out);
  std::vector<std::string> order;
  for (const json& row : view["rows"]) {
    order.push_back(row["queue"].get<std::string>() + "@" + row["node_pool"].get<std::string>());
    if (row["queue"] == "cv" && row["node_pool"] == "a100-80") {
      EXPECT_EQ(row["depth"], 1);
      EXPECT_EQ(row["deserved"], 4000);  // milli-GPUs
      EXPECT_EQ(row["limit"], -1);
      EXPECT_EQ(row["weight"], 1);
    }
  }
  EXPECT_THAT(order, ::testing::IsSupersetOf({"rnd@a100-80", "cv@a100-80"}));
  Outcome table = Ok({"queue", "list"});
  for (const char* header : {"QUEUE", "NODE POOL", "DESERVED", "LIMIT", "OVER-QUOTA WEIGHT",
                             "FAIR SHARE", "ALLOCATED", "ALLOCATION RATIO", "PENDING"}) {
    EXPECT_THAT(table.out, HasSubstr(header));
  }
  EXPECT_THAT(table.out, HasSubstr("\n  cv "));  // a project under its department
  EXPECT_EQ(Gpupool({"queue", "list", "--resource", "gpus"}).code, 1);
  if (url_.empty()) {
    EXPECT_THAT(table.err, HasSubstr("note: fair share and allocation come from a server's"));
    return;
  }
  // The server's loop computes fair shares (bounded wait: 10 s). Queues configured after its
  // last cycle are listed without one until its next cycle.
  auto all_shared = [](const json& v) {
    if (!v.value("leader", false)) return false;
    return std::all_of(v["rows"].begin(), v["rows"].end(),
                       [](const json& row) { return row["fair_share"].is_number(); });
  };
  for (int i = 0; i < 200 && !all_shared(view); ++i) {
    usleep(50 * 1000);
    view = json::parse(Ok({"queue", "list", "-o", "json"}).out);
  }
  ASSERT_TRUE(view.value("leader", false)) << view.dump();
  for (const json& row : view["rows"]) EXPECT_TRUE(row["fair_share"].is_number()) << row.dump();
}

// Seed 000's glob without a leading slash works; `profile` says who you are and where you may
// submit.
TEST_P(TogetherTest, RoleGlobWithoutSlashAndProfile) {
  Update("ROLE", "osmo-shared", R"({"description": "shared pools", "actions": [
      {"base": "http", "path": "api/pool/shared*", "method": "post"},
      {"base": "http", "path": "api/queue/rnd-*/workflow", "method": "post"}]})");
  // Projects alice's role grants (rnd-1, rnd-2), one it does not (ops-1), a department (rnd).
  Update("QUEUE", "rnd", R"({"resources": {"default": {"gpu": {"deserved": 4}}}})");
  for (const char* project : {"rnd-1", "rnd-2"}) {
    Update("QUEUE", project, R"({"parent": "rnd"})");
  }
  Update("QUEUE", "ops", R"({"description": "operations"})");
  Update("QUEUE", "ops-1", R"({"parent": "ops"})");
  json role = json::parse(Ok({"config", "show", "ROLE", "osmo-shared", "-o", "json"}).out);
  EXPECT_EQ(role["body"]["actions"][0]["path"], "/api/pool/shared*");
  Update("POOL", "shared_a", R"({"backend": "default", "platforms": {"default": {}}})");
  json profile;
  if (url_.empty()) {
    profile =
        json::parse(Ok({"profile", "-o", "json", "--user", "alice", "--roles", "osmo-shared"}).out);
  } else {
    const std::string cmd = "cd " + ShellQuote(dir_.string()) +
                            " && GPUPOOL_TOKEN=dev:alice:osmo-shared " + ShellQuote(GPUPOOL_BIN) +
                            " --server " + url_ + " profile -o json";
    gpupool::testing::Outcome r = gpupool::testing::RunCommand(cmd);
    ASSERT_EQ(r.code, 0) << r.out;
    profile = json::parse(r.out);
  }
  EXPECT_EQ(profile["user"], "alice");
  EXPECT_EQ(profile["roles"], json::array({"osmo-shared"}));
  EXPECT_EQ(profile["pools"], json::array({"shared_a"}));
  EXPECT_EQ(profile["default_pool"], "shared_a");  // the only pool alice may use
  EXPECT_EQ(profile["queues"], json::array({"rnd-1", "rnd-2"}));
  Outcome admin = Ok({"profile"});
  EXPECT_THAT(admin.out, HasSubstr("DEFAULT POOL"));
  EXPECT_THAT(admin.out, HasSubstr("ops-1,rnd-1,rnd-2"));  // an administrator may use every project
}

INSTANTIATE_TEST_SUITE_P(OfflineAndServer, TogetherTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Server" : "Offline";
                         });

}  // namespace together_e2e_test
