#include "api/http_wire.h"

#include <exception>
#include <iostream>
#include <vector>

#include "api/status_to_http.h"
#include "codec/json_writer.h"
#include "common/safe_text.h"
#include "common/strings.h"

namespace gpupool::api {
namespace {

using Json = nlohmann::ordered_json;

std::string BodyOf(const Reply& reply) {
  if (reply.status == 304 || reply.status == 204) return "";  // no body by definition
  return reply.text.empty() ? codec::DumpCompact(reply.json) + "\n" : reply.text;
}

}  // namespace

namespace internal {

Reply ErrorReply(const Status& status) {
  return Reply::Json(ErrorBody(status), HttpStatusFor(status.code()));
}

Reply HttpError(int status, std::string code, std::string message) {
  return Reply::Json(
      Json{{"message", std::move(message)}, {"error_code", status}, {"code", std::move(code)}},
      status);
}

std::string CurrentExceptionText() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception of unknown type";
  }
}

void Log(const std::string& line) { std::cerr << ("gpupool serve: " + TerminalSafe(line) + "\n"); }

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

}  // namespace internal
}  // namespace gpupool::api
