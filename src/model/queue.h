#pragma once
// Queues: quota holders (Run:ai projects and departments, KAI queues). A queue without "parent"
// is a department (top level); a queue with "parent" is a project of that department. Only leaf
// queues hold pods.
//
// Config body (config kind QUEUE):
//   {"parent": "rnd", "priority": 0, "description": "...",
//    "resources": {"a100-80": {"gpu": {"deserved": 20, "limit": -1, "over_quota_weight": 1},
//                              "cpu": {"deserved": "64", ...}, "memory": {"deserved": "512Gi"}}}}
// Missing-entry semantics: a node pool or resource that is not listed means deserved 0, no limit,
// over_quota_weight 1 (the queue may use idle capacity over quota; it can be reclaimed).
// Units follow Kubernetes quantities: gpu in devices (fractions allowed: 0.5), cpu in cores
// ("500m" works), memory in bytes ("64Gi", "1G"); JSON numbers are accepted. -1 means unlimited for
// both deserved and limit. Stored as int64 milli-units.
// Manifest: {apiVersion: gpupool.io/v1, kind: Queue, metadata: {name}, spec: <body>}.

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpupool::model {

// The resources a queue holds quota for, in this order everywhere.
enum class QuotaResource { kGpu = 0, kCpu = 1, kMemory = 2 };
inline constexpr int kNumQuotaResources = 3;
inline constexpr std::array<std::string_view, kNumQuotaResources> kQuotaResourceNames = {
    "gpu", "cpu", "memory"};
// Kubernetes resource name of each quota resource (for messages).
inline constexpr std::array<std::string_view, kNumQuotaResources> kQuotaResourceK8sNames = {
    "nvidia.com/gpu", "cpu", "memory"};

inline constexpr int64_t kUnlimited = -1;

struct ResourceQuota {
  int64_t deserved_milli = 0;        // kUnlimited = everything the node pool has
  int64_t limit_milli = kUnlimited;  // kUnlimited = no cap
  int64_t over_quota_weight = 1;     // 0 = never gets over-quota share

  friend bool operator==(const ResourceQuota&, const ResourceQuota&) = default;
};

struct NodePoolQuota {
  std::array<ResourceQuota, kNumQuotaResources> resources;  // indexed by QuotaResource

  const ResourceQuota& operator[](QuotaResource r) const { return resources[static_cast<int>(r)]; }
  ResourceQuota& operator[](QuotaResource r) { return resources[static_cast<int>(r)]; }
  friend bool operator==(const NodePoolQuota&, const NodePoolQuota&) = default;
};

struct Queue {
  std::string name;
  std::string parent;  // empty = department (top level)
  int64_t priority = 0;
  std::string description;
  std::map<std::string, NodePoolQuota> resources;  // node pool name -> quota

  // The quota in `node_pool`, with the missing-entry defaults.
  const NodePoolQuota& QuotaIn(std::string_view node_pool) const;

  friend bool operator==(const Queue&, const Queue&) = default;
};

// The fields QueueFromJson accepts besides "name" (see NodePoolFields).
std::span<const std::string_view> QueueFields();

// Decodes a QUEUE config body. `field_path` prefixes error messages. The body may carry "name";
// when it does it must equal `name`.
Result<Queue> QueueFromJson(const nlohmann::ordered_json& body, std::string_view name,
                            std::string_view field_path = "");
nlohmann::ordered_json QueueToJson(const Queue& queue);

// Follows the parents from queue `name` (`parents`: queue -> its parent, "" or absent for a
// department) and returns the path when it comes back to a queue already on it: {"a", "b", "a"}
// for a -> b -> a, {"c", "a", "b", "a"} when c's parent is on that cycle. Empty when the path ends
// (a department, or a parent not in `parents`). Queues must form a tree: a cycle is refused on
// write and in scenarios.
std::vector<std::string> FindParentCycle(const std::map<std::string, std::string>& parents,
                                         const std::string& name);

// Manifest form (kind Queue).
Result<Queue> QueueFromManifest(const nlohmann::ordered_json& manifest);
nlohmann::ordered_json QueueToManifest(const Queue& queue);

// Formats milli-units of a quota resource for messages and JSON: gpu "8" / "0.5", cpu "4" /
// "500m", memory "64Gi" / "1500M" / "123".
std::string FormatQuotaAmount(QuotaResource r, int64_t milli);

}  // namespace gpupool::model
