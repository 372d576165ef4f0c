#pragma once
// Source-located parsing of YAML streams (and of texts that may be JSON or YAML) into
// nlohmann::ordered_json, with the position of every value. Every error is a Status
// (InvalidArgument for bad input) whose message starts with "<file>:<line>:<column>: " (1-based,
// columns count characters as a human does).

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "codec/source_map.h"
#include "common/status.h"

namespace gpupool::codec {

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

}  // namespace gpupool::codec
