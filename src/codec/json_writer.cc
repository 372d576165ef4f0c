#include "codec/json_writer.h"

#include <charconv>
#include <string_view>

#include "common/json_text.h"
#include "common/strings.h"

namespace gpupool::codec {

namespace {

using nlohmann::ordered_json;

// True when `s` goes between quotes as it is: ASCII without control characters, '"' or '\\'
// (DEL included, which JSON does not escape either).
bool IsPlainAscii(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x80 || c == '"' || c == '\\') return false;
  }
  return true;
}

void AppendQuoted(const std::string& s, std::string& out, bool* invalid_utf8) {
  if (!IsPlainAscii(s)) {
    if (invalid_utf8 != nullptr && !*invalid_utf8 && !IsValidUtf8(s)) *invalid_utf8 = true;
    out += DumpJson(ordered_json(s));  // escapes; invalid UTF-8 becomes U+FFFD
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

template <typename Integer>
void AppendInteger(Integer n, std::string& out) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), n);
  out.append(digits, end);
}

}  // namespace

void AppendCompact(const ordered_json& value, std::string& out, bool* invalid_utf8) {
  switch (value.type()) {
    case ordered_json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, member] : value.get_ref<const ordered_json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        AppendQuoted(key, out, invalid_utf8);
        out += ':';
        AppendCompact(member, out, invalid_utf8);
      }
      out += '}';
      return;
    }
    case ordered_json::value_t::array: {
      out += '[';
      bool first = true;
      for (const ordered_json& item : value.get_ref<const ordered_json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        AppendCompact(item, out, invalid_utf8);
      }
      out += ']';
      return;
    }
    case ordered_json::value_t::string:
      return AppendQuoted(value.get_ref<const std::string&>(), out, invalid_utf8);
    case ordered_json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return;
    case ordered_json::value_t::null:
      out += "null";
      return;
    case ordered_json::value_t::number_integer:
      return AppendInteger(value.get<int64_t>(), out);
    case ordered_json::value_t::number_unsigned:
      return AppendInteger(value.get<uint64_t>(), out);
    default:  // floats (nlohmann's shortest round-trip form), binary, discarded
      out += DumpJson(value);
      return;
  }
}

std::string DumpCompact(const ordered_json& value, bool* invalid_utf8) {
  std::string out;
  AppendCompact(value, out, invalid_utf8);
  return out;
}

}  // namespace gpupool::codec
