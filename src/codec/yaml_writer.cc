#include "codec/yaml_writer.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "codec/internal.h"

namespace gpupool::codec {
namespace {

using internal::CoreInteger;
using internal::DecodeUtf8;
using internal::MatchesCoreFloat;
using internal::MatchesCoreInt;
using nlohmann::ordered_json;

// Code points a YAML reader refuses in a stream (DEL, C1 controls, U+FFFE, U+FFFF) or reads as a
// line break or byte-order mark (NEL, LS, PS, U+FEFF): written only as escapes in double quotes.
// C0 controls are left to the JSON escaping.
bool IsUnsafeCodePoint(uint32_t cp) {
  return cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF ||
         cp == 0xFFFE || cp == 0xFFFF;
}

// True when `s` is not valid UTF-8 or holds an unsafe code point.
bool NeedsEscapes(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    auto [cp, length] = DecodeUtf8(s, i);
    if (length == 0 || IsUnsafeCodePoint(cp)) return true;
    i += length;
  }
  return false;
}

// `quoted` (valid UTF-8, as nlohmann's dump with replacement writes it) with unsafe code points
// as \uXXXX escapes, which YAML's double-quoted style reads as JSON does.
std::string EscapeUnsafeCodePoints(const std::string& quoted) {
  std::string out;
  out.reserve(quoted.size());
  for (size_t i = 0; i < quoted.size();) {
    auto [cp, length] = DecodeUtf8(quoted, i);
    if (length == 0) length = 1;
    if (IsUnsafeCodePoint(cp)) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04X", static_cast<unsigned>(cp));
      out += escape;
    } else {
      out.append(quoted, i, length);
    }
    i += length;
  }
  return out;
}

bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  // Would read back as something other than a string (YAML 1.2 core, and 1.1 words for safety).
  static const std::unordered_set<std::string> kWords = {
      "~",     "null", "Null",  "NULL",  "true", "True", "TRUE", "false", "False",
      "FALSE", "yes",  "Yes",   "YES",   "no",   "No",   "NO",   "on",    "On",
      "ON",    "off",  "Off",   "OFF",   "y",    "Y",    "n",    "N",     ".inf",
      ".Inf",  ".INF", "-.inf", "+.inf", ".nan", ".NaN", ".NAN", "<<"};
  if (kWords.contains(s)) return true;
  if (MatchesCoreInt(s) || MatchesCoreFloat(s) || CoreInteger(s)) return true;
  // Sexagesimal/date-like values confuse YAML 1.1 readers.
  if (std::isdigit(static_cast<unsigned char>(s[0])) &&
      s.find_first_not_of("0123456789:-._ ") == std::string::npos) {
    return true;
  }
  char first = s[0];
  if (std::strchr("-?:,[]{}#&*!|>'\"%@`", first) != nullptr) {
    // "-x", "?x", ":x" are plain in YAML 1.2 but not everywhere; keep it simple and quote.
    return true;
  }
  if (s.front() == ' ' || s.back() == ' ' || s.back() == ':') return true;
  // "..." at the start of a line ends the document ("---" starts with '-', quoted above): a
  // top-level "..." written plain reads back as no value at all (found by the yaml fuzz target).
  if (s.starts_with("...")) return true;
  if (s.find(": ") != std::string::npos || s.find(" #") != std::string::npos) return true;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return true;
  }
  return NeedsEscapes(s);
}

std::string YamlString(const std::string& s) {
  if (!NeedsQuotes(s)) return s;
  std::string quoted =
      ordered_json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return NeedsEscapes(quoted) ? EscapeUnsafeCodePoints(quoted) : quoted;
}

// A multi-line string as a literal block ("|", "|-" or "|+") with content at `indent`, or
// nullopt when a block cannot represent it exactly.
std::optional<std::string> LiteralBlock(const std::string& s, int indent) {
  if (s.find('\n') == std::string::npos) return std::nullopt;
  size_t end = s.find_last_not_of('\n');
  if (end == std::string::npos) return std::nullopt;
  std::string_view body(s.data(), end + 1);
  size_t trailing = s.size() - body.size();
  if (body[0] == ' ' || body[0] == '\t') return std::nullopt;
  for (char c : body) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7f) return std::nullopt;
  }
  if (NeedsEscapes(body)) return std::nullopt;
  std::string out = trailing == 0 ? "|-" : trailing == 1 ? "|" : "|+";
  std::string pad(indent, ' ');
  size_t start = 0;
  while (start <= body.size()) {
    size_t newline = body.find('\n', start);
    std::string_view line = body.substr(
        start, newline == std::string_view::npos ? std::string_view::npos : newline - start);
    // A line that starts with spaces or is blank is fine after the first; keep it as is.
    out += "\n";
    if (!line.empty()) out += pad + std::string(line);
    if (newline == std::string_view::npos) break;
    start = newline + 1;
  }
  for (size_t i = 1; i < trailing; ++i) out += "\n";
  return out;
}

std::string YamlScalar(const ordered_json& value, int block_indent) {
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (auto block = LiteralBlock(s, block_indent)) return *block;
    return YamlString(s);
  }
  if (value.is_null()) return "null";
  if (value.is_number_float()) {
    double d = value.get<double>();
    if (std::isnan(d)) return ".nan";
    if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
  }
  return value.dump();
}

bool IsEmptyContainer(const ordered_json& value) {
  return (value.is_object() || value.is_array()) && value.empty();
}

void EmitYaml(const ordered_json& value, int indent, std::string& out);

// "key:", or "? key\n<indent>:" for a key longer than YAML lets an implicit key be (1024
// characters, on one line: libyaml refuses the mapping after it).
std::string MappingKey(const std::string& key, int indent) {
  std::string written = YamlString(key);
  if (written.size() <= 1000) return written + ":";
  return "? " + written + "\n" + std::string(indent, ' ') + ":";
}

// Emits `value` after a "key:" or "- " that is already on the current line.
void EmitAfterIndicator(const ordered_json& value, int indent, bool after_dash, std::string& out) {
  if (value.is_object() && !value.empty()) {
    if (after_dash) {
      // "- key: v" with the following keys aligned under the first.
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out += std::string(indent, ' ');
        first = false;
        out += MappingKey(key, indent);
        if ((item.is_object() || item.is_array()) && !item.empty()) {
          out += "\n";
          EmitYaml(item, indent + (item.is_array() ? 0 : 2), out);
        } else {
          out += " " +
                 (IsEmptyContainer(item) ? std::string(item.is_object() ? "{}" : "[]")
                                         : YamlScalar(item, indent + 2)) +
                 "\n";
        }
      }
      return;
    }
    out += "\n";
    EmitYaml(value, indent + 2, out);
  } else if (value.is_array() && !value.empty()) {
    if (after_dash) {
      // "- - x": nested sequence inline after the dash.
      bool first = true;
      for (const auto& item : value) {
        if (!first) out += std::string(indent, ' ');
        first = false;
        out += "- ";
        EmitAfterIndicator(item, indent + 2, true, out);
      }
      return;
    }
    out += "\n";
    // Sequences under a key are indented like kubectl does (same column as the key).
    EmitYaml(value, indent, out);
  } else if (IsEmptyContainer(value)) {
    out += value.is_object() ? "{}\n" : "[]\n";
  } else {
    out += YamlScalar(value, after_dash ? indent : indent + 2) + "\n";
  }
}

void EmitYaml(const ordered_json& value, int indent, std::string& out) {
  std::string pad(indent, ' ');
  if (value.is_object() && !value.empty()) {
    for (const auto& [key, item] : value.items()) {
      out += pad + MappingKey(key, indent);
      if ((item.is_object() || item.is_array()) && !item.empty()) {
        EmitAfterIndicator(item, indent, false, out);
      } else {
        out += " ";
        EmitAfterIndicator(item, indent, false, out);
      }
    }
  } else if (value.is_array() && !value.empty()) {
    for (const auto& item : value) {
      out += pad + "- ";
      EmitAfterIndicator(item, indent + 2, true, out);
    }
  } else {
    out += pad;
    EmitAfterIndicator(value, indent, false, out);
  }
}

}  // namespace

std::string ToYaml(const ordered_json& value) {
  std::string out;
  EmitYaml(value, 0, out);
  return out;
}

}  // namespace gpupool::codec
