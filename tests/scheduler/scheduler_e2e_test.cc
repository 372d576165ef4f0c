// `gpupool schedule` end to end: the Run:ai organisation example through the real binary.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

namespace {

struct Outcome {
  int code = -1;
  std::string out;
};

Outcome RunGpupool(const std::string& args) {
  const std::string dir = std::string(GPUPOOL_SOURCE_DIR) + "/examples/runai-org";
  const std::string command = "cd '" + dir + "' && GPUPOOL_DB=sqlite:/tmp/gpupool-sched-e2e.db '" +
                              std::string(GPUPOOL_BIN) + "' " + args + " 2>&1";
  Outcome outcome;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return outcome;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) outcome.out.append(buffer, n);
  const int status = pclose(pipe);
  outcome.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

TEST(ScheduleCommandTest, ReclaimScenarioAsJson) {
  Outcome o = RunGpupool("schedule -f cluster.yaml -f queues.yaml -f 02-reclaim.yaml -o json");
  ASSERT_EQ(o.code, 0) << o.out;
  nlohmann::ordered_json out = nlohmann::ordered_json::parse(o.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << o.out;
  ASSERT_EQ(out["evictions"].size(), 3u) << o.out;
  EXPECT_EQ(out["evictions"][0]["reason"], "reclaim");
  EXPECT_EQ(out["placements"].size(), 3u);
  EXPECT_EQ(out["fairShare"]["rnd"]["a100-80"]["gpu"]["fairShare"], 12);
}

TEST(ScheduleCommandTest, TableAndErrors) {
  Outcome o = RunGpupool("schedule -f cluster.yaml -f queues.yaml -f 01-over-quota.yaml -o table");
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("PLACEMENTS (12)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("mlops-serve-5"), std::string::npos) << o.out;
  Outcome missing = RunGpupool("schedule -f no-such-file.yaml -o json");
  EXPECT_EQ(missing.code, 1) << missing.out;
}

}  // namespace
