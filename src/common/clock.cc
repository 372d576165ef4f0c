#include "common/clock.h"

#include <ctime>
#include <string>

namespace gpupool {

std::string FormatTimestamp(int64_t millis) {
  std::time_t seconds = static_cast<std::time_t>(millis / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

}  // namespace gpupool
