#include "submit/workflow.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpupool::submit {
namespace {

using ::testing::HasSubstr;

constexpr char kOsmoExample[] = R"(workflow:
  name: sim-{{run}}
  timeout: {exec_timeout: 8h, queue_timeout: 2h}
  resources:
    default: {cpu: 4, memory: 32Gi, storage: 50Gi, platform: l40s}
    big: {cpu: 16, gpu: 2, memory: 128Gi, storage: 200Gi, platform: h100, nodesExcluded: [node-7]}
  tasks:
  - {name: prep, image: "ubuntu:24.04", command: [bash, -c, "echo hi"]}
  - {name: train, image: "pytorch:24.01", command: [python, t.py], resource: big, exitActions: {RESCHEDULE: "137"}}
default-values: {run: 1}
)";

TEST(ParseWorkflowTest, OsmoExample) {
  auto wf = ParseWorkflow(kOsmoExample, "wf.yaml");
  ASSERT_TRUE(wf.ok()) << wf.status().ToString();
  EXPECT_EQ(wf->name, "sim-1");
  ASSERT_EQ(wf->groups.size(), 2u);
  EXPECT_EQ(wf->groups[0].name, "prep-group");
  EXPECT_EQ(wf->groups[1].tasks[0].resource, "big");
  EXPECT_EQ(wf->exec_timeout_seconds, 8 * 3600);
  EXPECT_EQ(wf->queue_timeout_seconds, 2 * 3600);
  const ResourceSpec* big = wf->FindResource("big");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->platform, "h100");
  EXPECT_EQ(big->gpu, 2);
  EXPECT_EQ(big->memory, "128Gi");
  EXPECT_EQ(big->nodes_excluded, std::vector<std::string>{"node-7"});
  EXPECT_EQ(wf->groups[0].tasks[0].command, (std::vector<std::string>{"bash", "-c", "echo hi"}));
  EXPECT_EQ(wf->priority, Priority::kNormal);
}

TEST(ParseWorkflowTest, SetOverridesDefaultValues) {
  auto wf = ParseWorkflow(kOsmoExample, "wf.yaml", {{"run", "42"}});
  ASSERT_TRUE(wf.ok()) << wf.status().ToString();
  EXPECT_EQ(wf->name, "sim-42");
}

TEST(ParseWorkflowTest, GroupsKeepTheirNames) {
  auto wf = ParseWorkflow(R"(workflow:
  name: gang
  priority: low
  groups:
  - name: trainers
    tasks:
    - {name: w0, image: img, sim_duration: 30s, sim_exit_code: 3}
    - {name: w1, image: img, env: {A: 1, B: x}}
)",
                          "g.yaml");
  ASSERT_TRUE(wf.ok()) << wf.status().ToString();
  ASSERT_EQ(wf->groups.size(), 1u);
  EXPECT_EQ(wf->groups[0].name, "trainers");
  EXPECT_EQ(wf->groups[0].tasks.size(), 2u);
  EXPECT_EQ(wf->groups[0].tasks[0].sim_duration_seconds, 30);
  EXPECT_EQ(wf->groups[0].tasks[0].sim_exit_code, 3);
  EXPECT_EQ(wf->groups[0].tasks[1].env.dump(),
            R"([{"name":"A","value":"1"},{"name":"B","value":"x"}])");
  EXPECT_EQ(wf->priority, Priority::kLow);
  EXPECT_EQ(PriorityClassName(wf->priority), "low");
}

TEST(ParseWorkflowTest, MountsFromStrings) {
  auto wf = ParseWorkflow(R"(workflow:
  name: m
  tasks:
  - name: t
    image: img
    volumeMounts: ["/data/sets:/data:ro"]
)",
                          "m.yaml");
  ASSERT_TRUE(wf.ok()) << wf.status().ToString();
  const auto& mounts = wf->groups[0].tasks[0].volume_mounts;
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0]["hostPath"], "/data/sets");
  EXPECT_EQ(mounts[0]["mountPath"], "/data");
  EXPECT_EQ(mounts[0]["readOnly"], true);
}

TEST(ParseWorkflowTest, Errors) {
  struct Case {
    std::string name;
    std::string text;
    std::vector<std::string> expected;  // substrings of the message
  };
  const std::vector<Case> cases = {
      {"unknown task field",
       "workflow:\n  name: a\n  tasks:\n  - {name: t, image: i, resurce: big}\n",
       {"f.yaml", "workflow.tasks[0].resurce", "unknown field", "did you mean \"resource\""}},
      {"unknown top field",
       "workflow:\n  name: a\n  taks: []\n",
       {"workflow.taks", "did you mean \"tasks\""}},
      {"both tasks and groups",
       "workflow:\n  name: a\n  tasks: [{name: t, image: i}]\n  groups: []\n",
       {"exactly one of tasks or groups"}},
      {"undefined resource",
       "workflow:\n  name: a\n  tasks: [{name: t, image: i, resource: bg}]\n",
       {"undefined resource \"bg\""}},
      {"bad quantity",
       "workflow:\n  name: a\n  resources:\n    default: {memory: 1gi}\n  tasks: "
       "[{name: t, image: i}]\n",
       {"workflow.resources.default.memory", "1gi"}},
      {"bad priority",
       "workflow:\n  name: a\n  priority: URGENT\n  tasks: [{name: t, image: i}]\n",
       {"workflow.priority", "HIGH, NORMAL or LOW"}},
      {"bad timeout",
       "workflow:\n  name: a\n  timeout: {exec_timeout: forever}\n  tasks: [{name: t, image: i}]\n",
       {"workflow.timeout.exec_timeout"}},
      {"duplicate task",
       "workflow:\n  name: a\n  groups:\n  - {name: g, tasks: [{name: t-1, image: i}, {name: T_1, "
       "image: i}]}\n",
       {"duplicate task name \"T_1\""}},
      {"undefined spec variable",
       "workflow:\n  name: a\n  tasks:\n  - {name: t, image: \"{{img}}\"}\n",
       {"line 4", "undefined variable \"img\"", "--set img="}},
      {"missing image",
       "workflow:\n  name: a\n  tasks: [{name: t}]\n",
       {"missing required field image"}},
      {"bad name", "workflow:\n  name: -bad\n  tasks: [{name: t, image: i}]\n", {"invalid name"}},
      {"bad exit action",
       "workflow:\n  name: a\n  tasks: [{name: t, image: i, exitActions: {RETRY: '1'}}]\n",
       {"exitActions.RETRY", "COMPLETE, FAIL or RESCHEDULE"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto wf = ParseWorkflow(c.text, "f.yaml");
    ASSERT_FALSE(wf.ok());
    EXPECT_EQ(wf.status().code(), StatusCode::kInvalidArgument);
    for (const auto& s : c.expected) EXPECT_THAT(wf.status().message(), HasSubstr(s));
  }
}

TEST(ParseWorkflowTest, TextWithoutVariablesIsParsedOnceWithTheSameResult) {
  struct Case {
    std::string name;
    std::string text;
    std::string error_part;  // "" when it parses
  };
  const Case cases[] = {
      {"yaml", "workflow:\n  name: w\n  tasks:\n  - {name: t, image: img}\n", ""},
      {"yaml with default-values",
       "workflow:\n  name: w\n  tasks:\n  - {name: t, image: img}\n"
       "default-values: {unused: 1}\n",
       ""},
      {"json", R"({"workflow": {"name": "w", "tasks": [{"name": "t", "image": "img"}]}})", ""},
      {"bom", "\xEF\xBB\xBFworkflow:\n  name: w\n  tasks:\n  - {name: t, image: img}\n", ""},
      {"default-values not a map",
       "workflow:\n  name: w\n  tasks:\n  - {name: t, image: img}\ndefault-values: [a]\n",
       "expected a map of name: value"},
      {"default-values not a map (json)",
       R"({"workflow": {"name": "w", "tasks": [{"name": "t", "image": "img"}]}, "default-values": 3})",
       "expected a map of name: value"},
      {"broken yaml", "workflow:\n  name: w\n name: x\n", "wf.yaml:3:"},
      {"two documents", "workflow: {name: a}\n---\nworkflow: {name: b}\n", "expected one document"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto wf = ParseWorkflow(c.text, "wf.yaml", {{"unused", "2"}});
    if (!c.error_part.empty()) {
      ASSERT_FALSE(wf.ok());
      EXPECT_THAT(std::string(wf.status().message()), HasSubstr(c.error_part));
      continue;
    }
    ASSERT_TRUE(wf.ok()) << wf.status().ToString();
    EXPECT_EQ(wf->name, "w");
    ASSERT_EQ(wf->TaskCount(), 1u);
    EXPECT_EQ(wf->groups[0].tasks[0].image, "img");
    // The workflow document is kept as written.
    EXPECT_EQ(wf->document.dump(), R"({"name":"w","tasks":[{"name":"t","image":"img"}]})");
  }
}

TEST(ParseSetValueTest, Forms) {
  auto kv = ParseSetValue("a=b=c");
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->first, "a");
  EXPECT_EQ(kv->second, "b=c");
  EXPECT_FALSE(ParseSetValue("novalue").ok());
  EXPECT_FALSE(ParseSetValue("=x").ok());
}

}  // namespace
}  // namespace gpupool::submit
