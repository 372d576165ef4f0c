#include "service/machine_pool_support.h"

namespace gpupool::service {

MachinePoolSupport MachinePoolSupportFor(const autoscaler::Catalog& catalog) {
  MachinePoolSupport support;
  support.check = [&catalog](const model::MachinePool& pool) {
    return autoscaler::CheckInstanceType(pool, catalog, pool.name + ".");
  };
  support.hourly_price_micros =
      [&catalog](const model::MachinePool& pool) -> std::optional<int64_t> {
    const model::InstanceType* type = catalog.Find(pool.instance_type);
    if (type == nullptr) return std::nullopt;
    return pool.capacity_type == model::CapacityType::kSpot ? type->spot_price_micros
                                                            : type->on_demand_price_micros;
  };
  support.template_node = [&catalog](const model::MachinePool& pool) -> std::optional<model::Node> {
    const model::InstanceType* type = catalog.Find(pool.instance_type);
    if (type == nullptr || pool.max_replicas == 0) return std::nullopt;
    model::MachinePool with_defaults = pool;
    model::ApplyDefaultTaints(*type, with_defaults);
    // Named so that a validation table shows where the capacity would come from.
    return autoscaler::TemplateNode(with_defaults, *type, "new " + pool.name + " node");
  };
  return support;
}

}  // namespace gpupool::service
