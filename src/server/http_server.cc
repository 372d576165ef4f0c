#include "server/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <exception>

#include "common/strings.h"
#include "model/json_io.h"
#include "server/path.h"
#include "server/status_to_http.h"

namespace gpupool::server {

using Json = nlohmann::ordered_json;

namespace {

const std::string kEmpty;

Reply ErrorReply(const Status& status) {
  return Reply::Json(ErrorBody(status), HttpStatusFor(status.code()));
}

void Send(const Reply& reply, httplib::Response& response) {
  response.status = reply.status;
  if (!reply.text.empty()) {
    response.set_content(reply.text, reply.content_type.c_str());
  } else {
    response.set_content(reply.json.dump() + "\n", "application/json");
  }
}

}  // namespace

const std::string& RouteRequest::Param(std::string_view name) const {
  auto it = params.find(name);
  return it == params.end() ? kEmpty : it->second;
}

std::optional<std::string> RouteRequest::Query(const std::string& name) const {
  if (http == nullptr || !http->has_param(name.c_str())) return std::nullopt;
  return http->get_param_value(name.c_str());
}

std::string RouteRequest::Header(const std::string& name) const {
  return http == nullptr ? "" : http->get_header_value(name.c_str());
}

const std::string& RouteRequest::Body() const { return http == nullptr ? kEmpty : http->body; }

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

HttpServer::HttpServer(Router router, const Authenticator* authenticator, AccessChecker access,
                       AuditHook audit, Registry& registry, ServerOptions options)
    : router_(std::move(router)),
      authenticator_(authenticator),
      access_(std::move(access)),
      audit_(std::move(audit)),
      options_(options),
      http_(std::make_unique<httplib::Server>()) {
  requests_ = registry.AddCounter("gpupool_http_requests_total",
                                  "HTTP requests by route pattern, method and status code.",
                                  {"route", "method", "code"});
  latency_ = registry.AddHistogram("gpupool_http_request_duration_seconds",
                                   "HTTP request latency by route pattern and status code.",
                                   {"route", "method", "code"}, LatencyBuckets());
  int threads = options_.threads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_keep_alive_max_count(options_.keep_alive_max_requests);
  http_->set_tcp_nodelay(true);
  // One catch-all handler per method (httplib reads the body before calling it); routing is ours.
  auto handler = [this](const httplib::Request& req, httplib::Response& res) { Handle(req, res); };
  http_->Get(".*", handler);
  http_->Post(".*", handler);
  http_->Put(".*", handler);
  http_->Patch(".*", handler);
  http_->Delete(".*", handler);
  // Reached only when httplib itself refuses a request before routing (body over the limit,
  // malformed request line): answer with our error shape and 400 for the body limit.
  http_->set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                       httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    Status status = res.status == 413
                        ? InvalidArgumentError("request body exceeds the limit of " +
                                               std::to_string(options_.max_body_bytes) + " bytes")
                        : InvalidArgumentError("malformed HTTP request");
    Send(ErrorReply(status), res);
    requests_->Increment({"(refused)", req.method, std::to_string(res.status)});
    return httplib::Server::HandlerResponse::Handled;
  }));
}

HttpServer::~HttpServer() { Stop(); }

Result<int> HttpServer::Bind(const std::string& host, int port) {
  // cpp-httplib listens with a backlog of 5 (compiled into Debian's library): when many clients
  // connect at once, the kernel drops their SYNs and they retry a second later. Keep the socket
  // httplib creates and raise its backlog after bind (listen() again updates it on Linux).
  int listening = -1;
  http_->set_socket_options([&listening](socket_t sock) {
    httplib::default_socket_options(sock);
    listening = sock;
  });
  int bound = port;
  if (port == 0) {
    bound = http_->bind_to_any_port(host);
    if (bound <= 0) return UnavailableError("cannot bind " + host + ":0");
  } else if (!http_->bind_to_port(host, port)) {
    return UnavailableError("cannot bind " + host + ":" + std::to_string(port));
  }
  if (listening >= 0) ::listen(listening, SOMAXCONN);
  http_->set_socket_options(httplib::default_socket_options);
  return bound;
}

void HttpServer::Serve() { http_->listen_after_bind(); }

void HttpServer::Stop() {
  if (http_ && http_->is_running()) http_->stop();
}

bool HttpServer::IsRunning() const { return http_->is_running(); }

Reply HttpServer::Dispatch(const httplib::Request& request, RouteRequest& route_request,
                           const Router::Route** route_out) {
  auto path = NormalizePath(request.target.empty() ? request.path : request.target);
  if (!path.ok()) return ErrorReply(path.status());
  route_request.path = *path;
  Router::Match match = router_.Find(request.method, route_request.path);
  if (match.route == nullptr) {
    if (match.path_known) {
      return Reply::Json(Json{{"message", request.method + " is not allowed on " + *path},
                              {"error_code", 405},
                              {"code", "METHOD_NOT_ALLOWED"}},
                         405);
    }
    return ErrorReply(NotFoundError("no route " + request.method + " " + *path));
  }
  *route_out = match.route;
  route_request.pattern = match.route->pattern;
  route_request.params = std::move(match.params);
  if (match.route->options.requires_auth) {
    if (authenticator_ == nullptr) return ErrorReply(UnauthenticatedError("no authenticator"));
    auto identity = authenticator_->Authenticate(request.get_header_value("Authorization"));
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
  try {
    Result<Reply> reply = match.route->handler(route_request);
    if (!reply.ok()) return ErrorReply(reply.status());
    return std::move(*reply);
  } catch (const std::exception& e) {
    return ErrorReply(InternalError(std::string("unhandled exception: ") + e.what()));
  }
}

void HttpServer::Handle(const httplib::Request& request, httplib::Response& response) {
  auto start = std::chrono::steady_clock::now();
  RouteRequest route_request;
  route_request.http = &request;
  route_request.method = request.method;
  route_request.source = request.remote_addr;
  const Router::Route* route = nullptr;
  Reply reply = Dispatch(request, route_request, &route);
  Send(reply, response);
  std::string code = std::to_string(reply.status);
  std::string label = route != nullptr ? route->pattern : "(unmatched)";
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  requests_->Increment({label, request.method, code});
  latency_->Observe({label, request.method, code}, seconds);
  if (audit_ && route != nullptr && request.method != "GET" && !route_request.audited &&
      !route_request.identity.user.empty()) {
    audit_(route_request, reply.status);
  }
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
