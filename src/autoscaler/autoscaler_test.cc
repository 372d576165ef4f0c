#include "autoscaler/autoscaler.h"

#include <gtest/gtest.h>

#include "scheduler/scenario.h"

namespace gpupool::autoscaler {
namespace autoscaler_test {

using Json = nlohmann::ordered_json;

// Seed 004's pools: an on-demand batch pool with a NoSchedule taint, and a V100 spot pool that
// scales from zero (default GPU spot taints, node-type=gpu).
constexpr char kSeedPools[] = R"(
apiVersion: gpupool.io/v1
kind: MachinePool
metadata: {name: batch-workers}
spec:
  instance_type: m5.2xlarge
  min_replicas: 0
  max_replicas: 10
  labels: {workload-type: batch, team: data-engineering}
  taints: [{key: workload-type, value: batch, effect: NoSchedule}]
---
apiVersion: gpupool.io/v1
kind: MachinePool
metadata: {name: ml-training}
spec:
  instance_type: p3.2xlarge
  capacity_type: spot
  min_replicas: 0
  max_replicas: 5
  disk_size: 500
  labels: {ml-framework: pytorch}
)";

// Seed 004's ml-training Job as a pod.
std::string TrainingPod(const std::string& name, int gpus = 1) {
  return R"(
---
apiVersion: v1
kind: Pod
metadata: {name: )" +
         name + R"(}
spec:
  tolerations:
  - {key: nvidia.com/gpu, operator: Equal, value: "true", effect: NoSchedule}
  - {key: spot, operator: Equal, value: "true", effect: PreferNoSchedule}
  nodeSelector: {node-type: gpu}
  containers:
  - name: training
    image: my-ml-image
    resources:
      limits: {nvidia.com/gpu: )" +
         std::to_string(gpus) + R"(}
)";
}

std::string BatchPod(const std::string& name, bool tolerates, const std::string& cpu = "1") {
  std::string out = R"(
---
apiVersion: v1
kind: Pod
metadata: {name: )" +
                    name + R"(}
spec:
  nodeSelector: {workload-type: batch}
)";
  if (tolerates) {
    out +=
        "  tolerations: [{key: workload-type, operator: Equal, value: batch, effect: "
        "NoSchedule}]\n";
  }
  out += "  containers: [{name: b, image: i, resources: {requests: {cpu: \"" + cpu +
         "\", memory: 1Gi}}}]\n";
  return out;
}

struct SimRun {
  AutoscaleResult result;
  Json json;
};

SimRun Simulated(const std::string& text, AutoscaleOptions options = {}) {
  scheduler::Scenario scenario;
  Status added = scheduler::AddScenarioText(text, "test.yaml", scenario);
  EXPECT_TRUE(added.ok()) << added.ToString();
  auto pools = MachinePoolsFromManifests(scenario.machine_pools, Catalog::Builtin());
  EXPECT_TRUE(pools.ok()) << pools.status().ToString();
  auto result = Simulate(scenario.snapshot, *pools, Catalog::Builtin(), options);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  SimRun run{std::move(result).value(), {}};
  run.json = AutoscaleResultToJson(run.result);
  return run;
}

const ScaleUp* UpOf(const AutoscaleResult& r, const std::string& pool) {
  for (const auto& up : r.scale_up) {
    if (up.machine_pool == pool) return &up;
  }
  return nullptr;
}

std::string NotScaledReason(const AutoscaleResult& r, const std::string& pod) {
  for (const auto& n : r.not_scaled) {
    if (n.pod == pod) return n.reason;
  }
  return "";
}

TEST(AutoscalerTest, BuiltinCatalogIsValidAndCoversTheSeedsTypes) {
  for (const char* name : {"m5.xlarge", "m5.2xlarge", "c5.2xlarge", "p3.2xlarge", "g4dn.xlarge"}) {
    EXPECT_NE(Catalog::Builtin().Find(name), nullptr) << name;
  }
  for (const auto& type : Catalog::Builtin().types()) {
    SCOPED_TRACE(type.name);
    EXPECT_GT(type.on_demand_price_micros, 0);
    EXPECT_LT(type.spot_price_micros, type.on_demand_price_micros);
    if (type.gpu.count > 0) {
      EXPECT_FALSE(type.gpu.product.empty());
    }
  }
}

TEST(AutoscalerTest, TemplateNodeReservesWhatTheKubeletKeeps) {
  auto pools = MachinePoolsFromManifests(
      {Json::parse(R"({"apiVersion": "gpupool.io/v1", "kind": "MachinePool",
          "metadata": {"name": "ml_training.v2"},
          "spec": {"instance_type": "p3.2xlarge", "capacity_type": "spot", "max_replicas": 1,
                   "disk_size": 500}})")},
      Catalog::Builtin());
  ASSERT_TRUE(pools.ok()) << pools.status().ToString();
  model::Node node = TemplateNode((*pools)[0], *Catalog::Builtin().Find("p3.2xlarge"), "n1");
  // 8 vCPU: 60m + 10m + 2 x 5m + 4 x 2.5m = 90m reserved (EKS).
  EXPECT_EQ(node.allocatable.at("cpu").ToString(), "7910m");
  // 61Gi - (255Mi + 110 x 11Mi + 100Mi) = 62464Mi - 1565Mi.
  EXPECT_EQ(node.allocatable.at("memory").ToString(), "60899Mi");
  EXPECT_EQ(node.allocatable.at("nvidia.com/gpu").ToString(), "1");
  EXPECT_EQ(node.allocatable.at("ephemeral-storage").ToString(), "500Gi");
  EXPECT_EQ(node.allocatable.at("pods").ToString(), "110");
  EXPECT_EQ(node.labels.at("node.kubernetes.io/machinepool"), "ml_training.v2");
  EXPECT_EQ(node.labels.at("node.kubernetes.io/instance-type"), "p3.2xlarge");
  EXPECT_EQ(node.labels.at("gpupool.io/capacity-type"), "spot");
  EXPECT_EQ(node.labels.at("nvidia.com/gpu.product"), "Tesla-V100-SXM2-16GB");
  EXPECT_EQ(node.labels.at("nvidia.com/gpu.memory"), "16384");
  EXPECT_EQ(node.labels.at("node-type"), "gpu");
  ASSERT_EQ(node.taints.size(), 2u);
  EXPECT_EQ(node.taints[0].ToString(), "nvidia.com/gpu=true:NoSchedule");
  EXPECT_EQ(node.taints[1].ToString(), "spot=true:PreferNoSchedule");
}

TEST(AutoscalerTest, SpotGpuPoolScalesFromZeroForTheSeedsTrainingJob) {
  SimRun run = Simulated(std::string(kSeedPools) + TrainingPod("ml-training-0"));
  ASSERT_EQ(run.result.scale_up.size(), 1u);
  const ScaleUp& up = run.result.scale_up[0];
  EXPECT_EQ(up.machine_pool, "ml-training");
  EXPECT_EQ(up.current, 0);
  EXPECT_EQ(up.target, 1);
  EXPECT_EQ(up.nodes, std::vector<std::string>{"ml-training-1"});
  EXPECT_EQ(up.pods, std::vector<std::string>{"ml-training-0"});
  EXPECT_EQ(up.added_hourly_price_micros, 920'000);
  ASSERT_EQ(run.result.cycle.bindings.size(), 1u);
  EXPECT_EQ(run.result.cycle.bindings[0].node, "ml-training-1");
  EXPECT_TRUE(run.result.cycle.unschedulable.empty());
  EXPECT_EQ(run.json["cost"]["machinePools"]["ml-training"]["hourly"], "0.92");
  EXPECT_EQ(run.json["cost"]["machinePools"]["ml-training"]["onDemandHourly"], "3.06");
  EXPECT_EQ(run.json["cost"]["hourlySaving"], "2.14");
}

TEST(AutoscalerTest, TaintsDecideWhichPoolAPodMayTrigger) {
  SimRun run = Simulated(std::string(kSeedPools) + BatchPod("tolerant", true) +
                         BatchPod("intolerant", false));
  const ScaleUp* up = UpOf(run.result, "batch-workers");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->pods, std::vector<std::string>{"tolerant"});
  EXPECT_EQ(UpOf(run.result, "ml-training"), nullptr);
  std::string why = NotScaledReason(run.result, "intolerant");
  EXPECT_NE(why.find("pod didn't trigger scale-up: batch-workers: untolerated taint "
                     "{workload-type: batch}; ml-training: untolerated taint {nvidia.com/gpu: "
                     "true}"),
            std::string::npos)
      << why;
}

TEST(AutoscalerTest, PacksPodsFirstFitAndStopsAtMaxReplicas) {
  // 8 vCPU nodes keep 7.91 cpu: seven 1-cpu pods per node.
  std::string text = kSeedPools;
  for (int i = 0; i < 9; ++i) text += BatchPod("b" + std::to_string(i), true);
  SimRun packed = Simulated(text);
  const ScaleUp* up = UpOf(packed.result, "batch-workers");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->target, 2);
  EXPECT_EQ(up->pods.size(), 9u);

  // Five 1-GPU pods, a spot pool of at most 5 single-GPU nodes, plus one more: max reached.
  text = kSeedPools;
  for (int i = 0; i < 6; ++i) text += TrainingPod("t" + std::to_string(i));
  SimRun capped = Simulated(text);
  up = UpOf(capped.result, "ml-training");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->target, 5);
  ASSERT_EQ(capped.result.not_scaled.size(), 1u);
  EXPECT_NE(capped.result.not_scaled[0].reason.find("ml-training: max node group size reached (5)"),
            std::string::npos)
      << capped.result.not_scaled[0].reason;
}

TEST(AutoscalerTest, CheapestPoolThatFitsWins) {
  std::string text = std::string(kSeedPools) + R"(
---
apiVersion: gpupool.io/v1
kind: MachinePool
metadata: {name: t4-spot}
spec: {instance_type: g4dn.xlarge, capacity_type: spot, max_replicas: 2}
---
apiVersion: gpupool.io/v1
kind: MachinePool
metadata: {name: v100-on-demand}
spec: {instance_type: p3.2xlarge, min_replicas: 0, max_replicas: 2, labels: {node-type: gpu}}
)" + TrainingPod("small");
  SimRun run = Simulated(text);
  ASSERT_EQ(run.result.scale_up.size(), 1u);
  EXPECT_EQ(run.result.scale_up[0].machine_pool, "t4-spot");  // 0.21/h beats 0.92/h and 3.06/h
}

TEST(AutoscalerTest, SpotAboveMaxPriceIsNotUsed) {
  std::string text = R"(
apiVersion: gpupool.io/v1
kind: MachinePool
metadata: {name: cheap-only}
spec: {instance_type: p3.2xlarge, capacity_type: spot, max_replicas: 3, max_price: "0.50"}
)" + TrainingPod("t");
  SimRun run = Simulated(text);
  EXPECT_TRUE(run.result.scale_up.empty());
  EXPECT_NE(
      NotScaledReason(run.result, "t").find("cheap-only: spot price 0.92 is above max_price 0.50"),
      std::string::npos)
      << NotScaledReason(run.result, "t");
}

TEST(AutoscalerTest, GangsScaleAllOrNothing) {
  auto gang = [](const std::string& name) {
    std::string pod = TrainingPod(name);
    return pod.replace(pod.find("metadata: {name: " + name + "}"),
                       std::string("metadata: {name: " + name + "}").size(),
                       "metadata: {name: " + name + ", labels: {gpupool.io/gang: g1}}");
  };
  std::string six = kSeedPools;
  for (int i = 0; i < 6; ++i) six += gang("g" + std::to_string(i));
  SimRun too_big = Simulated(six);
  EXPECT_TRUE(too_big.result.scale_up.empty());
  EXPECT_NE(NotScaledReason(too_big.result, "g0").find("gang of 6 pods"), std::string::npos)
      << NotScaledReason(too_big.result, "g0");

  std::string four = kSeedPools;
  for (int i = 0; i < 4; ++i) four += gang("g" + std::to_string(i));
  SimRun fits = Simulated(four);
  ASSERT_EQ(fits.result.scale_up.size(), 1u);
  EXPECT_EQ(fits.result.scale_up[0].target, 4);
  EXPECT_EQ(fits.result.cycle.bindings.size(), 4u);
}

std::string IdleNode(const std::string& name) {
  return "---\napiVersion: v1\nkind: Node\nmetadata: {name: " + name +
         ", labels: {node.kubernetes.io/machinepool: idle}}\n"
         "status: {allocatable: {cpu: \"4\", memory: 16Gi, pods: \"110\"}}\n";
}

TEST(AutoscalerTest, MinReplicasAndScaleDown) {
  std::string text = R"(
apiVersion: gpupool.io/v1
kind: MachinePool
metadata: {name: compute}
spec: {instance_type: c5.2xlarge, min_replicas: 2, max_replicas: 20}
---
apiVersion: gpupool.io/v1
kind: MachinePool
metadata: {name: idle}
spec: {instance_type: m5.xlarge, min_replicas: 1, max_replicas: 5}
)" + IdleNode("idle-1") +
                     IdleNode("idle-2") + IdleNode("idle-3") + R"(---
apiVersion: v1
kind: Pod
metadata: {name: busy}
spec:
  nodeName: idle-1
  containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]
)";
  SimRun run = Simulated(text);
  const ScaleUp* up = UpOf(run.result, "compute");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->reason, "min_replicas");
  EXPECT_EQ(up->target, 2);
  // idle has 3 nodes, min 1, one busy: both empty ones go, newest first.
  ASSERT_EQ(run.result.scale_down.size(), 2u);
  EXPECT_EQ(run.result.scale_down[0].node, "idle-3");
  EXPECT_EQ(run.result.scale_down[1].node, "idle-2");
  EXPECT_NE(run.result.scale_down[0].reason.find("10m"), std::string::npos);
}

TEST(AutoscalerTest, QuotaHeldPodsDoNotKeepNewNodes) {
  std::string text = std::string(kSeedPools) + R"(
---
apiVersion: gpupool.io/v1
kind: Queue
metadata: {name: capped}
spec:
  resources:
    default: {gpu: {deserved: 0, limit: 0}}
)";
  std::string pod = TrainingPod("held");
  pod.replace(pod.find("metadata: {name: held}"), std::string("metadata: {name: held}").size(),
              "metadata: {name: held, labels: {gpupool.io/queue: capped}}");
  SimRun run = Simulated(text + pod);
  EXPECT_TRUE(run.result.scale_up.empty());
  std::string why = NotScaledReason(run.result, "held");
  EXPECT_NE(why.find("it fits machine pool ml-training, but the scheduler keeps it pending: "
                     "queue capped"),
            std::string::npos)
      << why;
}

TEST(AutoscalerTest, SpotInterruptionEvictsAndReplaces) {
  std::string text = std::string(kSeedPools) + R"(
---
apiVersion: v1
kind: Node
metadata:
  name: ml-training-1
  labels: {node.kubernetes.io/machinepool: ml-training, node-type: gpu}
spec:
  taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
status: {allocatable: {cpu: "8", memory: 61Gi, pods: "110", nvidia.com/gpu: "1"}}
)" + TrainingPod("running");
  text.insert(text.rfind("  tolerations:"), "  nodeName: ml-training-1\n");
  AutoscaleOptions options;
  options.interrupt_nodes = {"ml-training-1"};
  SimRun run = Simulated(text, options);
  ASSERT_EQ(run.result.interruptions.size(), 1u);
  EXPECT_EQ(run.result.interruptions[0].pods, std::vector<std::string>{"running"});
  EXPECT_EQ(run.result.interruptions[0].notice_seconds, 120);
  const ScaleUp* up = UpOf(run.result, "ml-training");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->current, 0);
  EXPECT_EQ(up->nodes, std::vector<std::string>{"ml-training-2"});  // never the old name
  ASSERT_EQ(run.result.cycle.bindings.size(), 1u);
  EXPECT_EQ(run.result.cycle.bindings[0].pod, "running");
  ASSERT_EQ(run.result.cycle.evictions.size(), 1u);
  EXPECT_EQ(run.result.cycle.evictions[0].node, "ml-training-1");
  EXPECT_EQ(run.result.cycle.evictions[0].reason, scheduler::EvictionReason::kNoExecute);

  // Only spot machine-pool nodes get notices.
  scheduler::Scenario scenario;
  ASSERT_TRUE(scheduler::AddScenarioText(text, "t.yaml", scenario).ok());
  auto pools = MachinePoolsFromManifests(scenario.machine_pools, Catalog::Builtin());
  ASSERT_TRUE(pools.ok());
  options.interrupt_nodes = {"nope"};
  EXPECT_EQ(Simulate(scenario.snapshot, *pools, Catalog::Builtin(), options).status().code(),
            StatusCode::kNotFound);
  scenario.snapshot.nodes[0].labels["node.kubernetes.io/machinepool"] = "batch-workers";
  options.interrupt_nodes = {"ml-training-1"};
  EXPECT_EQ(Simulate(scenario.snapshot, *pools, Catalog::Builtin(), options).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(AutoscalerTest, NewNodesJoinTheNodePoolTheirLabelsSelect) {
  std::string text = R"(
apiVersion: gpupool.io/v1
kind: NodePool
metadata: {name: a100-80}
spec: {label_key: node-pool, label_value: a100-80}
---
apiVersion: gpupool.io/v1
kind: MachinePool
metadata: {name: a100}
spec: {instance_type: p4de.24xlarge, min_replicas: 0, max_replicas: 2,
       labels: {node-pool: a100-80}}
)";
  std::string wants_pool = TrainingPod("wants-a100", 8);
  wants_pool.replace(wants_pool.find("metadata: {name: wants-a100}"),
                     std::string("metadata: {name: wants-a100}").size(),
                     "metadata: {name: wants-a100, labels: {gpupool.io/node-pool: a100-80}}");
  SimRun run = Simulated(text + wants_pool + TrainingPod("no-pool", 8));
  const ScaleUp* up = UpOf(run.result, "a100");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->pods, std::vector<std::string>{"wants-a100"});
  ASSERT_EQ(run.result.cycle.bindings.size(), 1u);
  EXPECT_EQ(run.result.cycle.bindings[0].node_pool, "a100-80");
  EXPECT_NE(NotScaledReason(run.result, "no-pool")
                .find("a100: its nodes are in node pool a100-80, the pod asks for default"),
            std::string::npos)
      << NotScaledReason(run.result, "no-pool");
}

TEST(AutoscalerTest, QueuesPayTheirDominantShareOfMachinePoolNodes) {
  std::string text = std::string(kSeedPools) +
                     "---\napiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: a}\nspec: {}\n"
                     "---\napiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: b}\nspec: {}\n";
  for (const char* queue : {"a", "b"}) {
    std::string pod = BatchPod(std::string("pod-") + queue, true, "2");
    std::string meta = std::string("metadata: {name: pod-") + queue + "}";
    pod.replace(pod.find(meta), meta.size(),
                std::string("metadata: {name: pod-") + queue +
                    ", labels: {gpupool.io/queue: " + queue + "}}");
    text += pod;
  }
  SimRun run = Simulated(text);
  ASSERT_EQ(run.result.cycle.bindings.size(), 2u);
  // One m5.2xlarge (0.384/h, 7910m cpu): each 2-cpu pod pays 2000/7910 of it (252,844 ppm).
  ASSERT_EQ(run.result.queue_cost.size(), 3u);
  EXPECT_EQ(run.result.queue_cost[0].queue, "(idle)");
  EXPECT_EQ(run.result.queue_cost[0].hourly_micros, 384'000 - 2 * 97'092);
  EXPECT_EQ(run.result.queue_cost[1].queue, "a");
  EXPECT_EQ(run.result.queue_cost[1].hourly_micros, 97'092);
  EXPECT_EQ(run.json["cost"]["queues"]["b"], "0.097092");
}

TEST(AutoscalerTest, UnknownInstanceTypeIsAnError) {
  scheduler::Scenario scenario;
  ASSERT_TRUE(scheduler::AddScenarioText(R"(
apiVersion: gpupool.io/v1
kind: MachinePool
metadata: {name: x}
spec: {instance_type: p3.2xlarg, max_replicas: 1}
)",
                                         "t.yaml", scenario)
                  .ok());
  auto pools = MachinePoolsFromManifests(scenario.machine_pools, Catalog::Builtin());
  ASSERT_FALSE(pools.ok());
  EXPECT_NE(pools.status().message().find(
                "MachinePool x: spec.instance_type: \"p3.2xlarg\" is not in the instance catalog "
                "(did you mean \"p3.2xlarge\"?)"),
            std::string::npos)
      << pools.status().message();
}

TEST(AutoscalerTest, SameInputSamePlan) {
  std::string text = kSeedPools;
  for (int i = 0; i < 7; ++i) text += TrainingPod("t" + std::to_string(i), 1);
  for (int i = 0; i < 12; ++i) text += BatchPod("b" + std::to_string(i), true, "3");
  EXPECT_EQ(Simulated(text).json.dump(), Simulated(text).json.dump());
}

}  // namespace autoscaler_test
}  // namespace gpupool::autoscaler
