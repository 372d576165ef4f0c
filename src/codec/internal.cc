#include "codec/internal.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "common/limits.h"

namespace gpupool::codec::internal {

using nlohmann::ordered_json;

std::string Located(std::string_view file_name, int line, int column, std::string_view what) {
  return std::string(file_name) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
         std::string(what);
}

std::string Located(std::string_view file_name, SourcePosition at, std::string_view what) {
  return Located(file_name, at.line, at.column, what);
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool IsLiteralChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '+' ||
         c == '-' || c == '.' || static_cast<unsigned char>(c) >= 0x80;
}

std::string TooDeepMessage() {
  return "nested deeper than " + std::to_string(kMaxNestingDepth) + " levels of arrays and objects";
}

bool MatchesCoreInt(const std::string& s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

bool MatchesCoreFloat(const std::string& s) {
  // [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t int_digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++int_digits;
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

std::optional<ordered_json> CoreInteger(const std::string& s) {
  if (MatchesCoreInt(s)) {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0 && end == s.c_str() + s.size()) return ordered_json(static_cast<int64_t>(v));
    if (s[0] != '-') {
      errno = 0;
      unsigned long long u = std::strtoull(s.c_str(), &end, 10);
      if (errno == 0) return ordered_json(static_cast<uint64_t>(u));
    }
    return ordered_json(std::strtod(s.c_str(), nullptr));
  }
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    int base = s[1] == 'x' ? 16 : 8;
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str() + 2, &end, base);
    if (errno == 0 && end == s.c_str() + s.size() && v >= 0) {
      return ordered_json(static_cast<int64_t>(v));
    }
  }
  return std::nullopt;
}

std::pair<uint32_t, size_t> DecodeUtf8(std::string_view s, size_t i) {
  unsigned char lead = static_cast<unsigned char>(s[i]);
  if (lead < 0x80) return {lead, 1};
  size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
  if (length == 0 || lead > 0xF4 || i + length > s.size()) return {0, 0};
  uint32_t cp = lead & (0x3F >> (length - 1));
  for (size_t k = 1; k < length; ++k) {
    unsigned char c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return {0, 0};
    cp = (cp << 6) | (c & 0x3F);
  }
  static constexpr uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinimum[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 0};
  return {cp, length};
}

}  // namespace gpupool::codec::internal
