#include "scale_scenario.h"

#include <httplib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "kube/api.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kube/testing/fake_process.h"
#include "model/k8s.h"
#include "model/match.h"
#include "serve_process.h"

namespace gpupool::kube_e2e {
namespace {

using Json = nlohmann::ordered_json;
using SteadyClock = std::chrono::steady_clock;

constexpr char kNamespace[] = "scale";
constexpr char kGpu[] = "nvidia.com/gpu";
constexpr size_t kMaxViolations = 20;

double ProcessCpuSeconds(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  if (text.find(')') == std::string::npos) return 0;  // no such process (any more)
  // Fields after the command (which may hold spaces): state is the 3rd, utime and stime the
  // 14th and 15th.
  std::istringstream rest(text.substr(text.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double SelfCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// Once its node sync has written the nodes, gpupool's loop and its dashboard views still read
// all of them once (about a second of CPU at 5,000 nodes): waits (at most 30 s) until `pid`'s CPU
// per half second stops falling, then returns its rate over the next two seconds (CPU seconds per
// second). A stream's CPU is then what binding costs, and the idle rate is reported beside it:
// a step with nothing to do still copies the nodes and rebuilds the cycle's view.
double SettleAndIdleRate(pid_t pid) {
  const auto deadline = SteadyClock::now() + std::chrono::seconds(30);
  auto window = [&] {
    const double before = ProcessCpuSeconds(pid);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    return ProcessCpuSeconds(pid) - before;
  };
  double last = window();
  while (SteadyClock::now() < deadline) {
    const double now = window();
    if (now >= last - 0.02) break;  // no longer falling: the one-time reads are done
    last = now;
  }
  const double before = ProcessCpuSeconds(pid);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  return (ProcessCpuSeconds(pid) - before) / 2;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  size_t k =
      std::min(values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size())));
  std::nth_element(values.begin(), values.begin() + static_cast<long>(k), values.end());
  return values[k];
}

// Pod `i` of the stream; `gpu_pods`: how many GPU pods there are (one per GPU node), the first
// ones of kind 7. A GPU pod asks for its GPU only, so that a GPU node full of the tolerating CPU
// pods (kind 8) still has room for it.
Json PodOfKind(int i, int gpu_pods) {
  Json requests = {{"cpu", "100m"}, {"memory", "64Mi"}};
  Json spec = {{"schedulerName", "gpupool"}};
  const Json tolerate_gpu =
      Json::array({{{"key", kGpu}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
  switch (i % 10) {
    case 6:
      spec["nodeSelector"] = {{"kubernetes.io/role", "agent"}};
      break;
    case 7:
      if (i / 10 < gpu_pods) {
        requests = {{kGpu, "1"}};
        spec["tolerations"] = tolerate_gpu;
      }
      break;
    case 8:
      requests = {{"cpu", "50m"}, {"memory", "32Mi"}};
      spec["tolerations"] = tolerate_gpu;
      break;
    case 9:
      requests = {{"cpu", "250m"}, {"memory", "256Mi"}};
      break;
    default:
      break;
  }
  spec["containers"] = Json::array(
      {{{"name", "main"}, {"image", "busybox"}, {"resources", {{"requests", requests}}}}});
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "scale-" + std::to_string(i)}, {"namespace", kNamespace}}},
          {"spec", spec}};
}

// The creation bodies, serialised once per kind with the name left out: the client shares the
// machine with what it measures, and building and dumping each pod's JSON was a tenth of its CPU.
class PodBodies {
 public:
  explicit PodBodies(int gpu_pods) : gpu_pods_(gpu_pods) {
    // Kinds 0-9, and kind 7 past the GPU pods (then a plain pod).
    for (int i : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 * gpu_pods + 7}) {
      const std::string name = "scale-" + std::to_string(i);
      const std::string body = PodOfKind(i, gpu_pods).dump();
      const size_t at = body.find('"' + name + '"') + 1;
      parts_[Variant(i)] = {body.substr(0, at), body.substr(at + name.size())};
    }
  }
  // The same text as PodOfKind(i, gpu_pods).dump().
  std::string For(int i) const {
    const auto& [before, after] = parts_[Variant(i)];
    return before + "scale-" + std::to_string(i) + after;
  }

 private:
  int Variant(int i) const { return i % 10 == 7 && i / 10 >= gpu_pods_ ? 10 : i % 10; }

  const int gpu_pods_;
  std::array<std::pair<std::string, std::string>, 11> parts_;
};

// Creation and binding times, by pod index.
struct Timeline {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<SteadyClock::time_point> created, bound;
  int bound_count = 0;
  int answered = 0;  // creations answered
  std::string first_error;
};

int IndexOf(const Json& pod) {
  const std::string name = pod.value("/metadata/name"_json_pointer, "");
  if (!name.starts_with("scale-")) return -1;
  return std::stoi(name.substr(6));
}

bool IsBound(const Json& pod) { return !pod.value("/spec/nodeName"_json_pointer, "").empty(); }

void OnBound(Timeline& timeline, const Json& pod) {
  const int i = IndexOf(pod);
  if (i < 0 || !IsBound(pod)) return;
  std::lock_guard lock(timeline.mu);
  if (static_cast<size_t>(i) >= timeline.bound.size()) return;
  if (timeline.bound[i] != SteadyClock::time_point{}) return;
  timeline.bound[i] = SteadyClock::now();
  ++timeline.bound_count;
  timeline.cv.notify_all();
}

// Creates pod `i`; `then` runs once the API server answered.
void CreatePod(kube::Client& client, Timeline& timeline, int i, const PodBodies& bodies,
               std::function<void()> then) {
  std::string body = bodies.For(i);
  {
    std::lock_guard lock(timeline.mu);
    timeline.created[i] = SteadyClock::now();
  }
  client.Send({"POST", std::string("/api/v1/namespaces/") + kNamespace + "/pods", std::move(body)},
              [&timeline, then = std::move(then)](Result<kube::Response> created) {
                // `then` first: once the last answer is counted, the caller returns.
                then();
                {
                  std::lock_guard lock(timeline.mu);
                  ++timeline.answered;
                  if (timeline.first_error.empty() && !(created.ok() && created->ok())) {
                    timeline.first_error =
                        created.ok() ? created->body : created.status().message();
                  }
                }
                timeline.cv.notify_all();
              });
}

// Creates the pods at `rate` per second (open loop: a creation never waits for an answer), or
// with `in_flight` creations outstanding at once when `rate` is 0.
void CreatePods(kube::Client& client, Timeline& timeline, int pods, int gpu_pods, int in_flight,
                int rate) {
  const PodBodies bodies(gpu_pods);
  std::atomic<int> next_index{0};
  std::function<void()> next = [&] {
    const int i = next_index++;
    if (i < pods) CreatePod(client, timeline, i, bodies, next);
  };
  const auto start = SteadyClock::now();
  for (int i = 0; rate > 0 && i < pods; ++i) {
    std::this_thread::sleep_until(start + std::chrono::microseconds(int64_t{1000000} * i / rate));
    CreatePod(client, timeline, i, bodies, [] {});
  }
  for (int i = 0; rate <= 0 && i < in_flight; ++i) next();
  std::unique_lock lock(timeline.mu);
  timeline.cv.wait(lock, [&] { return timeline.answered == pods; });
}

// Taints every GPU node nvidia.com/gpu=present:NoSchedule, as GPU operators' users often do;
// returns how many GPU nodes there are.
Result<int> TaintGpuNodes(kube::Client& client) {
  auto listed = client.Call({"GET", "/api/v1/nodes"});
  if (!listed.ok()) return listed.status();
  if (!listed->ok()) return kube::ApiError(*listed, "list nodes");
  const Json nodes = listed->Json();
  int gpu_nodes = 0;
  for (const Json& node : nodes["items"]) {
    if (!node.contains("/status/allocatable/nvidia.com~1gpu"_json_pointer)) continue;
    ++gpu_nodes;
    const Json patch = {
        {"spec",
         {{"taints",
           Json::array({{{"key", kGpu}, {"value", "present"}, {"effect", "NoSchedule"}}})}}}};
    auto patched =
        client.Call({"PATCH", "/api/v1/nodes/" + node["metadata"]["name"].get<std::string>(),
                     patch.dump(), "application/merge-patch+json"});
    if (!patched.ok()) return patched.status();
    if (!patched->ok()) return kube::ApiError(*patched, "taint node");
  }
  return gpu_nodes;
}

// Waits until gpupool's store holds `nodes` nodes, `tainted` of them tainted (its node sync ran).
bool WaitForGpupoolNodes(int port, int nodes, int tainted) {
  httplib::Client http("127.0.0.1", port);
  http.set_default_headers({{"Authorization", "Bearer dev:scale:osmo-admin"}});
  http.set_read_timeout(30);
  return Eventually(
      [&] {
        auto res = http.Get("/api/nodes");
        if (!res || res->status != 200) return false;
        const Json listed = Json::parse(res->body, nullptr, false);
        if (!listed.is_object() || listed["items"].size() != static_cast<size_t>(nodes))
          return false;
        int seen = 0;
        for (const Json& node : listed["items"]) {
          if (node.contains("/spec/taints"_json_pointer)) ++seen;
        }
        return seen == tainted;
      },
      std::chrono::seconds(120));
}

}  // namespace

std::vector<std::string> CheckPlacement(const std::vector<kube::ObjectPtr>& pods,
                                        const std::vector<kube::ObjectPtr>& nodes) {
  std::vector<std::string> violations;
  auto violate = [&](std::string what) {
    if (violations.size() < kMaxViolations) violations.push_back(std::move(what));
  };
  std::map<std::string, model::Node> by_name;
  for (const auto& object : nodes) {
    auto node = model::NodeFromJson(*object);
    if (node.ok()) by_name.emplace(node->name, std::move(*node));
  }
  std::map<std::string, model::ResourceList> used;
  std::map<std::string, int> pod_count;
  for (const auto& object : pods) {
    const Json& json = *object;
    const std::string name = json.value("/metadata/name"_json_pointer, "");
    auto pod = model::PodSchedulingFromJson(json);
    if (!pod.ok()) {
      violate(name + ": unreadable: " + pod.status().message());
      continue;
    }
    if (pod->node_name.empty()) {
      // With gpupool's reason when it gave one (PodScheduled=False).
      std::string why;
      for (const Json& condition : json.value("/status/conditions"_json_pointer, Json::array())) {
        if (condition.value("type", "") == "PodScheduled") why = condition.value("message", "");
      }
      violate(name + ": not bound" + (why.empty() ? "" : ": " + why));
      continue;
    }
    auto node = by_name.find(pod->node_name);
    if (node == by_name.end()) {
      violate(name + ": bound to " + pod->node_name + ", which does not exist");
      continue;
    }
    for (const auto& [resource, amount] : pod->requests) used[pod->node_name][resource] += amount;
    ++pod_count[pod->node_name];
    if (auto taint = model::FindUntoleratedTaint(node->second.taints, pod->tolerations)) {
      violate(name + ": on " + pod->node_name + " despite the untolerated taint " + taint->key);
    }
    if (!model::MatchesNodeSelector(pod->node_selector, node->second)) {
      violate(name + ": on " + pod->node_name + ", which its nodeSelector does not select");
    }
  }
  for (const auto& [node_name, resources] : used) {
    const model::ResourceList& allocatable = by_name.at(node_name).allocatable;
    for (const auto& [resource, amount] : resources) {
      auto it = allocatable.find(resource);
      const model::Quantity room = it == allocatable.end() ? model::Quantity() : it->second;
      if (amount > room) {
        violate(node_name + ": " + resource + " over-committed: " + amount.ToString() + " of " +
                room.ToString());
      }
    }
    auto pods_room = allocatable.find("pods");
    if (pods_room != allocatable.end() &&
        model::Quantity::FromUnits(pod_count[node_name]) > pods_room->second) {
      violate(node_name + ": " + std::to_string(pod_count[node_name]) +
              " pods, more than allocatable");
    }
  }
  return violations;
}

namespace {

std::string Tail(const std::string& text, size_t bytes) {
  return text.size() <= bytes ? text : text.substr(text.size() - bytes);
}

// Pods bound, first creation to last binding, and creation -> binding percentiles.
void AddTimings(Timeline& timeline, SteadyClock::time_point start, ScaleReport& report) {
  std::vector<double> latency_ms;
  SteadyClock::time_point first = SteadyClock::time_point::max(), last = start;
  {
    std::lock_guard lock(timeline.mu);
    report.bound = timeline.bound_count;
    for (size_t i = 0; i < timeline.bound.size(); ++i) {
      if (timeline.bound[i] == SteadyClock::time_point{}) continue;
      latency_ms.push_back(
          std::chrono::duration<double, std::milli>(timeline.bound[i] - timeline.created[i])
              .count());
      first = std::min(first, timeline.bound[i]);
      last = std::max(last, timeline.bound[i]);
    }
  }
  report.seconds = std::chrono::duration<double>(last - start).count();
  if (report.bound > 1)
    report.binding_seconds = std::chrono::duration<double>(last - first).count();
  report.p50_ms = Percentile(latency_ms, 0.50);
  report.p99_ms = Percentile(latency_ms, 0.99);
  report.max_ms = Percentile(latency_ms, 1.0);
}

// Whether the server on `port` holds the scheduling lease (its gpupool_scheduler_leader gauge).
bool IsLeader(int port) {
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(10);
  auto res = http.Get("/metrics");
  return res && res->status == 200 &&
         res->body.find("\ngpupool_scheduler_leader 1") != std::string::npos;
}

// Failover: once a third of the pods are bound, kills whichever server leads (SIGKILL).
void KillTheLeaderMidStream(Timeline& timeline, int pods, const std::vector<ServeProcess*>& servers,
                            ScaleReport& report) {
  {
    std::unique_lock lock(timeline.mu);
    if (!timeline.cv.wait_for(lock, std::chrono::seconds(120),
                              [&] { return timeline.bound_count >= pods / 3; })) {
      return;
    }
    report.bound_at_kill = timeline.bound_count;
  }
  for (ServeProcess* server : servers) {
    if (IsLeader(server->port())) {
      server->Kill9();
      report.leader_killed = true;
      return;
    }
  }
}

// The bindings the fake answered, and the pod-by-pod checks against the pods and nodes it holds
// now (all pods, listed afresh: the stream's informer saw the bound ones only).
Status CheckAgainstTheApiServer(kube::Client& client, ScaleReport& report) {
  auto stats = client.Call({"GET", "/_fake/stats"});
  if (stats.ok() && stats->ok()) {
    report.bindings_asked = stats->Json()["requests"].value("create pods/binding", int64_t{0});
  }
  kube::Informer node_informer(client, {.path = "/api/v1/nodes"});
  node_informer.Start();
  if (!node_informer.WaitForSync(std::chrono::seconds(60))) {
    return UnavailableError("the node informer did not sync");
  }
  kube::Informer pod_informer(client, {.path = "/api/v1/pods"});
  pod_informer.Start();
  if (!pod_informer.WaitForSync(std::chrono::seconds(60))) {
    return UnavailableError("the pod informer did not sync");
  }
  report.violations = CheckPlacement(pod_informer.List(), node_informer.List());
  pod_informer.Stop();
  node_informer.Stop();
  return OkStatus();
}

}  // namespace

Result<ScaleReport> RunScaleScenario(const ScaleOptions& options) {
  kube::fake::FakeProcessOptions fake_options;
  fake_options.binary = GPUPOOL_FAKE_APISERVER;
  fake_options.cert_script =
      std::string(GPUPOOL_SOURCE_DIR) + "/src/kube/testing/make-test-certs.sh";
  fake_options.args = {
      "--nodes",      std::string(GPUPOOL_SOURCE_DIR) + "/data/edgexr-k8s-node-json",
      "--node-count", std::to_string(options.nodes),
      "--threads",    std::to_string(options.fake_threads)};
  ASSIGN_OR_RETURN(auto fake, kube::fake::FakeApiServerProcess::Start(fake_options));
  ASSIGN_OR_RETURN(
      auto client,
      kube::Client::Create(fake->Config(),
                           {.qps = -1, .max_connections = std::max(1, options.in_flight)}));
  ASSIGN_OR_RETURN(const int gpu_nodes, TaintGpuNodes(*client));
  ASSIGN_OR_RETURN(const std::string kubeconfig, fake->WriteKubeconfig(false));

  std::vector<std::string> args = {
      "serve",   "--listen", "127.0.0.1:0", "--db",       "sqlite:" + fake->dir() + "/gpupool.db",
      "--auth",  "dev",      "--backend",   "kubernetes", "--kubeconfig",
      kubeconfig};
  args.insert(args.end(), options.serve_flags.begin(), options.serve_flags.end());
  ServeProcess serve(fake->dir(), args);
  if (serve.port() <= 0) return UnavailableError("gpupool-serve did not start:\n" + serve.Log());
  if (!WaitForGpupoolNodes(serve.port(), options.nodes, gpu_nodes)) {
    return UnavailableError("gpupool did not see the nodes:\n" + Tail(serve.Log(), 4000));
  }
  const double serve_idle_rate = SettleAndIdleRate(serve.pid());
  // Failover: a second server on the same store, started once the first leads.
  std::unique_ptr<ServeProcess> standby;
  if (options.failover) {
    standby = std::make_unique<ServeProcess>(fake->dir(), args, "standby.log");
    if (standby->port() <= 0) return UnavailableError("the second gpupool-serve did not start");
  }

  Timeline timeline;
  timeline.created.resize(options.pods);
  timeline.bound.resize(options.pods);
  // Bound pods only (`spec.nodeName!=`, as kube-scheduler's informer of assigned pods): each pod
  // comes once, when bound, instead of at its creation and again at its binding. Half the
  // events to parse here and to send from the fake, which share the machine with gpupool.
  kube::Informer pod_informer(
      *client,
      {.path = "/api/v1/pods",
       .field_selector = "spec.nodeName!=",
       // Only the name and node of each: a streaming read, not a tree of the whole pod.
       .decode = kube::KeepFieldsDecoder({"spec.nodeName"})},
      {.on_add = [&](const kube::ObjectPtr& pod) { OnBound(timeline, *pod); },
       .on_update = [&](const kube::ObjectPtr&,
                        const kube::ObjectPtr& pod) { OnBound(timeline, *pod); }});
  pod_informer.Start();
  if (!pod_informer.WaitForSync(std::chrono::seconds(60))) {
    return UnavailableError("the pod informer did not sync");
  }

  ScaleReport report;
  report.nodes = options.nodes;
  report.created = options.pods;
  const double serve_cpu = ProcessCpuSeconds(serve.pid());
  const double fake_cpu = ProcessCpuSeconds(fake->pid());
  const double client_cpu = SelfCpuSeconds();
  const auto start = SteadyClock::now();
  std::thread killer;
  if (standby != nullptr) {
    killer = std::thread([&] {
      KillTheLeaderMidStream(timeline, options.pods, {&serve, standby.get()}, report);
    });
  }
  if (options.on_stream_start) options.on_stream_start();
  CreatePods(*client, timeline, options.pods, gpu_nodes, options.in_flight, options.rate);
  {
    std::unique_lock lock(timeline.mu);
    timeline.cv.wait_until(lock, start + options.bound,
                           [&] { return timeline.bound_count == options.pods; });
  }
  if (killer.joinable()) killer.join();
  if (!timeline.first_error.empty()) return InternalError("create pods: " + timeline.first_error);
  // The CPU of the first server (of the one left, after a failover it did not survive).
  const bool first_alive = serve.pid() > 0;
  report.serve_cpu_s =
      first_alive ? ProcessCpuSeconds(serve.pid()) - serve_cpu : ProcessCpuSeconds(standby->pid());
  report.fake_cpu_s = ProcessCpuSeconds(fake->pid()) - fake_cpu;
  report.serve_idle_cpu_rate = serve_idle_rate;
  report.client_cpu_s = SelfCpuSeconds() - client_cpu;
  AddTimings(timeline, start, report);

  pod_informer.Stop();
  RETURN_IF_ERROR(CheckAgainstTheApiServer(*client, report));
  report.serve_log = Tail((first_alive ? serve : *standby).Log(), 4000);
  return report;
}

}  // namespace gpupool::kube_e2e
