#include "open_loop.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

namespace gpupool::bench {

std::vector<Micros> UniformArrivals(double rate, int64_t requests) {
  std::vector<Micros> due(static_cast<size_t>(requests));
  for (int64_t i = 0; i < requests; ++i) {
    due[static_cast<size_t>(i)] =
        static_cast<Micros>(std::floor(static_cast<double>(i) * 1e6 / rate));
  }
  return due;
}

std::vector<Micros> PoissonArrivals(double rate, int64_t requests, uint64_t seed) {
  // mt19937_64's output is fixed by the standard; the distributions' are not, so the uniform
  // variate and the exponential gap are computed here, and a seed means the same times anywhere.
  std::mt19937_64 random(seed);
  std::vector<Micros> due(static_cast<size_t>(requests));
  double at = 0;
  for (int64_t i = 0; i < requests; ++i) {
    due[static_cast<size_t>(i)] = static_cast<Micros>(std::floor(at));
    double uniform = static_cast<double>(random() >> 11) * 0x1p-53;  // in [0, 1)
    at += -std::log1p(-uniform) * 1e6 / rate;
  }
  return due;
}

OpenLoopPlan::OpenLoopPlan(std::vector<Micros> due, int connections)
    : due_(std::move(due)),
      requests_(static_cast<int64_t>(due_.size())),
      connections_(static_cast<size_t>(connections)) {
  samples_.reserve(due_.size());
  // Connection 0 on top, so that a light load uses few connections.
  for (int c = connections - 1; c >= 0; --c) idle_.push_back(c);
}

Micros OpenLoopPlan::DueAt(int64_t request) const { return due_[static_cast<size_t>(request)]; }

std::optional<Micros> OpenLoopPlan::NextDue() const {
  if (next_request_ >= requests_) return std::nullopt;
  return DueAt(next_request_);
}

std::vector<Dispatch> OpenLoopPlan::Issue(Micros now) {
  std::vector<Dispatch> now_sent;
  for (; next_request_ < requests_ && DueAt(next_request_) <= now; ++next_request_) {
    if (idle_.empty()) {
      waiting_.push_back(next_request_);
      max_waiting_ = std::max(max_waiting_, waiting_.size());
      continue;
    }
    int connection = idle_.back();
    idle_.pop_back();
    Send(next_request_, connection, now);
    now_sent.push_back({next_request_, connection});
  }
  return now_sent;
}

std::optional<Dispatch> OpenLoopPlan::Complete(int connection, Micros now, Outcome outcome) {
  InFlight& slot = connections_[static_cast<size_t>(connection)];
  samples_.push_back({now - DueAt(slot.request), now - slot.sent, outcome});
  slot.request = -1;
  --in_flight_;
  if (waiting_.empty()) {
    idle_.push_back(connection);
    return std::nullopt;
  }
  int64_t next = waiting_.front();
  waiting_.pop_front();
  Send(next, connection, now);
  return Dispatch{next, connection};
}

bool OpenLoopPlan::Done() const {
  return next_request_ >= requests_ && waiting_.empty() && in_flight_ == 0;
}

void OpenLoopPlan::Send(int64_t request, int connection, Micros now) {
  connections_[static_cast<size_t>(connection)] = {request, now};
  ++in_flight_;
  connections_used_ = std::max(connections_used_, connection + 1);
}

Micros Percentile(std::vector<Micros> values, double p) {
  if (values.empty()) return 0;
  // The epsilon keeps a rank that is whole on paper (99.9 % of 1,000) from rounding up.
  double exact_rank = p * static_cast<double>(values.size()) / 100.0;
  auto rank = static_cast<size_t>(std::ceil(exact_rank - 1e-9));
  rank = std::clamp<size_t>(rank, 1, values.size());
  auto nth = values.begin() + static_cast<std::ptrdiff_t>(rank - 1);
  std::nth_element(values.begin(), nth, values.end());
  return *nth;
}

}  // namespace gpupool::bench
