#pragma once
// Bearer JWT verification for `--auth oidc`: RS256 and ES256 signatures checked against a JWKS
// (a file, or a URL fetched at start-up and re-fetched when a token names an unknown key id and
// when the keys are older than a maximum age, so an identity provider's key rotation is seen), then
// issuer, audience, expiry and not-before with a clock skew allowance. `alg: none`, HS256 (the
// "HMAC with the public key" confusion attack) and every other algorithm are refused. Roles come
// from a claim path such as `roles` or Keycloak's `realm_access.roles`.
//
// Thread contract: Verify may run on any thread. With a JwksRefresh, the key set is swapped
// atomically; one thread at a time re-fetches (in its Verify call) while the others keep using
// the last set.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace gpupool::api {

// Who a request comes from, after authentication.
struct Identity {
  std::string user;
  std::vector<std::string> roles;
};

// A set of public keys by key id (JWKS `kid`). Keys without `kid` are stored under "".
class KeySet {
 public:
  KeySet();
  ~KeySet();
  KeySet(KeySet&&) noexcept;
  KeySet& operator=(KeySet&&) noexcept;

  // Parses a JWKS document `{"keys": [{"kty": "RSA", "n", "e", "kid", "alg"?}, {"kty": "EC",
  // "crv": "P-256", "x", "y", "kid"}]}`. Keys of other types (oct, OKP) are skipped; a JWKS with no
  // usable key is an error.
  static Result<KeySet> FromJwks(std::string_view jwks_text);

  size_t size() const;

  struct Key;  // opaque: an EVP_PKEY and its type

  // The key for `kid`, or nullptr.
  const Key* Find(std::string_view kid) const;
  // All keys (tried in order when a token has no `kid`).
  std::vector<const Key*> All() const;

 private:
  std::map<std::string, std::shared_ptr<Key>, std::less<>> keys_;
};

// Reads a JWKS from a file path or an http(s) URL.
Result<KeySet> LoadKeySet(const std::string& file_or_url);

struct JwtOptions {
  std::string issuer;                             // required `iss`
  std::string audience;                           // required in `aud` (a string or an array)
  std::string roles_claim = "roles";              // dotted path, e.g. "realm_access.roles"
  std::string user_claim = "preferred_username";  // falls back to "sub"
  int64_t skew_seconds = 60;
};

// How a verifier re-fetches its JWKS (`--jwks URL`).
struct JwksRefresh {
  std::function<Result<KeySet>()> fetch;  // e.g. LoadKeySet(url)
  // At most one fetch per this interval, whatever triggers it (unknown key ids in tokens cannot
  // make the server hammer the identity provider).
  int64_t min_interval_ms = 30'000;
  // Keys older than this are re-fetched at the next Verify (a key removed from the JWKS stops
  // being accepted).
  int64_t max_age_ms = int64_t{15} * 60'000;
};

class JwtVerifier {
 public:
  // `clock` must outlive the verifier. Without `refresh` the keys never change.
  JwtVerifier(JwtOptions options, KeySet keys, const Clock& clock,
              std::optional<JwksRefresh> refresh = std::nullopt);

  // Verifies a compact JWS ("header.payload.signature"). kUnauthenticated with the reason for a
  // malformed token, a refused algorithm, an unknown key, a bad signature, a wrong issuer or
  // audience, an expired or not-yet-valid token.
  Result<Identity> Verify(std::string_view token) const;

 private:
  // The current key set (re-fetched first when older than max_age_ms).
  std::shared_ptr<const KeySet> Keys() const;
  // Fetches the JWKS unless the rate limit forbids it or another thread is fetching; true when a
  // new set was installed.
  bool Refresh() const;
  // OK when a key of the set (re-fetched once when the token's key may be new) verifies the
  // signature of `header.payload` made with the header's algorithm.
  Status VerifySignature(std::string_view token, const nlohmann::json& header) const;

  const JwtOptions options_;
  const Clock& clock_;
  const std::optional<JwksRefresh> refresh_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const KeySet> keys_;
  mutable int64_t loaded_at_ms_ = 0;
  mutable int64_t attempted_at_ms_ = 0;
  mutable bool fetching_ = false;
};

// base64url without padding (RFC 7515 §2). Exposed for tests and token minting.
std::string Base64UrlEncode(std::string_view bytes);
Result<std::string> Base64UrlDecode(std::string_view text);

}  // namespace gpupool::api
