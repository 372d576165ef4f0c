#pragma once
// Source-located parsing of JSON text into nlohmann::ordered_json, and the bounds every parsed
// document is checked against. Every error is a Status (InvalidArgument for bad input) whose
// message starts with "<file>:<line>:<column>: " (1-based, columns count characters as a human
// does).

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/limits.h"
#include "common/status.h"

namespace gpupool::codec {

// Parses one JSON document. On malformed input the position points at the offending token,
// e.g. "a100_pod_template.json:14:9: syntax error while parsing array - unexpected '}'; expected
// ']'". Duplicate object keys are rejected too ("f.json:3:5: duplicate key \"name\""), and so
// are arrays and objects nested deeper than kMaxNestingDepth (common/limits.h; at the first one
// too deep: "f.json:1:513: nested deeper than 512 levels of arrays and objects") and numbers no
// double holds ("f.json:2:8: number out of range ..." for 1e400).
Result<nlohmann::ordered_json> ParseJson(std::string_view text, std::string_view file_name);

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

}  // namespace gpupool::codec
