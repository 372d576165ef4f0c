#include "server/path.h"

namespace gpupool::server {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<std::string> NormalizePath(std::string_view target) {
  std::string_view raw = target.substr(0, target.find_first_of("?#"));
  std::string decoded;
  decoded.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '%') {
      int hi = i + 2 < raw.size() ? HexValue(raw[i + 1]) : -1;
      int lo = hi >= 0 ? HexValue(raw[i + 2]) : -1;
      if (lo < 0) return InvalidArgumentError("request path has a malformed percent-escape");
      decoded.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      decoded.push_back(raw[i]);
    }
  }
  for (char c : decoded) {
    auto u = static_cast<unsigned char>(c);
    if (c == '%') return InvalidArgumentError("request path is percent-encoded twice");
    if (c == '\\') return InvalidArgumentError("request path contains a backslash");
    if (u < 0x20 || u == 0x7f)
      return InvalidArgumentError("request path contains control characters");
  }
  if (decoded.empty() || decoded[0] != '/')
    return InvalidArgumentError("request path must start with /");
  std::vector<std::string_view> stack;
  std::string_view view = decoded;
  size_t pos = 0;
  while (pos <= view.size()) {
    size_t next = view.find('/', pos);
    if (next == std::string_view::npos) next = view.size();
    std::string_view segment = view.substr(pos, next - pos);
    if (segment.empty() || segment == ".") {
      // skip
    } else if (segment == "..") {
      if (stack.empty()) return InvalidArgumentError("request path escapes the root");
      stack.pop_back();
    } else {
      stack.push_back(segment);
    }
    pos = next + 1;
  }
  std::string out;
  for (auto segment : stack) {
    out += '/';
    out += segment;
  }
  return out.empty() ? std::string("/") : out;
}

std::vector<std::string_view> PathSegments(std::string_view normalized) {
  std::vector<std::string_view> segments;
  size_t pos = 1;
  while (pos < normalized.size()) {
    size_t next = normalized.find('/', pos);
    if (next == std::string_view::npos) next = normalized.size();
    segments.push_back(normalized.substr(pos, next - pos));
    pos = next + 1;
  }
  return segments;
}

std::string EncodePathSegment(std::string_view segment) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : segment) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

}  // namespace gpupool::server
