#pragma once
// Where the values of a parsed JSON or YAML text are, for errors found after parsing. Positions
// are 1-based lines and columns (columns count characters as a human does).

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpupool::codec {

// 1-based line/column of byte `offset` in `text` (columns count UTF-8 characters).
struct SourcePosition {
  int line = 1;
  int column = 1;
};
SourcePosition PositionOfOffset(std::string_view text, size_t offset);

// Where each value of a JSON (or YAML) text is, for errors found after parsing ("pool.json:12:9:
// platforms.a100.override_pod_template[0]: unknown template"). Positions point at the member's
// key for object members, and at the value itself for array items and the root.
class JsonSourceMap {
 public:
  JsonSourceMap() = default;

  // Builds the map of a JSON text. Malformed text yields a map that finds nothing (parse with
  // ParseJson first to get the error).
  static JsonSourceMap Build(std::string_view text);

  // By JSON pointer: "" is the root, "/platforms/a100/override_pod_template/0".
  std::optional<SourcePosition> Find(std::string_view json_pointer) const;

  // By field path as FieldPath/IndexPath build it: "platforms.a100.override_pod_template[0]".
  // Keys that contain dots ("nvidia.com/gpu.product") are matched against the keys present,
  // longest first.
  std::optional<SourcePosition> FindFieldPath(std::string_view field_path) const;

  // "<file>:<line>:<column>: " for `field_path`, or "<file>: " when it is not found.
  std::string Prefix(std::string_view file_name, std::string_view field_path) const;

  // FindFieldPath of `field_path`, else of its nearest enclosing field the map knows (a missing
  // field is reported where its object is), else the root; nullopt only for an empty map.
  std::optional<SourcePosition> FindNearest(std::string_view field_path) const;

  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    SourcePosition position;
    std::vector<std::pair<std::string, int>> members;  // objects: key -> entry index
    std::vector<int> items;                            // arrays: entry indexes
  };
  friend class JsonSourceMapBuilder;  // source_map.cc
  friend class YamlSourceMapBuilder;  // yaml_reader.cc
  std::vector<Entry> entries_;        // entries_[0] is the root
};

}  // namespace gpupool::codec
