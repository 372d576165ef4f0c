#pragma once
// How long each phase of a scheduling step took, for the log line of a slow step (as
// kube-scheduler logs the trace of a scheduling attempt past its threshold): when placements lag,
// the first question is which phase grew (the store's read or writes, the snapshot, the cycle,
// the backend, the dashboard's views).

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpupool::controller {

class StepTrace {
 public:
  using Clock = std::chrono::steady_clock;

  explicit StepTrace(Clock::time_point start = Clock::now()) : start_(start), last_(start) {}

  // The phase that ended at `at` (it began where the previous one ended).
  void Mark(std::string_view phase, Clock::time_point at = Clock::now());

  // From the start to the last Mark.
  Clock::duration Total() const { return last_ - start_; }

  // "1.392 s: load 366 ms, advance 1 ms, ..." in the order of the marks.
  std::string Summary() const;

 private:
  Clock::time_point start_;
  Clock::time_point last_;
  std::vector<std::pair<std::string_view, Clock::duration>> phases_;
};

}  // namespace gpupool::controller
