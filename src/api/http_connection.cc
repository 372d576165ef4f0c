// One client connection of the HTTP server, on its loop's thread.

#include <algorithm>
#include <optional>
#include <string>

#include "api/http_transport.h"

namespace gpupool::api::internal {

// One client connection: reads requests one after the other (HTTP/1.1 keep-alive; pipelined
// requests wait in the buffer and are answered in order), hands each to the server and writes
// its reply. Runs on its loop's thread; a
// reply computed by a worker is posted back to that loop.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // The transport has counted the connection; the destructor uncounts it.
  Connection(Socket socket, Transport& transport, Loop& loop)
      : socket_(std::move(socket)), transport_(transport), loop_(loop) {
    beast::error_code ec;
    auto remote = socket_.remote_endpoint(ec);
    if (!ec) source_ = remote.address().to_string();
  }
  ~Connection() { transport_.Closed(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void Start() {
    loop_.connections.push_back(weak_from_this());
    ReadHeader();
  }

  // Called by the loop's sweep: closes the connection when the client kept it waiting too long
  // (mid-request, or idle between requests). Never while a worker holds its request.
  void CloseIfOverdue(Clock::time_point now) {
    if (now > deadline_) Close();
  }

 private:
  void ExpectClientWithin(std::chrono::seconds limit) { deadline_ = Clock::now() + limit; }
  void IdleTimeout() {
    ExpectClientWithin(std::chrono::seconds(transport_.options.idle_timeout_seconds));
  }
  void NoTimeout() { deadline_ = Clock::time_point::max(); }

  void ReadHeader() {
    parser_.emplace();
    parser_->body_limit(transport_.options.max_body_bytes);
    IdleTimeout();
    http::async_read_header(socket_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) return self->Fail(ec);
                              self->OnHeader();
                            });
  }

  // curl and other clients send `Expect: 100-continue` before a large body and wait for the
  // interim response (a second) before sending it.
  void OnHeader() {
    const auto& request = parser_->get();
    if (auto refusal = UnsupportedTransferCoding(request)) {
      std::string method(request.method_string());
      return Write(MakeResponse(transport_.Refuse(method, std::move(*refusal)), request.version(),
                                /*keep_alive=*/false),
                   false);
    }
    if (!parser_->is_done() && beast::iequals(request[http::field::expect], "100-continue")) {
      auto interim = std::make_shared<http::response<http::empty_body>>(http::status::continue_,
                                                                        request.version());
      http::async_write(socket_, *interim,
                        [self = shared_from_this(), interim](beast::error_code ec, size_t) {
                          if (ec) return self->Close();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->Fail(ec);
                       self->OnRequest();
                     });
  }

  void OnRequest() {
    NoTimeout();
    std::shared_ptr<HttpMessage> message = MessageOf(parser_->release(), source_);
    ++served_;
    // The server routes and authenticates on this loop and answers here or from another thread
    // (a worker, or whoever completes an asynchronous handler); the write is always this loop's.
    transport_.Handle(message, [self = shared_from_this(), message](Reply reply) {
      asio::dispatch(self->loop_.io,
                     [self, message, reply = std::move(reply)] { self->Respond(*message, reply); });
    });
  }

  void Respond(const HttpMessage& message, const Reply& reply) {
    bool keep_alive = message.request.keep_alive() &&
                      served_ < transport_.options.keep_alive_max_requests && !transport_.stopped;
    Write(EncodeReply(reply, message.request.version(), keep_alive), message.method == "HEAD");
  }

  void Write(const std::shared_ptr<http::response<http::string_body>>& response,
             bool headers_only) {
    if (headers_only) response->body().clear();  // Content-Length stays that of the GET
    IdleTimeout();
    http::async_write(socket_, *response,
                      [self = shared_from_this(), response](beast::error_code ec, size_t) {
                        if (ec) return self->Close();
                        if (!response->keep_alive()) return self->Linger();
                        self->ReadHeader();
                      });
  }

  // A read that ended without a request: the peer left or went quiet (close), or sent something
  // that is not HTTP or a body over the limit (answer 400, then close).
  void Fail(beast::error_code ec) {
    std::optional<Status> refusal = ReadFailure(ec, transport_.options.max_body_bytes);
    if (!refusal) return Close();
    std::string method(parser_->get().method_string());
    Write(MakeResponse(transport_.Refuse(method, ErrorReply(*refusal)), 11, /*keep_alive=*/false),
          false);
  }

  // After the last reply: stop sending, then read and drop what the client still sends (e.g. the
  // rest of a refused body) until it closes, so the kernel does not reset the connection before
  // the client has read the reply.
  void Linger() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    ExpectClientWithin(std::chrono::seconds(5));
    buffer_.clear();
    socket_.async_read_some(buffer_.prepare(size_t{64} * 1024),
                            [self = shared_from_this()](beast::error_code error, size_t) {
                              if (error) return self->Close();
                              self->Linger();
                            });
  }

  void Close() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

  Socket socket_;
  Transport& transport_;
  Loop& loop_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string source_;
  int served_ = 0;
  Clock::time_point deadline_ = Clock::time_point::max();
};

void StartConnection(Socket socket, Transport& transport, Loop& loop) {
  std::make_shared<Connection>(std::move(socket), transport, loop)->Start();
}

void Sweep(Loop& loop) {
  loop.sweep.expires_after(std::chrono::seconds(1));
  loop.sweep.async_wait([&loop](beast::error_code ec) {
    if (ec) return;
    auto now = Clock::now();
    auto& live = loop.connections;
    live.erase(std::remove_if(live.begin(), live.end(),
                              [now](const std::weak_ptr<Connection>& weak) {
                                auto connection = weak.lock();
                                if (connection == nullptr) return true;
                                connection->CloseIfOverdue(now);
                                return false;
                              }),
               live.end());
    Sweep(loop);
  });
}

}  // namespace gpupool::api::internal
