// `gpupool schedule` with machine pools, end to end: examples/machine-pools (seed 004's pools)
// through the real binary.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/run_command.h"

namespace autoscaler_e2e_test {

using Json = nlohmann::ordered_json;

using gpupool::testing::Outcome;

Outcome RunGpupool(const std::string& args) {
  const std::string dir = std::string(GPUPOOL_SOURCE_DIR) + "/examples/machine-pools";
  const std::string command =
      "cd '" + dir + "' && '" + std::string(GPUPOOL_BIN) + "' " + args + " 2>&1";
  return gpupool::testing::RunCommand(command);
}

Json ParsedJson(const Outcome& o) {
  Json out = Json::parse(o.out, nullptr, false);
  EXPECT_FALSE(out.is_discarded()) << o.out;
  return out;
}

const Json* ScaleUpOf(const Json& out, const std::string& pool) {
  for (const Json& up : out["scaleUp"]) {
    if (up["machinePool"] == pool) return &up;
  }
  return nullptr;
}

TEST(AutoscaleCommandTest, SeedPoolsScaleForNewWork) {
  Outcome o = RunGpupool("schedule -f pools.yaml -f cluster.yaml -f workload.yaml -o json");
  ASSERT_EQ(o.code, 0) << o.out;
  Json out = ParsedJson(o);
  // Twelve 2-cpu batch pods: 3 per m5.2xlarge (7.91 allocatable cpu); 2 nodes exist, 2 more.
  const Json* batch = ScaleUpOf(out, "batch-workers");
  ASSERT_NE(batch, nullptr) << o.out;
  EXPECT_EQ((*batch)["from"], 2);
  EXPECT_EQ((*batch)["to"], 4);
  // Three V100/T4 training pods go to the cheapest GPU pool they fit: the T4 spot pool.
  const Json* gpu = ScaleUpOf(out, "gpu-spot");
  ASSERT_NE(gpu, nullptr) << o.out;
  EXPECT_EQ((*gpu)["to"], 3);
  EXPECT_EQ((*gpu)["capacityType"], "spot");
  EXPECT_EQ(ScaleUpOf(out, "ml-training"), nullptr);
  EXPECT_EQ(out["placements"].size(), 15u);
  ASSERT_EQ(out["notScaled"].size(), 1u);
  EXPECT_EQ(out["notScaled"][0]["pod"], "web");
  EXPECT_EQ(out["cost"]["hourly"], "3.426");
  EXPECT_EQ(out["cost"]["machinePools"]["gpu-spot"]["hourlySaving"], "0.948");
}

TEST(AutoscaleCommandTest, SpotInterruptionAsTable) {
  Outcome o = RunGpupool("schedule -f pools.yaml -f cluster.yaml --interrupt ml-training-1");
  ASSERT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("SPOT INTERRUPTIONS"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("ml-training-1  ml-training   2m      ml-training-0"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("ml-training-0  gpu-spot-1"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("NoExecute"), std::string::npos) << o.out;
}

TEST(AutoscaleCommandTest, SeedObjectsJobsBudgetAndPreStop) {
  // Seed 004's own objects as written, with its pools.
  Outcome o = RunGpupool("schedule -f pools.yaml -f seed-objects.yaml -f seed-pod.yaml -o json");
  ASSERT_EQ(o.code, 0) << o.out;
  Json out = ParsedJson(o);
  std::map<std::string, std::string> placed;
  for (const Json& p : out["placements"]) placed[p["pod"]] = p["node"];
  // The GPU Job's pod goes to a new node of the cheapest GPU spot pool.
  EXPECT_TRUE(placed["ml-training-0"].starts_with("gpu-spot-")) << o.out;
  EXPECT_TRUE(placed.contains("checkpointing")) << o.out;
  // The batch Job selects machine pool `additional`, which pools.yaml does not define.
  ASSERT_EQ(out["notScaled"].size(), 1u) << o.out;
  EXPECT_EQ(out["notScaled"][0]["pod"], "batch-job-0");
}

TEST(AutoscaleCommandTest, SpotInterruptionDrainsWithTheGracePeriod) {
  Outcome o =
      RunGpupool("schedule -f pools.yaml -f cluster.yaml --interrupt ml-training-1 -o json");
  ASSERT_EQ(o.code, 0) << o.out;
  Json out = ParsedJson(o);
  ASSERT_EQ(out["interruptions"].size(), 1u) << o.out;
  const Json& drain = out["interruptions"][0]["drain"];
  ASSERT_EQ(drain.size(), 1u) << o.out;
  EXPECT_EQ(drain[0]["pod"], "ml-training-0");
  EXPECT_EQ(drain[0]["toldAfterSeconds"], 0);
  EXPECT_EQ(drain[0]["gracePeriodSeconds"], 30);
  EXPECT_EQ(drain[0]["goneAfterSeconds"], 30);
}

TEST(AutoscaleCommandTest, ErrorsExitOneWithTheCause) {
  struct Case {
    std::string args;
    std::string error;
  };
  const std::string dir = ::testing::TempDir();
  {
    std::ofstream(dir + "/bad-pool.yaml") << "apiVersion: gpupool.io/v1\nkind: MachinePool\n"
                                             "metadata: {name: p}\n"
                                             "spec: {instance_type: m5.xlarge, max_replica: 3}\n";
    std::ofstream(dir + "/catalog.yaml") << "instance_types:\n- {name: m5.xlarge, cpu: 4}\n";
  }
  const Case cases[] = {
      {"schedule -f pools.yaml -f cluster.yaml --interrupt compute-1",
       "machine pool compute is on demand"},
      {"schedule -f pools.yaml -f cluster.yaml --interrupt nope",
       "interrupt nope: no such node in the scenario"},
      {"schedule -f " + dir + "/bad-pool.yaml",
       "MachinePool p: spec.max_replica: unknown field (did you mean \"max_replicas\"?)"},
      {"schedule -f pools.yaml --catalog " + dir + "/catalog.yaml",
       "catalog.yaml: instance_types[0].memory: required"},
      {"schedule -f pools.yaml --catalog /no/such/catalog.yaml", "/no/such/catalog.yaml"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    Outcome o = RunGpupool(c.args);
    EXPECT_EQ(o.code, 1) << o.out;
    EXPECT_NE(o.out.find(c.error), std::string::npos) << o.out;
  }
}

TEST(AutoscaleCommandTest, WithoutMachinePoolsTheOutputIsThePlainSchedule) {
  Outcome o = RunGpupool("schedule -f cluster.yaml -o json");
  ASSERT_EQ(o.code, 0) << o.out;
  Json out = ParsedJson(o);
  EXPECT_FALSE(out.contains("scaleUp")) << o.out;
  EXPECT_TRUE(out.contains("placements")) << o.out;
}

}  // namespace autoscaler_e2e_test
