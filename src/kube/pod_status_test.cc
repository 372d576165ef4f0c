#include "kube/pod_status.h"

#include <gtest/gtest.h>

namespace gpupool::kube {
namespace pod_status_test {

using Json = nlohmann::ordered_json;

TEST(ObservePodTest, StatusToTaskOutcome) {
  struct Case {
    std::string name;
    std::string status;
    TaskPhase phase;
    int exit_code;
    std::string reason;
    bool stuck;
  };
  std::vector<Case> cases = {
      {"pending, nothing yet", R"({"phase": "Pending"})", TaskPhase::kPending, 0, "", false},
      {"running", R"({"phase": "Running", "containerStatuses": [{"name": "main",
          "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]})",
       TaskPhase::kRunning, 0, "", false},
      {"node lost: Unknown counts as running", R"({"phase": "Unknown"})", TaskPhase::kRunning, 0,
       "", false},
      {"succeeded", R"({"phase": "Succeeded", "containerStatuses": [{"name": "main",
          "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]})",
       TaskPhase::kSucceeded, 0, "Completed", false},
      {"failed with an exit code", R"({"phase": "Failed", "containerStatuses": [
          {"name": "sidecar", "state": {"terminated": {"exitCode": 0}}},
          {"name": "main", "state": {"terminated": {"exitCode": 3, "reason": "Error"}}}]})",
       TaskPhase::kFailed, 3, "Error", false},
      {"oom killed", R"({"phase": "Failed", "containerStatuses": [{"name": "main",
          "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]})",
       TaskPhase::kFailed, 137, "OOMKilled", false},
      {"an init container failed first", R"({"phase": "Failed",
          "initContainerStatuses": [{"name": "init", "state": {"terminated": {"exitCode": 2,
            "reason": "Error"}}}],
          "containerStatuses": [{"name": "main", "state": {"waiting": {"reason": "PodInitializing"}}}]})",
       TaskPhase::kFailed, 2, "Error", false},
      {"evicted, no exit code", R"({"phase": "Failed", "reason": "Evicted",
          "message": "The node was low on resource: memory."})",
       TaskPhase::kFailed, kNoExitCode, "Evicted", false},
      {"image pull back-off", R"({"phase": "Pending", "containerStatuses": [{"name": "main",
          "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling"}}}]})",
       TaskPhase::kPending, 0, "ImagePullBackOff", true},
      {"image pull error", R"({"phase": "Pending", "containerStatuses": [{"name": "main",
          "state": {"waiting": {"reason": "ErrImagePull"}}}]})",
       TaskPhase::kPending, 0, "ErrImagePull", true},
      {"still creating is not stuck", R"({"phase": "Pending", "containerStatuses": [{"name": "m",
          "state": {"waiting": {"reason": "ContainerCreating"}}}]})",
       TaskPhase::kPending, 0, "", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TaskObservation o = ObservePod({{"status", Json::parse(c.status)}});
    EXPECT_EQ(static_cast<int>(o.phase), static_cast<int>(c.phase));
    EXPECT_EQ(o.exit_code, c.exit_code);
    EXPECT_EQ(o.reason, c.reason);
    EXPECT_EQ(o.stuck, c.stuck);
  }
}

TEST(ObservePodTest, FinishedAtIsTheLastContainerEnd) {
  TaskObservation o = ObservePod(Json::parse(R"({"status": {"phase": "Failed",
      "containerStatuses": [
        {"name": "a", "state": {"terminated": {"exitCode": 1, "finishedAt": "2026-01-01T00:00:02Z"}}},
        {"name": "b", "state": {"terminated": {"exitCode": 0, "finishedAt": "2026-01-01T00:00:05Z"}}}
      ]}})"));
  EXPECT_EQ(o.finished_ms, 1767225605000);
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(ObservePod(Json::parse(R"({"status": {"phase": "Running"}})")).finished_ms, 0);
}

}  // namespace pod_status_test
}  // namespace gpupool::kube
