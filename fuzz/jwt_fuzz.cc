// Bearer tokens (api/jwt.h, api/auth.h) as `--auth oidc` verifies them, with a fixed JWKS
// (one EC P-256 and one RSA key). The input is used three ways:
//   * as the Authorization header and as a compact token, verified as it is (malformed tokens,
//     refused algorithms, bad signatures, unknown key ids);
//   * split at its first newline into header and payload bytes that the harness signs with the
//     EC key, so that the checks behind the signature (claims, issuer, audience, expiry, user and
//     roles) see arbitrary JSON;
//   * as a JWKS document (`--jwks FILE`) and as base64url text.
//
// Invariants: verification gives an identity or kUnauthenticated with a UTF-8 message, never
// anything else; a verified identity has a user; base64url decodes what it encodes.

#include <memory>

#include "api/auth.h"
#include "api/jwt.h"
#include "api/testing/token_minter.h"
#include "common/clock.h"
#include "common/strings.h"
#include "fuzz/support/fuzz_util.h"

namespace gpupool::fuzz {
namespace {

using api::testing::SigningKey;

constexpr int64_t kNowMillis = 1'700'000'000'000;

struct Verifier {
  FakeClock clock{kNowMillis};
  SigningKey ec = SigningKey::Generate(SigningKey::Type::kEc, "ec-key");
  SigningKey rsa = SigningKey::Generate(SigningKey::Type::kRsa, "rsa-key");
  std::unique_ptr<api::Authenticator> authenticator;

  Verifier() {
    auto keys = api::KeySet::FromJwks(api::testing::JwksOf({&ec, &rsa}));
    Check(keys.ok(), "the fixed JWKS loads", keys.status().ToString());
    api::JwtOptions options;
    options.issuer = "https://issuer.example";
    options.audience = "gpupool";
    options.roles_claim = "realm_access.roles";
    authenticator = api::MakeOidcAuthenticator(
        std::make_unique<api::JwtVerifier>(options, std::move(*keys), clock));
  }
};

void CheckVerified(const Result<api::Identity>& identity, std::string_view what) {
  if (identity.ok()) {
    Check(!identity->user.empty(), std::string(what) + ": a verified identity has a user");
    for (const std::string& role : identity->roles) {
      Check(IsValidUtf8(role), std::string(what) + ": roles are UTF-8", role);
    }
    return;
  }
  Check(identity.status().code() == StatusCode::kUnauthenticated,
        std::string(what) + ": a refused token is Unauthenticated", identity.status().ToString());
  Check(IsValidUtf8(identity.status().message()),
        std::string(what) + ": the refusal is UTF-8 (it goes into a JSON reply)",
        identity.status().message());
}

Verifier* verifier = nullptr;

}  // namespace
}  // namespace gpupool::fuzz

// The keys are generated before the first input: RSA key generation may take seconds on a busy
// machine, which libFuzzer's per-input timeout would count against the first input.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  gpupool::fuzz::verifier = new gpupool::fuzz::Verifier();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  const std::string_view text = AsText(data, size);

  CheckVerified(verifier->authenticator->Authenticate(text), "the Authorization header");
  CheckVerified(verifier->authenticator->Authenticate("Bearer " + std::string(text)),
                "a bearer token");
  if (const size_t newline = text.find('\n'); newline != std::string_view::npos) {
    const std::string token =
        verifier->ec.MintRaw(text.substr(0, newline), text.substr(newline + 1));
    CheckVerified(verifier->authenticator->Authenticate("Bearer " + token), "a signed token");
  }
  if (auto dev = api::ParseDevToken(text); !dev.ok()) {
    Check(dev.status().code() == StatusCode::kUnauthenticated ||
              dev.status().code() == StatusCode::kInvalidArgument,
          "a malformed dev token is refused", dev.status().ToString());
  }
  (void)api::KeySet::FromJwks(text);

  const std::string encoded = api::Base64UrlEncode(text);
  auto decoded = api::Base64UrlDecode(encoded);
  Check(decoded.ok() && *decoded == text, "base64url decodes what it encodes");
  if (auto bytes = api::Base64UrlDecode(text); bytes.ok()) {
    (void)api::Base64UrlEncode(*bytes);
  }
  return 0;
}
