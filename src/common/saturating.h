#pragma once
// int64 arithmetic that stops at the ends of the range instead of overflowing (which is undefined
// behaviour). Each Kubernetes quantity fits int64 in whole units (model::Quantity::Value, up to
// 2^63-1); sums of them over a pool or a queue need not. Where no sum overflows, the results are
// those of plain arithmetic, so decisions made on them do not change.

#include <cstdint>
#include <limits>

namespace gpupool {

inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return sum;
}

inline int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t difference;
  if (__builtin_sub_overflow(a, b, &difference)) {
    return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return difference;
}

}  // namespace gpupool
