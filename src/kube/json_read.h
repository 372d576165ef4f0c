#pragma once
// ReadJson: the tree `nlohmann::ordered_json::parse(text, nullptr, false)` gives, made in about
// half its CPU. gpupool's Kubernetes client parses two watch events of every pod it schedules
// (pending, then bound); nlohmann's lexer copies each character into a token buffer and a
// diagnostic buffer, which was most of a parse. This reader scans strings and numbers in place
// and builds the same tree, for the JSON an API server writes (ASCII strings, integers).
// Anything else — a string with an escape other than the simple ones or a byte above 0x7f, a
// number with a fraction or an exponent or of more than 18 digits, nesting deeper than 256, or
// text that is not JSON — is handed to nlohmann's parser whole, so the answer is always its
// answer (a discarded value for text that is not JSON).

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace gpupool::kube {

nlohmann::ordered_json ReadJson(std::string_view text);

// Lenient reads of the objects an API server sends, where a field may be absent: the member
// `key` of `object` (null when absent or when `object` is not an object), the member at `path`
// (null when a step is missing or not an object; looked up directly, as a JSON pointer would be
// parsed from its text at each call on every watch event), and a string's text ("" otherwise).
const nlohmann::ordered_json& At(const nlohmann::ordered_json& object, const char* key);
const nlohmann::ordered_json& At(const nlohmann::ordered_json& object,
                                 std::initializer_list<const char*> path);
std::string Text(const nlohmann::ordered_json& value);

}  // namespace gpupool::kube
