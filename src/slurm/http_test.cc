#include "slurm/http.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <thread>

namespace gpupool::slurm {
namespace http_test {

using namespace std::chrono_literals;

// A loopback HTTP server (cpp-httplib) standing in for slurmrestd over TCP.
class TcpServer {
 public:
  explicit TcpServer(int keep_alive_max = 5) {
    server_.set_keep_alive_max_count(keep_alive_max);
    server_.Get("/ok", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"ok": true})", "application/json");
    });
    server_.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(req.get_header_value("Content-Type") + "|" +
                          req.get_header_value("X-SLURM-USER-NAME") + "|" + req.body,
                      "text/plain");
    });
    server_.Get("/big", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(4096, 'x'), "text/plain");
    });
    server_.Get("/slow", [](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(1s);
      res.set_content("late", "text/plain");
    });
    server_.Get("/status",
                [](const httplib::Request&, httplib::Response& res) { res.status = 304; });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // The socket listens already; wait for the accept loop so that stop() reaches it.
    for (int i = 0; i < 500 && !server_.is_running(); ++i) std::this_thread::sleep_for(10ms);
  }
  ~TcpServer() {
    server_.stop();
    thread_.join();
  }
  Endpoint endpoint() const { return {Endpoint::Kind::kTcp, "127.0.0.1", port_, ""}; }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

HttpTimeouts Short() { return {2000ms, 300ms}; }

TEST(HttpTest, TcpRequestsShareOneConnection) {
  TcpServer server;
  auto transport = MakeBeastTransport(server.endpoint(), Short());
  for (int i = 0; i < 3; ++i) {
    HttpOutcome outcome = transport->Send({"GET", "/ok", {}, ""});
    ASSERT_TRUE(outcome.error.ok()) << outcome.error.message();
    EXPECT_EQ(outcome.response.status, 200);
    EXPECT_EQ(outcome.response.body, R"({"ok": true})");
  }
  HttpOutcome echo = transport->Send({"POST", "/echo", {{"X-SLURM-USER-NAME", "nobody"}}, "{}"});
  ASSERT_TRUE(echo.error.ok()) << echo.error.message();
  EXPECT_EQ(echo.response.body, "application/json|nobody|{}");
  HttpOutcome not_modified = transport->Send({"GET", "/status", {}, ""});
  ASSERT_TRUE(not_modified.error.ok()) << not_modified.error.message();
  EXPECT_EQ(not_modified.response.status, 304);
}

TEST(HttpTest, AConnectionTheServerClosedIsReplaced) {
  TcpServer server(/*keep_alive_max=*/1);  // closes after every request
  auto transport = MakeBeastTransport(server.endpoint(), Short());
  for (int i = 0; i < 3; ++i) {
    HttpOutcome outcome = transport->Send({"POST", "/echo", {}, "x"});
    ASSERT_TRUE(outcome.error.ok()) << i << ": " << outcome.error.message();
    EXPECT_EQ(outcome.response.body, "application/json||x");
  }
}

TEST(HttpTest, FailuresSayWhetherTheRequestWasSent) {
  TcpServer server;
  auto transport = MakeBeastTransport(server.endpoint(), Short());
  HttpOutcome slow = transport->Send({"GET", "/slow", {}, ""});
  EXPECT_EQ(slow.error.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(slow.sent);
  EXPECT_NE(slow.error.message().find("slurmrestd at " + server.endpoint().ToString()),
            std::string::npos)
      << slow.error.message();

  auto small = MakeBeastTransport(server.endpoint(), Short(), /*max_body_bytes=*/1024);
  HttpOutcome big = small->Send({"GET", "/big", {}, ""});
  EXPECT_EQ(big.error.code(), StatusCode::kInternal);
  EXPECT_NE(big.error.message().find("larger than 1024 bytes"), std::string::npos);

  // Nothing listens on the port any more.
  Endpoint gone = server.endpoint();
  {
    TcpServer other;
    gone = other.endpoint();
  }
  HttpOutcome refused = MakeBeastTransport(gone, Short())->Send({"GET", "/ok", {}, ""});
  EXPECT_EQ(refused.error.code(), StatusCode::kUnavailable);
  EXPECT_FALSE(refused.sent);
}

namespace asio = boost::asio;
namespace beast_http = boost::beast::http;

// A server that answers each connection's first request with its target, says keep-alive, and
// closes the connection anyway: every request after the first arrives on a connection the server
// has dropped, as when slurmrestd closes an idle one.
template <typename Protocol>
class DroppingServer {
 public:
  DroppingServer(typename Protocol::endpoint endpoint, int connections) : acceptor_(io_, endpoint) {
    thread_ = std::thread([this, connections] {
      for (int i = 0; i < connections; ++i) {
        boost::system::error_code ec;
        typename Protocol::socket socket(io_);
        acceptor_.accept(socket, ec);
        if (ec) return;  // shut down by the destructor
        boost::beast::flat_buffer buffer;
        beast_http::request<beast_http::string_body> request;
        beast_http::read(socket, buffer, request, ec);
        if (ec) continue;
        beast_http::response<beast_http::string_body> response{beast_http::status::ok, 11};
        response.body() = std::string(request.target());
        response.keep_alive(true);
        response.prepare_payload();
        beast_http::write(socket, response, ec);
      }
    });
  }
  // A failing client leaves the server waiting in accept(): shutting the listening socket down
  // wakes it (Linux).
  ~DroppingServer() {
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    thread_.join();
  }
  typename Protocol::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }

 private:
  asio::io_context io_;
  typename Protocol::acceptor acceptor_;
  std::thread thread_;
};

void ExpectEachRequestAnswered(HttpTransport& transport) {
  for (const char* target : {"/slurm/v0.0.38/ping", "/slurm/v0.0.38/nodes", "/x"}) {
    HttpOutcome outcome = transport.Send({"POST", target, {}, "{}"});
    ASSERT_TRUE(outcome.error.ok()) << target << ": " << outcome.error.message();
    EXPECT_EQ(outcome.response.body, target);
  }
}

TEST(HttpTest, DroppedTcpConnectionsAreReplaced) {
  DroppingServer<asio::ip::tcp> server(
      asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0), 3);
  Endpoint endpoint{Endpoint::Kind::kTcp, "127.0.0.1", server.local_endpoint().port(), ""};
  auto transport = MakeBeastTransport(endpoint, Short());
  ExpectEachRequestAnswered(*transport);
}

TEST(HttpTest, UnixSocket) {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("gpupool_slurm_http_" + std::to_string(::getpid()) + ".sock"))
                         .string();
  std::filesystem::remove(path);
  auto endpoint = ParseEndpoint("unix:" + path);
  ASSERT_TRUE(endpoint.ok());
  {
    DroppingServer<asio::local::stream_protocol> server(
        asio::local::stream_protocol::endpoint(path), 3);
    auto transport = MakeBeastTransport(*endpoint, Short());
    ExpectEachRequestAnswered(*transport);
  }
  std::filesystem::remove(path);
  HttpOutcome gone = MakeBeastTransport(*endpoint, Short())->Send({"GET", "/x", {}, ""});
  EXPECT_EQ(gone.error.code(), StatusCode::kUnavailable);
  EXPECT_FALSE(gone.sent);
  EXPECT_NE(gone.error.message().find("unix:" + path), std::string::npos);
}

}  // namespace http_test
}  // namespace gpupool::slurm
