#include "backend/kubernetes/kube_backend.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

namespace gpupool::backend {
namespace kube_backend_test {

using Json = nlohmann::ordered_json;

TEST(PodNameForAttemptTest, ADnsLabelPerAttempt) {
  const std::regex dns_label("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  struct Case {
    std::string key;
    std::string prefix;
  };
  std::vector<Case> cases = {
      {"train-1/g/a/0", "train-1-g-a-0-"},
      {"Train_1/G/A/0", "train-1-g-a-0-"},  // lowercase, '_' becomes '-'
      {"wf/g/task.with.dots/12", "wf-g-task-with-dots-12-"},
      {std::string(200, 'x') + "/g/t/0", std::string(54, 'x') + "-"},  // cut to 63
      {"///", "task-"},
  };
  std::set<std::string> names;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key);
    std::string name = PodNameForAttempt(c.key);
    EXPECT_TRUE(std::regex_match(name, dns_label)) << name;
    EXPECT_LE(name.size(), 63u);
    EXPECT_EQ(name.rfind(c.prefix, 0), 0u) << name;
    EXPECT_EQ(PodNameForAttempt(c.key), name);  // stable
    names.insert(name);
  }
  // Keys that read alike still get different names.
  EXPECT_EQ(names.size(), cases.size());
  EXPECT_NE(PodNameForAttempt("a/b/c/0"), PodNameForAttempt("a-b/c/0"));
}

TEST(PodForTaskTest, TheSubmissionsPodMadeGpupools) {
  Json rendered = Json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "train-a", "labels": {"gpupool.io/queue": "team"},
                 "annotations": {"gpupool.io/sim-duration-seconds": "1"}},
    "spec": {"nodeName": "n1", "restartPolicy": "Always", "containers": [{"name": "main"}]},
    "status": {"phase": "Running"}})");
  Json pod = PodForTask(rendered, "wf/g/a/1", "team-ns");
  EXPECT_EQ(pod["metadata"]["name"], PodNameForAttempt("wf/g/a/1"));
  EXPECT_EQ(pod["metadata"]["namespace"], "team-ns");
  EXPECT_EQ(pod["metadata"]["labels"]["gpupool.io/queue"], "team");
  EXPECT_EQ(pod["metadata"]["labels"]["app.kubernetes.io/managed-by"], "gpupool");
  EXPECT_EQ(pod["metadata"]["annotations"]["gpupool.io/attempt"], "wf/g/a/1");
  EXPECT_EQ(pod["metadata"]["annotations"]["gpupool.io/sim-duration-seconds"], "1");
  EXPECT_EQ(pod["spec"]["schedulerName"], "gpupool");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  EXPECT_FALSE(pod["spec"].contains("nodeName"));  // bound through pods/binding
  EXPECT_FALSE(pod.contains("status"));
  EXPECT_EQ(pod["spec"]["containers"][0]["name"], "main");

  Json empty = PodForTask(Json(), "wf/g/b/0", "gpupool");
  EXPECT_EQ(empty["kind"], "Pod");
  EXPECT_EQ(empty["spec"]["schedulerName"], "gpupool");
}

}  // namespace kube_backend_test
}  // namespace gpupool::backend
