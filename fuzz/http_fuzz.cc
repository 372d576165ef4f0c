// HTTP requests to the server, without a socket: the bytes a client sends go through
// HttpServer::AnswerBytes (Boost.Beast's parser with the server's limits, path normalisation,
// routing, authentication, access control, every handler of api/api.h and the reply encoding)
// on a fresh store with the built-in configs and two nodes, authenticated by `--auth dev` tokens
// (`Authorization: Bearer dev:<user>:<roles>`), so that every role's routes are reachable.
//
// Invariants: nothing escapes (an exception here would have ended the server); no reply is a
// 500 (a handler failed on input: a bug by the server's own contract); each reply is HTTP, and a
// JSON reply parses as JSON.

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <vector>

#include "api/access_control.h"
#include "api/api.h"
#include "api/auth.h"
#include "api/http_server.h"
#include "api/what_if.h"
#include "codec/json_reader.h"
#include "fuzz/support/fuzz_util.h"
#include "fuzz/support/service_fixture.h"
#include "metrics/metrics.h"

namespace gpupool::fuzz {
namespace {

namespace http = boost::beast::http;

// For each request in `sent`, in order, whether it is a HEAD: a reply to one announces a body
// (Content-Length) it does not carry, so its parser must not read the next reply as that body.
std::vector<bool> HeadRequests(std::string_view sent) {
  boost::beast::flat_buffer buffer;
  auto chunk = buffer.prepare(sent.size());
  buffer.commit(boost::asio::buffer_copy(chunk, boost::asio::buffer(sent.data(), sent.size())));
  std::vector<bool> heads;
  while (buffer.size() > 0) {
    http::request_parser<http::string_body> parser;
    parser.eager(true);
    boost::beast::error_code ec;
    size_t used = parser.put(buffer.data(), ec);
    if (ec || !parser.is_done()) break;
    buffer.consume(used);
    heads.push_back(parser.get().method() == http::verb::head);
  }
  return heads;
}

// The replies in `written`, one after the other, the i-th final one answering the i-th request
// of `heads`; stops at the first that does not parse.
void CheckReplies(std::string_view written, const std::vector<bool>& heads) {
  size_t answered = 0;
  boost::beast::flat_buffer buffer;
  auto chunk = buffer.prepare(written.size());
  buffer.commit(
      boost::asio::buffer_copy(chunk, boost::asio::buffer(written.data(), written.size())));
  while (buffer.size() > 0) {
    http::response_parser<http::string_body> parser;
    parser.eager(true);
    if (answered < heads.size() && heads[answered]) parser.skip(true);
    boost::beast::error_code ec;
    size_t used = parser.put(buffer.data(), ec);
    if (ec || !parser.is_done()) return;
    buffer.consume(used);
    const auto& response = parser.get();
    const unsigned status = response.result_int();
    // `100 Continue` answers `Expect: 100-continue` before the request's final reply.
    if (status == 100) continue;
    ++answered;
    Check(status >= 200 && status < 600, "a reply has a final status", std::to_string(status));
    Check(status != 500, "no request makes a handler fail (500)", response.body());
    if (response[http::field::content_type] == "application/json" && !response.body().empty()) {
      auto json = codec::ParseJson(response.body(), "reply");
      Check(json.ok(), "a JSON reply parses", json.status().ToString());
    }
  }
}

}  // namespace
}  // namespace gpupool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  static const std::unique_ptr<api::Authenticator> authenticator = api::MakeDevAuthenticator();
  auto fixture = ServiceFixture::Open();
  metrics::Registry registry;
  api::AccessControl access(fixture->store(), fixture->clock(), 0);
  api::ApiContext context;
  context.service = &fixture->service();
  context.store = &fixture->store();
  context.access = &access;
  context.registry = &registry;
  context.clock = &fixture->clock();
  context.what_if = api::MakeWhatIf(scheduler::PlacementPolicy::kFgd,
                                    autoscaler::Catalog::Builtin(), fixture->clock());
  api::Router router;
  api::AddApiRoutes(router, context);
  api::ServerOptions options;
  options.max_body_bytes = 64 * 1024;
  options.threads = 2;
  options.io_threads = 1;
  api::HttpServer server(std::move(router), authenticator.get(), api::MakeAccessChecker(context),
                         api::MakeAuditHook(context), registry, options);
  std::string written;
  try {
    written = server.AnswerBytes(AsText(data, size));
  } catch (const std::exception& e) {
    Fail("no exception escapes the server's request path", e.what());
  }
  // To see what the server answered to a reproducer: GPUPOOL_FUZZ_VERBOSE=1.
  static const bool verbose = std::getenv("GPUPOOL_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fwrite(written.data(), 1, written.size(), stderr);
  CheckReplies(written, HeadRequests(AsText(data, size)));
  return 0;
}
