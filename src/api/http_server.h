#pragma once
// The HTTP front: a route table over an event-driven HTTP/1.1 server (Boost.Beast on Asio) with,
// for every request, in this order:
//   0. on the connection: a Transfer-Encoding other than exactly `chunked` is 501 (RFC 9112
//      §6.1: the only coding Beast decodes), then close;
//   1. path normalisation (config::NormalizeRequestPath: percent-decoding, `.`/`..`, `//`);
//      a refused path is 400, as are query parameters and header values that are not UTF-8
//      (text reaches JSON replies and the store, which must be UTF-8);
//   2. routing on the normalised path: unknown path 404;
//   3. authentication (401) unless the route is public, then a known path with another method
//      is 405 with an Allow header (after authentication: an anonymous client learns nothing of
//      the routes beyond 401), then access control (403);
//   4. the handler: a body that is not UTF-8 is 400 (its line and column) before it runs; it
//      decodes its input, calls one service function and encodes the result; a non-OK Status
//      becomes an HTTP error through status_to_http (the only mapping). An exception anywhere on
//      a request's way (handler, audit hook, encoding the reply, on any thread) is caught,
//      logged without the request's content, and answered 500: it never reaches the I/O loop;
//   5. metrics (requests and latency by route pattern and code) and, for writes, the audit hook.
// Connections: at most ServerOptions::max_connections are open; past it the server stops
// accepting and new connections wait in the kernel's backlog until one closes. When accept()
// fails (out of descriptors: EMFILE, ENFILE), the acceptor waits kAcceptBackoff before trying
// again instead of spinning on the still-readable listening socket, and logs once per episode.
// The request latency runs from a parsed request to its reply; the time a request waits in its
// socket before a loop reads it shows as the loops' lag (gpupool_http_loop_lag_seconds: how late
// each loop's probe timer fires, the loop being busy or its thread not scheduled).
// Bodies larger than ServerOptions::max_body_bytes are refused with 400 before any handler runs.
//
// Threads: a few I/O threads (ServerOptions::io_threads, one per core by default) read and write
// every connection, and route, authenticate and check access for each request. GET and HEAD
// handlers run on them directly: they only read, and a hand-off would cost more than the read.
// Every other handler may wait on a durable write, so it runs on a pool of ServerOptions::threads
// workers and its reply is written back by the connection. An asynchronous handler
// (Router::AddAsync) runs on the I/O thread too and must not wait: it starts its work (e.g.
// queues a group-committed write) and answers through a callback, so that neither a worker nor
// the I/O thread sits waiting for the commit. Serve() returns only after every asynchronous
// request has been answered. (Reads that wait on a network store want more I/O threads than cores:
// serve_command picks them.) Handlers run concurrently; everything they touch must be
// thread-safe. Router is immutable once the server starts.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/auth.h"
#include "common/limits.h"
#include "common/status.h"
#include "metrics/metrics.h"

namespace gpupool::api {

// The parsed HTTP request a RouteRequest reads from (defined in http_wire.h).
struct HttpMessage;

struct RouteRequest {
  const HttpMessage* http = nullptr;
  std::string method;
  std::string path;     // normalised
  std::string pattern;  // the route's pattern, e.g. /api/workflow/{id}
  std::map<std::string, std::string, std::less<>> params;  // path parameters
  Identity identity;                                       // empty for public routes
  std::string source;                                      // client address
  // The workflow pool for which access to this request was checked before the handler ran (set
  // for routes with RouteOptions::resource_pool when the pool was found and access granted).
  std::optional<std::string> access_checked_pool;
  // Set by a handler whose service call wrote the request's audit record itself (durably, in the
  // same transaction as the change): the audit hook then writes no second record.
  mutable bool audited = false;

  const std::string& Param(std::string_view name) const;
  // Query parameters, percent-decoded ('+' is a space): the first value, or every value in order.
  std::optional<std::string> Query(const std::string& name) const;
  std::vector<std::string> QueryAll(const std::string& name) const;
  std::string Header(const std::string& name) const;  // case-insensitive; "" when absent
  const std::string& Body() const;
  const std::string& Target() const;  // the raw request target, as sent (query included)
};

struct Reply {
  int status = 200;
  nlohmann::ordered_json json;  // sent when text is empty
  std::string text;             // sent as-is with content_type when non-empty
  std::string content_type = "application/json";
  // Extra response headers (ETag, Cache-Control, Content-Security-Policy, Allow, ...).
  std::vector<std::pair<std::string, std::string>> headers;

  static Reply Json(nlohmann::ordered_json body, int status = 200) {
    Reply reply;
    reply.status = status;
    reply.json = std::move(body);
    return reply;
  }
  static Reply Text(std::string text, std::string content_type) {
    Reply reply;
    reply.text = std::move(text);
    reply.content_type = std::move(content_type);
    return reply;
  }
};

using RouteHandler = std::function<Result<Reply>(const RouteRequest&)>;
// A handler that answers later, e.g. once a group-committed write is durable, so that no thread
// waits for it: it calls `respond` once, from any thread (later calls are ignored). The request
// stays valid until then.
using Respond = std::function<void(Result<Reply>)>;
using AsyncRouteHandler = std::function<void(const RouteRequest&, Respond respond)>;

struct RouteOptions {
  bool requires_auth = true;
  // The service takes this route's access decision itself (a submission: service::Service checks
  // the caller's access to the pool once, for the server and the offline CLI alike): the server
  // only authenticates. Deny by default holds there: the service refuses what the roles do not
  // allow.
  bool access_in_service = false;
  // For /api/workflow/{id} routes: the pool of the workflow, for access control.
  std::function<std::optional<std::string>(const RouteRequest&)> resource_pool;
};

class Router {
 public:
  // `pattern`: segments, `{name}` captures one segment. Exact segments win over captures.
  void Add(std::string method, std::string pattern, RouteHandler handler,
           RouteOptions options = {});
  void AddAsync(std::string method, std::string pattern, AsyncRouteHandler handler,
                RouteOptions options = {});

  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    RouteHandler handler;             // one of these two is set
    AsyncRouteHandler async_handler;  //
    RouteOptions options;
  };
  struct Match {
    const Route* route = nullptr;  // nullptr: no route
    // The methods of every route with this path, sorted (HEAD with GET): when `route` is
    // nullptr and this is not empty, the answer is 405 with these in its Allow header.
    std::vector<std::string> allowed_methods;
    bool path_requires_auth = false;  // some route with this path requires authentication
    std::map<std::string, std::string, std::less<>> params;
  };
  Match Find(std::string_view method, std::string_view path) const;

 private:
  std::vector<Route> routes_;
};

// Access control: OK, or kPermissionDenied (403) / kInvalidArgument.
using AccessChecker = std::function<Status(const Identity& identity, const RouteRequest& request,
                                           const std::optional<std::string>& resource_pool)>;
// Called after every non-GET request that passed authentication (whatever its outcome).
using AuditHook = std::function<void(const RouteRequest& request, int http_status)>;

struct ServerOptions {
  size_t max_body_bytes = kDefaultMaxInputBytes;  // as the CLI's limit for files
  int threads = 64;    // workers for handlers that may block (every method but GET and HEAD)
  int io_threads = 0;  // threads reading and writing connections; 0: one per core, at least 2
  int keep_alive_max_requests = 100000;
  int idle_timeout_seconds = 60;  // a connection silent this long (mid-request or idle) is closed
  // Open connections past which new ones wait in the kernel's backlog; 0: the descriptor limit
  // (RLIMIT_NOFILE) less kReservedDescriptors, kept for the store, files and the loops.
  int max_connections = 0;
};

inline constexpr int kReservedDescriptors = 128;
// How long the acceptor waits after accept() failed for want of descriptors or memory.
inline constexpr std::chrono::milliseconds kAcceptBackoff{100};

// ServerOptions::max_connections, with 0 resolved against the process's descriptor limit.
int EffectiveMaxConnections(const ServerOptions& options);

class HttpServer {
 public:
  // `authenticator` may be nullptr only if no route requires auth; `registry` outlives the server.
  HttpServer(Router router, const Authenticator* authenticator, AccessChecker access,
             AuditHook audit, metrics::Registry& registry, ServerOptions options);
  ~HttpServer();

  // Binds host:port (port 0 = any free port), listens, and returns the port.
  Result<int> Bind(const std::string& host, int port);
  // Serves until Stop(); blocks. Handlers still running when Stop() is called finish first.
  void Serve();
  void Stop();
  bool IsRunning() const;

  // Answers the requests in `bytes` as a connection that received them from `source` would (the
  // same parser and limits, routing, authentication, access control, handlers and reply
  // encoding), without a socket, and returns what it would have written. Pipelined requests are
  // answered in order; the exchange ends where a connection would close (a request that does
  // not parse, `Connection: close`, the end of the bytes). Blocks until every reply is made;
  // needs no Bind or Serve. For fuzzing (fuzz/http_fuzz.cc).
  std::string AnswerBytes(std::string_view bytes, const std::string& source = "127.0.0.1");

  struct Transport;  // the sockets and threads (http_transport.h)

 private:
  // One request from its arrival to its reply (http_server.cc).
  struct Exchange;
  using Send = std::function<void(Reply)>;
  // Answers `message`: calls `send` with the reply once, on this thread unless the route's
  // handler is asynchronous.
  void Handle(std::shared_ptr<const HttpMessage> message, Send send);
  Reply Refuse(const std::string& method, Reply reply);
  // The 500 for an exception caught on the request's way (logged, with the route but not the
  // request's content); the reply goes out unless one already has.
  void Crashed(Exchange& exchange, const std::string& what);
  // Normalises the path, routes, authenticates and checks access: the reply when the request
  // is refused, else nullopt (exchange.route is then set and its handler is to run).
  std::optional<Reply> Dispatch(Exchange& exchange);
  void RunHandler(Exchange& exchange);
  void RunAsync(const std::shared_ptr<Exchange>& exchange);
  // Metrics, the audit hook, then the reply goes out.
  void Finish(Exchange& exchange, Reply reply);
  // Returns once no asynchronous handler's `respond` is running or still to be called.
  void WaitForAsyncHandlers();

  const Router router_;
  const Authenticator* const authenticator_;
  const AccessChecker access_;
  const AuditHook audit_;
  const ServerOptions options_;
  metrics::Counter* requests_;
  metrics::Histogram* latency_;
  metrics::Histogram* loop_lag_;
  std::unique_ptr<Transport> transport_;
};

// ---- Request decoding helpers ----------------------------------------------------------------

// The query of a request target, each key and value percent-decoded once ('+' is a space), in
// order; a malformed escape is kept as written.
std::vector<std::pair<std::string, std::string>> ParseQuery(std::string_view target);

// OK when `body` is UTF-8; else kInvalidArgument "request body:<line>:<col>: not valid UTF-8
// (byte 0xff)". Every route's body is text (JSON, YAML, CSV): checked before a handler runs.
Status CheckBodyText(const std::string& body);

// ---- Body decoding helpers for handlers ------------------------------------------------------

// The request body as one JSON value: JSON when the content type says so or the body starts with
// `{`/`[`, else one YAML document. Errors: `request body:<line>:<col>: ...` (kInvalidArgument).
Result<nlohmann::ordered_json> DecodeBody(const RouteRequest& request);

// A field of an object body with its type checked; errors name the field path.
Result<std::string> StringField(const nlohmann::ordered_json& body, std::string_view field,
                                std::optional<std::string> default_value = std::nullopt);
Result<int64_t> IntField(const nlohmann::ordered_json& body, std::string_view field,
                         std::optional<int64_t> default_value = std::nullopt);
Result<bool> BoolField(const nlohmann::ordered_json& body, std::string_view field,
                       std::optional<bool> default_value = std::nullopt);
// Query parameters: `?limit=10` and `?force=true|false|1|0`.
Result<std::optional<int64_t>> IntQuery(const RouteRequest& request, const std::string& name);
Result<bool> BoolQuery(const RouteRequest& request, const std::string& name, bool default_value);

}  // namespace gpupool::api
