#pragma once
// Machine pools (seed 004, ROSA machine pools; DESIGN section 5): an autoscaled group of identical
// nodes of one instance type, on-demand or spot, with labels and taints, between min_replicas and
// max_replicas nodes. Instance types come from a catalog (cpu, memory, GPUs, prices per hour).
//
// Config body (config kind MACHINE_POOL; every field may be left out, see MachinePoolDefaults):
//   {"instance_type": "g4dn.xlarge", "capacity_type": "spot", "min_replicas": 0,
//    "max_replicas": 3, "labels": {"ml-framework": "pytorch"},
//    "taints": [{"key": "workload-type", "value": "batch", "effect": "NoSchedule"}],
//    "max_price": "0.40", "disk_size": 500, "description": "...",
//    "scale_target": {"api_version": "machine.openshift.io/v1beta1", "kind": "MachineSet",
//                     "namespace": "openshift-machine-api", "name": "gpu-a"}}
// A taint may name its effect `effect` (Kubernetes) or `schedule_type` (the ROSA/OCM API and the
// seed's HCL), not both. Without a `taints` field, a GPU spot pool gets the seed's default taints
// `nvidia.com/gpu=true:NoSchedule` and `spot=true:PreferNoSchedule`; an explicit list (also an
// empty one) replaces them. `max_price` (USD per hour, spot only) may be a number or a decimal
// string; "" or absent caps the spot price at the on-demand price, as ROSA does.
// Manifest: {apiVersion: gpupool.io/v1, kind: MachinePool, metadata: {name}, spec: <body>}.
// Decoding is strict: an unknown field is an error with a did-you-mean suggestion.
//
// Prices are int64 micro-dollars per hour (never double in accounting).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/k8s.h"
#include "model/scale_target.h"

namespace gpupool::model {

// The node label that names a node's machine pool (seed 004: `oc get nodes -l
// node.kubernetes.io/machinepool=additional`).
inline constexpr char kMachinePoolLabel[] = "node.kubernetes.io/machinepool";
inline constexpr char kInstanceTypeLabel[] = "node.kubernetes.io/instance-type";
inline constexpr char kCapacityTypeLabel[] = "gpupool.io/capacity-type";

enum class CapacityType { kOnDemand, kSpot };
std::string_view CapacityTypeName(CapacityType type);  // on_demand | spot

// "1.5", "0.526", 3 -> micro-dollars. Negative or more than 6 decimals is an error.
Result<int64_t> ParsePriceMicros(const nlohmann::ordered_json& value, std::string_view field_path);
// 526000 -> "0.526" (at least two decimals: "3.06", "0.00").
std::string FormatPriceMicros(int64_t micros);

struct InstanceGpu {
  std::string
      product;  // NVIDIA GPU feature discovery name, e.g. "Tesla-T4", "NVIDIA-A100-SXM4-80GB"
  int32_t count = 0;
  Quantity memory;  // per GPU

  friend bool operator==(const InstanceGpu&, const InstanceGpu&) = default;
};

struct InstanceType {
  std::string name;  // "g4dn.xlarge"
  Quantity cpu;      // vCPUs
  Quantity memory;
  InstanceGpu gpu;  // count 0 = no GPU
  int64_t on_demand_price_micros = 0;
  int64_t spot_price_micros = 0;  // 0 = not offered as spot

  friend bool operator==(const InstanceType&, const InstanceType&) = default;
};

// Catalog file: {"instance_types": [{"name", "cpu", "memory", "gpu": {"product", "count",
// "memory"}, "on_demand_price", "spot_price"}]} (JSON or YAML). Names must be unique.
Result<std::vector<InstanceType>> InstanceTypesFromJson(const nlohmann::ordered_json& catalog);

// Seed 004's module defaults, used for the fields a MACHINE_POOL body leaves out: the additional
// pool (`additional_pool_*`: on-demand, m5.xlarge, 1..5 replicas, named `additional`) and the GPU
// spot pool (`gpu_spot_pool_*`: spot, g4dn.xlarge, 0..3 replicas). The seed gives the GPU spot
// pool no default name; `gpu-spot` is used where one is needed.
struct MachinePoolDefaults {
  std::string_view name;
  std::string_view instance_type;
  int32_t min_replicas;
  int32_t max_replicas;
};
const MachinePoolDefaults& DefaultsFor(CapacityType type);

struct MachinePool {
  std::string name;
  std::string description;
  std::string instance_type;
  CapacityType capacity_type = CapacityType::kOnDemand;
  int32_t min_replicas = 0;
  int32_t max_replicas = 0;
  Labels labels;
  std::vector<Taint> taints;  // effective taints (defaults applied when `taints` was absent)
  bool taints_given = false;  // the body had a `taints` field
  std::optional<int64_t> max_price_micros;  // spot only; nullopt = the on-demand price
  int32_t disk_size_gib = 0;                // 0 = the default root volume (300 GiB, as ROSA)
  // On the Kubernetes backend: the MachineSet or MachineDeployment that makes the pool's nodes
  // (model/scale_target.h). The sim backend simulates the pool's nodes with or without it.
  std::optional<ScaleTarget> scale_target;

  friend bool operator==(const MachinePool&, const MachinePool&) = default;
};

inline constexpr int32_t kDefaultDiskSizeGib = 300;

// The fields MachinePoolFromJson accepts besides "name" (see NodePoolFields).
std::span<const std::string_view> MachinePoolFields();

// Decodes a MACHINE_POOL config body (without the catalog: the default taints of a GPU spot pool
// are added by ApplyDefaultTaints once the instance type is known). `field_path` prefixes error
// messages.
Result<MachinePool> MachinePoolFromJson(const nlohmann::ordered_json& body, std::string_view name,
                                        std::string_view field_path = "");
nlohmann::ordered_json MachinePoolToJson(const MachinePool& pool);

// Manifest form (kind MachinePool).
Result<MachinePool> MachinePoolFromManifest(const nlohmann::ordered_json& manifest);
nlohmann::ordered_json MachinePoolToManifest(const MachinePool& pool);

// The seed's GPU spot pool taints, for a spot pool whose instance type has GPUs and whose body
// had no `taints` field. Idempotent.
void ApplyDefaultTaints(const InstanceType& type, MachinePool& pool);

}  // namespace gpupool::model
