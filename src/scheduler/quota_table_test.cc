// The QuotaTable contract (quota_table.h): settings resolved per (queue, node pool, resource),
// allocation counted in the queue and every ancestor, fair shares and the demand behind them.

#include "scheduler/quota_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/cluster_view.h"
#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace quota_table_test {

// A department with two projects, and a queue on its own.
std::vector<QueueState> Tree() {
  return {{"dept", nullptr, -1, 0, true},
          {"p1", nullptr, 0, 0, false},
          {"p2", nullptr, 0, 0, false},
          {"lone", nullptr, -1, 0, false}};
}

TEST(QuotaTableTest, AddCountsInTheQueueAndItsAncestorsOnly) {
  struct Step {
    int queue;
    int64_t gpu_milli;
    bool preemptible;
    int sign;
  };
  struct Case {
    std::string name;
    std::vector<Step> steps;
    std::vector<int64_t> allocated;        // GPU, per queue
    std::vector<int64_t> non_preemptible;  // GPU, per queue
  };
  const std::vector<Case> cases = {
      {"a project's pod counts in its department",
       {{1, 1000, true, +1}},
       {1000, 1000, 0, 0},
       {0, 0, 0, 0}},
      {"two projects add up in the department",
       {{1, 1000, true, +1}, {2, 500, false, +1}},
       {1500, 1000, 500, 0},
       {500, 0, 500, 0}},
      {"taking back undoes adding",
       {{1, 2000, false, +1}, {3, 1000, true, +1}, {1, 2000, false, -1}},
       {0, 0, 0, 1000},
       {0, 0, 0, 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<QueueState> queues = Tree();
    QuotaTable table(queues, 2);
    for (const Step& s : c.steps) table.Add(s.queue, 1, {s.gpu_milli, 0, 0}, s.preemptible, s.sign);
    for (int q = 0; q < table.NumQueues(); ++q) {
      EXPECT_EQ(table.Allocated(q, 1, kGpuQ), c.allocated[q]) << queues[q].name;
      EXPECT_EQ(table.AllocatedNonPreemptible(q, 1, kGpuQ), c.non_preemptible[q]) << queues[q].name;
      EXPECT_EQ(table.Allocated(q, 0, kGpuQ), 0) << "another node pool";
      EXPECT_EQ(table.Allocated(q, 1, kCpuQ), 0) << "another resource";
    }
  }
}

TEST(QuotaTableTest, ResolveReadsEachQueuesSettingsPerNodePool) {
  ClusterSnapshot snapshot;
  snapshot.node_pools = {testing::MakeNodePool("big")};
  snapshot.nodes = {testing::NodeBuilder("n").Gpus(8).Label("node-pool", "big").Build()};
  model::Queue with_quota = testing::MakeQueue("with-quota", "", {{"big", 2, 6, 3}});
  with_quota.resources["big"][model::QuotaResource::kCpu].deserved_milli = 4000;
  with_quota.resources["big"][model::QuotaResource::kMemory].deserved_milli = 1500;  // 1.5 bytes
  const model::Queue elsewhere = testing::MakeQueue("elsewhere", "", {{"default", 1, -1}});
  const std::vector<QueueState> queues = {{"with-quota", &with_quota, -1, 0, false},
                                          {"elsewhere", &elsewhere, -1, 0, false},
                                          {"none", nullptr, -1, 0, false}};
  ClusterView view(snapshot.nodes, snapshot.node_pools);
  const int big = view.FindPool("big");
  ASSERT_GE(big, 0);
  const QuotaTable table = QuotaTable::Resolve(queues, view);
  struct Case {
    int queue, r;
    int64_t deserved, limit, weight;
    bool applies;
  };
  for (const Case& c : std::vector<Case>{
           {0, kGpuQ, 2000, 6000, 3, true},
           {0, kCpuQ, 4000, model::kUnlimited, 1, true},
           {0, kMemQ, 2, model::kUnlimited, 1, true},  // bytes, rounded up
           {1, kGpuQ, 0, model::kUnlimited, 1, true},  // GPUs bind every configured queue
           {1, kCpuQ, 0, model::kUnlimited, 1, false},
           {2, kGpuQ, 0, model::kUnlimited, 1, false},
       }) {
    SCOPED_TRACE(queues[c.queue].name + " " + std::to_string(c.r));
    EXPECT_EQ(table.Deserved(c.queue, big, c.r), c.deserved);
    EXPECT_EQ(table.Limit(c.queue, big, c.r), c.limit);
    EXPECT_EQ(table.Weight(c.queue, big, c.r), c.weight);
    EXPECT_EQ(table.Applies(c.queue, big, c.r), c.applies);
  }
}

TEST(QuotaTableTest, FairSharesKeepTheDemandTheyWereComputedFrom) {
  const std::vector<QueueState> queues = {{"a", nullptr, -1, 0, false},
                                          {"b", nullptr, -1, 0, false}};
  QuotaTable table(queues, 1);
  EXPECT_EQ(table.Demand(0, 0, kGpuQ), 0);
  std::vector<int64_t> demand(table.Size(), 0);
  demand[table.At(0, 0, kGpuQ)] = 1000;
  demand[table.At(1, 0, kGpuQ)] = 9000;
  demand[table.At(1, 0, kCpuQ)] = 500;
  table.ComputeFairShares(demand, std::vector<int64_t>{4000, 8000, 0});
  EXPECT_EQ(table.Demand(0, 0, kGpuQ), 1000);
  EXPECT_EQ(table.Demand(1, 0, kGpuQ), 9000);
  EXPECT_EQ(table.Demand(1, 0, kCpuQ), 500);
  // a asks 1 of 4 GPUs, b gets the rest; only b asks for cpu.
  EXPECT_EQ(table.FairShare(0, 0, kGpuQ), 1000);
  EXPECT_EQ(table.FairShare(1, 0, kGpuQ), 3000);
  EXPECT_EQ(table.FairShare(0, 0, kCpuQ), 0);
  EXPECT_EQ(table.FairShare(1, 0, kCpuQ), 500);
}

TEST(QuotaTableTest, ToQuotaUnits) {
  struct Case {
    int r;
    int64_t milli, want;
  };
  for (const Case& c : std::vector<Case>{{kGpuQ, 1500, 1500},
                                         {kCpuQ, 250, 250},
                                         {kMemQ, 1000, 1},
                                         {kMemQ, 1001, 2},
                                         {kMemQ, model::kUnlimited, model::kUnlimited},
                                         {kGpuQ, model::kUnlimited, model::kUnlimited}}) {
    EXPECT_EQ(ToQuotaUnits(c.r, c.milli), c.want) << c.r << " " << c.milli;
  }
}

}  // namespace quota_table_test
}  // namespace gpupool::scheduler
