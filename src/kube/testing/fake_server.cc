#include "kube/testing/fake_server.h"

// <utility> first: Boost 1.74's asio/awaitable.hpp uses std::exchange without including it.
#include <utility>
//
#include <openssl/ssl.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <mutex>
#include <set>

#include "common/strings.h"

namespace gpupool::kube::fake {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

std::string PercentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && HexDigitValue(text[i + 1]) >= 0 &&
        HexDigitValue(text[i + 2]) >= 0) {
      out += static_cast<char>(HexDigitValue(text[i + 1]) * 16 + HexDigitValue(text[i + 2]));
      i += 2;
    } else {
      out += text[i] == '+' ? ' ' : text[i];
    }
  }
  return out;
}

ApiRequest ToApiRequest(const http::request<http::string_body>& req) {
  ApiRequest r;
  r.method = std::string(req.method_string());
  std::string_view target(req.target().data(), req.target().size());
  size_t q = target.find('?');
  r.path = PercentDecode(target.substr(0, q));
  if (q != std::string_view::npos) {
    for (const std::string& pair : Split(target.substr(q + 1), '&')) {
      size_t eq = pair.find('=');
      if (pair.empty()) continue;
      r.query[PercentDecode(pair.substr(0, eq))] =
          eq == std::string::npos ? "" : PercentDecode(pair.substr(eq + 1));
    }
  }
  r.content_type = std::string(req[http::field::content_type]);
  r.body = req.body();
  return r;
}

// Wakes a stream's writer when lines arrive: a timer it waits on, cancelled on its strand.
struct Waker {
  explicit Waker(const net::any_io_executor& executor) : timer(executor) {}
  net::steady_timer timer;
  bool pending = false;  // only touched on the session's strand
};

}  // namespace

class FakeServer::Impl {
 public:
  Impl(net::io_context& io, FakeApi& api, ObjectStore& store, ServerOptions options)
      : io_(io),
        api_(api),
        store_(store),
        options_(std::move(options)),
        tls_(ssl::context::tls_server),
        acceptor_strand_(net::make_strand(io)) {}

  Result<int> Start();
  void Stop();

 private:
  // A connection, for closing it from elsewhere: `stream` is set while its session runs and is
  // only touched on `executor` (the session's strand).
  struct Connection {
    net::any_io_executor executor;
    beast::tcp_stream* stream = nullptr;
  };

  Status Listen();
  net::awaitable<void> AcceptLoop(std::shared_ptr<tcp::acceptor> acceptor);
  net::awaitable<void> Session(tcp::socket socket);
  net::awaitable<bool> Serve(TlsStream& stream, const http::request<http::string_body>& req,
                             bool client_cert);
  net::awaitable<bool> Write(TlsStream& stream, ApiResponse response, unsigned version,
                             bool keep_alive);
  net::awaitable<bool> WriteStream(TlsStream& stream, ApiResponse& response,
                                   std::shared_ptr<Waker> waker, unsigned version);
  ApiResponse Admin(const ApiRequest& request, int64_t* restart_down_ms);
  std::optional<ApiResponse> Throttle(const ApiRequest& request, const std::string& target);
  void CloseConnections();
  void Restart(int64_t down_ms);

  net::io_context& io_;
  FakeApi& api_;
  ObjectStore& store_;
  const ServerOptions options_;
  ssl::context tls_;
  net::strand<net::io_context::executor_type> acceptor_strand_;
  std::shared_ptr<tcp::acceptor> acceptor_;  // on acceptor_strand_
  int port_ = 0;

  std::mutex mu_;
  std::set<std::shared_ptr<Connection>> connections_;
  int64_t throttle_remaining_ = 0;
  int64_t retry_after_seconds_ = 1;
  int64_t throttled_ = 0;
  std::map<std::string, Clock::time_point> awaiting_retry_;
  std::vector<int64_t> retry_gaps_ms_;
  int64_t watches_opened_ = 0;
};

FakeServer::FakeServer(net::io_context& io, FakeApi& api, ObjectStore& store, ServerOptions options)
    : impl_(std::make_unique<Impl>(io, api, store, std::move(options))) {}
FakeServer::~FakeServer() = default;
Result<int> FakeServer::Start() { return impl_->Start(); }
void FakeServer::Stop() { impl_->Stop(); }

Result<int> FakeServer::Impl::Start() {
  error_code ec;
  tls_.use_certificate_chain_file(options_.cert_file, ec);
  if (ec) return InvalidArgumentError("--cert " + options_.cert_file + ": " + ec.message());
  tls_.use_private_key_file(options_.key_file, ssl::context::pem, ec);
  if (ec) return InvalidArgumentError("--key " + options_.key_file + ": " + ec.message());
  if (!options_.client_ca_file.empty()) {
    tls_.load_verify_file(options_.client_ca_file, ec);
    if (ec)
      return InvalidArgumentError("--client-ca " + options_.client_ca_file + ": " + ec.message());
    tls_.set_verify_mode(ssl::verify_peer);  // a certificate is optional; a bad one fails
  }
  port_ = options_.port;
  RETURN_IF_ERROR(Listen());
  return port_;
}

Status FakeServer::Impl::Listen() {
  auto acceptor = std::make_shared<tcp::acceptor>(acceptor_strand_);
  error_code ec;
  tcp::endpoint endpoint(net::ip::make_address(options_.host, ec), static_cast<uint16_t>(port_));
  if (ec) return InvalidArgumentError("--listen: bad address " + options_.host);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return UnavailableError("cannot listen on " + options_.host + ":" + std::to_string(port_) +
                            ": " + ec.message());
  port_ = acceptor->local_endpoint().port();
  acceptor_ = acceptor;
  net::co_spawn(acceptor_strand_, AcceptLoop(acceptor), net::detached);
  return OkStatus();
}

void FakeServer::Impl::Stop() {
  net::post(acceptor_strand_, [this] {
    if (acceptor_) acceptor_->close();
  });
  store_.CloseAllWatches();
  CloseConnections();
}

void FakeServer::Impl::CloseConnections() {
  std::lock_guard lock(mu_);
  for (const auto& connection : connections_) {
    net::post(connection->executor, [connection] {
      if (connection->stream != nullptr) connection->stream->close();
    });
  }
}

void FakeServer::Impl::Restart(int64_t down_ms) {
  net::post(acceptor_strand_, [this, down_ms] {
    if (acceptor_) acceptor_->close();
    acceptor_.reset();
    store_.CloseAllWatches();
    CloseConnections();
    auto timer = std::make_shared<net::steady_timer>(acceptor_strand_);
    timer->expires_after(std::chrono::milliseconds(down_ms));
    timer->async_wait([this, timer](const error_code&) {
      Status listening = Listen();
      if (!listening.ok())
        std::fprintf(stderr, "fake apiserver: %s\n", listening.message().c_str());
    });
  });
}

net::awaitable<void> FakeServer::Impl::AcceptLoop(std::shared_ptr<tcp::acceptor> acceptor) {
  while (acceptor->is_open()) {
    tcp::socket socket(net::make_strand(io_));
    error_code ec;
    co_await acceptor->async_accept(socket, net::redirect_error(net::use_awaitable, ec));
    if (ec) continue;
    socket.set_option(tcp::no_delay(true), ec);
    auto executor = socket.get_executor();
    net::co_spawn(executor, Session(std::move(socket)), net::detached);
  }
}

net::awaitable<void> FakeServer::Impl::Session(tcp::socket socket) {
  auto connection = std::make_shared<Connection>();
  connection->executor = socket.get_executor();
  TlsStream stream(std::move(socket), tls_);
  connection->stream = &beast::get_lowest_layer(stream);
  {
    std::lock_guard lock(mu_);
    connections_.insert(connection);
  }
  error_code ec;
  beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30));
  co_await stream.async_handshake(ssl::stream_base::server,
                                  net::redirect_error(net::use_awaitable, ec));
  if (!ec) {
    beast::get_lowest_layer(stream).expires_never();
    X509* peer = SSL_get0_peer_certificate(stream.native_handle());
    bool client_cert =
        peer != nullptr && SSL_get_verify_result(stream.native_handle()) == X509_V_OK;
    beast::flat_buffer buffer;
    while (true) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(64 << 20);
      co_await http::async_read(stream, buffer, parser,
                                net::redirect_error(net::use_awaitable, ec));
      if (ec) break;
      if (!co_await Serve(stream, parser.get(), client_cert)) break;
    }
  }
  connection->stream = nullptr;
  beast::get_lowest_layer(stream).close();
  std::lock_guard lock(mu_);
  connections_.erase(connection);
}

net::awaitable<bool> FakeServer::Impl::Serve(TlsStream& stream,
                                             const http::request<http::string_body>& req,
                                             bool client_cert) {
  const bool keep_alive = req.keep_alive();
  const unsigned version = req.version();
  std::string auth(req[http::field::authorization]);
  if (!client_cert && (options_.token.empty() || auth != "Bearer " + options_.token)) {
    co_return co_await Write(stream, StatusResponse(401, "Unauthorized", "Unauthorized"), version,
                             keep_alive);
  }
  ApiRequest request = ToApiRequest(req);
  if (request.path.starts_with("/_fake/")) {
    int64_t restart_down_ms = -1;
    bool kept = co_await Write(stream, Admin(request, &restart_down_ms), version, keep_alive);
    if (restart_down_ms >= 0) Restart(restart_down_ms);
    co_return kept;
  }
  if (auto throttled = Throttle(request, std::string(req.target()))) {
    co_return co_await Write(stream, *throttled, version, keep_alive);
  }
  auto executor = co_await net::this_coro::executor;
  auto waker = std::make_shared<Waker>(executor);
  auto wake = [weak = std::weak_ptr<Waker>(waker), executor] {
    if (auto w = weak.lock()) {
      net::post(executor, [w] {
        w->pending = true;
        w->timer.cancel();
      });
    }
  };
  ApiResponse response;
  try {
    response = api_.Handle(request, wake);
  } catch (const std::exception& e) {  // a bug in the fake: say so rather than drop the server
    response = StatusResponse(500, "InternalError", std::string("fake apiserver: ") + e.what());
  }
  if (response.stream) {
    if (response.watcher) {
      std::lock_guard lock(mu_);
      ++watches_opened_;
    }
    co_return co_await WriteStream(stream, response, waker, version);
  }
  co_return co_await Write(stream, std::move(response), version, keep_alive);
}

net::awaitable<bool> FakeServer::Impl::Write(TlsStream& stream, ApiResponse response,
                                             unsigned version, bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(response.status), version};
  res.set(http::field::content_type, response.content_type);
  for (const auto& [name, value] : response.headers) res.set(name, value);
  res.keep_alive(keep_alive);
  res.body() = std::move(response.body);
  res.prepare_payload();
  error_code ec;
  co_await http::async_write(stream, res, net::redirect_error(net::use_awaitable, ec));
  co_return !ec && keep_alive;
}

// Writes a stream's lines as chunks until it closes, times out, or the client goes. A watch the
// store closed (cut, restart, backlog) ends without the final chunk, as a dropped connection.
net::awaitable<bool> FakeServer::Impl::WriteStream(TlsStream& stream, ApiResponse& response,
                                                   std::shared_ptr<Waker> waker, unsigned version) {
  http::response<http::empty_body> head{http::status::ok, version};
  head.set(http::field::content_type, response.content_type);
  head.chunked(true);
  http::response_serializer<http::empty_body> serializer{head};
  error_code ec;
  co_await http::async_write_header(stream, serializer,
                                    net::redirect_error(net::use_awaitable, ec));
  const auto interval = std::chrono::milliseconds(options_.bookmark_interval_ms);
  const bool bookmarks = response.watcher && response.watcher->bookmarks();
  auto deadline = Clock::now() + std::chrono::seconds(response.timeout_seconds > 0
                                                          ? response.timeout_seconds
                                                          : options_.default_watch_timeout_s);
  auto next_bookmark = Clock::now() + interval;
  bool keep = !ec;
  while (keep) {
    bool closed = false;
    std::vector<LineQueue::Line> lines = response.stream->Drain(&closed);
    if (!lines.empty()) {
      // Copied into one buffer: a TLS stream writes a buffer sequence one buffer (one record,
      // one write) at a time.
      std::string chunk;
      for (const auto& line : lines) chunk += *line;
      co_await net::async_write(stream, http::make_chunk(net::buffer(chunk)),
                                net::redirect_error(net::use_awaitable, ec));
      if (ec) keep = false;
      continue;
    }
    auto now = Clock::now();
    if (closed && response.watcher) keep = false;  // cut: no final chunk
    if (!keep) break;
    if (closed || now >= deadline) {
      co_await net::async_write(stream, http::make_chunk_last(),
                                net::redirect_error(net::use_awaitable, ec));
      keep = !ec;
      break;
    }
    if (bookmarks && now >= next_bookmark) {
      store_.SendBookmarks(response.watcher);
      next_bookmark = now + interval;
      continue;
    }
    if (waker->pending) {
      waker->pending = false;
      continue;
    }
    waker->timer.expires_at(bookmarks ? std::min(deadline, next_bookmark) : deadline);
    co_await waker->timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    waker->pending = false;
  }
  if (response.watcher) store_.Unwatch(response.watcher);
  if (!keep) beast::get_lowest_layer(stream).close();
  co_return keep;
}

std::optional<ApiResponse> FakeServer::Impl::Throttle(const ApiRequest& request,
                                                      const std::string& target) {
  if (request.path == "/healthz" || request.path == "/readyz") return std::nullopt;
  std::lock_guard lock(mu_);
  if (throttle_remaining_ <= 0 && awaiting_retry_.empty()) return std::nullopt;  // most requests
  std::string key = request.method + " " + target;
  auto now = Clock::now();
  if (auto it = awaiting_retry_.find(key); it != awaiting_retry_.end()) {
    retry_gaps_ms_.push_back(
        std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second).count());
    awaiting_retry_.erase(it);
  }
  if (throttle_remaining_ <= 0) return std::nullopt;
  --throttle_remaining_;
  ++throttled_;
  awaiting_retry_[key] = now;
  ApiResponse response =
      StatusResponse(429, "TooManyRequests", "Too many requests, please try again later.",
                     {{"retryAfterSeconds", retry_after_seconds_}});
  response.headers.emplace_back("Retry-After", std::to_string(retry_after_seconds_));
  return response;
}

ApiResponse FakeServer::Impl::Admin(const ApiRequest& request, int64_t* restart_down_ms) {
  Json body = request.body.empty() ? Json::object() : Json::parse(request.body, nullptr, false);
  if (!body.is_object()) return StatusResponse(400, "BadRequest", "expected a JSON object");
  Json answer = Json::object();
  const std::string& path = request.path;
  if (path == "/_fake/watches/cut" && request.method == "POST") {
    answer["closed"] = store_.CloseAllWatches();
  } else if (path == "/_fake/compact" && request.method == "POST") {
    answer["compactedRevision"] = store_.Compact();
  } else if (path == "/_fake/bookmarks" && request.method == "POST") {
    store_.SendBookmarks();
    answer["revision"] = store_.Revision();
  } else if (path == "/_fake/throttle" && request.method == "POST") {
    std::lock_guard lock(mu_);
    throttle_remaining_ = body.value("count", 1);
    retry_after_seconds_ = body.value("retryAfterSeconds", 1);
  } else if (path == "/_fake/config" && request.method == "POST") {
    ApiOptions options;
    options.expired_watch_as_410 = body.value("expiredWatchAs410", false);
    api_.SetOptions(options);
  } else if (path == "/_fake/restart" && request.method == "POST") {
    *restart_down_ms = std::max<int64_t>(0, body.value("downMs", 0));
  } else if (path == "/_fake/events" && request.method == "GET") {
    // Every Event, as an administrator's `kubectl get events -A` reads them (the role under
    // test does not read Events: gpupool only writes them).
    Json items = Json::array();
    for (const auto& event :
         store_.Select(ResourceId("events"), [](const Json&) { return true; })) {
      items.push_back(*event);
    }
    answer["items"] = std::move(items);
  } else if (path == "/_fake/admin" && request.method == "POST") {
    ApiRequest as_admin;
    as_admin.method = body.value("method", "GET");
    as_admin.path = body.value("path", "");
    as_admin.content_type = "application/json";
    if (body.contains("body")) as_admin.body = body["body"].dump();
    return api_.HandleAsAdmin(as_admin);
  } else if (path == "/_fake/fail" && request.method == "POST") {
    api_.FailNext(body.value("method", "POST"), body.value("path", ""), body.value("code", 409),
                  body.value("count", 1));
  } else if (path == "/_fake/stats" && request.method == "GET") {
    answer["requests"] = api_.RequestCounts();
    answer["denied"] = api_.DeniedCounts();
    answer["revision"] = store_.Revision();
    answer["compactedRevision"] = store_.CompactedRevision();
    std::lock_guard lock(mu_);
    answer["throttled"] = throttled_;
    answer["retryGapsMs"] = retry_gaps_ms_;
    answer["watchesOpened"] = watches_opened_;
    answer["connections"] = connections_.size();
  } else {
    return StatusResponse(404, "NotFound", "no test hook " + request.method + " " + path);
  }
  ApiResponse response;
  response.body = answer.dump();
  return response;
}

}  // namespace gpupool::kube::fake
