#include "kube/flow_control.h"

#include <gtest/gtest.h>

namespace gpupool::kube {
namespace flow_control_test {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using Time = std::chrono::steady_clock::time_point;

TEST(TokenBucketTest, BurstThenQps) {
  TokenBucket bucket(/*qps=*/10, /*burst=*/3);
  Time t0{};
  // Three at once, then each turn 100 ms after the previous one.
  EXPECT_EQ(bucket.Reserve(t0), nanoseconds(0));
  EXPECT_EQ(bucket.Reserve(t0), nanoseconds(0));
  EXPECT_EQ(bucket.Reserve(t0), nanoseconds(0));
  EXPECT_EQ(bucket.Reserve(t0), milliseconds(100));
  EXPECT_EQ(bucket.Reserve(t0), milliseconds(200));
  // 300 ms later the two reserved turns are paid and one token is back.
  EXPECT_EQ(bucket.Reserve(t0 + milliseconds(300)), nanoseconds(0));
  EXPECT_EQ(bucket.Reserve(t0 + milliseconds(300)), milliseconds(100));
  // Idle time refills up to the burst, not beyond.
  Time later = t0 + std::chrono::seconds(60);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bucket.Reserve(later), nanoseconds(0)) << i;
  EXPECT_EQ(bucket.Reserve(later), milliseconds(100));
}

TEST(TokenBucketTest, ClientGoDefaultsAndNoLimit) {
  TokenBucket defaults(5, 10);
  Time t0{};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(defaults.Reserve(t0), nanoseconds(0)) << i;
  EXPECT_EQ(defaults.Reserve(t0), milliseconds(200));

  TokenBucket unlimited(-1, 1);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(unlimited.Reserve(t0), nanoseconds(0));
}

TEST(BackoffTest, GrowsWithJitterUpToTheMaximumAndResets) {
  BackoffPolicy policy{milliseconds(800), milliseconds(30000), 2.0, 1.0};
  Backoff backoff(policy, 42);
  const int64_t bases[] = {800, 1600, 3200, 6400, 12800, 25600, 30000, 30000};
  for (int64_t base : bases) {
    int64_t delay = backoff.Next().count();
    EXPECT_GE(delay, base);
    EXPECT_LT(delay, 2 * base);
  }
  backoff.Reset();
  int64_t first = backoff.Next().count();
  EXPECT_GE(first, 800);
  EXPECT_LT(first, 1600);

  Backoff no_jitter({milliseconds(10), milliseconds(35), 2.0, 0.0}, 1);
  EXPECT_EQ(no_jitter.Next(), milliseconds(10));
  EXPECT_EQ(no_jitter.Next(), milliseconds(20));
  EXPECT_EQ(no_jitter.Next(), milliseconds(35));
  EXPECT_EQ(no_jitter.Next(), milliseconds(35));
}

}  // namespace flow_control_test
}  // namespace gpupool::kube
