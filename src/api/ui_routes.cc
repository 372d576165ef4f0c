#include "api/ui_routes.h"

#include <algorithm>
#include <memory>
#include <string_view>

#include "common/strings.h"
#include "webui/assets.h"

namespace gpupool::api {
namespace {

// The UI's own routes (web/src/router.js): answered with index.html.
constexpr const char* kUiRoutes[] = {"/pools",     "/pools/{name}",   "/queues",  "/queues/{name}",
                                     "/workflows", "/workflows/{id}", "/nodes",   "/machine-pools",
                                     "/configs",   "/login",          "/callback"};

const webui::Asset* FindAsset(std::string_view path) {
  auto assets = webui::Assets();
  auto it = std::find_if(assets.begin(), assets.end(),
                         [&](const webui::Asset& a) { return a.path == path; });
  return it == assets.end() ? nullptr : &*it;
}

// "https://login.example.com/realms/x" -> "https://login.example.com".
std::string OriginOf(const std::string& url) {
  size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  size_t path = url.find('/', scheme + 3);
  return path == std::string::npos ? url : url.substr(0, path);
}

bool EtagMatches(const RouteRequest& request, std::string_view etag) {
  const std::string header = request.Header("If-None-Match");
  if (header.empty()) return false;
  if (Trim(header) == "*") return true;
  for (const std::string& candidate : Split(header, ',')) {
    std::string_view tag = Trim(candidate);
    if (StartsWith(tag, "W/")) tag.remove_prefix(2);
    if (tag == etag) return true;
  }
  return false;
}

Reply Serve(const webui::Asset& asset, const RouteRequest& request, const std::string& csp) {
  Reply reply;
  if (EtagMatches(request, asset.etag)) {
    reply.status = 304;
  } else {
    reply = Reply::Text(std::string(asset.body), std::string(asset.content_type));
  }
  reply.headers = {
      {"ETag", std::string(asset.etag)},
      {"Cache-Control", asset.immutable ? "public, max-age=31536000, immutable" : "no-cache"},
      {"Content-Security-Policy", csp},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
      {"X-Frame-Options", "DENY"}};
  return reply;
}

}  // namespace

std::string ContentSecurityPolicy(const UiOptions& options) {
  std::string connect = "'self'";
  if (options.auth == "oidc") {
    std::string issuer = OriginOf(options.issuer);
    if (!issuer.empty()) connect += " " + issuer;
  }
  return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
         "font-src 'self'; connect-src " +
         connect +
         "; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
}

void AddUiRoutes(Router& router, const UiOptions& options) {
  const auto csp = std::make_shared<const std::string>(ContentSecurityPolicy(options));
  const webui::Asset* index = FindAsset("/index.html");
  auto serve_index = [index, csp](const RouteRequest& request) -> Result<Reply> {
    if (index == nullptr) return NotFoundError("the dashboard's index.html is missing");
    return Serve(*index, request, *csp);
  };
  const RouteOptions public_route{.requires_auth = false};
  router.Add("GET", "/", serve_index, public_route);
  for (const char* route : kUiRoutes) router.Add("GET", route, serve_index, public_route);
  // Every other file of the bundle at its own path (Router matches whole segments).
  for (const webui::Asset& asset : webui::Assets()) {
    const webui::Asset* file = &asset;
    router.Add(
        "GET", std::string(asset.path),
        [file, csp](const RouteRequest& request) -> Result<Reply> {
          return Serve(*file, request, *csp);
        },
        public_route);
  }

  nlohmann::ordered_json config = {{"auth", options.auth},
                                   {"dashboard", webui::BuiltWithDashboard()}};
  if (options.auth == "oidc") {
    config["issuer"] = options.issuer;
    config["client_id"] = options.client_id;
    config["scopes"] = options.scopes;
    config["token"] = options.token;
  }
  router.Add(
      "GET", "/api/ui/config",
      [config](const RouteRequest&) -> Result<Reply> {
        Reply reply = Reply::Json(config);
        reply.headers = {{"Cache-Control", "no-cache"}};
        return reply;
      },
      public_route);
}

}  // namespace gpupool::api
