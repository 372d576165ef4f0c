#include "autoscaler/autoscaler.h"
#include "codec/json_reader.h"
#include "codec/yaml_reader.h"
#include "model/input_file.h"

namespace gpupool::autoscaler {
namespace {

// On-demand: AWS list prices, Linux, us-east-1 (USD per hour). Spot: a typical recent price; spot
// prices move hourly and by zone, so treat them as illustrative and pass a catalog file (--catalog)
// with your own. p4de has no spot offering (spot_price 0).
constexpr char kBuiltinCatalog[] = R"json({"instance_types": [
  {"name": "m5.xlarge", "cpu": 4, "memory": "16Gi", "on_demand_price": "0.192", "spot_price": "0.075"},
  {"name": "m5.2xlarge", "cpu": 8, "memory": "32Gi", "on_demand_price": "0.384", "spot_price": "0.15"},
  {"name": "m5.4xlarge", "cpu": 16, "memory": "64Gi", "on_demand_price": "0.768", "spot_price": "0.3"},
  {"name": "c5.2xlarge", "cpu": 8, "memory": "16Gi", "on_demand_price": "0.34", "spot_price": "0.13"},
  {"name": "r5.2xlarge", "cpu": 8, "memory": "64Gi", "on_demand_price": "0.504", "spot_price": "0.17"},
  {"name": "g4dn.xlarge", "cpu": 4, "memory": "16Gi", "on_demand_price": "0.526", "spot_price": "0.21",
   "gpu": {"product": "Tesla-T4", "count": 1, "memory": "16Gi"}},
  {"name": "g4dn.12xlarge", "cpu": 48, "memory": "192Gi", "on_demand_price": "3.912", "spot_price": "1.6",
   "gpu": {"product": "Tesla-T4", "count": 4, "memory": "16Gi"}},
  {"name": "g5.xlarge", "cpu": 4, "memory": "16Gi", "on_demand_price": "1.006", "spot_price": "0.4",
   "gpu": {"product": "NVIDIA-A10G", "count": 1, "memory": "24Gi"}},
  {"name": "g6e.xlarge", "cpu": 4, "memory": "32Gi", "on_demand_price": "1.861", "spot_price": "0.85",
   "gpu": {"product": "NVIDIA-L40S", "count": 1, "memory": "48Gi"}},
  {"name": "g6e.12xlarge", "cpu": 48, "memory": "384Gi", "on_demand_price": "10.493", "spot_price": "4.6",
   "gpu": {"product": "NVIDIA-L40S", "count": 4, "memory": "48Gi"}},
  {"name": "p3.2xlarge", "cpu": 8, "memory": "61Gi", "on_demand_price": "3.06", "spot_price": "0.92",
   "gpu": {"product": "Tesla-V100-SXM2-16GB", "count": 1, "memory": "16Gi"}},
  {"name": "p3.8xlarge", "cpu": 32, "memory": "244Gi", "on_demand_price": "12.24", "spot_price": "3.67",
   "gpu": {"product": "Tesla-V100-SXM2-16GB", "count": 4, "memory": "16Gi"}},
  {"name": "p4d.24xlarge", "cpu": 96, "memory": "1152Gi", "on_demand_price": "32.7726", "spot_price": "14.0",
   "gpu": {"product": "NVIDIA-A100-SXM4-40GB", "count": 8, "memory": "40Gi"}},
  {"name": "p4de.24xlarge", "cpu": 96, "memory": "1152Gi", "on_demand_price": "40.9657", "spot_price": "0",
   "gpu": {"product": "NVIDIA-A100-SXM4-80GB", "count": 8, "memory": "80Gi"}},
  {"name": "p5.48xlarge", "cpu": 192, "memory": "2048Gi", "on_demand_price": "98.32", "spot_price": "40.0",
   "gpu": {"product": "NVIDIA-H100-80GB-HBM3", "count": 8, "memory": "80Gi"}}
]})json";

}  // namespace

Catalog::Catalog(std::vector<model::InstanceType> types) : types_(std::move(types)) {}

const Catalog& Catalog::Builtin() {
  // Valid by construction: autoscaler_test decodes it.
  static const Catalog kCatalog(
      model::InstanceTypesFromJson(*codec::ParseJson(kBuiltinCatalog, "builtin catalog")).value());
  return kCatalog;
}

const model::InstanceType* Catalog::Find(std::string_view name) const {
  for (const auto& type : types_) {
    if (type.name == name) return &type;
  }
  return nullptr;
}

Result<Catalog> LoadCatalogFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, model::ReadFile(path));
  ASSIGN_OR_RETURN(auto docs, codec::ParseJsonOrYamlDocuments(text, path));
  if (docs.size() != 1) {
    return InvalidArgumentError(path + ": expected one document with instance_types, got " +
                                std::to_string(docs.size()));
  }
  auto types = model::InstanceTypesFromJson(docs[0]);
  if (!types.ok()) return InvalidArgumentError(path + ": " + types.status().message());
  return Catalog(std::move(types).value());
}

}  // namespace gpupool::autoscaler
