#pragma once
// The web dashboard's routes (its files are embedded in the binary: webui/assets.h):
//   GET /                          index.html
//   GET /assets/<file>, /<file>    the bundle's files (hashed names cached for a year)
//   GET /pools[/{name}], /queues[/{name}], /workflows[/{id}], /nodes, /machine-pools,
//       /configs, /login, /callback
//                                  index.html too: the UI's own routes (a reload or a shared link
//                                  lands on the same page)
//   GET /api/ui/config             public: how the UI logs in (auth mode; for OIDC the issuer,
//                                  client id, scopes and which token to send)
// Every answer has a strong ETag (If-None-Match -> 304) and a strict Content-Security-Policy (no
// inline script or style; connections to this origin and, with OIDC, the issuer's). These routes
// need no token: the page itself holds nothing, and every figure it shows comes from /api/* with
// the user's token.

#include <string>

#include "api/http_server.h"

namespace gpupool::api {

struct UiOptions {
  std::string auth;       // "dev" | "oidc"
  std::string issuer;     // OIDC issuer (authorization-code flow with PKCE in the browser)
  std::string client_id;  // the UI's OIDC client (public client, no secret)
  std::string scopes = "openid profile email";
  std::string token = "access_token";  // which token the UI sends: access_token | id_token
};

void AddUiRoutes(Router& router, const UiOptions& options);

// The Content-Security-Policy the UI is served with (the issuer's origin may be contacted for
// OIDC's token exchange).
std::string ContentSecurityPolicy(const UiOptions& options);

}  // namespace gpupool::api
