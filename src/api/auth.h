#pragma once
// Request authentication: turns an `Authorization` header into an Identity.
//   --auth oidc: bearer JWTs verified by JwtVerifier.
//   --auth dev:  `Bearer dev:<user>:<role,role>`, no verification at all; for local use only
//                (MakeDevAuthenticator logs a loud warning).
//
// Thread contract: Authenticate may run on any thread.

#include <memory>
#include <string_view>

#include "api/jwt.h"

namespace gpupool::api {

class Authenticator {
 public:
  virtual ~Authenticator() = default;
  // kUnauthenticated when the header is missing or the credentials are bad.
  virtual Result<Identity> Authenticate(std::string_view authorization_header) const = 0;
  virtual std::string_view Mode() const = 0;
};

// The token of "Bearer <token>" (scheme case-insensitive), or kUnauthenticated.
Result<std::string_view> BearerToken(std::string_view authorization_header);

// Parses "dev:<user>:<role,role>" (roles may be empty).
Result<Identity> ParseDevToken(std::string_view token);

std::unique_ptr<Authenticator> MakeDevAuthenticator();
std::unique_ptr<Authenticator> MakeOidcAuthenticator(std::unique_ptr<JwtVerifier> verifier);

// The warning printed when the server starts with --auth dev.
extern const char kDevAuthWarning[];

}  // namespace gpupool::api
