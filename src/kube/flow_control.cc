#include "kube/flow_control.h"

#include <algorithm>

namespace gpupool::kube {

TokenBucket::TokenBucket(double qps, int burst)
    : qps_(qps), burst_(std::max(1, burst)), tokens_(std::max(1, burst)) {}

std::chrono::nanoseconds TokenBucket::Reserve(std::chrono::steady_clock::time_point now) {
  if (qps_ <= 0) return std::chrono::nanoseconds(0);
  std::lock_guard lock(mu_);
  if (started_ && now > last_) {
    double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
  }
  if (!started_ || now > last_) last_ = now;
  started_ = true;
  tokens_ -= 1;
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(static_cast<int64_t>(-tokens_ / qps_ * 1e9));
}

Backoff::Backoff(BackoffPolicy policy, uint64_t seed)
    : policy_(policy), random_(seed), base_ms_(static_cast<double>(policy.initial.count())) {}

std::chrono::milliseconds Backoff::Next() {
  double base = std::min(base_ms_, static_cast<double>(policy_.max.count()));
  std::uniform_real_distribution<double> spread(0.0, 1.0);
  double delay = base * (1.0 + policy_.jitter * spread(random_));
  base_ms_ = std::min(base_ms_ * policy_.factor, static_cast<double>(policy_.max.count()));
  return std::chrono::milliseconds(static_cast<int64_t>(delay));
}

void Backoff::Reset() { base_ms_ = static_cast<double>(policy_.initial.count()); }

}  // namespace gpupool::kube
