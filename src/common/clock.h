#pragma once
// Time is injected: production code takes a Clock&, tests pass a FakeClock.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace gpupool {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time in milliseconds since the Unix epoch.
  virtual int64_t NowMillis() const = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t NowMillis() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// Thread-safe manual clock for tests and the simulator.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_millis = 1'700'000'000'000) : now_(start_millis) {}
  int64_t NowMillis() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  void Advance(int64_t millis) {
    std::lock_guard lock(mu_);
    now_ += millis;
  }
  void Set(int64_t millis) {
    std::lock_guard lock(mu_);
    now_ = millis;
  }

 private:
  mutable std::mutex mu_;
  int64_t now_;
};

// RFC 3339 UTC text ("2026-11-22T01:02:03Z") for a millisecond timestamp.
std::string FormatTimestamp(int64_t millis);

}  // namespace gpupool
