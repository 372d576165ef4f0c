#include "scheduler/scorers/fragmentation.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "scheduler/cycle_setup.h"
#include "scheduler/cycle_test_util.h"
#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace fragmentation_test {

TaskType Whole(int gpus, double weight = 1) { return {0, gpus, 0, weight}; }
TaskType Fraction(int32_t milli, double weight = 1) { return {0, 0, milli, weight}; }
TaskType CpuOnly(int64_t cpu, double weight = 1) { return {cpu, 0, 0, weight}; }

TEST(FragmentationTest, FitTermPerTaskType) {
  struct Case {
    std::string name;
    std::vector<int32_t> devices;
    TaskType type;
    int64_t want;
  };
  const std::vector<Case> cases = {
      {"whole: enough full devices, the partial ones are lost",
       {1000, 1000, 300, 0},
       Whole(2),
       300},
      {"whole: too few full devices, all is lost", {1000, 300, 0, 0}, Whole(2), 1300},
      {"fraction: devices with less left are lost", {1000, 400, 600, 200}, Fraction(500), 600},
      {"fraction: no device has enough, all is lost", {400, 200}, Fraction(500), 600},
      {"no GPUs: it can use none, all is lost", {300, 0}, CpuOnly(1000), 300},
      {"no devices", {}, Whole(1), 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const int n = static_cast<int>(c.devices.size());
    EXPECT_EQ(FitTerm(c.type, SummarizeDevices(c.devices.data(), n), c.devices.data(), n), c.want);
  }
}

TEST(FragmentationTest, WeightsTheTermsAndCountsAllWhenCpuDoesNotFit) {
  const std::vector<int32_t> devices = {1000, 500};
  const std::vector<TaskType> types = {Whole(1, 0.5), Fraction(600, 0.25), {4000, 1, 0, 0.25}};
  // Whole(1): 500 lost; Fraction(600): 500 lost; the third needs 4 cpus: with 2, all 1500 lost.
  EXPECT_DOUBLE_EQ(Fragmentation(types, devices.data(), 2, 2000),
                   0.5 * 500 + 0.25 * 500 + 0.25 * 1500);
  EXPECT_DOUBLE_EQ(Fragmentation(types, devices.data(), 2, 4000),
                   0.5 * 500 + 0.25 * 500 + 0.25 * 500);
  // A type without GPUs loses all the free GPU, wherever its cpu fits or not: placing a CPU pod
  // changes its term only by the GPU it takes (none), so CPU pods go where they leave the GPU
  // types their cpu.
  const std::vector<TaskType> with_cpu_only = {{2000, 1, 0, 0.5}, CpuOnly(1000, 0.5)};
  EXPECT_DOUBLE_EQ(Fragmentation(with_cpu_only, devices.data(), 2, 8000), 0.5 * 500 + 0.5 * 1500);
  EXPECT_DOUBLE_EQ(Fragmentation(with_cpu_only, devices.data(), 2, 0), 0.5 * 1500 + 0.5 * 1500);
  const std::vector<int32_t> used = {0, 0};
  EXPECT_EQ(Fragmentation(types, used.data(), 2, 0), 0);  // nothing free, nothing lost
  EXPECT_EQ(Fragmentation(types, nullptr, 0, 0), 0);
}

// The FGD scorer keeps each node's FitTerms and sums them later against other free cpu;
// the sum must be the very same double as from the devices directly.
TEST(FragmentationTest, KeptTermsGiveTheSameBitsAsTheDevices) {
  std::mt19937 rng(7);
  const int32_t levels[] = {0, 250, 500, 750, 1000};
  for (int round = 0; round < 500; ++round) {
    std::vector<TaskType> types;
    for (int t = 0; t < 1 + static_cast<int>(rng() % 8); ++t) {
      const int64_t cpu = 1000 * static_cast<int64_t>(rng() % 8);
      const double weight = 1.0 / (1 + rng() % 9);
      switch (rng() % 3) {
        case 0:
          types.push_back({cpu, 1 + static_cast<int>(rng() % 8), 0, weight});
          break;
        case 1:
          types.push_back({cpu, 0, levels[1 + rng() % 3], weight});
          break;
        default:
          types.push_back({cpu, 0, 0, weight});
      }
    }
    std::vector<int32_t> devices(rng() % 9);
    for (int32_t& d : devices) d = levels[rng() % 5];
    const int n = static_cast<int>(devices.size());
    const DeviceSummary summary = SummarizeDevices(devices.data(), n);
    std::vector<int64_t> terms;
    for (const TaskType& type : types) terms.push_back(FitTerm(type, summary, devices.data(), n));
    const int64_t cpu_free = 1000 * static_cast<int64_t>(rng() % 8);
    const double kept =
        Fragmentation(types, n, summary.all, cpu_free, [&](size_t t) { return terms[t]; });
    EXPECT_EQ(kept, Fragmentation(types, devices.data(), n, cpu_free)) << "round " << round;
  }
}

// The typical workload groups the pods by GPU demand, each type with the least cpu of its pods:
// three 1-GPU pods asking three different cpus are one type (the most common), whereas as
// (cpu, GPUs) shapes they would be three types less common than the two equal fractions.
TEST(FragmentationTest, TypicalTaskTypesByGpuDemand) {
  using testing::PodBuilder;
  ClusterSnapshot snapshot;
  snapshot.nodes = {testing::NodeBuilder("n").Gpus(2).Build()};
  snapshot.pods = {PodBuilder("g1").Cpu("11").Gpus(1).Build(),
                   PodBuilder("g2").Cpu("3").Gpus(1).Build(),
                   PodBuilder("g3").Cpu("8").Gpus(1).Build(),
                   PodBuilder("f1").Cpu("4").Fraction("0.5").Gpus(1).Build(),
                   PodBuilder("f2").Cpu("4").Fraction("0.5").Gpus(1).Build(),
                   PodBuilder("c1").Cpu("12").Build()};
  testing::CycleFixture fx(std::move(snapshot));
  const std::vector<Job> jobs = BuildJobs(fx.state, fx.setup.gangs);
  struct Case {
    int max_types;
    std::vector<TaskType> want;
  };
  const std::vector<Case> cases = {
      {1, {{3000, 1, 0, 3.0 / 6}}},
      {2, {{3000, 1, 0, 3.0 / 6}, {4000, 0, 500, 2.0 / 6}}},
      // The rest by count; the CPU pod is a demand of its own (no GPU).
      {8, {{3000, 1, 0, 3.0 / 6}, {4000, 0, 500, 2.0 / 6}, {12000, 0, 0, 1.0 / 6}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.max_types);
    const std::vector<TaskType> got = TypicalTaskTypes(fx.state, jobs, c.max_types);
    ASSERT_EQ(got.size(), c.want.size());
    for (size_t t = 0; t < got.size(); ++t) {
      EXPECT_EQ(got[t].cpu, c.want[t].cpu) << t;
      EXPECT_EQ(got[t].gpu_whole, c.want[t].gpu_whole) << t;
      EXPECT_EQ(got[t].gpu_fraction, c.want[t].gpu_fraction) << t;
      EXPECT_DOUBLE_EQ(got[t].weight, c.want[t].weight) << t;
    }
  }
}

}  // namespace fragmentation_test
}  // namespace gpupool::scheduler
