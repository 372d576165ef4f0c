#include "replay/metrics.h"

#include <gtest/gtest.h>

namespace gpupool::replay {
namespace metrics_test {

TEST(MetricsTest, SummarizeUsesNearestRank) {
  Distribution d = Summarize({5, 1, 4, 2, 3, 6, 7, 8, 9, 10});
  EXPECT_EQ(d.count, 10);
  EXPECT_DOUBLE_EQ(d.mean, 5.5);
  EXPECT_DOUBLE_EQ(d.p50, 5);
  EXPECT_DOUBLE_EQ(d.p90, 9);
  EXPECT_DOUBLE_EQ(d.p99, 10);
  EXPECT_DOUBLE_EQ(d.max, 10);
  EXPECT_EQ(Summarize({}).count, 0);
}

TEST(MetricsTest, TypicalShapesKeepTheMostCommonUpToThePopularity) {
  std::vector<TaskShape> pods;
  for (int i = 0; i < 6; ++i) pods.push_back({4000, 1, 0, 0});
  for (int i = 0; i < 3; ++i) pods.push_back({2000, 0, 500, 0});
  pods.push_back({8000, 8, 0, 0});
  // 60 % + 30 % covers 0.9: the 8-GPU shape is left out, the weights renormalised.
  std::vector<TaskShape> shapes = TypicalShapes(pods, 0.9);
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[0].gpus, 1);
  EXPECT_NEAR(shapes[0].weight, 6.0 / 9.0, 1e-12);
  EXPECT_EQ(shapes[1].gpu_milli, 500);
  EXPECT_NEAR(shapes[1].weight, 3.0 / 9.0, 1e-12);
  EXPECT_EQ(TypicalShapes(pods, 1.0).size(), 3u);
}

TEST(MetricsTest, NodeFragmentationFollowsThePaper) {
  struct Case {
    std::string name;
    std::vector<TaskShape> shapes;
    std::vector<int32_t> devices;
    int64_t cpu_free;
    double frag;
  };
  const std::vector<Case> cases = {
      {"a whole-GPU shape that fits sees the partial devices as fragment",
       {{1000, 1, 0, 1.0}},
       {1000, 300, 1000},
       8000,
       300},
      {"a whole-GPU shape that needs more devices than are free sees everything",
       {{1000, 2, 0, 1.0}},
       {1000, 300, 0},
       8000,
       1300},
      {"a fractional shape: devices with less than the fraction left",
       {{1000, 0, 500, 1.0}},
       {1000, 300, 600},
       8000,
       300},
      {"too little cpu: everything is fragment", {{9000, 0, 500, 1.0}}, {1000, 300}, 8000, 1300},
      {"a CPU-only shape sees all free GPU", {{1000, 0, 0, 1.0}}, {1000, 300}, 8000, 1300},
      {"weights add up",
       {{1000, 1, 0, 0.5}, {1000, 0, 0, 0.5}},
       {1000, 300},
       8000,
       0.5 * 300 + 0.5 * 1300},
      {"no free GPU, no fragment", {{1000, 0, 0, 1.0}}, {0, 0}, 8000, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_DOUBLE_EQ(NodeFragmentation(c.shapes, c.devices, c.cpu_free), c.frag);
  }
  const std::vector<TaskShape> one = {{1000, 1, 0, 1.0}};
  const std::vector<int32_t> devices = {1000, 300};
  const bool not_allowed[] = {false};
  EXPECT_DOUBLE_EQ(NodeFragmentation(one, devices, 8000, not_allowed), 1300);
}

TEST(MetricsTest, SummarizeJobsCountsOutcomesAndDelays) {
  std::vector<JobRecord> jobs(3);
  jobs[0] = {"a", "q1", 1, 1000, 0, 10'000, 70'000, JobOutcome::kCompleted, 1, 0, 0, ""};
  jobs[1] = {"b", "q1", 1, 1000, 5'000, std::nullopt, 50'000, JobOutcome::kQueueTimeout,
             0,   0,    0, ""};
  jobs[2] = {"c", "q2", 1, 1000, 0, 30'000, std::nullopt, JobOutcome::kRunning, 0, 2, 1, ""};
  Summary s;
  std::map<std::string, QueueSummary> queues;
  SummarizeJobs(jobs, s, queues);
  EXPECT_EQ(s.jobs, 3);
  EXPECT_EQ(s.completed, 1);
  EXPECT_EQ(s.queue_timeouts, 1);
  EXPECT_EQ(s.running, 1);
  EXPECT_EQ(s.preemptions, 1);
  EXPECT_EQ(s.reclaims, 2);
  EXPECT_EQ(s.no_execute_evictions, 1);
  EXPECT_EQ(s.queueing_delay_s.count, 2);
  EXPECT_DOUBLE_EQ(s.queueing_delay_s.mean, 20);
  EXPECT_EQ(s.jct_s.count, 1);
  EXPECT_DOUBLE_EQ(s.jct_s.max, 70);
  EXPECT_EQ(queues.at("q1").jobs, 2);
  EXPECT_DOUBLE_EQ(queues.at("q2").queueing_delay_s.p50, 30);
}

}  // namespace metrics_test
}  // namespace gpupool::replay
