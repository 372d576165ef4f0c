#pragma once
// Source-located parsing of JSON and YAML into nlohmann::ordered_json. Every error is a Status
// (InvalidArgument for bad input, NotFound/Internal for files) whose message starts with
// "<file>:<line>:<column>: " (1-based, columns count characters as a human does).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace gpupool::model {

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

  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    SourcePosition position;
    std::vector<std::pair<std::string, int>> members;  // objects: key -> entry index
    std::vector<int> items;                            // arrays: entry indexes
  };
  friend class JsonSourceMapBuilder;
  friend class YamlSourceMapBuilder;
  std::vector<Entry> entries_;  // entries_[0] is the root
};

// Parses one JSON document. On malformed input the position points at the offending token,
// e.g. "a100_pod_template.json:14:9: syntax error while parsing array - unexpected '}'; expected
// ']'". Duplicate object keys are rejected too ("f.json:3:5: duplicate key \"name\"").
Result<nlohmann::ordered_json> ParseJson(std::string_view text, std::string_view file_name);

// Whole file contents. NotFound when it does not exist, Internal on read errors.
Result<std::string> ReadFile(const std::string& path);

struct YamlDocument {
  nlohmann::ordered_json value;
  int line = 0;  // 1-based line where the document starts
  // Positions of the document's values (keys of mapping members, items of sequences), for
  // errors found after parsing: `doc.source_map.Prefix(file, "workflow.tasks[0].image")`.
  JsonSourceMap source_map;
};

// Parses every document of a (multi-document) YAML stream. Scalars are typed as YAML 1.2 core
// schema does: unquoted ints/floats/true/false/null become JSON numbers/bools/null; quoted
// scalars stay strings; keys are always strings; key order is preserved. Empty documents are
// skipped. Anchors/aliases are resolved. Errors: "<file>:<line>:<column>: <what>".
Result<std::vector<YamlDocument>> ParseYamlDocuments(std::string_view text,
                                                     std::string_view file_name);

// JSON when the first non-blank character is `{` or `[` (so JSON errors get JSON positions;
// a top-level array is one document, not unpacked), YAML otherwise.
Result<std::vector<nlohmann::ordered_json>> ParseJsonOrYamlDocuments(std::string_view text,
                                                                     std::string_view file_name);

// Block-style YAML for `-o yaml`. Strings that YAML would read as something else (numbers,
// bools, null, empty, leading/trailing spaces, special characters) are double-quoted. Ends with
// a newline. Empty objects/arrays print as `{}` / `[]`.
std::string ToYaml(const nlohmann::ordered_json& value);

// DumpJson(value) (common/json_text.h), byte for byte, in a fraction of its time for the usual
// documents. nlohmann's serializer decodes every string byte by byte as UTF-8; most strings here
// (names, images, labels, quantities) are plain ASCII, which is copied as it is. Strings that need
// escapes or hold other bytes, and floats, still go through DumpJson, so the output stays the
// same and nothing throws: bytes that are not UTF-8 become U+FFFD. `*invalid_utf8`, when given,
// is set if some string or key was not UTF-8 (the store refuses such a body rather than alter it).
std::string DumpCompact(const nlohmann::ordered_json& value, bool* invalid_utf8 = nullptr);
// Appends DumpCompact(value) to `out`.
void AppendCompact(const nlohmann::ordered_json& value, std::string& out,
                   bool* invalid_utf8 = nullptr);

// Field-path helpers: FieldPath("spec", "containers") -> "spec.containers";
// FieldPath("", "spec") -> "spec"; IndexPath("spec.containers", 0) -> "spec.containers[0]".
std::string FieldPath(std::string_view parent, std::string_view field);
std::string IndexPath(std::string_view parent, size_t index);

// JSON type name for messages: "object", "array", "string", "number", "boolean", "null".
std::string JsonTypeName(const nlohmann::ordered_json& value);

}  // namespace gpupool::model
