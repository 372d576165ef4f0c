#pragma once
// Private helpers of the config codecs: strict reading of JSON objects with field paths.
// Messages: "<path>: expected a string, got number 3" and
// "unknown field <path>.<key> (did you mean \"x\"?)".

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpupool::config::internal {

using Json = nlohmann::ordered_json;

// DumpJson(value) (common/json_text.h): never throws; invalid UTF-8 is replaced.
std::string Dump(const Json& value);

// "object", "array", "string", "number", "boolean", "null".
std::string TypeName(const Json& value);
// `got string "abc"` / `got number 3` / `got object`.
std::string Got(const Json& value);

Status TypeError(std::string_view path, std::string_view expected, const Json& value);

// `value` must be an object (else TypeError "an object") with keys among `known`.
Status CheckObject(const Json& value, std::string_view path,
                   std::initializer_list<std::string_view> known);
Status CheckKeys(const Json& value, std::string_view path, const std::vector<std::string>& known);
// A kind's body (path "") must be an object with keys among "name" and `fields`.
Status CheckBodyFields(const Json& body, std::span<const std::string_view> fields);

// Readers: absent key leaves *out unchanged. Wrong type -> TypeError.
Status ReadString(const Json& obj, std::string_view key, std::string_view path, std::string* out);
Status ReadBool(const Json& obj, std::string_view key, std::string_view path, bool* out);
Status ReadInt(const Json& obj, std::string_view key, std::string_view path, int64_t* out);
Status ReadStringList(const Json& obj, std::string_view key, std::string_view path,
                      std::vector<std::string>* out);
// Absent or null -> nullopt.
Status ReadOptString(const Json& obj, std::string_view key, std::string_view path,
                     std::optional<std::string>* out);

// Sets obj[key] = value keeping the key's position, unless the key is absent from obj and
// `is_default` (then nothing is added).
void WriteField(Json& obj, std::string_view key, Json value, bool is_default);

}  // namespace gpupool::config::internal
