#include "api/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "client/client.h"
#include "config/access.h"

namespace gpupool::api {
namespace http_server_test {

using Json = nlohmann::ordered_json;

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Router router;
    router.Add(
        "GET", "/healthz",
        [](const RouteRequest&) -> Result<Reply> { return Reply::Text("ok\n", "text/plain"); },
        {.requires_auth = false});
    router.Add("GET", "/query",
               [](const RouteRequest& r) -> Result<Reply> {
                 return Reply::Json({{"a", r.Query("a").value_or("(none)")},
                                     {"set", r.QueryAll("set")},
                                     {"missing", r.Query("missing").has_value()}});
               },
               {.requires_auth = false});
    // Holds its I/O loop for 150 ms (GETs run on the loops): the loop-lag probe must see it.
    router.Add("GET", "/block",
               [](const RouteRequest&) -> Result<Reply> {
                 std::this_thread::sleep_for(std::chrono::milliseconds(150));
                 return Reply::Text("done\n", "text/plain");
               },
               {.requires_auth = false});
    router.Add("GET", "/api/pool/{pool}", [](const RouteRequest& r) -> Result<Reply> {
      return Reply::Json({{"pool", r.Param("pool")}, {"user", r.identity.user}});
    });
    router.Add("GET", "/api/pool/special", [](const RouteRequest&) -> Result<Reply> {
      return Reply::Json({{"exact", true}});
    });
    router.Add("POST", "/api/echo", [](const RouteRequest& r) -> Result<Reply> {
      ASSIGN_OR_RETURN(Json body, DecodeBody(r));
      ASSIGN_OR_RETURN(std::string name, StringField(body, "name"));
      ASSIGN_OR_RETURN(int64_t count, IntField(body, "count", 1));
      return Reply::Json({{"name", name}, {"count", count}}, 201);
    });
    router.Add("DELETE", "/api/thing/{name}", [](const RouteRequest& r) -> Result<Reply> {
      if (r.Param("name") == "missing") return NotFoundError("thing \"missing\" not found");
      if (r.Param("name") == "busy") return AbortedError("revision changed");
      if (r.Param("name") == "audited") return Reply::Json({{"deleted", true}});
      if (r.Param("name") == "int") throw 42;
      throw std::runtime_error("boom");
    });
    // What a store written before the input edges refused bad bytes may still hold.
    router.Add("GET", "/stored",
               [](const RouteRequest&) -> Result<Reply> {
                 return Reply::Json({{"description", std::string("\xFF\xFE old row")}});
               },
               {.requires_auth = false});
    // Answered later, from another thread: the test calls the held `respond`.
    router.AddAsync("POST", "/api/later/{what}", [this](const RouteRequest& r, Respond respond) {
      if (r.Param("what") == "throw") throw std::runtime_error("boom");
      if (r.Param("what") == "refuse") return respond(NotFoundError("nothing to do later"));
      std::lock_guard lock(mu_);
      held_.push_back(std::move(respond));
      held_cv_.notify_all();
    });
    auto access = [](const Identity& identity, const RouteRequest& request,
                     const std::optional<std::string>&) -> Status {
      for (const auto& role : identity.roles) {
        if (role == "osmo-admin") return OkStatus();
      }
      if (request.path.starts_with("/api/pool/team-a")) return OkStatus();
      return PermissionDeniedError(request.method + " " + request.path + " is not allowed");
    };
    auto audit = [this](const RouteRequest& request, int status) {
      if (request.path == "/api/thing/audited") throw std::runtime_error("audit store is down");
      std::lock_guard lock(mu_);
      audited_.push_back(request.identity.user + " " + request.method + " " + request.path + " " +
                         std::to_string(status));
    };
    ServerOptions options;
    options.max_body_bytes = 1024;
    options.threads = 4;
    options.idle_timeout_seconds = 1;
    auth_ = MakeDevAuthenticator();
    server_ = std::make_unique<HttpServer>(std::move(router), auth_.get(), access, audit, registry_,
                                           options);
    auto port = server_->Bind("127.0.0.1", 0);
    ASSERT_TRUE(port.ok());
    port_ = *port;
    thread_ = std::thread([this] {
      server_->Serve();
      serve_returned_ = true;
    });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    for (int i = 0; i < 100 && !server_->IsRunning(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  void TearDown() override {
    server_->Stop();
    thread_.join();
  }

  httplib::Headers As(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }

  // A plain TCP connection, for what an HTTP client library would not send.
  int Connect() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval timeout{.tv_sec = 10, .tv_usec = 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port_));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    return fd;
  }
  static void SendAll(int fd, const std::string& data) {
    ASSERT_EQ(::send(fd, data.data(), data.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(data.size()));
  }
  // Reads until `until` appears, the peer closes (then "" is appended as is) or 10 s pass.
  static std::string ReceiveUntil(int fd, const std::string& until) {
    std::string got;
    char chunk[4096];
    while (got.find(until) == std::string::npos) {
      ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      got.append(chunk, static_cast<size_t>(n));
    }
    return got;
  }

  metrics::Registry registry_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
  std::unique_ptr<httplib::Client> client_;
  // The `respond` of each asynchronous request the handler holds, until the test answers it.
  Respond WaitForHeld() {
    std::unique_lock lock(mu_);
    held_cv_.wait(lock, [&] { return !held_.empty(); });
    Respond respond = std::move(held_.front());
    held_.erase(held_.begin());
    return respond;
  }

  std::mutex mu_;
  std::vector<std::string> audited_;
  std::condition_variable held_cv_;
  std::vector<Respond> held_;
  std::atomic<bool> serve_returned_ = false;
};

TEST_F(HttpServerTest, StatusCodesOverLoopback) {
  const std::string admin = "dev:root:osmo-admin";
  const std::string user = "dev:ann:osmo-team-a";
  struct Case {
    std::string name;
    std::string method;
    std::string path;
    std::string token;
    std::string body;
    int status;
    std::string body_has;
  };
  std::vector<Case> cases = {
      {"public route", "GET", "/healthz", "", "", 200, "ok"},
      {"param route", "GET", "/api/pool/team-a1", user, "", 200, "\"pool\":\"team-a1\""},
      {"exact segment wins", "GET", "/api/pool/special", admin, "", 200, "exact"},
      {"no token", "GET", "/api/pool/team-a1", "", "", 401, "Bearer"},
      {"bad token", "GET", "/api/pool/team-a1", "nonsense", "", 401, "dev:"},
      {"denied", "GET", "/api/pool/other", user, "", 403, "not allowed"},
      {"traversal is resolved before access", "GET", "/api/pool/team-a/../other", user, "", 403,
       "/api/pool/other"},
      {"encoded traversal too", "GET", "/api/pool/team-a%2F..%2Fother", user, "", 403,
       "/api/pool/other"},
      {"escaping the root", "GET", "/../../etc/passwd", user, "", 400, "escapes the root"},
      {"double encoding", "GET", "/api/pool/%252e%252e", user, "", 400, "more than once"},
      {"unknown route", "GET", "/api/nope", admin, "", 404, "no route GET /api/nope"},
      {"wrong method", "PUT", "/api/echo", admin, "{}", 405, "not allowed"},
      {"wrong method without a token is 401 first", "PUT", "/api/echo", "", "{}", 401, "Bearer"},
      {"wrong method on a public route", "PUT", "/healthz", "", "", 405, "GET, HEAD"},
      {"created", "POST", "/api/echo", admin, R"({"name": "x", "count": 3})", 201, "\"count\":3"},
      {"yaml body", "POST", "/api/echo", admin, "name: y\n", 201, "\"name\":\"y\""},
      {"malformed json names line and column", "POST", "/api/echo", admin, "{\n  \"name\": }", 400,
       "request body:2:"},
      {"malformed yaml", "POST", "/api/echo", admin, "name: [y\n", 400, "request body:"},
      {"wrong type names the field", "POST", "/api/echo", admin, R"({"name": 5})", 400,
       "expected a string, found number"},
      {"missing field", "POST", "/api/echo", admin, R"({"count": 1})", 400, "missing required"},
      {"empty body", "POST", "/api/echo", admin, "", 400, "empty"},
      {"body over the limit", "POST", "/api/echo", admin, std::string(5000, ' '), 400,
       "exceeds the limit of 1024 bytes"},
      {"not found from handler", "DELETE", "/api/thing/missing", admin, "", 404, "missing"},
      {"conflict from handler", "DELETE", "/api/thing/busy", admin, "", 409, "ABORTED"},
      {"exception is a 500", "DELETE", "/api/thing/x", admin, "", 500, "boom"},
      {"any exception is a 500", "DELETE", "/api/thing/int", admin, "", 500, "unknown type"},
      {"a throwing audit hook does not fail the request", "DELETE", "/api/thing/audited", admin, "",
       200, "deleted"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    httplib::Headers headers = c.token.empty() ? httplib::Headers{} : As(c.token);
    httplib::Result res(nullptr, httplib::Error::Unknown);
    if (c.method == "GET") res = client_->Get(c.path.c_str(), headers);
    if (c.method == "POST") res = client_->Post(c.path.c_str(), headers, c.body, "text/plain");
    if (c.method == "PUT") res = client_->Put(c.path.c_str(), headers, c.body, "text/plain");
    if (c.method == "DELETE") res = client_->Delete(c.path.c_str(), headers);
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, c.status) << res->body;
    EXPECT_NE(res->body.find(c.body_has), std::string::npos) << res->body;
  }
}

TEST_F(HttpServerTest, MethodNotAllowedNamesTheAllowedMethods) {
  struct Case {
    std::string method;
    std::string path;
    std::string allow;
  };
  std::vector<Case> cases = {
      {"PUT", "/api/echo", "POST"},
      {"DELETE", "/healthz", "GET, HEAD"},
      // Both GET /api/pool/{pool} and the exact GET /api/pool/special have this path.
      {"POST", "/api/pool/special", "GET, HEAD"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.method + " " + c.path);
    int fd = Connect();
    SendAll(fd, c.method + " " + c.path +
                    " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dev:root:osmo-admin\r\n"
                    "Content-Length: 0\r\nConnection: close\r\n\r\n");
    std::string reply = ReceiveUntil(fd, "\n}");
    ::close(fd);
    EXPECT_EQ(reply.rfind("HTTP/1.1 405", 0), 0u) << reply;
    EXPECT_NE(reply.find("\r\nAllow: " + c.allow + "\r\n"), std::string::npos) << reply;
  }
}

// A request holding bytes that are not UTF-8 (in its path, query, headers or body) is refused
// with 400 before any handler sees it: such text would end up in JSON replies and the store.
// Before, `GET /%ff` (no token) made the 404's JSON throw on the I/O loop and ended the process.
TEST_F(HttpServerTest, TextThatIsNotUtf8IsRefusedAtTheEdge) {
  const std::string admin = "Authorization: Bearer dev:root:osmo-admin\r\n";
  struct Case {
    std::string name;
    std::string request;  // up to the end of the headers, without Host and Connection
    std::string body;
    std::string body_has;
  };
  std::vector<Case> cases = {
      {"path, no token", "GET /%ff HTTP/1.1\r\n", "", "not valid UTF-8 once decoded (byte 0xff)"},
      {"raw byte in the path", "GET /api/pool/\xFF HTTP/1.1\r\n" + admin, "", "UTF-8"},
      {"overlong dots", "GET /api/pool/%c0%ae%c0%ae HTTP/1.1\r\n" + admin, "", "byte 0xc0"},
      {"query value", "GET /query?a=ok%ff%fe HTTP/1.1\r\n", "",
       "query parameter \\\"a\\\": not valid UTF-8 (byte 0xff at column 3)"},
      {"query key", "GET /query?%ff=1 HTTP/1.1\r\n", "", "\\\\xff"},
      {"header", "GET /healthz HTTP/1.1\r\nX-Note: caf\xE9\r\n", "",
       "header X-Note: not valid UTF-8 (byte 0xe9 at column 4)"},
      {"body", "POST /api/echo HTTP/1.1\r\n" + admin + "Content-Type: application/json\r\n",
       "{\n  \"name\": \"\xC0\xAE\"}", "request body:2:12: not valid UTF-8 (byte 0xc0)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    int fd = Connect();
    SendAll(fd, c.request + "Host: x\r\nConnection: close\r\nContent-Length: " +
                    std::to_string(c.body.size()) + "\r\n\r\n" + c.body);
    std::string reply = ReceiveUntil(fd, "\n}");
    ::close(fd);
    EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply;
    EXPECT_NE(reply.find(c.body_has), std::string::npos) << reply;
    std::string body = reply.substr(reply.find("\r\n\r\n") + 4);
    EXPECT_TRUE(Json::accept(body)) << body;  // the reply itself is valid JSON (and UTF-8)
  }
  // Still serving.
  auto health = client_->Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

// Text already stored is served with U+FFFD in place of its bad bytes, not refused and not a
// crash.
TEST_F(HttpServerTest, StoredBytesThatAreNotUtf8AreServedReplaced) {
  auto res = client_->Get("/stored");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(Json::parse(res->body)["description"], "\xEF\xBF\xBD\xEF\xBF\xBD old row");
}

// RFC 9112 §6.1: a transfer coding the server does not decode is 501, never a body read as
// something else (`gzip, chunked` was taken as a chunked body and handed over compressed).
TEST_F(HttpServerTest, TransferCodingsOtherThanChunkedAre501) {
  const std::string head =
      "POST /api/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dev:root:osmo-admin\r\n"
      "Content-Type: application/json\r\n";
  const std::string chunked_body = "11\r\n{\"name\": \"chunk\"}\r\n0\r\n\r\n";
  struct Case {
    std::string transfer_encoding;  // header lines
    int status;
  };
  std::vector<Case> cases = {
      {"Transfer-Encoding: chunked\r\n", 201},
      {"Transfer-Encoding: CHUNKED\r\n", 201},
      {"Transfer-Encoding: gzip, chunked\r\n", 501},
      {"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", 501},
      {"Transfer-Encoding: identity, chunked\r\n", 501},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.transfer_encoding);
    int fd = Connect();
    SendAll(fd, head + c.transfer_encoding + "Connection: close\r\n\r\n" + chunked_body);
    std::string reply = ReceiveUntil(fd, "\n}");
    ::close(fd);
    EXPECT_EQ(reply.rfind("HTTP/1.1 " + std::to_string(c.status), 0), 0u) << reply;
    const std::string expected = c.status == 201 ? "\"chunk\"" : "NOT_IMPLEMENTED";
    EXPECT_NE(reply.find(expected), std::string::npos) << reply;
  }
}

TEST_F(HttpServerTest, CountsRequestsByRouteAndCodeAndAuditsWrites) {
  ASSERT_TRUE(client_->Get("/api/pool/team-a", As("dev:ann:x")));
  ASSERT_TRUE(client_->Get("/api/pool/team-a", As("dev:ann:x")));
  ASSERT_TRUE(client_->Get("/api/pool/zzz", As("dev:ann:x")));
  ASSERT_TRUE(client_->Get("/nowhere"));
  ASSERT_TRUE(client_->Delete("/api/thing/busy", As("dev:root:osmo-admin")));
  std::string text = registry_.Render();
  EXPECT_NE(text.find("gpupool_http_requests_total{route=\"/api/pool/{pool}\",method=\"GET\","
                      "code=\"200\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("route=\"/api/pool/{pool}\",method=\"GET\",code=\"403\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("route=\"(unmatched)\",method=\"GET\",code=\"404\"} 1"), std::string::npos);
  EXPECT_NE(text.find("gpupool_http_request_duration_seconds_count{route=\"/api/pool/{pool}\""),
            std::string::npos);
  std::lock_guard lock(mu_);
  EXPECT_EQ(audited_, (std::vector<std::string>{"root DELETE /api/thing/busy 409"}));
}

// The value of the sample line `series` (name and labels, as rendered) in `text`; -1 if absent.
double SampleValue(const std::string& text, const std::string& series) {
  size_t at = text.find(series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 1));
}

TEST_F(HttpServerTest, LoopLagShowsALoopHeldByAHandler) {
  // Probes that fired over 100 ms late so far; -1 before the first probe has fired.
  auto late_probes = [this] {
    std::string text = registry_.Render();
    double all = SampleValue(text, "gpupool_http_loop_lag_seconds_count");
    double on_time = SampleValue(text, "gpupool_http_loop_lag_seconds_bucket{le=\"0.1\"}");
    return all < 0 ? -1 : all - on_time;
  };
  // Polls for up to 5 s until `done` holds.
  auto wait_for = [](const std::function<bool()>& done) {
    for (int i = 0; i < 500 && !done(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
  wait_for([&] { return late_probes() >= 0; });
  double before = late_probes();
  ASSERT_GE(before, 0) << registry_.Render();

  auto res = client_->Get("/block");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  // The probe due during the 150 ms fires at least 130 ms late, once the handler returns; the
  // reply may reach the client first.
  wait_for([&] { return late_probes() > before; });
  EXPECT_GT(late_probes(), before) << registry_.Render();
}

TEST_F(HttpServerTest, DecodesQueryParametersOnce) {
  // Sent raw: client libraries re-encode '+' and '%'.
  int fd = Connect();
  SendAll(fd,
          "GET /query?a=x+y%21&set=1&set=2%3D3&a=second&broken=%zz HTTP/1.1\r\nHost: x\r\n"
          "Connection: close\r\n\r\n");
  std::string reply = ReceiveUntil(fd, "\n}");
  ::close(fd);
  ASSERT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
  EXPECT_EQ(Json::parse(reply.substr(reply.find("\r\n\r\n") + 4)),
            Json::parse(R"({"a": "x y!", "set": ["1", "2=3"], "missing": false})"));
}

TEST_F(HttpServerTest, HeadIsGetWithoutTheBody) {
  auto res = client_->Head("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Length"), "3");
  EXPECT_TRUE(res->body.empty());
}

TEST_F(HttpServerTest, AnswersExpectContinueBeforeTheBody) {
  int fd = Connect();
  std::string body = R"({"name": "later"})";
  SendAll(fd,
          "POST /api/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dev:root:osmo-admin\r\n"
          "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " +
              std::to_string(body.size()) + "\r\n\r\n");
  EXPECT_EQ(ReceiveUntil(fd, "\r\n\r\n").rfind("HTTP/1.1 100 Continue", 0), 0u);
  SendAll(fd, body);
  std::string reply = ReceiveUntil(fd, "later");
  EXPECT_EQ(reply.rfind("HTTP/1.1 201", 0), 0u) << reply;
  ::close(fd);
}

TEST_F(HttpServerTest, MalformedRequestIs400ThenClose) {
  int fd = Connect();
  SendAll(fd, "GET /healthz HTTP/1.1\r\nHost x\r\n\r\n");
  std::string reply = ReceiveUntil(fd, "\n}");
  EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply;
  EXPECT_NE(reply.find("malformed HTTP request"), std::string::npos) << reply;
  EXPECT_NE(reply.find("Connection: close"), std::string::npos) << reply;
  ::close(fd);
  EXPECT_NE(registry_.Render().find("route=\"(refused)\",method=\"GET\",code=\"400\"} 1"),
            std::string::npos);
}

// AnswerBytes (the fuzz target's way in) writes what a connection given the same bytes writes:
// pipelined requests in order, keep-alive until `Connection: close`, a 400 for what does not
// parse, then nothing more.
TEST_F(HttpServerTest, AnswerBytesWritesWhatAConnectionWrites) {
  const std::string body = R"({"name": "pipelined", "count": 2})";
  const std::vector<std::string> exchanges = {
      "GET /api/pool/team-a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dev:tina:\r\n\r\n"
      "POST /api/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dev:root:osmo-admin\r\n"
      "Content-Length: " +
          std::to_string(body.size()) + "\r\n\r\n" + body +
          "GET /api/pool/other HTTP/1.1\r\nAuthorization: Bearer dev:tina:\r\n\r\n"
          "HEAD /healthz HTTP/1.1\r\n\r\n"
          "GET /nowhere HTTP/1.1\r\nConnection: close\r\n\r\n"
          "GET /healthz HTTP/1.1\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost x\r\n\r\n",
      "GET /query?a=1 HTTP/1.0\r\n\r\n",
  };
  for (const std::string& bytes : exchanges) {
    SCOPED_TRACE(bytes);
    int fd = Connect();
    SendAll(fd, bytes);
    ::shutdown(fd, SHUT_WR);
    std::string over_socket = ReceiveUntil(fd, "\x01never");
    ::close(fd);
    EXPECT_EQ(server_->AnswerBytes(bytes), over_socket);
  }
  EXPECT_EQ(server_->AnswerBytes(""), "");
}

// An asynchronous handler answered from its own thread: that thread is still in the server (it
// counts the request as answered) after the reply is handed on, so AnswerBytes and the destructor
// wait for it. Found by the http fuzz target (a workflow submission answered by the group commit,
// then the server destroyed): under AddressSanitizer, a server destroyed too early is a
// use-after-free in the answering thread.
TEST(HttpServerAnswerBytesTest, ReturnsOnlyOnceAsyncHandlersAreOutOfTheServer) {
  auto auth = MakeDevAuthenticator();
  const std::string request =
      "POST /api/later HTTP/1.1\r\nAuthorization: Bearer dev:root:osmo-admin\r\n"
      "Content-Length: 0\r\n\r\n";
  for (int round = 0; round < 50; ++round) {
    metrics::Registry registry;
    std::vector<std::thread> answering;
    Router router;
    router.AddAsync("POST", "/api/later", [&answering](const RouteRequest&, Respond respond) {
      answering.emplace_back([respond] { respond(Reply::Json({{"done", true}}, 202)); });
    });
    auto allow = [](const Identity&, const RouteRequest&, const std::optional<std::string>&) {
      return OkStatus();
    };
    auto server = std::make_unique<HttpServer>(std::move(router), auth.get(), allow, nullptr,
                                               registry, ServerOptions{});
    std::string written = server->AnswerBytes(request + request);
    server.reset();
    for (std::thread& thread : answering) thread.join();
    ASSERT_EQ(answering.size(), 2u);
    size_t first = written.find("HTTP/1.1 202 Accepted");
    ASSERT_NE(first, std::string::npos) << written;
    EXPECT_NE(written.find("HTTP/1.1 202 Accepted", first + 1), std::string::npos) << written;
  }
}

TEST_F(HttpServerTest, ClosesConnectionsSilentPastTheIdleTimeout) {
  int fd = Connect();
  SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n");  // and never the end of the headers
  auto start = std::chrono::steady_clock::now();
  char byte;
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0);  // closed by the server (1 s timeout, swept each second)
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(9));
  ::close(fd);
}

TEST(PathTest, Normalizes) {
  struct Case {
    std::string in;
    std::string out;  // "" = refused
  };
  std::vector<Case> cases = {
      {"/api/pool", "/api/pool"},
      {"/api//pool/", "/api/pool"},
      {"/api/./pool?x=1", "/api/pool"},
      {"/api/pool/a/../b", "/api/pool/b"},
      {"/api/pool/a%2F..%2Fb", "/api/pool/b"},
      {"/api/%70ool", "/api/pool"},
      {"/", "/"},
      {"/..", ""},
      {"/a/%2e%2e/%2e%2e", ""},
      {"/a/%252e", ""},
      {"/a\\b", ""},
      {"/a/%00", ""},
      {"/a/%zz", ""},
      {"relative", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.in);
    auto out = config::NormalizeRequestPath(c.in);
    if (c.out.empty()) {
      EXPECT_FALSE(out.ok());
    } else {
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_EQ(*out, c.out);
    }
  }
  EXPECT_EQ(client::EncodePathSegment("a b/c"), "a%20b%2Fc");
}

TEST_F(HttpServerTest, AsyncHandlersAnswerFromAnotherThreadOnce) {
  const auto admin = As("dev:root:osmo-admin");
  auto pending = std::async(std::launch::async, [&] {
    return client_->Post("/api/later/work", admin, "", "text/plain");
  });
  Respond respond = WaitForHeld();
  std::thread([respond] {
    respond(Reply::Json({{"done", true}}, 202));
    respond(Reply::Json({{"done", "twice"}}, 200));  // ignored: one reply per request
  }).join();
  auto res = pending.get();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 202);
  EXPECT_EQ(Json::parse(res->body)["done"], true);
  // Refusals and exceptions map as for other handlers.
  httplib::Client other("127.0.0.1", port_);
  auto refused = other.Post("/api/later/refuse", admin, "", "text/plain");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 404);
  auto thrown = other.Post("/api/later/throw", admin, "", "text/plain");
  ASSERT_TRUE(thrown);
  EXPECT_EQ(thrown->status, 500);
  EXPECT_NE(thrown->body.find("boom"), std::string::npos);
  std::string metrics = registry_.Render();
  EXPECT_NE(metrics.find(R"(route="/api/later/{what}",method="POST",code="202"} 1)"),
            std::string::npos)
      << metrics;
  std::lock_guard lock(mu_);
  EXPECT_NE(std::find(audited_.begin(), audited_.end(), "root POST /api/later/work 202"),
            audited_.end());
}

TEST_F(HttpServerTest, ServeReturnsOnlyOnceAsyncRequestsAreAnswered) {
  int fd = Connect();
  SendAll(fd,
          "POST /api/later/work HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dev:root:osmo-admin"
          "\r\nContent-Length: 0\r\n\r\n");
  Respond respond = WaitForHeld();
  server_->Stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(serve_returned_);  // a callback into the server is still to come
  respond(Reply::Json({{"done", true}}));
  thread_.join();
  EXPECT_TRUE(serve_returned_);
  ::close(fd);
  thread_ = std::thread([] {});  // for TearDown
}

}  // namespace http_server_test
}  // namespace gpupool::api
