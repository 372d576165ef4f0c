// Instance catalogs (`gpupool schedule --catalog FILE`, `gpupool serve --catalog FILE`): JSON or
// YAML {"instance_types": [...]} through model::InstanceTypesFromJson, as
// autoscaler::LoadCatalogFile reads them. Each type then becomes a machine pool's template node.
//
// Invariants: a refusal is InvalidArgument; prices print and parse back to the same micros; a
// template node dumps as JSON and decodes again.

#include "autoscaler/autoscaler.h"
#include "codec/yaml_reader.h"
#include "fuzz/support/fuzz_util.h"
#include "model/machine_pool.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  const std::string_view text = AsText(data, size);
  auto documents = codec::ParseJsonOrYamlDocuments(text, "catalog.yaml");
  if (!documents.ok() || documents->size() != 1) return 0;
  auto types = model::InstanceTypesFromJson((*documents)[0]);
  if (!types.ok()) {
    CheckInputError(types.status(), "InstanceTypesFromJson", true);
    return 0;
  }
  const autoscaler::Catalog catalog(*types);
  for (const model::InstanceType& type : catalog.types()) {
    Check(catalog.Find(type.name) != nullptr, "a catalog finds its types", type.name);
    for (int64_t micros : {type.on_demand_price_micros, type.spot_price_micros}) {
      const std::string price = model::FormatPriceMicros(micros);
      auto parsed = model::ParsePriceMicros(Json(price), "price");
      Check(parsed.ok() && *parsed == micros, "a price prints and parses back",
            price + " " + parsed.status().ToString());
    }
    for (model::CapacityType capacity :
         {model::CapacityType::kOnDemand, model::CapacityType::kSpot}) {
      model::MachinePool pool;
      pool.name = "fuzz";
      pool.instance_type = type.name;
      pool.capacity_type = capacity;
      pool.max_replicas = 1;
      model::ApplyDefaultTaints(type, pool);
      const Json node = model::NodeToJson(autoscaler::TemplateNode(pool, type, "fuzz-0"));
      CheckedDump(node, "a template node");
      auto again = model::NodeFromJson(node);
      Check(again.ok(), "a template node decodes again", again.status().ToString());
    }
  }
  return 0;
}
