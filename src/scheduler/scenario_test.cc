#include "scheduler/scenario.h"

#include <gtest/gtest.h>

namespace gpupool::scheduler {
namespace scenario_test {

constexpr char kScenario[] = R"(apiVersion: gpupool.io/v1
kind: NodePool
metadata:
  name: a100
spec:
  label_key: node-pool
  label_value: a100
---
apiVersion: gpupool.io/v1
kind: Queue
metadata:
  name: rnd
spec:
  resources:
    a100:
      gpu: {deserved: 4}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: n1
    labels: {node-pool: a100}
  status:
    allocatable: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "4", pods: "110"}
- apiVersion: v1
  kind: Pod
  metadata:
    name: train
    labels: {gpupool.io/queue: rnd, gpupool.io/node-pool: a100}
  spec:
    containers:
    - name: main
      resources:
        limits: {nvidia.com/gpu: 4}
- apiVersion: v1
  kind: Pod
  metadata:
    name: late
    labels: {gpupool.io/queue: rnd, gpupool.io/node-pool: a100}
  spec:
    containers:
    - name: main
      resources:
        limits: {nvidia.com/gpu: 1}
---
apiVersion: gpupool.io/v1
kind: MachinePool
metadata:
  name: spot
spec: {}
)";

TEST(ScenarioTest, LoadsAndSchedules) {
  Scenario scenario;
  ASSERT_TRUE(AddScenarioText(kScenario, "s.yaml", scenario).ok());
  ASSERT_TRUE(ValidateScenario(scenario).ok());
  EXPECT_EQ(scenario.snapshot.nodes.size(), 1u);
  EXPECT_EQ(scenario.snapshot.pods.size(), 2u);
  EXPECT_EQ(scenario.snapshot.queues.size(), 1u);
  EXPECT_EQ(scenario.snapshot.node_pools.size(), 1u);
  EXPECT_EQ(scenario.machine_pools.size(), 1u);
  ScheduleResult result = Schedule(scenario, SchedulerOptions{});
  nlohmann::ordered_json json = ScheduleResultToJson(result);
  EXPECT_EQ(json["placements"][0]["pod"], "train");
  EXPECT_EQ(json["placements"][0]["node"], "n1");
  EXPECT_EQ(json["unschedulable"][0]["pod"], "late");
  EXPECT_EQ(json["unschedulable"][0]["reason"],
            "0/1 nodes are available in node pool a100: 1 Insufficient nvidia.com/gpu.");
  EXPECT_EQ(json["evictions"].size(), 0u);
  EXPECT_EQ(json["fairShare"]["rnd"]["a100"]["gpu"]["deserved"], 4);
  EXPECT_EQ(json["fairShare"]["rnd"]["a100"]["gpu"]["fairShare"], 4);
  EXPECT_EQ(json["fairShare"]["rnd"]["a100"]["gpu"]["allocated"], 4);
  EXPECT_EQ(json["fairShare"]["rnd"]["a100"]["gpu"]["limit"], -1);
  EXPECT_EQ(json["fairShare"]["rnd"]["a100"]["memory"]["allocated"], "0");
  std::string table = ScheduleResultToTable(result);
  EXPECT_NE(table.find("PLACEMENTS (1)"), std::string::npos);
  EXPECT_NE(table.find("train  n1"), std::string::npos) << table;
  EXPECT_NE(table.find("UNSCHEDULABLE (1)"), std::string::npos);
}

TEST(ScenarioTest, ErrorsNameFileLineAndObject) {
  struct Case {
    std::string name;
    std::string text;
    std::string want;
  };
  std::vector<Case> cases = {
      {"unknown kind", "kind: Node\nmetadata: {name: a}\n---\nkind: Nod\nmetadata: {name: b}\n",
       "s.yaml:4: kind \"Nod\" is not part of a scenario (did you mean \"Node\"?)"},
      {"bad queue field",
       "apiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: q}\nspec:\n  resources:\n    "
       "a: {gpu: {deserve: 1}}\n",
       "s.yaml:6:15: Queue q: spec.resources.a.gpu.deserve: unknown field (did you mean "
       "\"deserved\"?)"},
      {"the field's own line in a later document",
       "kind: Node\nmetadata: {name: a}\n---\nkind: Pod\nmetadata: {name: p}\nspec:\n  "
       "containers:\n  - name: c\n    resources:\n      requests:\n        cpu: abc\n",
       "s.yaml:11:9: Pod p: spec.containers[0].resources.requests.cpu: invalid quantity"},
      {"the field's line inside a list item",
       "kind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n- kind: Queue\n  apiVersion: "
       "gpupool.io/v1\n  metadata: {name: q}\n  spec:\n    prio: 1\n",
       "s.yaml:9:5: items[1]: Queue q: spec.prio: unknown field"},
      {"missing kind", "metadata: {name: a}\n", "s.yaml:1: kind: required"},
      {"list items", "kind: NodeList\nitems:\n- metadata: {name: a}\n- kind: Pod\n  spec: 3\n",
       "s.yaml:5:3: items[1]: Pod: spec: expected an object"},
      {"bad creationTimestamp",
       "kind: Node\nmetadata: {name: a}\n---\nkind: Pod\nmetadata: {name: p, "
       "creationTimestamp: yesterday}\n",
       "s.yaml:5:21: Pod p: metadata.creationTimestamp: expected an RFC 3339 time, got "
       "\"yesterday\""},
      {"json",
       "{\"kind\": \"Queue\", \"apiVersion\": \"gpupool.io/v1\", \"metadata\": {\"name\": "
       "\"q\"}, \"spec\": {\"prio\": 1}}",
       "s.yaml:1:86: Queue q: spec.prio: unknown field"},
      {"json, second value, pretty-printed",
       "{\"kind\": \"Node\", \"metadata\": {\"name\": \"a\"}}\n{\n  \"kind\": \"Queue\",\n  "
       "\"apiVersion\": \"gpupool.io/v1\",\n  \"metadata\": {\"name\": \"q\"},\n  \"spec\": {\n    "
       "\"prio\": 1\n  }\n}\n",
       "s.yaml:7:5: Queue q: spec.prio: unknown field"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Scenario scenario;
    Status status = AddScenarioText(c.text, "s.yaml", scenario);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.message().find(c.want), std::string::npos) << status.message();
  }
}

// DESIGN section 2: manifests are multi-document YAML or JSON. A JSON file may hold several
// values one after another (concatenated, or JSON Lines), and arrays of manifests.
TEST(ScenarioTest, JsonStreamOfDocuments) {
  const std::string n1 = R"({"kind": "Node", "metadata": {"name": "n1"}})";
  const std::string n2 = R"({"kind": "Node", "metadata": {"name": "n2"}})";
  const std::string pod =
      R"({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}})";
  struct Case {
    std::string name;
    std::string text;
    std::vector<std::string> nodes;
    size_t pods;
  };
  std::vector<Case> cases = {
      {"one object", n1, {"n1"}, 0},
      {"concatenated", n1 + n2 + pod, {"n1", "n2"}, 1},
      {"JSON Lines", n1 + "\n" + pod + "\n" + n2 + "\n", {"n1", "n2"}, 1},
      {"pretty-printed, blank lines between",
       "{\n  \"kind\": \"Node\",\n  \"metadata\": {\"name\": "
       "\"n1\"}\n}\n\n" +
           pod + "\n",
       {"n1"},
       1},
      {"an array of manifests", "[" + n1 + ", " + pod + "]", {"n1"}, 1},
      {"an array then an object", "[" + n1 + "]\n" + n2, {"n1", "n2"}, 0},
      {"braces inside strings",
       R"({"kind": "Node", "metadata": {"name": "n1", "annotations": )"
       R"({"x": "}{\"]"}}})" +
           n2,
       {"n1", "n2"},
       0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Scenario scenario;
    Status status = AddScenarioText(c.text, "s.json", scenario);
    ASSERT_TRUE(status.ok()) << status.ToString();
    std::vector<std::string> nodes;
    for (const auto& n : scenario.snapshot.nodes) nodes.push_back(n.name);
    EXPECT_EQ(nodes, c.nodes);
    EXPECT_EQ(scenario.snapshot.pods.size(), c.pods);
  }
}

TEST(ScenarioTest, JsonStreamErrorsNameFileLineAndColumn) {
  const std::string n1 = R"({"kind": "Node", "metadata": {"name": "n1"}})";
  struct Case {
    std::string name;
    std::string text;
    std::string want;
  };
  std::vector<Case> cases = {
      // Column 31 of line 3 is the '{' where ':' was expected.
      {"syntax error in the third document",
       n1 + "\n" + n1 + "\n" + R"(  {"kind": "Node", "metadata" {}})", "s.json:3:31: syntax error"},
      // Same line as the document before it: the column counts from the line's start.
      {"syntax error after another document on its line", n1 + R"( {"kind": ]})",
       "s.json:1:55: syntax error"},
      {"syntax error on a later line of a document",
       n1 + "\n{\n  \"kind\": \"Node\",\n  \"metadata\": {\"name\" \"n2\"}\n}",
       "s.json:4:23: syntax error"},
      {"duplicate key", n1 + "\n" + R"({"kind": "Node", "kind": "Pod"})",
       "s.json:2:18: duplicate key \"kind\""},
      {"unterminated last document", n1 + "\n" + R"({"kind": "Node")", "s.json:2:16: syntax error"},
      {"a scalar between documents", n1 + " 5 " + n1, "s.json:1: expected an object"},
      {"object error names the field's line and column",
       n1 + "\n\n" +
           R"({"kind": "Queue", "apiVersion": "gpupool.io/v1", "metadata": {"name": "q"}, )"
           R"("spec": {"prio": 1}})",
       "s.json:3:86: Queue q: spec.prio: unknown field"},
      {"array item", n1 + "\n[" + n1 + ", {\"kind\": \"Nod\"}]",
       "s.json:2: [1]: kind \"Nod\" is not part of a scenario"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Scenario scenario;
    Status status = AddScenarioText(c.text, "s.json", scenario);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.message().find(c.want), std::string::npos) << status.message();
  }
}

TEST(ScenarioTest, ValidateCatchesDanglingParentAndDuplicates) {
  Scenario scenario;
  ASSERT_TRUE(AddScenarioText("apiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: p1}\n"
                              "spec: {parent: rdn}\n---\napiVersion: gpupool.io/v1\nkind: Queue\n"
                              "metadata: {name: rnd}\nspec: {}\n",
                              "s.yaml", scenario)
                  .ok());
  Status status = ValidateScenario(scenario);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("queue \"rdn\" not found (did you mean \"rnd\"?)"),
            std::string::npos)
      << status.message();
}

// Values Kubernetes (or gpupool's labels) refuse are refused when the scenario is read, with
// the field's path, line and column: never clamped, ignored or wrapped.
TEST(ScenarioTest, BadValuesAreRefusedWithFieldPaths) {
  auto pod = [](const std::string& resources, const std::string& labels = "{}") {
    return "kind: Pod\nmetadata:\n  name: p\n  labels: " + labels +
           "\nspec:\n  containers:\n  - name: c\n    resources: " + resources + "\n";
  };
  auto gang_min = [&](const std::string& value) {
    return pod("{}", "{gpupool.io/gang: g, gpupool.io/gang-min: \"" + value + "\"}");
  };
  const std::string gang_min_error = "s.yaml:4:32: Pod p: metadata.labels.gpupool.io/gang-min: ";
  struct Case {
    std::string name;
    std::string text;
    std::string want;  // the whole message
  };
  const std::vector<Case> cases = {
      {"negative request", pod("{requests: {cpu: \"-1\"}}"),
       "s.yaml:8:28: Pod p: spec.containers[0].resources.requests.cpu: must not be negative, got "
       "\"-1\""},
      {"negative limit", pod("{limits: {nvidia.com/gpu: -2}}"),
       "s.yaml:8:26: Pod p: spec.containers[0].resources.limits.nvidia.com/gpu: must not be "
       "negative, got -2"},
      {"negative overhead",
       "kind: Pod\nmetadata: {name: p}\nspec:\n  overhead: {memory: -1Gi}\n  containers: []\n",
       "s.yaml:4:14: Pod p: spec.overhead.memory: must not be negative, got \"-1Gi\""},
      {"negative node allocatable",
       "kind: Node\nmetadata: {name: n}\nstatus:\n  allocatable: {cpu: \"8\", nvidia.com/gpu: "
       "\"-8\"}\n",
       "s.yaml:4:27: Node n: status.allocatable.nvidia.com/gpu: must not be negative, got \"-8\""},
      {"negative node capacity",
       "kind: Node\nmetadata: {name: n}\nstatus:\n  capacity: {memory: -64Gi}\n",
       "s.yaml:4:14: Node n: status.capacity.memory: must not be negative, got \"-64Gi\""},
      {"gang-min not a number", gang_min("two"),
       gang_min_error + "expected a positive integer, got \"two\""},
      {"gang-min zero", gang_min("0"), gang_min_error + "expected a positive integer, got \"0\""},
      {"gang-min negative", gang_min("-3"),
       gang_min_error + "expected a positive integer, got \"-3\""},
      {"gang-min beyond int64", gang_min("99999999999999999999"),
       gang_min_error + "expected a positive integer, got \"99999999999999999999\""},
      {"gang-min with a sign", gang_min("+5"),
       gang_min_error + "expected a positive integer, got \"+5\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Scenario scenario;
    Status status = AddScenarioText(c.text, "s.yaml", scenario);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), c.want);
  }
  // The largest gang-min int64 holds is accepted (it means the whole gang).
  Scenario scenario;
  EXPECT_TRUE(AddScenarioText(gang_min("9223372036854775807"), "s.yaml", scenario).ok());
}

TEST(ScenarioTest, QueueParentCyclesAreRefused) {
  auto queue = [](const std::string& name, const std::string& parent) {
    return "apiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: " + name +
           "}\nspec: {parent: " + parent + "}\n---\n";
  };
  struct Case {
    std::string name;
    std::string text;
    std::string want;  // "" = valid
  };
  const std::vector<Case> cases = {
      {"a tree",
       queue("a", "b") + queue("c", "b") +
           "apiVersion: gpupool.io/v1\nkind: Queue\n"
           "metadata: {name: b}\nspec: {}\n",
       ""},
      {"two queues", queue("a", "b") + queue("b", "a"),
       "Queue a: spec.parent: queues must form a tree, not a cycle: a -> b -> a"},
      {"three queues", queue("a", "b") + queue("b", "c") + queue("c", "a"),
       "Queue a: spec.parent: queues must form a tree, not a cycle: a -> b -> c -> a"},
      {"a queue below a cycle", queue("d", "a") + queue("a", "b") + queue("b", "a"),
       "Queue d: spec.parent: queues must form a tree, not a cycle: d -> a -> b -> a"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Scenario scenario;
    ASSERT_TRUE(AddScenarioText(c.text, "s.yaml", scenario).ok());
    Status status = ValidateScenario(scenario);
    if (c.want.empty()) {
      EXPECT_TRUE(status.ok()) << status.ToString();
    } else {
      EXPECT_EQ(status.message(), c.want);
    }
  }
}

TEST(ScenarioTest, MissingFile) {
  Result<Scenario> scenario = LoadScenarioFiles({"/nonexistent/scenario.yaml"});
  EXPECT_FALSE(scenario.ok());
}

}  // namespace scenario_test
}  // namespace gpupool::scheduler

namespace gpupool::scheduler {
namespace scenario_test {

std::string Example(const std::string& path) {
  return std::string(GPUPOOL_SOURCE_DIR) + "/examples/" + path;
}

TEST(RunaiOrgExampleTest, OverQuotaUseOfIdleA100s) {
  Result<Scenario> scenario =
      LoadScenarioFiles({Example("runai-org/cluster.yaml"), Example("runai-org/queues.yaml"),
                         Example("runai-org/01-over-quota.yaml")});
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  EXPECT_EQ(scenario->snapshot.nodes.size(), 30u);
  nlohmann::ordered_json out = ScheduleResultToJson(Schedule(*scenario, SchedulerOptions{}));
  EXPECT_EQ(out["placements"].size(), 12u) << out.dump(1);
  // The sixth non-preemptible serving pod would exceed ml-ops-2's deserved 5 GPUs.
  ASSERT_EQ(out["unschedulable"].size(), 1u) << out.dump(1);
  EXPECT_EQ(out["unschedulable"][0]["pod"], "mlops-serve-5");
  EXPECT_EQ(out["unschedulable"][0]["reason"],
            "queue ml-ops-2: HIGH priority uses only deserved quota: 5 GPUs in node pool a100-40; "
            "LOW may use idle GPUs over quota (5 in use, 1 requested)");
  for (const auto& p : out["placements"]) {
    const std::string pod = p["pod"];
    if (pod.starts_with("mlops-train")) {
      EXPECT_EQ(p["nodePool"], "a100-80");
    }
    if (pod.starts_with("rnd-build")) {
      EXPECT_EQ(p["nodePool"], "default");
    }
  }
  // ML-Ops uses R&D's idle A100-80s over quota: deserved 0, fair share 20, allocated 20.
  EXPECT_EQ(out["fairShare"]["ml-ops"]["a100-80"]["gpu"]["deserved"], 0);
  EXPECT_EQ(out["fairShare"]["ml-ops"]["a100-80"]["gpu"]["fairShare"], 20);
  EXPECT_EQ(out["fairShare"]["ml-ops"]["a100-80"]["gpu"]["allocated"], 20);
}

TEST(RunaiOrgExampleTest, OwnerReclaims) {
  Result<Scenario> scenario =
      LoadScenarioFiles({Example("runai-org/cluster.yaml"), Example("runai-org/queues.yaml"),
                         Example("runai-org/02-reclaim.yaml")});
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  nlohmann::ordered_json out = ScheduleResultToJson(Schedule(*scenario, SchedulerOptions{}));
  ASSERT_EQ(out["evictions"].size(), 3u) << out.dump(1);
  for (const auto& e : out["evictions"]) {
    EXPECT_EQ(e["reason"], "reclaim");
    EXPECT_TRUE(e["pod"].get<std::string>().starts_with("mlops-train"));
  }
  EXPECT_EQ(out["placements"].size(), 3u);
  for (const auto& p : out["placements"]) {
    EXPECT_TRUE(p["pod"].get<std::string>().starts_with("rnd-"));
  }
  EXPECT_EQ(out["unschedulable"].size(), 3u);  // the evicted pods, requeued
  EXPECT_EQ(out["fairShare"]["rnd"]["a100-80"]["gpu"]["fairShare"], 12);
  EXPECT_EQ(out["fairShare"]["rnd"]["a100-80"]["gpu"]["allocated"], 12);
  EXPECT_EQ(out["fairShare"]["ml-ops"]["a100-80"]["gpu"]["allocated"], 8);
}

// Seed 003's switches in a scenario: a Backend `default` document. Over quota off, ML-Ops can
// no longer borrow R&D's idle A100-80s, and the reason names the switch.
TEST(RunaiOrgExampleTest, OverQuotaSwitchedOff) {
  Result<Scenario> scenario =
      LoadScenarioFiles({Example("runai-org/cluster.yaml"), Example("runai-org/queues.yaml"),
                         Example("runai-org/01-over-quota.yaml")});
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  ASSERT_TRUE(AddScenarioText("apiVersion: gpupool.io/v1\nkind: Backend\nmetadata: {name: "
                              "default}\nspec: {enable_over_quota: false}\n",
                              "switch.yaml", *scenario)
                  .ok());
  EXPECT_FALSE(scenario->settings.over_quota);
  nlohmann::ordered_json out = ScheduleResultToJson(Schedule(*scenario, SchedulerOptions{}));
  int borrowed = 0;
  for (const auto& p : out["placements"]) {
    if (p["pod"].get<std::string>().starts_with("mlops-train")) ++borrowed;
  }
  EXPECT_EQ(borrowed, 0) << out.dump(1);
  bool named = false;
  for (const auto& u : out["unschedulable"]) {
    if (!u["pod"].get<std::string>().starts_with("mlops-train")) continue;
    EXPECT_NE(u["reason"].get<std::string>().find("enable_over_quota false"), std::string::npos)
        << u["reason"];
    named = true;
  }
  EXPECT_TRUE(named) << out.dump(1);
}

TEST(ScenarioTest, BackendDocumentsAreChecked) {
  struct Case {
    std::string text;
    std::string want;  // "" = accepted
  };
  const std::string head = "apiVersion: gpupool.io/v1\nkind: Backend\n";
  std::vector<Case> cases = {
      {head + "metadata: {name: default}\nspec: {enable_node_pools: false, description: x}\n", ""},
      {head + "metadata: {name: gpu-cluster-01}\n",
       "Backend gpu-cluster-01: metadata.name: expected \"default\" (a scenario is one "
       "cluster, the backend `default`), got \"gpu-cluster-01\""},
      {head + "metadata: {name: default}\nspec: {enable_over_quta: false}\n",
       "spec.enable_over_quta: unknown field (did you mean \"enable_over_quota\"?)"},
      {head + "metadata: {name: default}\nspec: {enable_cpu_quota: \"no\"}\n",
       "spec.enable_cpu_quota: expected true or false, got string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Scenario scenario;
    Status s = AddScenarioText(c.text, "b.yaml", scenario);
    if (c.want.empty()) {
      EXPECT_TRUE(s.ok()) << s.ToString();
      EXPECT_FALSE(scenario.settings.node_pools);
      continue;
    }
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(c.want), std::string::npos) << s.message();
  }
}

TEST(ScenarioExamplesTest, AllExampleScenariosLoad) {
  Result<Scenario> scenario = LoadScenarioFiles({Example("scenarios/reasons.yaml")});
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  nlohmann::ordered_json out = ScheduleResultToJson(Schedule(*scenario, SchedulerOptions{}));
  bool found = false;
  for (const auto& u : out["unschedulable"]) {
    if (u["pod"] == "needs-8-gpus") {
      found = true;
      EXPECT_EQ(u["reason"],
                "0/3 nodes are available: 2 node(s) had untolerated taint {nvidia.com/gpu: true}, "
                "1 Insufficient nvidia.com/gpu.");
    }
  }
  EXPECT_TRUE(found) << out.dump(1);
}

TEST(ScenarioExamplesTest, NoExecuteDeadlines) {
  Result<Scenario> scenario = LoadScenarioFiles({Example("scenarios/no-execute.yaml")});
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  nlohmann::ordered_json out = ScheduleResultToJson(Schedule(*scenario, SchedulerOptions{}));
  ASSERT_EQ(out["evictions"].size(), 1u) << out.dump(1);
  EXPECT_EQ(out["evictions"][0]["pod"], "drain-now");
  EXPECT_EQ(out["evictions"][0]["reason"], "NoExecute");
  ASSERT_EQ(out["noExecuteDeadlines"].size(), 2u) << out.dump(1);
  EXPECT_EQ(out["noExecuteDeadlines"][0]["pod"], "drain-1h");
  EXPECT_EQ(out["noExecuteDeadlines"][0]["deadline"], "2026-11-22T09:30:00Z");
  EXPECT_EQ(out["noExecuteDeadlines"][1]["pod"], "several-taints");
  EXPECT_EQ(out["noExecuteDeadlines"][1]["taint"], "spot-reclaim:NoExecute");
  EXPECT_EQ(out["noExecuteDeadlines"][1]["deadline"], "2026-11-22T08:52:00Z");
  // With the cycle's time at 09:00, several-taints' deadline has passed.
  scenario->snapshot.now_ms = *ParseTimestampMillis("2026-11-22T09:00:00Z");
  out = ScheduleResultToJson(Schedule(*scenario, SchedulerOptions{}));
  ASSERT_EQ(out["evictions"].size(), 2u) << out.dump(1);
  EXPECT_EQ(out["evictions"][1]["pod"], "several-taints");
  EXPECT_EQ(out["noExecuteDeadlines"].size(), 1u) << out.dump(1);
}

}  // namespace scenario_test
}  // namespace gpupool::scheduler
