#include "model/machine_pool.h"

#include <gtest/gtest.h>

namespace gpupool::model {
namespace machine_pool_test {

using Json = nlohmann::ordered_json;

Json J(const char* text) { return Json::parse(text); }

TEST(MachinePoolTest, DecodesTheSeedsPoolsInBothTaintForms) {
  // Seed 004's "Basic Additional Pool" and "GPU Spot Pool for ML Training", as MACHINE_POOL bodies.
  auto batch = MachinePoolFromJson(J(R"({
      "instance_type": "m5.2xlarge", "min_replicas": 2, "max_replicas": 10,
      "labels": {"workload-type": "batch", "team": "data-engineering"},
      "taints": [{"key": "workload-type", "value": "batch", "effect": "NoSchedule"}]})"),
                                   "batch-workers");
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  EXPECT_EQ(batch->capacity_type, CapacityType::kOnDemand);
  EXPECT_EQ(batch->min_replicas, 2);
  EXPECT_EQ(batch->max_replicas, 10);
  EXPECT_EQ(batch->labels.at("team"), "data-engineering");
  ASSERT_EQ(batch->taints.size(), 1u);
  EXPECT_EQ(batch->taints[0].ToString(), "workload-type=batch:NoSchedule");

  auto rosa = MachinePoolFromJson(J(R"({
      "instance_type": "m5.2xlarge", "max_replicas": 3,
      "taints": [{"key": "workload-type", "value": "batch", "schedule_type": "NoSchedule"}]})"),
                                  "additional");
  ASSERT_TRUE(rosa.ok()) << rosa.status().ToString();
  EXPECT_EQ(rosa->taints, batch->taints);

  auto spot = MachinePoolFromJson(J(R"({
      "instance_type": "p3.2xlarge", "capacity_type": "spot", "min_replicas": 0,
      "max_replicas": 5, "disk_size": 500, "labels": {"ml-framework": "pytorch"}})"),
                                  "ml-training");
  ASSERT_TRUE(spot.ok()) << spot.status().ToString();
  EXPECT_EQ(spot->capacity_type, CapacityType::kSpot);
  EXPECT_EQ(spot->disk_size_gib, 500);
  EXPECT_FALSE(spot->taints_given);
  EXPECT_FALSE(spot->max_price_micros.has_value());
}

// Seed 004's variables table: what an absent field means for each kind of pool.
TEST(MachinePoolTest, SeedDefaultsForAbsentFields) {
  struct Case {
    const char* body;
    const char* instance_type;
    int32_t min_replicas;
    int32_t max_replicas;
  };
  const Case cases[] = {
      {R"({})", "m5.xlarge", 1, 5},                           // additional_pool_*
      {R"({"capacity_type": "spot"})", "g4dn.xlarge", 0, 3},  // gpu_spot_pool_*
      {R"({"instance_type": "c5.2xlarge", "max_replicas": 20})", "c5.2xlarge", 1, 20},
      {R"({"capacity_type": "spot", "instance_type": "p3.2xlarge", "max_replicas": 5})",
       "p3.2xlarge", 0, 5},
      {R"({"max_replicas": 0})", "m5.xlarge", 0, 0},  // a max below the default min lowers it
      {R"({"min_replicas": 8})", "m5.xlarge", 8, 8},  // a min above the default max raises it
      {R"({"min_replicas": 2})", "m5.xlarge", 2, 5},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    auto pool = MachinePoolFromJson(nlohmann::ordered_json::parse(c.body), "p");
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    EXPECT_EQ(pool->instance_type, c.instance_type);
    EXPECT_EQ(pool->min_replicas, c.min_replicas);
    EXPECT_EQ(pool->max_replicas, c.max_replicas);
  }
  EXPECT_EQ(DefaultsFor(CapacityType::kOnDemand).name, "additional");
}

TEST(MachinePoolTest, RejectsBadBodiesWithTheFieldPath) {
  struct Case {
    const char* body;
    const char* error;
  };
  const Case cases[] = {
      {R"({"instance_type": "m5.xlarge", "max_replica": 3})",
       "p.max_replica: unknown field (did you mean \"max_replicas\"?)"},
      {R"({"instance_type": "m5.xlarge", "min_replicas": 4, "max_replicas": 3})",
       "p.min_replicas: 4 is above max_replicas 3"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": -1})",
       "p.max_replicas: -1 is out of range"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": 2.5})",
       "p.max_replicas: expected a whole number, got 2.5"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": "3"})",
       "p.max_replicas: expected a whole number, got string"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": 3, "capacity_type": "Spot"})",
       "p.capacity_type: \"Spot\": expected on_demand or spot (did you mean \"spot\"?)"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": 3, "max_price": "0.5"})",
       "p.max_price: only for capacity_type spot"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": 3, "capacity_type": "spot",
           "max_price": "0.5.1"})",
       "p.max_price: \"0.5.1\" is not a price"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": 3,
           "taints": [{"key": "a", "value": "b", "effect": "NoSchedule",
                       "schedule_type": "NoSchedule"}]})",
       "p.taints[0]: give the effect once"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": 3,
           "taints": [{"key": "a", "value": "b", "schedule_type": "NoSchedul"}]})",
       "p.taints[0].effect: expected one of NoSchedule, PreferNoSchedule, NoExecute"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": 3,
           "taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoSchedule"}]})",
       "p.taints[1]: duplicate taint a:NoSchedule"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": 3,
           "labels": {"node.kubernetes.io/machinepool": "x"}})",
       "p.labels.node.kubernetes.io/machinepool: set by gpupool"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": 3, "labels": {"team": "a b"}})",
       "p.labels.team: \"a b\" is not a valid label value"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": 3, "disk_size": 0})",
       "p.disk_size: 0 is out of range"},
      {R"([])", "p: expected an object, got array"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": 3,
           "scale_target": {"api_version": "apps/v1", "kind": "Deployment",
                            "namespace": "a", "name": "b"}})",
       "p.scale_target: apps/v1 Deployment is not a resource gpupool scales; expected "
       "machine.openshift.io/v1beta1 MachineSet or cluster.x-k8s.io/v1beta1 MachineDeployment"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": 3,
           "scale_target": {"api_version": "cluster.x-k8s.io/v1beta1",
                            "kind": "MachineDeployment", "namespace": "a"}})",
       "p.scale_target.name: required"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": 3,
           "scale_target": {"api_version": "cluster.x-k8s.io/v1beta1",
                            "kind": "MachineDeployment", "namespace": "Team_A", "name": "b"}})",
       "p.scale_target.namespace: \"Team_A\" is not a Kubernetes name"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": 3,
           "scale_target": {"api_version": "cluster.x-k8s.io/v1beta1", "kind":
                            "MachineDeployment", "namespace": "a", "name": "b", "nam": "c"}})",
       "p.scale_target.nam: unknown field (did you mean \"name\"?)"},
      {R"({"instance_type": "m5.xlarge", "max_replicas": 3, "scale_target": "gpu-a"})",
       "p.scale_target: expected an object with api_version, kind, namespace and name"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    auto pool = MachinePoolFromJson(J(c.body), "p");
    ASSERT_FALSE(pool.ok());
    EXPECT_EQ(pool.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(pool.status().message().find(c.error), std::string::npos) << pool.status().message();
  }
}

TEST(MachinePoolTest, PricesAreExactMicroDollars) {
  struct Case {
    Json value;
    int64_t micros;
  };
  const Case cases[] = {{"0.526", 526'000},     {"3.06", 3'060'000}, {"32.7726", 32'772'600},
                        {".5", 500'000},        {"7", 7'000'000},    {"0.000001", 1},
                        {Json(0.526), 526'000}, {Json(3), 3'000'000}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.value.dump());
    auto micros = ParsePriceMicros(c.value, "price");
    ASSERT_TRUE(micros.ok()) << micros.status().ToString();
    EXPECT_EQ(*micros, c.micros);
  }
  for (const Json& bad :
       {Json("-1"), Json("1e3"), Json("0.0000001"), Json(""), Json(true), Json("."), Json(-0.5)}) {
    SCOPED_TRACE(bad.dump());
    EXPECT_FALSE(ParsePriceMicros(bad, "price").ok());
  }
  EXPECT_EQ(FormatPriceMicros(526'000), "0.526");
  EXPECT_EQ(FormatPriceMicros(3'060'000), "3.06");
  EXPECT_EQ(FormatPriceMicros(0), "0.00");
  EXPECT_EQ(FormatPriceMicros(98'320'000), "98.32");
  EXPECT_EQ(FormatPriceMicros(-1'500'000), "-1.50");
}

TEST(MachinePoolTest, GpuSpotPoolsGetTheSeedsDefaultTaints) {
  InstanceType gpu{"p3.2xlarge",
                   Quantity::FromUnits(8),
                   *Quantity::Parse("61Gi"),
                   InstanceGpu{"Tesla-V100-SXM2-16GB", 1, *Quantity::Parse("16Gi")},
                   3'060'000,
                   920'000};
  InstanceType cpu{"m5.xlarge", Quantity::FromUnits(4), *Quantity::Parse("16Gi"), {}, 192'000,
                   75'000};
  struct Case {
    const char* name;
    const char* body;
    const InstanceType* type;
    std::vector<std::string> taints;
  };
  const Case cases[] = {
      {"gpu spot, no taints field",
       R"({"instance_type": "x", "capacity_type": "spot",
        "max_replicas": 1})",
       &gpu,
       {"nvidia.com/gpu=true:NoSchedule", "spot=true:PreferNoSchedule"}},
      {"gpu spot, explicit empty list",
       R"({"instance_type": "x", "capacity_type": "spot",
        "max_replicas": 1, "taints": []})",
       &gpu,
       {}},
      {"gpu spot, own taint",
       R"({"instance_type": "x", "capacity_type": "spot",
        "max_replicas": 1, "taints": [{"key": "k", "value": "v", "effect": "NoExecute"}]})",
       &gpu,
       {"k=v:NoExecute"}},
      {"gpu on demand", R"({"instance_type": "x", "max_replicas": 1})", &gpu, {}},
      {"cpu spot",
       R"({"instance_type": "x", "capacity_type": "spot", "max_replicas": 1})",
       &cpu,
       {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto pool = MachinePoolFromJson(J(c.body), "p");
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    ApplyDefaultTaints(*c.type, *pool);
    ApplyDefaultTaints(*c.type, *pool);  // idempotent
    std::vector<std::string> taints;
    for (const Taint& t : pool->taints) taints.push_back(t.ToString());
    EXPECT_EQ(taints, c.taints);
  }
}

TEST(MachinePoolTest, ManifestRoundTrips) {
  Json manifest = J(R"({"apiVersion": "gpupool.io/v1", "kind": "MachinePool",
      "metadata": {"name": "ml-training"},
      "spec": {"instance_type": "g4dn.xlarge", "capacity_type": "spot", "min_replicas": 0,
               "max_replicas": 3, "max_price": "0.30",
               "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}})");
  auto pool = MachinePoolFromManifest(manifest);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ(pool->max_price_micros, 300'000);
  auto again = MachinePoolFromManifest(MachinePoolToManifest(*pool));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *pool);

  Json wrong_kind = manifest;
  wrong_kind["kind"] = "NodePool";
  EXPECT_FALSE(MachinePoolFromManifest(wrong_kind).ok());
}

// A pool on the Kubernetes backend names the MachineSet or MachineDeployment that makes its nodes;
// the body round-trips and the target gives the API paths gpupool calls.
TEST(MachinePoolTest, ScaleTargetsDecodeRoundTripAndNameTheirPaths) {
  struct Case {
    const char* target;
    const char* object_path;
    const char* machine_path;
    const char* delete_annotation;
  };
  const Case cases[] = {
      {R"({"api_version": "machine.openshift.io/v1beta1", "kind": "MachineSet",
           "namespace": "openshift-machine-api", "name": "gpu-a"})",
       "/apis/machine.openshift.io/v1beta1/namespaces/openshift-machine-api/machinesets/gpu-a",
       "/apis/machine.openshift.io/v1beta1/namespaces/openshift-machine-api/machines/gpu-a-x1",
       "machine.openshift.io/delete-machine"},
      {R"({"api_version": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
           "namespace": "capi", "name": "md-0"})",
       "/apis/cluster.x-k8s.io/v1beta1/namespaces/capi/machinedeployments/md-0",
       "/apis/cluster.x-k8s.io/v1beta1/namespaces/capi/machines/gpu-a-x1",
       "cluster.x-k8s.io/delete-machine"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.target);
    Json body = {{"instance_type", "g5.xlarge"}, {"max_replicas", 4}};
    body["scale_target"] = J(c.target);
    auto pool = MachinePoolFromJson(body, "gpu-a");
    ASSERT_TRUE(pool.ok()) << pool.status().message();
    ASSERT_TRUE(pool->scale_target.has_value());
    const ScaleTarget& target = *pool->scale_target;
    EXPECT_EQ(ScaleTargetPath(target), c.object_path);
    EXPECT_EQ(MachinePath(target, target.namespace_name, "gpu-a-x1"), c.machine_path);
    ASSERT_NE(FindScalableKind(target), nullptr);
    EXPECT_EQ(FindScalableKind(target)->delete_machine_annotation, c.delete_annotation);
    EXPECT_EQ(MachinePoolToJson(*pool)["scale_target"], J(c.target));
    auto again = MachinePoolFromJson(MachinePoolToJson(*pool), "gpu-a");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *pool);
  }
}

TEST(InstanceCatalogTest, DecodesAndRejects) {
  auto types = InstanceTypesFromJson(J(R"({"instance_types": [
      {"name": "g4dn.xlarge", "cpu": 4, "memory": "16Gi", "on_demand_price": "0.526",
       "spot_price": "0.21", "gpu": {"product": "Tesla-T4", "count": 1, "memory": "16Gi"}}]})"));
  ASSERT_TRUE(types.ok()) << types.status().ToString();
  ASSERT_EQ(types->size(), 1u);
  EXPECT_EQ((*types)[0].gpu.count, 1);
  EXPECT_EQ((*types)[0].spot_price_micros, 210'000);

  struct Case {
    const char* catalog;
    const char* error;
  };
  const Case cases[] = {
      {R"({"instance_type": []})", "instance_type: unknown field"},
      {R"({"instance_types": [{"name": "a", "cpu": 4, "memory": "1Gi"}]})",
       "instance_types[0].on_demand_price: required"},
      {R"({"instance_types": [{"name": "a", "cpu": 4, "memory": "1Gi", "on_demand_price": 1},
                              {"name": "a", "cpu": 4, "memory": "1Gi", "on_demand_price": 1}]})",
       "instance_types[1].name: duplicate instance type \"a\""},
      {R"({"instance_types": [{"name": "a", "cpu": 4, "memory": "1Gi", "on_demand_price": 1,
                               "gpu": {"count": 2}}]})",
       "instance_types[0].gpu.product: required when count > 0"},
      {R"({"instance_types": [{"name": "a", "cpus": 4}]})",
       "instance_types[0].cpus: unknown field (did you mean \"cpu\"?)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.catalog);
    auto bad = InstanceTypesFromJson(J(c.catalog));
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find(c.error), std::string::npos) << bad.status().message();
  }
}

}  // namespace machine_pool_test
}  // namespace gpupool::model
