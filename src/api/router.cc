// The route table of http_server.h: patterns of segments, `{name}` capturing one segment.

#include <algorithm>

#include "api/http_server.h"
#include "config/access.h"

namespace gpupool::api {

void Router::Add(std::string method, std::string pattern, RouteHandler handler,
                 RouteOptions options) {
  Route route;
  route.method = std::move(method);
  for (auto segment : config::PathSegments(pattern)) route.segments.emplace_back(segment);
  route.pattern = std::move(pattern);
  route.handler = std::move(handler);
  route.options = std::move(options);
  routes_.push_back(std::move(route));
}

void Router::AddAsync(std::string method, std::string pattern, AsyncRouteHandler handler,
                      RouteOptions options) {
  Add(std::move(method), std::move(pattern), nullptr, std::move(options));
  routes_.back().async_handler = std::move(handler);
}

Router::Match Router::Find(std::string_view method, std::string_view path) const {
  std::vector<std::string_view> segments = config::PathSegments(path);
  Match best;
  int best_exact = -1;
  for (const Route& route : routes_) {
    if (route.segments.size() != segments.size()) continue;
    int exact = 0;
    bool matches = true;
    for (size_t i = 0; i < segments.size() && matches; ++i) {
      const std::string& want = route.segments[i];
      if (want.size() > 2 && want.front() == '{' && want.back() == '}') continue;
      if (want == segments[i]) {
        ++exact;
      } else {
        matches = false;
      }
    }
    if (!matches) continue;
    best.allowed_methods.push_back(route.method);
    if (route.method == "GET") best.allowed_methods.emplace_back("HEAD");
    best.path_requires_auth = best.path_requires_auth || route.options.requires_auth;
    if (route.method != method) continue;
    if (exact > best_exact) {
      best_exact = exact;
      best.route = &route;
    }
  }
  std::sort(best.allowed_methods.begin(), best.allowed_methods.end());
  best.allowed_methods.erase(std::unique(best.allowed_methods.begin(), best.allowed_methods.end()),
                             best.allowed_methods.end());
  if (best.route != nullptr) {
    for (size_t i = 0; i < segments.size(); ++i) {
      const std::string& want = best.route->segments[i];
      if (want.size() > 2 && want.front() == '{') {
        best.params[want.substr(1, want.size() - 2)] = std::string(segments[i]);
      }
    }
  }
  return best;
}

}  // namespace gpupool::api
