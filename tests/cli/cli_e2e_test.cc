// End-to-end tests of the `gpupool` binary: the seeds' commands as written, dry-run submissions
// per platform, every submission error, exit codes, atomic multi-pool updates, history and
// rollback. Each test gets a fresh directory and SQLite file (GPUPOOL_DB).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace cli_e2e_test {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kSource = GPUPOOL_SOURCE_DIR;
const std::string kFixtures = kSource + "/tests/cli/fixtures";

struct Outcome {
  int code = -1;
  std::string out;
  std::string err;
};

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// `gpupool apply -f ARG` over files that hold an error, in the last document of the last file.
struct ApplyErrorCase {
  std::string name;
  std::vector<std::pair<std::string, std::string>> files;  // path under the test dir, text
  std::string arg;
  std::string error;  // the exact start of stderr
};

// Every case starts with valid configs and nodes, which must not be written either.
std::vector<ApplyErrorCase> ApplyErrorCases() {
  const std::string queue_p =
      "apiVersion: gpupool.io/v1\nkind: Queue\nmetadata:\n  name: p\n"
      "spec:\n  priority: 1\n";
  const std::string node_ok =
      "apiVersion: v1\nkind: Node\nmetadata: {name: ok}\n"
      "status: {allocatable: {cpu: \"4\"}}\n";
  return {
      {"single file, second document",
       {{"pools.yaml", queue_p + "---\napiVersion: gpupool.io/v1\nkind: Queue\nmetadata:\n"
                                 "  name: q\nspec:\n  resourcez: {}\n"}},
       "pools.yaml",
       "error: pools.yaml:13:3: Queue q: spec.resourcez: unknown field (did you mean "
       "\"resources\"?); expected one of parent, priority, description, resources\n"},
      {"directory, error in the second file",
       {{"manifests/a.yaml", node_ok + "---\n" + queue_p},
        {"manifests/b.yaml",
         "apiVersion: gpupool.io/v1\nkind: Pool\nmetadata: {name: inference}\nspec:\n"
         "  backend: default\n  platforms:\n    t4:\n      descriptionz: T4\n"}},
       "manifests/",
       "error: manifests/b.yaml:8:7: Pool inference: spec.platforms.t4.descriptionz: unknown "
       "field (did you mean \"description\"?)\n"},
      {"JSON manifest, a reference to a missing template",
       {{"pool.json",
         "{\n  \"apiVersion\": \"gpupool.io/v1\",\n  \"kind\": \"Pool\",\n"
         "  \"metadata\": {\"name\": \"inference\"},\n  \"spec\": {\n"
         "    \"backend\": \"default\",\n"
         "    \"common_pod_template\": [\"default_user\", \"defualt_ctrl\"]\n  }\n}\n"}},
       "pool.json",
       "error: pool.json:7:45: Pool inference: spec.common_pod_template[1]: pod template "
       "\"defualt_ctrl\" does not exist (did you mean \"default_ctrl\"?)\n"},
      {"Node with a bad quantity, after a NodeList",
       {{"nodes.yaml", queue_p + "---\napiVersion: v1\nkind: NodeList\nitems:\n- " +
                           "apiVersion: v1\n  kind: Node\n  metadata: {name: ok}\n---\n" +
                           "apiVersion: v1\nkind: Node\nmetadata: {name: bad}\nstatus:\n"
                           "  allocatable: {cpu: 12x}\n"}},
       "nodes.yaml",
       "error: nodes.yaml:19:17: Node bad: status.allocatable.cpu: invalid quantity \"12x\""},
      {"Node with a negative quantity",
       {{"nodes.yaml", node_ok + "---\napiVersion: v1\nkind: Node\nmetadata: {name: bad}\n"
                                 "status:\n  allocatable: {nvidia.com/gpu: \"-8\"}\n"}},
       "nodes.yaml",
       "error: nodes.yaml:10:17: Node bad: status.allocatable.nvidia.com/gpu: must not be "
       "negative, got \"-8\"\n"},
      // Once "changed concurrently; retry", which no retry could ever cure.
      {"the same object twice in one file",
       {{"pools.yaml", queue_p + "---\n" + queue_p}},
       "pools.yaml",
       "error: pools.yaml:11:3: Queue p: metadata.name: also defined at pools.yaml:4:3; an apply "
       "defines each object once\n"},
      {"the same object in two files",
       {{"manifests/a.yaml", queue_p}, {"manifests/b.yaml", node_ok + "---\n" + queue_p}},
       "manifests/",
       "error: manifests/b.yaml:9:3: Queue p: metadata.name: also defined at "
       "manifests/a.yaml:4:3; an apply defines each object once\n"},
      {"a node twice, once in a NodeList",
       {{"nodes.yaml", node_ok + "---\napiVersion: v1\nkind: NodeList\nitems:\n- apiVersion: "
                                 "v1\n  kind: Node\n  metadata: {name: ok}\n"}},
       "nodes.yaml",
       "error: nodes.yaml:11:14: Node ok: metadata.name: also defined at nodes.yaml:3:12; an "
       "apply defines each object once\n"},
      {"queues whose parents form a cycle",
       {{"queues.yaml",
         "apiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: a}\nspec: {parent: b}\n---\n"
         "apiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: b}\nspec: {parent: c}\n---\n"
         "apiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: c}\nspec: {parent: a}\n"}},
       "queues.yaml",
       "error: queues.yaml:4:8: Queue a: spec.parent: queues must form a tree, not a cycle: a -> "
       "b -> c -> a\n"},
  };
}

// `gpupool config update|set ...` of a file that holds an error: the exact error, whose line and
// column are the field's in the file.
struct ConfigErrorCase {
  std::string name;
  std::string file;  // written under the test dir; the args name it as given
  std::string text;
  std::vector<std::string> args;
  std::string error;  // all of stderr
};

std::vector<ConfigErrorCase> ConfigErrorCases() {
  return {
      {"unknown field, object form",
       "pool.json",
       "{\n"
       "  \"name\": \"p\",\n"
       "  \"backend\": \"default\",\n"
       "  \"platforms\": {\n"
       "    \"a\": {\n"
       "      \"description\": \"A\",\n"
       "      \"descripton\": \"x\"\n"
       "    }\n"
       "  }\n"
       "}\n",
       {"config", "update", "POOL", "p", "--file", "pool.json"},
       "error: pool.json:7:7: pool \"p\": platforms.a.descripton: unknown field (did you mean "
       "\"description\"?)\n"},
      {"unknown field, map form, the second of two configs (the first is not written)",
       "pools.json",
       "{\n"
       "  \"first\": {\"backend\": \"default\", \"platforms\": {\"a\": {}}},\n"
       "  \"second\": {\n"
       "    \"backend\": \"default\",\n"
       "    \"platfroms\": {\"a\": {}}\n"
       "  }\n"
       "}\n",
       {"config", "update", "POOL", "--file", "pools.json"},
       "error: pools.json:5:5: pool \"second\": platfroms: unknown field (did you mean "
       "\"platforms\"?)\n"},
      {"a pod template that does not exist, map form",
       "pools.json",
       "{\n"
       "  \"first\": {\"backend\": \"default\", \"platforms\": {\"a\": {}}},\n"
       "  \"second\": {\n"
       "    \"backend\": \"default\",\n"
       "    \"platforms\": {\n"
       "      \"a\": {\"override_pod_template\": [\"default_user\", \"nope\"]}\n"
       "    }\n"
       "  }\n"
       "}\n",
       {"config", "update", "POOL", "--file", "pools.json"},
       "error: pools.json:6:55: pool \"second\": platforms.a.override_pod_template[1]: pod "
       "template \"nope\" does not exist\n"},
      {"a wrong type",
       "pool.json",
       "{\"name\": \"p\", \"backend\": \"default\",\n"
       " \"enable_maintenance\": \"yes\"}\n",
       {"config", "update", "POOL", "--file", "pool.json"},
       "error: pool.json:2:2: pool \"p\": enable_maintenance: expected a boolean (true or false), "
       "got string \"yes\"\n"},
      {"a pod template's wrong type",
       "template.json",
       "{\"t\": {\n"
       "  \"spec\": {\"nodeSelector\": 3}\n"
       "}}\n",
       {"config", "update", "POD_TEMPLATE", "--file", "template.json"},
       "error: template.json:2:12: pod template \"t\": spec.nodeSelector: expected an object, got "
       "number 3\n"},
      {"a resource validation rule",
       "validations.json",
       "{\n"
       "  \"v\": [\n"
       "    {\"operator\": \"LE\", \"left_operand\": \"USER_CPU\", \"right_operand\": \"K8_CPU\",\n"
       "     \"assert_message\": \"too many CPUs\"},\n"
       "    {\"operator\": \"LTE\", \"left_operand\": \"USER_GPU\", \"right_operand\": "
       "\"K8_GPU\",\n"
       "     \"assert_message\": \"too many GPUs\"}\n"
       "  ]\n"
       "}\n",
       {"config", "update", "RESOURCE_VALIDATION", "--file", "validations.json"},
       "error: validations.json:5:6: resource validation \"v\": [1].operator: unknown operator "
       "\"LTE\"; expected one of GT, GE, LT, LE, EQ, NE (did you mean \"LT\"?)\n"},
      {"a role's action (config set)",
       "role.json",
       "{\n"
       "  \"description\": \"Team\",\n"
       "  \"policies\": [\n"
       "    {\"actions\": [\"workflow:Create\", \"GET /api/pool\"], \"resources\": [\"*\"]}\n"
       "  ]\n"
       "}\n",
       {"config", "set", "ROLE", "osmo-team", "-f", "role.json"},
       "error: role.json:4:37: role \"osmo-team\": policies[0].actions[1]: action \"GET "
       "/api/pool\" must look like \"workflow:Create\", \"pool:*\" or \"*:*\"\n"},
      {"queues whose parents form a cycle (map form)",
       "queues.json",
       "{\n"
       "  \"a\": {\"parent\": \"b\"},\n"
       "  \"b\": {\"parent\": \"a\"}\n"
       "}\n",
       {"config", "update", "QUEUE", "--file", "queues.json"},
       "error: queues.json:2:9: queue \"a\": parent: queues must form a tree, not a cycle: a -> b "
       "-> a\n"},
      {"a number out of range",
       "pool.json",
       "{\"name\": \"p\", \"backend\": \"default\",\n \"default_exec_timeout\": 1e400}\n",
       {"config", "update", "POOL", "--file", "pool.json"},
       "error: pool.json:2:26: number out of range (larger than a 64-bit floating-point number "
       "can hold)\n"},
  };
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpupool-e2e-XXXXXX";
    dir_ = mkdtemp(tmpl);
    db_ = dir_ / "gpupool.db";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  Outcome Gpupool(const std::vector<std::string>& args) {
    std::string cmd = "cd " + ShellQuote(dir_.string()) +
                      " && GPUPOOL_DB=" + ShellQuote("sqlite:" + db_.string()) + " " +
                      ShellQuote(GPUPOOL_BIN);
    for (const auto& a : args) cmd += " " + ShellQuote(a);
    cmd += " >" + ShellQuote((dir_ / "stdout").string()) + " 2>" +
           ShellQuote((dir_ / "stderr").string());
    int status = std::system(cmd.c_str());
    Outcome r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = ReadAll(dir_ / "stdout");
    r.err = ReadAll(dir_ / "stderr");
    return r;
  }

  // Runs and expects exit code 0.
  Outcome Ok(const std::vector<std::string>& args) {
    Outcome r = Gpupool(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.code, 0) << "gpupool " << joined << "\nstdout: " << r.out << "\nstderr: " << r.err;
    return r;
  }

  std::string Write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }

  std::string CopyFixture(const std::string& rel, const std::string& as) {
    return Write(as, ReadAll(kFixtures + "/" + rel));
  }

  using Run = std::function<Outcome(const std::vector<std::string>&)>;

  // Applies the case with `run` (offline or --server): exit code 1, the error names the file,
  // the line and column of the field, the manifest and the field path, and nothing was written
  // (no config revision, no node).
  void ExpectApplyRefused(const ApplyErrorCase& c, const Run& run) {
    SCOPED_TRACE(c.name);
    const std::string history_before = run({"config", "history", "-o", "json"}).out;
    for (const auto& [path, text] : c.files) Write(path, text);
    Outcome r = run({"apply", "-f", c.arg});
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_EQ(r.err.substr(0, c.error.size()), c.error);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(run({"config", "history", "-o", "json"}).out, history_before);
    EXPECT_EQ(json::parse(run({"resource", "list", "-o", "json"}).out), json::array());
    for (const auto& file : c.files) fs::remove(dir_ / file.first);
  }

  // Runs the case with `run` (offline or --server): exit code 1, the exact error, and nothing was
  // written (no config revision).
  void ExpectConfigRefused(const ConfigErrorCase& c, const Run& run) {
    SCOPED_TRACE(c.name);
    const std::string history_before = run({"config", "history", "-o", "json"}).out;
    Write(c.file, c.text);
    Outcome r = run(c.args);
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_EQ(r.err, c.error);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(run({"config", "history", "-o", "json"}).out, history_before);
    fs::remove(dir_ / c.file);
  }

  // Seed 000/002's heterogeneous pool, with a corrected a100 template, and the demo nodes.
  void LoadHeterogeneousPool() {
    CopyFixture("seed002/l40s_pod_template.json", "l40s_pod_template.json");
    std::string a100 = ReadAll(kFixtures + "/seed002/a100_pod_template.json");
    // The seed's only error: `}` closing the tolerations list on line 14.
    size_t pos = a100.find("        }\n      }\n");
    ASSERT_NE(pos, std::string::npos);
    a100.replace(pos, 18, "        }\n      ]\n");
    Write("a100_pod_template.json", a100);
    CopyFixture("seed002/platform_config.json", "platform_config.json");
    Ok({"node", "import", kSource + "/examples/cluster/gpu-nodes.yaml"});
    Ok({"config", "update", "POD_TEMPLATE", "l40s", "--file", "l40s_pod_template.json"});
    Ok({"config", "update", "POD_TEMPLATE", "a100", "--file", "a100_pod_template.json"});
    Ok({"config", "update", "POOL", "heterogeneous_pool", "--file", "platform_config.json"});
  }

  void LoadRoboticsPools() {
    Ok({"node", "import", kSource + "/examples/cluster/gpu-nodes.yaml"});
    Ok({"config", "update", "BACKEND", "--file", kSource + "/examples/osmo/backends.json"});
    Ok({"config", "update", "POD_TEMPLATE", "--file",
        kSource + "/examples/osmo/pod_templates.json"});
    Ok({"config", "update", "RESOURCE_VALIDATION", "--file",
        kSource + "/examples/osmo/resource_validations.json"});
    for (const char* f :
         {"robotics_training", "robotics_simulation", "robotics_inference", "team_development"}) {
      Ok({"config", "update", "POOL", "--file", kFixtures + "/seed001/" + f + ".json"});
    }
  }

  json DryRunPods(const std::string& workflow_file, const std::string& pool,
                  std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"workflow", "submit",    workflow_file, "--pool",
                                     pool,       "--dry-run", "-o",          "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    Outcome r = Ok(args);
    json out = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(out.is_discarded()) << r.out;
    return out.is_discarded() ? json() : out["pods"];
  }

  fs::path dir_;
  fs::path db_;
};

const json* PodFor(const json& pods, const std::string& task) {
  for (const auto& p : pods) {
    if (p["metadata"]["labels"]["gpupool.io/task"] == task) return &p;
  }
  return nullptr;
}

// ---- The seeds' commands ------------------------------------------------------------------

TEST_F(CliTest, Seed000CommandsAsWritten) {
  CopyFixture("seed000/l40s_pod_template.json", "l40s_pod_template.json");
  CopyFixture("seed000/a100_pod_template.json", "a100_pod_template.json");
  CopyFixture("seed000/platform_config.json", "platform_config.json");
  CopyFixture("seed000/role_config.json", "role_config.json");

  Outcome l40s =
      Ok({"config", "update", "POD_TEMPLATE", "l40s", "--file", "l40s_pod_template.json"});
  EXPECT_EQ(l40s.out, "updated POD_TEMPLATE l40s (revision 1)\n");

  // Malformed as published: `}` where `]` closes the tolerations list, line 14 column 7.
  Outcome a100 =
      Gpupool({"config", "update", "POD_TEMPLATE", "a100", "--file", "a100_pod_template.json"});
  EXPECT_EQ(a100.code, 1);
  EXPECT_THAT(a100.err, HasSubstr("error: a100_pod_template.json:14:7:"));
  EXPECT_THAT(a100.err, HasSubstr("']'"));

  // The pool names the a100 template, which does not exist: refused, naming it.
  Outcome pool = Gpupool({"config", "update", "POOL", "shared_simulation_training_pool", "--file",
                          "platform_config.json"});
  EXPECT_EQ(pool.code, 1);
  EXPECT_THAT(pool.err, HasSubstr("platforms.a100_platform.override_pod_template[0]"));
  EXPECT_THAT(pool.err, HasSubstr("\"a100\""));

  std::string fixed = ReadAll(dir_ / "a100_pod_template.json");
  fixed.replace(fixed.find("        }\n      }\n"), 18, "        }\n      ]\n");
  Write("a100_pod_template.json", fixed);
  Ok({"config", "update", "POD_TEMPLATE", "a100", "--file", "a100_pod_template.json"});
  Ok({"config", "update", "POOL", "shared_simulation_training_pool", "--file",
      "platform_config.json"});
  Outcome role = Ok({"config", "set", "ROLE", "osmo-shared", "-f", "role_config.json"});
  EXPECT_EQ(role.out, "updated ROLE osmo-shared (revision 1)\n");
  Ok({"resource", "list", "--pool", "shared_simulation_training_pool"});

  Outcome show = Ok({"config", "show", "ROLE", "osmo-shared", "-o", "json"});
  json shown = json::parse(show.out);
  EXPECT_EQ(shown["body"]["actions"][0]["path"], "/api/pool/shared_simulation_training_pool*");
}

TEST_F(CliTest, Seed001PoolsInMapForm) {
  LoadRoboticsPools();
  Outcome list = Ok({"config", "list", "POOL"});
  for (const char* p :
       {"robotics-training", "robotics-simulation", "robotics-inference", "team-development"}) {
    EXPECT_THAT(list.out, HasSubstr(p));
  }
  Outcome pools = Ok({"pool", "list"});
  EXPECT_THAT(pools.out, HasSubstr("robotics-training"));
  EXPECT_THAT(pools.out, HasSubstr("ONLINE"));
  Ok({"resource", "list", "-p", "robotics-training"});
  Outcome del = Ok({"config", "delete", "POOL", "team-development"});
  EXPECT_EQ(del.out, "deleted POOL team-development (revision 2)\n");
  EXPECT_THAT(Ok({"config", "list", "POOL"}).out, Not(HasSubstr("team-development")));
}

TEST_F(CliTest, Seed001PoolsNeedTheirTemplates) {
  // Without examples/osmo loaded, the pool's references are dangling: named, nothing written.
  Outcome r = Gpupool(
      {"config", "update", "POOL", "--file", kFixtures + "/seed001/robotics_training.json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("default_amd64"));
  EXPECT_THAT(r.err, HasSubstr("gpu_training_validation"));
  EXPECT_THAT(Ok({"config", "list", "POOL"}).out, Not(HasSubstr("robotics-training")));
}

// A pool's backend is `default` or a registered BACKEND (seed 001's pools name four); a node
// labelled gpupool.io/backend serves that backend's pools alone.
TEST_F(CliTest, PoolBackendMustBeRegisteredAndScopesNodes) {
  Ok({"node", "import", kSource + "/examples/cluster/gpu-nodes.yaml"});
  Ok({"config", "update", "POD_TEMPLATE", "--file", kSource + "/examples/osmo/pod_templates.json"});
  Ok({"config", "update", "RESOURCE_VALIDATION", "--file",
      kSource + "/examples/osmo/resource_validations.json"});
  const std::string training = kFixtures + "/seed001/robotics_training.json";
  Outcome unknown = Gpupool({"config", "update", "POOL", "--file", training});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("robotics_training.json:"));
  EXPECT_THAT(unknown.err, HasSubstr("backend: backend \"gpu-cluster-01\" does not exist"));
  EXPECT_THAT(unknown.err, HasSubstr("gpupool config update BACKEND gpu-cluster-01"));
  EXPECT_THAT(Ok({"config", "list", "POOL"}).out, Not(HasSubstr("robotics-training")));

  Ok({"config", "update", "BACKEND", "--file", kSource + "/examples/osmo/backends.json"});
  std::string typo = Write("typo.json", R"({"backend": "gpu-cluster-1", "platforms": {}})");
  Outcome close = Gpupool({"config", "update", "POOL", "typo", "--file", typo});
  EXPECT_EQ(close.code, 1);
  EXPECT_THAT(close.err, HasSubstr("did you mean \"gpu-cluster-01\"?"));
  Ok({"config", "update", "POOL", "--file", training});
  Ok({"config", "update", "POOL", "--file", kFixtures + "/seed001/team_development.json"});
  Outcome in_use = Gpupool({"config", "delete", "BACKEND", "gpu-cluster-01"});
  EXPECT_NE(in_use.code, 0);
  EXPECT_THAT(in_use.err, HasSubstr("robotics-training"));

  Ok({"node", "import", Write("dev-h100.yaml", R"(apiVersion: v1
kind: Node
metadata:
  name: h100-dev
  labels:
    gpupool.io/backend: dev-cluster-01
    kubernetes.io/arch: amd64
    nvidia.com/gpu.present: "true"
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
spec:
  taints:
  - {key: nvidia.com/gpu, value: "true", effect: NoSchedule}
status:
  allocatable: {cpu: "192", memory: 2048Gi, ephemeral-storage: 7Ti, nvidia.com/gpu: "8"}
)")});
  auto nodes_of = [&](const std::string& pool) {
    json rows = json::parse(Ok({"resource", "list", "--pool", pool, "-o", "json"}).out);
    std::set<std::string> names;
    for (const json& row : rows) names.insert(row["node"].get<std::string>());
    return names;
  };
  std::set<std::string> train = nodes_of("robotics-training");
  EXPECT_TRUE(train.contains("h100-node-0"));  // unlabelled: every backend's
  EXPECT_FALSE(train.contains("h100-dev"));
  std::set<std::string> dev = nodes_of("team-development");
  EXPECT_TRUE(dev.contains("h100-dev"));
  EXPECT_TRUE(dev.contains("h100-node-0"));
}

TEST_F(CliTest, Seed002CommandsAsWritten) {
  LoadHeterogeneousPool();
  Outcome role = Ok({"config", "set", "ROLE", "osmo-heterogeneous_pool", "pool"});
  EXPECT_EQ(role.out, "updated ROLE osmo-heterogeneous_pool (revision 1)\n");
  Outcome resources = Ok({"resource", "list", "--pool", "heterogeneous_pool"});
  EXPECT_THAT(resources.out, HasSubstr("NODE"));
  EXPECT_THAT(resources.out, HasSubstr("STORAGE [Gi]"));
  EXPECT_THAT(resources.out, HasSubstr("l40s-node-0"));
  EXPECT_THAT(resources.out, HasSubstr("a100-node-0"));
  EXPECT_THAT(resources.out, HasSubstr("a100_platform"));
  EXPECT_THAT(resources.out, Not(HasSubstr("h100-node-0")));
  Outcome platform = Ok({"resource", "list", "--pool", "heterogeneous_pool", "--platform",
                         "a100_platform", "-o", "json"});
  json rows = json::parse(platform.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["node"], "a100-node-0");
  EXPECT_EQ(rows[0]["gpu"]["capacity"], 8);

  // Malformed as published.
  for (const auto& [file, where] : std::vector<std::pair<std::string, std::string>>{
           {"seed002/a100_pod_template.json", "a100_pod_template.json:14:7:"},
           {"seed002/robotics_training.json", "robotics_training.json:36:1:"},
           {"seed002/robotics_simulation.json", "robotics_simulation.json:42:1:"}}) {
    SCOPED_TRACE(file);
    std::string local = CopyFixture(file, fs::path(file).filename().string());
    Outcome r = Gpupool({"config", "update",
                         file.find("a100") != std::string::npos ? "POD_TEMPLATE" : "POOL", "--file",
                         fs::path(file).filename().string()});
    EXPECT_EQ(r.code, 1);
    EXPECT_THAT(r.err, HasSubstr(where));
  }
  // A user holding the generated role can submit; the pool list shows it.
  Outcome submit = Ok({"workflow", "submit", kSource + "/examples/workflows/hetero.yaml", "--pool",
                       "heterogeneous_pool", "--dry-run", "--user", "carol", "--roles",
                       "osmo-heterogeneous_pool"});
  EXPECT_THAT(submit.out, HasSubstr("kind: Pod"));
  EXPECT_THAT(Ok({"pool", "list"}).out, HasSubstr("heterogeneous_pool"));
}

// ---- Dry runs per platform ----------------------------------------------------------------

TEST_F(CliTest, DryRunPerPlatformOfTheHeterogeneousPool) {
  LoadHeterogeneousPool();
  json pods = DryRunPods(kSource + "/examples/workflows/hetero.yaml", "heterogeneous_pool",
                         {"--set", "epochs=7"});
  ASSERT_EQ(pods.size(), 2u);
  struct Case {
    std::string task;
    std::string platform;
    std::string product;
    bool tolerates_a100;
    std::string cpu, memory, gpu, storage;
  };
  const std::vector<Case> cases = {
      {"simulate", "l40s_platform", "NVIDIA-L40S", false, "4", "16Gi", "1", "20Gi"},
      {"train", "a100_platform", "NVIDIA-A100", true, "8", "64Gi", "2", "100Gi"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.task);
    const json* pod = PodFor(pods, c.task);
    ASSERT_NE(pod, nullptr);
    EXPECT_EQ((*pod)["metadata"]["labels"]["gpupool.io/platform"], c.platform);
    EXPECT_EQ((*pod)["metadata"]["labels"]["gpupool.io/pool"], "heterogeneous_pool");
    EXPECT_EQ((*pod)["metadata"]["labels"]["gpupool.io/queue"], "heterogeneous_pool");
    EXPECT_EQ((*pod)["metadata"]["labels"]["gpupool.io/gang-min"], "2");
    EXPECT_EQ((*pod)["spec"]["nodeSelector"], json({{"nvidia.com/gpu.product", c.product}}));
    if (c.tolerates_a100) {
      ASSERT_EQ((*pod)["spec"]["tolerations"].size(), 1u);
      EXPECT_EQ((*pod)["spec"]["tolerations"][0], json({{"key", "nvidia.com/gpu.product"},
                                                        {"operator", "Equal"},
                                                        {"value", "NVIDIA-A100"},
                                                        {"effect", "NoSchedule"}}));
    } else {
      EXPECT_FALSE((*pod)["spec"].contains("tolerations"));
    }
    const json& res = (*pod)["spec"]["containers"][0]["resources"];
    for (const char* side : {"requests", "limits"}) {
      EXPECT_EQ(res[side]["cpu"], c.cpu);
      EXPECT_EQ(res[side]["memory"], c.memory);
      EXPECT_EQ(res[side]["nvidia.com/gpu"], c.gpu);
      EXPECT_EQ(res[side]["ephemeral-storage"], c.storage);
    }
  }
  // --set overrides default-values.
  const json* train = PodFor(pods, "train");
  ASSERT_NE(train, nullptr);
  EXPECT_EQ((*train)["spec"]["containers"][0]["command"][3], "7");
  // Nothing stored by a dry run.
  EXPECT_EQ(Ok({"workflow", "list", "-o", "json"}).out, "[]\n");
}

TEST_F(CliTest, DryRunPerPlatformOfRoboticsTraining) {
  LoadRoboticsPools();
  json pods =
      DryRunPods(kSource + "/examples/workflows/robotics-training.yaml", "robotics-training");
  ASSERT_EQ(pods.size(), 3u);
  struct Case {
    std::string task, platform, product, arch;
    std::vector<std::string> toleration_keys;
    std::string cpu, memory, gpu;
  };
  const std::vector<Case> cases = {
      {"train-h100",
       "h100-platform",
       "NVIDIA-H100-80GB-HBM3",
       "amd64",
       {"nvidia.com/gpu"},
       "16",
       "128Gi",
       "8"},
      {"train-a100",
       "a100-platform",
       "NVIDIA-A100-SXM4-80GB",
       "amd64",
       {"nvidia.com/gpu", "nvidia.com/gpu.product"},
       "16",
       "80Gi",
       "4"},
      {"train-gb200",
       "gb200-platform",
       "NVIDIA-GB200",
       "arm64",
       {"nvidia.com/gpu"},
       "32",
       "256Gi",
       "4"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.task);
    const json* pod = PodFor(pods, c.task);
    ASSERT_NE(pod, nullptr);
    EXPECT_EQ((*pod)["metadata"]["labels"]["gpupool.io/platform"], c.platform);
    EXPECT_EQ((*pod)["spec"]["priorityClassName"], "high");
    EXPECT_EQ((*pod)["spec"]["nodeSelector"]["nvidia.com/gpu.product"], c.product);
    EXPECT_EQ((*pod)["spec"]["nodeSelector"]["kubernetes.io/arch"], c.arch);
    std::vector<std::string> keys;
    for (const auto& t : (*pod)["spec"]["tolerations"]) keys.push_back(t["key"]);
    EXPECT_EQ(keys, c.toleration_keys);
    const json& limits = (*pod)["spec"]["containers"][0]["resources"]["limits"];
    EXPECT_EQ(limits["cpu"], c.cpu);
    EXPECT_EQ(limits["memory"], c.memory);
    EXPECT_EQ(limits["nvidia.com/gpu"], c.gpu);
    EXPECT_EQ(limits["ephemeral-storage"], "500Gi");
  }
}

// ---- Each submission error (issue item 7) -------------------------------------------------

TEST_F(CliTest, EachSubmissionErrorNamesItsStep) {
  LoadHeterogeneousPool();
  // A pool with limits and one in maintenance.
  Write("limits.json", R"({
    "team-limits": {"backend": "default", "default_platform": "strict",
      "max_exec_timeout": "8h",
      "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi",
                                   "USER_STORAGE": "1Gi"},
      "common_pod_template": ["default_user", "default_ctrl"],
      "common_resource_validations": ["default_cpu"],
      "platforms": {"strict": {"override_pod_template": ["l40s"], "allowed_mounts": ["/data"]}}},
    "team-maint": {"backend": "default", "default_platform": "p", "enable_maintenance": true,
      "platforms": {"p": {}}}})");
  Ok({"config", "update", "POOL", "--file", "limits.json"});
  Write("typo.json", R"({"spec": {"containers": [{"name": "{{USER_CONTAINER_NAME}}",
      "env": [{"name": "THREADS", "value": "{{USER_CPUS}}"}]}]}})");
  Ok({"config", "update", "POD_TEMPLATE", "typo", "--file", "typo.json"});
  Write("typo_pool.json", R"({"name": "team-typo", "backend": "default",
      "default_platform": "p",
      "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi",
                                   "USER_STORAGE": "1Gi"},
      "common_pod_template": ["default_user", "typo"], "platforms": {"p": {}}})");
  Ok({"config", "update", "POOL", "team-typo", "--file", "typo_pool.json"});
  Ok({"config", "set", "ROLE", "osmo-team", "pool"});

  auto wf = [this](const std::string& name, const std::string& body) {
    return Write(name + ".yaml", "workflow:\n  name: " + name + "\n" + body);
  };
  const std::string task = "  tasks: [{name: a, image: i}]\n";
  struct Case {
    std::string name;
    std::string file;
    std::vector<std::string> args;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"access denied",
       wf("denied", task),
       {"--pool", "heterogeneous_pool", "--user", "bob", "--roles", "osmo-team"},
       {"access denied", "\"bob\"", "osmo-team", "heterogeneous_pool"}},
      {"maintenance",
       wf("maint", task),
       {"--pool", "team-maint", "--user", "bob", "--roles", "osmo-team"},
       {"pool in maintenance", "team-maint"}},
      {"unknown platform",
       wf("platform", "  resources:\n    default: {platform: h100_platform}\n" + task),
       {"--pool", "heterogeneous_pool"},
       {"unknown platform", "h100_platform", "l40s_platform, a100_platform"}},
      {"validation failed",
       wf("toobig", "  resources:\n    default: {cpu: 500, platform: a100_platform}\n" + task),
       {"--pool", "heterogeneous_pool"},
       {"validation failed", "task a", "a100-node-0", "a100-node-1", "exceeds the node capacity"}},
      {"undefined variable",
       wf("typo", task),
       {"--pool", "team-typo"},
       {"undefined variable", "\"typo\"", "spec.containers[0].env[0].value", "USER_CPUS"}},
      {"timeout above max",
       wf("slow", "  timeout: {exec_timeout: 1d}\n" + task),
       {"--pool", "team-limits"},
       {"timeout above pool maximum", "max_exec_timeout 8h"}},
      {"host network",
       wf("hostnet", "  tasks: [{name: a, image: i, hostNetwork: true}]\n"),
       {"--pool", "team-limits"},
       {"not allowed by platform", "hostNetwork", "host_network_allowed: false"}},
      {"privileged",
       wf("priv", "  tasks: [{name: a, image: i, privileged: true}]\n"),
       {"--pool", "team-limits"},
       {"not allowed by platform", "privileged_allowed: false"}},
      {"mounts",
       wf("mount", "  tasks: [{name: a, image: i, volumeMounts: [\"/etc:/etc\"]}]\n"),
       {"--pool", "team-limits"},
       {"not allowed by platform", "\"/etc\"", "allowed_mounts: /data"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> args = {"workflow", "submit", c.file};
    args.insert(args.end(), c.args.begin(), c.args.end());
    Outcome r = Gpupool(args);
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_THAT(r.err, HasSubstr("error: "));
    for (const auto& s : c.expected) EXPECT_THAT(r.err, HasSubstr(s));
  }
  EXPECT_EQ(Ok({"workflow", "list", "-o", "json"}).out, "[]\n");
}

// ---- Exit codes, atomicity, history, rollback, deletes ------------------------------------

TEST_F(CliTest, ExitCodes) {
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"config", "list"}, 0, ""},
      {{"config", "show", "POOL", "nope"}, 1, "error: POOL \"nope\" does not exist"},
      {{"config", "show", "POLL", "x"}, 1, "POOL"},
      {{"config", "list", "--bogus"}, 2, ""},
      {{"pool", "list", "-o", "xml"}, 2, "expected table, json or yaml"},
      {{"config", "update", "POOL", "x"}, 2, "--file"},
      {{"workflow", "submit", "missing.yaml", "--pool", "default"}, 1, "missing.yaml"},
      {{"config", "set", "ROLE", "shared", "pool"}, 1, "osmo-"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args[0] + " " + c.args[1]);
    Outcome r = Gpupool(c.args);
    EXPECT_EQ(r.code, c.code) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.err));
  }
}

TEST_F(CliTest, FailedMultiPoolUpdateWritesNothing) {
  Write("two.json", R"({
    "good-pool": {"backend": "default", "platforms": {"p": {}}},
    "bad-pool": {"backend": "default", "common_pod_template": ["defualt_user"],
                 "platforms": {"p": {}}}})");
  Outcome r = Gpupool({"config", "update", "POOL", "--file", "two.json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("defualt_user"));
  EXPECT_THAT(r.err, HasSubstr("did you mean \"default_user\""));
  EXPECT_THAT(Ok({"config", "list", "POOL"}).out, Not(HasSubstr("good-pool")));
  EXPECT_THAT(Ok({"config", "history", "POOL"}).out, Not(HasSubstr("good-pool")));

  // Other refusals of bad input.
  Write("unknown.json", R"({"p1": {"backend": "default", "platfroms": {}}})");
  Outcome unknown = Gpupool({"config", "update", "POOL", "--file", "unknown.json"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("did you mean \"platforms\""));
  Write("timeouts.json", R"({"p2": {"backend": "default", "default_exec_timeout": "9h",
                                    "max_exec_timeout": "8h"}})");
  Outcome timeouts = Gpupool({"config", "update", "POOL", "--file", "timeouts.json"});
  EXPECT_EQ(timeouts.code, 1);
  EXPECT_THAT(timeouts.err, HasSubstr("max_exec_timeout"));
  Write("default_platform.json", R"({"p3": {"backend": "default", "default_platform": "x",
                                            "platforms": {"y": {}}}})");
  Outcome dp = Gpupool({"config", "update", "POOL", "--file", "default_platform.json"});
  EXPECT_EQ(dp.code, 1);
  EXPECT_THAT(dp.err, HasSubstr("default_platform"));
  Write("badname.json", R"({"9bad": {"backend": "default"}})");
  EXPECT_EQ(Gpupool({"config", "update", "POOL", "--file", "badname.json"}).code, 1);
}

TEST_F(CliTest, HistoryAndRollback) {
  Write("t1.json", R"({"spec": {"nodeSelector": {"gpu": "one"}}})");
  Write("t2.json", R"({"spec": {"nodeSelector": {"gpu": "two"}}})");
  Ok({"config", "update", "POD_TEMPLATE", "tmpl", "--file", "t1.json"});
  Ok({"config", "update", "POD_TEMPLATE", "tmpl", "--file", "t2.json", "--description", "second"});
  Outcome rb = Ok({"config", "rollback", "POD_TEMPLATE", "tmpl", "--revision", "1"});
  EXPECT_EQ(rb.out, "rolled back POD_TEMPLATE tmpl (revision 3)\n");
  json shown = json::parse(Ok({"config", "show", "POD_TEMPLATE", "tmpl", "-o", "json"}).out);
  EXPECT_EQ(shown["revision"], 3);
  EXPECT_EQ(shown["body"]["spec"]["nodeSelector"]["gpu"], "one");
  json old = json::parse(
      Ok({"config", "show", "POD_TEMPLATE", "tmpl", "--revision", "2", "-o", "json"}).out);
  EXPECT_EQ(old["body"]["spec"]["nodeSelector"]["gpu"], "two");

  Outcome history = Ok({"config", "history", "POD_TEMPLATE", "tmpl", "--user", "dana"});
  std::istringstream lines(history.out);
  std::string header, first, second, third;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  std::getline(lines, third);
  EXPECT_THAT(header, testing::MatchesRegex("CONFIG TYPE +NAME +REVISION +ACTION +USERNAME +"
                                            "CREATED AT +DESCRIPTION"));
  EXPECT_THAT(first,
              testing::MatchesRegex("POD_TEMPLATE +tmpl +3 +rollback +[^ ]+ +[0-9T:Z-]+ +rollback "
                                    "POD_TEMPLATE tmpl to revision 1"));
  EXPECT_THAT(second, HasSubstr("second"));
  EXPECT_THAT(third, HasSubstr("gpupool config update POD_TEMPLATE tmpl"));
  // Built-ins were written by `system` as revision 1.
  EXPECT_THAT(Ok({"config", "history", "POOL", "default"}).out,
              testing::MatchesRegex("(.|\n)*POOL +default +1 +update +system (.|\n)*"));
  EXPECT_EQ(Gpupool({"config", "rollback", "POD_TEMPLATE", "tmpl", "--revision", "9"}).code, 1);
}

TEST_F(CliTest, DeletesAndWorkflowsInUse) {
  LoadHeterogeneousPool();
  Outcome used = Gpupool({"config", "delete", "POD_TEMPLATE", "a100"});
  EXPECT_EQ(used.code, 1);
  EXPECT_THAT(used.err, HasSubstr("heterogeneous_pool"));
  Outcome used_rules = Gpupool({"config", "delete", "RESOURCE_VALIDATION", "default_cpu"});
  EXPECT_EQ(used_rules.code, 1);
  EXPECT_THAT(used_rules.err, HasSubstr("heterogeneous_pool"));

  Outcome submitted = Ok({"workflow", "submit", kSource + "/examples/workflows/hetero.yaml",
                          "--pool", "heterogeneous_pool"});
  EXPECT_THAT(submitted.out, HasSubstr("Workflow ID - hetero-demo-1"));
  json wf = json::parse(Ok({"workflow", "query", "hetero-demo-1", "-o", "json"}).out);
  EXPECT_EQ(wf["status"], "PENDING");
  ASSERT_EQ(wf["tasks"].size(), 2u);
  EXPECT_EQ(wf["tasks"][1]["platform"], "a100_platform");

  // Any change goes through with a warning naming the workflow...
  std::string pool = ReadAll(dir_ / "platform_config.json");
  pool.replace(pool.find("Simulation and training pool"), 28, "Changed description");
  Write("changed.json", pool);
  Outcome changed =
      Ok({"config", "update", "POOL", "heterogeneous_pool", "--file", "changed.json"});
  EXPECT_THAT(changed.err, HasSubstr("warning: "));
  EXPECT_THAT(changed.err, HasSubstr("hetero-demo-1"));
  // ...but removing a platform the workflow uses is refused.
  Write("one_platform.json", R"({"name": "heterogeneous_pool", "backend": "default",
      "default_platform": "l40s_platform",
      "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi",
                                   "USER_STORAGE": "1Gi"},
      "common_pod_template": ["default_user", "default_ctrl"],
      "platforms": {"l40s_platform": {"override_pod_template": ["l40s"]}}})");
  Outcome removed =
      Gpupool({"config", "update", "POOL", "heterogeneous_pool", "--file", "one_platform.json"});
  EXPECT_EQ(removed.code, 1);
  EXPECT_THAT(removed.err, HasSubstr("a100_platform"));
  EXPECT_THAT(removed.err, HasSubstr("hetero-demo-1"));

  Outcome del = Gpupool({"config", "delete", "POOL", "heterogeneous_pool"});
  EXPECT_EQ(del.code, 1);
  EXPECT_THAT(del.err, HasSubstr("hetero-demo-1"));
  EXPECT_THAT(del.err, HasSubstr("--force"));

  Ok({"workflow", "cancel", "hetero-demo-1"});
  EXPECT_EQ(json::parse(Ok({"workflow", "query", "hetero-demo-1", "-o", "json"}).out)["status"],
            "CANCELED");
  EXPECT_EQ(Gpupool({"workflow", "cancel", "hetero-demo-1"}).code, 1);
  Ok({"config", "delete", "POOL", "heterogeneous_pool"});
}

TEST_F(CliTest, ForceDeletesAPoolInUse) {
  LoadHeterogeneousPool();
  Ok({"workflow", "submit", kSource + "/examples/workflows/hetero.yaml", "--pool",
      "heterogeneous_pool"});
  Outcome del = Ok({"config", "delete", "POOL", "heterogeneous_pool", "--force"});
  EXPECT_THAT(del.err, HasSubstr("warning: "));
  EXPECT_THAT(del.err, HasSubstr("hetero-demo-1"));
}

// A T4 pod template and pool, and a T4 node: the manifests `apply -f` is tried with.
constexpr char kT4PoolManifests[] = R"(apiVersion: gpupool.io/v1
kind: PodTemplate
metadata: {name: t4}
spec:
  spec:
    nodeSelector: {nvidia.com/gpu.product: Tesla-T4}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
---
apiVersion: gpupool.io/v1
kind: Pool
metadata: {name: inference}
spec:
  backend: default
  default_platform: t4
  common_default_variables: {USER_CPU: 1, USER_GPU: 1, USER_MEMORY: 4Gi, USER_STORAGE: 10Gi}
  common_pod_template: [default_user]
  platforms:
    t4: {override_pod_template: [t4]}
)";
constexpr char kT4Node[] = R"(apiVersion: v1
kind: Node
metadata:
  name: t4-a
  labels: {nvidia.com/gpu.product: Tesla-T4}
spec:
  taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
status:
  allocatable: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "1", ephemeral-storage: 100Gi}
)";

TEST_F(CliTest, ApplyManifests) {
  Write("manifests/pool.yaml", kT4PoolManifests);
  Write("manifests/node.yaml", kT4Node);
  Outcome r = Ok({"apply", "-f", "manifests"});
  EXPECT_THAT(r.out, HasSubstr("applied POD_TEMPLATE t4 (revision 1)"));
  EXPECT_THAT(r.out, HasSubstr("applied POOL inference (revision 1)"));
  EXPECT_THAT(r.out, HasSubstr("imported 1 nodes"));
  json rows = json::parse(Ok({"resource", "list", "--pool", "inference", "-o", "json"}).out);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["node"], "t4-a");
  EXPECT_EQ(rows[0]["type"], "RESERVED");

  Write("bad.yaml", "apiVersion: gpupool.io/v1\nkind: Pol\nmetadata: {name: x}\nspec: {}\n");
  Outcome bad = Gpupool({"apply", "-f", "bad.yaml"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_THAT(bad.err, HasSubstr("did you mean \"Pool\""));
}

// kubectl's repeatable -f: every file in one apply (one transaction), a file named twice read
// once; a bad one anywhere writes nothing.
TEST_F(CliTest, ApplyTakesSeveralFiles) {
  Write("q.yaml", "apiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: team-q}\nspec: {}\n");
  Write("pdb.yaml",
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: keep-one}\n"
        "spec: {minAvailable: 1, selector: {matchLabels: {app: x}}}\n");
  Write("bad.yaml",
        "apiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: other}\n"
        "spec: {resourcez: {}}\n");
  Outcome bad = Gpupool({"apply", "-f", "q.yaml", "-f", "bad.yaml"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_THAT(bad.err, HasSubstr("bad.yaml:4:"));
  EXPECT_THAT(Ok({"config", "list", "QUEUE"}).out, Not(HasSubstr("team-q")));

  Outcome r = Ok({"apply", "-f", "q.yaml", "-f", "pdb.yaml", "-f", "q.yaml"});
  EXPECT_THAT(r.out, HasSubstr("applied QUEUE team-q (revision 1)"));
  EXPECT_THAT(r.out, HasSubstr("applied POD_DISRUPTION_BUDGET keep-one (revision 1)"));
  EXPECT_THAT(Ok({"config", "history", "QUEUE", "team-q"}).out,
              HasSubstr("gpupool apply -f q.yaml -f pdb.yaml -f q.yaml"));
}

TEST_F(CliTest, ApplyPodDisruptionBudgets) {
  // Seed 004's budget applies and is stored as config kind POD_DISRUPTION_BUDGET.
  Write("pdb.yaml",
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  name: ml-training-pdb\n"
        "spec:\n  minAvailable: 0\n  selector:\n    matchLabels:\n      app: ml-training\n");
  EXPECT_THAT(Ok({"apply", "-f", "pdb.yaml"}).out,
              HasSubstr("applied POD_DISRUPTION_BUDGET ml-training-pdb (revision 1)"));
  EXPECT_THAT(Ok({"config", "show", "POD_DISRUPTION_BUDGET", "ml-training-pdb"}).out,
              HasSubstr("minAvailable"));
  struct Case {
    std::string name;
    std::string text;
    std::vector<std::string> want;
  };
  const std::string head =
      "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: bad}\nspec:\n";
  std::vector<Case> cases = {
      {"both set",
       head + "  minAvailable: 1\n  maxUnavailable: 1\n",
       {"bad.yaml:6:3", "spec.maxUnavailable: minAvailable and maxUnavailable cannot be both set"}},
      {"percent above 100",
       head + "  maxUnavailable: 101%\n",
       {"bad.yaml:5:3", "spec.maxUnavailable: must not be greater than 100%"}},
      {"negative",
       head + "  minAvailable: -1\n",
       {"bad.yaml:5:3", "spec.minAvailable: must be greater than or equal to 0"}},
      {"wrong apiVersion",
       "apiVersion: gpupool.io/v1\nkind: PodDisruptionBudget\nmetadata: {name: bad}\nspec: {}\n",
       {"bad.yaml:1:", "apiVersion: expected \"policy/v1\""}},
      {"a Job without a template",
       "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {}\n",
       {"bad.yaml:4:", "Job j: spec.template: required"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Write("bad.yaml", c.text);
    Outcome bad = Gpupool({"apply", "-f", "bad.yaml"});
    EXPECT_EQ(bad.code, 1);
    for (const std::string& w : c.want) EXPECT_THAT(bad.err, HasSubstr(w));
  }
  EXPECT_THAT(Ok({"config", "list", "POD_DISRUPTION_BUDGET"}).out, Not(HasSubstr("bad")));
}

TEST_F(CliTest, ApplyErrorsNameFileLineKindNameAndField) {
  for (const ApplyErrorCase& c : ApplyErrorCases()) {
    ExpectApplyRefused(c, [this](const std::vector<std::string>& args) { return Gpupool(args); });
  }
}

TEST_F(CliTest, ConfigUpdateErrorsNameFileLineConfigAndField) {
  for (const ConfigErrorCase& c : ConfigErrorCases()) {
    ExpectConfigRefused(c, [this](const std::vector<std::string>& args) { return Gpupool(args); });
  }
  EXPECT_THAT(Ok({"config", "list", "POOL"}).out, Not(HasSubstr("first")));
}

TEST_F(CliTest, NodeImportOfRealData) {
  Outcome a = Ok({"node", "import",
                  kSource + "/data/edgexr-k8s-node-json/vgpu_a16_node_kubectl_get_nodes.json"});
  EXPECT_EQ(a.out.find("imported 1 nodes"), 0u) << a.out;
  Ok({"node", "import",
      kSource + "/data/runai-fake-gpu-operator-samples/nodes/t4x2_fraction_1_workload.yaml"});
  Ok({"node", "import", kSource + "/examples/cluster/real/openb_node_sample.csv"});
  json rows = json::parse(Ok({"resource", "list", "-o", "json"}).out);
  bool found_a16 = false, found_openb = false;
  for (const auto& r : rows) {
    if (r["gpu_product"] == "NVIDIA-A16-4Q") found_a16 = true;
    if (r["node"] == "openb-node-0243") {
      found_openb = true;
      EXPECT_EQ(r["gpu"]["capacity"], 4);
    }
  }
  EXPECT_TRUE(found_a16);
  EXPECT_TRUE(found_openb);
  Write("bad_nodes.json", R"({"kind": "NodeList", "items": [{"metadata": {}}]})");
  EXPECT_EQ(Gpupool({"node", "import", "bad_nodes.json"}).code, 1);
}

TEST_F(CliTest, PoolListColumnsAndMaintenance) {
  LoadHeterogeneousPool();
  Write("maint.json", R"({"name": "maint", "backend": "default", "enable_maintenance": true,
                          "description": "Being fixed", "platforms": {"p": {}}})");
  Ok({"config", "update", "POOL", "maint", "--file", "maint.json"});
  Outcome r = Ok({"pool", "list"});
  EXPECT_THAT(r.out, testing::StartsWith("POOL"));
  EXPECT_THAT(r.out, HasSubstr("DESCRIPTION"));
  EXPECT_THAT(r.out, HasSubstr("GPU QUOTA USED/LIMIT"));
  EXPECT_THAT(r.out, HasSubstr("MAINTENANCE"));
  json pools = json::parse(Ok({"pool", "list", "-o", "json"}).out);
  bool found = false;
  for (const auto& p : pools) {
    if (p["name"] != "heterogeneous_pool") continue;
    found = true;
    EXPECT_EQ(p["status"], "ONLINE");
    EXPECT_EQ(p["gpu"]["total_capacity"], 24);  // 2 L40S x4 + 2 A100 x8
  }
  EXPECT_TRUE(found);
  Outcome yaml = Ok({"pool", "list", "-o", "yaml"});
  EXPECT_THAT(yaml.out, HasSubstr("- name: "));
}

// The same commands against a server (`gpupool serve --auth dev`) with --server and
// GPUPOOL_TOKEN: the caller is the token's user, not --user.
// ---- --server: every verb against the real `gpupool serve` on loopback --------------------

class ServerModeTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    // Port 0: the server picks a free port and prints it.
    std::string start = "cd " + ShellQuote(dir_.string()) + " && (" + ShellQuote(GPUPOOL_BIN) +
                        " serve --listen 127.0.0.1:0 --db " +
                        ShellQuote("sqlite:" + (dir_ / "server.db").string()) +
                        " --auth dev >serve.out 2>serve.err & echo $! >serve.pid)";
    ASSERT_EQ(std::system(start.c_str()), 0);
    const std::string marker = "listening on ";
    for (int i = 0; i < 200 && url_.empty(); ++i) {
      std::string out = ReadAll(dir_ / "serve.out");
      size_t at = out.find(marker);
      if (at != std::string::npos) {
        url_ =
            out.substr(at + marker.size(), out.find(' ', at + marker.size()) - at - marker.size());
      } else {
        usleep(50 * 1000);
      }
    }
    ASSERT_FALSE(url_.empty()) << ReadAll(dir_ / "serve.err");
  }
  void TearDown() override {
    std::string pid = std::to_string(std::stol(ReadAll(dir_ / "serve.pid")));
    std::string stop = "kill " + pid + " && for i in $(seq 1 100); do kill -0 " + pid +
                       " 2>/dev/null || exit 0; sleep 0.05; done; exit 1";
    EXPECT_EQ(std::system(stop.c_str()), 0) << "gpupool serve did not stop";
    CliTest::TearDown();
  }

  // `gpupool --server URL ARGS...` with GPUPOOL_TOKEN=token (unset when empty).
  Outcome Remote(const std::vector<std::string>& args,
                 const std::string& token = "dev:erin:osmo-admin") {
    std::string cmd = "cd " + ShellQuote(dir_.string()) + " && " +
                      (token.empty() ? std::string("env -u GPUPOOL_TOKEN ")
                                     : "GPUPOOL_TOKEN=" + ShellQuote(token) + " ") +
                      ShellQuote(GPUPOOL_BIN) + " --server " + url_;
    for (const auto& a : args) cmd += " " + ShellQuote(a);
    cmd += " >out 2>err";
    int status = std::system(cmd.c_str());
    Outcome r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = ReadAll(dir_ / "out");
    r.err = ReadAll(dir_ / "err");
    return r;
  }
  // Runs over --server and expects exit code 0.
  Outcome RemoteOk(const std::vector<std::string>& args) {
    Outcome r = Remote(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.code, 0) << "gpupool --server " << joined << "\nstdout: " << r.out
                         << "\nstderr: " << r.err;
    return r;
  }
  json RemoteJson(const std::vector<std::string>& args) {
    Outcome r = RemoteOk(args);
    json out = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(out.is_discarded()) << r.out;
    return out;
  }

  std::string url_;
};

TEST_F(ServerModeTest, ConfigVerbs) {
  const std::string l40s = kFixtures + "/seed000/l40s_pod_template.json";
  json l40s_body = json::parse(ReadAll(l40s))["l40s"];  // the file is in map form
  Outcome update = RemoteOk({"config", "update", "POD_TEMPLATE", "l40s", "--file", l40s});
  EXPECT_EQ(update.out, "updated POD_TEMPLATE l40s (revision 1)\n");
  // Parsed before it is sent: the error names the file, line and column.
  Outcome bad = Remote({"config", "update", "POD_TEMPLATE", "a100", "--file",
                        CopyFixture("seed000/a100_pod_template.json", "a100_pod_template.json")});
  EXPECT_EQ(bad.code, 1);
  EXPECT_THAT(bad.err, HasSubstr("a100_pod_template.json:14:7:"));

  json shown = RemoteJson({"config", "show", "POD_TEMPLATE", "l40s", "-o", "json"});
  EXPECT_EQ(shown["body"], l40s_body);
  EXPECT_EQ(shown["revision"], 1);
  EXPECT_EQ(shown["updated_by"], "erin");
  Outcome table = RemoteOk({"config", "show", "POD_TEMPLATE", "l40s"});
  EXPECT_EQ(json::parse(table.out), l40s_body);

  json changed = l40s_body;
  changed["spec"]["nodeSelector"] = {{"gpu", "l40s"}};
  EXPECT_NE(changed, l40s_body);
  std::string changed_file = Write("l40s-2.json", changed.dump(2));
  EXPECT_EQ(RemoteOk({"config", "update", "POD_TEMPLATE", "l40s", "--file", changed_file,
                      "--description", "second"})
                .out,
            "updated POD_TEMPLATE l40s (revision 2)\n");
  EXPECT_EQ(RemoteJson({"config", "show", "POD_TEMPLATE", "l40s", "--revision", "1", "-o",
                        "json"})["body"],
            l40s_body);

  Outcome list = RemoteOk({"config", "list", "POD_TEMPLATE"});
  EXPECT_THAT(list.out, HasSubstr("l40s"));
  EXPECT_THAT(list.out, HasSubstr("erin"));
  EXPECT_THAT(list.out, Not(HasSubstr("POOL")));
  json all = RemoteJson({"config", "list", "-o", "json"});
  bool has_default_pool = false, has_l40s = false;
  for (const auto& c : all) {
    has_default_pool |= c["kind"] == "POOL" && c["name"] == "default";
    has_l40s |= c["kind"] == "POD_TEMPLATE" && c["name"] == "l40s" && c["revision"] == 2;
  }
  EXPECT_TRUE(has_default_pool && has_l40s) << all.dump();

  Outcome history = RemoteOk({"config", "history", "POD_TEMPLATE", "l40s"});
  EXPECT_THAT(history.out, HasSubstr("second"));
  EXPECT_THAT(history.out, HasSubstr("erin"));
  json revisions = RemoteJson({"config", "history", "POD_TEMPLATE", "l40s", "-o", "json"});
  ASSERT_EQ(revisions.size(), 2u) << revisions.dump();
  EXPECT_EQ(revisions[0]["revision"], 2);  // newest first
  EXPECT_EQ(RemoteJson({"config", "history", "POD_TEMPLATE", "l40s", "--limit", "1", "-o", "json"})
                .size(),
            1u);

  EXPECT_EQ(RemoteOk({"config", "rollback", "POD_TEMPLATE", "l40s", "--revision", "1"}).out,
            "rolled back POD_TEMPLATE l40s (revision 3)\n");
  EXPECT_EQ(RemoteJson({"config", "show", "POD_TEMPLATE", "l40s", "-o", "json"})["body"],
            l40s_body);

  // config set ROLE: from a file, and the generated pool role.
  Outcome role = RemoteOk(
      {"config", "set", "ROLE", "osmo-shared", "-f", kFixtures + "/seed000/role_config.json"});
  EXPECT_EQ(role.out, "updated ROLE osmo-shared (revision 1)\n");
  EXPECT_EQ(RemoteJson({"config", "show", "ROLE", "osmo-shared", "-o",
                        "json"})["body"]["actions"][0]["path"],
            "/api/pool/shared_simulation_training_pool*");
  Outcome generated = RemoteOk({"config", "set", "ROLE", "osmo-team", "pool"});
  EXPECT_EQ(generated.out, "updated ROLE osmo-team (revision 1)\n");
  EXPECT_THAT(RemoteOk({"config", "show", "ROLE", "osmo-team"}).out, HasSubstr("pool/team*"));

  Outcome deleted = RemoteOk({"config", "delete", "POD_TEMPLATE", "l40s"});
  EXPECT_THAT(deleted.out, HasSubstr("deleted POD_TEMPLATE l40s"));
  Outcome gone = Remote({"config", "show", "POD_TEMPLATE", "l40s"});
  EXPECT_EQ(gone.code, 1);
  EXPECT_THAT(gone.err, HasSubstr("POD_TEMPLATE \"l40s\" does not exist"));
  EXPECT_EQ(Remote({"config", "delete", "POD_TEMPLATE", "l40s"}).code, 1);
}

TEST_F(ServerModeTest, ApplyNodesPoolsResourcesAndWorkflows) {
  const std::string nodes = kSource + "/examples/cluster/gpu-nodes.yaml";
  Outcome imported = RemoteOk({"node", "import", nodes});
  EXPECT_THAT(imported.out, HasSubstr("nodes from " + nodes));
  // The server names the text it got "request body"; the CLI puts the file's name back.
  std::string bad_nodes = Write("bad-nodes.yaml", "kind: NodeList\nitems: [\n");
  Outcome bad_import = Remote({"node", "import", bad_nodes});
  EXPECT_EQ(bad_import.code, 1);
  EXPECT_THAT(bad_import.err, HasSubstr(bad_nodes + ":"));
  EXPECT_THAT(bad_import.err, Not(HasSubstr("request body")));

  Write("manifests/pool.yaml", kT4PoolManifests);
  Write("manifests/node.yaml", kT4Node);
  Outcome applied = RemoteOk({"apply", "-f", (dir_ / "manifests").string()});
  EXPECT_THAT(applied.out, HasSubstr("applied POD_TEMPLATE t4 (revision 1)"));
  EXPECT_THAT(applied.out, HasSubstr("applied POOL inference (revision 1)"));
  EXPECT_THAT(applied.out, HasSubstr("imported 1 nodes"));

  Outcome pools = RemoteOk({"pool", "list"});
  EXPECT_THAT(pools.out, HasSubstr("inference"));
  EXPECT_THAT(pools.out, HasSubstr("default"));
  EXPECT_THAT(pools.out, HasSubstr("ONLINE"));
  json rows = RemoteJson({"resource", "list", "--pool", "inference", "-o", "json"});
  const json* t4 = nullptr;
  for (const auto& row : rows) {
    EXPECT_EQ(row["pool"], "inference");
    if (row["node"] == "t4-a") t4 = &row;
  }
  ASSERT_NE(t4, nullptr) << rows.dump();
  EXPECT_EQ((*t4)["type"], "RESERVED");
  EXPECT_EQ((*t4)["cpu"]["capacity"], "16");
  EXPECT_THAT(RemoteOk({"resource", "list"}).out, HasSubstr("t4-a"));

  const std::string quick = kSource + "/examples/workflows/quick.yaml";
  json dry =
      RemoteJson({"workflow", "submit", quick, "--pool", "default", "--dry-run", "-o", "json"});
  EXPECT_EQ(dry["pods"].size(), 1u) << dry.dump();
  Outcome submitted = RemoteOk({"workflow", "submit", quick, "--pool", "default"});
  EXPECT_THAT(submitted.out, HasSubstr("Workflow submit successful."));
  const std::string id_marker = "Workflow ID - ";
  size_t at = submitted.out.find(id_marker);
  ASSERT_NE(at, std::string::npos) << submitted.out;
  std::string id = submitted.out.substr(at + id_marker.size(),
                                        submitted.out.find('\n', at) - at - id_marker.size());
  std::string broken = Write("broken.yaml", "workflow:\n  name: [\n");
  Outcome refused = Remote({"workflow", "submit", broken, "--pool", "default"});
  EXPECT_EQ(refused.code, 1);
  EXPECT_THAT(refused.err, HasSubstr(broken + ":"));
  EXPECT_THAT(refused.err, Not(HasSubstr("request body")));

  Outcome query = RemoteOk({"workflow", "query", id});
  EXPECT_THAT(query.out, HasSubstr("Status      : PENDING"));  // no backend: nothing schedules
  EXPECT_THAT(query.out, HasSubstr("User        : erin"));
  EXPECT_THAT(query.out, HasSubstr("hello"));
  EXPECT_THAT(RemoteOk({"workflow", "list"}).out, HasSubstr(id));
  json listed =
      RemoteJson({"workflow", "list", "--pool", "default", "--status", "PENDING", "-o", "json"});
  ASSERT_EQ(listed.size(), 1u) << listed.dump();
  EXPECT_EQ(listed[0]["id"], id);
  EXPECT_EQ(RemoteJson({"workflow", "list", "--pool", "inference", "-o", "json"}).size(), 0u);

  EXPECT_EQ(RemoteOk({"workflow", "cancel", id}).out, "Workflow " + id + " canceled.\n");
  EXPECT_EQ(RemoteJson({"workflow", "query", id, "-o", "json"})["status"], "CANCELED");
  Outcome again = Remote({"workflow", "cancel", id});
  EXPECT_EQ(again.code, 1);
  EXPECT_THAT(again.err, HasSubstr("error: "));
}

TEST_F(ServerModeTest, ScheduleWhatIfWithInterrupts) {
  json plain =
      RemoteJson({"schedule", "-f", kSource + "/examples/scenarios/reasons.yaml", "-o", "json"});
  EXPECT_FALSE(plain["placements"].empty()) << plain.dump();
  EXPECT_FALSE(plain["unschedulable"].empty()) << plain.dump();

  const std::string pools = kSource + "/examples/machine-pools/pools.yaml";
  const std::string cluster = kSource + "/examples/machine-pools/cluster.yaml";
  json remote = RemoteJson(
      {"schedule", "-f", pools, "-f", cluster, "--interrupt", "ml-training-1", "-o", "json"});
  ASSERT_EQ(remote["interruptions"].size(), 1u) << remote.dump();
  EXPECT_EQ(remote["interruptions"][0]["node"], "ml-training-1");
  EXPECT_EQ(remote["interruptions"][0]["evictedPods"], json::array({"ml-training-0"}));
  // The same plan as offline.
  json offline = json::parse(
      Ok({"schedule", "-f", pools, "-f", cluster, "--interrupt", "ml-training-1", "-o", "json"})
          .out);
  EXPECT_EQ(remote["interruptions"], offline["interruptions"]);
  EXPECT_EQ(remote["scaleUp"], offline["scaleUp"]);
  EXPECT_EQ(remote["placements"], offline["placements"]);

  Outcome on_demand =
      Remote({"schedule", "-f", pools, "-f", cluster, "--interrupt", "compute-1", "-o", "json"});
  EXPECT_EQ(on_demand.code, 1);
  EXPECT_THAT(on_demand.err, HasSubstr("machine pool compute is on demand"));
  Outcome two = Remote({"schedule", "-f", pools, "-f", cluster, "--interrupt", "ml-training-1",
                        "--interrupt", "nope"});
  EXPECT_EQ(two.code, 1);
  EXPECT_THAT(two.err, HasSubstr("nope: no such node"));
  Outcome catalog = Remote({"schedule", "-f", pools, "--catalog", pools});
  EXPECT_EQ(catalog.code, 1);
  EXPECT_THAT(catalog.err, HasSubstr("--catalog works offline only"));

  // The default output is the same table as offline, rendered by the server.
  Outcome table = Remote({"schedule", "-f", pools, "-f", cluster, "--interrupt", "ml-training-1"});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_EQ(table.out,
            Ok({"schedule", "-f", pools, "-f", cluster, "--interrupt", "ml-training-1"}).out);
  // A broken file is named with its own line, not as part of the request body.
  const std::string broken = (dir_ / "broken.yaml").string();
  std::ofstream(broken) << "kind: Node\nmetadata: {name: a}\n---\nkind: Queue\n"
                           "apiVersion: gpupool.io/v1\nmetadata: {name: q}\nspec:\n  prio: 1\n";
  Outcome bad = Remote({"schedule", "-f", broken});
  EXPECT_EQ(bad.code, 1);
  EXPECT_THAT(bad.err, HasSubstr(broken + ":8:3: Queue q: spec.prio: unknown field"));
}

// The CLI sends the files as they are, so the server's errors name them as offline.
TEST_F(ServerModeTest, ApplyErrorsNameFileLineKindNameAndField) {
  for (const ApplyErrorCase& c : ApplyErrorCases()) {
    ExpectApplyRefused(c, [this](const std::vector<std::string>& args) { return Remote(args); });
  }
}

// The CLI sends the file as written, and its name: the server's errors read as offline.
TEST_F(ServerModeTest, ConfigUpdateErrorsNameFileLineConfigAndField) {
  for (const ConfigErrorCase& c : ConfigErrorCases()) {
    ExpectConfigRefused(c, [this](const std::vector<std::string>& args) { return Remote(args); });
  }
  EXPECT_THAT(RemoteOk({"config", "list", "POOL"}).out, Not(HasSubstr("first")));
}

TEST_F(ServerModeTest, TokensAndRoles) {
  Outcome missing = Remote({"pool", "list"}, "");
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr("needs a token (HTTP 401): set GPUPOOL_TOKEN"));
  EXPECT_EQ(missing.out, "");
  Outcome refused = Remote({"pool", "list"}, "not-a-dev-token");
  EXPECT_EQ(refused.code, 1);
  EXPECT_THAT(refused.err, HasSubstr("refused the token in GPUPOOL_TOKEN (HTTP 401)"));
  // A valid token without osmo-admin may not write configs.
  Outcome denied = Remote({"config", "update", "POD_TEMPLATE", "l40s", "--file",
                           kFixtures + "/seed000/l40s_pod_template.json"},
                          "dev:tina:osmo-team");
  EXPECT_EQ(denied.code, 1);
  EXPECT_THAT(denied.err, HasSubstr("tina"));
  EXPECT_THAT(denied.err, HasSubstr("HTTP 403"));
  EXPECT_EQ(Remote({"config", "show", "POD_TEMPLATE", "l40s"}).code, 1);  // nothing was written
  EXPECT_EQ(Remote({"config", "set", "ROLE", "osmo-team", "pool"}, "dev:tina:osmo-team").code, 1);
}

}  // namespace cli_e2e_test
