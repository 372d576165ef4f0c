// `gpupool schedule` end to end: the Run:ai organisation example through the real binary.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "common/run_command.h"

namespace scheduler_e2e_test {

using gpupool::testing::Outcome;

Outcome RunGpupool(const std::string& args) {
  const std::string dir = std::string(GPUPOOL_SOURCE_DIR) + "/examples/runai-org";
  const std::string command = "cd '" + dir + "' && GPUPOOL_DB=sqlite:/tmp/gpupool-sched-e2e.db '" +
                              std::string(GPUPOOL_BIN) + "' " + args + " 2>&1";
  return gpupool::testing::RunCommand(command);
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

}  // namespace scheduler_e2e_test
