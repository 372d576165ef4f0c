#include "server/http_server.h"

// Boost 1.74's Asio uses std::exchange without including <utility>; C++20 headers no longer
// bring it in transitively.
#include <utility>
// clang-format off
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
// clang-format on

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "common/strings.h"
#include "model/json_io.h"
#include "server/path.h"
#include "server/status_to_http.h"

namespace gpupool::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Json = nlohmann::ordered_json;

// The request as parsed from the wire, with its query string decoded once.
struct HttpMessage {
  http::request<http::string_body> request;
  std::string method;
  std::string target;  // raw, query included
  std::string source;  // client address
  std::vector<std::pair<std::string, std::string>> query;
};

namespace {

const std::string kEmpty;

Reply ErrorReply(const Status& status) {
  return Reply::Json(ErrorBody(status), HttpStatusFor(status.code()));
}

// Form-style decoding of one query component: %XX and '+' for a space. A malformed escape is
// kept as written (the value is then checked by the handler that reads it).
std::string DecodeQueryComponent(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%' && i + 2 < text.size() && HexDigitValue(text[i + 1]) >= 0 &&
               HexDigitValue(text[i + 2]) >= 0) {
      out += static_cast<char>(HexDigitValue(text[i + 1]) * 16 + HexDigitValue(text[i + 2]));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> ParseQuery(std::string_view target) {
  std::vector<std::pair<std::string, std::string>> query;
  size_t mark = target.find('?');
  if (mark == std::string_view::npos) return query;
  std::string_view rest = target.substr(mark + 1);
  while (!rest.empty()) {
    size_t amp = rest.find('&');
    std::string_view item = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string_view key = item.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    query.emplace_back(DecodeQueryComponent(key), DecodeQueryComponent(value));
  }
  return query;
}

std::string BodyOf(const Reply& reply) {
  if (reply.status == 304 || reply.status == 204) return "";  // no body by definition
  return reply.text.empty() ? model::DumpCompact(reply.json) + "\n" : reply.text;
}

}  // namespace

const std::string& RouteRequest::Param(std::string_view name) const {
  auto it = params.find(name);
  return it == params.end() ? kEmpty : it->second;
}

std::optional<std::string> RouteRequest::Query(const std::string& name) const {
  if (http == nullptr) return std::nullopt;
  for (const auto& [key, value] : http->query) {
    if (key == name) return value;
  }
  return std::nullopt;
}

std::vector<std::string> RouteRequest::QueryAll(const std::string& name) const {
  std::vector<std::string> values;
  if (http == nullptr) return values;
  for (const auto& [key, value] : http->query) {
    if (key == name) values.push_back(value);
  }
  return values;
}

std::string RouteRequest::Header(const std::string& name) const {
  if (http == nullptr) return "";
  auto it = http->request.find(name);
  return it == http->request.end() ? "" : std::string(it->value());
}

const std::string& RouteRequest::Body() const {
  return http == nullptr ? kEmpty : http->request.body();
}

const std::string& RouteRequest::Target() const { return http == nullptr ? kEmpty : http->target; }

void Router::Add(std::string method, std::string pattern, RouteHandler handler,
                 RouteOptions options) {
  Route route;
  route.method = std::move(method);
  for (auto segment : PathSegments(pattern)) route.segments.emplace_back(segment);
  route.pattern = std::move(pattern);
  route.handler = std::move(handler);
  route.options = std::move(options);
  routes_.push_back(std::move(route));
}

void Router::AddAsync(std::string method, std::string pattern, AsyncRouteHandler handler,
                      RouteOptions options) {
  Add(std::move(method), std::move(pattern), nullptr, std::move(options));
  routes_.back().async_handler = std::move(handler);
}

Router::Match Router::Find(std::string_view method, std::string_view path) const {
  std::vector<std::string_view> segments = PathSegments(path);
  Match best;
  int best_exact = -1;
  for (const Route& route : routes_) {
    if (route.segments.size() != segments.size()) continue;
    int exact = 0;
    bool matches = true;
    for (size_t i = 0; i < segments.size() && matches; ++i) {
      const std::string& want = route.segments[i];
      if (want.size() > 2 && want.front() == '{' && want.back() == '}') continue;
      if (want == segments[i]) {
        ++exact;
      } else {
        matches = false;
      }
    }
    if (!matches) continue;
    if (route.method != method) {
      best.path_known = true;
      continue;
    }
    if (exact > best_exact) {
      best_exact = exact;
      best.route = &route;
    }
  }
  if (best.route != nullptr) {
    for (size_t i = 0; i < segments.size(); ++i) {
      const std::string& want = best.route->segments[i];
      if (want.size() > 2 && want.front() == '{') {
        best.params[want.substr(1, want.size() - 2)] = std::string(segments[i]);
      }
    }
  }
  return best;
}

// ---- Transport: Beast connections on Asio event loops ----------------------------------------

namespace {

using Clock = std::chrono::steady_clock;
// A socket bound to one loop's io_context (no type-erased executor: every operation of a
// connection runs on its loop's thread).
using Socket = asio::basic_stream_socket<tcp, asio::io_context::executor_type>;

class Connection;

// One event loop: an io_context run by one thread, the connections it owns, and a sweep that
// closes those silent past their deadline. A connection never leaves its loop, so none of this
// needs a lock or a strand.
struct Loop {
  asio::io_context io{1};
  asio::steady_timer sweep{io};
  asio::steady_timer lag_probe{io};
  std::vector<std::weak_ptr<Connection>> connections;
};

}  // namespace

struct HttpServer::Transport {
  Transport(HttpServer& owner, const ServerOptions& server_options);

  // A nested class may call the server's private request path; the connections call these.
  void Handle(std::shared_ptr<const HttpMessage> message, Send send) {
    server.Handle(std::move(message), std::move(send));
  }
  Reply Refuse(const std::string& method, const Status& status) {
    return server.Refuse(method, status);
  }

  HttpServer& server;
  const ServerOptions options;
  // Destroyed in reverse order: the workers (whose queued tasks hold connections) before the
  // loops the connections' sockets belong to.
  std::vector<std::unique_ptr<Loop>> loops;
  tcp::acceptor acceptor;  // on loops[0]
  size_t next_loop = 0;    // round robin for accepted connections (loops[0]'s thread only)
  asio::thread_pool workers;
  std::atomic<bool> running{false};
  std::atomic<bool> stopped{false};
  // Requests whose asynchronous handler has not answered yet: Serve() waits for them, since
  // their callbacks reach into the server.
  std::mutex async_mu;
  std::condition_variable async_cv;
  int async_pending = 0;
};

namespace {

using Transport = HttpServer::Transport;

bool IsBlockingMethod(std::string_view method) { return method != "GET" && method != "HEAD"; }

int IoThreads(const ServerOptions& options) {
  if (options.io_threads > 0) return options.io_threads;
  return std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
}

// One client connection: reads requests one after the other (HTTP/1.1 keep-alive; pipelined
// requests wait in the buffer and are answered in order), hands each to the server and writes
// its reply. Runs on its loop's thread; a
// reply computed by a worker is posted back to that loop.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Socket socket, Transport& transport, Loop& loop)
      : socket_(std::move(socket)), transport_(transport), loop_(loop) {
    beast::error_code ec;
    auto remote = socket_.remote_endpoint(ec);
    if (!ec) source_ = remote.address().to_string();
  }

  void Start() {
    loop_.connections.push_back(weak_from_this());
    ReadHeader();
  }

  // Called by the loop's sweep: closes the connection when the client kept it waiting too long
  // (mid-request, or idle between requests). Never while a worker holds its request.
  void CloseIfOverdue(Clock::time_point now) {
    if (now > deadline_) Close();
  }

 private:
  void ExpectClientWithin(std::chrono::seconds limit) { deadline_ = Clock::now() + limit; }
  void IdleTimeout() {
    ExpectClientWithin(std::chrono::seconds(transport_.options.idle_timeout_seconds));
  }
  void NoTimeout() { deadline_ = Clock::time_point::max(); }

  void ReadHeader() {
    parser_.emplace();
    parser_->body_limit(transport_.options.max_body_bytes);
    IdleTimeout();
    http::async_read_header(socket_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) return self->Fail(ec);
                              self->OnHeader();
                            });
  }

  // curl and other clients send `Expect: 100-continue` before a large body and wait for the
  // interim response (a second) before sending it.
  void OnHeader() {
    const auto& request = parser_->get();
    if (!parser_->is_done() && beast::iequals(request[http::field::expect], "100-continue")) {
      auto interim = std::make_shared<http::response<http::empty_body>>(http::status::continue_,
                                                                        request.version());
      http::async_write(socket_, *interim,
                        [self = shared_from_this(), interim](beast::error_code ec, size_t) {
                          if (ec) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->Fail(ec);
                       self->OnRequest();
                     });
  }

  void OnRequest() {
    NoTimeout();
    auto message = std::make_shared<HttpMessage>();
    message->request = parser_->release();
    message->method = std::string(message->request.method_string());
    message->target = std::string(message->request.target());
    message->query = ParseQuery(message->target);
    message->source = source_;
    ++served_;
    // The server routes and authenticates on this loop and answers here or from another thread
    // (a worker, or whoever completes an asynchronous handler); the write is always this loop's.
    transport_.Handle(message, [self = shared_from_this(), message](Reply reply) {
      asio::dispatch(self->loop_.io,
                     [self, message, reply = std::move(reply)] { self->Respond(*message, reply); });
    });
  }

  void Respond(const HttpMessage& message, const Reply& reply) {
    bool keep_alive = message.request.keep_alive() &&
                      served_ < transport_.options.keep_alive_max_requests && !transport_.stopped;
    Write(MakeResponse(reply, message.request.version(), keep_alive), message.method == "HEAD");
  }

  static std::shared_ptr<http::response<http::string_body>> MakeResponse(const Reply& reply,
                                                                         unsigned version,
                                                                         bool keep_alive) {
    auto response = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(reply.status), version);
    response->set(http::field::server, "gpupool");
    response->set(http::field::content_type,
                  reply.text.empty() ? std::string("application/json") : reply.content_type);
    for (const auto& [name, value] : reply.headers) response->set(name, value);
    response->body() = BodyOf(reply);
    response->keep_alive(keep_alive);
    response->prepare_payload();
    return response;
  }

  void Write(std::shared_ptr<http::response<http::string_body>> response, bool headers_only) {
    if (headers_only) response->body().clear();  // Content-Length stays that of the GET
    IdleTimeout();
    http::async_write(socket_, *response,
                      [self = shared_from_this(), response](beast::error_code ec, size_t) {
                        if (ec) return self->Close();
                        if (!response->keep_alive()) return self->Linger();
                        self->ReadHeader();
                      });
  }

  // A read that ended without a request: the peer left or went quiet (close), or sent something
  // that is not HTTP or a body over the limit (answer 400, then close).
  void Fail(beast::error_code ec) {
    bool parse_error = &ec.category() == &http::make_error_code(http::error::bad_method).category();
    if (!parse_error || ec == http::error::end_of_stream || ec == http::error::partial_message) {
      return Close();
    }
    std::string method(parser_->get().method_string());
    Status status =
        ec == http::error::body_limit
            ? InvalidArgumentError("request body exceeds the limit of " +
                                   std::to_string(transport_.options.max_body_bytes) + " bytes")
            : InvalidArgumentError("malformed HTTP request: " + ec.message());
    Write(MakeResponse(transport_.Refuse(method, status), 11, /*keep_alive=*/false), false);
  }

  // After the last reply: stop sending, then read and drop what the client still sends (e.g. the
  // rest of a refused body) until it closes, so the kernel does not reset the connection before
  // the client has read the reply.
  void Linger() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    ExpectClientWithin(std::chrono::seconds(5));
    buffer_.clear();
    socket_.async_read_some(buffer_.prepare(64 * 1024),
                            [self = shared_from_this()](beast::error_code error, size_t) {
                              if (error) return self->Close();
                              self->Linger();
                            });
  }

  void Close() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

  Socket socket_;
  Transport& transport_;
  Loop& loop_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string source_;
  int served_ = 0;
  Clock::time_point deadline_ = Clock::time_point::max();
};

void Sweep(Loop& loop) {
  loop.sweep.expires_after(std::chrono::seconds(1));
  loop.sweep.async_wait([&loop](beast::error_code ec) {
    if (ec) return;
    auto now = Clock::now();
    auto& live = loop.connections;
    live.erase(std::remove_if(live.begin(), live.end(),
                              [now](const std::weak_ptr<Connection>& weak) {
                                auto connection = weak.lock();
                                if (connection == nullptr) return true;
                                connection->CloseIfOverdue(now);
                                return false;
                              }),
               live.end());
    Sweep(loop);
  });
}

// Often enough that a stall of a few tens of milliseconds always overlaps a probe; rarely enough
// to cost nothing measurable (50 wake-ups a second per loop).
constexpr auto kLagProbeInterval = std::chrono::milliseconds(20);

// Observes how late the loop's timer fires, then re-arms it: a request that arrived when the
// probe was due waited about as long before the loop could read it.
void ProbeLag(Loop& loop, Histogram* lag) {
  auto due = Clock::now() + kLagProbeInterval;
  loop.lag_probe.expires_at(due);
  loop.lag_probe.async_wait([&loop, lag, due](beast::error_code ec) {
    if (ec) return;
    lag->Observe({}, std::chrono::duration<double>(Clock::now() - due).count());
    ProbeLag(loop, lag);
  });
}

void Accept(Transport& transport) {
  Loop& loop = *transport.loops[transport.next_loop];
  transport.next_loop = (transport.next_loop + 1) % transport.loops.size();
  transport.acceptor.async_accept(
      loop.io, [&transport, &loop](beast::error_code ec, Socket socket) {
        if (ec == asio::error::operation_aborted || !transport.acceptor.is_open()) return;
        if (!ec) {
          socket.set_option(tcp::no_delay(true), ec);
          // Start on the connection's own loop: its list of connections is that thread's alone.
          asio::post(loop.io, [&transport, &loop, socket = std::move(socket)]() mutable {
            std::make_shared<Connection>(std::move(socket), transport, loop)->Start();
          });
        }
        Accept(transport);
      });
}

}  // namespace

HttpServer::Transport::Transport(HttpServer& owner, const ServerOptions& server_options)
    : server(owner),
      options(server_options),
      loops([&] {
        std::vector<std::unique_ptr<Loop>> made;
        for (int i = 0; i < IoThreads(server_options); ++i)
          made.push_back(std::make_unique<Loop>());
        return made;
      }()),
      acceptor(loops[0]->io),
      workers(std::max(1, server_options.threads)) {}

HttpServer::HttpServer(Router router, const Authenticator* authenticator, AccessChecker access,
                       AuditHook audit, Registry& registry, ServerOptions options)
    : router_(std::move(router)),
      authenticator_(authenticator),
      access_(std::move(access)),
      audit_(std::move(audit)),
      options_(options),
      transport_(std::make_unique<Transport>(*this, options)) {
  requests_ = registry.AddCounter("gpupool_http_requests_total",
                                  "HTTP requests by route pattern, method and status code.",
                                  {"route", "method", "code"});
  latency_ = registry.AddHistogram("gpupool_http_request_duration_seconds",
                                   "HTTP request latency by route pattern and status code.",
                                   {"route", "method", "code"}, LatencyBuckets());
  loop_lag_ = registry.AddHistogram(
      "gpupool_http_loop_lag_seconds",
      "How late the I/O loops' probe timers (every 20 ms) fired: how long a request arriving "
      "then waited in its socket before a loop could read it.",
      {}, {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1});
}

HttpServer::~HttpServer() { Stop(); }

Result<int> HttpServer::Bind(const std::string& host, int port) {
  tcp::acceptor& acceptor = transport_->acceptor;
  beast::error_code ec;
  tcp::resolver resolver(transport_->loops[0]->io);
  auto endpoints = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec) return UnavailableError("cannot resolve " + host + ": " + ec.message());
  for (const auto& entry : endpoints) {
    if (acceptor.is_open()) acceptor.close(ec);
    acceptor.open(entry.endpoint().protocol(), ec);
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(entry.endpoint(), ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) return static_cast<int>(acceptor.local_endpoint().port());
  }
  beast::error_code ignored;
  if (acceptor.is_open()) acceptor.close(ignored);
  return UnavailableError("cannot bind " + host + ":" + std::to_string(port) + ": " + ec.message());
}

void HttpServer::Serve() {
  Transport& transport = *transport_;
  if (transport.stopped || !transport.acceptor.is_open()) return;
  transport.running = true;
  Accept(transport);
  std::vector<std::thread> threads;
  for (auto& loop : transport.loops) {
    Sweep(*loop);
    ProbeLag(*loop, loop_lag_);
    if (loop != transport.loops[0]) threads.emplace_back([&loop] { loop->io.run(); });
  }
  transport.loops[0]->io.run();
  for (auto& thread : threads) thread.join();
  beast::error_code ec;
  transport.acceptor.close(ec);
  transport.workers.stop();  // requests not yet started are dropped: their clients see a close
  transport.workers.join();  // handlers already running finish
  std::unique_lock lock(transport.async_mu);
  transport.async_cv.wait(lock, [&] { return transport.async_pending == 0; });
  transport.running = false;
}

void HttpServer::Stop() {
  if (transport_->stopped.exchange(true)) return;
  for (auto& loop : transport_->loops) loop->io.stop();
}

bool HttpServer::IsRunning() const { return transport_->running; }

Reply HttpServer::Refuse(const std::string& method, const Status& status) {
  Reply reply = ErrorReply(status);
  requests_->Increment({"(refused)", method, std::to_string(reply.status)});
  return reply;
}

struct HttpServer::Exchange {
  std::shared_ptr<const HttpMessage> message;
  RouteRequest request;
  const Router::Route* route = nullptr;  // the matched route, if any
  std::chrono::steady_clock::time_point start;
  Send send;
};

std::optional<Reply> HttpServer::Dispatch(Exchange& exchange) {
  const HttpMessage& message = *exchange.message;
  RouteRequest& route_request = exchange.request;
  auto path = NormalizePath(message.target);
  if (!path.ok()) return ErrorReply(path.status());
  route_request.path = *path;
  // HEAD is GET without the body (RFC 9110 §9.3.2).
  std::string_view method = message.method == "HEAD" ? "GET" : message.method;
  Router::Match match = router_.Find(method, route_request.path);
  if (match.route == nullptr) {
    if (match.path_known) {
      return Reply::Json(Json{{"message", message.method + " is not allowed on " + *path},
                              {"error_code", 405},
                              {"code", "METHOD_NOT_ALLOWED"}},
                         405);
    }
    return ErrorReply(NotFoundError("no route " + message.method + " " + *path));
  }
  exchange.route = match.route;
  route_request.pattern = match.route->pattern;
  route_request.params = std::move(match.params);
  if (match.route->options.requires_auth) {
    if (authenticator_ == nullptr) return ErrorReply(UnauthenticatedError("no authenticator"));
    auto identity = authenticator_->Authenticate(route_request.Header("Authorization"));
    if (!identity.ok()) return ErrorReply(identity.status());
    route_request.identity = std::move(*identity);
    if (access_) {
      std::optional<std::string> pool;
      if (match.route->options.resource_pool)
        pool = match.route->options.resource_pool(route_request);
      Status allowed = access_(route_request.identity, route_request, pool);
      if (!allowed.ok()) return ErrorReply(allowed);
      route_request.access_checked_pool = std::move(pool);
    }
  }
  return std::nullopt;
}

void HttpServer::Handle(std::shared_ptr<const HttpMessage> message, Send send) {
  auto exchange = std::make_shared<Exchange>();
  exchange->start = std::chrono::steady_clock::now();
  exchange->request.http = message.get();
  exchange->request.method = message->method;
  exchange->request.source = message->source;
  exchange->message = std::move(message);
  exchange->send = std::move(send);
  std::optional<Reply> reply = Dispatch(*exchange);
  if (reply) return Finish(*exchange, std::move(*reply));
  const Router::Route& route = *exchange->route;
  if (route.async_handler) return RunAsync(std::move(exchange));
  if (!IsBlockingMethod(exchange->request.method)) return RunHandler(*exchange);
  asio::post(transport_->workers, [this, exchange] { RunHandler(*exchange); });
}

void HttpServer::RunHandler(Exchange& exchange) {
  Reply reply;
  try {
    Result<Reply> result = exchange.route->handler(exchange.request);
    reply = result.ok() ? std::move(*result) : ErrorReply(result.status());
  } catch (const std::exception& e) {
    reply = ErrorReply(InternalError(std::string("unhandled exception: ") + e.what()));
  }
  Finish(exchange, std::move(reply));
}

void HttpServer::RunAsync(std::shared_ptr<Exchange> exchange) {
  Transport& transport = *transport_;
  {
    std::lock_guard lock(transport.async_mu);
    ++transport.async_pending;
  }
  auto answered = std::make_shared<std::atomic<bool>>(false);
  Respond respond = [this, exchange, answered](Result<Reply> result) {
    if (answered->exchange(true)) return;
    Finish(*exchange, result.ok() ? std::move(*result) : ErrorReply(result.status()));
    Transport& transport = *transport_;
    std::lock_guard lock(transport.async_mu);
    if (--transport.async_pending == 0) transport.async_cv.notify_all();
  };
  try {
    exchange->route->async_handler(exchange->request, respond);
  } catch (const std::exception& e) {
    respond(InternalError(std::string("unhandled exception: ") + e.what()));
  }
}

void HttpServer::Finish(Exchange& exchange, Reply reply) {
  const std::string& method = exchange.message->method;
  std::string code = std::to_string(reply.status);
  std::string label = exchange.route != nullptr ? exchange.route->pattern : "(unmatched)";
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - exchange.start).count();
  requests_->Increment({label, method, code});
  latency_->Observe({label, method, code}, seconds);
  if (audit_ && exchange.route != nullptr && IsBlockingMethod(method) &&
      !exchange.request.audited && !exchange.request.identity.user.empty()) {
    audit_(exchange.request, reply.status);
  }
  exchange.send(std::move(reply));
}

// ---- Decoding helpers ----------------------------------------------------------------------

Result<Json> DecodeBody(const RouteRequest& request) {
  const std::string& body = request.Body();
  std::string_view trimmed = Trim(body);
  if (trimmed.empty()) return InvalidArgumentError("request body is empty");
  std::string content_type = ToLower(request.Header("Content-Type"));
  bool json = content_type.find("json") != std::string::npos || trimmed.front() == '{' ||
              trimmed.front() == '[';
  if (json) return model::ParseJson(body, "request body");
  ASSIGN_OR_RETURN(auto docs, model::ParseYamlDocuments(body, "request body"));
  if (docs.size() != 1) {
    return InvalidArgumentError("request body: expected one YAML document, found " +
                                std::to_string(docs.size()));
  }
  return std::move(docs[0].value);
}

namespace {

Status WrongType(std::string_view field, const char* want, const Json& value) {
  return InvalidArgumentError("request body: field \"" + std::string(field) + "\": expected " +
                              want + ", found " + model::JsonTypeName(value));
}

const Json* FindField(const Json& body, std::string_view field) {
  if (!body.is_object()) return nullptr;
  auto it = body.find(std::string(field));
  return it == body.end() ? nullptr : &*it;
}

Status Missing(std::string_view field) {
  return InvalidArgumentError("request body: missing required field \"" + std::string(field) +
                              "\"");
}

}  // namespace

Result<std::string> StringField(const Json& body, std::string_view field,
                                std::optional<std::string> default_value) {
  const Json* value = FindField(body, field);
  if (value == nullptr || value->is_null()) {
    if (default_value) return *default_value;
    return Missing(field);
  }
  if (!value->is_string()) return WrongType(field, "a string", *value);
  return value->get<std::string>();
}

Result<int64_t> IntField(const Json& body, std::string_view field,
                         std::optional<int64_t> default_value) {
  const Json* value = FindField(body, field);
  if (value == nullptr || value->is_null()) {
    if (default_value) return *default_value;
    return Missing(field);
  }
  if (!value->is_number_integer()) return WrongType(field, "an integer", *value);
  return value->get<int64_t>();
}

Result<bool> BoolField(const Json& body, std::string_view field,
                       std::optional<bool> default_value) {
  const Json* value = FindField(body, field);
  if (value == nullptr || value->is_null()) {
    if (default_value) return *default_value;
    return Missing(field);
  }
  if (!value->is_boolean()) return WrongType(field, "a boolean", *value);
  return value->get<bool>();
}

Result<std::optional<int64_t>> IntQuery(const RouteRequest& request, const std::string& name) {
  auto text = request.Query(name);
  if (!text) return std::optional<int64_t>();
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text->c_str(), &end, 10);
  if (text->empty() || errno != 0 || *end != '\0') {
    return InvalidArgumentError("query parameter " + name + "=\"" + *text +
                                "\": expected an integer");
  }
  return std::optional<int64_t>(value);
}

Result<bool> BoolQuery(const RouteRequest& request, const std::string& name, bool default_value) {
  auto text = request.Query(name);
  if (!text) return default_value;
  std::string lower = ToLower(*text);
  if (lower == "true" || lower == "1" || lower.empty()) return true;
  if (lower == "false" || lower == "0") return false;
  return InvalidArgumentError("query parameter " + name + "=\"" + *text +
                              "\": expected true or false");
}

}  // namespace gpupool::server
