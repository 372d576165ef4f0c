#include "scheduler/fair_share.h"

#include <gtest/gtest.h>

namespace gpupool::scheduler {
namespace fair_share_test {

constexpr int64_t kGpu = 1000;  // milli-GPUs per GPU

struct Case {
  std::string name;
  int64_t capacity;
  std::vector<FairShareQueue> queues;
  std::vector<int64_t> want;
};

TEST(FairShareTest, HandComputed) {
  const int64_t u = kUnlimitedAmount;
  std::vector<Case> cases = {
      {"deserved only",
       40 * kGpu,
       {{-1, 0, 20 * kGpu, u, 1, 20 * kGpu}, {-1, 0, 20 * kGpu, u, 1, 20 * kGpu}},
       {20 * kGpu, 20 * kGpu}},
      {"deserved capped by demand, rest to the hungry",
       40 * kGpu,
       {{-1, 0, 20 * kGpu, u, 1, 10 * kGpu}, {-1, 0, 20 * kGpu, u, 1, 35 * kGpu}},
       {10 * kGpu, 30 * kGpu}},
      // 10 GPUs over weights 1:3 -> slices 2.5 and 7.5 -> 2 + 7, leftover 1 to the largest
      // remainder (tie: first queue).
      {"weights with leftover",
       10 * kGpu,
       {{-1, 0, 0, u, 1, 100 * kGpu}, {-1, 0, 0, u, 3, 100 * kGpu}},
       {3 * kGpu, 7 * kGpu}},
      // Weights 1:2 over 10 -> 3.33 / 6.67 -> 3 + 6, leftover to the larger remainder (0.67).
      {"leftover to largest remainder",
       10 * kGpu,
       {{-1, 0, 0, u, 1, 100 * kGpu}, {-1, 0, 0, u, 2, 100 * kGpu}},
       {3 * kGpu, 7 * kGpu}},
      // A is capped by its limit 2 in the first round; B takes 5, then the 3 left.
      {"limit caps",
       10 * kGpu,
       {{-1, 0, 0, 2 * kGpu, 1, 100 * kGpu}, {-1, 0, 0, u, 1, 100 * kGpu}},
       {2 * kGpu, 8 * kGpu}},
      {"limit caps deserved too",
       10 * kGpu,
       {{-1, 0, 6 * kGpu, 4 * kGpu, 1, 100 * kGpu}, {-1, 0, 0, u, 1, 1 * kGpu}},
       {4 * kGpu, 1 * kGpu}},
      {"over-subscribed deserved is not scaled down",
       10 * kGpu,
       {{-1, 0, 8 * kGpu, u, 1, 8 * kGpu}, {-1, 0, 8 * kGpu, u, 1, 8 * kGpu}},
       {8 * kGpu, 8 * kGpu}},
      {"weight zero gets no over-quota",
       10 * kGpu,
       {{-1, 0, 1 * kGpu, u, 0, 9 * kGpu}, {-1, 0, 0, u, 1, 4 * kGpu}},
       {1 * kGpu, 4 * kGpu}},
      {"higher priority tier first",
       10 * kGpu,
       {{-1, 1, 0, u, 1, 8 * kGpu}, {-1, 0, 0, u, 1, 8 * kGpu}},
       {8 * kGpu, 2 * kGpu}},
      {"unlimited deserved",
       10 * kGpu,
       {{-1, 0, u, u, 1, 7 * kGpu}, {-1, 0, 0, u, 1, 7 * kGpu}},
       {7 * kGpu, 3 * kGpu}},
      {"fractional demand satisfied exactly",
       2 * kGpu,
       {{-1, 0, 0, u, 1, 500}, {-1, 0, 0, u, 1, 5 * kGpu}},
       {500, 1500}},
      {"no demand no share", 10 * kGpu, {{-1, 0, 5 * kGpu, u, 1, 0}}, {0}},
      // Hierarchy: departments 0 and 1 (deserved 20 each) over 40 GPUs; projects 2, 3 under 0;
      // 4 under 1. Dept 1 only needs 5, so dept 0 gets 20 + 10 = 30 -> project 2 gets all 30.
      {"hierarchy",
       40 * kGpu,
       {{-1, 0, 20 * kGpu, u, 1, 0},
        {-1, 0, 20 * kGpu, u, 1, 0},
        {0, 0, 10 * kGpu, u, 1, 30 * kGpu},
        {0, 0, 10 * kGpu, u, 1, 0},
        {1, 0, 20 * kGpu, u, 1, 5 * kGpu}},
       {30 * kGpu, 5 * kGpu, 30 * kGpu, 0, 5 * kGpu}},
      // Hierarchy with a department limit: dept 0 limited to 12; its projects split 12 by
      // deserved 4 + 4 then weights 1:1 over the 4 left.
      {"department limit",
       40 * kGpu,
       {{-1, 0, 0, 12 * kGpu, 1, 0},
        {0, 0, 4 * kGpu, u, 1, 20 * kGpu},
        {0, 0, 4 * kGpu, u, 1, 20 * kGpu}},
       {12 * kGpu, 6 * kGpu, 6 * kGpu}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ComputeFairShares(c.capacity, c.queues, kGpu), c.want);
  }
}

TEST(FairShareTest, CpuUnitsAreMillicores) {
  // 1000 millicores over 3 equal queues: 333 each, 1 left to the first largest remainder.
  std::vector<FairShareQueue> queues(3, FairShareQueue{-1, 0, 0, kUnlimitedAmount, 1, 5000});
  std::vector<int64_t> shares = ComputeFairShares(1000, queues, 1);
  EXPECT_EQ(shares, (std::vector<int64_t>{334, 333, 333}));
}

TEST(FairShareTest, NeverExceedsCapacityWhenDeservedFits) {
  for (int seed = 1; seed < 300; ++seed) {
    std::vector<FairShareQueue> queues;
    unsigned x = static_cast<unsigned>(seed) * 2654435761u;
    auto next = [&]() {
      x = x * 1664525u + 1013904223u;
      return x >> 8;
    };
    int n = 1 + static_cast<int>(next() % 6);
    int64_t deserved_sum = 0;
    for (int i = 0; i < n; ++i) {
      FairShareQueue q;
      q.deserved = static_cast<int64_t>(next() % 4) * kGpu;
      deserved_sum += q.deserved;
      q.limit = next() % 3 == 0 ? static_cast<int64_t>(next() % 10) * kGpu + q.deserved
                                : kUnlimitedAmount;
      q.over_quota_weight = static_cast<int64_t>(next() % 4);
      q.priority = static_cast<int64_t>(next() % 2);
      q.demand = static_cast<int64_t>(next() % 20) * 500;
      queues.push_back(q);
    }
    const int64_t capacity = deserved_sum + static_cast<int64_t>(next() % 20) * kGpu;
    std::vector<int64_t> shares = ComputeFairShares(capacity, queues, kGpu);
    int64_t total = 0;
    for (int i = 0; i < n; ++i) {
      total += shares[i];
      EXPECT_LE(shares[i], queues[i].demand) << "seed " << seed;
      if (queues[i].limit != kUnlimitedAmount) {
        EXPECT_LE(shares[i], queues[i].limit);
      }
      EXPECT_GE(shares[i], std::min(queues[i].deserved, queues[i].demand));
    }
    EXPECT_LE(total, capacity) << "seed " << seed;
  }
}

}  // namespace fair_share_test
}  // namespace gpupool::scheduler

namespace gpupool::scheduler {
namespace fair_share_test {

// The trace says how the result was reached, and its steps add up to it.
TEST(FairShareTrace, RecordsEachStep) {
  // 10 units: a deserves 2 and wants 8 (weight 2), b deserves 2 and wants 3 (weight 1), c
  // deserves 0 and wants nothing.
  std::vector<SiblingInput> siblings = {{0, 2000, kUnlimitedAmount, 2, 8000},
                                        {0, 2000, kUnlimitedAmount, 1, 3000},
                                        {0, 0, kUnlimitedAmount, 1, 0}};
  FairShareTrace trace;
  std::vector<int64_t> shares = DivideAmongSiblings(10000, siblings, 1000, &trace);
  EXPECT_EQ(shares, DivideAmongSiblings(10000, siblings, 1000));
  EXPECT_EQ(trace.requestable, (std::vector<int64_t>{8000, 3000, 0}));
  EXPECT_EQ(trace.deserved_pass, (std::vector<int64_t>{2000, 2000, 0}));
  EXPECT_EQ(trace.left_after_deserved, 6000);
  ASSERT_FALSE(trace.rounds.empty());
  EXPECT_EQ(trace.rounds[0].available, 6000);
  EXPECT_EQ(trace.rounds[0].weight_sum, 3);
  // b needs 1 more, under its slice of 2: it gets exactly 1; a gets floor(6*2/3) = 4.
  EXPECT_EQ(trace.rounds[0].given, (std::vector<int64_t>{4000, 1000, 0}));
  for (size_t i = 0; i < siblings.size(); ++i) {
    int64_t sum = trace.deserved_pass[i] + trace.leftover[i];
    for (const auto& round : trace.rounds) sum += round.given[i];
    EXPECT_EQ(sum, shares[i]) << i;
  }
  EXPECT_EQ(shares, (std::vector<int64_t>{7000, 3000, 0}));
  EXPECT_EQ(trace.unused, 0);
}

}  // namespace fair_share_test
}  // namespace gpupool::scheduler
