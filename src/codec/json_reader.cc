#include "codec/json_reader.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include "codec/field_path.h"
#include "codec/internal.h"
#include "codec/source_map.h"
#include "common/strings.h"

namespace gpupool::codec {
namespace {

using internal::FindDuplicateKey;
using internal::IsLiteralChar;
using internal::IsSpace;
using internal::kNumberOutOfRange;
using internal::Located;
using internal::TooDeepMessage;
using nlohmann::ordered_json;

bool IsStructural(char c) {
  return c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':';
}

// nlohmann's message without its "[json.exception...] parse error at line L, column C: " prefix
// and the confusing "last read" excerpt.
std::string CleanJsonMessage(std::string what) {
  size_t at = what.find("parse error");
  if (at != std::string::npos) {
    size_t colon = what.find(": ", at);
    if (colon != std::string::npos) what = what.substr(colon + 2);
  }
  size_t last_read = what.find("; last read: ");
  if (last_read != std::string::npos) {
    // "...; last read: '<text>'; expected <token>" or "...; last read: '<text>'". The text is
    // the input's, so it may hold "'; " itself (and the lexer cuts it in the middle of a UTF-8
    // character): the expected token is found from the end, among the names nlohmann gives.
    static constexpr std::string_view kExpected[] = {"string literal",
                                                     "number literal",
                                                     "true literal",
                                                     "false literal",
                                                     "null literal",
                                                     "'['",
                                                     "'{'",
                                                     "']'",
                                                     "'}'",
                                                     "':'",
                                                     "','",
                                                     "end of input",
                                                     "'[', '{', or a literal"};
    std::string tail;
    for (std::string_view token : kExpected) {
      std::string candidate = "; expected " + std::string(token);
      if (EndsWith(what, candidate) && what.size() - candidate.size() > last_read) {
        tail = std::move(candidate);
        break;
      }
    }
    what = what.substr(0, last_read) + tail;
  }
  return what;
}

// The byte offset where the offending token starts, from nlohmann's 1-based "last read" byte.
// `literal`: the token is a literal (number, true, false, null) that may end one byte earlier.
size_t OffendingOffset(std::string_view text, size_t byte, const std::string& message,
                       bool literal) {
  if (byte == 0) return 0;
  size_t offset = byte - 1;
  if (offset >= text.size()) return text.size();
  literal = literal || message.find("invalid literal") != std::string::npos ||
            message.find("number literal") != std::string::npos ||
            message.find("'true' literal") != std::string::npos ||
            message.find("'false' literal") != std::string::npos ||
            message.find("'null' literal") != std::string::npos;
  bool string_literal = message.find("unexpected string literal") != std::string::npos;
  if (literal) {
    // The lexer may have read one character past the literal.
    if ((IsStructural(text[offset]) || IsSpace(text[offset])) && offset > 0 &&
        IsLiteralChar(text[offset - 1])) {
      --offset;
    }
    while (offset > 0 && IsLiteralChar(text[offset - 1])) --offset;
  } else if (string_literal && text[offset] == '"') {
    // Walk back to the opening quote (skipping escaped quotes).
    size_t i = offset;
    while (i > 0) {
      --i;
      if (text[i] == '"') {
        size_t backslashes = 0;
        while (i >= backslashes + 1 && text[i - backslashes - 1] == '\\') ++backslashes;
        if (backslashes % 2 == 0) {
          offset = i;
          break;
        }
      }
    }
  }
  return offset;
}

// The byte offset of the `n`th (1-based) `{` or `[` of a JSON text, strings skipped: where the
// nlohmann parser had read that many object and array starts.
size_t OffsetOfOpener(std::string_view text, int64_t n) {
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if ((c == '{' || c == '[') && --n == 0) {
      return i;
    }
  }
  return text.size();
}

// nlohmann's DOM builder with a bound on nesting (kMaxNestingDepth) and the first error kept
// rather than thrown: parsing an array of 100,000 `[` stops at the 513th.
class BoundedDomParser : public nlohmann::detail::json_sax_dom_parser<ordered_json> {
  using Base = nlohmann::detail::json_sax_dom_parser<ordered_json>;

 public:
  explicit BoundedDomParser(ordered_json& root) : Base(root, /*allow_exceptions_=*/false) {}

  bool start_object(std::size_t size) { return Enter() && Base::start_object(size); }
  bool start_array(std::size_t size) { return Enter() && Base::start_array(size); }
  bool end_object() {
    --depth_;
    return Base::end_object();
  }
  bool end_array() {
    --depth_;
    return Base::end_array();
  }

  template <class Exception>
  bool parse_error(std::size_t byte, const std::string& /*last_token*/, const Exception& error) {
    error_byte = byte;
    error_message = error.what();
    number_out_of_range = error.id == 406;  // out_of_range.406: a number overflows a double
    return false;
  }

  // The object or array start (1-based, counting all of them so far) that was one level too deep;
  // 0 when none was.
  int64_t too_deep_opener = 0;
  std::optional<size_t> error_byte;
  std::string error_message;
  bool number_out_of_range = false;

 private:
  bool Enter() {
    ++openers_;
    if (++depth_ > kMaxNestingDepth) {
      too_deep_opener = openers_;
      return false;
    }
    return true;
  }

  int depth_ = 0;
  int64_t openers_ = 0;
};

}  // namespace

Result<ordered_json> ParseJson(std::string_view text, std::string_view file_name) {
  // nlohmann's lexer reads a NUL byte as the end of the input (for C strings): what follows one
  // would be ignored. A NUL inside a string is refused as a control character; outside, here.
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return InvalidArgumentError(
        Located(file_name, PositionOfOffset(text, nul), "a NUL byte, which JSON text cannot hold"));
  }
  ordered_json value;
  BoundedDomParser parser(value);
  try {
    ordered_json::sax_parse(text.begin(), text.end(), &parser);
  } catch (const std::exception& e) {  // out of memory
    return InternalError(std::string(file_name) + ": " + e.what());
  }
  if (parser.too_deep_opener > 0) {
    SourcePosition pos = PositionOfOffset(text, OffsetOfOpener(text, parser.too_deep_opener));
    return InvalidArgumentError(Located(file_name, pos, TooDeepMessage()));
  }
  if (parser.error_byte) {
    std::string message = parser.number_out_of_range ? std::string(kNumberOutOfRange)
                                                     : CleanJsonMessage(parser.error_message);
    size_t offset = OffendingOffset(text, *parser.error_byte, message, parser.number_out_of_range);
    return InvalidArgumentError(Located(file_name, PositionOfOffset(text, offset), message));
  }
  // nlohmann keeps the last of duplicate keys silently; configs must not.
  if (auto duplicate = FindDuplicateKey(text)) {
    return InvalidArgumentError(
        Located(file_name, duplicate->first, "duplicate key \"" + duplicate->second + "\""));
  }
  return value;
}

int NestingDepth(const ordered_json& value, int stop_after) {
  std::vector<std::pair<const ordered_json*, int>> pending = {{&value, 0}};
  int deepest = 0;
  while (!pending.empty()) {
    auto [node, above] = pending.back();
    pending.pop_back();
    if (!node->is_structured()) continue;
    const int depth = above + 1;
    if (depth > stop_after) return stop_after + 1;
    deepest = std::max(deepest, depth);
    if (node->is_object()) {
      for (const auto& [key, member] : node->get_ref<const ordered_json::object_t&>()) {
        pending.emplace_back(&member, depth);
      }
    } else {
      for (const ordered_json& item : node->get_ref<const ordered_json::array_t&>()) {
        pending.emplace_back(&item, depth);
      }
    }
  }
  return deepest;
}

Status CheckNestingDepth(const ordered_json& value) {
  if (NestingDepth(value) <= kMaxNestingDepth) return OkStatus();
  // The member (or item) that goes too deep, for the message: its own depth counts one level
  // less than its parent's.
  std::string field = "(top level)";
  if (value.is_object()) {
    for (const auto& [key, member] : value.get_ref<const ordered_json::object_t&>()) {
      if (NestingDepth(member, kMaxNestingDepth - 1) >= kMaxNestingDepth) {
        field = key;
        break;
      }
    }
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      if (NestingDepth(value[i], kMaxNestingDepth - 1) >= kMaxNestingDepth) {
        field = IndexPath("", i);
        break;
      }
    }
  }
  return InvalidArgumentError(field + ": " + TooDeepMessage());
}

std::string JsonTypeName(const ordered_json& value) {
  switch (value.type()) {
    case ordered_json::value_t::object:
      return "object";
    case ordered_json::value_t::array:
      return "array";
    case ordered_json::value_t::string:
      return "string";
    case ordered_json::value_t::boolean:
      return "boolean";
    case ordered_json::value_t::null:
      return "null";
    case ordered_json::value_t::number_integer:
    case ordered_json::value_t::number_unsigned:
    case ordered_json::value_t::number_float:
      return "number";
    default:
      return "value";
  }
}

}  // namespace gpupool::codec
