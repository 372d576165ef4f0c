// The HTTP server's transport: the accept loop, the event loops and their threads.

#include "api/http_transport.h"

#include <sys/resource.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

namespace gpupool::api {
namespace internal {
namespace {

int IoThreads(const ServerOptions& options) {
  if (options.io_threads > 0) return options.io_threads;
  return std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
}

// Often enough that a stall of a few tens of milliseconds always overlaps a probe; rarely enough
// to cost nothing measurable (50 wake-ups a second per loop).
constexpr auto kLagProbeInterval = std::chrono::milliseconds(20);

// Observes how late the loop's timer fires, then re-arms it: a request that arrived when the
// probe was due waited about as long before the loop could read it.
void ProbeLag(Loop& loop, metrics::Histogram* lag) {
  auto due = Clock::now() + kLagProbeInterval;
  loop.lag_probe.expires_at(due);
  loop.lag_probe.async_wait([&loop, lag, due](beast::error_code ec) {
    if (ec) return;
    lag->Observe({}, std::chrono::duration<double>(Clock::now() - due).count());
    ProbeLag(loop, lag);
  });
}

void Accept(Transport& transport);

// True at most once a minute for `last`: a condition that comes and goes under load (at the
// connection cap, out of descriptors) is logged when it starts, without flooding the log.
bool LogDue(Clock::time_point& last) {
  const auto now = Clock::now();
  if (last != Clock::time_point{} && now - last < std::chrono::minutes(1)) return false;
  last = now;
  return true;
}

// accept() failed. The pending connection stays in the backlog, so the listening socket stays
// readable: trying again at once would spin (100 % CPU, nothing answered) until descriptors free
// up. Only a peer that gave up before it was accepted is no reason to wait.
void AcceptFailed(Transport& transport, const beast::error_code& ec) {
  transport.accept_errors->Increment({});
  if (ec == asio::error::connection_aborted) return Accept(transport);
  if (transport.accept_failures++ == 0 && LogDue(transport.failure_logged_at)) {
    transport.failures_logged = true;
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    Log("cannot accept connections: " + ec.message() + " (" +
        std::to_string(transport.connections.load()) + " open, descriptor limit " +
        std::to_string(limit.rlim_cur) + "); trying again every " +
        std::to_string(kAcceptBackoff.count()) + " ms");
  }
  transport.accept_backoff.expires_after(kAcceptBackoff);
  transport.accept_backoff.async_wait([&transport](beast::error_code wait_ec) {
    if (!wait_ec) Accept(transport);
  });
}

void Accept(Transport& transport) {
  if (transport.connections.load() >= transport.max_connections) {
    // Resumed by Transport::Closed; until then new connections wait in the kernel's backlog.
    if (!transport.accept_paused && LogDue(transport.cap_logged_at)) {
      Log(std::to_string(transport.max_connections) +
          " connections open (--max-connections): new ones wait until one closes");
    }
    transport.accept_paused = true;
    return;
  }
  Loop& loop = *transport.loops[transport.next_loop];
  transport.next_loop = (transport.next_loop + 1) % transport.loops.size();
  transport.acceptor.async_accept(
      loop.io, [&transport, &loop](beast::error_code ec, Socket socket) {
        if (ec == asio::error::operation_aborted || !transport.acceptor.is_open()) return;
        if (ec) return AcceptFailed(transport, ec);
        if (transport.failures_logged) {
          Log("accepting connections again after " + std::to_string(transport.accept_failures) +
              " failed attempts");
          transport.failures_logged = false;
        }
        transport.accept_failures = 0;
        transport.open_connections->Set({}, ++transport.connections);
        socket.set_option(tcp::no_delay(true), ec);
        // Start on the connection's own loop: its list of connections is that thread's alone.
        asio::post(loop.io, [&transport, &loop, socket = std::move(socket)]() mutable {
          StartConnection(std::move(socket), transport, loop);
        });
        Accept(transport);
      });
}

// Runs a loop until it is stopped. An exception thrown by a completion handler leaves run():
// it is logged and the loop goes on serving the other connections (the handler's connection,
// destroyed with it, is closed).
void RunLoop(asio::io_context& io) {
  for (;;) {
    try {
      io.run();
      return;
    } catch (...) {
      Log("I/O loop: unhandled exception: " + CurrentExceptionText());
    }
  }
}

}  // namespace
}  // namespace internal

using internal::Accept;
using internal::IoThreads;
using internal::Loop;
using internal::ProbeLag;
using internal::RunLoop;
using internal::Sweep;

int EffectiveMaxConnections(const ServerOptions& options) {
  if (options.max_connections > 0) return options.max_connections;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024 - kReservedDescriptors;
  const rlim_t descriptors = std::min<rlim_t>(limit.rlim_cur, 1 << 20);  // RLIM_INFINITY too
  const rlim_t reserved = kReservedDescriptors;
  return static_cast<int>(descriptors > reserved + 16 ? descriptors - reserved : 16);
}

HttpServer::Transport::Transport(HttpServer& owner, const ServerOptions& server_options)
    : server(owner),
      options(server_options),
      max_connections(EffectiveMaxConnections(server_options)),
      loops([&] {
        std::vector<std::unique_ptr<Loop>> made;
        for (int i = 0; i < IoThreads(server_options); ++i)
          made.push_back(std::make_unique<Loop>());
        return made;
      }()),
      acceptor(loops[0]->io),
      accept_backoff(loops[0]->io),
      workers(std::max(1, server_options.threads)) {}

void HttpServer::Transport::Closed() {
  int before = connections.fetch_sub(1);
  open_connections->Set({}, before - 1);
  // Once stopped, the loops may be going away: nothing is posted to them.
  if (before < max_connections || stopped) return;
  asio::post(loops[0]->io, [this] {
    if (!accept_paused || !acceptor.is_open()) return;
    accept_paused = false;
    Accept(*this);
  });
}

Result<int> HttpServer::Bind(const std::string& host, int port) {
  tcp::acceptor& acceptor = transport_->acceptor;
  beast::error_code ec;
  tcp::resolver resolver(transport_->loops[0]->io);
  auto endpoints = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec) return UnavailableError("cannot resolve " + host + ": " + ec.message());
  for (const auto& entry : endpoints) {
    if (acceptor.is_open()) acceptor.close(ec);
    acceptor.open(entry.endpoint().protocol(), ec);
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(entry.endpoint(), ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) return static_cast<int>(acceptor.local_endpoint().port());
  }
  beast::error_code ignored;
  if (acceptor.is_open()) acceptor.close(ignored);
  return UnavailableError("cannot bind " + host + ":" + std::to_string(port) + ": " + ec.message());
}

void HttpServer::Serve() {
  Transport& transport = *transport_;
  if (transport.stopped || !transport.acceptor.is_open()) return;
  transport.running = true;
  Accept(transport);
  std::vector<std::thread> threads;
  for (auto& loop : transport.loops) {
    Sweep(*loop);
    ProbeLag(*loop, loop_lag_);
    if (loop != transport.loops[0]) threads.emplace_back([&loop] { RunLoop(loop->io); });
  }
  RunLoop(transport.loops[0]->io);
  for (auto& thread : threads) thread.join();
  beast::error_code ec;
  transport.acceptor.close(ec);
  transport.workers.stop();  // requests not yet started are dropped: their clients see a close
  transport.workers.join();  // handlers already running finish
  WaitForAsyncHandlers();
  transport.running = false;
}

void HttpServer::Stop() {
  if (transport_->stopped.exchange(true)) return;
  for (auto& loop : transport_->loops) loop->io.stop();
}

bool HttpServer::IsRunning() const { return transport_->running; }

}  // namespace gpupool::api
