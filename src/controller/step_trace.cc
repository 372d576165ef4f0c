#include "controller/step_trace.h"

#include <cstdio>

namespace gpupool::controller {

void StepTrace::Mark(std::string_view phase, Clock::time_point at) {
  phases_.emplace_back(phase, at - last_);
  last_ = at;
}

std::string StepTrace::Summary() const {
  using Millis = std::chrono::duration<double, std::milli>;
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.3f s", Millis(Total()).count() / 1000);
  std::string out = buffer;
  for (size_t i = 0; i < phases_.size(); ++i) {
    std::snprintf(buffer, sizeof buffer, " %.0f ms", Millis(phases_[i].second).count());
    out += (i == 0 ? ": " : ", ") + std::string(phases_[i].first) + buffer;
  }
  return out;
}

}  // namespace gpupool::controller
