// HttpServer::AnswerBytes: a connection's exchange without a socket (for fuzzing).

#include <future>
#include <memory>
#include <sstream>

#include "api/http_wire.h"

namespace gpupool::api {
namespace {

using internal::EncodeReply;
using internal::ErrorReply;
using internal::MakeResponse;
using internal::MessageOf;
using internal::ReadFailure;
using internal::UnsupportedTransferCoding;

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

}  // namespace gpupool::api
