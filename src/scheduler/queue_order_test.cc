// The QueueOrder contract (queue_order.h), one typed suite over every implementation, then
// what is particular to FairShareOrder.

#include "scheduler/queue_order.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace gpupool::scheduler {
namespace queue_order_test {

constexpr int kDefaultPool[] = {0};

struct FairShareOrderMaker {
  static std::unique_ptr<QueueOrder> Make(const QueueOrderInput& input) {
    return MakeFairShareOrder(input);
  }
};

// Two departments of three projects each, and a project without a department; one node pool.
std::vector<QueueState> Tree() {
  std::vector<QueueState> queues = {{"d1", nullptr, -1, 0, true},   {"d1-a", nullptr, 0, 0, false},
                                    {"d1-b", nullptr, 0, 0, false}, {"d1-c", nullptr, 0, 5, false},
                                    {"d2", nullptr, -1, 0, true},   {"d2-a", nullptr, 4, 0, false},
                                    {"d2-b", nullptr, 4, 0, false}, {"d2-c", nullptr, 4, 0, false},
                                    {"lone", nullptr, -1, 0, false}};
  return queues;
}

Job MakeJob(int queue, int32_t priority, int arrival, int64_t gpus) {
  Job job;
  job.pods = {arrival};
  job.queue = queue;
  job.priority = priority;
  job.arrival = arrival;
  job.quota = {gpus * 1000, 1000, 0};
  job.pools = kDefaultPool;
  return job;
}

std::vector<Job> RandomJobs(uint32_t seed, int count) {
  std::mt19937 rng(seed);
  const int leaves[] = {1, 2, 3, 5, 6, 7, 8};
  std::vector<Job> jobs;
  for (int i = 0; i < count; ++i) {
    jobs.push_back(MakeJob(leaves[rng() % 7], static_cast<int32_t>(rng() % 3) * 50,
                           static_cast<int>(rng() % 1000), 1 + rng() % 4));
  }
  return jobs;
}

// Runs an order to the end; `placed(job)` says whether the decision placed the job, and a placed
// job's quota is added to its queue as CycleState would. Returns the jobs in turn order.
template <typename Maker>
std::vector<int> Drain(const std::vector<QueueState>& queues, QuotaTable& quota,
                       const std::vector<Job>& jobs, const std::function<bool(int)>& placed) {
  const std::vector<std::string> pools = {"default"};
  std::unique_ptr<QueueOrder> order = Maker::Make({queues, quota, jobs, pools});
  std::vector<int> turns;
  for (int j = order->Next(); j >= 0; j = order->Next()) {
    turns.push_back(j);
    if (turns.size() > jobs.size()) break;  // a job came back: the test fails below
    const bool ok = placed(j);
    if (ok) quota.Add(jobs[j].queue, 0, jobs[j].quota, /*preemptible=*/true, +1);
    order->Decided(j, ok);
  }
  EXPECT_EQ(order->Next(), -1);
  return turns;
}

QuotaTable TableWithFairShares(const std::vector<QueueState>& queues, int64_t gpus) {
  QuotaTable quota(queues, 1);
  std::vector<int64_t> demand(quota.Size(), 0);
  for (size_t q = 0; q < queues.size(); ++q) {
    if (!queues[q].has_children) demand[quota.At(static_cast<int>(q), 0, kGpuQ)] = 4000;
  }
  quota.ComputeFairShares(demand, std::vector<int64_t>{gpus * 1000, 0, 0});
  return quota;
}

template <typename Maker>
class QueueOrderContractTest : public ::testing::Test {};
using Implementations = ::testing::Types<FairShareOrderMaker>;
TYPED_TEST_SUITE(QueueOrderContractTest, Implementations);

TYPED_TEST(QueueOrderContractTest, EveryJobOnceThenNone) {
  const std::vector<QueueState> queues = Tree();
  for (uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    QuotaTable quota = TableWithFairShares(queues, 20);
    const std::vector<Job> jobs = RandomJobs(seed, 60);
    std::vector<int> turns =
        Drain<TypeParam>(queues, quota, jobs, [](int j) { return j % 3 != 0; });
    std::sort(turns.begin(), turns.end());
    std::vector<int> all(jobs.size());
    for (size_t j = 0; j < all.size(); ++j) all[j] = static_cast<int>(j);
    EXPECT_EQ(turns, all);
  }
  QuotaTable quota(queues, 1);
  EXPECT_TRUE(Drain<TypeParam>(queues, quota, {}, [](int) { return true; }).empty());
}

TYPED_TEST(QueueOrderContractTest, JobsOfAQueueByPriorityThenAgeThenIndex) {
  const std::vector<QueueState> queues = Tree();
  QuotaTable quota = TableWithFairShares(queues, 20);
  std::vector<Job> jobs = RandomJobs(4, 80);
  jobs.push_back(MakeJob(1, 50, 7, 1));  // equal to a twin below but for the index
  jobs.push_back(MakeJob(1, 50, 7, 2));
  const std::vector<int> turns = Drain<TypeParam>(queues, quota, jobs, [](int) { return true; });
  for (size_t a = 0; a < turns.size(); ++a) {
    for (size_t b = a + 1; b < turns.size(); ++b) {
      const Job &x = jobs[turns[a]], &y = jobs[turns[b]];
      if (x.queue != y.queue) continue;
      const auto key = [](const Job& job, int index) {
        return std::make_tuple(-job.priority, job.arrival, index);
      };
      EXPECT_LT(key(x, turns[a]), key(y, turns[b])) << "jobs " << turns[a] << ", " << turns[b];
    }
  }
}

TYPED_TEST(QueueOrderContractTest, SameInputsAndReportsSameOrder) {
  const std::vector<QueueState> queues = Tree();
  const std::vector<Job> jobs = RandomJobs(5, 60);
  auto placed = [](int j) { return (j * 7) % 5 < 3; };
  QuotaTable first_quota = TableWithFairShares(queues, 12);
  QuotaTable second_quota = TableWithFairShares(queues, 12);
  EXPECT_EQ(Drain<TypeParam>(queues, first_quota, jobs, placed),
            Drain<TypeParam>(queues, second_quota, jobs, placed));
}

TYPED_TEST(QueueOrderContractTest, CheckQuotaRefusesBeyondALimitOnTheQueuesPath) {
  struct Case {
    std::string name;
    int limited;           // queue with a 4-GPU limit
    int64_t held, wanted;  // GPUs project d1-a holds, and its job asks
    std::string refusal;   // "" = allowed
  };
  const std::vector<Case> cases = {
      {"within the project's limit", 1, 2, 2, ""},
      {"beyond the project's limit", 1, 3, 2,
       "queue d1-a is at its limit of 4 nvidia.com/gpu in node pool default (3 in use, 2 "
       "requested)"},
      {"beyond the department's limit", 0, 3, 2,
       "queue d1 is at its limit of 4 nvidia.com/gpu in node pool default (3 in use, 2 "
       "requested)"},
      {"a sibling's limit does not matter", 2, 3, 2, ""},
  };
  const std::vector<QueueState> queues = Tree();
  const std::vector<std::string> pools = {"default"};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    QuotaTable quota(queues, 1);
    model::ResourceQuota limit;
    limit.limit_milli = 4000;
    quota.Set(c.limited, 0, kGpuQ, limit, true);
    quota.Add(1, 0, {c.held * 1000, 0, 0}, true, +1);
    const std::vector<Job> jobs = {MakeJob(1, 0, 0, c.wanted)};
    std::unique_ptr<QueueOrder> order = TypeParam::Make({queues, quota, jobs, pools});
    EXPECT_EQ(order->CheckQuota(jobs[0], 0), c.refusal);
  }
}

TYPED_TEST(QueueOrderContractTest, QuotaCouldAdmitUnlessTheRequestAloneIsBeyondALimit) {
  const std::vector<QueueState> queues = Tree();
  const std::vector<std::string> pools = {"default"};
  QuotaTable quota(queues, 1);
  model::ResourceQuota limit;
  limit.limit_milli = 4000;
  quota.Set(0, 0, kGpuQ, limit, true);      // department d1
  quota.Add(1, 0, {4000, 0, 0}, true, +1);  // d1-a holds all of it
  const std::vector<Job> jobs = {MakeJob(1, 0, 0, 2), MakeJob(2, 0, 1, 5), MakeJob(5, 0, 2, 5)};
  std::unique_ptr<QueueOrder> order = TypeParam::Make({queues, quota, jobs, pools});
  EXPECT_NE(order->CheckQuota(jobs[0], 0), "");      // not now
  EXPECT_TRUE(order->QuotaCouldAdmit(jobs[0], 0));   // but once d1-a's pods end
  EXPECT_FALSE(order->QuotaCouldAdmit(jobs[1], 0));  // 5 GPUs in a department limited to 4
  EXPECT_TRUE(order->QuotaCouldAdmit(jobs[2], 0));   // d2 has no limit
}

TYPED_TEST(QueueOrderContractTest, WhatCheckQuotaLetsThroughQuotaCouldAdmit) {
  const std::vector<QueueState> queues = Tree();
  const std::vector<std::string> pools = {"default"};
  QuotaTable quota(queues, 1);
  for (const auto& [queue, gpus] : std::vector<std::pair<int, int64_t>>{{0, 6}, {2, 3}, {5, 2}}) {
    model::ResourceQuota limit;
    limit.limit_milli = gpus * 1000;
    quota.Set(queue, 0, kGpuQ, limit, true);
  }
  quota.Add(5, 0, {1000, 0, 0}, true, +1);
  quota.Add(1, 0, {2000, 0, 0}, true, +1);
  const std::vector<Job> jobs = RandomJobs(6, 60);
  std::unique_ptr<QueueOrder> order = TypeParam::Make({queues, quota, jobs, pools});
  int admitted_now = 0, refused_ever = 0;
  for (const Job& job : jobs) {
    if (order->CheckQuota(job, 0).empty()) {
      ++admitted_now;
      EXPECT_TRUE(order->QuotaCouldAdmit(job, 0));
    }
    refused_ever += order->QuotaCouldAdmit(job, 0) ? 0 : 1;
  }
  EXPECT_GT(admitted_now, 0);  // the jobs cover both sides
  EXPECT_GT(refused_ever, 0);
}

// FairShareOrder alone.

TEST(FairShareOrderTest, AQueueOverItsFairShareWaitsForTheOthers) {
  const std::vector<QueueState> queues = {{"a", nullptr, -1, 0, false},
                                          {"b", nullptr, -1, 0, false}};
  QuotaTable quota = TableWithFairShares(queues, 4);  // 2 GPUs each
  ASSERT_EQ(quota.FairShare(0, 0, kGpuQ), 2000);
  quota.Add(0, 0, {3000, 0, 0}, true, +1);  // a holds 3
  // a's job is older, but a is over its fair share and b is not.
  const std::vector<Job> jobs = {MakeJob(0, 0, 0, 1), MakeJob(1, 0, 1, 1)};
  EXPECT_THAT(Drain<FairShareOrderMaker>(queues, quota, jobs, [](int) { return false; }),
              ::testing::ElementsAre(1, 0));
}

TEST(FairShareOrderTest, DepartmentsByRankThenTheirProjects) {
  // The department with the smaller dominant share goes first, then its first project: d1
  // (nothing allocated anywhere, first by name), then d2 (d1 now holds GPUs), then d1 again.
  const std::vector<QueueState> queues = Tree();
  QuotaTable quota = TableWithFairShares(queues, 14);
  const std::vector<Job> jobs = {MakeJob(1, 0, 0, 2), MakeJob(1, 0, 1, 2), MakeJob(5, 0, 2, 2)};
  EXPECT_THAT(Drain<FairShareOrderMaker>(queues, quota, jobs, [](int) { return true; }),
              ::testing::ElementsAre(0, 2, 1));
}

TEST(FairShareOrderTest, NonPreemptibleJobsOnlyUseDeservedQuota) {
  const std::vector<QueueState> queues = {{"a", nullptr, -1, 0, false}};
  const std::vector<std::string> pools = {"default"};
  QuotaTable quota(queues, 1);
  model::ResourceQuota deserved;
  deserved.deserved_milli = 2000;
  quota.Set(0, 0, kGpuQ, deserved, true);
  quota.Add(0, 0, {2000, 0, 0}, /*preemptible=*/true, +1);  // preemptible pods do not count
  std::vector<Job> jobs = {MakeJob(0, kNonPreemptiblePriority, 0, 2)};
  std::unique_ptr<QueueOrder> order = MakeFairShareOrder({queues, quota, jobs, pools});
  EXPECT_EQ(order->CheckQuota(jobs[0], 0), "");
  quota.Add(0, 0, {1000, 0, 0}, /*preemptible=*/false, +1);
  EXPECT_EQ(order->CheckQuota(jobs[0], 0),
            "queue a: NORMAL priority uses only deserved quota: 2 GPUs in node pool default; LOW "
            "may use idle GPUs over quota (1 in use, 2 requested)");
  jobs[0].priority = 0;  // preemptible: over-quota is fine
  EXPECT_EQ(order->CheckQuota(jobs[0], 0), "");
}

}  // namespace queue_order_test
}  // namespace gpupool::scheduler
