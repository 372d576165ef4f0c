#include "api/auth.h"

#include "common/strings.h"

namespace gpupool::api {

const char kDevAuthWarning[] =
    "WARNING: --auth dev accepts any bearer token of the form dev:<user>:<role,role> WITHOUT "
    "verification. Anyone who can reach this port can act as any user, including osmo-admin. Use "
    "it on a laptop only; use --auth oidc for anything shared.";

namespace {

class DevAuthenticator final : public Authenticator {
 public:
  Result<Identity> Authenticate(std::string_view header) const override {
    ASSIGN_OR_RETURN(std::string_view token, BearerToken(header));
    return ParseDevToken(token);
  }
  std::string_view Mode() const override { return "dev"; }
};

class OidcAuthenticator final : public Authenticator {
 public:
  explicit OidcAuthenticator(std::unique_ptr<JwtVerifier> verifier)
      : verifier_(std::move(verifier)) {}
  Result<Identity> Authenticate(std::string_view header) const override {
    ASSIGN_OR_RETURN(std::string_view token, BearerToken(header));
    return verifier_->Verify(token);
  }
  std::string_view Mode() const override { return "oidc"; }

 private:
  const std::unique_ptr<JwtVerifier> verifier_;
};

}  // namespace

Result<std::string_view> BearerToken(std::string_view header) {
  header = Trim(header);
  if (header.empty()) return UnauthenticatedError("missing Authorization: Bearer <token> header");
  if (header.size() < 7 || ToLower(header.substr(0, 7)) != "bearer ") {
    return UnauthenticatedError("Authorization header must be \"Bearer <token>\"");
  }
  std::string_view token = Trim(header.substr(7));
  if (token.empty()) return UnauthenticatedError("empty bearer token");
  return token;
}

Result<Identity> ParseDevToken(std::string_view token) {
  if (!StartsWith(token, "dev:")) {
    return UnauthenticatedError("dev auth expects a bearer token dev:<user>:<role,role>");
  }
  std::string_view rest = token.substr(4);
  // The user name goes into the audit log and the store: refuse what a database would refuse.
  if (!IsValidUtf8(rest)) return UnauthenticatedError("dev token is not valid UTF-8");
  size_t colon = rest.find(':');
  Identity identity;
  identity.user = std::string(rest.substr(0, colon));
  if (identity.user.empty()) return UnauthenticatedError("dev token names no user");
  if (colon != std::string_view::npos) {
    for (const std::string& role : Split(rest.substr(colon + 1), ',')) {
      std::string_view trimmed = Trim(role);
      if (!trimmed.empty()) identity.roles.emplace_back(trimmed);
    }
  }
  return identity;
}

std::unique_ptr<Authenticator> MakeDevAuthenticator() {
  return std::make_unique<DevAuthenticator>();
}

std::unique_ptr<Authenticator> MakeOidcAuthenticator(std::unique_ptr<JwtVerifier> verifier) {
  return std::make_unique<OidcAuthenticator>(std::move(verifier));
}

}  // namespace gpupool::api
