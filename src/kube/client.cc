#include "kube/client.h"

// <utility> first: Boost 1.74's asio/awaitable.hpp uses std::exchange without including it.
#include <utility>
//
#include <openssl/ssl.h>

#include <array>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <deque>
#include <future>
#include <limits>
#include <set>
#include <thread>

#include "common/strings.h"
#include "kube/flow_control.h"
#include "kube/json_read.h"
#include "model/input_file.h"

namespace gpupool::kube {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using SteadyClock = std::chrono::steady_clock;
using boost::system::error_code;
using Json = nlohmann::ordered_json;

constexpr auto kUseAwaitable = net::use_awaitable;
constexpr auto kTokenFileRefresh = std::chrono::minutes(1);

struct Connection {
  Connection(net::io_context& io, ssl::context& tls) : stream(io, tls) {}
  beast::ssl_stream<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  bool reused = false;
};

// An answer and its Retry-After header.
struct Answer {
  Response response;
  std::string retry_after;
};

// The server's end of a keep-alive connection closed before it answered: safe to send again.
bool ClosedByServer(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == net::error::eof ||
         ec == net::error::connection_reset || ec == net::error::broken_pipe ||
         ec == ssl::error::stream_truncated;
}

struct ServerAddress {
  std::string host;
  std::string port;
};

Result<ServerAddress> ParseServer(const std::string& server) {
  std::string rest = server.substr(std::string("https://").size());
  rest = rest.substr(0, rest.find('/'));
  ServerAddress address;
  if (!rest.empty() && rest[0] == '[') {
    size_t close = rest.find(']');
    if (close == std::string::npos) return InvalidArgumentError("server " + server + ": bad host");
    address.host = rest.substr(1, close - 1);
    rest = rest.substr(close + 1);
    address.port = StartsWith(rest, ":") ? rest.substr(1) : "443";
  } else {
    size_t colon = rest.rfind(':');
    address.host = rest.substr(0, colon);
    address.port = colon == std::string::npos ? "443" : rest.substr(colon + 1);
  }
  if (address.host.empty() || address.port.empty()) {
    return InvalidArgumentError("server " + server + ": expected https://HOST[:PORT]");
  }
  return address;
}

bool IsIpAddress(const std::string& host) {
  error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

}  // namespace

// A stream's state, shared by its handle and its coroutine; touched on the I/O thread only.
struct StreamState {
  StreamHandlers handlers;
  beast::tcp_stream* socket = nullptr;
  bool cancelled = false;
  bool ended = false;
};

class Client::Impl {
 public:
  Impl(RestConfig config, ClientOptions options, ServerAddress address)
      : config_(std::move(config)),
        options_(std::move(options)),
        address_(std::move(address)),
        tls_(ssl::context::tls_client),
        work_(net::make_work_guard(io_)),
        bucket_(options_.qps, options_.burst) {}
  ~Impl();

  Status Init();
  void Send(Request request, std::function<void(Result<Response>)> done);
  std::unique_ptr<Stream> Open(Request request, StreamHandlers handlers,
                               std::chrono::milliseconds idle_timeout);
  void After(std::chrono::milliseconds delay, std::function<void()> fn);
  void Post(std::function<void()> fn) { net::post(io_, std::move(fn)); }
  bool OnIoThread() const { return std::this_thread::get_id() == thread_id_; }
  ClientStats Stats() const;
  const RestConfig& config() const { return config_; }
  void CancelStream(const std::shared_ptr<StreamState>& state);

 private:
  net::awaitable<void> Run(Request request, std::function<void(Result<Response>)> done);
  net::awaitable<Result<Response>> Perform(const Request& request);
  net::awaitable<Result<Answer>> Exchange(const Request& request);
  net::awaitable<Result<std::unique_ptr<Connection>>> Connect();
  net::awaitable<void> RunStream(std::shared_ptr<StreamState> state, Request request,
                                 std::chrono::milliseconds idle_timeout);
  net::awaitable<void> Throttle();
  net::awaitable<void> Sleep(SteadyClock::duration delay);
  net::awaitable<void> AcquireSlot();
  void ReleaseSlot();
  http::request<http::string_body> Build(const Request& request);
  std::string Authorization();
  void EndStream(const std::shared_ptr<StreamState>& state, const Status& status);

  const RestConfig config_;
  const ClientOptions options_;
  const ServerAddress address_;
  net::io_context io_;
  ssl::context tls_;
  net::executor_work_guard<net::io_context::executor_type> work_;
  TokenBucket bucket_;
  std::thread thread_;
  std::thread::id thread_id_;

  // I/O thread only.
  std::vector<std::unique_ptr<Connection>> idle_;
  int in_flight_ = 0;
  std::deque<std::shared_ptr<net::steady_timer>> waiting_;
  std::set<std::shared_ptr<StreamState>> streams_;
  std::string token_;
  SteadyClock::time_point token_read_{};
  bool stopping_ = false;

  struct Counters {
    std::atomic<int64_t> requests{0}, retried_after{0}, rate_limited{0}, connections_opened{0},
        stale_retries{0}, streams_opened{0};
  } counters_;
};

namespace {

class StreamHandle final : public Stream {
 public:
  explicit StreamHandle(std::function<void()> cancel) : cancel_(std::move(cancel)) {}
  ~StreamHandle() override { Cancel(); }
  void Cancel() override { cancel_(); }

 private:
  std::function<void()> cancel_;
};

}  // namespace

Status Client::Impl::Init() {
  error_code ec;
  if (!config_.ca_pem.empty()) {
    tls_.add_certificate_authority(net::buffer(config_.ca_pem), ec);
    if (ec)
      return InvalidArgumentError(config_.source + ": certificate authority: " + ec.message());
  } else {
    tls_.set_default_verify_paths(ec);
  }
  if (!config_.client_cert_pem.empty()) {
    tls_.use_certificate_chain(net::buffer(config_.client_cert_pem), ec);
    if (!ec) tls_.use_private_key(net::buffer(config_.client_key_pem), ssl::context::pem, ec);
    if (ec) return InvalidArgumentError(config_.source + ": client certificate: " + ec.message());
  }
  tls_.set_verify_mode(config_.insecure_skip_tls_verify ? ssl::verify_none : ssl::verify_peer);
  thread_ = std::thread([this] { io_.run(); });
  thread_id_ = thread_.get_id();
  return OkStatus();
}

Client::Impl::~Impl() {
  std::promise<void> closed;
  net::post(io_, [this, &closed] {
    stopping_ = true;
    for (auto& connection : idle_) beast::get_lowest_layer(connection->stream).close();
    idle_.clear();
    for (const auto& state : streams_) {
      state->cancelled = true;
      if (state->socket != nullptr) state->socket->close();
    }
    for (const auto& timer : waiting_) timer->cancel();
    closed.set_value();
  });
  if (thread_.joinable()) {
    closed.get_future().wait();
    work_.reset();
    io_.stop();
    thread_.join();
  }
}

ClientStats Client::Impl::Stats() const {
  ClientStats stats;
  stats.requests = counters_.requests;
  stats.retried_after = counters_.retried_after;
  stats.rate_limited = counters_.rate_limited;
  stats.connections_opened = counters_.connections_opened;
  stats.stale_retries = counters_.stale_retries;
  stats.streams_opened = counters_.streams_opened;
  return stats;
}

std::string Client::Impl::Authorization() {
  if (!config_.token_file.empty()) {
    auto now = SteadyClock::now();
    if (token_.empty() || now - token_read_ > kTokenFileRefresh) {
      auto text = model::ReadFile(config_.token_file);
      if (text.ok()) token_ = std::string(Trim(*text));
      token_read_ = now;
    }
  } else {
    token_ = config_.token;
  }
  return token_.empty() ? "" : "Bearer " + token_;
}

http::request<http::string_body> Client::Impl::Build(const Request& request) {
  http::request<http::string_body> req{http::string_to_verb(request.method), request.path, 11};
  req.set(http::field::host, address_.host);
  req.set(http::field::user_agent, options_.user_agent);
  req.set(http::field::accept, "application/json");
  if (std::string auth = Authorization(); !auth.empty()) req.set(http::field::authorization, auth);
  if (!request.body.empty()) {
    req.set(http::field::content_type, request.content_type);
    req.body() = request.body;
  }
  req.keep_alive(true);
  req.prepare_payload();
  return req;
}

net::awaitable<void> Client::Impl::Sleep(SteadyClock::duration delay) {
  net::steady_timer timer(io_, delay);
  error_code ec;
  co_await timer.async_wait(net::redirect_error(kUseAwaitable, ec));
}

net::awaitable<void> Client::Impl::Throttle() {
  auto delay = bucket_.Reserve(SteadyClock::now());
  if (delay.count() > 0) {
    ++counters_.rate_limited;
    co_await Sleep(delay);
  }
}

// At most max_connections requests in flight; a freed slot passes to the oldest waiter.
net::awaitable<void> Client::Impl::AcquireSlot() {
  if (in_flight_ < options_.max_connections) {
    ++in_flight_;
    co_return;
  }
  auto timer = std::make_shared<net::steady_timer>(io_, SteadyClock::time_point::max());
  waiting_.push_back(timer);
  error_code ec;
  co_await timer->async_wait(net::redirect_error(kUseAwaitable, ec));
}

void Client::Impl::ReleaseSlot() {
  if (!waiting_.empty()) {
    waiting_.front()->cancel();
    waiting_.pop_front();
  } else {
    --in_flight_;
  }
}

net::awaitable<Result<std::unique_ptr<Connection>>> Client::Impl::Connect() {
  auto connection = std::make_unique<Connection>(io_, tls_);
  auto& socket = beast::get_lowest_layer(connection->stream);
  error_code ec;
  tcp::resolver resolver(io_);
  auto endpoints = co_await resolver.async_resolve(address_.host, address_.port,
                                                   net::redirect_error(kUseAwaitable, ec));
  if (ec) co_return UnavailableError("resolve " + address_.host + ": " + ec.message());
  socket.expires_after(options_.connect_timeout);
  co_await socket.async_connect(endpoints, net::redirect_error(kUseAwaitable, ec));
  if (ec) {
    co_return UnavailableError("connect to " + config_.server + ": " + ec.message());
  }
  socket.socket().set_option(tcp::no_delay(true), ec);
  const std::string name =
      config_.tls_server_name.empty() ? address_.host : config_.tls_server_name;
  if (!config_.insecure_skip_tls_verify) {
    connection->stream.set_verify_callback(ssl::host_name_verification(name));
  }
  if (!IsIpAddress(name))
    SSL_set_tlsext_host_name(connection->stream.native_handle(), name.c_str());
  co_await connection->stream.async_handshake(ssl::stream_base::client,
                                              net::redirect_error(kUseAwaitable, ec));
  if (ec) co_return UnavailableError("TLS handshake with " + config_.server + ": " + ec.message());
  socket.expires_never();
  ++counters_.connections_opened;
  co_return std::move(connection);
}

net::awaitable<Result<Answer>> Client::Impl::Exchange(const Request& request) {
  co_await AcquireSlot();
  for (int attempt = 0;; ++attempt) {
    std::unique_ptr<Connection> connection;
    if (!idle_.empty()) {
      connection = std::move(idle_.back());
      idle_.pop_back();
    } else {
      auto connected = co_await Connect();
      if (!connected.ok()) {
        ReleaseSlot();
        co_return connected.status();
      }
      connection = std::move(*connected);
    }
    auto& socket = beast::get_lowest_layer(connection->stream);
    auto req = Build(request);
    error_code ec;
    socket.expires_after(options_.request_timeout);
    co_await http::async_write(connection->stream, req, net::redirect_error(kUseAwaitable, ec));
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::uint64_t{1} << 32);
    if (!ec) {
      co_await http::async_read(connection->stream, connection->buffer, parser,
                                net::redirect_error(kUseAwaitable, ec));
    }
    if (ec) {
      if (connection->reused && attempt == 0 && !parser.got_some() && ClosedByServer(ec)) {
        ++counters_.stale_retries;
        continue;
      }
      ReleaseSlot();
      co_return UnavailableError(request.method + " " + request.path + ": " + ec.message());
    }
    auto& res = parser.get();
    Answer answer;
    answer.response.status = static_cast<int>(res.result_int());
    answer.response.content_type = std::string(res[http::field::content_type]);
    answer.retry_after = std::string(res[http::field::retry_after]);
    bool keep = res.keep_alive();
    answer.response.body = std::move(res.body());
    if (keep && !stopping_) {
      socket.expires_never();
      connection->reused = true;
      idle_.push_back(std::move(connection));
    }
    ReleaseSlot();
    co_return answer;
  }
}

net::awaitable<Result<Response>> Client::Impl::Perform(const Request& request) {
  for (int retry = 0;; ++retry) {
    co_await Throttle();
    if (stopping_) co_return UnavailableError("the Kubernetes client is stopping");
    auto answer = co_await Exchange(request);
    if (!answer.ok()) co_return answer.status();
    ++counters_.requests;
    const int status = answer->response.status;
    char* end = nullptr;
    long seconds = std::strtol(answer->retry_after.c_str(), &end, 10);
    bool retry_after = !answer->retry_after.empty() && *end == '\0' && seconds >= 0;
    if ((status == 429 || status >= 500) && retry_after && retry < options_.max_retries) {
      ++counters_.retried_after;
      co_await Sleep(std::chrono::seconds(seconds));
      continue;
    }
    co_return std::move(answer->response);
  }
}

net::awaitable<void> Client::Impl::Run(Request request,
                                       std::function<void(Result<Response>)> done) {
  Result<Response> result = InternalError("unreachable");
  try {
    result = co_await Perform(request);
  } catch (const std::exception& e) {
    result = InternalError(request.method + " " + request.path + ": " + e.what());
  }
  done(std::move(result));
}

void Client::Impl::Send(Request request, std::function<void(Result<Response>)> done) {
  net::co_spawn(io_, Run(std::move(request), std::move(done)), net::detached);
}

void Client::Impl::After(std::chrono::milliseconds delay, std::function<void()> fn) {
  auto timer = std::make_shared<net::steady_timer>(io_, delay);
  timer->async_wait([timer, fn = std::move(fn)](const error_code& ec) {
    if (!ec) fn();
  });
}

void Client::Impl::EndStream(const std::shared_ptr<StreamState>& state, const Status& status) {
  state->socket = nullptr;
  streams_.erase(state);
  if (state->cancelled || state->ended) return;
  state->ended = true;
  state->handlers.on_end(status);
}

net::awaitable<void> Client::Impl::RunStream(std::shared_ptr<StreamState> state, Request request,
                                             std::chrono::milliseconds idle_timeout) {
  co_await Throttle();
  if (state->cancelled || stopping_) co_return EndStream(state, OkStatus());
  auto connected = co_await Connect();
  if (!connected.ok()) co_return EndStream(state, connected.status());
  std::unique_ptr<Connection> connection = std::move(*connected);
  auto& socket = beast::get_lowest_layer(connection->stream);
  state->socket = &socket;
  if (state->cancelled) co_return EndStream(state, OkStatus());
  auto req = Build(request);
  error_code ec;
  socket.expires_after(options_.request_timeout);
  co_await http::async_write(connection->stream, req, net::redirect_error(kUseAwaitable, ec));
  http::response_parser<http::buffer_body> parser;
  // No limit: a watch runs for minutes. (Not boost::none: Boost 1.74 then refuses every body
  // that has a Content-Length, such as a 410's Status.)
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  if (!ec) {
    co_await http::async_read_header(connection->stream, connection->buffer, parser,
                                     net::redirect_error(kUseAwaitable, ec));
  }
  if (ec) co_return EndStream(state, UnavailableError(request.path + ": " + ec.message()));
  ++counters_.requests;
  const int status = static_cast<int>(parser.get().result_int());
  std::string error_body;
  std::array<char, 1 << 16> buffer;
  while (!parser.is_done()) {
    parser.get().body().data = buffer.data();
    parser.get().body().size = buffer.size();
    socket.expires_after(idle_timeout);
    co_await http::async_read_some(connection->stream, connection->buffer, parser,
                                   net::redirect_error(kUseAwaitable, ec));
    if (ec == http::error::need_buffer) ec = {};
    size_t n = buffer.size() - parser.get().body().size;
    if (n > 0 && !state->cancelled) {
      if (status == 200) {
        state->handlers.on_data(std::string_view(buffer.data(), n));
      } else {
        error_body.append(buffer.data(), n);
      }
    }
    if (ec) co_return EndStream(state, UnavailableError(request.path + ": " + ec.message()));
    if (state->cancelled) co_return EndStream(state, OkStatus());
  }
  if (status != 200) {
    Response response{status, std::move(error_body), ""};
    co_return EndStream(state, ApiError(response, request.path));
  }
  EndStream(state, OkStatus());
}

std::unique_ptr<Stream> Client::Impl::Open(Request request, StreamHandlers handlers,
                                           std::chrono::milliseconds idle_timeout) {
  auto state = std::make_shared<StreamState>();
  state->handlers = std::move(handlers);
  ++counters_.streams_opened;
  net::post(io_, [this, state, request = std::move(request), idle_timeout]() mutable {
    if (stopping_) return;
    streams_.insert(state);
    net::co_spawn(io_, RunStream(state, std::move(request), idle_timeout), net::detached);
  });
  return std::make_unique<StreamHandle>([this, state] { CancelStream(state); });
}

void Client::Impl::CancelStream(const std::shared_ptr<StreamState>& state) {
  auto cancel = [state] {
    state->cancelled = true;
    if (state->socket != nullptr) state->socket->close();
  };
  if (OnIoThread()) {
    cancel();
  } else {
    net::post(io_, cancel);
  }
}

// ---- Client --------------------------------------------------------------------------------

Result<std::unique_ptr<Client>> Client::Create(RestConfig config, ClientOptions options) {
  if (!StartsWith(config.server, "https://")) {
    return InvalidArgumentError("server \"" + config.server + "\": expected https://HOST:PORT");
  }
  ASSIGN_OR_RETURN(ServerAddress address, ParseServer(config.server));
  if (options.max_connections < 1) return InvalidArgumentError("max_connections must be >= 1");
  auto impl = std::make_unique<Impl>(std::move(config), std::move(options), std::move(address));
  RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

void Client::Send(Request request, std::function<void(Result<Response>)> done) {
  impl_->Send(std::move(request), std::move(done));
}

Result<Response> Client::Call(Request request) {
  if (impl_->OnIoThread()) {
    return InternalError("Client::Call on the client's own thread would wait for itself");
  }
  auto promise = std::make_shared<std::promise<Result<Response>>>();
  auto future = promise->get_future();
  impl_->Send(std::move(request),
              [promise](Result<Response> result) { promise->set_value(std::move(result)); });
  try {
    return future.get();
  } catch (const std::future_error&) {
    return UnavailableError("the Kubernetes client stopped");
  }
}

std::unique_ptr<Stream> Client::Open(Request request, StreamHandlers handlers,
                                     std::chrono::milliseconds idle_timeout) {
  return impl_->Open(std::move(request), std::move(handlers), idle_timeout);
}

void Client::After(std::chrono::milliseconds delay, std::function<void()> fn) {
  impl_->After(delay, std::move(fn));
}
void Client::Post(std::function<void()> fn) { impl_->Post(std::move(fn)); }
bool Client::OnIoThread() const { return impl_->OnIoThread(); }
ClientStats Client::Stats() const { return impl_->Stats(); }
const RestConfig& Client::config() const { return impl_->config(); }

// ---- Answers -------------------------------------------------------------------------------

Json Response::Json() const { return ReadJson(body); }

std::string ApiReason(const Response& response) {
  Json body = response.Json();
  return body.is_object() && body.contains("reason") && body["reason"].is_string()
             ? body["reason"].get<std::string>()
             : "";
}

Status ApiError(const Response& response, std::string_view what) {
  Json body = response.Json();
  std::string reason = ApiReason(response);
  std::string message = body.is_object() && body.contains("message") && body["message"].is_string()
                            ? body["message"].get<std::string>()
                            : std::string(Trim(response.body.substr(0, 200)));
  std::string text = std::string(what) + ": " + std::to_string(response.status) +
                     (reason.empty() ? "" : " " + reason) + ": " + message;
  switch (response.status) {
    case 400:
    case 422:
      return InvalidArgumentError(text);
    case 401:
      return UnauthenticatedError(text);
    case 403:
      return PermissionDeniedError(text);
    case 404:
      return NotFoundError(text);
    case 409:
      return reason == "AlreadyExists" ? AlreadyExistsError(text) : AbortedError(text);
    case 410:
      return FailedPreconditionError(text);
    default:
      if (response.status == 429 || response.status >= 500) return UnavailableError(text);
      return InternalError(text);
  }
}

std::string QueryEscape(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace gpupool::kube
