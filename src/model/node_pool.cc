#include "model/node_pool.h"

#include <regex>

#include "codec/field_path.h"
#include "common/strings.h"
#include "model/quota_tree.h"

namespace gpupool::model {
namespace {

using Json = nlohmann::ordered_json;

Status ExpectString(const Json& value, std::string_view path) {
  if (!value.is_string()) {
    return InvalidArgumentError(std::string(path) + ": expected a string, got " +
                                std::string(value.type_name()));
  }
  return OkStatus();
}

}  // namespace

std::string_view NodePoolOf(const Node& node, const std::vector<NodePool>& node_pools) {
  const NodePool* found = nullptr;
  for (const NodePool& pool : node_pools) {
    if (found != nullptr && found->name <= pool.name) continue;
    auto it = node.labels.find(pool.label_key);
    if (it != node.labels.end() && it->second == pool.label_value) found = &pool;
  }
  return found != nullptr ? std::string_view(found->name) : kDefaultNodePool;
}

Status ValidateConfigName(std::string_view name, std::string_view field_path) {
  static const std::regex kNamePattern("^[a-zA-Z]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?$");
  if (!std::regex_match(name.begin(), name.end(), kNamePattern)) {
    return InvalidArgumentError(std::string(field_path) + ": invalid name \"" + std::string(name) +
                                "\": expected a letter, then letters, digits, '_', '.' or '-', "
                                "ending in a letter or digit");
  }
  return OkStatus();
}

std::vector<std::string> FieldsWithName(std::span<const std::string_view> fields) {
  std::vector<std::string> out = {"name"};
  out.insert(out.end(), fields.begin(), fields.end());
  return out;
}

std::string JoinFields(std::span<const std::string_view> fields) {
  return Join(std::vector<std::string>(fields.begin(), fields.end()), ", ");
}

std::span<const std::string_view> NodePoolFields() {
  static constexpr std::string_view kFields[] = {"label_key", "label_value", "description",
                                                 "topology_keys"};
  return kFields;
}

Result<NodePool> NodePoolFromJson(const Json& body, std::string_view name,
                                  std::string_view field_path) {
  static const std::vector<std::string> kFields = FieldsWithName(NodePoolFields());
  std::string base = field_path.empty() ? std::string(name) : std::string(field_path);
  RETURN_IF_ERROR(ValidateConfigName(name, base.empty() ? "name" : base));
  if (!body.is_object()) {
    return InvalidArgumentError(base + ": expected an object, got " +
                                std::string(body.type_name()));
  }
  NodePool pool;
  pool.name = std::string(name);
  for (const auto& [key, value] : body.items()) {
    std::string path = codec::FieldPath(base, key);
    if (key == "name") {
      RETURN_IF_ERROR(ExpectString(value, path));
      if (value.get<std::string>() != name) {
        return InvalidArgumentError(path + ": \"" + value.get<std::string>() +
                                    "\" does not match the node pool name \"" + std::string(name) +
                                    "\"");
      }
    } else if (key == "label_key") {
      RETURN_IF_ERROR(ExpectString(value, path));
      pool.label_key = value.get<std::string>();
    } else if (key == "label_value") {
      RETURN_IF_ERROR(ExpectString(value, path));
      pool.label_value = value.get<std::string>();
    } else if (key == "description") {
      RETURN_IF_ERROR(ExpectString(value, path));
      pool.description = value.get<std::string>();
    } else if (key == "topology_keys") {
      if (!value.is_array()) {
        return InvalidArgumentError(path + ": expected a list of label keys, got " +
                                    std::string(value.type_name()));
      }
      for (size_t i = 0; i < value.size(); ++i) {
        RETURN_IF_ERROR(ExpectString(value[i], path + "[" + std::to_string(i) + "]"));
        pool.topology_keys.push_back(value[i].get<std::string>());
      }
    } else {
      return InvalidArgumentError(path + ": unknown field" + DidYouMean(key, kFields) +
                                  "; expected one of " + JoinFields(NodePoolFields()));
    }
  }
  if (pool.label_key.empty()) {
    return InvalidArgumentError(codec::FieldPath(base, "label_key") +
                                ": required (the node label that "
                                "selects the node pool's nodes)");
  }
  if (pool.label_value.empty()) {
    return InvalidArgumentError(codec::FieldPath(base, "label_value") + ": required");
  }
  if (IsDefaultNodePoolName(pool.name)) {
    return InvalidArgumentError(
        base + ": \"" + pool.name +
        "\" is reserved for the nodes in no node pool (the default node pool)");
  }
  return pool;
}

Json NodePoolToJson(const NodePool& pool) {
  Json body = Json::object();
  body["label_key"] = pool.label_key;
  body["label_value"] = pool.label_value;
  if (!pool.description.empty()) body["description"] = pool.description;
  if (!pool.topology_keys.empty()) body["topology_keys"] = pool.topology_keys;
  return body;
}

namespace {

// Checks apiVersion/kind/metadata of a manifest and returns its name.
Result<std::string> ManifestName(const Json& manifest, std::string_view kind) {
  static const std::vector<std::string> kFields = {"apiVersion", "kind", "metadata", "spec"};
  if (!manifest.is_object()) return InvalidArgumentError("manifest: expected an object");
  for (const auto& [key, value] : manifest.items()) {
    if (std::find(kFields.begin(), kFields.end(), key) == kFields.end()) {
      return InvalidArgumentError(key + ": unknown field" + DidYouMean(key, kFields));
    }
  }
  if (!manifest.contains("apiVersion") || manifest["apiVersion"] != "gpupool.io/v1") {
    return InvalidArgumentError("apiVersion: expected \"gpupool.io/v1\"");
  }
  if (!manifest.contains("kind") || manifest["kind"] != kind) {
    return InvalidArgumentError("kind: expected \"" + std::string(kind) + "\"");
  }
  if (!manifest.contains("metadata") || !manifest["metadata"].is_object() ||
      !manifest["metadata"].contains("name") || !manifest["metadata"]["name"].is_string()) {
    return InvalidArgumentError("metadata.name: required string");
  }
  for (const auto& [key, value] : manifest["metadata"].items()) {
    static const std::vector<std::string> kMeta = {"name", "labels", "annotations"};
    if (std::find(kMeta.begin(), kMeta.end(), key) == kMeta.end()) {
      return InvalidArgumentError("metadata." + key + ": unknown field" + DidYouMean(key, kMeta));
    }
  }
  return manifest["metadata"]["name"].get<std::string>();
}

}  // namespace

Result<NodePool> NodePoolFromManifest(const Json& manifest) {
  ASSIGN_OR_RETURN(std::string name, ManifestName(manifest, "NodePool"));
  if (!manifest.contains("spec")) return InvalidArgumentError("spec: required");
  return NodePoolFromJson(manifest["spec"], name, "spec");
}

Json NodePoolToManifest(const NodePool& pool) {
  return MakeManifest("NodePool", pool.name, NodePoolToJson(pool));
}

Json MakeManifest(std::string_view kind, const std::string& name, Json spec) {
  Json manifest = Json::object();
  manifest["apiVersion"] = "gpupool.io/v1";
  manifest["kind"] = kind;
  manifest["metadata"] = Json{{"name", name}};
  manifest["spec"] = std::move(spec);
  return manifest;
}

// Shared with queue.cc.
Result<std::string> ManifestNameForKind(const Json& manifest, std::string_view kind) {
  return ManifestName(manifest, kind);
}

}  // namespace gpupool::model
