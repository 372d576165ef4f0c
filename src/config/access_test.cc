#include "config/access.h"

#include <gtest/gtest.h>

#include <random>

#include "config/test_util.h"

namespace gpupool::config {
namespace access_test {

using testing::ExpectError;
using testing::J;

TEST(NormalizeRequestPathTest, Table) {
  struct Case {
    std::string raw;
    std::string want;  // "" = refused
  };
  std::vector<Case> cases = {
      {"/api/pool/a/workflow", "/api/pool/a/workflow"},
      {"/api/pool/a/workflow?dry_run=true", "/api/pool/a/workflow"},
      {"/api/pool/a/workflow/", "/api/pool/a/workflow"},
      {"//api///pool//a/workflow", "/api/pool/a/workflow"},
      {"/api/./pool/a/./workflow", "/api/pool/a/workflow"},
      {"/api/pool/team-a/../other/workflow", "/api/pool/other/workflow"},
      {"/api/pool/team-a/%2e%2e/other/workflow", "/api/pool/other/workflow"},
      {"/api/pool/team-a/%2E%2E/other/workflow", "/api/pool/other/workflow"},
      {"/api/pool/team-a%2F..%2Fother/workflow", "/api/pool/other/workflow"},
      {"/api/pool/team-a%2f%2e%2e%2fother/workflow", "/api/pool/other/workflow"},
      {"/api/pool/team-a/.%2e/other/workflow", "/api/pool/other/workflow"},
      {"/api/pool/team%2Da/workflow", "/api/pool/team-a/workflow"},
      {"/", "/"},
      {"/api/..", "/"},
      {"/..", ""},
      {"/api/../../etc/passwd", ""},
      {"/api/pool/team-a/%252e%252e/other", ""},  // double encoding
      {"/api/pool/a%", ""},
      {"/api/pool/a%zz", ""},
      {"/api/pool/a\\..\\b", ""},
      {"/api/pool/a%00b", ""},
      {"/api/pool/a%0a", ""},
      {"api/pool/a", ""},
      {"", ""},
      // Decoded, '?' and '#' would read as a query or fragment the next time (found by
      // fuzz/access_fuzz.cc: the normal form must normalise to itself).
      {"/api/pool/a%3fb/workflow", ""},
      {"/api/pool/a%3F/../../configs", ""},
      {"/api/workflow/w%23x", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.raw);
    Result<std::string> got = NormalizeRequestPath(c.raw);
    if (c.want.empty()) {
      EXPECT_FALSE(got.ok()) << *got;
      if (!got.ok()) {
        EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
      }
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, c.want);
    Result<std::string> again = NormalizeRequestPath(*got);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(*again, *got);
  }
}

// The shortcut for paths that are already normal gives what full normalisation gives, on
// random paths built from the pieces that matter (separators, dots, encodings, a query).
TEST(NormalizeRequestPathTest, ShortcutAgreesWithFullNormalisation) {
  const std::vector<std::string> pieces = {"/", "/",  "a",      "pool", ".", "..",   "%2e",  "%2F",
                                           "%", "\\", "?x=/..", "#f",   "-", "\x01", "\x7f", "~"};
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::string path;
    for (int n = static_cast<int>(rng() % 7); n >= 0; --n) path += pieces[rng() % pieces.size()];
    SCOPED_TRACE(path);
    Result<std::string> fast = NormalizeRequestPath(path);
    Result<std::string> full = internal::NormalizeRequestPathFully(path);
    ASSERT_EQ(fast.ok(), full.ok());
    if (fast.ok()) {
      ASSERT_EQ(*fast, *full);
    }
  }
}

TEST(GlobMatchTest, FnmatchSemantics) {
  struct Case {
    std::string pattern, text;
    bool want;
  };
  std::vector<Case> cases = {
      {"*", "/anything/at/all", true},
      {"/api/pool/shared*", "/api/pool/shared_simulation_training_pool/workflow", true},
      {"/api/pool/shared*", "/api/pool/sharedx", true},
      {"/api/pool/shared*", "/api/pool/other", false},
      {"/api/profile/*", "/api/profile/settings", true},
      {"/api/profile/*", "/api/profile", false},
      {"/api/pool/?/workflow", "/api/pool/a/workflow", true},
      {"/api/pool/?/workflow", "/api/pool/ab/workflow", false},
      {"/api/pool/[ab]*", "/api/pool/b1", true},
      {"/api/pool/[!ab]*", "/api/pool/b1", false},
      {"/api/pool/[a-c]x", "/api/pool/bx", true},
      {"/api/pool/[a-c]x", "/api/pool/dx", false},
      {"/API/pool/*", "/api/pool/a", false},  // case-sensitive
      {"/a*b*c", "/aXXbYYc", true},
      {"/a*b*c", "/aXXbYY", false},
      {"/a[", "/a[", true},
      {"", "", true},
      {"", "/", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pattern + " ~ " + c.text);
    EXPECT_EQ(GlobMatch(c.pattern, c.text), c.want);
  }
}

TEST(MatchersTest, ActionsAndResources) {
  struct ActionCase {
    std::string pattern, action;
    bool want;
  };
  std::vector<ActionCase> actions = {
      {"workflow:Create", "workflow:Create", true},
      {"workflow:*", "workflow:Cancel", true},
      {"*:Create", "workflow:Create", true},
      {"*:*", "pool:List", true},
      {"*", "pool:List", true},
      {"*:*", "", true},
      {"workflow:*", "", false},
      {"workflow:Create", "workflow:Cancel", false},
      {"pool:*", "workflow:Create", false},
      {"*:List", "workflow:Create", false},
  };
  for (const ActionCase& c : actions) {
    SCOPED_TRACE(c.pattern + " ~ " + c.action);
    EXPECT_EQ(ActionMatches(c.pattern, c.action), c.want);
  }
  struct ResourceCase {
    std::string pattern, resource;
    bool want;
  };
  std::vector<ResourceCase> resources = {
      {"*", "pool/x", true},
      {"pool/x", "pool/x", true},
      {"pool/*", "pool/x", true},
      {"pool/*", "config/pool", false},
      {"pool/team*", "pool/team-gpu", true},
      {"pool/team*", "pool/myteam", false},
      {"pool/x", "pool/xy", false},
  };
  for (const ResourceCase& c : resources) {
    SCOPED_TRACE(c.pattern + " ~ " + c.resource);
    EXPECT_EQ(ResourceMatches(c.pattern, c.resource), c.want);
  }
}

TEST(ResolveActionTest, Routes) {
  struct Case {
    std::string method, path;
    std::string action, resource;
  };
  std::vector<Case> cases = {
      {"POST", "/api/pool/p1/workflow", "workflow:Create", "pool/p1"},
      {"post", "/api/pool/p1/workflow/wf-1/restart", "workflow:Create", "pool/p1"},
      {"GET", "/api/pool/p1/workflow", "", ""},
      {"GET", "/api/pool", "pool:List", ""},
      {"POST", "/api/queue/rnd-a/workflow", "workflow:Create", "queue/rnd-a"},
      {"POST", "/api/queue/rnd-a/workflow/x", "", ""},
      {"GET", "/api/queue/rnd-a/workflow", "", ""},
      {"GET", "/api/pool_quota", "pool:List", ""},
      {"GET", "/api/resources", "resources:Read", ""},
      {"GET", "/api/configs/POOL", "config:Read", "config/pool"},
      {"PUT", "/api/configs/pool/p1", "config:Update", "config/pool"},
      {"DELETE", "/api/configs/pool/p1", "", ""},
      {"GET", "/api/workflow", "workflow:List", ""},
      {"GET", "/api/workflow/wf-1", "workflow:Read", "pool/*"},
      {"POST", "/api/workflow/wf-1/cancel", "workflow:Cancel", "pool/*"},
      {"DELETE", "/api/workflow/wf-1", "workflow:Delete", "pool/*"},
      {"GET", "/api/profile/settings", "profile:Read", ""},
      {"POST", "/api/auth/login", "auth:Login", ""},
      {"GET", "/healthz", "system:Health", ""},
      {"GET", "/api/version", "system:Version", ""},
      {"GET", "/api/agent/x", "", ""},
      {"GET", "/api/views/overview", "pool:List", ""},
      {"GET", "/api/views/pools/p1", "pool:List", ""},
      {"GET", "/api/views/queues/q1", "pool:List", ""},
      {"GET", "/api/views/nodes", "resources:Read", ""},
      {"GET", "/api/views/machine-pools", "resources:Read", ""},
      {"GET", "/api/views/workflows", "workflow:List", ""},
      {"GET", "/api/views/workflows/wf-1", "workflow:Read", "pool/*"},
      {"POST", "/api/views/overview", "", ""},
      {"GET", "/api/views/unknown", "", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.method + " " + c.path);
    ResolvedAction got = ResolveAction(c.method, c.path);
    EXPECT_EQ(got.action, c.action);
    EXPECT_EQ(got.resource, c.resource);
  }
  EXPECT_EQ(ResolveAction("POST", "/api/workflow/wf-1/cancel", "team-a").resource, "pool/team-a");
}

ConfigSet RoleSet() {
  ConfigSet set = BuiltinConfigs();
  auto put = [&](const std::string& name, const char* body) {
    Status s = PutConfig(set, Kind::kRole, name, Json::parse(body));
    EXPECT_TRUE(s.ok()) << s.ToString();
  };
  // Seed 000's legacy role, verbatim.
  put("osmo-shared",
      R"({"name": "osmo-shared", "description": "Role for shared simulation training pool",
      "actions": [{"base": "http", "path": "/api/pool/shared_simulation_training_pool*", "method": "post"},
                  {"base": "http", "path": "http:/api/profile/*", "method": "*"}]})");
  set.roles["osmo-team"] = *GeneratePoolRole("osmo-team");
  set.roles["osmo-team-a"] = *GeneratePoolRole("osmo-team-a");
  put("osmo-ml", R"({"policies": [
      {"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/ml-*"]},
      {"effect": "Deny", "actions": ["workflow:Create"], "resources": ["pool/ml-prod"]}]})");
  // Seed 000's prose glob, written without the leading slash (stored with it).
  put("osmo-shared-glob", R"({"actions": [
      {"base": "http", "path": "api/pool/shared*", "method": "post"},
      {"base": "http", "path": "!api/pool/shared_secret*", "method": "post"}]})");
  put("legacy-deny", R"({"policies": [{"actions": [
      {"base": "http", "path": "/api/*", "method": "*"},
      {"base": "http", "path": "!/api/configs/*", "method": "*"}]}]})");
  return set;
}

TEST(CheckAccessTest, Seed001PrefixRule) {
  ConfigSet set = RoleSet();
  std::vector<std::string> roles = {"osmo-team"};
  struct Case {
    std::string pool;
    bool want;
  };
  // Seed 001: "Examples if <team_name> is team".
  std::vector<Case> cases = {
      {"teamcluster01", true},      {"team-cluster-02", true},  {"team-gpu-pool", true},
      {"myteam-cluster-01", false}, {"other-team-pool", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pool);
    EXPECT_EQ(PoolAllowed(roles, c.pool, set), c.want);
    EXPECT_EQ(CheckAccess(roles, "POST", "/api/pool/" + c.pool + "/workflow", set).ok(), c.want);
  }
}

// Over 80 lines only by its table of cases, one per row.
TEST(CheckAccessTest, Table) {
  ConfigSet set = RoleSet();
  struct Case {
    std::string name;
    std::vector<std::string> roles;
    std::string method, path;
    bool want;
  };
  std::vector<Case> cases = {
      // Deny by default.
      {"no roles", {}, "POST", "/api/pool/default/workflow", false},
      {"unknown role grants nothing", {"osmo-nobody"}, "POST", "/api/pool/x/workflow", false},
      {"osmo-default: health", {}, "GET", "/healthz", true},
      {"osmo-default: own profile", {}, "GET", "/api/profile", true},
      {"osmo-default: no pools", {}, "GET", "/api/pool", false},
      // Admin.
      {"admin anything", {"osmo-admin"}, "DELETE", "/api/configs/pool/x", true},
      {"admin unregistered route", {"osmo-admin"}, "GET", "/api/agent/x", true},
      // osmo-user.
      {"user lists pools", {"osmo-user"}, "GET", "/api/pool", true},
      {"user submits to default", {"osmo-user"}, "POST", "/api/pool/default/workflow", true},
      {"user cannot submit elsewhere", {"osmo-user"}, "POST", "/api/pool/team-a/workflow", false},
      {"user cannot update configs", {"osmo-user"}, "PUT", "/api/configs/pool/x", false},
      // Seed 000 legacy role.
      {"legacy post",
       {"osmo-shared"},
       "POST",
       "/api/pool/shared_simulation_training_pool/workflow",
       true},
      {"legacy method is case-insensitive",
       {"osmo-shared"},
       "Post",
       "/api/pool/shared_simulation_training_pool/workflow",
       true},
      {"legacy wrong method",
       {"osmo-shared"},
       "DELETE",
       "/api/pool/shared_simulation_training_pool/workflow",
       false},
      {"legacy http: prefix path", {"osmo-shared"}, "PUT", "/api/profile/settings", true},
      {"legacy other pool",
       {"osmo-shared"},
       "POST",
       "/api/pool/heterogeneous_pool/workflow",
       false},
      {"legacy traversal",
       {"osmo-shared"},
       "POST",
       "/api/pool/shared_simulation_training_pool/../heterogeneous_pool/workflow",
       false},
      {"legacy encoded traversal",
       {"osmo-shared"},
       "POST",
       "/api/pool/shared_simulation_training_pool/%2e%2e/heterogeneous_pool/workflow",
       false},
      {"legacy deny path", {"legacy-deny"}, "PUT", "/api/configs/pool/x", false},
      {"glob without leading slash",
       {"osmo-shared-glob"},
       "POST",
       "/api/pool/shared_a/workflow",
       true},
      {"glob without leading slash, denied",
       {"osmo-shared-glob"},
       "POST",
       "/api/pool/shared_secret/workflow",
       false},
      {"glob without leading slash, other pool",
       {"osmo-shared-glob"},
       "POST",
       "/api/pool/team/workflow",
       false},
      {"legacy allow path", {"legacy-deny"}, "GET", "/api/workflow", true},
      // Generated pool roles and traversal.
      {"team-a own pool", {"osmo-team-a"}, "POST", "/api/pool/team-a/workflow", true},
      {"team-a prefix pool", {"osmo-team-a"}, "POST", "/api/pool/team-a-gpu/workflow", true},
      {"team-a traversal", {"osmo-team-a"}, "POST", "/api/pool/team-a/../other/workflow", false},
      {"team-a encoded dots",
       {"osmo-team-a"},
       "POST",
       "/api/pool/team-a/%2e%2e/other/workflow",
       false},
      {"team-a encoded slash",
       {"osmo-team-a"},
       "POST",
       "/api/pool/team-a%2F..%2Fother/workflow",
       false},
      {"team-a double slash", {"osmo-team-a"}, "POST", "/api/pool//team-a/workflow", true},
      {"team-a query string", {"osmo-team-a"}, "POST", "/api/pool/team-a/workflow?x=/../b", true},
      {"team-a other pool", {"osmo-team-a"}, "POST", "/api/pool/team-b/workflow", false},
      {"team-a cancel own workflow needs its pool",
       {"osmo-team-a"},
       "POST",
       "/api/workflow/wf-1/cancel",
       false},
      // Deny wins across roles.
      {"ml allowed", {"osmo-ml"}, "POST", "/api/pool/ml-dev/workflow", true},
      {"ml deny", {"osmo-ml"}, "POST", "/api/pool/ml-prod/workflow", false},
      {"ml deny beats another role's allow",
       {"osmo-ml", "osmo-team"},
       "POST",
       "/api/pool/ml-prod/workflow",
       false},
      {"several roles: any allows",
       {"osmo-team", "osmo-ml"},
       "POST",
       "/api/pool/team-x/workflow",
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Status s = CheckAccess(c.roles, c.method, c.path, set);
    EXPECT_EQ(s.ok(), c.want) << s.ToString();
    if (!c.want && !s.ok() && s.code() != StatusCode::kInvalidArgument) {
      EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
    }
  }
  // Workflow routes use the workflow's pool when the caller knows it.
  AccessRequest cancel{"POST", "/api/workflow/wf-1/cancel", std::string("team-a")};
  EXPECT_TRUE(CheckAccess({"osmo-team-a"}, cancel, set).ok());
  cancel.workflow_pool = "team-b";
  EXPECT_FALSE(CheckAccess({"osmo-team-a"}, cancel, set).ok());
}

TEST(CheckAccessTest, MessagesNameTheRoles) {
  ConfigSet set = RoleSet();
  Status s = CheckAccess({"osmo-team"}, "post", "/api/pool/other/workflow", set);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(),
            "POST /api/pool/other/workflow is not allowed for roles osmo-team, osmo-default");
  s = CheckAccess({"osmo-ml"}, "POST", "/api/pool/ml-prod/workflow", set);
  EXPECT_EQ(s.message(),
            "POST /api/pool/ml-prod/workflow is denied for roles osmo-ml, osmo-default");
  ExpectError(CheckAccess({"osmo-admin"}, "GET", "/../etc/passwd", set), {"escapes the root"});
}

TEST(CheckAccessTest, AllowedPools) {
  ConfigSet set = RoleSet();
  for (const char* name : {"team-a", "team-b", "myteam", "ml-prod", "ml-dev"}) {
    ASSERT_TRUE(PutConfig(set, Kind::kPool, name, J(R"({"backend": "b"})")).ok());
  }
  EXPECT_EQ(AllowedPools({"osmo-team"}, set), (std::vector<std::string>{"team-a", "team-b"}));
  EXPECT_EQ(AllowedPools({"osmo-ml"}, set), std::vector<std::string>{"ml-dev"});
  EXPECT_EQ(AllowedPools({"osmo-user"}, set), std::vector<std::string>{"default"});
  EXPECT_EQ(AllowedPools({"osmo-admin"}, set).size(), set.pools.size());
  EXPECT_TRUE(AllowedPools({}, set).empty());
}

}  // namespace access_test
}  // namespace gpupool::config
