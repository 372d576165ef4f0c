#pragma once
// HTTP for the Slurm REST client: one request at a time to slurmrestd over TCP
// (`http://HOST:PORT`) or a UNIX socket (`unix:PATH`). Boost.Beast does the HTTP; this file only
// connects, applies the timeouts and keeps the connection for the next request.
//
// Thread contract: a transport is used by one thread at a time (the client serialises).

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace gpupool::slurm {

// Where slurmrestd listens.
struct Endpoint {
  enum class Kind { kTcp, kUnix };
  Kind kind = Kind::kTcp;
  std::string host;  // kTcp
  int port = 0;      // kTcp
  std::string path;  // kUnix

  // "http://127.0.0.1:6820" or "unix:/run/slurmrestd.sock".
  std::string ToString() const;
};

// Parses "http://HOST:PORT" (HOST may be a name, an IPv4 address or [IPv6]) or "unix:PATH"
// (absolute path). https is refused with a clear message: slurmrestd serves plain HTTP and is
// put behind a TLS proxy by sites that need it.
Result<Endpoint> ParseEndpoint(std::string_view text);

struct HttpRequest {
  std::string method;  // GET, POST, DELETE
  std::string target;  // "/slurm/v0.0.38/jobs?update_time=5"
  std::map<std::string, std::string> headers;
  std::string body;  // sent with Content-Type: application/json when not empty
};

struct HttpResponse {
  int status = 0;
  std::string body;
};

struct HttpTimeouts {
  std::chrono::milliseconds connect{5000};
  std::chrono::milliseconds request{30000};  // writing the request and reading the response
};

// The result of one exchange. `error` is OK when a response arrived (whatever its status);
// otherwise it is kUnavailable (cannot connect, connection lost, timeout) or kInternal (a
// response above the size limit, a malformed response), and `sent` says whether the request
// may have reached the server: a POST that may have been received is not blindly retried.
struct HttpOutcome {
  Status error;
  bool sent = false;
  HttpResponse response;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual HttpOutcome Send(const HttpRequest& request) = 0;
};

// The Boost.Beast transport. Responses above max_body_bytes are refused (a /jobs listing of
// 10,000 jobs is about 15 MB).
std::unique_ptr<HttpTransport> MakeBeastTransport(Endpoint endpoint, HttpTimeouts timeouts,
                                                  size_t max_body_bytes = 256u << 20);

}  // namespace gpupool::slurm
