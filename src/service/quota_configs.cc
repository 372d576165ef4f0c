#include "service/quota_configs.h"

#include "config/kinds.h"

namespace gpupool::service {

QuotaConfigs DecodeQuotaConfigs(
    const std::map<std::pair<std::string, std::string>, nlohmann::ordered_json>& bodies) {
  QuotaConfigs out;
  const std::string queue_kind(config::KindName(config::Kind::kQueue));
  const std::string node_pool_kind(config::KindName(config::Kind::kNodePool));
  for (const auto& [key, body] : bodies) {
    if (key.first == queue_kind) {
      if (auto queue = model::QueueFromJson(body, key.second); queue.ok()) {
        out.queues[key.second] = std::move(*queue);
      }
    } else if (key.first == node_pool_kind) {
      if (auto pool = model::NodePoolFromJson(body, key.second); pool.ok()) {
        out.node_pools[key.second] = std::move(*pool);
      }
    }
  }
  return out;
}

}  // namespace gpupool::service
