#include "slurm/http.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <optional>

#include "common/strings.h"

namespace gpupool::slurm {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using ErrorCode = boost::system::error_code;

std::string Describe(const Endpoint& endpoint, const ErrorCode& ec) {
  return "slurmrestd at " + endpoint.ToString() + ": " + ec.message();
}

// One connection, kept open between requests (slurmrestd keeps connections alive). Beast's
// stream timeouts apply to asynchronous operations, so each step runs asynchronously on a
// private io_context and waits for it: a synchronous call with a deadline.
template <typename Protocol>
class BeastTransport final : public HttpTransport {
 public:
  using Stream = beast::basic_stream<Protocol, asio::any_io_executor, beast::unlimited_rate_policy>;

  BeastTransport(Endpoint endpoint, HttpTimeouts timeouts, size_t max_body_bytes)
      : endpoint_(std::move(endpoint)), timeouts_(timeouts), max_body_bytes_(max_body_bytes) {}

  HttpOutcome Send(const HttpRequest& request) override {
    HttpOutcome outcome;
    bool reused = stream_.has_value();
    if (!reused) {
      if (Status s = Connect(); !s.ok()) {
        outcome.error = s;
        return outcome;
      }
    }
    outcome = Exchange(request, reused);
    // A kept connection that the server had closed while idle fails before any byte of the
    // answer: the server never read the request, so one fresh connection is safe, also for a POST.
    if (!outcome.error.ok() && reused && !outcome.sent) {
      stream_.reset();
      if (Status s = Connect(); !s.ok()) {
        outcome.error = s;
        return outcome;
      }
      outcome = Exchange(request, /*reused=*/false);
    }
    if (!outcome.error.ok()) stream_.reset();
    return outcome;
  }

 private:
  // Runs the queued asynchronous operation to completion.
  void Run() {
    io_.restart();
    io_.run();
  }

  Status Connect();

  // `reused`: the connection served an earlier request. An error on it before any byte of the
  // answer arrived is reported as not sent (see Send).
  HttpOutcome Exchange(const HttpRequest& request, bool reused) {
    HttpOutcome outcome;
    http::request<http::string_body> req{http::string_to_verb(request.method), request.target, 11};
    req.set(http::field::host,
            endpoint_.kind == Endpoint::Kind::kTcp ? endpoint_.host : std::string("localhost"));
    req.set(http::field::user_agent, "gpupool");
    req.set(http::field::accept, "application/json");
    for (const auto& [name, value] : request.headers) req.set(name, value);
    if (!request.body.empty()) {
      req.set(http::field::content_type, "application/json");
      req.body() = request.body;
    }
    req.keep_alive(true);
    req.prepare_payload();

    ErrorCode ec;
    stream_->expires_after(timeouts_.request);
    http::async_write(*stream_, req, [&](ErrorCode e, size_t) { ec = e; });
    Run();
    if (ec) {
      outcome.error = UnavailableError(Describe(endpoint_, ec));
      return outcome;
    }
    outcome.sent = true;
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(max_body_bytes_);
    size_t received = 0;
    http::async_read_header(*stream_, buffer, parser, [&](ErrorCode e, size_t n) {
      ec = e;
      received = n;
    });
    Run();
    // Boost 1.74's parser does not apply body_limit to a Content-Length body that arrives with
    // its header, so the length is checked here; chunked bodies are limited by the parser.
    if (!ec && parser.content_length() && *parser.content_length() > max_body_bytes_) {
      ec = http::error::body_limit;
    }
    if (!ec && !parser.is_done()) {
      http::async_read(*stream_, buffer, parser, [&](ErrorCode e, size_t) { ec = e; });
      Run();
    }
    bool closed_before_answer = (ec == http::error::end_of_stream ||
                                 ec == asio::error::connection_reset || ec == asio::error::eof) &&
                                received == 0 && buffer.size() == 0;
    if (reused && closed_before_answer) outcome.sent = false;
    if (ec == http::error::body_limit) {
      outcome.error =
          InternalError("slurmrestd at " + endpoint_.ToString() + ": response larger than " +
                        std::to_string(max_body_bytes_) + " bytes");
      return outcome;
    }
    if (ec) {
      outcome.error = UnavailableError(Describe(endpoint_, ec));
      return outcome;
    }
    auto response = parser.release();
    outcome.response.status = static_cast<int>(response.result_int());
    outcome.response.body = std::move(response.body());
    if (!response.keep_alive()) stream_.reset();
    return outcome;
  }

  const Endpoint endpoint_;
  const HttpTimeouts timeouts_;
  const size_t max_body_bytes_;
  asio::io_context io_;
  std::optional<Stream> stream_;
};

template <>
Status BeastTransport<asio::ip::tcp>::Connect() {
  ErrorCode ec;
  asio::ip::tcp::resolver resolver(io_);
  auto results = resolver.resolve(endpoint_.host, std::to_string(endpoint_.port), ec);
  if (ec) return UnavailableError(Describe(endpoint_, ec));
  stream_.emplace(io_.get_executor());
  stream_->expires_after(timeouts_.connect);
  stream_->async_connect(results, [&](ErrorCode e, const asio::ip::tcp::endpoint&) { ec = e; });
  Run();
  if (ec) {
    stream_.reset();
    return UnavailableError(Describe(endpoint_, ec));
  }
  stream_->socket().set_option(asio::ip::tcp::no_delay(true), ec);
  return OkStatus();
}

template <>
Status BeastTransport<asio::local::stream_protocol>::Connect() {
  ErrorCode ec;
  stream_.emplace(io_.get_executor());
  stream_->expires_after(timeouts_.connect);
  stream_->async_connect(asio::local::stream_protocol::endpoint(endpoint_.path),
                         [&](ErrorCode e) { ec = e; });
  Run();
  if (ec) {
    stream_.reset();
    return UnavailableError(Describe(endpoint_, ec));
  }
  return OkStatus();
}

}  // namespace

std::string Endpoint::ToString() const {
  if (kind == Kind::kUnix) return "unix:" + path;
  bool v6 = host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<Endpoint> ParseEndpoint(std::string_view text) {
  Endpoint endpoint;
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("Slurm endpoint \"" + std::string(text) + "\": " + why +
                                " (expected http://HOST:PORT or unix:/PATH)");
  };
  if (StartsWith(text, "unix:")) {
    endpoint.kind = Endpoint::Kind::kUnix;
    endpoint.path = std::string(text.substr(5));
    if (endpoint.path.empty() || endpoint.path.front() != '/') {
      return bad("the socket path must be absolute");
    }
    return endpoint;
  }
  if (StartsWith(text, "https://")) {
    return bad("https is not supported: slurmrestd serves plain HTTP (put a TLS proxy in front)");
  }
  if (!StartsWith(text, "http://")) return bad("unknown scheme");
  std::string_view rest = text.substr(7);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos) return bad("a path after HOST:PORT");
  size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string_view host = rest.substr(0, colon);
  std::string_view port = rest.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad("an IPv6 address must be in brackets");
  }
  if (host.empty()) return bad("no host");
  int value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value <= 0 || value > 65535) {
    return bad("bad port \"" + std::string(port) + "\"");
  }
  endpoint.host = std::string(host);
  endpoint.port = value;
  return endpoint;
}

std::unique_ptr<HttpTransport> MakeBeastTransport(Endpoint endpoint, HttpTimeouts timeouts,
                                                  size_t max_body_bytes) {
  if (endpoint.kind == Endpoint::Kind::kUnix) {
    return std::make_unique<BeastTransport<asio::local::stream_protocol>>(std::move(endpoint),
                                                                          timeouts, max_body_bytes);
  }
  return std::make_unique<BeastTransport<asio::ip::tcp>>(std::move(endpoint), timeouts,
                                                         max_body_bytes);
}

}  // namespace gpupool::slurm
