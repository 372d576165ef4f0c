#include "kube/testing/fake_patch.h"

#include <map>
#include <string>

namespace gpupool::kube::fake {
namespace {

using Json = nlohmann::ordered_json;

// patchMergeKey of the list fields a scheduler and a kubelet write (k8s.io/api core/v1 types).
const std::map<std::string, std::string, std::less<>>& MergeKeys() {
  static const std::map<std::string, std::string, std::less<>> kKeys = {
      {"conditions", "type"},
      {"containers", "name"},
      {"initContainers", "name"},
      {"containerStatuses", "name"},
      {"initContainerStatuses", "name"},
      {"ephemeralContainerStatuses", "name"},
      {"volumes", "name"},
      {"env", "name"},
      {"ports", "containerPort"},
      {"taints", "key"},
      {"ownerReferences", "uid"},
      {"addresses", "type"},
  };
  return kKeys;
}

void MergeListByKey(const Json& patch, const std::string& key, Json& target) {
  if (!target.is_array()) target = Json::array();
  for (const Json& item : patch) {
    if (!item.is_object() || !item.contains(key)) {
      target.push_back(item);
      continue;
    }
    bool merged = false;
    for (Json& existing : target) {
      if (existing.is_object() && existing.contains(key) && existing[key] == item[key]) {
        if (item.value("$patch", "") == "delete") {
          existing = nullptr;
        } else {
          StrategicMerge(item, existing);
        }
        merged = true;
        break;
      }
    }
    if (!merged && item.value("$patch", "") != "delete") target.push_back(item);
  }
  Json kept = Json::array();
  for (Json& existing : target) {
    if (!existing.is_null()) kept.push_back(std::move(existing));
  }
  target = std::move(kept);
}

}  // namespace

void StrategicMerge(const Json& patch, Json& target) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = Json::object();
  for (const auto& [field, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(field);
      continue;
    }
    auto key = MergeKeys().find(field);
    if (value.is_array() && key != MergeKeys().end()) {
      MergeListByKey(value, key->second, target[field]);
    } else if (value.is_object()) {
      StrategicMerge(value, target[field]);
    } else {
      target[field] = value;
    }
  }
}

Status ApplyPatch(std::string_view content_type, const Json& patch, Json& target) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  try {
    if (type == "application/merge-patch+json") {
      target.merge_patch(patch);
    } else if (type == "application/strategic-merge-patch+json") {
      if (!patch.is_object()) return InvalidArgumentError("a strategic merge patch is an object");
      StrategicMerge(patch, target);
    } else if (type == "application/json-patch+json") {
      target = target.patch(patch);
    } else {
      return InvalidArgumentError(
          "the body of the request was in an unknown format - accepted media types include: "
          "application/json-patch+json, application/merge-patch+json, "
          "application/strategic-merge-patch+json");
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("the patch cannot be applied: ") + e.what());
  }
  return OkStatus();
}

}  // namespace gpupool::kube::fake
