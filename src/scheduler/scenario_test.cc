#include "scheduler/scenario.h"

#include <gtest/gtest.h>

namespace gpupool::scheduler {
namespace {

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
            "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
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
       "s.yaml:1: Queue q: spec.resources.a.gpu.deserve: unknown field (did you mean "
       "\"deserved\"?)"},
      {"missing kind", "metadata: {name: a}\n", "s.yaml:1: kind: required"},
      {"list items", "kind: NodeList\nitems:\n- metadata: {name: a}\n- kind: Pod\n  spec: 3\n",
       "s.yaml:1: items[1]: Pod"},
      {"json",
       "{\"kind\": \"Queue\", \"apiVersion\": \"gpupool.io/v1\", \"metadata\": {\"name\": "
       "\"q\"}, \"spec\": {\"prio\": 1}}",
       "s.yaml:1: Queue q: spec.prio: unknown field"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Scenario scenario;
    Status status = AddScenarioText(c.text, "s.yaml", scenario);
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

TEST(ScenarioTest, MissingFile) {
  Result<Scenario> scenario = LoadScenarioFiles({"/nonexistent/scenario.yaml"});
  EXPECT_FALSE(scenario.ok());
}

}  // namespace
}  // namespace gpupool::scheduler
