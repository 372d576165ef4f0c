#include "api/testing/token_minter.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>

#include <stdexcept>

#include "api/jwt.h"

namespace gpupool::api::testing {

using Json = nlohmann::json;

struct SigningKey::State {
  EVP_PKEY* pkey = nullptr;
  ~State() { EVP_PKEY_free(pkey); }
};

namespace {

std::string BnParam(EVP_PKEY* pkey, const char* name) {
  BIGNUM* bn = nullptr;
  if (EVP_PKEY_get_bn_param(pkey, name, &bn) <= 0) throw std::runtime_error("bn param");
  std::string out(BN_num_bytes(bn), '\0');
  BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
  BN_free(bn);
  return out;
}

std::string SignSha256(EVP_PKEY* pkey, const std::string& message) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  size_t len = 0;
  EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, pkey);
  EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(message.data()),
                 message.size());
  std::string sig(len, '\0');
  EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                 reinterpret_cast<const unsigned char*>(message.data()), message.size());
  sig.resize(len);
  EVP_MD_CTX_free(ctx);
  return sig;
}

std::string DerToRaw(const std::string& der) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(der.data());
  ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, der.size());
  const BIGNUM* r = nullptr;
  const BIGNUM* s = nullptr;
  ECDSA_SIG_get0(sig, &r, &s);
  std::string raw(64, '\0');
  BN_bn2binpad(r, reinterpret_cast<unsigned char*>(raw.data()), 32);
  BN_bn2binpad(s, reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
  ECDSA_SIG_free(sig);
  return raw;
}

}  // namespace

SigningKey SigningKey::Generate(Type type, std::string kid) {
  SigningKey key;
  key.type_ = type;
  key.kid_ = std::move(kid);
  key.state_ = std::make_unique<State>();
  key.state_->pkey = type == Type::kRsa ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
  if (key.state_->pkey == nullptr) throw std::runtime_error("key generation failed");
  return key;
}

SigningKey::~SigningKey() = default;
SigningKey::SigningKey(SigningKey&&) noexcept = default;
SigningKey& SigningKey::operator=(SigningKey&&) noexcept = default;

std::string SigningKey::Alg() const { return type_ == Type::kRsa ? "RS256" : "ES256"; }

Json SigningKey::Jwk() const {
  if (type_ == Type::kRsa) {
    return Json{{"kty", "RSA"},
                {"kid", kid_},
                {"use", "sig"},
                {"alg", "RS256"},
                {"n", Base64UrlEncode(BnParam(state_->pkey, OSSL_PKEY_PARAM_RSA_N))},
                {"e", Base64UrlEncode(BnParam(state_->pkey, OSSL_PKEY_PARAM_RSA_E))}};
  }
  std::string x = BnParam(state_->pkey, OSSL_PKEY_PARAM_EC_PUB_X);
  std::string y = BnParam(state_->pkey, OSSL_PKEY_PARAM_EC_PUB_Y);
  x.insert(0, 32 - x.size(), '\0');
  y.insert(0, 32 - y.size(), '\0');
  return Json{{"kty", "EC"},
              {"kid", kid_},
              {"use", "sig"},
              {"crv", "P-256"},
              {"x", Base64UrlEncode(x)},
              {"y", Base64UrlEncode(y)}};
}

std::string SigningKey::Mint(const Json& claims) const {
  return MintWithHeader(Json{{"alg", Alg()}, {"typ", "JWT"}, {"kid", kid_}}, claims);
}

std::string SigningKey::MintWithHeader(const Json& header, const Json& claims) const {
  return MintRaw(header.dump(), claims.dump());
}

std::string SigningKey::MintRaw(std::string_view header, std::string_view payload) const {
  std::string signing_input = Base64UrlEncode(header) + "." + Base64UrlEncode(payload);
  std::string sig = SignSha256(state_->pkey, signing_input);
  if (type_ == Type::kEc) sig = DerToRaw(sig);
  return signing_input + "." + Base64UrlEncode(sig);
}

std::string SigningKey::MintHs256WithPublicKey(const Json& claims) const {
  std::string secret = Jwk().dump();
  std::string signing_input =
      Base64UrlEncode(Json{{"alg", "HS256"}, {"typ", "JWT"}, {"kid", kid_}}.dump()) + "." +
      Base64UrlEncode(claims.dump());
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size(), mac,
       &mac_len);
  return signing_input + "." + Base64UrlEncode(std::string(reinterpret_cast<char*>(mac), mac_len));
}

std::string JwksOf(const std::vector<const SigningKey*>& keys) {
  Json doc = {{"keys", Json::array()}};
  for (const SigningKey* key : keys) doc["keys"].push_back(key->Jwk());
  return doc.dump();
}

std::string MintAlgNone(const Json& claims) {
  return Base64UrlEncode(Json{{"alg", "none"}, {"typ", "JWT"}}.dump()) + "." +
         Base64UrlEncode(claims.dump()) + ".";
}

}  // namespace gpupool::api::testing
