#include "api/http_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <optional>

#include "api/http_transport.h"
#include "api/status_to_http.h"
#include "common/safe_text.h"
#include "common/strings.h"
#include "config/access.h"

namespace gpupool::api {
namespace {

using internal::CurrentExceptionText;
using internal::ErrorReply;
using internal::HttpError;
using internal::Log;
using internal::Transport;

const std::string kEmpty;

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

bool IsBlockingMethod(std::string_view method) { return method != "GET" && method != "HEAD"; }

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

HttpServer::HttpServer(Router router, const Authenticator* authenticator, AccessChecker access,
                       AuditHook audit, metrics::Registry& registry, ServerOptions options)
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
                                   {"route", "method", "code"}, metrics::LatencyBuckets());
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
  auto path = config::NormalizeRequestPath(message.target);
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
  if (requires_auth && access_ && !match.route->options.access_in_service) {
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

}  // namespace gpupool::api
