#include "api/jwt.h"

#include <httplib.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <fstream>
#include <sstream>

#include "common/json_text.h"
#include "common/strings.h"

namespace gpupool::api {

struct KeySet::Key {
  enum class Type { kRsa, kEc };
  Type type;
  EVP_PKEY* pkey = nullptr;
  std::string kid;
  ~Key() { EVP_PKEY_free(pkey); }
};

namespace {

constexpr char kB64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

struct BnDeleter {
  void operator()(BIGNUM* bn) const { BN_free(bn); }
};
using BnPtr = std::unique_ptr<BIGNUM, BnDeleter>;

Result<EVP_PKEY*> FromParams(const char* type, OSSL_PARAM* params) {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
  EVP_PKEY* pkey = nullptr;
  bool ok = ctx != nullptr && EVP_PKEY_fromdata_init(ctx) > 0 &&
            EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) > 0;
  EVP_PKEY_CTX_free(ctx);
  if (!ok) return InvalidArgumentError(std::string("cannot build ") + type + " public key");
  return pkey;
}

Result<std::string> RequiredB64(const nlohmann::json& jwk, const char* field) {
  if (!jwk.contains(field) || !jwk[field].is_string()) {
    return InvalidArgumentError(std::string("JWK without string field \"") + field + "\"");
  }
  auto bytes = Base64UrlDecode(jwk[field].get<std::string>());
  if (!bytes.ok())
    return InvalidArgumentError(std::string("JWK field ") + field + ": not base64url");
  return bytes;
}

Result<EVP_PKEY*> RsaFromJwk(const nlohmann::json& jwk) {
  ASSIGN_OR_RETURN(std::string n, RequiredB64(jwk, "n"));
  ASSIGN_OR_RETURN(std::string e, RequiredB64(jwk, "e"));
  BnPtr bn_n(BN_bin2bn(reinterpret_cast<const unsigned char*>(n.data()), n.size(), nullptr));
  BnPtr bn_e(BN_bin2bn(reinterpret_cast<const unsigned char*>(e.data()), e.size(), nullptr));
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n.get());
  OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e.get());
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
  auto pkey = FromParams("RSA", params);
  OSSL_PARAM_free(params);
  OSSL_PARAM_BLD_free(bld);
  return pkey;
}

// A member that must be a string when present: "" when absent, nullopt when of another type
// (nlohmann::json::value would throw; a JWKS comes from a file or an identity provider, not from
// us).
std::optional<std::string> OptionalString(const nlohmann::json& object, const char* field) {
  auto it = object.find(field);
  if (it == object.end()) return std::string();
  if (!it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

Result<EVP_PKEY*> EcFromJwk(const nlohmann::json& jwk) {
  if (OptionalString(jwk, "crv") != "P-256") {
    return InvalidArgumentError("EC JWK: only crv P-256 is supported");
  }
  ASSIGN_OR_RETURN(std::string x, RequiredB64(jwk, "x"));
  ASSIGN_OR_RETURN(std::string y, RequiredB64(jwk, "y"));
  if (x.size() != 32 || y.size() != 32)
    return InvalidArgumentError("EC JWK: x and y need 32 bytes");
  std::string point = std::string(1, '\x04') + x + y;
  char group[] = "prime256v1";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0),
      OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()),
      OSSL_PARAM_construct_end()};
  return FromParams("EC", params);
}

// JOSE ES256 signatures are r||s (32 bytes each); OpenSSL wants DER.
Result<std::string> EcdsaRawToDer(std::string_view raw) {
  if (raw.size() != 64) return UnauthenticatedError("ES256 signature must be 64 bytes");
  ECDSA_SIG* sig = ECDSA_SIG_new();
  BIGNUM* r = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()), 32, nullptr);
  BIGNUM* s = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()) + 32, 32, nullptr);
  ECDSA_SIG_set0(sig, r, s);
  unsigned char* der = nullptr;
  int len = i2d_ECDSA_SIG(sig, &der);
  ECDSA_SIG_free(sig);
  if (len <= 0) return UnauthenticatedError("bad ES256 signature");
  std::string out(reinterpret_cast<char*>(der), len);
  OPENSSL_free(der);
  return out;
}

bool VerifySha256(EVP_PKEY* pkey, std::string_view message, std::string_view signature) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, pkey) > 0 &&
            EVP_DigestVerify(
                ctx, reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

Result<nlohmann::json> DecodeJsonPart(std::string_view part, const char* what) {
  auto bytes = Base64UrlDecode(part);
  if (!bytes.ok()) return UnauthenticatedError(std::string("malformed token: ") + what);
  nlohmann::json value = nlohmann::json::parse(*bytes, nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) {
    return UnauthenticatedError(std::string("malformed token: ") + what + " is not a JSON object");
  }
  return value;
}

// Follows a dotted claim path; nullptr when absent.
const nlohmann::json* FindClaim(const nlohmann::json& claims, std::string_view path) {
  const nlohmann::json* current = &claims;
  for (const std::string& part : Split(path, '.')) {
    if (!current->is_object()) return nullptr;
    auto it = current->find(part);
    if (it == current->end()) return nullptr;
    current = &*it;
  }
  return current;
}

Result<int64_t> NumericClaim(const nlohmann::json& claims, const char* name, bool required) {
  auto it = claims.find(name);
  if (it == claims.end()) {
    if (required) return UnauthenticatedError(std::string("token has no \"") + name + "\" claim");
    return int64_t{-1};
  }
  if (!it->is_number()) {
    return UnauthenticatedError(std::string("token claim \"") + name + "\" is not a number");
  }
  return static_cast<int64_t>(it->get<double>());
}

}  // namespace

std::string Base64UrlEncode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kB64Alphabet[(buffer >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(kB64Alphabet[(buffer << (6 - bits)) & 0x3f]);
  return out;
}

Result<std::string> Base64UrlDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    int value;
    if (c >= 'A' && c <= 'Z') {
      value = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      value = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      value = c - '0' + 52;
    } else if (c == '-') {
      value = 62;
    } else if (c == '_') {
      value = 63;
    } else {
      return InvalidArgumentError("invalid base64url character");
    }
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  if (bits >= 6) return InvalidArgumentError("invalid base64url length");
  return out;
}

KeySet::KeySet() = default;
KeySet::~KeySet() = default;
KeySet::KeySet(KeySet&&) noexcept = default;
KeySet& KeySet::operator=(KeySet&&) noexcept = default;

size_t KeySet::size() const { return keys_.size(); }

const KeySet::Key* KeySet::Find(std::string_view kid) const {
  auto it = keys_.find(kid);
  return it == keys_.end() ? nullptr : it->second.get();
}

std::vector<const KeySet::Key*> KeySet::All() const {
  std::vector<const Key*> out;
  for (const auto& [kid, key] : keys_) out.push_back(key.get());
  return out;
}

Result<KeySet> KeySet::FromJwks(std::string_view jwks_text) {
  nlohmann::json doc = nlohmann::json::parse(jwks_text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("keys") || !doc["keys"].is_array()) {
    return InvalidArgumentError("JWKS: expected a JSON object with a \"keys\" array");
  }
  KeySet set;
  for (size_t i = 0; i < doc["keys"].size(); ++i) {
    const nlohmann::json& jwk = doc["keys"][i];
    std::string where = "JWKS keys[" + std::to_string(i) + "]";
    if (!jwk.is_object()) return InvalidArgumentError(where + ": expected an object");
    std::optional<std::string> kty = OptionalString(jwk, "kty");
    if (!kty) return InvalidArgumentError(where + ": kty: expected a string");
    auto key = std::make_shared<Key>();
    key->kid = jwk.contains("kid") && jwk["kid"].is_string() ? jwk["kid"].get<std::string>() : "";
    if (*kty == "RSA") {
      auto pkey = RsaFromJwk(jwk);
      if (!pkey.ok()) return pkey.status().WithContext(where);
      key->type = Key::Type::kRsa;
      key->pkey = *pkey;
    } else if (*kty == "EC") {
      auto pkey = EcFromJwk(jwk);
      if (!pkey.ok()) return pkey.status().WithContext(where);
      key->type = Key::Type::kEc;
      key->pkey = *pkey;
    } else {
      continue;  // symmetric and other key types are never used to verify
    }
    set.keys_[key->kid] = std::move(key);
  }
  if (set.keys_.empty()) return InvalidArgumentError("JWKS: no RSA or EC P-256 key");
  return set;
}

Result<KeySet> LoadKeySet(const std::string& file_or_url) {
  std::string text;
  if (StartsWith(file_or_url, "http://") || StartsWith(file_or_url, "https://")) {
    size_t scheme_end = file_or_url.find("://") + 3;
    size_t path_start = file_or_url.find('/', scheme_end);
    std::string base = file_or_url.substr(0, path_start);
    std::string path = path_start == std::string::npos ? "/" : file_or_url.substr(path_start);
    try {
      httplib::Client client(base);
      client.set_connection_timeout(5);
      client.set_read_timeout(10);
      auto response = client.Get(path);
      if (!response) {
        return UnavailableError("JWKS " + file_or_url + ": " +
                                httplib::to_string(response.error()));
      }
      if (response->status != 200) {
        return UnavailableError("JWKS " + file_or_url + ": HTTP " +
                                std::to_string(response->status));
      }
      text = response->body;
    } catch (const std::exception& e) {
      return UnavailableError("JWKS " + file_or_url + ": " + e.what());
    }
  } else {
    std::ifstream in(file_or_url);
    if (!in) return NotFoundError("cannot read JWKS file " + file_or_url);
    std::stringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  auto keys = KeySet::FromJwks(text);
  if (!keys.ok()) return keys.status().WithContext(file_or_url);
  return keys;
}

JwtVerifier::JwtVerifier(JwtOptions options, KeySet keys, const Clock& clock,
                         std::optional<JwksRefresh> refresh)
    : options_(std::move(options)),
      clock_(clock),
      refresh_(std::move(refresh)),
      keys_(std::make_shared<const KeySet>(std::move(keys))),
      loaded_at_ms_(clock.NowMillis()),
      attempted_at_ms_(clock.NowMillis()) {}

std::shared_ptr<const KeySet> JwtVerifier::Keys() const {
  if (refresh_) {
    bool old;
    {
      std::lock_guard lock(mu_);
      old = clock_.NowMillis() - loaded_at_ms_ >= refresh_->max_age_ms;
    }
    if (old) Refresh();
  }
  std::lock_guard lock(mu_);
  return keys_;
}

bool JwtVerifier::Refresh() const {
  if (!refresh_ || !refresh_->fetch) return false;
  {
    std::lock_guard lock(mu_);
    int64_t now = clock_.NowMillis();
    if (fetching_ || now - attempted_at_ms_ < refresh_->min_interval_ms) return false;
    fetching_ = true;
    attempted_at_ms_ = now;
  }
  Result<KeySet> fetched = refresh_->fetch();
  std::lock_guard lock(mu_);
  fetching_ = false;
  if (!fetched.ok()) return false;  // keep the last good set; retried after min_interval_ms
  keys_ = std::make_shared<const KeySet>(std::move(*fetched));
  loaded_at_ms_ = clock_.NowMillis();
  return true;
}

namespace {

// iss, aud, exp and nbf (with the allowed clock skew) against the options.
Status CheckClaims(const nlohmann::json& claims, const JwtOptions& options, int64_t now_seconds) {
  if (!claims.contains("iss") || claims["iss"] != nlohmann::json(options.issuer)) {
    return UnauthenticatedError("token issuer \"" +
                                (claims.contains("iss") ? DumpJson(claims["iss"]) : "") +
                                "\" is not \"" + options.issuer + "\"");
  }
  bool audience_ok = false;
  if (claims.contains("aud")) {
    const nlohmann::json& aud = claims["aud"];
    if (aud.is_string()) audience_ok = aud.get<std::string>() == options.audience;
    if (aud.is_array()) {
      for (const auto& a : aud)
        audience_ok |= a.is_string() && a.get<std::string>() == options.audience;
    }
  }
  if (!audience_ok)
    return UnauthenticatedError("token audience does not include \"" + options.audience + "\"");
  ASSIGN_OR_RETURN(int64_t exp, NumericClaim(claims, "exp", /*required=*/true));
  if (now_seconds > exp + options.skew_seconds) {
    return UnauthenticatedError("token expired at " + FormatTimestamp(exp * 1000));
  }
  ASSIGN_OR_RETURN(int64_t nbf, NumericClaim(claims, "nbf", /*required=*/false));
  if (nbf >= 0 && now_seconds + options.skew_seconds < nbf) {
    return UnauthenticatedError("token not valid before " + FormatTimestamp(nbf * 1000));
  }
  return OkStatus();
}

// The user (the user claim, else sub) and the roles (an array, or a comma-separated string).
Result<Identity> IdentityOf(const nlohmann::json& claims, const JwtOptions& options) {
  Identity identity;
  for (const char* claim : {options.user_claim.c_str(), "sub"}) {
    const nlohmann::json* user = FindClaim(claims, claim);
    if (user != nullptr && user->is_string() && !user->get<std::string>().empty()) {
      identity.user = user->get<std::string>();
      break;
    }
  }
  if (identity.user.empty()) return UnauthenticatedError("token names no user (sub)");
  if (const nlohmann::json* roles = FindClaim(claims, options.roles_claim); roles != nullptr) {
    if (roles->is_array()) {
      for (const auto& role : *roles) {
        if (role.is_string()) identity.roles.push_back(role.get<std::string>());
      }
    } else if (roles->is_string()) {
      for (const auto& role : Split(roles->get<std::string>(), ',')) {
        if (!Trim(role).empty()) identity.roles.emplace_back(Trim(role));
      }
    }
  }
  return identity;
}

}  // namespace

Status JwtVerifier::VerifySignature(std::string_view token, const nlohmann::json& header) const {
  const size_t dot2 = token.rfind('.');
  std::string alg =
      header.contains("alg") && header["alg"].is_string() ? header["alg"].get<std::string>() : "";
  KeySet::Key::Type want;
  if (alg == "RS256") {
    want = KeySet::Key::Type::kRsa;
  } else if (alg == "ES256") {
    want = KeySet::Key::Type::kEc;
  } else {
    return UnauthenticatedError("token algorithm \"" + alg +
                                "\" refused: only RS256 and ES256 are accepted");
  }
  auto signature = Base64UrlDecode(token.substr(dot2 + 1));
  if (!signature.ok() || signature->empty()) {
    return UnauthenticatedError("malformed token: signature");
  }
  std::string der;
  if (want == KeySet::Key::Type::kEc) {
    ASSIGN_OR_RETURN(der, EcdsaRawToDer(*signature));
  } else {
    der = *signature;
  }
  std::string_view signed_part = token.substr(0, dot2);
  std::optional<std::string> kid;
  if (header.contains("kid") && header["kid"].is_string()) kid = header["kid"].get<std::string>();
  // Whether `keys` verifies the signature; `unknown` tells a key the set lacks from a bad
  // signature by a key it has.
  auto verify_with = [&](const KeySet& keys, bool* unknown) {
    std::vector<const KeySet::Key*> candidates;
    if (kid) {
      const KeySet::Key* key = keys.Find(*kid);
      if (key != nullptr) candidates.push_back(key);
    } else {
      candidates = keys.All();
    }
    for (const KeySet::Key* key : candidates) {
      if (key->type == want && VerifySha256(key->pkey, signed_part, der)) return true;
    }
    *unknown = kid ? candidates.empty() : true;  // without a kid any key may be new
    return false;
  };
  bool unknown = false;
  bool verified = verify_with(*Keys(), &unknown);
  if (!verified && unknown && Refresh()) verified = verify_with(*Keys(), &unknown);
  if (!verified && kid && unknown) {
    return UnauthenticatedError("token key id \"" + *kid + "\" is not in the JWKS");
  }
  if (!verified) return UnauthenticatedError("token signature does not verify");
  return OkStatus();
}

Result<Identity> JwtVerifier::Verify(std::string_view token) const {
  size_t dot1 = token.find('.');
  size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) {
    return UnauthenticatedError("malformed token: expected header.payload.signature");
  }
  ASSIGN_OR_RETURN(nlohmann::json header, DecodeJsonPart(token.substr(0, dot1), "header"));
  RETURN_IF_ERROR(VerifySignature(token, header));
  ASSIGN_OR_RETURN(nlohmann::json claims,
                   DecodeJsonPart(token.substr(dot1 + 1, dot2 - dot1 - 1), "payload"));
  RETURN_IF_ERROR(CheckClaims(claims, options_, clock_.NowMillis() / 1000));
  return IdentityOf(claims, options_);
}

}  // namespace gpupool::api
