#include "api/jwt.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <mutex>
#include <thread>

#include "api/auth.h"
#include "api/testing/token_minter.h"

namespace gpupool::api {
namespace jwt_test {

using Json = nlohmann::json;
using testing::SigningKey;

constexpr int64_t kNow = 1'800'000'000;  // seconds

class JwtTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    rsa_ = new SigningKey(SigningKey::Generate(SigningKey::Type::kRsa, "rsa-1"));
    ec_ = new SigningKey(SigningKey::Generate(SigningKey::Type::kEc, "ec-1"));
    other_ = new SigningKey(SigningKey::Generate(SigningKey::Type::kRsa, "rsa-1"));
  }
  static void TearDownTestSuite() {
    delete rsa_;
    delete ec_;
    delete other_;
  }

  JwtVerifier MakeVerifier(std::string roles_claim = "roles") {
    auto keys = KeySet::FromJwks(testing::JwksOf({rsa_, ec_}));
    EXPECT_TRUE(keys.ok()) << keys.status().ToString();
    JwtOptions options;
    options.issuer = "https://idp.example/realms/gpupool";
    options.audience = "gpupool";
    options.roles_claim = std::move(roles_claim);
    return JwtVerifier(options, std::move(*keys), clock_);
  }

  static Json Claims() {
    return Json{{"iss", "https://idp.example/realms/gpupool"},
                {"aud", "gpupool"},
                {"sub", "u-123"},
                {"preferred_username", "alice"},
                {"exp", kNow + 300},
                {"nbf", kNow - 10},
                {"roles", {"osmo-team-a", "osmo-user"}}};
  }

  FakeClock clock_{kNow * 1000};
  static inline SigningKey* rsa_ = nullptr;
  static inline SigningKey* ec_ = nullptr;
  static inline SigningKey* other_ = nullptr;
};

TEST_F(JwtTest, AcceptsRs256AndEs256) {
  JwtVerifier verifier = MakeVerifier();
  for (const SigningKey* key : {rsa_, ec_}) {
    SCOPED_TRACE(key->Alg());
    auto identity = verifier.Verify(key->Mint(Claims()));
    ASSERT_TRUE(identity.ok()) << identity.status().ToString();
    EXPECT_EQ(identity->user, "alice");
    EXPECT_EQ(identity->roles, (std::vector<std::string>{"osmo-team-a", "osmo-user"}));
  }
}

TEST_F(JwtTest, RefusesBadTokens) {
  JwtVerifier verifier = MakeVerifier();
  struct Case {
    std::string name;
    std::string token;
    std::string message;  // a substring of the error
  };
  auto with = [](const char* key, Json value) {
    Json claims = Claims();
    claims[key] = std::move(value);
    return claims;
  };
  Json no_kid_header = {{"alg", "RS256"}, {"typ", "JWT"}};
  std::string tampered = rsa_->Mint(Claims());
  tampered[tampered.find('.') + 3] ^= 1;
  std::vector<Case> cases = {
      {"expired beyond skew", rsa_->Mint(with("exp", kNow - 61)), "expired"},
      {"not yet valid beyond skew", rsa_->Mint(with("nbf", kNow + 61)), "not valid before"},
      {"wrong issuer", rsa_->Mint(with("iss", "https://evil.example")), "issuer"},
      {"wrong audience", rsa_->Mint(with("aud", "other-app")), "audience"},
      {"audience list without us", ec_->Mint(with("aud", Json::array({"a", "b"}))), "audience"},
      {"no exp", rsa_->Mint([] {
         Json c = Claims();
         c.erase("exp");
         return c;
       }()),
       "exp"},
      {"alg none", testing::MintAlgNone(Claims()), "\"none\" refused"},
      {"HS256 keyed with the public key", rsa_->MintHs256WithPublicKey(Claims()), "HS256"},
      {"signed by another key, same kid", other_->Mint(Claims()), "signature"},
      {"signed by another key, no kid", other_->MintWithHeader(no_kid_header, Claims()),
       "signature"},
      {"unknown kid", other_->MintWithHeader({{"alg", "RS256"}, {"kid", "zzz"}}, Claims()), "zzz"},
      {"RS256 header on an EC key",
       ec_->MintWithHeader({{"alg", "RS256"}, {"kid", "ec-1"}}, Claims()), "signature"},
      {"tampered payload", tampered, ""},
      {"two parts", "abc.def", "malformed"},
      {"garbage", "!!!.???.###", "malformed"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto identity = verifier.Verify(c.token);
    ASSERT_FALSE(identity.ok());
    EXPECT_EQ(identity.status().code(), StatusCode::kUnauthenticated);
    EXPECT_NE(identity.status().message().find(c.message), std::string::npos)
        << identity.status().message();
  }
}

TEST_F(JwtTest, SkewAllowsSixtySeconds) {
  JwtVerifier verifier = MakeVerifier();
  Json claims = Claims();
  claims["exp"] = kNow - 59;
  claims["nbf"] = kNow + 59;
  EXPECT_TRUE(verifier.Verify(rsa_->Mint(claims)).ok());
}

TEST_F(JwtTest, KeycloakRolesClaimPath) {
  JwtVerifier verifier = MakeVerifier("realm_access.roles");
  Json claims = Claims();
  claims.erase("roles");
  claims["realm_access"] = {{"roles", {"osmo-admin", "offline_access"}}};
  claims["aud"] = Json::array({"account", "gpupool"});
  auto identity = verifier.Verify(ec_->Mint(claims));
  ASSERT_TRUE(identity.ok()) << identity.status().ToString();
  EXPECT_EQ(identity->roles, (std::vector<std::string>{"osmo-admin", "offline_access"}));
}

TEST_F(JwtTest, UserFallsBackToSub) {
  JwtVerifier verifier = MakeVerifier();
  Json claims = Claims();
  claims.erase("preferred_username");
  auto identity = verifier.Verify(rsa_->Mint(claims));
  ASSERT_TRUE(identity.ok());
  EXPECT_EQ(identity->user, "u-123");
}

TEST_F(JwtTest, JwksErrors) {
  struct Case {
    std::string name;
    std::string jwks;
  };
  std::vector<Case> cases = {
      {"not json", "{"},
      {"no keys", R"({"x": 1})"},
      {"only symmetric keys", R"({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]})"},
      {"rsa without n", R"({"keys": [{"kty": "RSA", "e": "AQAB"}]})"},
      {"ec wrong curve", R"({"keys": [{"kty": "EC", "crv": "P-384", "x": "AA", "y": "AA"}]})"},
      // Members of another type are refused, not thrown on (found by fuzz/jwt_fuzz.cc: a JWKS
      // re-fetched from the identity provider is read on a request's thread).
      {"kty not a string", R"({"keys": [{"kty": false, "n": "sXch", "e": "AQAB"}]})"},
      {"crv not a string", R"({"keys": [{"kty": "EC", "crv": 256, "x": "AA", "y": "AA"}]})"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(KeySet::FromJwks(c.jwks).status().code(), StatusCode::kInvalidArgument);
  }
}

TEST_F(JwtTest, LoadsJwksFromLoopbackUrl) {
  httplib::Server idp;
  std::string jwks = testing::JwksOf({rsa_});
  idp.Get("/certs", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(jwks, "application/json");
  });
  int port = idp.bind_to_any_port("127.0.0.1");
  std::thread thread([&] { idp.listen_after_bind(); });
  auto keys = LoadKeySet("http://127.0.0.1:" + std::to_string(port) + "/certs");
  auto missing = LoadKeySet("http://127.0.0.1:" + std::to_string(port) + "/nope");
  idp.stop();
  thread.join();
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(keys->size(), 1u);
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
}

// Over 80 lines: one scenario whose steps build on each other, told in order.
TEST_F(JwtTest, RefetchesTheJwksOnUnknownKeyIdsRateLimitedAndWhenOld) {
  // An identity provider over loopback whose JWKS the test rotates.
  httplib::Server idp;
  std::mutex mu;
  std::string jwks = testing::JwksOf({rsa_});
  int fetches = 0;
  idp.Get("/certs", [&](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(mu);
    ++fetches;
    res.set_content(jwks, "application/json");
  });
  int port = idp.bind_to_any_port("127.0.0.1");
  std::thread thread([&] { idp.listen_after_bind(); });
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/certs";
  auto set_jwks = [&](std::vector<const SigningKey*> keys) {
    std::lock_guard lock(mu);
    jwks = testing::JwksOf(keys);
  };
  auto fetch_count = [&] {
    std::lock_guard lock(mu);
    return fetches;
  };

  auto keys = LoadKeySet(url);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  JwtOptions options;
  options.issuer = "https://idp.example/realms/gpupool";
  options.audience = "gpupool";
  JwtVerifier verifier(options, std::move(*keys), clock_,
                       JwksRefresh{.fetch = [&] { return LoadKeySet(url); },
                                   .min_interval_ms = 30'000,
                                   .max_age_ms = 600'000});
  SigningKey rotated = SigningKey::Generate(SigningKey::Type::kEc, "ec-rotated");
  SigningKey later = SigningKey::Generate(SigningKey::Type::kRsa, "rsa-later");
  Json claims = Claims();
  claims["exp"] = kNow + 86'400;  // the test moves the clock by minutes
  const std::string old_token = rsa_->Mint(claims);
  const std::string rotated_token = rotated.Mint(claims);
  const std::string later_token = later.Mint(claims);
  EXPECT_TRUE(verifier.Verify(old_token).ok());
  EXPECT_EQ(fetch_count(), 1);  // the start-up load only

  struct Case {
    std::string name;
    int64_t advance_ms;
    std::vector<const SigningKey*> jwks;  // served from now on
    const std::string* token;
    bool want_ok;
    int want_fetches;
  };
  std::vector<Case> cases = {
      // Within the rate limit of the start-up load: an unknown kid fetches nothing.
      {"unknown kid, too soon", 1'000, {rsa_, &rotated}, &rotated_token, false, 1},
      {"unknown kid after the interval re-fetches",
       30'000,
       {rsa_, &rotated},
       &rotated_token,
       true,
       2},
      {"known kid fetches nothing", 1'000, {rsa_, &rotated}, &old_token, true, 2},
      {"another new kid, rate-limited", 1'000, {rsa_, &rotated, &later}, &later_token, false, 2},
      {"garbage kids cannot force fetches",
       1'000,
       {rsa_, &rotated, &later},
       &later_token,
       false,
       2},
      {"after the interval it is found", 30'000, {rsa_, &rotated, &later}, &later_token, true, 3},
      // The provider drops the old key: accepted until the keys are max_age old, then refused.
      {"dropped key still cached", 1'000, {&rotated, &later}, &old_token, true, 3},
      {"keys older than max_age are re-fetched", 600'000, {&rotated, &later}, &old_token, false, 4},
      {"rotated key still good", 1'000, {&rotated, &later}, &rotated_token, true, 4},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    clock_.Advance(c.advance_ms);
    set_jwks(c.jwks);
    auto identity = verifier.Verify(*c.token);
    EXPECT_EQ(identity.ok(), c.want_ok) << identity.status().ToString();
    if (!identity.ok()) {
      EXPECT_NE(identity.status().message().find("is not in the JWKS"), std::string::npos)
          << identity.status().ToString();
    }
    EXPECT_EQ(fetch_count(), c.want_fetches);
  }
  // The provider is down: the last good keys stay in use.
  idp.stop();
  thread.join();
  clock_.Advance(600'000);
  EXPECT_TRUE(verifier.Verify(rotated_token).ok());
}

TEST(Base64UrlTest, RoundTrips) {
  for (std::string text : {"", "f", "fo", "foo", "foob", "fooba", "foobar", "\xff\xfe\x00"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(*Base64UrlDecode(Base64UrlEncode(text)), text);
  }
  EXPECT_EQ(Base64UrlEncode("\xfb\xff"), "-_8");
  EXPECT_FALSE(Base64UrlDecode("a+b").ok());
}

TEST(DevAuthTest, ParsesBearerDevTokens) {
  auto auth = MakeDevAuthenticator();
  struct Case {
    std::string name;
    std::string header;
    bool ok;
    std::string user;
    std::vector<std::string> roles;
  };
  std::vector<Case> cases = {
      {"user and roles",
       "Bearer dev:alice:osmo-admin,osmo-user",
       true,
       "alice",
       {"osmo-admin", "osmo-user"}},
      {"lower-case scheme", "bearer dev:bob:", true, "bob", {}},
      {"no roles part", "Bearer dev:carol", true, "carol", {}},
      {"missing header", "", false, "", {}},
      {"basic auth", "Basic YWxpY2U6cHc=", false, "", {}},
      {"not dev", "Bearer eyJhbGciOi", false, "", {}},
      {"empty user", "Bearer dev::osmo-admin", false, "", {}},
      {"invalid UTF-8 user", "Bearer dev:\xC0\xAFroot:osmo-admin", false, "", {}},
      {"UTF-8 user", "Bearer dev:zo\xC3\xAB:osmo-user", true, "zo\xC3\xAB", {"osmo-user"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto identity = auth->Authenticate(c.header);
    ASSERT_EQ(identity.ok(), c.ok) << identity.status().ToString();
    if (!c.ok) {
      EXPECT_EQ(identity.status().code(), StatusCode::kUnauthenticated);
      continue;
    }
    EXPECT_EQ(identity->user, c.user);
    EXPECT_EQ(identity->roles, c.roles);
  }
}

}  // namespace jwt_test
}  // namespace gpupool::api
