#include "server/path.h"

#include "config/access.h"

namespace gpupool::server {

Result<std::string> NormalizePath(std::string_view target) {
  // One normaliser for routing and access control, so both always see the same path.
  return config::NormalizeRequestPath(target);
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
