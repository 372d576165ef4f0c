// The REST API under hostile input, end to end (the real stack in-process, tests/server/
// test_server.h): text that is not UTF-8 in every place a request carries it, bytes of that kind
// already in the store, concurrent unconditional writers, If-Match in all its forms, and the
// default pool's deletion. Each reproduction once ended the process or gave the wrong answer.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "common/strings.h"
#include "test_server.h"

namespace gpupool::api {
namespace hardening_test {

using Json = nlohmann::ordered_json;

const char kAdmin[] = "dev:root:osmo-admin";
const char kUser[] = "dev:ann:osmo-user";

struct RawReply {
  int status = 0;
  std::string head;
  std::string body;
};

class HardeningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TestServer>(MakeDevAuthenticator(), clock_);
    auto pool = server_->As(kAdmin).ShowConfig("POOL", "default");
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    default_pool_ = (*pool)["body"];
  }

  // One request exactly as written (client libraries would re-encode the target), then close.
  RawReply Send(const std::string& method, const std::string& target, const char* token,
                const std::string& body = "", const std::string& headers = "") {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval timeout{.tv_sec = 10, .tv_usec = 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(server_->port()));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    RawReply reply;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd);
      return reply;
    }
    std::string request = method + " " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
    if (token != nullptr) request += std::string("Authorization: Bearer ") + token + "\r\n";
    request += headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    std::string got;
    char chunk[4096];
    for (ssize_t n; (n = ::recv(fd, chunk, sizeof chunk, 0)) > 0;) got.append(chunk, n);
    ::close(fd);
    size_t end = got.find("\r\n\r\n");
    if (got.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return reply;
    reply.status = std::stoi(got.substr(9, 3));
    reply.head = got.substr(0, end);
    reply.body = got.substr(end + 4);
    return reply;
  }

  // Every revision with its description: what a refused request must leave as it was. (The
  // audit log gains a record of each refused write, by design: it must hold valid text.)
  std::string StoreContents() {
    auto history = server_->store().History(std::nullopt, std::nullopt, 1000);
    auto audit = server_->store().ListAudit(1000);
    EXPECT_TRUE(history.ok() && audit.ok());
    std::string out;
    for (const auto& h : *history) {
      out += h.kind + "/" + h.name + "@" + std::to_string(h.revision) + " " + h.description + ";";
    }
    for (const auto& a : *audit) {
      EXPECT_TRUE(IsValidUtf8(a.user + a.action + a.target + a.detail)) << a.target;
    }
    return out;
  }

  void ExpectServing() {
    RawReply health = Send("GET", "/healthz", nullptr);
    EXPECT_EQ(health.status, 200) << "the server stopped answering";
  }

  // Runs SQL on the store's file behind its back, as an older version or a hand edit could have.
  void WriteBehindTheStore(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(server_->db_path().c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    char* error = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
  }

  SystemClock clock_;
  std::unique_ptr<TestServer> server_;
  Json default_pool_;
};

// Issue 15's reproductions: each ended the process (nlohmann's dump() threw type_error.316 on
// the I/O loop) or stored the bytes, after which every read of the history and the audit log
// did. Now each is a 400 naming the place, nothing is written, and the server keeps serving.
TEST_F(HardeningTest, InvalidUtf8InRequestsIsRefusedAndNeverStored) {
  const std::string before = StoreContents();
  struct Case {
    std::string name;
    std::string method;
    std::string target;
    const char* token;
    std::string body;
    std::string message_has;
  };
  std::vector<Case> cases = {
      {"path, no token", "GET", "/%ff", nullptr, "", "not valid UTF-8 once decoded"},
      {"workflow id", "GET", "/api/workflow/%ff", kAdmin, "", "not valid UTF-8"},
      {"pool filter (osmo-user)", "GET", "/api/resources?pool=%ff", kUser, "",
       "query parameter \"pool\": not valid UTF-8"},
      {"overlong dots in a config name", "GET", "/api/configs/POOL/%c0%ae%c0%ae", kAdmin, "",
       "byte 0xc0"},
      {"description of a patch", "PATCH", "/api/configs/POOL/default?description=%ff%fe", kAdmin,
       R"({"description": "x"})", "query parameter \"description\""},
      {"description of a put", "PUT", "/api/configs/POOL/other?description=ok%c3", kAdmin,
       default_pool_.dump(), "query parameter \"description\""},
      {"body", "PUT", "/api/configs/POOL/other", kAdmin, "{\"description\": \"\xff\"}",
       "request body:1:18: not valid UTF-8 (byte 0xff)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    RawReply reply = Send(c.method, c.target, c.token, c.body);
    EXPECT_EQ(reply.status, 400) << reply.head << "\n" << reply.body;
    ASSERT_TRUE(Json::accept(reply.body)) << reply.body;
    EXPECT_NE(Json::parse(reply.body)["message"].get<std::string>().find(c.message_has),
              std::string::npos)
        << reply.body;
    ExpectServing();
  }
  EXPECT_EQ(StoreContents(), before);
  EXPECT_EQ(Send("GET", "/api/configs/history", kAdmin).status, 200);
  EXPECT_EQ(Send("GET", "/api/audit", kAdmin).status, 200);
}

// Rows written before the edges refused such bytes (or by hand) are served with U+FFFD in their
// place; the history and the audit log stay readable.
TEST_F(HardeningTest, BytesAlreadyStoredAreServedSafely) {
  WriteBehindTheStore(
      "UPDATE config_revisions SET description = CAST(X'4F4C44FFFE' AS TEXT);"
      "INSERT INTO audit_log (at_ms, user_name, source, action, target, detail) "
      "VALUES (1, CAST(X'6576FF65' AS TEXT), 'x', 'PATCH /api/configs', '/api', "
      "CAST(X'C0AE' AS TEXT));");
  for (const std::string target :
       {"/api/configs/history", "/api/audit", "/api/configs/history?kind=POOL&name=default"}) {
    SCOPED_TRACE(target);
    RawReply reply = Send("GET", target, kAdmin);
    ASSERT_EQ(reply.status, 200) << reply.body;
    ASSERT_TRUE(IsValidUtf8(reply.body));
    ASSERT_TRUE(Json::accept(reply.body)) << reply.body;
    EXPECT_NE(reply.body.find("\xEF\xBF\xBD"), std::string::npos);  // U+FFFD
  }
  ExpectServing();
}

// PUT without If-Match is last-writer-wins, as PATCH was: two writers of one config, each
// validating against what it read, used to get 409 about half the time when the other committed
// in between. Only a PUT that states the revision it read gets 409.
TEST_F(HardeningTest, ConcurrentUnconditionalPutsAllSucceed) {
  ASSERT_TRUE(server_->As(kAdmin).UpdateConfig("POOL", "contended", default_pool_).ok());
  constexpr int kWritesEach = 25;
  std::atomic<int> refused{0};
  std::vector<std::string> errors(2);
  auto writer = [&](int id) {
    client::Client client = server_->As(kAdmin);
    for (int i = 0; i < kWritesEach; ++i) {
      Json body = default_pool_;
      body["description"] = "writer " + std::to_string(id) + " write " + std::to_string(i);
      auto put = client.UpdateConfig("POOL", "contended", body);
      if (!put.ok()) {
        ++refused;
        errors[id] = put.status().ToString();
      }
    }
  };
  std::thread first(writer, 0), second(writer, 1);
  first.join();
  second.join();
  EXPECT_EQ(refused.load(), 0) << errors[0] << " / " << errors[1];
  auto shown = server_->As(kAdmin).ShowConfig("POOL", "contended");
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ((*shown)["revision"], 1 + 2 * kWritesEach);
  // A stated revision is still checked.
  auto stale = server_->As(kAdmin).UpdateConfig("POOL", "contended", default_pool_, "", 1);
  EXPECT_EQ(stale.status().code(), StatusCode::kAborted) << stale.status().ToString();
}

TEST_F(HardeningTest, IfMatchIsParsedFully) {
  ASSERT_TRUE(server_->As(kAdmin).UpdateConfig("POOL", "locked", default_pool_).ok());
  const std::string body = default_pool_.dump();
  struct Case {
    std::string if_match;
    int status;
    std::string message_has;
  };
  // In order: the accepted ones move the revision on (1 -> 2 -> 3).
  std::vector<Case> cases = {
      {"99999999999999999999", 400, "out of range"},
      {"\"9223372036854775808\"", 400, "out of range"},
      {"12abc", 400, "expected a revision"},
      {"-1", 400, "expected a revision"},
      {"+1", 400, "expected a revision"},
      {"\"\"", 400, "expected a revision"},
      {"W/\"1\"", 400, "weak entity tag"},
      {"*", 400, "one revision"},
      {"\"1\", \"2\"", 400, "one revision"},
      {"7", 409, "is at revision 1"},
      {"\"1\"", 200, ""},
      {"2", 200, ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.if_match);
    RawReply reply =
        Send("PUT", "/api/configs/POOL/locked", kAdmin, body, "If-Match: " + c.if_match + "\r\n");
    EXPECT_EQ(reply.status, c.status) << reply.body;
    EXPECT_NE(reply.body.find(c.message_has), std::string::npos) << reply.body;
  }
  RawReply query = Send("PUT", "/api/configs/POOL/locked?expected_revision=1e3", kAdmin, body);
  EXPECT_EQ(query.status, 400) << query.body;
  EXPECT_NE(query.body.find("expected_revision \\\"1e3\\\""), std::string::npos) << query.body;
}

// The built-in osmo-user role grants every user the pool "default" by name: deleting it by
// accident left every user nowhere to submit. It takes --force (force=true), which warns.
TEST_F(HardeningTest, ThePoolARoleGrantsByNameNeedsForceToDelete) {
  client::Client admin = server_->As(kAdmin);
  auto refused = admin.DeleteConfig("POOL", "default", false);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("granted by name by role osmo-user"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("--force"), std::string::npos);
  ASSERT_TRUE(admin.ShowConfig("POOL", "default").ok());
  // A pool no role names goes as before.
  ASSERT_TRUE(admin.UpdateConfig("POOL", "spare", default_pool_).ok());
  EXPECT_TRUE(admin.DeleteConfig("POOL", "spare", false).ok());
  auto forced = admin.DeleteConfig("POOL", "default", true);
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_NE((*forced).dump().find("deleted anyway"), std::string::npos) << (*forced).dump();
  EXPECT_EQ(admin.ShowConfig("POOL", "default").status().code(), StatusCode::kNotFound);
}

// 405 names the allowed methods, after authentication.
TEST_F(HardeningTest, MethodNotAllowedComesAfterAuthentication) {
  RawReply anonymous = Send("DELETE", "/api/pool", nullptr);
  EXPECT_EQ(anonymous.status, 401) << anonymous.body;
  RawReply admin = Send("DELETE", "/api/pool", kAdmin);
  EXPECT_EQ(admin.status, 405) << admin.body;
  EXPECT_NE(admin.head.find("\r\nAllow: GET, HEAD"), std::string::npos) << admin.head;
  RawReply config = Send("POST", "/api/configs/POOL/default", kAdmin);
  EXPECT_EQ(config.status, 405);
  EXPECT_NE(config.head.find("\r\nAllow: DELETE, GET, HEAD, PATCH, PUT"), std::string::npos)
      << config.head;
}

}  // namespace hardening_test
}  // namespace gpupool::api
