#pragma once
// A Kubernetes API client: HTTPS (Boost.Beast over OpenSSL) to one API server, with
//   - a keep-alive connection pool (at most ClientOptions::max_connections requests in flight;
//     more wait their turn in order);
//   - the client-side rate limit (TokenBucket, QPS and burst) on every request, watches too;
//   - 429 (and 5xx) answers with a Retry-After header retried after that many seconds, up to
//     max_retries times, as client-go does; answers without one are returned as they are;
//   - a request that fails on a reused keep-alive connection before any answer (the server
//     closed it) is sent once more on a new connection;
//   - streams (watches, followed logs): the body delivered in pieces as it arrives.
// TLS verifies the server against RestConfig::ca_pem (or the system's CAs) and its name (IP or
// DNS, or tls_server_name), unless insecure_skip_tls_verify. A bearer token (or tokenFile, read
// again each minute) or a client certificate authenticates.
//
// Thread contract: everything runs on one private I/O thread. Send, Open, After and Post may be
// called from any thread; their callbacks run on the I/O thread and must not block. Call() waits
// for the answer and must not be called from the I/O thread (it returns an error there).
// Destroying the client cancels streams (their on_end is not called) and fails waiting calls.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "kube/kubeconfig.h"

namespace gpupool::kube {

struct ClientOptions {
  double qps = 5;  // client-go's default; <= 0 = no limit
  int burst = 10;  // client-go's default
  int max_connections = 16;
  int max_retries = 10;  // of answers with Retry-After
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds connect_timeout{10000};
  std::string user_agent = "gpupool";
};

struct Request {
  std::string method = "GET";
  std::string path;  // with the query, e.g. /api/v1/pods?limit=500
  std::string body;
  std::string content_type = "application/json";
};

struct Response {
  int status = 0;
  std::string body;
  std::string content_type;

  bool ok() const { return status >= 200 && status < 300; }
  // The body as JSON (null when it is not).
  nlohmann::ordered_json Json() const;
};

// A non-2xx answer as a Status, with the API server's message: 400/422 kInvalidArgument,
// 401 kUnauthenticated, 403 kPermissionDenied, 404 kNotFound, 409 AlreadyExists
// kAlreadyExists, other 409 kAborted, 410 kFailedPrecondition, 429 and 5xx kUnavailable.
// "<what>: <code> <reason>: <message>".
Status ApiError(const Response& response, std::string_view what);
// The `reason` of the API's Status object in the body ("" when none).
std::string ApiReason(const Response& response);

struct StreamHandlers {
  // Body bytes as they arrive (only for a 200 answer).
  std::function<void(std::string_view)> on_data;
  // Once: OK when the server ended the body; the ApiError for a non-200 answer; kUnavailable
  // when the connection failed or was cut.
  std::function<void(const Status&)> on_end;
};

class Stream {
 public:
  virtual ~Stream() = default;
  // Ends the stream; on_end will not be called (unless it already was).
  virtual void Cancel() = 0;
};

struct ClientStats {
  int64_t requests = 0;            // answered requests (each retry counts)
  int64_t retried_after = 0;       // answers with Retry-After that were retried
  int64_t rate_limited = 0;        // requests that waited for the rate limiter
  int64_t connections_opened = 0;  // TCP+TLS connections made
  int64_t stale_retries = 0;       // requests resent after a closed keep-alive connection
  int64_t streams_opened = 0;
};

class Client {
 public:
  static Result<std::unique_ptr<Client>> Create(RestConfig config, ClientOptions options = {});
  ~Client();

  // Asynchronous request; `done` runs on the I/O thread. Transport failures are kUnavailable;
  // any HTTP answer is a Response (see ApiError).
  void Send(Request request, std::function<void(Result<Response>)> done);
  // Synchronous request (not from the I/O thread).
  Result<Response> Call(Request request);
  std::unique_ptr<Stream> Open(Request request, StreamHandlers handlers,
                               std::chrono::milliseconds idle_timeout);

  // Runs `fn` on the I/O thread after `delay` (backoff), or soon (Post).
  void After(std::chrono::milliseconds delay, std::function<void()> fn);
  void Post(std::function<void()> fn);
  bool OnIoThread() const;

  ClientStats Stats() const;
  const RestConfig& config() const;

 private:
  class Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Percent-encodes a query value.
std::string QueryEscape(std::string_view text);

}  // namespace gpupool::kube
