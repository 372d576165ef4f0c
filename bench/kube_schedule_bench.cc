// gpupool scheduling pods on a Kubernetes API server, end to end: pods created through the API
// with `spec.schedulerName: gpupool` are watched, placed and bound by a real `gpupool-serve
// --backend kubernetes` against the fake API server (tests/kube/scale_scenario.h has the cluster,
// the pods and the pod-by-pod checks). Prints pods bound per second (first creation to last
// binding seen), creation -> binding p50/p99/max, and the CPU of gpupool, of the fake API server
// and of this client apart.
//
//   gpupool-kube-schedule-bench [--nodes 5000] [--pods 20000] [--in-flight 64 | --rate 2000]
//                               [--fake-threads 2] [--serve-flag=--kube-qps --serve-flag=-1 ...]

#include <CLI/CLI.hpp>
#include <cstdio>

#include "scale_scenario.h"

int main(int argc, char** argv) {
  using namespace gpupool::kube_e2e;
  CLI::App app{
      "gpupool-kube-schedule-bench: pods created -> bound by gpupool on the fake API server"};
  ScaleOptions options;
  options.nodes = 5000;
  options.pods = 20000;
  options.serve_flags = {"--kube-qps", "-1"};
  std::vector<std::string> serve_flags;
  app.add_option("--nodes", options.nodes, "nodes in the fake cluster")->capture_default_str();
  app.add_option("--pods", options.pods, "pods to create")->capture_default_str();
  app.add_option("--in-flight", options.in_flight, "creations outstanding at once")
      ->capture_default_str();
  app.add_option("--rate", options.rate, "creations per second, open loop (0: --in-flight at once)")
      ->capture_default_str();
  app.add_option("--fake-threads", options.fake_threads, "the fake API server's I/O threads")
      ->capture_default_str();
  app.add_option("--serve-flag", serve_flags,
                 "a flag for gpupool-serve (repeatable; default: --kube-qps -1, no rate limit)");
  CLI11_PARSE(app, argc, argv);
  if (!serve_flags.empty()) options.serve_flags = serve_flags;
  // On stderr, so that a profiler can start with the stream (`perf record -p` after this line).
  options.on_stream_start = [] {
    std::fprintf(stderr, "stream: creating pods\n");
    std::fflush(stderr);
  };

  auto report = RunScaleScenario(options);
  if (!report.ok()) {
    std::fprintf(stderr, "%s\n", report.status().message().c_str());
    return 1;
  }
  const ScaleReport& r = *report;
  std::printf("nodes %d, pods %d, %s %d\n", r.nodes, r.created,
              options.rate > 0 ? "created per second" : "in flight",
              options.rate > 0 ? options.rate : options.in_flight);
  std::printf("bound %d in %.2f s: %.0f pods bound per second; bindings asked %lld\n", r.bound,
              r.seconds, r.bound / std::max(r.seconds, 1e-9),
              static_cast<long long>(r.bindings_asked));
  std::printf("first binding to last: %.2f s, %.0f bound per second\n", r.binding_seconds,
              (r.bound - 1) / std::max(r.binding_seconds, 1e-9));
  std::printf("creation -> binding: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", r.p50_ms, r.p99_ms,
              r.max_ms);
  std::printf(
      "CPU over the stream: gpupool %.2f s (%.1f us per pod), fake API server %.2f s (%.1f "
      "us per pod), client %.2f s\n",
      r.serve_cpu_s, 1e6 * r.serve_cpu_s / std::max(r.bound, 1), r.fake_cpu_s,
      1e6 * r.fake_cpu_s / std::max(r.bound, 1), r.client_cpu_s);
  std::printf("gpupool idle before the stream (nodes read, no pods): %.1f %% of a core\n",
              100 * r.serve_idle_cpu_rate);
  for (const auto& violation : r.violations) std::printf("VIOLATION: %s\n", violation.c_str());
  return r.violations.empty() && r.bound == r.created ? 0 : 1;
}
