#pragma once
// Open-loop load: request i is due at i / rate seconds after the start, whatever the server's
// latency, and its latency counts from when it was due, not from when a connection was free to
// send it. A closed-loop client (wrk with a delay() between a response and the next request)
// sends less while the server stalls, so a stall delays one request per connection and the rest
// of the stall goes unmeasured ("coordinated omission"). Here a stall delays every request due
// during it, as it would delay users who do not wait for each other.
//
// OpenLoopPlan is the bookkeeping alone, on a clock the caller passes in (microseconds since the
// start), so that tests can play it without time; bench/http_load.cc drives it over HTTP.
//
// Thread contract: one thread at a time.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace gpupool::bench {

using Micros = int64_t;

// Request `request` goes out on connection `connection` now.
struct Dispatch {
  int64_t request = 0;
  int connection = 0;
};

enum class Outcome { kOk, kNon2xx, kError };

struct Sample {
  Micros latency = 0;  // from when the request was due to its response
  Micros service = 0;  // from when it was sent to its response
  Outcome outcome = Outcome::kOk;
};

// When each of `requests` requests falls due, in µs from the start: every 1/rate s (as wrk2
// and k6's constant-arrival-rate do).
std::vector<Micros> UniformArrivals(double rate, int64_t requests);
// The same rate as a Poisson process (exponential gaps of mean 1/rate), as from many users who
// do not coordinate: bursts and lulls come by chance. A seed gives the same times every run.
std::vector<Micros> PoissonArrivals(double rate, int64_t requests, uint64_t seed);

class OpenLoopPlan {
 public:
  // `due`: when each request falls due (non-decreasing, see UniformArrivals and
  // PoissonArrivals); `connections`: at most this many requests in flight (> 0). Requests due
  // while all connections are busy wait, in order.
  OpenLoopPlan(std::vector<Micros> due, int connections);

  Micros DueAt(int64_t request) const;
  // When the next request not yet issued is due; nullopt once all are issued.
  std::optional<Micros> NextDue() const;

  // Issues every request due by `now`. Those that find an idle connection are returned, to send
  // now; the others wait for one.
  std::vector<Dispatch> Issue(Micros now);
  // `connection`'s response (or failure) came at `now`. Returns the waiting request that
  // connection sends next, if any.
  std::optional<Dispatch> Complete(int connection, Micros now, Outcome outcome);

  // Every request issued and answered.
  bool Done() const;
  int64_t in_flight() const { return in_flight_; }
  // Requests without a response yet: in flight, waiting for a connection, or not yet due.
  int64_t unanswered() const { return requests_ - static_cast<int64_t>(samples_.size()); }
  const std::vector<Sample>& samples() const { return samples_; }
  // The longest the queue of waiting requests got: 0 when a connection was always free.
  size_t max_waiting() const { return max_waiting_; }
  // How many connections were ever used (idle ones are reused most-recent first, as a client's
  // keep-alive pool would).
  int connections_used() const { return connections_used_; }

 private:
  struct InFlight {
    int64_t request = -1;
    Micros sent = 0;
  };
  void Send(int64_t request, int connection, Micros now);

  std::vector<Micros> due_;
  int64_t requests_;
  int64_t next_request_ = 0;
  std::vector<InFlight> connections_;
  std::vector<int> idle_;  // a stack: the most recently freed connection is reused first
  std::deque<int64_t> waiting_;
  int64_t in_flight_ = 0;
  size_t max_waiting_ = 0;
  int connections_used_ = 0;
  std::vector<Sample> samples_;
};

// The p-th percentile (0 < p <= 100) of `values` by nearest rank: the smallest value that at
// least p % of them do not exceed. 0 when `values` is empty.
Micros Percentile(std::vector<Micros> values, double p);

}  // namespace gpupool::bench
