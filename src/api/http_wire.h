#pragma once
// What the files of the HTTP server (http_*.cc) share about the wire: the parsed request, reading
// one (its failures, unsupported transfer codings), and encoding a reply, with the error replies
// and the log line they write. Not for use outside them.

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

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "api/http_server.h"

namespace gpupool::api {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// The request as parsed from the wire, with its query string decoded once.
struct HttpMessage {
  http::request<http::string_body> request;
  std::string method;
  std::string target;  // raw, query included
  std::string source;  // client address
  std::vector<std::pair<std::string, std::string>> query;
};

namespace internal {

Reply ErrorReply(const Status& status);

// An error with an HTTP status no Status code maps to (405, 501), in the same shape.
Reply HttpError(int status, std::string code, std::string message);

// The text of the exception being handled; called in a catch block.
std::string CurrentExceptionText();

// One line on stderr, written at once (threads log concurrently).
void Log(const std::string& line);

// The request a parser completed, as the server reads it.
std::shared_ptr<HttpMessage> MessageOf(http::request<http::string_body> request,
                                       const std::string& source);

// Why a read ended without a request: nullopt when the peer left or went quiet (the connection
// just closes), else the refusal for something that is not HTTP or a body over the limit.
std::optional<Status> ReadFailure(const beast::error_code& ec, size_t max_body_bytes);

// RFC 9112 §6.1: a server that does not understand a transfer coding answers 501. Beast decodes
// `chunked` alone: under `gzip, chunked` a handler would read the compressed bytes as text.
std::optional<Reply> UnsupportedTransferCoding(const http::request_header<>& request);

std::shared_ptr<http::response<http::string_body>> MakeResponse(const Reply& reply,
                                                                unsigned version, bool keep_alive);

// MakeResponse; a reply that cannot be encoded (it threw) is logged and becomes a 500 that closes.
std::shared_ptr<http::response<http::string_body>> EncodeReply(const Reply& reply, unsigned version,
                                                               bool keep_alive);

}  // namespace internal
}  // namespace gpupool::api
