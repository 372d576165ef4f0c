#pragma once
// Request path normalisation for routing: config::NormalizeRequestPath, the function access
// control uses, so routing and access always agree on a path:
// query stripped, percent-decoded once, a '%', '?' or '#' left after decoding (double encoding),
// backslash, NUL or control characters refused, bytes that are not UTF-8 once decoded refused,
// `//` collapsed, `.` and `..` resolved (escaping the root is refused), trailing '/' removed.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpupool::api {

Result<std::string> NormalizePath(std::string_view target);

// "/a/b" -> {"a", "b"}; "/" -> {}.
std::vector<std::string_view> PathSegments(std::string_view normalized);

}  // namespace gpupool::api
