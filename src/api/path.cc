#include "api/path.h"

#include "config/access.h"

namespace gpupool::api {

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

}  // namespace gpupool::api
