// gpupool-http-load: an open-loop HTTP load at a fixed rate, for the p99 "at 1,000 requests/s"
// of docs/BENCHMARKS.md without coordinated omission (see open_loop.h: a request's latency
// counts from when it was due, so a stall delays every request due during it).
//
//   gpupool-http-load --url http://127.0.0.1:8080/api/pool/default/workflow --rate 1000
//       --duration 8 [--connections 64] [--method POST --body-file wf.yaml
//       --content-type application/yaml] [--header "Authorization: Bearer ..."]...
//
// Every connection is opened (keep-alive) before the clock starts, so connecting is not timed.
// One thread drives them all with Asio: at 1,000 requests/s it is a few % of a core, which keeps
// the client's share of a shared machine small. It prints the latencies (from due and from sent)
// and a RESULT line for scripts; exit 1 when the target cannot be reached at all.
// wrk (Debian's) stays the tool for maximum throughput; it has no open-loop mode.

#include <CLI/CLI.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "open_loop.h"

namespace gpupool::bench {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string url;
  std::string method = "GET";
  std::string body_file;
  std::string content_type = "application/json";
  std::vector<std::string> headers;
  double rate = 1000;
  double duration = 10;
  int connections = 64;
  std::string arrivals = "uniform";
  uint64_t seed = 1;
  // How long in-flight requests may take to answer once the last one is due.
  double drain_seconds = 30;
};

struct Target {
  std::string host;
  std::string port;
  std::string path;
};

bool ParseUrl(const std::string& url, Target& target, std::string& error) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) {
    error = "--url must start with http:// (got '" + url + "')";
    return false;
  }
  std::string rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  target.path = slash == std::string::npos ? "/" : rest.substr(slash);
  size_t colon = authority.rfind(':');
  target.host = authority.substr(0, colon);
  target.port = colon == std::string::npos ? "80" : authority.substr(colon + 1);
  if (target.host.empty() || target.port.empty()) {
    error = "--url has no host or port: '" + url + "'";
    return false;
  }
  return true;
}

std::vector<Micros> Arrivals(const Options& options) {
  auto requests = static_cast<int64_t>(options.rate * options.duration);
  if (options.arrivals == "poisson") return PoissonArrivals(options.rate, requests, options.seed);
  return UniformArrivals(options.rate, requests);
}

class Load {
 public:
  Load(const Options& options, http::request<http::string_body> request,
       tcp::resolver::results_type endpoints)
      : plan_(Arrivals(options), options.connections),
        drain_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(options.drain_seconds))),
        request_(std::move(request)),
        endpoints_(std::move(endpoints)),
        timer_(io_) {
    for (int c = 0; c < options.connections; ++c) {
      connections_.push_back(std::make_unique<Connection>(io_));
    }
  }

  // Opens every connection; false (with the reason) when the target is unreachable.
  bool Connect(std::string& error) {
    for (auto& connection : connections_) {
      beast::error_code ec;
      asio::connect(connection->socket, endpoints_, ec);
      if (ec) {
        error = "cannot connect: " + ec.message();
        return false;
      }
      connection->socket.set_option(tcp::no_delay(true));
    }
    return true;
  }

  void Run() {
    start_ = Clock::now();
    Tick();
    io_.run();
  }

  const OpenLoopPlan& plan() const { return plan_; }
  Micros elapsed() const { return elapsed_; }

 private:
  struct Connection {
    explicit Connection(asio::io_context& io) : socket(io) {}
    tcp::socket socket;
    beast::flat_buffer buffer;
    http::response<http::string_body> response;
  };

  Micros Now() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_).count();
  }

  // Sends what is due and sleeps until the next request falls due, or, once all are issued,
  // until the drain deadline.
  void Tick() {
    for (Dispatch d : plan_.Issue(Now())) Send(d);
    std::optional<Micros> next = plan_.NextDue();
    if (!next) {
      timer_.expires_at(Clock::now() + drain_);
      timer_.async_wait([this](beast::error_code ec) {
        if (!ec) Stop();  // the drain deadline passed with requests unanswered
      });
      FinishIfDone();
      return;
    }
    timer_.expires_at(start_ + std::chrono::microseconds(*next));
    timer_.async_wait([this](beast::error_code ec) {
      if (!ec) Tick();
    });
  }

  void Send(Dispatch d) {
    Connection& c = *connections_[static_cast<size_t>(d.connection)];
    http::async_write(c.socket, request_, [this, d](beast::error_code ec, size_t) {
      if (ec) return Finish(d, Outcome::kError);
      Connection& c = *connections_[static_cast<size_t>(d.connection)];
      c.response = {};
      http::async_read(c.socket, c.buffer, c.response, [this, d](beast::error_code ec, size_t) {
        Connection& c = *connections_[static_cast<size_t>(d.connection)];
        if (ec) return Finish(d, Outcome::kError);
        bool ok = c.response.result_int() >= 200 && c.response.result_int() < 300;
        if (!c.response.keep_alive()) Reconnect(c);
        Finish(d, ok ? Outcome::kOk : Outcome::kNon2xx);
      });
    });
  }

  void Finish(Dispatch d, Outcome outcome) {
    if (outcome == Outcome::kError) Reconnect(*connections_[static_cast<size_t>(d.connection)]);
    if (std::optional<Dispatch> next = plan_.Complete(d.connection, Now(), outcome)) Send(*next);
    FinishIfDone();
  }

  // A failed or closed connection is opened again before its next request. Blocking is rare
  // (errors only) and short on loopback.
  void Reconnect(Connection& c) {
    beast::error_code ignored;
    c.socket.close(ignored);
    c.buffer.clear();
    asio::connect(c.socket, endpoints_, ignored);
    if (!ignored) c.socket.set_option(tcp::no_delay(true), ignored);
  }

  void FinishIfDone() {
    if (plan_.Done()) Stop();
  }

  void Stop() {
    elapsed_ = Now();
    timer_.cancel();
    io_.stop();
  }

  asio::io_context io_;
  OpenLoopPlan plan_;
  Clock::duration drain_;
  http::request<http::string_body> request_;
  tcp::resolver::results_type endpoints_;
  asio::steady_timer timer_;
  std::vector<std::unique_ptr<Connection>> connections_;
  Clock::time_point start_;
  Micros elapsed_ = 0;
};

std::string Millis(Micros us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fms", static_cast<double>(us) / 1000.0);
  return text;
}

// p50, p90, p99, p99.9 and max, formatted.
std::vector<std::string> Quantiles(const std::vector<Micros>& values) {
  std::vector<std::string> out;
  for (double p : {50.0, 90.0, 99.0, 99.9, 100.0}) out.push_back(Millis(Percentile(values, p)));
  return out;
}

void PrintRow(const char* label, const std::vector<std::string>& cells) {
  std::printf("  %-22s", label);
  for (const std::string& cell : cells) std::printf(" %9s", cell.c_str());
  std::printf("\n");
}

void Report(const Options& options, const Load& load) {
  const OpenLoopPlan& plan = load.plan();
  std::vector<Micros> latency, service;
  int64_t errors = plan.unanswered(), non2xx = 0;
  for (const Sample& s : plan.samples()) {
    latency.push_back(s.latency);
    service.push_back(s.service);
    if (s.outcome == Outcome::kError) ++errors;
    if (s.outcome == Outcome::kNon2xx) ++non2xx;
  }
  std::vector<std::string> from_due = Quantiles(latency), from_sent = Quantiles(service);
  PrintRow("latency", {"p50", "p90", "p99", "p99.9", "max"});
  PrintRow("from due (open loop)", from_due);
  PrintRow("from sent", from_sent);
  double seconds = static_cast<double>(load.elapsed()) / 1e6;
  double achieved = seconds > 0 ? static_cast<double>(plan.samples().size()) / seconds : 0;
  std::printf(
      "RESULT requests/s=%.0f target/s=%.0f answered=%zu p50=%s p99=%s p99.9=%s max=%s "
      "sent_p99=%s errors=%lld non2xx=%lld max_waiting=%zu connections_used=%d\n",
      achieved, options.rate, plan.samples().size(), from_due[0].c_str(), from_due[2].c_str(),
      from_due[3].c_str(), from_due[4].c_str(), from_sent[2].c_str(),
      static_cast<long long>(errors), static_cast<long long>(non2xx), plan.max_waiting(),
      plan.connections_used());
}

bool BuildRequest(const Options& options, const Target& target,
                  http::request<http::string_body>& request, std::string& error) {
  request.method_string(options.method);
  request.target(target.path);
  request.version(11);
  request.set(http::field::host, target.host + ":" + target.port);
  request.keep_alive(true);
  for (const std::string& header : options.headers) {
    size_t colon = header.find(':');
    if (colon == std::string::npos || colon == 0) {
      error = "--header must be 'Name: value' (got '" + header + "')";
      return false;
    }
    size_t value = header.find_first_not_of(' ', colon + 1);
    request.set(header.substr(0, colon), value == std::string::npos ? "" : header.substr(value));
  }
  if (!options.body_file.empty()) {
    std::ifstream file(options.body_file, std::ios::binary);
    if (!file) {
      error = "cannot read --body-file " + options.body_file;
      return false;
    }
    std::ostringstream body;
    body << file.rdbuf();
    request.body() = body.str();
    request.set(http::field::content_type, options.content_type);
  }
  request.prepare_payload();
  return true;
}

int Main(int argc, char** argv) {
  Options options;
  CLI::App app{
      "Open-loop HTTP load at a fixed rate (latency counted from when each request "
      "was due)"};
  app.add_option("--url", options.url, "http://HOST:PORT/PATH")->required();
  app.add_option("--method", options.method)->capture_default_str();
  app.add_option("--body-file", options.body_file, "request body, sent with every request");
  app.add_option("--content-type", options.content_type, "of the body")->capture_default_str();
  app.add_option("--header", options.headers, "'Name: value', repeatable");
  app.add_option("--rate", options.rate, "requests per second")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--duration", options.duration, "seconds of requests")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--connections", options.connections, "at most this many requests in flight")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--arrivals", options.arrivals,
                 "uniform: one every 1/rate s; poisson: exponential gaps of the same mean")
      ->capture_default_str()
      ->check(CLI::IsMember({"uniform", "poisson"}));
  app.add_option("--seed", options.seed, "of the Poisson arrivals")->capture_default_str();
  app.add_option("--drain", options.drain_seconds,
                 "seconds the last requests may take; unanswered ones count as errors")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);

  Target target;
  http::request<http::string_body> request;
  std::string error;
  if (!ParseUrl(options.url, target, error) || !BuildRequest(options, target, request, error)) {
    std::cerr << "gpupool-http-load: " << error << "\n";
    return 2;
  }
  asio::io_context resolve_io;
  beast::error_code ec;
  auto endpoints = tcp::resolver(resolve_io).resolve(target.host, target.port, ec);
  if (ec) {
    std::cerr << "gpupool-http-load: cannot resolve " << target.host << ": " << ec.message()
              << "\n";
    return 1;
  }
  Load load(options, std::move(request), endpoints);
  if (!load.Connect(error)) {
    std::cerr << "gpupool-http-load: " << options.url << ": " << error << "\n";
    return 1;
  }
  std::printf("open loop: %s %s, %.0f requests/s (%s) for %.0f s, up to %d connections\n",
              options.method.c_str(), options.url.c_str(), options.rate, options.arrivals.c_str(),
              options.duration, options.connections);
  load.Run();
  Report(options, load);
  return 0;
}

}  // namespace
}  // namespace gpupool::bench

int main(int argc, char** argv) { return gpupool::bench::Main(argc, argv); }
