#include "model/node_import.h"

#include <charconv>
#include <set>
#include <string>

#include "codec/field_path.h"
#include "codec/json_reader.h"
#include "codec/source_map.h"
#include "codec/yaml_reader.h"
#include "common/safe_text.h"
#include "common/strings.h"

namespace gpupool::model {
namespace {

using codec::FieldPath;
using codec::IndexPath;
using codec::JsonSourceMap;
using codec::JsonTypeName;
using codec::ParseDocumentsWithSourceMaps;
using codec::SourcePosition;
using codec::YamlDocument;
using nlohmann::ordered_json;

constexpr int64_t kOpenbPodsPerNode = 110;

bool LooksLikeOpenbCsv(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return false;
  return StartsWith(text.substr(first), "sn,");
}

// One document of a node file, for errors at the line and column of the field they are about.
struct NodeDocument {
  std::string_view file;
  const JsonSourceMap* map;
  std::string map_path;  // "items[3]" for an item of a top-level JSON array
};

// "<file>:<line>:<column>: <context><what>" at `path` within the document (or its nearest
// enclosing field); `what` starts with the field path it names, when it names one.
Status AtPath(const NodeDocument& doc, std::string_view path, std::string_view what) {
  std::string at = doc.map_path;
  if (!path.empty()) at = at.empty() ? std::string(path) : FieldPath(at, path);
  if (!path.empty() && path.front() == '[') at = doc.map_path + std::string(path);
  const std::optional<SourcePosition> pos = doc.map->FindNearest(at);
  std::string prefix = std::string(doc.file) + ":";
  if (pos) prefix += std::to_string(pos->line) + ":" + std::to_string(pos->column) + ":";
  return InvalidArgumentError(prefix + " " + std::string(what));
}

// A NodeFromJson error ("node \"b\": metadata.labels.x: expected ...", "metadata.name: required")
// at the field it names, `item` (e.g. "items[1]") within the document.
Status NodeError(const NodeDocument& doc, std::string_view item, const Status& error) {
  std::string_view message = error.message();
  std::string_view rest = message;
  if (StartsWith(rest, "node \"")) {
    const size_t end = rest.find("\": ");
    if (end != std::string_view::npos) rest.remove_prefix(end + 3);
  }
  const size_t colon = rest.find(": ");
  std::string_view path = colon == std::string_view::npos ? "" : rest.substr(0, colon);
  if (path.find(' ') != std::string_view::npos) path = "";
  std::string full(item);
  if (!path.empty()) full = full.empty() ? std::string(path) : FieldPath(full, path);
  const std::string context = item.empty() ? "" : std::string(item) + ": ";
  return AtPath(doc, full, context + std::string(message));
}

// Adds the Nodes of one decoded document.
Status AddNodesFromDocument(const ordered_json& doc, const NodeDocument& where,
                            std::vector<Node>& nodes) {
  if (!doc.is_object()) {
    return AtPath(where, "", "expected a Node, NodeList or List object, got " + JsonTypeName(doc));
  }
  std::string kind;
  if (auto it = doc.find("kind"); it != doc.end() && it->is_string()) {
    kind = it->get<std::string>();
  }
  if (kind == "NodeList" || kind == "List") {
    auto items = doc.find("items");
    if (items == doc.end() || items->is_null()) return OkStatus();
    if (!items->is_array()) {
      return AtPath(where, "items", "items: expected a list, got " + JsonTypeName(*items));
    }
    for (size_t i = 0; i < items->size(); ++i) {
      const ordered_json& item = (*items)[i];
      const std::string item_path = IndexPath("items", i);
      std::string item_kind;
      if (item.is_object()) {
        if (auto k = item.find("kind"); k != item.end() && k->is_string()) {
          item_kind = k->get<std::string>();
        }
      }
      // A List may hold other kinds; a NodeList's items may omit their kind.
      if (kind == "List" && item_kind != "Node") continue;
      if (!item_kind.empty() && item_kind != "Node") {
        return AtPath(where, FieldPath(item_path, "kind"),
                      item_path + ": expected kind Node, got " + item_kind);
      }
      auto node = NodeFromJson(item);
      if (!node.ok()) return NodeError(where, item_path, node.status());
      nodes.push_back(std::move(node).value());
    }
    return OkStatus();
  }
  if (kind != "Node" && !kind.empty()) {
    return AtPath(where, "kind", "expected kind Node, NodeList or List, got " + kind);
  }
  if (kind.empty() && !doc.contains("metadata")) {
    return AtPath(where, "", "not a Kubernetes Node (no kind and no metadata)");
  }
  auto node = NodeFromJson(doc);
  if (!node.ok()) return NodeError(where, "", node.status());
  nodes.push_back(std::move(node).value());
  return OkStatus();
}

Result<int64_t> CsvInteger(std::string_view field, std::string_view column,
                           const std::string& where) {
  field = Trim(field);
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || ec != std::errc() || ptr != field.data() + field.size() || value < 0) {
    return InvalidArgumentError(where + "column " + std::string(column) +
                                ": expected a non-negative integer, got \"" + std::string(field) +
                                "\"");
  }
  return value;
}

// The labels, allocatable and object of a node of the openb CSV from its columns.
void FillOpenbNode(Node& node, int64_t cpu_milli, int64_t memory_mib, int64_t gpu,
                   const std::string& model) {
  node.labels["kubernetes.io/hostname"] = node.name;
  node.labels["gpupool.io/source"] = "openb";
  if (gpu > 0) {
    if (!model.empty()) node.labels["nvidia.com/gpu.product"] = "NVIDIA-" + model;
    node.labels["nvidia.com/gpu.count"] = std::to_string(gpu);
  }
  node.allocatable["cpu"] = Quantity::FromMilli(cpu_milli);
  node.allocatable["memory"] =
      Quantity::FromUnits(memory_mib * 1024 * 1024, QuantityFormat::kBinarySI);
  if (gpu > 0) node.allocatable["nvidia.com/gpu"] = Quantity::FromUnits(gpu);
  node.allocatable["pods"] = Quantity::FromUnits(kOpenbPodsPerNode);
  node.capacity = node.allocatable;
  node.raw = NodeToJson(node);
}

}  // namespace

Result<std::vector<Node>> ParseOpenbNodeCsv(std::string_view text, std::string_view file_name) {
  // The YAML and JSON readers refuse bytes that are not UTF-8; the CSV reader must too, or a node
  // name made of them reaches JSON writers that cannot encode it.
  if (auto bad = FindInvalidUtf8(text)) {
    return InvalidArgumentError(std::string(file_name) + ":" + std::to_string(bad->line) + ":" +
                                std::to_string(bad->column) + ": not valid UTF-8 (byte " +
                                bad->ByteText() + ")");
  }
  std::vector<Node> nodes;
  std::vector<std::string> lines = Split(text, '\n');
  int column_sn = -1, column_cpu = -1, column_memory = -1, column_gpu = -1, column_model = -1;
  bool have_header = false;
  std::set<std::string> seen;
  for (size_t line_index = 0; line_index < lines.size(); ++line_index) {
    std::string_view line = Trim(lines[line_index]);
    if (line.empty()) continue;
    std::string where = std::string(file_name) + ":" + std::to_string(line_index + 1) + ": ";
    std::vector<std::string> fields = Split(line, ',');
    if (!have_header) {
      for (size_t i = 0; i < fields.size(); ++i) {
        std::string name(Trim(fields[i]));
        int index = static_cast<int>(i);
        if (name == "sn") column_sn = index;
        if (name == "cpu_milli") column_cpu = index;
        if (name == "memory_mib") column_memory = index;
        if (name == "gpu") column_gpu = index;
        if (name == "model") column_model = index;
      }
      if (column_sn < 0 || column_cpu < 0 || column_memory < 0 || column_gpu < 0) {
        return InvalidArgumentError(
            where + "expected the header sn,cpu_milli,memory_mib,gpu,model, got \"" +
            std::string(line) + "\"");
      }
      have_header = true;
      continue;
    }
    int needed = std::max({column_sn, column_cpu, column_memory, column_gpu, column_model});
    if (static_cast<int>(fields.size()) <= needed) {
      // A trailing empty `model` column may be cut off entirely.
      if (!(column_model == needed && static_cast<int>(fields.size()) == needed)) {
        return InvalidArgumentError(where + "expected " + std::to_string(needed + 1) +
                                    " columns, got " + std::to_string(fields.size()));
      }
    }
    Node node;
    node.name = std::string(Trim(fields[column_sn]));
    if (node.name.empty()) return InvalidArgumentError(where + "column sn: empty node name");
    if (!seen.insert(node.name).second) {
      return InvalidArgumentError(where + "duplicate node \"" + node.name + "\"");
    }
    ASSIGN_OR_RETURN(int64_t cpu_milli, CsvInteger(fields[column_cpu], "cpu_milli", where));
    ASSIGN_OR_RETURN(int64_t memory_mib, CsvInteger(fields[column_memory], "memory_mib", where));
    ASSIGN_OR_RETURN(int64_t gpu, CsvInteger(fields[column_gpu], "gpu", where));
    std::string model;
    if (column_model >= 0 && column_model < static_cast<int>(fields.size())) {
      model = std::string(Trim(fields[column_model]));
    }
    if (memory_mib > (int64_t{1} << 42)) {
      return InvalidArgumentError(where + "column memory_mib: " + std::to_string(memory_mib) +
                                  " is too large");
    }
    FillOpenbNode(node, cpu_milli, memory_mib, gpu, model);
    nodes.push_back(std::move(node));
  }
  if (!have_header) {
    return InvalidArgumentError(
        std::string(file_name) +
        ": empty CSV (expected the header sn,cpu_milli,memory_mib,gpu,model)");
  }
  return nodes;
}

Result<std::vector<Node>> ParseNodes(std::string_view text, std::string_view file_name) {
  if (LooksLikeOpenbCsv(text)) return ParseOpenbNodeCsv(text, file_name);
  std::vector<Node> nodes;
  ASSIGN_OR_RETURN(std::vector<YamlDocument> docs, ParseDocumentsWithSourceMaps(text, file_name));
  size_t first = text.find_first_not_of(" \t\r\n");
  const bool json = first != std::string_view::npos && (text[first] == '{' || text[first] == '[');
  for (const YamlDocument& doc : docs) {
    if (json && doc.value.is_array()) {
      // A JSON array of nodes (or lists).
      for (size_t i = 0; i < doc.value.size(); ++i) {
        RETURN_IF_ERROR(AddNodesFromDocument(
            doc.value[i], NodeDocument{file_name, &doc.source_map, IndexPath("", i)}, nodes));
      }
    } else {
      RETURN_IF_ERROR(
          AddNodesFromDocument(doc.value, NodeDocument{file_name, &doc.source_map, ""}, nodes));
    }
  }
  std::set<std::string> seen;
  for (const Node& node : nodes) {
    if (!seen.insert(node.name).second) {
      return InvalidArgumentError(std::string(file_name) + ": duplicate node \"" + node.name +
                                  "\"");
    }
  }
  return nodes;
}

}  // namespace gpupool::model
