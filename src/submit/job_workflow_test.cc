#include "submit/job_workflow.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "config/config_set.h"
#include "model/k8s.h"
#include "submit/submit.h"

namespace gpupool::submit {
namespace job_workflow_test {

using json = nlohmann::ordered_json;
using ::testing::HasSubstr;

// Seed 004's "Scheduling GPU Workloads" Job, as written there.
constexpr char kMlTraining[] = R"({
  "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "ml-training"},
  "spec": {"template": {"spec": {
    "tolerations": [
      {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
      {"key": "spot", "operator": "Equal", "value": "true", "effect": "PreferNoSchedule"}],
    "nodeSelector": {"node-type": "gpu"},
    "containers": [{"name": "training", "image": "my-ml-image",
                    "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}})";

JobSubmission Convert(const json& manifest) {
  auto out = WorkflowFromJob(manifest);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : JobSubmission{};
}

TEST(JobWorkflowTest, SeedJobIsOneTaskWithItsPodFields) {
  JobSubmission job = Convert(json::parse(kMlTraining));
  EXPECT_EQ(job.pool, "");  // the caller's default pool
  const WorkflowSpec& wf = job.workflow;
  EXPECT_EQ(wf.name, "ml-training");
  EXPECT_EQ(wf.priority, Priority::kNormal);
  EXPECT_FALSE(wf.parallelism.has_value());  // one completion: nothing to hold back
  EXPECT_EQ(wf.backoff_limit, 6);            // Kubernetes' default
  ASSERT_EQ(wf.groups.size(), 1u);
  const TaskSpec& task = wf.groups[0].tasks[0];
  EXPECT_EQ(task.name, "0");
  EXPECT_EQ(task.image, "my-ml-image");
  EXPECT_EQ(task.pod_fields["spec"]["nodeSelector"], json({{"node-type", "gpu"}}));
  EXPECT_EQ(task.pod_fields["spec"]["tolerations"].size(), 2u);
  ASSERT_EQ(wf.resources.size(), 1u);
  EXPECT_EQ(wf.resources[0].gpu, 1);  // limits stand for requests, as in Kubernetes
  EXPECT_TRUE(wf.resources[0].cpu.is_null());
  EXPECT_EQ(wf.labels["batch.kubernetes.io/job-name"], "ml-training");
  EXPECT_THAT(job.idempotency_key, ::testing::StartsWith("job/default/ml-training/"));
  EXPECT_EQ(wf.document["tasks"][0]["image"], "my-ml-image");
}

TEST(JobWorkflowTest, CountsPlacementAndPriority) {
  json manifest = json::parse(kMlTraining);
  manifest["metadata"]["labels"] = {{"gpupool.io/pool", "team-a"},
                                    {"gpupool.io/queue", "rnd-training"},
                                    {"gpupool.io/platform", "a100_platform"}};
  manifest["metadata"]["annotations"] = {{"gpupool.io/node-pools", "a100-80, default"}};
  manifest["spec"]["completions"] = 5;
  manifest["spec"]["parallelism"] = 2;
  manifest["spec"]["backoffLimit"] = 1;
  manifest["spec"]["completionMode"] = "Indexed";
  manifest["spec"]["template"]["spec"]["priorityClassName"] = "low";
  manifest["spec"]["template"]["spec"]["containers"][0]["resources"] = {
      {"requests", {{"cpu", "4"}, {"memory", "16Gi"}, {"nvidia.com/gpu", 2}}},
      {"limits", {{"nvidia.com/gpu", 2}, {"ephemeral-storage", "50Gi"}}}};
  manifest["spec"]["template"]["metadata"] = {
      {"labels", {{"team", "vision"}}},
      {"annotations", {{"gpupool.io/sim-duration-seconds", "30"}}}};
  JobSubmission job = Convert(manifest);
  const WorkflowSpec& wf = job.workflow;
  EXPECT_EQ(job.pool, "team-a");
  EXPECT_EQ(wf.queue, "rnd-training");
  EXPECT_EQ(wf.node_pools, (std::vector<std::string>{"a100-80", "default"}));
  EXPECT_EQ(wf.priority, Priority::kLow);
  EXPECT_EQ(wf.parallelism, 2);
  EXPECT_EQ(wf.backoff_limit, 1);
  ASSERT_EQ(wf.groups.size(), 5u);
  EXPECT_EQ(wf.groups[4].tasks[0].name, "4");
  EXPECT_EQ(wf.groups[4].tasks[0].env.back(),
            json({{"name", "JOB_COMPLETION_INDEX"}, {"value", "4"}}));
  EXPECT_EQ(wf.groups[4].tasks[0].sim_duration_seconds, 30);
  EXPECT_EQ(wf.resources[0].cpu, "4");
  EXPECT_EQ(wf.resources[0].gpu, 2);
  EXPECT_EQ(wf.resources[0].storage, "50Gi");  // from limits: requests do not name it
  EXPECT_EQ(wf.resources[0].platform, "a100_platform");
  EXPECT_EQ(wf.labels["team"], "vision");
  EXPECT_EQ(wf.document["parallelism"], 2);
  EXPECT_EQ(wf.document["backoff_limit"], 1);

  // A changed Job is a new run; the same one, the same key.
  EXPECT_EQ(Convert(manifest).idempotency_key, job.idempotency_key);
  manifest["spec"]["completions"] = 6;
  EXPECT_NE(Convert(manifest).idempotency_key, job.idempotency_key);
}

// Every way a Job can ask what a workflow does not carry is refused with its field path.
TEST(JobWorkflowTest, RefusalsNameTheField) {
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    const char* error;
  };
  const std::vector<Case> cases = {
      {"work-queue", [](json& m) { m["spec"]["parallelism"] = 3; },
       "spec.completions: required when spec.parallelism is above 1"},
      {"paused", [](json& m) { m["spec"]["parallelism"] = 0; },
       "spec.parallelism: 0 starts no pod"},
      {"no completions", [](json& m) { m["spec"]["completions"] = 0; },
       "spec.completions: 0 runs no pod"},
      {"too many", [](json& m) { m["spec"]["completions"] = 5001; },
       "spec.completions: 5001 is above the 5000"},
      {"suspended", [](json& m) { m["spec"]["suspend"] = true; }, "spec.suspend:"},
      {"deadline", [](json& m) { m["spec"]["activeDeadlineSeconds"] = 60; },
       "spec.activeDeadlineSeconds: not carried"},
      {"failure policy", [](json& m) { m["spec"]["podFailurePolicy"] = json::object(); },
       "spec.podFailurePolicy: not carried"},
      {"mode", [](json& m) { m["spec"]["completionMode"] = "indexed"; },
       "spec.completionMode: expected NonIndexed or Indexed"},
      {"volumes",
       [](json& m) { m["spec"]["template"]["spec"]["volumes"] = json::array({json::object()}); },
       "spec.template.spec.volumes: not carried"},
      {"two containers",
       [](json& m) {
         json& c = m["spec"]["template"]["spec"]["containers"];
         c.push_back(c[0]);
       },
       "spec.template.spec.containers: expected one container"},
      {"mounts",
       [](json& m) {
         m["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = json::array();
       },
       "spec.template.spec.containers[0].volumeMounts: not carried"},
      {"unknown container field",
       [](json& m) { m["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "x"; },
       "spec.template.spec.containers[0].imagePullPolicyy: unknown field"},
      {"other resource",
       [](json& m) {
         m["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["amd.com/gpu"] = 1;
       },
       "spec.template.spec.containers[0].resources.limits.amd.com/gpu: unknown field"},
      {"priority class",
       [](json& m) { m["spec"]["template"]["spec"]["priorityClassName"] = "hihg"; },
       "expected high, normal or low"},
      {"namespace", [](json& m) { m["metadata"]["namespace"] = "ml"; },
       "metadata.namespace: expected \"default\""},
      {"node pools",
       [](json& m) {
         m["metadata"]["annotations"] = {{"gpupool.io/node-pools", "a,,b"}};
       },
       "metadata.annotations.gpupool.io/node-pools"},
      {"sim duration",
       [](json& m) {
         m["spec"]["template"]["metadata"] = {
             {"annotations", {{"gpupool.io/sim-duration-seconds", "ten"}}}};
       },
       "gpupool.io/sim-duration-seconds: expected whole seconds"},
      {"image", [](json& m) { m["spec"]["template"]["spec"]["containers"][0].erase("image"); },
       "spec.template.spec.containers[0].image: required string"},
      {"Job's own check", [](json& m) { m["spec"]["backoffLimit"] = -1; },
       "spec.backoffLimit: must be greater than or equal to 0"},
  };
  for (const Case& c : cases) {
    json manifest = json::parse(kMlTraining);
    c.edit(manifest);
    auto out = WorkflowFromJob(manifest);
    ASSERT_FALSE(out.ok()) << c.what;
    EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument) << c.what;
    EXPECT_THAT(out.status().message(), HasSubstr(c.error)) << c.what;
  }
}

std::vector<model::Node> GpuNodes() {
  auto node = model::NodeFromJson(json::parse(R"({"apiVersion": "v1", "kind": "Node",
      "metadata": {"name": "gpu-0", "labels": {"node-type": "gpu"}},
      "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "ephemeral-storage": "1Ti",
                                 "nvidia.com/gpu": "8", "pods": "110"}}})"));
  EXPECT_TRUE(node.ok()) << node.status().ToString();
  return {*node};
}

// Through the pipeline: the Job's pod fields are the base pod's, the pool's templates merge over
// them, and the system labels and priority class are the workflow's.
TEST(JobWorkflowTest, PodsThroughThePipeline) {
  json manifest = json::parse(kMlTraining);
  manifest["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 45;
  manifest["spec"]["template"]["spec"]["containers"][0]["lifecycle"] = {
      {"preStop", {{"exec", {{"command", {"sh", "-c", "save-checkpoint"}}}}}}};
  manifest["spec"]["completions"] = 3;
  JobSubmission job = Convert(manifest);
  SubmitOptions options;
  options.workflow_id = "ml-training-7";
  auto plan = Submit(config::BuiltinConfigs(), GpuNodes(), {"alice", {"osmo-admin"}}, "default",
                     job.workflow, options);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->tasks.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const json& pod = plan->tasks[i].pod;
    SCOPED_TRACE(i);
    EXPECT_EQ(pod["metadata"]["name"], "ml-training-7-" + std::to_string(i));
    EXPECT_EQ(pod["spec"]["nodeSelector"]["node-type"], "gpu");
    EXPECT_EQ(pod["spec"]["tolerations"].size(), 2u);
    EXPECT_EQ(pod["spec"]["terminationGracePeriodSeconds"], 45);
    const json& container = pod["spec"]["containers"][0];
    EXPECT_EQ(container["image"], "my-ml-image");
    EXPECT_EQ(container["lifecycle"]["preStop"]["exec"]["command"][2], "save-checkpoint");
    EXPECT_EQ(container["resources"]["limits"]["nvidia.com/gpu"], "1");
    EXPECT_EQ(pod["metadata"]["labels"]["batch.kubernetes.io/job-name"], "ml-training");
    EXPECT_EQ(pod["metadata"]["labels"]["gpupool.io/pool"], "default");
    EXPECT_EQ(pod["spec"]["priorityClassName"], "normal");
  }
  // The skeleton path (tasks after the first two) builds the same pod as the full one.
  options.reuse_per_resource = false;
  auto full = Submit(config::BuiltinConfigs(), GpuNodes(), {"alice", {"osmo-admin"}}, "default",
                     job.workflow, options);
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(full->tasks[i].pod, plan->tasks[i].pod) << i;
}

}  // namespace job_workflow_test
}  // namespace gpupool::submit
