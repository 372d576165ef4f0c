#include "open_loop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <vector>

namespace gpupool::bench {
namespace {

// Plays a plan against a server whose response to request i takes service(i) µs once sent:
// the next event is either a request falling due or a response arriving, whichever is earlier.
void Play(OpenLoopPlan& plan, const std::function<Micros(int64_t)>& service,
          const std::function<Outcome(int64_t)>& outcome = {}) {
  std::multimap<Micros, Dispatch> responses;  // arrival time -> the request answered
  auto send = [&](Dispatch d, Micros now) { responses.emplace(now + service(d.request), d); };
  while (!plan.Done()) {
    std::optional<Micros> due = plan.NextDue();
    if (due && (responses.empty() || *due < responses.begin()->first)) {
      for (Dispatch d : plan.Issue(*due)) send(d, *due);
      continue;
    }
    auto [at, d] = *responses.begin();
    responses.erase(responses.begin());
    Outcome result = outcome ? outcome(d.request) : Outcome::kOk;
    if (auto next = plan.Complete(d.connection, at, result)) send(*next, at);
  }
}

std::vector<Micros> Latencies(const OpenLoopPlan& plan) {
  std::vector<Micros> out;
  for (const Sample& s : plan.samples()) out.push_back(s.latency);
  return out;
}

std::vector<Micros> ServiceTimes(const OpenLoopPlan& plan) {
  std::vector<Micros> out;
  for (const Sample& s : plan.samples()) out.push_back(s.service);
  return out;
}

TEST(OpenLoopPlanTest, RequestsFallDueAtEvenIntervals) {
  OpenLoopPlan plan(UniformArrivals(/*rate=*/3, /*requests=*/4), /*connections=*/1);
  EXPECT_EQ(plan.DueAt(0), 0);
  EXPECT_EQ(plan.DueAt(1), 333'333);
  EXPECT_EQ(plan.DueAt(2), 666'666);
  EXPECT_EQ(plan.DueAt(3), 1'000'000);
  EXPECT_EQ(plan.NextDue(), 0);
}

TEST(ArrivalsTest, PoissonArrivalsKeepTheRateWithExponentialGaps) {
  const double rate = 1000;
  std::vector<Micros> due = PoissonArrivals(rate, /*requests=*/20'000, /*seed=*/7);
  ASSERT_EQ(due.size(), 20'000u);
  EXPECT_EQ(due.front(), 0);
  EXPECT_TRUE(std::is_sorted(due.begin(), due.end()));
  // 20,000 gaps of mean 1 ms span ~20 s; the sample mean is within a few % of it.
  EXPECT_NEAR(static_cast<double>(due.back()) / 19'999, 1000.0, 30.0);
  // Exponential, not even: P(gap < mean / 2) = 1 - e^-0.5 = 39 %, where even gaps give 0 %.
  int short_gaps = 0;
  for (size_t i = 1; i < due.size(); ++i) short_gaps += due[i] - due[i - 1] < 500;
  EXPECT_NEAR(short_gaps / 19'999.0, 0.393, 0.02);
}

TEST(ArrivalsTest, ASeedGivesTheSameTimes) {
  EXPECT_EQ(PoissonArrivals(500, 100, 1), PoissonArrivals(500, 100, 1));
  EXPECT_NE(PoissonArrivals(500, 100, 1), PoissonArrivals(500, 100, 2));
}

TEST(OpenLoopPlanTest, BurstOfArrivalsWaitsForConnections) {
  // Three requests due at once on two connections: the third waits for the first answer.
  OpenLoopPlan plan({0, 0, 0}, /*connections=*/2);
  Play(plan, [](int64_t) { return 1000; });
  EXPECT_EQ(Latencies(plan), (std::vector<Micros>{1000, 1000, 2000}));
  EXPECT_EQ(ServiceTimes(plan), (std::vector<Micros>{1000, 1000, 1000}));
  EXPECT_EQ(plan.max_waiting(), 1u);
}

TEST(OpenLoopPlanTest, FastServerIsMeasuredAtItsServiceTime) {
  OpenLoopPlan plan(UniformArrivals(/*rate=*/1000, /*requests=*/100), /*connections=*/8);
  Play(plan, [](int64_t) { return 400; });
  ASSERT_EQ(plan.samples().size(), 100u);
  for (const Sample& s : plan.samples()) {
    EXPECT_EQ(s.latency, 400);
    EXPECT_EQ(s.service, 400);
  }
  EXPECT_EQ(plan.max_waiting(), 0u);
  EXPECT_EQ(plan.connections_used(), 1);  // each request finds the first connection free again
}

// The case the tool exists for. One connection, a request every millisecond; the first takes 5 ms
// and the rest 0.1 ms each. A closed-loop client would report one slow request (5 ms) and
// otherwise 0.1 ms; the requests due during the stall waited for it too, and are counted so.
TEST(OpenLoopPlanTest, StallDelaysEveryRequestDueDuringIt) {
  OpenLoopPlan plan(UniformArrivals(/*rate=*/1000, /*requests=*/8), /*connections=*/1);
  Play(plan, [](int64_t request) { return request == 0 ? 5000 : 100; });
  // Request 0 answers at 5.0 ms; 1-5 (due at 1-5 ms) then go one after another, 0.1 ms each.
  EXPECT_EQ(Latencies(plan), (std::vector<Micros>{5000, 4100, 3200, 2300, 1400, 500, 100, 100}));
  EXPECT_EQ(ServiceTimes(plan), (std::vector<Micros>{5000, 100, 100, 100, 100, 100, 100, 100}));
  EXPECT_EQ(plan.max_waiting(), 4u);  // 1-4 waited when 4 fell due; 5 fell due as 0 answered
}

TEST(OpenLoopPlanTest, ConnectionsShareTheBacklogInOrder) {
  // Two connections, a request every ms, each taking 3 ms: the backlog grows by one every 3 ms.
  OpenLoopPlan plan(UniformArrivals(/*rate=*/1000, /*requests=*/6), /*connections=*/2);
  Play(plan, [](int64_t) { return 3000; });
  // 0 at 0-3 (c0), 1 at 1-4 (c1), 2 (due 2) at 3-6 on c0, 3 (due 3) at 4-7 on c1,
  // 4 (due 4) at 6-9, 5 (due 5) at 7-10.
  EXPECT_EQ(Latencies(plan), (std::vector<Micros>{3000, 3000, 4000, 4000, 5000, 5000}));
  EXPECT_EQ(plan.connections_used(), 2);
}

TEST(OpenLoopPlanTest, OutcomesAreKeptPerSample) {
  OpenLoopPlan plan(UniformArrivals(/*rate=*/100, /*requests=*/6), /*connections=*/2);
  Play(
      plan, [](int64_t) { return 1000; },
      [](int64_t request) {
        return request % 3 == 0 ? Outcome::kNon2xx : request == 4 ? Outcome::kError : Outcome::kOk;
      });
  std::vector<Outcome> outcomes;
  for (const Sample& s : plan.samples()) outcomes.push_back(s.outcome);
  EXPECT_EQ(outcomes, (std::vector<Outcome>{Outcome::kNon2xx, Outcome::kOk, Outcome::kOk,
                                            Outcome::kNon2xx, Outcome::kError, Outcome::kOk}));
}

TEST(OpenLoopPlanTest, NotDoneWhileARequestIsInFlight) {
  OpenLoopPlan plan(UniformArrivals(/*rate=*/10, /*requests=*/1), /*connections=*/1);
  EXPECT_FALSE(plan.Done());
  ASSERT_EQ(plan.Issue(0).size(), 1u);
  EXPECT_FALSE(plan.NextDue().has_value());
  EXPECT_FALSE(plan.Done());
  EXPECT_EQ(plan.in_flight(), 1);
  EXPECT_EQ(plan.unanswered(), 1);
  EXPECT_FALSE(plan.Complete(0, 700, Outcome::kOk).has_value());
  EXPECT_TRUE(plan.Done());
  EXPECT_EQ(plan.unanswered(), 0);
}

TEST(OpenLoopPlanTest, RequestsWaitingForAConnectionCountAsUnanswered) {
  OpenLoopPlan plan({0, 0, 0, 5}, /*connections=*/1);
  ASSERT_EQ(plan.Issue(0).size(), 1u);  // one sent, two waiting, one not yet due
  EXPECT_EQ(plan.in_flight(), 1);
  EXPECT_EQ(plan.unanswered(), 4);
}

TEST(PercentileTest, NearestRank) {
  std::vector<Micros> hundred;
  for (Micros v = 100; v >= 1; --v) hundred.push_back(v);  // unsorted on purpose
  struct Case {
    double p;
    Micros want;
  };
  for (Case c : {Case{50, 50}, Case{99, 99}, Case{100, 100}, Case{0.5, 1}, Case{99.5, 100}}) {
    EXPECT_EQ(Percentile(hundred, c.p), c.want) << "p" << c.p;
  }
  std::vector<Micros> thousand;
  for (Micros v = 1; v <= 1000; ++v) thousand.push_back(v);
  EXPECT_EQ(Percentile(thousand, 99.9), 999);
  EXPECT_EQ(Percentile({}, 99), 0);
  EXPECT_EQ(Percentile({7}, 50), 7);
}

}  // namespace
}  // namespace gpupool::bench
