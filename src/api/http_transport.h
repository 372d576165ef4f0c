#pragma once
// What the files of the HTTP server (http_*.cc) share about the transport: the event loops, the
// server's sockets and threads (HttpServer::Transport), and starting a connection. Not for use
// outside them.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "api/http_wire.h"

namespace gpupool::api {
namespace internal {

using Clock = std::chrono::steady_clock;
// A socket bound to one loop's io_context (no type-erased executor: every operation of a
// connection runs on its loop's thread).
using Socket = asio::basic_stream_socket<tcp, asio::io_context::executor_type>;

class Connection;

// One event loop: an io_context run by one thread, the connections it owns, and a sweep that
// closes those silent past their deadline. A connection never leaves its loop, so none of this
// needs a lock or a strand.
struct Loop {
  asio::io_context io{1};
  asio::steady_timer sweep{io};
  asio::steady_timer lag_probe{io};
  std::vector<std::weak_ptr<Connection>> connections;
};

}  // namespace internal

struct HttpServer::Transport {
  Transport(HttpServer& owner, const ServerOptions& server_options);

  // A nested class may call the server's private request path; the connections call these.
  void Handle(std::shared_ptr<const HttpMessage> message, Send send) {
    server.Handle(std::move(message), std::move(send));
  }
  Reply Refuse(const std::string& method, Reply reply) {
    return server.Refuse(method, std::move(reply));
  }
  // A connection closed: accepting resumes if it had stopped at the cap.
  void Closed();

  HttpServer& server;
  const ServerOptions options;
  const int max_connections;
  // Connections accepted and not yet destroyed; declared before the loops, whose destruction
  // destroys the last connections.
  std::atomic<int> connections{0};
  // Destroyed in reverse order: the workers (whose queued tasks hold connections) before the
  // loops the connections' sockets belong to.
  std::vector<std::unique_ptr<internal::Loop>> loops;
  tcp::acceptor acceptor;  // on loops[0]
  size_t next_loop = 0;    // round robin for accepted connections (loops[0]'s thread only)
  // The acceptor's state, loops[0]'s thread only: waiting for a connection to close (at the
  // cap), and whether accept() has been failing since it last succeeded (one log per episode).
  bool accept_paused = false;
  int accept_failures = 0;
  bool failures_logged = false;  // this episode's start was logged
  // When each condition was last logged: both may come and go many times a second.
  std::chrono::steady_clock::time_point failure_logged_at{}, cap_logged_at{};
  asio::steady_timer accept_backoff;           // on loops[0]
  metrics::Counter* accept_errors = nullptr;   // set by the server's constructor
  metrics::Gauge* open_connections = nullptr;  //
  asio::thread_pool workers;
  std::atomic<bool> running{false};
  std::atomic<bool> stopped{false};
  // Requests whose asynchronous handler has not answered yet: Serve() waits for them, since
  // their callbacks reach into the server.
  std::mutex async_mu;
  std::condition_variable async_cv;
  int async_pending = 0;
};

namespace internal {

using Transport = HttpServer::Transport;

// Starts serving an accepted connection on `loop` (its thread): the connection reads requests
// until it closes (http_connection.cc).
void StartConnection(Socket socket, Transport& transport, Loop& loop);

// Every second, closes the connections of `loop` that kept it waiting past their deadline.
void Sweep(Loop& loop);

}  // namespace internal
}  // namespace gpupool::api
