// The Kubernetes client's create-and-bind path against the fake API server at scale: how many
// pods per second gpupool's client can create and bind (pods/binding) on 5,000 nodes, and the
// latency from a pod's creation to its binding, while a pod informer watches every change.
//
//   gpupool-kube-bind-bench [--nodes 5000] [--pods 20000] [--in-flight 64] [--fake-threads 2]
//
// It starts gpupool-fake-apiserver (5,000 copies of the real nodes of data/edgexr-k8s-node-json,
// no kubelet), then runs `--pods` pipelines "POST pod, then POST its binding" with at most
// `--in-flight` requests outstanding (the client's connection pool, no rate limit), binding the
// pods to the nodes in turn. It prints the pods bound per second (first create to last binding),
// p50/p99/max of creation -> binding, the watch events the informer saw, and the CPU time of the
// client process apart from the fake server's. No placement decision is made here: the
// scheduler's own cost per decision is bench/scheduler_bench's.

#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "kube/api.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kube/testing/fake_process.h"

namespace {

using namespace gpupool;
using Json = nlohmann::ordered_json;
using SteadyClock = std::chrono::steady_clock;

double CpuSeconds(int who) {
  rusage usage{};
  getrusage(who, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  size_t k = std::min(values.size() - 1, static_cast<size_t>(p * values.size()));
  std::nth_element(values.begin(), values.begin() + static_cast<long>(k), values.end());
  return values[k];
}

struct Run {
  std::mutex mu;
  std::condition_variable done_cv;
  std::vector<double> latency_ms;
  int finished = 0;
  int failed = 0;
  std::string first_error;
};

// One pod: create, then bind; `next` starts the following pipeline when this one ends.
void Pipeline(kube::Client& client, Run& run, int i, const std::vector<std::string>& nodes,
              const std::function<void()>& next) {
  auto start = SteadyClock::now();
  std::string name = "bench-" + std::to_string(i);
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"labels", {{"gpupool.io/queue", "bench"}}}}},
              {"spec",
               {{"schedulerName", "gpupool"},
                {"containers",
                 {{{"name", "main"},
                   {"image", "busybox"},
                   {"resources", {{"requests", {{"cpu", "100m"}}}}}}}}}}};
  auto finish = [&run, start, next](const Status& status) {
    next();  // first: once the last pipeline is counted, Measure returns and `next` is gone
    {
      std::lock_guard lock(run.mu);
      ++run.finished;
      if (status.ok()) {
        run.latency_ms.push_back(
            std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count());
      } else if (run.failed++ == 0) {
        run.first_error = status.message();
      }
    }
    run.done_cv.notify_all();
  };
  const std::string node = nodes[static_cast<size_t>(i) % nodes.size()];
  client.Send({"POST", "/api/v1/namespaces/bench/pods", pod.dump()},
              [&client, finish, node](Result<kube::Response> created) {
                if (!created.ok()) return finish(created.status());
                if (!created->ok()) return finish(kube::ApiError(*created, "create"));
                kube::ObjectRef ref = kube::RefOf(created->Json());
                client.Send(
                    {"POST", kube::PodPath(ref, "binding"), kube::BindingBody(ref, node).dump()},
                    [finish](Result<kube::Response> bound) {
                      if (!bound.ok()) return finish(bound.status());
                      finish(bound->ok() ? OkStatus() : kube::ApiError(*bound, "bind"));
                    });
              });
}

// Runs `pods` pipelines, `in_flight` at a time; returns the seconds from the first create to
// the last answer.
double Measure(kube::Client& client, Run& run, const std::vector<std::string>& nodes, int pods,
               int in_flight) {
  std::atomic<int> next_index{0};
  std::function<void()> next = [&] {
    int i = next_index++;
    if (i < pods) Pipeline(client, run, i, nodes, next);
  };
  auto start = SteadyClock::now();
  for (int i = 0; i < in_flight; ++i) next();
  std::unique_lock lock(run.mu);
  run.done_cv.wait(lock, [&] { return run.finished == pods; });
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpupool-kube-bind-bench: create and bind pods against the fake API server"};
  int node_count = 5000, pods = 20000, in_flight = 64, fake_threads = 2;
  app.add_option("--nodes", node_count, "nodes in the fake cluster")->capture_default_str();
  app.add_option("--pods", pods, "pods to create and bind")->capture_default_str();
  app.add_option("--in-flight", in_flight, "pipelines at once")->capture_default_str();
  app.add_option("--fake-threads", fake_threads, "the fake server's threads")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  kube::fake::FakeProcessOptions options;
  options.binary = GPUPOOL_FAKE_APISERVER;
  options.cert_script = std::string(GPUPOOL_SOURCE_DIR) + "/src/kube/testing/make-test-certs.sh";
  options.args = {"--nodes",      std::string(GPUPOOL_SOURCE_DIR) + "/data/edgexr-k8s-node-json",
                  "--node-count", std::to_string(node_count),
                  "--threads",    std::to_string(fake_threads)};
  auto fake = kube::fake::FakeApiServerProcess::Start(options);
  if (!fake.ok()) {
    std::fprintf(stderr, "%s\n", fake.status().message().c_str());
    return 1;
  }
  const double children_started = CpuSeconds(RUSAGE_CHILDREN);
  auto client = kube::Client::Create((*fake)->Config(),
                                     {.qps = -1, .max_connections = std::max(1, in_flight)});
  if (!client.ok()) return 1;

  kube::Informer nodes_informer(**client, {.path = "/api/v1/nodes"});
  nodes_informer.Start();
  nodes_informer.WaitForSync(std::chrono::seconds(120));
  std::vector<std::string> nodes;
  for (const auto& node : nodes_informer.List()) nodes.push_back(kube::ObjectKeyOf(*node));
  nodes_informer.Stop();
  std::atomic<int64_t> events{0};
  kube::Informer pods_informer(
      **client, {.path = "/api/v1/pods"},
      {.on_add = [&](const kube::ObjectPtr&) { ++events; },
       .on_update = [&](const kube::ObjectPtr&, const kube::ObjectPtr&) { ++events; }});
  pods_informer.Start();
  pods_informer.WaitForSync(std::chrono::seconds(60));

  Run run;
  const double cpu_before = CpuSeconds(RUSAGE_SELF);
  const double seconds = Measure(**client, run, nodes, pods, in_flight);
  const double cpu = CpuSeconds(RUSAGE_SELF) - cpu_before;
  // The informer catches up with the last bindings before the fake stops.
  auto deadline = SteadyClock::now() + std::chrono::seconds(60);
  while (events.load() < 2LL * (pods - run.failed) && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pods_informer.Stop();
  (void)(*fake)->Stop();
  const double fake_cpu = CpuSeconds(RUSAGE_CHILDREN) - children_started;

  int bound = pods - run.failed;
  std::printf("nodes %zu, pods %d, in flight %d, fake threads %d\n", nodes.size(), pods, in_flight,
              fake_threads);
  std::printf("bound %d (failed %d%s%s) in %.2f s: %.0f pods created and bound per second\n", bound,
              run.failed, run.failed ? ": " : "", run.first_error.c_str(), seconds,
              bound / seconds);
  std::printf("creation -> binding: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
              Percentile(run.latency_ms, 0.50), Percentile(run.latency_ms, 0.99),
              Percentile(run.latency_ms, 1.0));
  std::printf("watch events seen by the pod informer: %lld\n", static_cast<long long>(events));
  std::printf(
      "CPU: client %.2f s (%.1f us per pod, informers included), fake API server %.2f s "
      "(%.1f us per pod, start-up included)\n",
      cpu, 1e6 * cpu / std::max(bound, 1), fake_cpu, 1e6 * fake_cpu / std::max(bound, 1));
  return run.failed == 0 ? 0 : 1;
}
