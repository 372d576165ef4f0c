#pragma once
// The stored QUEUE and NODE_POOL bodies, decoded, for the checks of model/quota_tree.h on write
// and delete, and for the node-pool conflicts shown with nodes. Internal to the service module.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "model/node_pool.h"
#include "model/queue.h"

namespace gpupool::service {

struct QuotaConfigs {
  std::map<std::string, model::Queue> queues;
  std::map<std::string, model::NodePool> node_pools;
};

// Bodies keyed by (kind, name); other kinds, and bodies that no longer decode (the scheduling
// loop reports those), are skipped.
QuotaConfigs DecodeQuotaConfigs(
    const std::map<std::pair<std::string, std::string>, nlohmann::ordered_json>& bodies);

}  // namespace gpupool::service
