// Seed 004's Kubernetes objects in scenarios: batch/v1 Job and policy/v1 PodDisruptionBudget.

#include <gtest/gtest.h>

#include "model/job.h"
#include "scheduler/scenario.h"

namespace gpupool::scheduler {
namespace scenario_objects_test {

TEST(ScenarioObjectsTest, SeedObjectsLoadAsWritten) {
  const std::string dir = std::string(GPUPOOL_SOURCE_DIR) + "/examples/machine-pools/";
  Result<Scenario> scenario = LoadScenarioFiles({dir + "seed-objects.yaml", dir + "seed-pod.yaml"});
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  const ClusterSnapshot& s = scenario->snapshot;
  // Each Job adds its one pod (parallelism 1); the preStop pod is the third.
  ASSERT_EQ(s.pods.size(), 3u);
  EXPECT_EQ(s.pods[0].name, "batch-job-0");
  EXPECT_EQ(s.pods[0].labels.at(model::kJobNameLabel), "batch-job");
  EXPECT_EQ(s.pods[0].node_selector.at("node.kubernetes.io/machinepool"), "additional");
  EXPECT_EQ(s.pods[1].name, "ml-training-0");
  EXPECT_EQ(s.pods[1].requests.at("nvidia.com/gpu").Value(), 1);
  EXPECT_EQ(s.pods[2].name, "checkpointing");
  EXPECT_EQ(s.pods[2].pre_stop,
            std::vector<std::string>{"app: exec /bin/sh -c save_checkpoint.sh"});
  EXPECT_EQ(s.pods[2].GracePeriodSeconds(), 30);
  ASSERT_EQ(s.disruption_budgets.size(), 1u);
  EXPECT_EQ(s.disruption_budgets[0].name, "ml-training-pdb");
  EXPECT_EQ(s.disruption_budgets[0].Rule(), "minAvailable 0");
}

TEST(ScenarioObjectsTest, JobsExpandToParallelismUpToCompletions) {
  struct Case {
    std::string name;
    std::string counts;
    std::vector<std::string> pods;
  };
  std::vector<Case> cases = {
      {"defaults", "", {"train-0"}},
      {"parallelism 3", "  parallelism: 3\n", {"train-0", "train-1", "train-2"}},
      {"capped by completions", "  parallelism: 5\n  completions: 2\n", {"train-0", "train-1"}},
      {"parallelism 0", "  parallelism: 0\n", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Scenario scenario;
    Status added = AddScenarioText(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train}\n"
        "spec:\n" +
            c.counts +
            "  template:\n    spec:\n      containers: [{name: c, "
            "image: i}]\n",
        "j.yaml", scenario);
    ASSERT_TRUE(added.ok()) << added.ToString();
    std::vector<std::string> names;
    for (const auto& pod : scenario.snapshot.pods) names.push_back(pod.name);
    EXPECT_EQ(names, c.pods);
  }
}

TEST(ScenarioObjectsTest, BadObjectsNameFileLineAndField) {
  const std::string pdb = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p}\n";
  const std::string job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n";
  struct Case {
    std::string name;
    std::string text;
    std::string want;  // the start of the message
  };
  std::vector<Case> cases = {
      {"both set", pdb + "spec:\n  minAvailable: 1\n  maxUnavailable: 1\n",
       "s.yaml:6:3: PodDisruptionBudget p: spec.maxUnavailable: minAvailable and maxUnavailable "
       "cannot be both set"},
      {"percent above 100", pdb + "spec:\n  minAvailable: 150%\n",
       "s.yaml:5:3: PodDisruptionBudget p: spec.minAvailable: must not be greater than 100%"},
      {"negative", pdb + "spec:\n  maxUnavailable: -2\n",
       "s.yaml:5:3: PodDisruptionBudget p: spec.maxUnavailable: must be greater than or equal to "
       "0, got -2"},
      {"wrong apiVersion",
       "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\n"
       "metadata: {name: p}\nspec: {}\n",
       "s.yaml:1:1: PodDisruptionBudget p: apiVersion: expected \"policy/v1\""},
      {"unknown selector field", pdb + "spec:\n  selector:\n    matchLabel: {app: x}\n",
       "s.yaml:6:5: PodDisruptionBudget p: spec.selector.matchLabel: unknown field (did you mean "
       "\"matchLabels\"?)"},
      {"negative parallelism", job + "spec:\n  parallelism: -1\n  template: {spec: {}}\n",
       "s.yaml:5:3: Job j: spec.parallelism: must be greater than or equal to 0, got -1"},
      {"template restartPolicy Always",
       job + "spec:\n  template:\n    spec:\n      restartPolicy: Always\n",
       "s.yaml:7:7: Job j: spec.template.spec.restartPolicy: a Job's pods end"},
      {"wrong kind spelling", "apiVersion: batch/v1\nkind: Jbo\nmetadata: {name: j}\n",
       "s.yaml:1: kind \"Jbo\" is not part of a scenario (did you mean \"Job\"?)"},
      {"negative grace period",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  terminationGracePeriodSeconds: "
       "-1\n",
       "s.yaml:5:3: Pod p: spec.terminationGracePeriodSeconds: -1 is out of range"},
      {"preStop without a handler",
       "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
       "    lifecycle:\n      preStop: {}\n",
       "s.yaml:8:7: Pod p: spec.containers[0].lifecycle.preStop: expected exactly one of exec"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Scenario scenario;
    Status added = AddScenarioText(c.text, "s.yaml", scenario);
    ASSERT_FALSE(added.ok());
    EXPECT_TRUE(added.message().starts_with(c.want)) << added.message();
  }
  // Two budgets of one name.
  Scenario twice;
  ASSERT_TRUE(AddScenarioText(pdb + "spec: {}\n---\n" + pdb + "spec: {}\n", "s.yaml", twice).ok());
  EXPECT_EQ(ValidateScenario(twice).message(), "PodDisruptionBudget p: duplicate");
}

TEST(ScenarioObjectsTest, BlockedEvictionsInTheDecisionOutput) {
  // n1 (2 GPUs) is full of mlops pods under a budget that allows none to go; rnd owns the GPUs.
  const std::string text = R"(apiVersion: gpupool.io/v1
kind: Queue
metadata: {name: rnd}
spec: {resources: {default: {gpu: {deserved: 2}}}}
---
apiVersion: gpupool.io/v1
kind: Queue
metadata: {name: mlops}
spec: {resources: {default: {gpu: {deserved: 0}}}}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110", nvidia.com/gpu: "2"}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: serve}
spec: {minAvailable: 100%, selector: {matchLabels: {app: serve}}}
---
apiVersion: v1
kind: Pod
metadata: {name: serve-0, labels: {app: serve, gpupool.io/queue: mlops}}
spec: {nodeName: n1, containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: owner, labels: {gpupool.io/queue: rnd}}
spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}
)";
  Scenario scenario;
  ASSERT_TRUE(AddScenarioText(text, "s.yaml", scenario).ok());
  nlohmann::ordered_json out = ScheduleResultToJson(Schedule(scenario, SchedulerOptions{}));
  EXPECT_TRUE(out["evictions"].empty()) << out.dump(1);
  ASSERT_EQ(out["blockedEvictions"].size(), 1u) << out.dump(1);
  EXPECT_EQ(out["blockedEvictions"][0]["pod"], "serve-0");
  EXPECT_EQ(out["blockedEvictions"][0]["forPod"], "owner");
  EXPECT_EQ(out["blockedEvictions"][0]["message"],
            "PodDisruptionBudget serve (minAvailable 100%) allows 0 more disruptions: 1 of 1 pods "
            "healthy, 1 needed");
  ASSERT_EQ(out["unschedulable"].size(), 1u);
  EXPECT_NE(out["unschedulable"][0]["reason"].get<std::string>().find(
                "PodDisruptionBudget kept: pod serve-0 on node n1"),
            std::string::npos)
      << out.dump(1);
  std::string table = ScheduleResultToTable(Schedule(scenario, SchedulerOptions{}));
  EXPECT_NE(table.find("EVICTIONS BLOCKED BY DISRUPTION BUDGETS (1)"), std::string::npos) << table;
}

}  // namespace scenario_objects_test
}  // namespace gpupool::scheduler
