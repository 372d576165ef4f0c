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

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <future>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "codec/json_writer.h"
#include "common/safe_text.h"
#include "common/strings.h"
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

// An error with an HTTP status no Status code maps to (405, 501), in the same shape.
Reply HttpError(int status, std::string code, std::string message) {
  return Reply::Json(
      Json{{"message", std::move(message)}, {"error_code", status}, {"code", std::move(code)}},
      status);
}

// The text of the exception being handled; called in a catch block.
std::string CurrentExceptionText() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception of unknown type";
  }
}

// One line on stderr, written at once (threads log concurrently).
void Log(const std::string& line) { std::cerr << ("gpupool serve: " + TerminalSafe(line) + "\n"); }

// Query parameters and header values become strings that handlers put in replies and in the
// store: text that is not UTF-8 is refused here, at the edge, rather than stored.
Status CheckRequestText(const HttpMessage& message) {
  for (const auto& [key, value] : message.query) {
    for (const std::string* text : {&key, &value}) {
      if (auto bad = FindInvalidUtf8(*text)) {
        return InvalidArgumentError("query parameter \"" + TerminalSafe(key) +
                                    "\": not valid UTF-8 (byte " + bad->ByteText() + " at column " +
                                    std::to_string(bad->column) + ")");
      }
    }
  }
  for (const auto& field : message.request) {
    const auto value = field.value();
    if (auto bad = FindInvalidUtf8(std::string_view(value.data(), value.size()))) {
      return InvalidArgumentError("header " + std::string(field.name_string()) +
                                  ": not valid UTF-8 (byte " + bad->ByteText() + " at column " +
                                  std::to_string(bad->column) + ")");
    }
  }
  return OkStatus();
}

std::string BodyOf(const Reply& reply) {
  if (reply.status == 304 || reply.status == 204) return "";  // no body by definition
  return reply.text.empty() ? codec::DumpCompact(reply.json) + "\n" : reply.text;
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
  Reply Refuse(const std::string& method, Reply reply) {
    return server.Refuse(method, std::move(reply));
  }
  // A connection closed: accepting resumes if it had stopped at the cap.
  void Closed();

  HttpServer& server;
  const ServerOptions options;
  const int max_connections;
  // Connections accepted and not yet destroyed; declared before the loops, whose destruction
  // destroys the last connections.
  std::atomic<int> connections{0};
  // Destroyed in reverse order: the workers (whose queued tasks hold connections) before the
  // loops the connections' sockets belong to.
  std::vector<std::unique_ptr<Loop>> loops;
  tcp::acceptor acceptor;  // on loops[0]
  size_t next_loop = 0;    // round robin for accepted connections (loops[0]'s thread only)
  // The acceptor's state, loops[0]'s thread only: waiting for a connection to close (at the
  // cap), and whether accept() has been failing since it last succeeded (one log per episode).
  bool accept_paused = false;
  int accept_failures = 0;
  bool failures_logged = false;  // this episode's start was logged
  // When each condition was last logged: both may come and go many times a second.
  std::chrono::steady_clock::time_point failure_logged_at{}, cap_logged_at{};
  asio::steady_timer accept_backoff;  // on loops[0]
  Counter* accept_errors = nullptr;   // set by the server's constructor
  Gauge* open_connections = nullptr;  //
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

// The request a parser completed, as the server reads it.
std::shared_ptr<HttpMessage> MessageOf(http::request<http::string_body> request,
                                       const std::string& source) {
  auto message = std::make_shared<HttpMessage>();
  message->request = std::move(request);
  message->method = std::string(message->request.method_string());
  message->target = std::string(message->request.target());
  message->query = ParseQuery(message->target);
  message->source = source;
  return message;
}

// Why a read ended without a request: nullopt when the peer left or went quiet (the connection
// just closes), else the refusal for something that is not HTTP or a body over the limit.
std::optional<Status> ReadFailure(const beast::error_code& ec, size_t max_body_bytes) {
  bool parse_error = &ec.category() == &http::make_error_code(http::error::bad_method).category();
  if (!parse_error || ec == http::error::end_of_stream || ec == http::error::partial_message) {
    return std::nullopt;
  }
  if (ec == http::error::body_limit) {
    return InvalidArgumentError("request body exceeds the limit of " +
                                std::to_string(max_body_bytes) + " bytes");
  }
  return InvalidArgumentError("malformed HTTP request: " + ec.message());
}

// RFC 9112 §6.1: a server that does not understand a transfer coding answers 501. Beast decodes
// `chunked` alone: under `gzip, chunked` a handler would read the compressed bytes as text.
std::optional<Reply> UnsupportedTransferCoding(const http::request_header<>& request) {
  auto [first, last] = request.equal_range(http::field::transfer_encoding);
  if (first == last) return std::nullopt;
  const auto coding = first->value();
  if (std::next(first) == last &&
      ToLower(Trim(std::string_view(coding.data(), coding.size()))) == "chunked") {
    return std::nullopt;
  }
  std::vector<std::string> codings;
  for (auto it = first; it != last; ++it) codings.emplace_back(it->value());
  return HttpError(501, "NOT_IMPLEMENTED",
                   "Transfer-Encoding \"" + Join(codings, ", ") +
                       "\" is not supported: send the body as it is, or chunked alone");
}

std::shared_ptr<http::response<http::string_body>> MakeResponse(const Reply& reply,
                                                                unsigned version, bool keep_alive) {
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

// MakeResponse; a reply that cannot be encoded (it threw) is logged and becomes a 500 that closes.
std::shared_ptr<http::response<http::string_body>> EncodeReply(const Reply& reply, unsigned version,
                                                               bool keep_alive) {
  try {
    return MakeResponse(reply, version, keep_alive);
  } catch (...) {
    Log("encoding a reply: unhandled exception: " + CurrentExceptionText());
    Reply failed = Reply::Text("internal error\n", "text/plain");
    failed.status = 500;
    return MakeResponse(failed, version, /*keep_alive=*/false);
  }
}

// One client connection: reads requests one after the other (HTTP/1.1 keep-alive; pipelined
// requests wait in the buffer and are answered in order), hands each to the server and writes
// its reply. Runs on its loop's thread; a
// reply computed by a worker is posted back to that loop.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // The transport has counted the connection; the destructor uncounts it.
  Connection(Socket socket, Transport& transport, Loop& loop)
      : socket_(std::move(socket)), transport_(transport), loop_(loop) {
    beast::error_code ec;
    auto remote = socket_.remote_endpoint(ec);
    if (!ec) source_ = remote.address().to_string();
  }
  ~Connection() { transport_.Closed(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

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
    if (auto refusal = UnsupportedTransferCoding(request)) {
      std::string method(request.method_string());
      return Write(MakeResponse(transport_.Refuse(method, std::move(*refusal)), request.version(),
                                /*keep_alive=*/false),
                   false);
    }
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
    std::shared_ptr<HttpMessage> message = MessageOf(parser_->release(), source_);
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
    Write(EncodeReply(reply, message.request.version(), keep_alive), message.method == "HEAD");
  }

  void Write(const std::shared_ptr<http::response<http::string_body>>& response,
             bool headers_only) {
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
    std::optional<Status> refusal = ReadFailure(ec, transport_.options.max_body_bytes);
    if (!refusal) return Close();
    std::string method(parser_->get().method_string());
    Write(MakeResponse(transport_.Refuse(method, ErrorReply(*refusal)), 11, /*keep_alive=*/false),
          false);
  }

  // After the last reply: stop sending, then read and drop what the client still sends (e.g. the
  // rest of a refused body) until it closes, so the kernel does not reset the connection before
  // the client has read the reply.
  void Linger() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    ExpectClientWithin(std::chrono::seconds(5));
    buffer_.clear();
    socket_.async_read_some(buffer_.prepare(size_t{64} * 1024),
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

void Accept(Transport& transport);

// True at most once a minute for `last`: a condition that comes and goes under load (at the
// connection cap, out of descriptors) is logged when it starts, without flooding the log.
bool LogDue(Clock::time_point& last) {
  const auto now = Clock::now();
  if (last != Clock::time_point{} && now - last < std::chrono::minutes(1)) return false;
  last = now;
  return true;
}

// accept() failed. The pending connection stays in the backlog, so the listening socket stays
// readable: trying again at once would spin (100 % CPU, nothing answered) until descriptors free
// up. Only a peer that gave up before it was accepted is no reason to wait.
void AcceptFailed(Transport& transport, const beast::error_code& ec) {
  transport.accept_errors->Increment({});
  if (ec == asio::error::connection_aborted) return Accept(transport);
  if (transport.accept_failures++ == 0 && LogDue(transport.failure_logged_at)) {
    transport.failures_logged = true;
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    Log("cannot accept connections: " + ec.message() + " (" +
        std::to_string(transport.connections.load()) + " open, descriptor limit " +
        std::to_string(limit.rlim_cur) + "); trying again every " +
        std::to_string(kAcceptBackoff.count()) + " ms");
  }
  transport.accept_backoff.expires_after(kAcceptBackoff);
  transport.accept_backoff.async_wait([&transport](beast::error_code wait_ec) {
    if (!wait_ec) Accept(transport);
  });
}

void Accept(Transport& transport) {
  if (transport.connections.load() >= transport.max_connections) {
    // Resumed by Transport::Closed; until then new connections wait in the kernel's backlog.
    if (!transport.accept_paused && LogDue(transport.cap_logged_at)) {
      Log(std::to_string(transport.max_connections) +
          " connections open (--max-connections): new ones wait until one closes");
    }
    transport.accept_paused = true;
    return;
  }
  Loop& loop = *transport.loops[transport.next_loop];
  transport.next_loop = (transport.next_loop + 1) % transport.loops.size();
  transport.acceptor.async_accept(
      loop.io, [&transport, &loop](beast::error_code ec, Socket socket) {
        if (ec == asio::error::operation_aborted || !transport.acceptor.is_open()) return;
        if (ec) return AcceptFailed(transport, ec);
        if (transport.failures_logged) {
          Log("accepting connections again after " + std::to_string(transport.accept_failures) +
              " failed attempts");
          transport.failures_logged = false;
        }
        transport.accept_failures = 0;
        transport.open_connections->Set({}, ++transport.connections);
        socket.set_option(tcp::no_delay(true), ec);
        // Start on the connection's own loop: its list of connections is that thread's alone.
        asio::post(loop.io, [&transport, &loop, socket = std::move(socket)]() mutable {
          std::make_shared<Connection>(std::move(socket), transport, loop)->Start();
        });
        Accept(transport);
      });
}

// Runs a loop until it is stopped. An exception thrown by a completion handler leaves run():
// it is logged and the loop goes on serving the other connections (the handler's connection,
// destroyed with it, is closed).
void RunLoop(asio::io_context& io) {
  for (;;) {
    try {
      io.run();
      return;
    } catch (...) {
      Log("I/O loop: unhandled exception: " + CurrentExceptionText());
    }
  }
}

}  // namespace

int EffectiveMaxConnections(const ServerOptions& options) {
  if (options.max_connections > 0) return options.max_connections;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024 - kReservedDescriptors;
  const rlim_t descriptors = std::min<rlim_t>(limit.rlim_cur, 1 << 20);  // RLIM_INFINITY too
  const rlim_t reserved = kReservedDescriptors;
  return static_cast<int>(descriptors > reserved + 16 ? descriptors - reserved : 16);
}

HttpServer::Transport::Transport(HttpServer& owner, const ServerOptions& server_options)
    : server(owner),
      options(server_options),
      max_connections(EffectiveMaxConnections(server_options)),
      loops([&] {
        std::vector<std::unique_ptr<Loop>> made;
        for (int i = 0; i < IoThreads(server_options); ++i)
          made.push_back(std::make_unique<Loop>());
        return made;
      }()),
      acceptor(loops[0]->io),
      accept_backoff(loops[0]->io),
      workers(std::max(1, server_options.threads)) {}

void HttpServer::Transport::Closed() {
  int before = connections.fetch_sub(1);
  open_connections->Set({}, before - 1);
  // Once stopped, the loops may be going away: nothing is posted to them.
  if (before < max_connections || stopped) return;
  asio::post(loops[0]->io, [this] {
    if (!accept_paused || !acceptor.is_open()) return;
    accept_paused = false;
    Accept(*this);
  });
}

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
  transport_->accept_errors = registry.AddCounter(
      "gpupool_http_accept_errors_total",
      "Failed accept() calls (EMFILE, ENFILE: out of descriptors); after each the acceptor waits.");
  transport_->open_connections =
      registry.AddGauge("gpupool_http_connections", "Open HTTP connections.");
  transport_->open_connections->Set({}, 0);
}

HttpServer::~HttpServer() {
  Stop();
  WaitForAsyncHandlers();
}

// An asynchronous handler's `respond` reaches into the server after it has handed the reply on
// (it counts the request as answered): whoever is about to destroy the server, or to return to a
// caller who may, waits for that.
void HttpServer::WaitForAsyncHandlers() {
  Transport& transport = *transport_;
  std::unique_lock lock(transport.async_mu);
  transport.async_cv.wait(lock, [&] { return transport.async_pending == 0; });
}

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
    if (loop != transport.loops[0]) threads.emplace_back([&loop] { RunLoop(loop->io); });
  }
  RunLoop(transport.loops[0]->io);
  for (auto& thread : threads) thread.join();
  beast::error_code ec;
  transport.acceptor.close(ec);
  transport.workers.stop();  // requests not yet started are dropped: their clients see a close
  transport.workers.join();  // handlers already running finish
  WaitForAsyncHandlers();
  transport.running = false;
}

void HttpServer::Stop() {
  if (transport_->stopped.exchange(true)) return;
  for (auto& loop : transport_->loops) loop->io.stop();
}

bool HttpServer::IsRunning() const { return transport_->running; }

Reply HttpServer::Refuse(const std::string& method, Reply reply) {
  requests_->Increment({"(refused)", method, std::to_string(reply.status)});
  return reply;
}

struct HttpServer::Exchange {
  std::shared_ptr<const HttpMessage> message;
  RouteRequest request;
  const Router::Route* route = nullptr;  // the matched route, if any
  std::chrono::steady_clock::time_point start;
  Send send;
  std::atomic<bool> finished{false};  // Finish ran: the one reply is on its way
};

namespace {

const std::string kGet = "GET";

std::string AllowHeader(const std::vector<std::string>& methods) { return Join(methods, ", "); }

}  // namespace

std::optional<Reply> HttpServer::Dispatch(Exchange& exchange) {
  const HttpMessage& message = *exchange.message;
  RouteRequest& route_request = exchange.request;
  auto path = NormalizePath(message.target);
  if (!path.ok()) return ErrorReply(path.status());
  route_request.path = *path;
  if (Status text = CheckRequestText(message); !text.ok()) return ErrorReply(text);
  // HEAD is GET without the body (RFC 9110 §9.3.2).
  const std::string& method = message.method == "HEAD" ? kGet : message.method;
  Router::Match match = router_.Find(method, route_request.path);
  if (match.route == nullptr && match.allowed_methods.empty()) {
    return ErrorReply(NotFoundError("no route " + message.method + " " + *path));
  }
  const bool requires_auth =
      match.route != nullptr ? match.route->options.requires_auth : match.path_requires_auth;
  if (requires_auth) {
    if (authenticator_ == nullptr) return ErrorReply(UnauthenticatedError("no authenticator"));
    auto identity = authenticator_->Authenticate(route_request.Header("Authorization"));
    if (!identity.ok()) return ErrorReply(identity.status());
    route_request.identity = std::move(*identity);
  }
  if (match.route == nullptr) {
    const std::string allow = AllowHeader(match.allowed_methods);
    Reply reply =
        HttpError(405, "METHOD_NOT_ALLOWED",
                  message.method + " is not allowed on " + *path + " (allowed: " + allow + ")");
    reply.headers.emplace_back("Allow", allow);
    return reply;
  }
  exchange.route = match.route;
  route_request.pattern = match.route->pattern;
  route_request.params = std::move(match.params);
  if (requires_auth && access_) {
    std::optional<std::string> pool;
    if (match.route->options.resource_pool)
      pool = match.route->options.resource_pool(route_request);
    Status allowed = access_(route_request.identity, route_request, pool);
    if (!allowed.ok()) return ErrorReply(allowed);
    route_request.access_checked_pool = std::move(pool);
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
  try {
    std::optional<Reply> reply = Dispatch(*exchange);
    if (reply) return Finish(*exchange, std::move(*reply));
    if (Status body = CheckBodyText(exchange->message->request.body()); !body.ok()) {
      return Finish(*exchange, ErrorReply(body));
    }
    const Router::Route& route = *exchange->route;
    if (route.async_handler) return RunAsync(exchange);
    if (!IsBlockingMethod(exchange->request.method)) return RunHandler(*exchange);
    asio::post(transport_->workers, [this, exchange] { RunHandler(*exchange); });
  } catch (...) {
    Crashed(*exchange, CurrentExceptionText());
  }
}

void HttpServer::Crashed(Exchange& exchange, const std::string& what) {
  // The route's pattern and the user, never the path, query, headers or body: they may hold
  // what must not reach a log.
  const std::string route = exchange.route != nullptr ? exchange.route->pattern : "(unrouted)";
  Log("unhandled exception in " + exchange.message->method + " " + route +
      (exchange.request.identity.user.empty() ? "" : " by " + exchange.request.identity.user) +
      ": " + what);
  try {
    Finish(exchange, ErrorReply(InternalError("unhandled exception: " + what)));
  } catch (...) {
    Log("answering after an unhandled exception: " + CurrentExceptionText());
  }
}

// Runs on an I/O thread or a worker: nothing may escape either (a worker's exception would end
// the process).
void HttpServer::RunHandler(Exchange& exchange) {
  try {
    Result<Reply> result = exchange.route->handler(exchange.request);
    Finish(exchange, result.ok() ? std::move(*result) : ErrorReply(result.status()));
  } catch (...) {
    Crashed(exchange, CurrentExceptionText());
  }
}

void HttpServer::RunAsync(const std::shared_ptr<Exchange>& exchange) {
  Transport& transport = *transport_;
  {
    std::lock_guard lock(transport.async_mu);
    ++transport.async_pending;
  }
  auto answered = std::make_shared<std::atomic<bool>>(false);
  // Called from any thread (a store's commit thread, say): guarded like a handler.
  Respond respond = [this, exchange, answered](Result<Reply> result) {
    if (answered->exchange(true)) return;
    try {
      Finish(*exchange, result.ok() ? std::move(*result) : ErrorReply(result.status()));
    } catch (...) {
      Crashed(*exchange, CurrentExceptionText());
    }
    Transport& transport = *transport_;
    std::lock_guard lock(transport.async_mu);
    if (--transport.async_pending == 0) transport.async_cv.notify_all();
  };
  try {
    exchange->route->async_handler(exchange->request, respond);
  } catch (...) {
    const std::string what = CurrentExceptionText();
    Crashed(*exchange, what);
    respond(InternalError("unhandled exception: " + what));  // only releases the pending count
  }
}

void HttpServer::Finish(Exchange& exchange, Reply reply) {
  if (exchange.finished.exchange(true)) return;
  const std::string& method = exchange.message->method;
  std::string code = std::to_string(reply.status);
  std::string label = exchange.route != nullptr ? exchange.route->pattern : "(unmatched)";
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - exchange.start).count();
  requests_->Increment({label, method, code});
  latency_->Observe({label, method, code}, seconds);
  if (audit_ && exchange.route != nullptr && IsBlockingMethod(method) &&
      !exchange.request.audited && !exchange.request.identity.user.empty()) {
    try {
      audit_(exchange.request, reply.status);
    } catch (...) {
      // A failed audit append must not fail the request (nor leave it unanswered).
      Log("audit hook for " + method + " " + label +
          ": unhandled exception: " + CurrentExceptionText());
    }
  }
  exchange.send(std::move(reply));
}

// ---- Without a socket ------------------------------------------------------------------------

namespace {

// A SyncReadStream over bytes already received: what a connection's socket would have read,
// then the end of the stream.
class BytesStream {
 public:
  explicit BytesStream(std::string_view bytes) : rest_(bytes) {}

  template <class MutableBuffers>
  size_t read_some(const MutableBuffers& buffers, beast::error_code& ec) {
    ec = {};
    if (rest_.empty()) {
      ec = asio::error::eof;
      return 0;
    }
    size_t copied = asio::buffer_copy(buffers, asio::buffer(rest_.data(), rest_.size()));
    rest_.remove_prefix(copied);
    return copied;
  }
  template <class MutableBuffers>
  size_t read_some(const MutableBuffers& buffers) {
    beast::error_code ec;
    size_t copied = read_some(buffers, ec);
    if (ec) throw beast::system_error(ec);
    return copied;
  }

 private:
  std::string_view rest_;
};

template <class Body>
std::string Serialized(const http::response<Body>& response) {
  std::ostringstream out;
  out << response;
  return out.str();
}

}  // namespace

std::string HttpServer::AnswerBytes(std::string_view bytes, const std::string& source) {
  BytesStream stream(bytes);
  beast::flat_buffer buffer;
  std::string written;
  for (int served = 1;; ++served) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(options_.max_body_bytes);
    beast::error_code ec;
    http::read_header(stream, buffer, parser, ec);
    if (!ec) {
      // As a connection does: an unsupported transfer coding is refused before the body.
      const auto& header = parser.get();
      if (auto refusal = UnsupportedTransferCoding(header)) {
        Reply reply = Refuse(std::string(header.method_string()), std::move(*refusal));
        return written + Serialized(*MakeResponse(reply, header.version(), /*keep_alive=*/false));
      }
      if (!parser.is_done() && beast::iequals(header[http::field::expect], "100-continue")) {
        written +=
            Serialized(http::response<http::empty_body>(http::status::continue_, header.version()));
      }
      http::read(stream, buffer, parser, ec);
    }
    if (ec) {
      std::optional<Status> refusal = ReadFailure(ec, options_.max_body_bytes);
      if (refusal) {
        Reply reply = Refuse(std::string(parser.get().method_string()), ErrorReply(*refusal));
        written += Serialized(*MakeResponse(reply, 11, /*keep_alive=*/false));
      }
      return written;
    }
    std::shared_ptr<HttpMessage> message = MessageOf(parser.release(), source);
    std::promise<Reply> answered;
    Handle(message, [&answered](Reply reply) { answered.set_value(std::move(reply)); });
    Reply reply = answered.get_future().get();
    // The reply is made, but an asynchronous handler's thread may still be in the server: the
    // caller may destroy the server as soon as this returns.
    WaitForAsyncHandlers();
    bool keep_alive = message->request.keep_alive() && served < options_.keep_alive_max_requests;
    auto response = EncodeReply(reply, message->request.version(), keep_alive);
    if (message->method == "HEAD") response->body().clear();
    written += Serialized(*response);
    if (!keep_alive) return written;
  }
}

}  // namespace gpupool::server
