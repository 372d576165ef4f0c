#include "submit/workflow.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace gpupool::submit {
namespace workflow_test {

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

// parallelism and backoff_limit (a Job's, also a workflow file's): kept in the spec and in the
// stored document the scheduling loop reads them from.
TEST(ParseWorkflowTest, ParallelismAndBackoffLimit) {
  auto wf = ParseWorkflow(
      "workflow:\n  name: sweep\n  parallelism: 2\n  backoff_limit: 0\n  tasks:\n"
      "  - {name: a, image: i}\n  - {name: b, image: i}\n  - {name: c, image: i}\n",
      "f.yaml");
  ASSERT_TRUE(wf.ok()) << wf.status().ToString();
  EXPECT_EQ(wf->parallelism, 2);
  EXPECT_EQ(wf->backoff_limit, 0);
  EXPECT_EQ(wf->document["parallelism"], 2);
  EXPECT_EQ(wf->document["backoff_limit"], 0);
  auto plain = ParseWorkflow("workflow:\n  name: a\n  tasks: [{name: t, image: i}]\n", "f.yaml");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->parallelism.has_value());
  EXPECT_FALSE(plain->backoff_limit.has_value());
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
       {"f.yaml:4:23: ", "undefined variable \"img\"", "--set img="}},
      {"missing image",
       "workflow:\n  name: a\n  tasks: [{name: t}]\n",
       {"missing required field image"}},
      {"bad name", "workflow:\n  name: -bad\n  tasks: [{name: t, image: i}]\n", {"invalid name"}},
      {"bad exit action",
       "workflow:\n  name: a\n  tasks: [{name: t, image: i, exitActions: {RETRY: '1'}}]\n",
       {"exitActions.RETRY", "COMPLETE, FAIL or RESCHEDULE"}},
      {"parallelism 0",
       "workflow:\n  name: a\n  parallelism: 0\n  tasks: [{name: t, image: i}]\n",
       {"f.yaml:3:3: workflow.parallelism: expected a whole number from 1 to 2147483647, got "
        "number 0"}},
      {"parallelism text",
       "workflow:\n  name: a\n  parallelism: two\n  tasks: [{name: t, image: i}]\n",
       {"workflow.parallelism: expected a whole number from 1", "got string"}},
      {"negative backoff limit",
       "workflow:\n  name: a\n  backoff_limit: -1\n  tasks: [{name: t, image: i}]\n",
       {"workflow.backoff_limit: expected a whole number from 0 to 2147483647, got number -1"}},
      {"backoff limit beyond int32",
       "workflow:\n  name: a\n  backoff_limit: 2147483648\n  tasks: [{name: t, image: i}]\n",
       {"workflow.backoff_limit: expected a whole number from 0"}},
      // Found by the workflow fuzz target: text that is not YAML, whose `default-values:` line
      // (no space after the colon) reads as a string; it threw instead of being refused.
      {"default-values: line that is a string", "{\n\na\ndefault-values:3e\n", {"f.yaml:"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto wf = ParseWorkflow(c.text, "f.yaml");
    ASSERT_FALSE(wf.ok());
    EXPECT_EQ(wf.status().code(), StatusCode::kInvalidArgument);
    for (const auto& s : c.expected) EXPECT_THAT(wf.status().message(), HasSubstr(s));
  }
}

// Errors point at the field's line and column in the file as written: substitutions before the
// field (on its line or above) do not move it, and a value that came from a substitution is at
// its `{{`.
TEST(ParseWorkflowTest, ErrorsPointAtTheFieldInTheFileAsWritten) {
  struct Case {
    std::string name;
    std::string text;
    std::map<std::string, std::string> set;
    std::string error;  // the whole message
  };
  const std::vector<Case> cases = {
      {"no substitution",
       "workflow:\n  name: a\n  tasks:\n  - {name: t, image: i, resurce: big}\n",
       {},
       "f.yaml:4:25: workflow.tasks[0].resurce: unknown field (did you mean \"resource\"?); "
       "expected one of name, image, command, args, env, environment, resource, privileged, "
       "hostNetwork, volumeMounts, exitActions, sim_duration, sim_exit_code, lead, files, "
       "inputs, outputs, credentials, cacheSize"},
      {"a longer value substituted on a line above",
       "workflow:\n  name: sim-{{run}}\n  tasks:\n  - {name: t, image: i, priority: 1}\n",
       {{"run", "1234567890"}},
       "f.yaml:4:25: workflow.tasks[0].priority: unknown field; expected one of name, image, "
       "command, args, env, environment, resource, privileged, hostNetwork, volumeMounts, "
       "exitActions, sim_duration, sim_exit_code, lead, files, inputs, outputs, credentials, "
       "cacheSize"},
      {"substitutions earlier on the field's line, longer and shorter",
       "workflow:\n  name: a\n  tasks:\n  - {name: {{n}}, image: {{i}}, sim_exit_code: x}\n",
       {{"n", "a-much-longer-task-name"}, {"i", "i"}},
       "f.yaml:4:33: workflow.tasks[0].sim_exit_code: expected an integer"},
      {"multi-line substitution above",
       "workflow:\n  name: a\n  labels: {{labels}}\n  tasks:\n  - {name: t, image: i, lead: 3}\n",
       {{"labels", "\n    a: b\n    c: d"}},
       "f.yaml:5:25: workflow.tasks[0].lead: expected true or false, got number"},
      {"a value from a substitution is at its {{",
       "workflow:\n  name: a\n  tasks:\n  - name: t\n    image: i\n    command: [{{cmd}}]\n",
       {{"cmd", "{a: 1}"}},
       "f.yaml:6:15: workflow.tasks[0].command[0]: expected a string, got object"},
      {"a quantity of the wrong type names what was expected",
       "workflow:\n  name: a\n  resources:\n    default: {cpu: [1]}\n  tasks: [{name: t, image: "
       "i}]\n",
       {},
       "f.yaml:4:15: workflow.resources.default.cpu: expected a quantity (string or number), got "
       "array"},
      {"a number out of range",
       "workflow:\n  name: a\n  resources:\n    default: {cpu: 1e400}\n  tasks: [{name: t, "
       "image: i}]\n",
       {},
       "f.yaml:4:20: number out of range (larger than a 64-bit floating-point number can hold)"},
      {"JSON",
       "{\"workflow\": {\"name\": \"a\",\n  \"tasks\": [{\"name\": \"t\", \"image\": [1]}]}}",
       {},
       "f.yaml:2:27: workflow.tasks[0].image: expected a string, got array"},
      {"missing workflow", "version: 1\n", {}, "f.yaml:1:1: missing top-level field \"workflow\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto wf = ParseWorkflow(c.text, "f.yaml", c.set);
    ASSERT_FALSE(wf.ok());
    EXPECT_EQ(wf.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(wf.status().message(), c.error);
  }
}

// Binary garbage is not a workflow with an undefined variable: the text is checked before it is
// templated.
TEST(ParseWorkflowTest, TextThatIsNotYamlIsRefusedBeforeTemplating) {
  struct Case {
    std::string name;
    std::string text;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"invalid UTF-8", "workflow:\n  name: \xFF{{x}}\n",
       "f.yaml:2:9: not a valid YAML text: invalid UTF-8 (byte 0xFF)"},
      {"binary",
       std::string("\x7F"
                   "ELF\x02\x01\x01\0\0{{",
                   11),
       "f.yaml:1:1: not a valid YAML text: control character U+007F is not allowed"},
      {"NUL", std::string("workflow: {name: a}\0", 20),
       "f.yaml:1:20: not a valid YAML text: control character U+0000 is not allowed"},
      {"escape", "workflow:\n  name: \x1B[31m{{x}}\n",
       "f.yaml:2:9: not a valid YAML text: control character U+001B is not allowed"},
      {"a lone continuation byte", "a: \x80\n",
       "f.yaml:1:4: not a valid YAML text: invalid UTF-8 (byte 0x80)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto wf = ParseWorkflow(c.text, "f.yaml");
    ASSERT_FALSE(wf.ok());
    EXPECT_EQ(wf.status().message(), c.error);
  }
  // UTF-8 text, tabs and carriage returns are YAML text.
  auto wf = ParseWorkflow(
      "workflow:\r\n  name: a # caf\xC3\xA9\t\r\n  tasks: [{name: t, image: i}]\r\n", "f.yaml");
  EXPECT_TRUE(wf.ok()) << wf.status().ToString();
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

}  // namespace workflow_test
}  // namespace gpupool::submit
