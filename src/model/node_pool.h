#pragma once
// Node pools (Run:ai, seed 003): a named set of nodes chosen by one label. Nodes that belong to no
// node pool form the implicit node pool `default` (kDefaultNodePool).
//
// Config body (config kind NODE_POOL):
//   {"label_key": "node-pool", "label_value": "a100-80", "description": "...",
//    "topology_keys": ["topology.kubernetes.io/zone", "network.example.com/switch"]}
// Manifest: {apiVersion: gpupool.io/v1, kind: NodePool, metadata: {name}, spec: <body>}.
// Decoding is strict: an unknown field is an error with a did-you-mean suggestion.

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/k8s.h"

namespace gpupool::model {

inline constexpr std::string_view kDefaultNodePool = "default";

struct NodePool {
  std::string name;
  std::string label_key;
  std::string label_value;
  std::string description;
  // Node labels whose equal values mean "close" (same zone, same switch), most specific last.
  // Multi-node gangs prefer nodes sharing these values.
  std::vector<std::string> topology_keys;

  friend bool operator==(const NodePool&, const NodePool&) = default;
};

// The node pool a node is in, as the scheduler assigns it: of the node pools whose label the node
// has, the first by name; `default` when none.
std::string_view NodePoolOf(const Node& node, const std::vector<NodePool>& node_pools);

// Checks `name` against ^[a-zA-Z]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?$.
Status ValidateConfigName(std::string_view name, std::string_view field_path);

// `fields` and "name": what a decoder's unknown-field error suggests from.
std::vector<std::string> FieldsWithName(std::span<const std::string_view> fields);
// "a, b, c": the fields an unknown-field error expects.
std::string JoinFields(std::span<const std::string_view> fields);

// The fields NodePoolFromJson accepts besides "name" (a config file with one of them holds one
// body: config/kinds/file_shapes.cc).
std::span<const std::string_view> NodePoolFields();

// Decodes a NODE_POOL config body. `field_path` prefixes error messages (e.g. "node_pools.a100").
// The body may carry "name"; when it does it must equal `name`.
Result<NodePool> NodePoolFromJson(const nlohmann::ordered_json& body, std::string_view name,
                                  std::string_view field_path = "");
nlohmann::ordered_json NodePoolToJson(const NodePool& pool);

// Checks a gpupool manifest's apiVersion (gpupool.io/v1), kind, and fields (apiVersion, kind,
// metadata.{name,labels,annotations}, spec), and returns metadata.name.
Result<std::string> ManifestNameForKind(const nlohmann::ordered_json& manifest,
                                        std::string_view kind);

// `{apiVersion: gpupool.io/v1, kind, metadata: {name}, spec}`.
nlohmann::ordered_json MakeManifest(std::string_view kind, const std::string& name,
                                    nlohmann::ordered_json spec);

// Manifest form (kind NodePool).
Result<NodePool> NodePoolFromManifest(const nlohmann::ordered_json& manifest);
nlohmann::ordered_json NodePoolToManifest(const NodePool& pool);

}  // namespace gpupool::model
