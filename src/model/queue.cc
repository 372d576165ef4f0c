#include "model/queue.h"

#include <set>

#include "codec/field_path.h"
#include "common/strings.h"
#include "model/node_pool.h"
#include "model/quantity.h"
#include "model/quota_tree.h"

namespace gpupool::model {
namespace {

using Json = nlohmann::ordered_json;

// deserved/limit: a quantity (number or string) or -1 for unlimited.
Result<int64_t> ParseAmount(const Json& value, std::string_view path) {
  if (value.is_number_integer() && value.get<int64_t>() == -1) return kUnlimited;
  if (value.is_string() && value.get<std::string>() == "-1") return kUnlimited;
  ASSIGN_OR_RETURN(Quantity q, ParseQuantityJson(value, path));
  if (q.IsNegative()) {
    return InvalidArgumentError(std::string(path) +
                                ": expected a non-negative quantity or -1 (unlimited), got " +
                                value.dump());
  }
  // Quotas are held in int64 milli-units; a quota beyond them (9.2P) is no quota at all.
  if (!q.FitsMilli()) {
    return InvalidArgumentError(std::string(path) + ": " + value.dump() +
                                " is larger than a quota can be (at most 9223372036854775807m, "
                                "about 9.2P); use -1 for unlimited");
  }
  return q.MilliValue();
}

Result<ResourceQuota> ParseResourceQuota(const Json& body, std::string_view path) {
  static const std::vector<std::string> kFields = {"deserved", "limit", "over_quota_weight"};
  if (!body.is_object()) {
    return InvalidArgumentError(std::string(path) +
                                ": expected an object with deserved, limit, "
                                "over_quota_weight, got " +
                                std::string(body.type_name()));
  }
  ResourceQuota quota;
  for (const auto& [key, value] : body.items()) {
    std::string field = codec::FieldPath(path, key);
    if (key == "deserved") {
      ASSIGN_OR_RETURN(quota.deserved_milli, ParseAmount(value, field));
    } else if (key == "limit") {
      ASSIGN_OR_RETURN(quota.limit_milli, ParseAmount(value, field));
    } else if (key == "over_quota_weight") {
      if (!value.is_number_integer() || value.get<int64_t>() < 0) {
        return InvalidArgumentError(field + ": expected a non-negative integer, got " +
                                    value.dump());
      }
      quota.over_quota_weight = value.get<int64_t>();
    } else {
      return InvalidArgumentError(field + ": unknown field" + DidYouMean(key, kFields) +
                                  "; expected one of deserved, limit, over_quota_weight");
    }
  }
  if (quota.limit_milli != kUnlimited && quota.deserved_milli != kUnlimited &&
      quota.deserved_milli > quota.limit_milli) {
    return InvalidArgumentError(std::string(path) + ": deserved (" + body["deserved"].dump() +
                                ") exceeds limit (" + body["limit"].dump() + ")");
  }
  return quota;
}

Result<NodePoolQuota> ParseNodePoolQuota(const Json& body, std::string_view path) {
  static const std::vector<std::string> kFields = {"gpu", "cpu", "memory"};
  if (!body.is_object()) {
    return InvalidArgumentError(std::string(path) + ": expected an object with gpu, cpu, memory");
  }
  NodePoolQuota quota;
  for (const auto& [key, value] : body.items()) {
    int index = -1;
    for (int r = 0; r < kNumQuotaResources; ++r) {
      if (key == kQuotaResourceNames[r]) index = r;
    }
    if (index < 0) {
      return InvalidArgumentError(codec::FieldPath(path, key) + ": unknown resource" +
                                  DidYouMean(key, kFields) + "; expected one of gpu, cpu, memory");
    }
    ASSIGN_OR_RETURN(quota.resources[index],
                     ParseResourceQuota(value, codec::FieldPath(path, key)));
  }
  return quota;
}

Json AmountToJson(QuotaResource r, int64_t milli) {
  if (milli == kUnlimited) return -1;
  if (r != QuotaResource::kMemory && milli % 1000 == 0) return milli / 1000;
  if (r == QuotaResource::kMemory && milli % 1000 == 0 && milli / 1000 < 1024) {
    return milli / 1000;
  }
  return FormatQuotaAmount(r, milli);
}

}  // namespace

const NodePoolQuota& Queue::QuotaIn(std::string_view node_pool) const {
  static const NodePoolQuota kMissing;
  auto it = resources.find(std::string(node_pool));
  return it == resources.end() ? kMissing : it->second;
}

std::span<const std::string_view> QueueFields() {
  static constexpr std::string_view kFields[] = {"parent", "priority", "description", "resources"};
  return kFields;
}

Result<Queue> QueueFromJson(const Json& body, std::string_view name, std::string_view field_path) {
  static const std::vector<std::string> kFields = FieldsWithName(QueueFields());
  std::string base = field_path.empty() ? std::string(name) : std::string(field_path);
  RETURN_IF_ERROR(ValidateConfigName(name, base.empty() ? "name" : base));
  if (!body.is_object()) {
    return InvalidArgumentError(base + ": expected an object, got " +
                                std::string(body.type_name()));
  }
  Queue queue;
  queue.name = std::string(name);
  for (const auto& [key, value] : body.items()) {
    std::string path = codec::FieldPath(base, key);
    if (key == "name") {
      if (!value.is_string() || value.get<std::string>() != name) {
        return InvalidArgumentError(path + ": " + value.dump() +
                                    " does not match the queue name \"" + std::string(name) + "\"");
      }
    } else if (key == "parent") {
      if (value.is_null()) continue;
      if (!value.is_string()) {
        return InvalidArgumentError(path + ": expected a queue name, got " +
                                    std::string(value.type_name()));
      }
      queue.parent = value.get<std::string>();
      if (!queue.parent.empty()) RETURN_IF_ERROR(ValidateConfigName(queue.parent, path));
      if (queue.parent == queue.name) {
        return InvalidArgumentError(path + ": a queue cannot be its own parent");
      }
    } else if (key == "priority") {
      if (!value.is_number_integer()) {
        return InvalidArgumentError(path + ": expected an integer, got " + value.dump());
      }
      queue.priority = value.get<int64_t>();
    } else if (key == "description") {
      if (!value.is_string()) {
        return InvalidArgumentError(path + ": expected a string, got " +
                                    std::string(value.type_name()));
      }
      queue.description = value.get<std::string>();
    } else if (key == "resources") {
      if (!value.is_object()) {
        return InvalidArgumentError(path + ": expected an object keyed by node pool name, got " +
                                    std::string(value.type_name()));
      }
      for (const auto& [written, quota] : value.items()) {
        // `Default` (seed 003's spelling) and `default` are one node pool, stored as `default`.
        const std::string pool = CanonicalNodePoolName(written);
        if (pool != kDefaultNodePool)
          RETURN_IF_ERROR(ValidateConfigName(pool, codec::FieldPath(path, pool)));
        if (queue.resources.contains(pool)) {
          return InvalidArgumentError(codec::FieldPath(path, written) +
                                      ": the default node pool is listed twice (as \"default\" "
                                      "and \"Default\"); keep one");
        }
        ASSIGN_OR_RETURN(queue.resources[pool],
                         ParseNodePoolQuota(quota, codec::FieldPath(path, written)));
      }
    } else {
      return InvalidArgumentError(path + ": unknown field" + DidYouMean(key, kFields) +
                                  "; expected one of " + JoinFields(QueueFields()));
    }
  }
  return queue;
}

std::vector<std::string> FindParentCycle(const std::map<std::string, std::string>& parents,
                                         const std::string& name) {
  std::vector<std::string> path = {name};
  std::set<std::string> seen = {name};
  for (auto it = parents.find(name); it != parents.end() && !it->second.empty();
       it = parents.find(path.back())) {
    path.push_back(it->second);
    if (!seen.insert(it->second).second) return path;
  }
  return {};
}

Json QueueToJson(const Queue& queue) {
  Json body = Json::object();
  if (!queue.parent.empty()) body["parent"] = queue.parent;
  body["priority"] = queue.priority;
  if (!queue.description.empty()) body["description"] = queue.description;
  Json resources = Json::object();
  for (const auto& [pool, quota] : queue.resources) {
    Json entry = Json::object();
    for (int r = 0; r < kNumQuotaResources; ++r) {
      const ResourceQuota& q = quota.resources[r];
      if (q == ResourceQuota{}) continue;
      auto resource = static_cast<QuotaResource>(r);
      entry[std::string(kQuotaResourceNames[r])] =
          Json{{"deserved", AmountToJson(resource, q.deserved_milli)},
               {"limit", AmountToJson(resource, q.limit_milli)},
               {"over_quota_weight", q.over_quota_weight}};
    }
    resources[pool] = entry;
  }
  body["resources"] = resources;
  return body;
}

Result<Queue> QueueFromManifest(const Json& manifest) {
  ASSIGN_OR_RETURN(std::string name, ManifestNameForKind(manifest, "Queue"));
  if (!manifest.contains("spec")) return InvalidArgumentError("spec: required");
  return QueueFromJson(manifest["spec"], name, "spec");
}

Json QueueToManifest(const Queue& queue) {
  return MakeManifest("Queue", queue.name, QueueToJson(queue));
}

std::string FormatQuotaAmount(QuotaResource r, int64_t milli) {
  if (milli == kUnlimited) return "unlimited";
  if (r == QuotaResource::kMemory && milli % 1000 == 0) {
    int64_t bytes = milli / 1000;
    static constexpr const char* kSuffix[] = {"Ki", "Mi", "Gi", "Ti", "Pi"};
    std::string suffix;
    int64_t value = bytes;
    for (const char* s : kSuffix) {
      if (value >= 1024 && value % 1024 == 0) {
        value /= 1024;
        suffix = s;
      } else {
        break;
      }
    }
    if (!suffix.empty()) return std::to_string(value) + suffix;
    return std::to_string(bytes);
  }
  if (r == QuotaResource::kCpu && milli % 1000 != 0) return std::to_string(milli) + "m";
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  // Fractional GPUs (or memory below a byte): decimal with up to 3 digits.
  std::string frac = std::to_string(milli % 1000);
  while (frac.size() < 3) frac = "0" + frac;
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return std::to_string(milli / 1000) + "." + frac;
}

}  // namespace gpupool::model
