#include "model/job.h"

#include <gtest/gtest.h>

#include "model/k8s.h"

namespace gpupool::model {
namespace job_test {

using Json = nlohmann::ordered_json;

// Seed 004's GPU example.
constexpr char kMlTraining[] = R"({"apiVersion": "batch/v1", "kind": "Job",
  "metadata": {"name": "ml-training"},
  "spec": {"template": {"spec": {
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true",
                     "effect": "NoSchedule"},
                    {"key": "spot", "operator": "Equal", "value": "true",
                     "effect": "PreferNoSchedule"}],
    "nodeSelector": {"node-type": "gpu"},
    "containers": [{"name": "training", "image": "my-ml-image",
                    "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}})";

TEST(JobTest, SeedExampleExpandsWithKubernetesDefaults) {
  Result<Job> job = JobFromManifest(Json::parse(kMlTraining));
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->parallelism, 1);
  EXPECT_FALSE(job->completions.has_value());
  EXPECT_EQ(job->backoff_limit, 6);
  std::vector<Json> pods = JobPods(*job, 0, JobPodsToStart(*job, 0, 0));
  ASSERT_EQ(pods.size(), 1u);
  Result<PodScheduling> pod = PodSchedulingFromJson(pods[0]);
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->name, "ml-training-0");
  EXPECT_EQ(pod->labels.at(kJobNameLabel), "ml-training");
  EXPECT_EQ(pod->labels.at(kLegacyJobNameLabel), "ml-training");
  EXPECT_EQ(pod->node_selector.at("node-type"), "gpu");
  EXPECT_EQ(pod->tolerations.size(), 2u);
  EXPECT_EQ(pod->requests.at("nvidia.com/gpu").Value(), 1);
}

TEST(JobTest, PodsToStart) {
  auto job_with = [](std::optional<int64_t> parallelism, std::optional<int64_t> completions) {
    Json m = Json::parse(kMlTraining);
    if (parallelism) m["spec"]["parallelism"] = *parallelism;
    if (completions) m["spec"]["completions"] = *completions;
    Result<Job> job = JobFromManifest(m);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return *job;
  };
  struct Case {
    std::string name;
    Job job;
    int64_t succeeded, active, want;
  };
  std::vector<Case> cases = {
      {"parallelism 3 of completions 5", job_with(3, 5), 0, 0, 3},
      {"parallelism above completions", job_with(8, 5), 0, 0, 5},
      {"two running, one done", job_with(3, 5), 1, 2, 1},
      {"the last ones", job_with(3, 5), 4, 0, 1},
      {"done", job_with(3, 5), 5, 0, 0},
      {"parallelism 0 runs nothing", job_with(0, 5), 0, 0, 0},
      {"work queue: parallelism until one succeeds", job_with(4, std::nullopt), 0, 1, 3},
      {"work queue: none after a success", job_with(4, std::nullopt), 1, 2, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(JobPodsToStart(c.job, c.succeeded, c.active), c.want);
  }
  Job five = job_with(3, 5);
  std::vector<Json> pods = JobPods(five, 3, 2);
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods[0]["metadata"]["name"], "ml-training-3");
  EXPECT_EQ(pods[1]["metadata"]["labels"][kJobCompletionIndexLabel], "4");
}

TEST(JobTest, RejectsBadInputNamingTheField) {
  struct Case {
    std::string name;
    std::string path;  // JSON pointer to set
    Json value;
    std::string want;
  };
  std::vector<Case> cases = {
      {"negative parallelism", "/spec/parallelism", -1,
       "spec.parallelism: must be greater than or equal to 0, got -1"},
      {"completions a string", "/spec/completions", "3",
       "spec.completions: expected an integer, got string"},
      {"negative backoffLimit", "/spec/backoffLimit", -2,
       "spec.backoffLimit: must be greater than or equal to 0"},
      {"unknown spec field", "/spec/paralelism", 2,
       "spec.paralelism: unknown field (did you mean \"parallelism\"?)"},
      {"restartPolicy Always", "/spec/template/spec/restartPolicy", "Always",
       "spec.template.spec.restartPolicy: a Job's pods end: expected Never or OnFailure"},
      {"bad toleration in the template", "/spec/template/spec/tolerations/0/effect", "NoSchedul",
       "spec.template.spec.tolerations[0].effect: expected one of NoSchedule"},
      {"wrong apiVersion", "/apiVersion", "batch/v2", "apiVersion: expected \"batch/v1\""},
      {"no template", "/spec/template", nullptr, "spec.template"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Json m = Json::parse(kMlTraining);
    if (c.value.is_null()) {
      m["spec"].erase("template");
    } else {
      m[Json::json_pointer(c.path)] = c.value;
    }
    Result<Job> job = JobFromManifest(m);
    ASSERT_FALSE(job.ok());
    EXPECT_NE(job.status().message().find(c.want), std::string::npos) << job.status().message();
  }
}

}  // namespace job_test
}  // namespace gpupool::model
