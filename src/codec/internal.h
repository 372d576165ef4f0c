#pragma once
// What the readers and writers of src/codec share: the wording of located errors, the lexical
// classes of JSON text, YAML 1.2 core-schema numbers and UTF-8 decoding. Not for use outside
// src/codec.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "codec/source_map.h"

namespace gpupool::codec::internal {

// "<file>:<line>:<column>: <what>".
std::string Located(std::string_view file_name, int line, int column, std::string_view what);
std::string Located(std::string_view file_name, SourcePosition at, std::string_view what);

bool IsSpace(char c);
// A byte of a JSON literal (number, true, false, null) or of a bare word a lexer reads as one.
bool IsLiteralChar(char c);

// "nested deeper than 512 levels of arrays and objects" (kMaxNestingDepth).
std::string TooDeepMessage();

inline constexpr std::string_view kNumberOutOfRange =
    "number out of range (larger than a 64-bit floating-point number can hold)";

// The first duplicate object key of a JSON text (its position and name), found without building
// a source map; nullopt when there is none or the text is malformed.
std::optional<std::pair<SourcePosition, std::string>> FindDuplicateKey(std::string_view text);

// YAML 1.2 core schema: whether a plain scalar reads as an integer or a float, and the integer
// it reads as (decimal, 0x hexadecimal, 0o octal; a decimal too large for 64 bits is a double).
bool MatchesCoreInt(const std::string& s);
bool MatchesCoreFloat(const std::string& s);
std::optional<nlohmann::ordered_json> CoreInteger(const std::string& s);

// The code point that starts at s[i] and its length in bytes; length 0 when the bytes there are
// not valid UTF-8 (overlong, surrogate, out of range or cut short).
std::pair<uint32_t, size_t> DecodeUtf8(std::string_view s, size_t i);

}  // namespace gpupool::codec::internal
