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

#include "common/limits.h"
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
  friend class JsonSourceMapBuilder;
  friend class YamlSourceMapBuilder;
  std::vector<Entry> entries_;  // entries_[0] is the root
};

// Parses one JSON document. On malformed input the position points at the offending token,
// e.g. "a100_pod_template.json:14:9: syntax error while parsing array - unexpected '}'; expected
// ']'". Duplicate object keys are rejected too ("f.json:3:5: duplicate key \"name\""), and so
// are arrays and objects nested deeper than kMaxNestingDepth (common/limits.h; at the first one
// too deep: "f.json:1:513: nested deeper than 512 levels of arrays and objects") and numbers no
// double holds ("f.json:2:8: number out of range ..." for 1e400).
Result<nlohmann::ordered_json> ParseJson(std::string_view text, std::string_view file_name);

// The environment variable that sets the input limit for files (MaxInputBytes).
inline constexpr char kMaxInputBytesVariable[] = "GPUPOOL_MAX_INPUT_BYTES";

// The largest file ReadFile reads: $GPUPOOL_MAX_INPUT_BYTES (bytes, or a quantity such as 64Mi)
// when set, else kDefaultMaxInputBytes (common/limits.h). InvalidArgument when it is not a
// positive whole number of bytes.
Result<size_t> MaxInputBytes();

// Whole file contents, at most MaxInputBytes() of them (InvalidArgument naming the file, its
// size and the limit otherwise: "big.json: the file is 200 MiB (209715200 bytes), over the input
// limit of 8 MiB (8388608 bytes) ..."). NotFound when it does not exist, Internal on read errors.
Result<std::string> ReadFile(const std::string& path);
// The same with an explicit limit.
Result<std::string> ReadFile(const std::string& path, size_t max_bytes);

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
// skipped. Anchors/aliases are resolved. Errors: "<file>:<line>:<column>: <what>"; among them
// sequences and mappings nested deeper than kMaxNestingDepth (also through aliases) and plain
// numbers no double holds (1e400), as ParseJson words them.
Result<std::vector<YamlDocument>> ParseYamlDocuments(std::string_view text,
                                                     std::string_view file_name);

// JSON when the first non-blank character is `{` or `[` (so JSON errors get JSON positions;
// a top-level array is one document, not unpacked), YAML otherwise.
Result<std::vector<nlohmann::ordered_json>> ParseJsonOrYamlDocuments(std::string_view text,
                                                                     std::string_view file_name);

// ParseJsonOrYamlDocuments with each document's line and source map (for errors found after
// parsing): a JSON text is one document mapped by JsonSourceMap::Build, a YAML stream's documents
// are mapped as ParseYamlDocuments maps them.
Result<std::vector<YamlDocument>> ParseDocumentsWithSourceMaps(std::string_view text,
                                                               std::string_view file_name);

// Refuses a text that no YAML (or JSON) reader accepts whatever its structure: invalid UTF-8, or
// a character YAML does not allow in a stream (C0 and C1 controls other than tab, line feed,
// carriage return and NEL; U+FFFE, U+FFFF), at its line and column: "w.yaml:1:1: not a valid
// YAML text: invalid UTF-8 (byte 0xFF)". For texts that are processed before they are parsed
// (workflow templating), so that binary garbage is reported as what it is.
Status CheckYamlText(std::string_view text, std::string_view file_name);

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

// How deeply arrays and objects nest in `value`: 0 for a scalar, 1 for `[]` or `[1]`, 2 for
// `[[1]]`. Walks the tree without recursion, so any tree may be measured; stops counting past
// `stop_after`, returning `stop_after + 1` for anything deeper.
int NestingDepth(const nlohmann::ordered_json& value, int stop_after = kMaxNestingDepth);

// Refuses `value` (a config body, a merge patch: anything about to be stored or walked
// recursively) when it nests arrays and objects deeper than kMaxNestingDepth, naming the member
// or item that does: "spec: nested deeper than 512 levels of arrays and objects".
Status CheckNestingDepth(const nlohmann::ordered_json& value);

// JSON type name for messages: "object", "array", "string", "number", "boolean", "null".
std::string JsonTypeName(const nlohmann::ordered_json& value);

}  // namespace gpupool::model
