#include "scheduler/cluster_settings.h"

#include <gtest/gtest.h>

#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace cluster_settings_test {

using testing::FindBinding;
using testing::FindPending;
using testing::MakeNodePool;
using testing::MakeQueue;
using testing::NodeBuilder;
using testing::PodBuilder;

// Node pool A100 (one node of 4 GPUs) and one node of 4 GPUs in no node pool.
ClusterSnapshot Cluster() {
  ClusterSnapshot s;
  s.nodes.push_back(NodeBuilder("a100-0").Gpus(4).Label("node-pool", "A100").Build());
  s.nodes.push_back(NodeBuilder("plain-0").Gpus(4).Build());
  s.node_pools.push_back(MakeNodePool("A100"));
  return s;
}

// Each switch on and off, with the one pod it decides: bound (on a node) or pending with a
// reason that contains `pending`.
TEST(ClusterSettingsTest, EachSwitchHasItsEffect) {
  struct Case {
    std::string name;
    ClusterSettings settings;
    std::string pending;  // "" = the pod is bound
  };
  // Over quota: `borrower` deserves nothing; its LOW pod borrows the owner's idle GPUs.
  auto over_quota = [](ClusterSnapshot& s) {
    s.queues.push_back(MakeQueue("owner", "", {{"A100", 4}}));
    s.queues.push_back(MakeQueue("borrower", "", {}));
    s.pods.push_back(
        PodBuilder("p").Gpus(4).Queue("borrower").NodePools("A100").Priority(50).Build());
  };
  // CPU quota: `team` deserves 1 cpu; its NORMAL pod asks for 4.
  auto cpu_quota = [](ClusterSnapshot& s) {
    model::Queue team = MakeQueue("team", "", {{"default", -1}});
    team.resources["default"][model::QuotaResource::kCpu] = {1000, model::kUnlimited, 1};
    s.queues.push_back(team);
    s.pods.push_back(
        PodBuilder("p").Cpu("4").Queue("team").NodePools("default").Priority(100).Build());
  };
  // Node pools: `team` deserves 4 GPUs in A100 only; its NORMAL pod asks in `default`.
  auto node_pools = [](ClusterSnapshot& s) {
    s.queues.push_back(MakeQueue("team", "", {{"A100", 4}}));
    s.pods.push_back(
        PodBuilder("p").Gpus(4).Queue("team").NodePools("default").Priority(100).Build());
  };
  struct Run {
    Case c;
    void (*setup)(ClusterSnapshot&);
  };
  std::vector<Run> runs = {
      {{"over quota on: LOW borrows idle GPUs", {}, ""}, over_quota},
      {{"over quota off: LOW stays within its 0 GPUs",
        {.over_quota = false},
        "queue borrower is at its limit of 0 nvidia.com/gpu in node pool A100 (0 in use, 4 "
        "requested); over-quota use is off in this cluster (BACKEND default: enable_over_quota "
        "false)"},
       over_quota},
      {{"cpu quota on: NORMAL within 1 cpu", {}, "uses only deserved quota: 1 cpu"}, cpu_quota},
      {{"cpu quota off: cpu deserved ignored", {.cpu_quota = false}, ""}, cpu_quota},
      {{"node pools on: no GPU deserved in default",
        {},
        "uses only deserved quota: 0 GPUs in node pool default"},
       node_pools},
      {{"node pools off: one Default node pool with the queue's 4 GPUs", {.node_pools = false}, ""},
       node_pools},
  };
  for (const Run& run : runs) {
    SCOPED_TRACE(run.c.name);
    ClusterSnapshot s = Cluster();
    run.setup(s);
    ApplyNodePoolSwitch(run.c.settings, s.queues, s.node_pools);
    ApplyClusterSettings(run.c.settings, s);
    CycleResult result = Scheduler(SchedulerOptions{}).RunCycle(s);
    if (run.c.pending.empty()) {
      EXPECT_NE(FindBinding(result, "p"), nullptr);
      continue;
    }
    const PendingPod* pending = FindPending(result, "p");
    ASSERT_NE(pending, nullptr);
    EXPECT_NE(pending->reason.find(run.c.pending), std::string::npos) << pending->reason;
  }
}

TEST(ClusterSettingsTest, NodePoolsOffMergesQuotaIntoDefault) {
  std::vector<model::Queue> queues = {MakeQueue("a", "", {{"A100", 4, 6, 2}, {"L40S", 2, -1, 1}}),
                                      MakeQueue("b", "", {})};
  std::vector<model::NodePool> node_pools = {MakeNodePool("A100"), MakeNodePool("L40S")};
  ApplyNodePoolSwitch({.node_pools = false}, queues, node_pools);
  EXPECT_TRUE(node_pools.empty());
  ASSERT_EQ(queues[0].resources.size(), 1u);
  const model::ResourceQuota& gpu = queues[0].resources.at("default")[model::QuotaResource::kGpu];
  EXPECT_EQ(gpu.deserved_milli, 6000);
  EXPECT_EQ(gpu.limit_milli, model::kUnlimited);  // one node pool has none
  EXPECT_EQ(gpu.over_quota_weight, 2);
  EXPECT_TRUE(queues[1].resources.empty());
  ApplyNodePoolSwitch({}, queues, node_pools);  // on: nothing changes
  EXPECT_EQ(queues[0].resources.size(), 1u);
}

}  // namespace cluster_settings_test
}  // namespace gpupool::scheduler
