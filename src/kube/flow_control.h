#pragma once
// How the client paces itself, as client-go does:
//   TokenBucket  the client-side rate limit (rest.Config QPS and Burst, defaults 5 and 10): up
//                to `burst` requests at once, then `qps` per second. Reserve() never refuses:
//                it hands out a turn and says how long to wait for it, so waiting callers keep
//                their order and never spin.
//   Backoff      reconnects and relists after failures: exponential from `initial` up to `max`,
//                each delay stretched by a random factor in [1, 1 + jitter) so that many clients
//                cut off together do not come back together (client-go's reflector: 800 ms to
//                30 s, factor 2, jitter 1).
// Thread contract: TokenBucket is safe from any thread; Backoff belongs to one caller.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>

namespace gpupool::kube {

class TokenBucket {
 public:
  // qps <= 0: no limit.
  TokenBucket(double qps, int burst);

  // Takes the next turn; returns how long from `now` until it comes (zero when a token is free).
  std::chrono::nanoseconds Reserve(std::chrono::steady_clock::time_point now);

 private:
  const double qps_;
  const double burst_;
  std::mutex mu_;
  double tokens_;  // may go negative: turns handed out ahead of time
  std::chrono::steady_clock::time_point last_;
  bool started_ = false;
};

struct BackoffPolicy {
  std::chrono::milliseconds initial{800};
  std::chrono::milliseconds max{30000};
  double factor = 2.0;
  double jitter = 1.0;
};

class Backoff {
 public:
  Backoff(BackoffPolicy policy, uint64_t seed);

  // The next delay (the base grows by `factor` each call, up to `max`).
  std::chrono::milliseconds Next();
  // After a success: the next failure starts again from `initial`.
  void Reset();

 private:
  const BackoffPolicy policy_;
  std::mt19937_64 random_;
  double base_ms_;
};

}  // namespace gpupool::kube
