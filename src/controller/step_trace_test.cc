#include "controller/step_trace.h"

#include <gtest/gtest.h>

namespace gpupool::controller {
namespace {

using std::chrono::milliseconds;

TEST(StepTraceTest, SaysEachPhaseInOrderWithTheTimeSinceThePreviousMark) {
  const StepTrace::Clock::time_point start{};
  StepTrace trace(start);
  trace.Mark("load", start + milliseconds(366));
  trace.Mark("cycle", start + milliseconds(367));
  trace.Mark("writes", start + milliseconds(1392));
  EXPECT_EQ(trace.Total(), milliseconds(1392));
  EXPECT_EQ(trace.Summary(), "1.392 s: load 366 ms, cycle 1 ms, writes 1025 ms");
}

TEST(StepTraceTest, AStepWithoutMarksHasNoPhases) {
  StepTrace trace(StepTrace::Clock::time_point{});
  EXPECT_EQ(trace.Total(), StepTrace::Clock::duration::zero());
  EXPECT_EQ(trace.Summary(), "0.000 s");
}

}  // namespace
}  // namespace gpupool::controller
