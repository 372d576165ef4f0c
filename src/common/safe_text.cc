#include "common/safe_text.h"

#include <cstdio>

namespace gpupool {

size_t Utf8SequenceAt(std::string_view text, size_t i, char32_t* code_point) {
  const auto byte = static_cast<unsigned char>(text[i]);
  if (byte < 0x80) {
    *code_point = byte;
    return 1;
  }
  // Lead byte: how many continuation bytes follow, and the bounds of the second byte that rule
  // out overlong forms (E0, F0), surrogates (ED) and code points above U+10FFFF (F4).
  size_t continuation = 0;
  unsigned char low = 0x80, high = 0xBF;
  char32_t value = 0;
  if (byte >= 0xC2 && byte <= 0xDF) {
    continuation = 1;
    value = byte & 0x1F;
  } else if (byte >= 0xE0 && byte <= 0xEF) {
    continuation = 2;
    value = byte & 0x0F;
    if (byte == 0xE0) low = 0xA0;
    if (byte == 0xED) high = 0x9F;
  } else if (byte >= 0xF0 && byte <= 0xF4) {
    continuation = 3;
    value = byte & 0x07;
    if (byte == 0xF0) low = 0x90;
    if (byte == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (i + continuation >= text.size()) return 0;  // truncated sequence
  for (size_t k = 1; k <= continuation; ++k) {
    const auto next = static_cast<unsigned char>(text[i + k]);
    const unsigned char lo = k == 1 ? low : 0x80, hi = k == 1 ? high : 0xBF;
    if (next < lo || next > hi) return 0;
    value = (value << 6) | (next & 0x3F);
  }
  *code_point = value;
  return continuation + 1;
}

std::string ToValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char32_t code_point = 0;
  for (size_t i = 0; i < text.size();) {
    size_t length = Utf8SequenceAt(text, i, &code_point);
    if (length == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

std::string InvalidUtf8::ByteText() const {
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned>(byte));
  return hex;
}

std::optional<InvalidUtf8> FindInvalidUtf8(std::string_view text) {
  InvalidUtf8 at;
  char32_t code_point = 0;
  for (size_t i = 0; i < text.size();) {
    size_t length = Utf8SequenceAt(text, i, &code_point);
    if (length == 0) {
      at.byte = static_cast<unsigned char>(text[i]);
      return at;
    }
    if (code_point == '\n') {
      ++at.line;
      at.column = 1;
    } else {
      ++at.column;
    }
    i += length;
  }
  return std::nullopt;
}

namespace {

// Characters that change how the text around them is shown without being visible themselves.
bool IsBidiOrSeparator(char32_t c) {
  return c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2066 && c <= 0x2069) || c == 0x2028 || c == 0x2029;
}

void AppendEscape(const char* format, unsigned value, std::string& out) {
  char escape[12];
  std::snprintf(escape, sizeof escape, format, value);
  out += escape;
}

}  // namespace

std::string TerminalSafe(std::string_view text, Newlines newlines) {
  std::string out;
  out.reserve(text.size());
  char32_t c = 0;
  for (size_t i = 0; i < text.size();) {
    size_t length = Utf8SequenceAt(text, i, &c);
    if (length == 0) {
      AppendEscape("\\x%02x", static_cast<unsigned char>(text[i]), out);
      ++i;
      continue;
    }
    if (c == '\n' && newlines == Newlines::kKeep) {
      out += '\n';
    } else if (c < 0x20 || c == 0x7F) {
      AppendEscape("\\x%02x", static_cast<unsigned>(c), out);
    } else if ((c >= 0x80 && c <= 0x9F) || IsBidiOrSeparator(c)) {
      AppendEscape("\\u%04x", static_cast<unsigned>(c), out);
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  return out;
}

}  // namespace gpupool
