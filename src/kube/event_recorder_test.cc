#include "kube/event_recorder.h"

#include <gtest/gtest.h>

namespace gpupool::kube {
namespace event_recorder_test {

using Json = nlohmann::ordered_json;

Json Pod(const std::string& name, const std::string& uid) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", uid}}}};
}

constexpr int64_t kT0 = 1767225600000;  // 2026-01-01T00:00:00Z

TEST(EventRecorderTest, RepeatsAreCountedNotMultiplied) {
  EventRecorder recorder;
  const std::string full = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.";
  EventWrite first = recorder.Record(Pod("p", "u1"), "Warning", "FailedScheduling", full, kT0);
  EXPECT_EQ(first.kind, EventWrite::Kind::kCreate);
  EXPECT_EQ(first.path, "/api/v1/namespaces/team-a/events");
  EXPECT_EQ(first.body["count"], 1);
  EXPECT_EQ(first.body["reason"], "FailedScheduling");
  EXPECT_EQ(first.body["involvedObject"]["uid"], "u1");
  EXPECT_EQ(first.body["firstTimestamp"], "2026-01-01T00:00:00Z");
  const std::string name = first.body["metadata"]["name"].get<std::string>();
  EXPECT_EQ(name.rfind("p.", 0), 0u);

  for (int i = 2; i <= 4; ++i) {
    EventWrite again =
        recorder.Record(Pod("p", "u1"), "Warning", "FailedScheduling", full, kT0 + i * 1000);
    EXPECT_EQ(again.kind, EventWrite::Kind::kPatch);
    EXPECT_EQ(again.path, "/api/v1/namespaces/team-a/events/" + name);
    EXPECT_EQ(again.body["count"], i);
    EXPECT_EQ(again.body["lastTimestamp"], "2026-01-01T00:00:0" + std::to_string(i) + "Z");
  }

  struct Case {
    std::string name;
    Json pod;
    std::string reason;
    std::string message;
  };
  std::vector<Case> distinct = {
      {"another message", Pod("p", "u1"), "FailedScheduling", "0/3 nodes are available: 1 x."},
      {"another reason", Pod("p", "u1"), "Preempted", full},
      {"the same name, another pod", Pod("p", "u2"), "FailedScheduling", full},
  };
  for (const Case& c : distinct) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(recorder.Record(c.pod, "Warning", c.reason, c.message, kT0).kind,
              EventWrite::Kind::kCreate);
  }
}

TEST(EventRecorderTest, ForgetsTheOldestAndWhatFailed) {
  EventRecorder recorder("gpupool", /*max_keys=*/2);
  auto record = [&](const std::string& pod) {
    return recorder.Record(Pod(pod, pod), "Warning", "FailedScheduling", "m", kT0);
  };
  record("a");
  record("b");
  EXPECT_EQ(record("a").kind, EventWrite::Kind::kPatch);  // a is now the most recent
  record("c");                                            // b goes
  EXPECT_EQ(record("a").kind, EventWrite::Kind::kPatch);
  EXPECT_EQ(record("b").kind, EventWrite::Kind::kCreate);

  EventWrite patch = record("b");
  ASSERT_EQ(patch.kind, EventWrite::Kind::kPatch);
  recorder.Forget(patch.key);  // e.g. the Event expired: 404
  EXPECT_EQ(record("b").kind, EventWrite::Kind::kCreate);
}

}  // namespace event_recorder_test
}  // namespace gpupool::kube
