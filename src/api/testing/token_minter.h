#pragma once
// Test helper: generates RSA-2048 and EC P-256 key pairs with OpenSSL, publishes them as a JWKS and
// signs JWTs with them (also deliberately bad ones: alg none, HS256 keyed with the public key).

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace gpupool::api::testing {

class SigningKey {
 public:
  enum class Type { kRsa, kEc };
  static SigningKey Generate(Type type, std::string kid);
  ~SigningKey();
  SigningKey(SigningKey&&) noexcept;
  SigningKey& operator=(SigningKey&&) noexcept;

  // The public key as a JWK object.
  nlohmann::json Jwk() const;
  // "RS256" or "ES256".
  std::string Alg() const;
  const std::string& kid() const { return kid_; }

  // A compact JWS of `claims` with header {alg, typ, kid}.
  std::string Mint(const nlohmann::json& claims) const;
  // Same, but with a custom header (e.g. a different kid or alg) signed by this key.
  std::string MintWithHeader(const nlohmann::json& header, const nlohmann::json& claims) const;
  // Same, with the header and payload bytes as given (any bytes, not necessarily JSON): what a
  // fuzzer needs to reach the checks behind the signature.
  std::string MintRaw(std::string_view header, std::string_view payload) const;
  // HS256 signed with this key's public JWK text as the HMAC secret (the confusion attack).
  std::string MintHs256WithPublicKey(const nlohmann::json& claims) const;

 private:
  SigningKey() = default;
  struct State;
  std::unique_ptr<State> state_;
  Type type_ = Type::kRsa;
  std::string kid_;
};

// `{"keys": [jwk...]}`.
std::string JwksOf(const std::vector<const SigningKey*>& keys);

// An unsigned token (`alg: none`, empty signature).
std::string MintAlgNone(const nlohmann::json& claims);

}  // namespace gpupool::api::testing
