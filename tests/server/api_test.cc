// End-to-end tests of the REST API over loopback with a real HTTP client (client::Client on
// cpp-httplib): every route, the 400/401/403/404/409 cases, seed 001's prefix rule, path
// traversal (plain and percent-encoded), and OIDC tokens (expired, wrong issuer, wrong audience,
// alg none, another key). The server is the real stack in-process: SQLite store, service,
// access control, HTTP server, the what-if of `gpupool serve` (api/what_if.h).

#include "api/api.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "api/access_control.h"
#include "api/http_server.h"
#include "api/testing/token_minter.h"
#include "api/what_if.h"
#include "client/client.h"
#include "metrics/store_metrics.h"
#include "service/service.h"
#include "store/store.h"
#include "test_server.h"

namespace gpupool::api {
namespace api_test {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr char kQuickWorkflow[] = R"(workflow:
  name: quick
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi}
  tasks:
  - {name: hello, image: "ubuntu:24.04", command: [echo, hello], sim_duration: 30s}
)";

constexpr char kNodesYaml[] = R"(apiVersion: v1
kind: NodeList
items:
- apiVersion: v1
  kind: Node
  metadata: {name: cpu-0, labels: {kubernetes.io/hostname: cpu-0}}
  status:
    allocatable: {cpu: "8", memory: 64Gi, ephemeral-storage: 200Gi, pods: "110"}
    capacity: {cpu: "8", memory: 64Gi, ephemeral-storage: 200Gi, pods: "110"}
)";

const char kAdmin[] = "dev:root:osmo-admin";
const char kTeam[] = "dev:tina:osmo-team";
const char kNobody[] = "dev:nobody:";

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TestServer>(MakeDevAuthenticator(), clock_);
    client::Client admin = server_->As(kAdmin);
    ASSERT_TRUE(admin.ImportNodes(kNodesYaml).ok());
    auto pool = admin.ShowConfig("POOL", "default");
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    default_pool_ = (*pool)["body"];
  }

  // Creates pool `name` as a copy of the built-in default pool.
  void CreatePool(const std::string& name) {
    auto result = server_->As(kAdmin).UpdateConfig("POOL", name, default_pool_);
    ASSERT_TRUE(result.ok()) << name << ": " << result.status().ToString();
  }

  // Raw request for the cases the typed client cannot express.
  httplib::Result Raw(const std::string& method, const std::string& path, const std::string& token,
                      const std::string& body = "", const std::string& type = "application/json") {
    httplib::Client http("127.0.0.1", std::stoi(server_->url().substr(17)));
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    if (method == "GET") return http.Get(path.c_str(), headers);
    if (method == "PUT") return http.Put(path.c_str(), headers, body, type.c_str());
    if (method == "DELETE") return http.Delete(path.c_str(), headers);
    return http.Post(path.c_str(), headers, body, type.c_str());
  }

  SystemClock clock_;
  std::unique_ptr<TestServer> server_;
  Json default_pool_;
};

TEST_F(ApiTest, HealthReadinessAndMetricsArePublic) {
  auto health = Raw("GET", "/healthz", "");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(Raw("GET", "/readyz", "")->status, 200);
  ASSERT_TRUE(server_->As(kAdmin).ListPools().ok());
  auto metrics = Raw("GET", "/metrics", "");
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("gpupool_http_requests_total{route=\"/api/pool\",method=\"GET\","
                               "code=\"200\"}"),
            std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("gpupool_http_request_duration_seconds_bucket"), std::string::npos);
}

// The value of one series in a Prometheus text page ("name{labels} value"), -1 when absent.
double MetricValue(const std::string& page, const std::string& series) {
  size_t at = page.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(page.substr(at + series.size() + 2));
}

TEST_F(ApiTest, MetricsShowStoreTransactionsAndGroupCommits) {
  client::Client admin = server_->As(kAdmin);
  auto metrics = [&] {
    auto page = Raw("GET", "/metrics", "");
    EXPECT_TRUE(page && page->status == 200);
    return page ? page->body : std::string();
  };
  const std::string before = metrics();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(admin.SubmitWorkflow("default", kQuickWorkflow, {}, false).ok());
  }
  const std::string after = metrics();
  auto added = [&](const std::string& series) {
    return MetricValue(after, series) - std::max(0.0, MetricValue(before, series));
  };
  const std::string writes =
      "gpupool_store_transaction_seconds_count{kind=\"write\",outcome=\"ok\"}";
  EXPECT_GE(added(writes), 3) << after;
  EXPECT_GT(
      MetricValue(after, "gpupool_store_transaction_seconds_sum{kind=\"write\",outcome=\"ok\"}"),
      0);
  EXPECT_GE(
      MetricValue(after, "gpupool_store_transaction_seconds_count{kind=\"read\",outcome=\"ok\"}"),
      1);
  // Three submissions, one after another: three group commits of one write each (the create
  // with its audit record).
  EXPECT_EQ(added("gpupool_store_group_commit_writes_count"), 3) << after;
  EXPECT_EQ(added("gpupool_store_group_commit_writes_sum"), 3);
  EXPECT_EQ(added("gpupool_store_group_commit_writes_bucket{le=\"1\"}"), 3);
  EXPECT_EQ(added("gpupool_store_group_commit_wait_seconds_count"), 3);
}

TEST_F(ApiTest, ConfigRoutesWithRevisionsHistoryRollbackAndConflicts) {
  client::Client admin = server_->As(kAdmin);
  CreatePool("team-a");
  auto shown = admin.ShowConfig("POOL", "team-a");
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ((*shown)["revision"], 1);
  // Optimistic lock: the client read revision 1; a write expecting 0 ("must not exist") is 409.
  Json changed = default_pool_;
  changed["description"] = "changed";
  auto conflict = admin.UpdateConfig("POOL", "team-a", changed, "", 0);
  EXPECT_EQ(conflict.status().code(), StatusCode::kAborted) << conflict.status().ToString();
  auto stale = Raw("PUT", "/api/configs/POOL/team-a", kAdmin, changed.dump());
  EXPECT_EQ(stale->status, 200);  // no expectation: last writer wins
  auto with_if_match = [&](const std::string& revision) {
    httplib::Client http("127.0.0.1", std::stoi(server_->url().substr(17)));
    return http.Put("/api/configs/POOL/team-a",
                    {{"Authorization", std::string("Bearer ") + kAdmin}, {"If-Match", revision}},
                    changed.dump(), "application/json");
  };
  EXPECT_EQ(with_if_match("1")->status, 409);
  EXPECT_EQ(with_if_match("2")->status, 200);
  auto listed = admin.ListConfigs("POOL");
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ((*listed)["configs"].size(), 2u);  // default, team-a
  EXPECT_TRUE(admin.ListConfigs(std::nullopt).ok());
  auto history = admin.History("POOL", "team-a", 10);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ((*history)["history"].size(), 3u);
  auto rollback = admin.Rollback("POOL", "team-a", 1);
  ASSERT_TRUE(rollback.ok()) << rollback.status().ToString();
  EXPECT_EQ((*admin.ShowConfig("POOL", "team-a"))["revision"], 4);
  EXPECT_EQ((*admin.ShowConfig("POOL", "team-a", 2))["body"]["description"], "changed");
  EXPECT_TRUE(admin.DeleteConfig("POOL", "team-a", false).ok());
  EXPECT_EQ(admin.ShowConfig("POOL", "team-a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(admin.DeleteConfig("POOL", "team-a", false).status().code(), StatusCode::kNotFound);
  // Bulk PUT (OSMO's {"configs": {...}}).
  Json bulk = {{"configs", {{"bulk-1", default_pool_}, {"bulk-2", default_pool_}}}};
  auto put = Raw("PUT", "/api/configs/POOL", kAdmin, bulk.dump());
  EXPECT_EQ(put->status, 200) << put->body;
  EXPECT_TRUE(admin.ShowConfig("POOL", "bulk-2").ok());
}

TEST_F(ApiTest, ConfigMergePatchWithIfMatch) {
  CreatePool("team-p");
  auto patch = [&](const std::string& body, const std::string& if_match = "",
                   const std::string& name = "team-p") {
    httplib::Client http("127.0.0.1", std::stoi(server_->url().substr(17)));
    httplib::Headers headers{{"Authorization", std::string("Bearer ") + kAdmin}};
    if (!if_match.empty()) headers.emplace("If-Match", if_match);
    return http.Patch(("/api/configs/POOL/" + name).c_str(), headers, body,
                      "application/merge-patch+json");
  };
  struct Case {
    std::string name;
    std::string body;
    std::string if_match;
    int want_status;
  };
  // Applied in order: each case sees the effect of the previous ones.
  std::vector<Case> cases = {
      {"sets a field", R"({"description": "patched"})", "", 200},
      {"stale If-Match", R"({"description": "lost"})", "1", 409},
      {"current If-Match", R"({"enable_maintenance": true})", "2", 200},
      {"null removes a field", R"({"enable_maintenance": null})", "", 200},
      {"not an object", R"(["description"])", "", 400},
      {"invalid result is refused", R"({"no_such_field": 1})", "", 400},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto res = patch(c.body, c.if_match);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, c.want_status) << res->body;
  }
  EXPECT_EQ(patch(R"({"description": "x"})", "", "no-such-pool")->status, 404);
  auto shown = server_->As(kAdmin).ShowConfig("POOL", "team-p");
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ((*shown)["revision"], 4);  // create + three accepted patches
  const Json& body = (*shown)["body"];
  EXPECT_EQ(body["description"], "patched");
  EXPECT_FALSE(body.contains("enable_maintenance"));
  EXPECT_FALSE(body.contains("no_such_field"));
  // Everything else is the default pool's, in the same order.
  Json expected = default_pool_;
  expected["description"] = "patched";
  expected.erase("enable_maintenance");
  EXPECT_EQ(body.dump(), expected.dump());
}

TEST_F(ApiTest, BadInputIs400WithTheFieldPathNever500) {
  struct Case {
    std::string name;
    std::string method;
    std::string path;
    std::string body;
    std::string type;
    int status;
    std::string body_has;
  };
  Json unknown_field = default_pool_;
  unknown_field["descriptoin"] = "typo";
  Json wrong_type = default_pool_;
  wrong_type["enable_maintenance"] = "yes";
  std::vector<Case> cases = {
      {"malformed JSON names line and column", "PUT", "/api/configs/POOL/p",
       "{\n  \"backend\": \"default\",\n  \"platforms\": {,}\n}", "application/json", 400,
       "request body:3:"},
      {"malformed YAML", "PUT", "/api/configs/POOL/p", "backend: [default\n", "application/yaml",
       400, "request body:"},
      {"unknown field with did-you-mean", "PUT", "/api/configs/POOL/p", unknown_field.dump(),
       "application/json", 400, "descriptoin"},
      {"wrong type names the field", "PUT", "/api/configs/POOL/p", wrong_type.dump(),
       "application/json", 400, "enable_maintenance"},
      {"unknown kind", "GET", "/api/configs/POOLS/p", "", "", 400, "POOL"},
      {"bad revision query", "GET", "/api/configs/POOL/default?revision=abc", "", "", 400,
       "revision"},
      {"rollback body wrong type", "POST", "/api/configs/history/rollback",
       R"({"kind": "POOL", "name": "default", "revision": "1"})", "application/json", 400,
       "revision"},
      {"rollback body missing field", "POST", "/api/configs/history/rollback",
       R"({"kind": "POOL"})", "application/json", 400, "name"},
      {"workflow YAML malformed", "POST", "/api/pool/default/workflow", "workflow: [\n",
       "application/yaml", 400, "request body"},
      {"workflow set without =", "POST", "/api/pool/default/workflow?set=oops", kQuickWorkflow,
       "application/yaml", 400, "key=value"},
      {"submit JSON wrong type", "POST", "/api/pool/default/workflow", R"({"file": 3})",
       "application/json", 400, "file"},
      {"nodes malformed", "PUT", "/api/nodes", "{\"kind\": ", "application/json", 400,
       "request body"},
      {"empty body", "PUT", "/api/configs/POOL/p", "", "application/json", 400, "empty"},
      {"body over the limit", "PUT", "/api/configs/POOL/p", std::string(70 * 1024, ' '),
       "application/json", 400, "exceeds the limit"},
      {"what-if garbage", "POST", "/api/schedule", "hello", "application/yaml", 400,
       "request body:1: expected an object with"},
      {"unknown route", "GET", "/api/nothing/here", "", "", 404, "no route"},
      {"unknown workflow", "GET", "/api/workflow/nope-1", "", "", 404, "nope-1"},
      {"unknown pool for submit", "POST", "/api/pool/nope/workflow", kQuickWorkflow,
       "application/yaml", 404, "nope"},
      {"unknown pool for resources", "GET", "/api/resources?pool=nope", "", "", 404, "nope"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto res = Raw(c.method, c.path, kAdmin, c.body, c.type);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, c.status) << res->body;
    EXPECT_NE(res->body.find(c.body_has), std::string::npos) << res->body;
  }
}

// Bodies nested too deep, which once overflowed the stack of the thread that parsed them (a
// workflow of 100,000 `[` from any user killed the server), are refused with their position at
// the server's own body limit; the server keeps serving and writes nothing.
TEST_F(ApiTest, DeepBodiesAreRefusedAndTheServerKeepsServing) {
  TestServer server(MakeDevAuthenticator(), clock_, kDefaultMaxInputBytes);
  const std::string user = "dev:ursula:osmo-user";
  auto repeat = [](std::string_view piece, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += piece;
    return out;
  };
  const std::string deep = repeat("[", 100000) + repeat("]", 100000);
  const std::string too_deep = "nested deeper than 512 levels of arrays and objects";
  struct Case {
    std::string name;
    std::string token;
    std::string method;
    std::string path;
    std::string body;
    std::string type;
    std::string error;  // the start of the error message
  };
  const std::vector<Case> cases = {
      {"workflow, JSON", user, "POST", "/api/pool/default/workflow", deep, "application/json",
       "request body:1:513: " + too_deep},
      {"workflow, YAML", user, "POST", "/api/pool/default/workflow",
       "workflow:\n" + repeat("- ", 100000) + "x\n", "application/yaml",
       "request body:2:1023: " + too_deep},
      {"workflow, YAML flow", user, "POST", "/api/pool/default/workflow",
       "workflow: " + repeat("[", 100000) + repeat("]", 100000) + "\n", "application/yaml",
       "request body:1:522: " + too_deep},
      {"workflow, OSMO's JSON envelope", user, "POST", "/api/pool/default/workflow",
       "{\"file\": " + deep + "}", "application/json", "request body:1:521: " + too_deep},
      {"workflow, a number out of range", user, "POST", "/api/pool/default/workflow",
       "workflow:\n  name: a\n  timeout: {exec_timeout: 1e400}\n", "application/yaml",
       "request body:3:27: number out of range"},
      {"pod template", kAdmin, "PUT", "/api/configs/POD_TEMPLATE/t",
       "{\"spec\": " + repeat("{\"a\": ", 20000) + "1" + repeat("}", 20000) + "}",
       "application/json", "request body:1:3076: " + too_deep},
      {"nodes", kAdmin, "PUT", "/api/nodes", deep, "application/json",
       "request body:1:513: " + too_deep},
      {"apply", kAdmin, "POST", "/api/apply", deep, "application/yaml",
       "request body:1:513: " + too_deep},
      {"what-if", kAdmin, "POST", "/api/schedule", deep, "application/yaml",
       "request body:1:513: " + too_deep},
  };
  httplib::Client http("127.0.0.1", std::stoi(server.url().substr(17)));
  auto history = [&] {
    return http.Get("/api/configs/history", {{"Authorization", "Bearer " + std::string(kAdmin)}});
  };
  auto before = history();
  ASSERT_TRUE(before);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    httplib::Headers headers = {{"Authorization", "Bearer " + c.token}};
    auto res = c.method == "PUT" ? http.Put(c.path.c_str(), headers, c.body, c.type.c_str())
                                 : http.Post(c.path.c_str(), headers, c.body, c.type.c_str());
    ASSERT_TRUE(res) << "no answer: the server died";
    EXPECT_EQ(res->status, 400) << res->body.substr(0, 300);
    EXPECT_NE(res->body.find(c.error), std::string::npos) << res->body.substr(0, 300);
    auto health = http.Get("/healthz");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
  }
  auto after = history();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->body, before->body);
  auto workflows = server.As(kAdmin).ListWorkflows("default", std::nullopt, std::nullopt, 10);
  ASSERT_TRUE(workflows.ok()) << workflows.status().ToString();
  EXPECT_EQ(workflows->dump().find("\"id\""), std::string::npos) << workflows->dump();
}

// PUT /api/configs: errors give the line and column of the field in the body, which the `file`
// parameter (the CLI's file name) names; a merge patch's refer to the merged body: no line.
TEST_F(ApiTest, ConfigUpdateErrorsNameTheFileAndTheFieldsLine) {
  struct Case {
    std::string name;
    std::string method;
    std::string path;
    std::string body;
    std::string type;
    std::string message;  // the start of the error message
  };
  const std::string long_name(1025, 'a');
  std::vector<Case> cases = {
      {"object form, named by the file parameter", "PUT", "/api/configs/POOL/p?file=pool.json",
       "{\n  \"backend\": \"default\",\n  \"descriptoin\": \"typo\"\n}\n", "application/json",
       "pool.json:3:3: pool \"p\": descriptoin: unknown field (did you mean \"description\"?)"},
      {"OSMO's bulk shape, without a file parameter", "PUT", "/api/configs/POOL",
       "{\"configs\": {\n  \"p\": {\"backend\": \"default\", \"platfroms\": {}}\n}}\n",
       "application/json",
       "request body:2:31: pool \"p\": platfroms: unknown field (did you mean \"platforms\"?)"},
      {"YAML", "PUT", "/api/configs/POOL/p?file=pools%2Fp.yaml",
       "backend: default\nplatforms:\n  a:\n    descripton: x\n", "application/yaml",
       "pools/p.yaml:4:5: pool \"p\": platforms.a.descripton: unknown field (did you mean "
       "\"description\"?)"},
      {"a syntax error names the file", "PUT", "/api/configs/POOL/p?file=pool.json",
       "{\n  \"backend\": \"default\",,\n}\n", "application/json", "pool.json:2:24: syntax error"},
      {"merge patch", "PATCH", "/api/configs/POOL/default?file=patch.json",
       "{\n  \"descripton\": \"x\"\n}\n", "application/json",
       "merge patch: pool \"default\": unknown field descripton"},
      {"file parameter on two lines", "PUT", "/api/configs/POOL/p?file=a%0Ab", "{}",
       "application/json", "file: expected a file name of printable characters"},
      {"file parameter not UTF-8 (refused with every query parameter)", "PUT",
       "/api/configs/POOL/p?file=a%C0%AF", "{}", "application/json",
       "query parameter \"file\": not valid UTF-8 (byte 0xc0 at column 2)"},
      {"file parameter too long", "PUT", "/api/configs/POOL/p?file=" + long_name, "{}",
       "application/json", "file: expected a file name of printable characters (at most 1024"},
  };
  httplib::Client http("127.0.0.1", std::stoi(server_->url().substr(17)));
  const httplib::Headers headers = {{"Authorization", std::string("Bearer ") + kAdmin}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto res = c.method == "PATCH" ? http.Patch(c.path.c_str(), headers, c.body, c.type.c_str())
                                   : http.Put(c.path.c_str(), headers, c.body, c.type.c_str());
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << res->body;
    Json error = Json::parse(res->body, nullptr, false);
    ASSERT_TRUE(error.is_object()) << res->body;
    EXPECT_EQ(error.value("message", "").substr(0, c.message.size()), c.message) << res->body;
  }
  EXPECT_EQ(server_->As(kAdmin).ShowConfig("POOL", "p").status().code(), StatusCode::kNotFound);
}

TEST_F(ApiTest, IdempotencyKeysAreCheckedAndReplayTheFirstSubmission) {
  httplib::Client http("127.0.0.1", std::stoi(server_->url().substr(17)));
  auto submit = [&](const std::string& key) {
    httplib::Headers headers = {{"Authorization", std::string("Bearer ") + kAdmin},
                                {"Idempotency-Key", key}};
    return http.Post("/api/pool/default/workflow", headers, kQuickWorkflow, "application/yaml");
  };
  struct Case {
    std::string name;
    std::string key;
    std::string body_has;
  };
  const std::vector<Case> refused = {
      {"too long", std::string(256, 'k'), "longer than 255"},
      {"a space", "two words", "printable ASCII"},
      {"not ASCII", "key-\xC3\xA9", "printable ASCII"},
      {"not UTF-8 (refused with every header)", "key-\xC0\xAF",
       "header Idempotency-Key: not valid UTF-8"},
  };
  for (const auto& c : refused) {
    SCOPED_TRACE(c.name);
    auto res = submit(c.key);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << res->body;
    EXPECT_NE(res->body.find(c.body_has), std::string::npos) << res->body;
  }
  auto first = submit(std::string(255, 'k'));
  auto again = submit(std::string(255, 'k'));
  ASSERT_TRUE(first && again);
  ASSERT_EQ(first->status, 200) << first->body;
  ASSERT_EQ(again->status, 200) << again->body;
  EXPECT_EQ(Json::parse(first->body)["workflow_id"], Json::parse(again->body)["workflow_id"]);
}

TEST_F(ApiTest, OneAuditRecordPerSubmission) {
  client::Client admin = server_->As(kAdmin);
  auto submitted =
      Raw("POST", "/api/pool/default/workflow", kAdmin, kQuickWorkflow, "application/yaml");
  ASSERT_TRUE(submitted);
  ASSERT_EQ(submitted->status, 200) << submitted->body;
  std::string id = Json::parse(submitted->body)["workflow_id"];
  auto dry = Raw("POST", "/api/pool/default/workflow?dry_run=true", kAdmin, kQuickWorkflow,
                 "application/yaml");
  ASSERT_EQ(dry->status, 200);
  auto refused = Raw("POST", "/api/pool/nope/workflow", kAdmin, kQuickWorkflow, "application/yaml");
  ASSERT_EQ(refused->status, 404);
  auto audit = admin.Call("GET", "/api/audit?limit=100");
  ASSERT_TRUE(audit.ok());
  int submits = 0, hook_records = 0;
  for (const auto& record : (*audit)["audit"]) {
    if (record["action"] == "workflow submit") {
      ++submits;
      EXPECT_EQ(record["target"], id);  // written in the workflow's own transaction
      EXPECT_EQ(record["user"], "root");
      EXPECT_EQ(record["source"], "127.0.0.1");
    }
    if (record["action"] == "POST /api/pool/{pool}/workflow") ++hook_records;
  }
  EXPECT_EQ(submits, 1) << (*audit).dump();
  // The HTTP hook records what the service did not: the dry run and the refused submission.
  EXPECT_EQ(hook_records, 2) << (*audit).dump();
}

TEST_F(ApiTest, AuthenticationAndConfigWritesNeedAdmin) {
  EXPECT_EQ(Raw("GET", "/api/pool", "")->status, 401);
  EXPECT_EQ(Raw("GET", "/api/pool", "not-a-dev-token")->status, 401);
  auto basic = httplib::Client("127.0.0.1", std::stoi(server_->url().substr(17)))
                   .Get("/api/pool", {{"Authorization", "Basic cm9vdDpyb290"}});
  EXPECT_EQ(basic->status, 401);
  // osmo-default gives nothing beyond health: no role, no pool list.
  EXPECT_EQ(server_->As(kNobody).ListPools().status().code(), StatusCode::kPermissionDenied);
  // Config writes need osmo-admin.
  client::Client team = server_->As(kTeam);
  ASSERT_TRUE(server_->As(kAdmin).SetPoolRole("osmo-team").ok());
  auto write = team.UpdateConfig("POOL", "team-x", default_pool_);
  EXPECT_EQ(write.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(write.status().message().find("tina"), std::string::npos);
  EXPECT_EQ(team.DeleteConfig("POOL", "default", false).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(team.Rollback("POOL", "default", 1).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(Raw("GET", "/api/audit", kTeam)->status, 403);
}

TEST_F(ApiTest, Seed001PrefixRuleAndTraversal) {
  client::Client admin = server_->As(kAdmin);
  ASSERT_TRUE(admin.SetPoolRole("osmo-team").ok());
  for (const char* pool : {"teamcluster01", "team-cluster-02", "team-gpu-pool", "myteam-cluster-01",
                           "other-team-pool"}) {
    CreatePool(pool);
  }
  struct Case {
    std::string name;
    std::string path;
    int status;
  };
  std::vector<Case> cases = {
      {"teamcluster01", "/api/pool/teamcluster01/workflow?dry_run=true", 200},
      {"team-cluster-02", "/api/pool/team-cluster-02/workflow?dry_run=true", 200},
      {"team-gpu-pool", "/api/pool/team-gpu-pool/workflow?dry_run=true", 200},
      {"myteam-cluster-01", "/api/pool/myteam-cluster-01/workflow?dry_run=true", 403},
      {"other-team-pool", "/api/pool/other-team-pool/workflow?dry_run=true", 403},
      {"traversal", "/api/pool/team-gpu-pool/../other-team-pool/workflow?dry_run=true", 403},
      {"encoded traversal", "/api/pool/team-gpu-pool%2F..%2Fother-team-pool/workflow?dry_run=true",
       403},
      {"encoded dots", "/api/pool/team-gpu-pool/%2e%2e/other-team-pool/workflow?dry_run=true", 403},
      {"double encoded", "/api/pool/team-gpu-pool%252F..%252Fother-team-pool/workflow", 400},
      {"escaping the root", "/api/pool/../../../api/pool/other-team-pool/workflow", 400},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto res = Raw("POST", c.path, kTeam, kQuickWorkflow, "application/yaml");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, c.status) << res->body;
  }
  // The admin may use them all.
  EXPECT_EQ(Raw("POST", "/api/pool/other-team-pool/workflow?dry_run=true", kAdmin, kQuickWorkflow,
                "application/yaml")
                ->status,
            200);
}

// A submission's access to its pool is decided once, by the service (the HTTP layer only
// authenticates it): the same refusal, status and message as the offline CLI's.
TEST_F(ApiTest, SubmissionAccessIsTheServicesOneDecision) {
  ASSERT_TRUE(server_->As(kAdmin).SetPoolRole("osmo-team").ok());
  CreatePool("team-a");
  const std::string denied =
      "access denied: user \"tina\" with roles osmo-team may not submit to pool \"default\": "
      "POST /api/pool/default/workflow is not allowed for roles osmo-team, osmo-default";
  struct Case {
    std::string name;
    std::string token;
    std::string path;
    std::string body;
    int status;
    std::string message;  // "" = not checked
  };
  const std::vector<Case> cases = {
      {"no role for the pool", kTeam, "/api/pool/default/workflow", kQuickWorkflow, 403, denied},
      {"dry run too", kTeam, "/api/pool/default/workflow?dry_run=true", kQuickWorkflow, 403,
       denied},
      {"refused before the workflow is read", kTeam, "/api/pool/default/workflow",
       "not: [a workflow", 403, denied},
      {"no roles", kNobody, "/api/pool/team-a/workflow?dry_run=true", kQuickWorkflow, 403,
       "access denied: user \"nobody\" with roles (none) may not submit to pool \"team-a\""},
      {"no token", "", "/api/pool/team-a/workflow?dry_run=true", kQuickWorkflow, 401, ""},
      {"the pool's role", kTeam, "/api/pool/team-a/workflow?dry_run=true", kQuickWorkflow, 200, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto res = Raw("POST", c.path, c.token, c.body, "application/yaml");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, c.status) << res->body;
    if (c.message.empty()) continue;
    Json body = Json::parse(res->body);
    EXPECT_EQ(body["code"], "PERMISSION_DENIED");
    EXPECT_EQ(body["message"].get<std::string>().substr(0, c.message.size()), c.message);
  }
  auto listed = server_->As(kAdmin).ListWorkflows(std::nullopt, std::nullopt, std::nullopt, 10);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE((*listed)["workflows"].empty()) << listed->dump();  // nothing was stored
}

TEST_F(ApiTest, WorkflowRoutes) {
  client::Client admin = server_->As(kAdmin);
  auto dry = admin.SubmitWorkflow("default", kQuickWorkflow, {}, /*dry_run=*/true);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_EQ((*dry)["pods"].size(), 1u);
  auto submitted = admin.SubmitWorkflow("default", kQuickWorkflow, {}, false, "key-1");
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  std::string id = (*submitted)["workflow_id"];
  EXPECT_EQ((*submitted)["tasks"], 1);
  EXPECT_FALSE(submitted->contains("pods")) << submitted->dump();  // an acknowledgement
  // Same idempotency key: the same workflow, not a second one.
  auto again = admin.SubmitWorkflow("default", kQuickWorkflow, {}, false, "key-1");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)["workflow_id"], id);
  auto raw_yaml =
      Raw("POST", "/api/pool/default/workflow", kAdmin, kQuickWorkflow, "application/yaml");
  EXPECT_EQ(raw_yaml->status, 200) << raw_yaml->body;
  auto queried = admin.QueryWorkflow(id);
  ASSERT_TRUE(queried.ok());
  EXPECT_EQ((*queried)["status"], "PENDING");
  EXPECT_EQ((*queried)["user"], "root");
  auto listed = admin.ListWorkflows("default", std::nullopt, std::nullopt, 10);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ((*listed)["workflows"].size(), 2u);
  auto canceled = admin.CancelWorkflow(id);
  ASSERT_TRUE(canceled.ok()) << canceled.status().ToString();
  EXPECT_EQ((*canceled)["status"], "CANCELED");
  EXPECT_EQ(admin.CancelWorkflow(id).status().code(), StatusCode::kFailedPrecondition);
  // The cancel committed with its audit record; the refused second cancel wrote none.
  auto audit = admin.Call("GET", "/api/audit?limit=100");
  ASSERT_TRUE(audit.ok());
  int cancels = 0;
  for (const Json& record : (*audit)["audit"]) {
    if (record["action"] == "workflow cancel" && record["target"] == id) ++cancels;
  }
  EXPECT_EQ(cancels, 1) << (*audit).dump();
  EXPECT_EQ(admin.QueryWorkflow("nope-9").status().code(), StatusCode::kNotFound);
  // A user of another team may not read or cancel it (its pool is "default").
  client::Client team = server_->As(kTeam);
  ASSERT_TRUE(admin.SetPoolRole("osmo-team").ok());
  EXPECT_EQ(team.CancelWorkflow((*listed)["workflows"][1]["id"]).status().code(),
            StatusCode::kPermissionDenied);
}

TEST_F(ApiTest, PoolResourceNodeApplyScheduleAndAuditRoutes) {
  client::Client admin = server_->As(kAdmin);
  auto pools = admin.ListPools();
  ASSERT_TRUE(pools.ok());
  EXPECT_EQ((*pools)["pools"][0]["name"], "default");
  auto quota = admin.Call("GET", "/api/pool_quota");
  ASSERT_TRUE(quota.ok());
  EXPECT_EQ((*quota)["pools"].size(), 1u);
  auto resources = admin.ListResources("default", std::nullopt);
  ASSERT_TRUE(resources.ok()) << resources.status().ToString();
  EXPECT_FALSE((*resources)["resources"].empty());
  auto nodes = admin.Call("GET", "/api/nodes");
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ((*nodes)["items"].size(), 1u);
  EXPECT_EQ((*nodes)["items"][0]["metadata"]["name"], "cpu-0");
  std::string manifest =
      "apiVersion: gpupool.io/v1\nkind: Pool\nmetadata: {name: applied}\nspec: " +
      default_pool_.dump() + "\n";
  auto applied = admin.Apply(manifest);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_TRUE(admin.ShowConfig("POOL", "applied").ok());
  auto what_if = admin.Schedule(
      "kind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: \"1\", pods: \"1\"}}\n");
  ASSERT_TRUE(what_if.ok()) << what_if.status().ToString();
  EXPECT_TRUE((*what_if).contains("placements"));
  auto version = admin.Call("GET", "/api/version");
  ASSERT_TRUE(version.ok());
  EXPECT_EQ((*version)["store"], "sqlite");
  // Every write is audited: who, what, when, from where.
  auto audit = admin.Call("GET", "/api/audit?limit=100");
  ASSERT_TRUE(audit.ok());
  bool found = false;
  for (const auto& record : (*audit)["audit"]) {
    if (record["action"] == "POST /api/apply") {
      found = true;
      EXPECT_EQ(record["user"], "root");
      EXPECT_EQ(record["source"], "127.0.0.1");
      EXPECT_EQ(record["detail"], "HTTP 200");
      EXPECT_FALSE(record["at"].get<std::string>().empty());
    }
  }
  EXPECT_TRUE(found) << (*audit).dump();
}

// POST /api/apply: the CLI's envelope of files gets errors that name the file and the field's
// line, and writes all files in one transaction; a plain manifest body (curl) still works.
TEST_F(ApiTest, ApplyEnvelopeOfFilesAndPlainManifests) {
  client::Client admin = server_->As(kAdmin);
  const std::string queue_p =
      "apiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: p}\nspec: {priority: 1}\n";
  const std::string bad_q =
      "apiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: q}\nspec:\n  resourcez: {}\n";
  const std::string bad_at = "b.yaml:5:3: Queue q: spec.resourcez: unknown field";
  auto refused = admin.Apply({{"a.yaml", queue_p}, {"b.yaml", bad_q}});
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message().substr(0, bad_at.size()), bad_at);
  EXPECT_EQ(admin.ShowConfig("QUEUE", "p").status().code(), StatusCode::kNotFound);

  auto applied = admin.Apply({{"a.yaml", queue_p},
                              {"b.yaml",
                               "apiVersion: gpupool.io/v1\n"
                               "kind: Queue\nmetadata: {name: q}\n"
                               "spec: {parent: p}\n"}});
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ((*applied)["changes"].size(), 2u);
  auto history = admin.History("QUEUE", "q", 1);
  ASSERT_TRUE(history.ok());
  EXPECT_EQ((*history)["history"][0]["description"], "gpupool apply -f a.yaml b.yaml");

  // Plain text: the text is the "request body".
  auto plain_refused = admin.Apply(bad_q);
  const std::string plain_at = "request body:5:3: Queue q: spec.resourcez: unknown field";
  EXPECT_EQ(plain_refused.status().message().substr(0, plain_at.size()), plain_at);
  EXPECT_TRUE(admin.Apply(queue_p).ok());
  // A JSON manifest sent as application/json is a manifest, not an envelope.
  auto json_manifest =
      Raw("POST", "/api/apply", kAdmin,
          R"({"apiVersion": "gpupool.io/v1", "kind": "Queue", "metadata": {"name": "j"}})");
  ASSERT_TRUE(json_manifest);
  EXPECT_EQ(json_manifest->status, 200) << json_manifest->body;
  EXPECT_TRUE(admin.ShowConfig("QUEUE", "j").ok());

  // Malformed envelopes: 400 naming the field.
  for (const auto& [body, error] : std::vector<std::pair<std::string, std::string>>{
           {R"({"files": []})", "request body: files: expected a non-empty list"},
           {R"({"files": [{"name": "a.yaml"}]})", "request body: files[0]: expected an object"},
           {R"({"files": [{"name": "a\nb", "text": ""}]})", "request body: files[0].name:"},
           {R"({"files": [{"name": "a", "text": ""}], "x": 1})", "request body: x: unknown"},
       }) {
    auto reply = Raw("POST", "/api/apply", kAdmin, body);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 400) << body;
    EXPECT_NE(reply->body.find(error), std::string::npos) << body << " -> " << reply->body;
  }
}

// ---- What-if (POST /api/schedule) and spot interruption notices ------------------------------

// One 4-cpu node, one queue, a pod that fits and one that never can.
constexpr char kWhatIfScenario[] = R"(apiVersion: v1
kind: Node
metadata: {name: small}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
---
apiVersion: gpupool.io/v1
kind: Queue
metadata: {name: team}
spec:
  resources:
    default:
      cpu: {deserved: 4}
---
apiVersion: v1
kind: Pod
metadata:
  name: fits
  labels: {gpupool.io/queue: team}
spec:
  containers:
  - name: main
    resources: {requests: {cpu: "3", memory: 4Gi}}
---
apiVersion: v1
kind: Pod
metadata:
  name: too-big
  labels: {gpupool.io/queue: team}
spec:
  containers:
  - name: main
    resources: {requests: {cpu: "8", memory: 4Gi}}
)";

std::string ReadSource(const std::string& relative) {
  std::ifstream in(std::string(GPUPOOL_SOURCE_DIR) + "/" + relative);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_F(ApiTest, WhatIfSchedulesARealScenario) {
  auto result = server_->As(kAdmin).Schedule(kWhatIfScenario);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const Json& out = *result;
  ASSERT_EQ(out["placements"].size(), 1u) << out.dump();
  EXPECT_EQ(out["placements"][0]["pod"], "fits");
  EXPECT_EQ(out["placements"][0]["node"], "small");
  EXPECT_EQ(out["placements"][0]["queue"], "team");
  ASSERT_EQ(out["unschedulable"].size(), 1u) << out.dump();
  EXPECT_EQ(out["unschedulable"][0]["pod"], "too-big");
  EXPECT_NE(out["unschedulable"][0]["reason"].get<std::string>().find("Insufficient cpu"),
            std::string::npos)
      << out.dump();
  EXPECT_FALSE(out.contains("scaleUp")) << "no machine pools: the plain schedule";
  // The what-if reads the scenario only: nothing of it reaches the store.
  auto nodes = server_->As(kAdmin).Call("GET", "/api/nodes");
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ((*nodes)["items"].size(), 1u) << (*nodes).dump();
}

TEST_F(ApiTest, WhatIfBadScenarioIs400NamingTheLine) {
  std::string unknown_field = kWhatIfScenario;
  unknown_field.replace(unknown_field.find("deserved"), 8, "deservd");
  std::string duplicate = std::string(kWhatIfScenario) +
                          "---\napiVersion: v1\nkind: Node\nmetadata: {name: small}\n"
                          "status: {allocatable: {cpu: \"1\"}}\n";
  struct Case {
    std::string name;
    std::string body;
    std::string message;  // regex the error message must match
  };
  std::vector<Case> cases = {
      {"malformed YAML names line and column", "apiVersion: v1\nkind: Node\nmetadata: {name: [x\n",
       R"(^request body:\d+:\d+: )"},
      {"unknown field with did-you-mean names the field's line and column", unknown_field,
       R"(^request body:13:13: Queue team: spec\.resources\.default\.cpu\.deservd: unknown )"
       R"(field \(did you mean "deserved"\?\))"},
      {"duplicate node", duplicate, R"(Node "?small"?.*(twice|duplicate))"},
      {"empty", "  \n", "empty"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto res = Raw("POST", "/api/schedule", kAdmin, c.body, "application/yaml");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << res->body;
    Json error = Json::parse(res->body, nullptr, false);
    ASSERT_TRUE(error.is_object()) << res->body;
    EXPECT_TRUE(std::regex_search(error.value("message", ""), std::regex(c.message)))
        << c.message << " in " << res->body;
  }
}

TEST_F(ApiTest, WhatIfInterruptsSpotMachinePoolNodes) {
  // Seed 004's machine pools: ml-training-1 is a spot node running ml-training-0.
  std::string scenario = ReadSource("examples/machine-pools/pools.yaml") + "\n---\n" +
                         ReadSource("examples/machine-pools/cluster.yaml");
  ASSERT_NE(scenario.find("ml-training-1"), std::string::npos);
  client::Client admin = server_->As(kAdmin);
  auto plain = admin.Schedule(scenario);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_TRUE((*plain)["interruptions"].empty()) << (*plain).dump();

  auto interrupted =
      admin.Call("POST", "/api/schedule?interrupt=ml-training-1", scenario, "application/yaml");
  ASSERT_TRUE(interrupted.ok()) << interrupted.status().ToString();
  const Json& out = *interrupted;
  ASSERT_EQ(out["interruptions"].size(), 1u) << out.dump();
  EXPECT_EQ(out["interruptions"][0]["node"], "ml-training-1");
  EXPECT_EQ(out["interruptions"][0]["machinePool"], "ml-training");
  EXPECT_EQ(out["interruptions"][0]["noticeSeconds"], 120);
  EXPECT_EQ(out["interruptions"][0]["evictedPods"], Json::array({"ml-training-0"}));
  // The evicted pod is placed again, on a node the autoscaler adds.
  bool replaced = false;
  for (const Json& p : out["placements"]) {
    if (p["pod"] == "ml-training-0") replaced = p["node"] != "ml-training-1";
  }
  EXPECT_TRUE(replaced) << out.dump();

  struct Case {
    std::string query;
    int status;
    std::string body_has;
  };
  std::vector<Case> refused = {
      {"compute-1", 400, "machine pool compute is on demand"},
      {"nope", 404, "nope: no such node"},
      {"ml-training-1,nope", 404, "nope: no such node"},  // every listed node is checked
  };
  for (const Case& c : refused) {
    SCOPED_TRACE(c.query);
    auto res =
        Raw("POST", "/api/schedule?interrupt=" + c.query, kAdmin, scenario, "application/yaml");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, c.status) << res->body;
    EXPECT_NE(res->body.find(c.body_has), std::string::npos) << res->body;
  }
}

constexpr char kSpotNodeYaml[] = R"(apiVersion: v1
kind: Node
metadata:
  name: gpu-spot-1
  labels:
    kubernetes.io/hostname: gpu-spot-1
    node.kubernetes.io/machinepool: gpu-spot
    node.kubernetes.io/instance-type: g4dn.xlarge
status:
  allocatable: {cpu: "4", memory: 16Gi, ephemeral-storage: 100Gi, pods: "110", nvidia.com/gpu: "1"}
  capacity: {cpu: "4", memory: 16Gi, ephemeral-storage: 100Gi, pods: "110", nvidia.com/gpu: "1"}
)";

TEST_F(ApiTest, SpotInterruptionNoticeForAStoredNode) {
  client::Client admin = server_->As(kAdmin);
  Json spot = {{"instance_type", "g4dn.xlarge"}, {"capacity_type", "spot"}, {"max_replicas", 3}};
  auto pool = admin.UpdateConfig("MACHINE_POOL", "gpu-spot", spot);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  ASSERT_TRUE(admin.ImportNodes(kSpotNodeYaml).ok());
  ASSERT_TRUE(admin.SetPoolRole("osmo-team").ok());
  struct Case {
    std::string name;
    std::string token;
    std::string node;
    int status;
    std::string body_has;
  };
  // In order: the admin's notice makes the last case a repeat.
  std::vector<Case> cases = {
      {"unknown node", kAdmin, "nope", 404, "nope"},
      {"not a machine-pool node", kAdmin, "cpu-0", 409, "cpu-0"},
      {"not an admin", kTeam, "gpu-spot-1", 403, "tina"},
      {"spot machine-pool node", kAdmin, "gpu-spot-1", 200, "\"noticeSeconds\":120"},
      {"already noticed", kAdmin, "gpu-spot-1", 409, "gpu-spot-1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto res = Raw("POST", "/api/nodes/" + c.node + "/interrupt", c.token);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, c.status) << res->body;
    EXPECT_NE(res->body.find(c.body_has), std::string::npos) << res->body;
  }
  // The stored node carries its deadline; the on-demand node is untouched.
  auto nodes = admin.Call("GET", "/api/nodes");
  ASSERT_TRUE(nodes.ok());
  int noticed = 0;
  for (const Json& node : (*nodes)["items"]) {
    const Json& metadata = node["metadata"];
    bool has_deadline = metadata.contains("annotations") &&
                        metadata["annotations"].contains("gpupool.io/interruption-deadline");
    if (has_deadline) {
      ++noticed;
      EXPECT_EQ(metadata["name"], "gpu-spot-1");
    }
  }
  EXPECT_EQ(noticed, 1) << (*nodes).dump();
  auto audit = admin.Call("GET", "/api/audit?limit=100");
  ASSERT_TRUE(audit.ok());
  int notices = 0;
  for (const Json& record : (*audit)["audit"]) {
    if (record["action"] == "spot interruption notice") {
      ++notices;
      EXPECT_EQ(record["user"], "root");
      EXPECT_EQ(record["target"], "gpu-spot-1");
    }
  }
  EXPECT_EQ(notices, 1) << (*audit).dump();
}

// ---- OIDC ------------------------------------------------------------------------------------

class OidcApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    key_ = new testing::SigningKey(
        testing::SigningKey::Generate(testing::SigningKey::Type::kRsa, "k1"));
    ec_key_ = new testing::SigningKey(
        testing::SigningKey::Generate(testing::SigningKey::Type::kEc, "k2"));
    other_ = new testing::SigningKey(
        testing::SigningKey::Generate(testing::SigningKey::Type::kRsa, "k1"));
  }
  static void TearDownTestSuite() {
    delete key_;
    delete ec_key_;
    delete other_;
  }
  void SetUp() override {
    JwtOptions options;
    options.issuer = "https://keycloak.example/realms/gpupool";
    options.audience = "gpupool";
    options.roles_claim = "realm_access.roles";
    auto keys = KeySet::FromJwks(testing::JwksOf({key_, ec_key_}));
    ASSERT_TRUE(keys.ok());
    server_ = std::make_unique<TestServer>(
        MakeOidcAuthenticator(std::make_unique<JwtVerifier>(options, std::move(*keys), clock_)),
        clock_);
  }
  static nlohmann::json Claims(std::vector<std::string> roles) {
    int64_t now = SystemClock().NowMillis() / 1000;
    return {{"iss", "https://keycloak.example/realms/gpupool"},
            {"aud", {"account", "gpupool"}},
            {"sub", "0c1d"},
            {"preferred_username", "kim"},
            {"iat", now},
            {"exp", now + 300},
            {"realm_access", {{"roles", roles}}}};
  }

  SystemClock clock_;
  std::unique_ptr<TestServer> server_;
  static inline testing::SigningKey* key_ = nullptr;
  static inline testing::SigningKey* ec_key_ = nullptr;
  static inline testing::SigningKey* other_ = nullptr;
};

TEST_F(OidcApiTest, TokensOverHttp) {
  auto with = [](nlohmann::json claims, const char* key, nlohmann::json value) {
    claims[key] = std::move(value);
    return claims;
  };
  nlohmann::json admin = Claims({"osmo-admin"});
  int64_t now = SystemClock().NowMillis() / 1000;
  struct Case {
    std::string name;
    std::string token;
    StatusCode code;
  };
  std::vector<Case> cases = {
      {"valid RS256 admin (Keycloak shape)", key_->Mint(admin), StatusCode::kOk},
      {"valid ES256 admin", ec_key_->Mint(admin), StatusCode::kOk},
      {"valid token without a role that allows", key_->Mint(Claims({"offline_access"})),
       StatusCode::kPermissionDenied},
      {"expired", key_->Mint(with(admin, "exp", now - 120)), StatusCode::kUnauthenticated},
      {"not yet valid", key_->Mint(with(admin, "nbf", now + 120)), StatusCode::kUnauthenticated},
      {"wrong issuer", key_->Mint(with(admin, "iss", "https://evil.example")),
       StatusCode::kUnauthenticated},
      {"wrong audience", key_->Mint(with(admin, "aud", "other")), StatusCode::kUnauthenticated},
      {"alg none", testing::MintAlgNone(admin), StatusCode::kUnauthenticated},
      {"HS256 with the public key", key_->MintHs256WithPublicKey(admin),
       StatusCode::kUnauthenticated},
      {"signed by another key", other_->Mint(admin), StatusCode::kUnauthenticated},
      {"dev token refused in oidc mode", "dev:root:osmo-admin", StatusCode::kUnauthenticated},
      {"no token", "", StatusCode::kUnauthenticated},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto result = server_->As(c.token).ListPools();
    EXPECT_EQ(result.status().code(), c.code) << result.status().ToString();
  }
}

}  // namespace api_test
}  // namespace gpupool::api
