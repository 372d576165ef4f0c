#pragma once
// The Kubernetes backend at scale, end to end: the fake API server with N copies of the real
// nodes of data/edgexr-k8s-node-json (three 1.9-core AKS agents per A16 GPU node; the GPU nodes
// tainted nvidia.com/gpu=present:NoSchedule here), the real `gpupool-serve --backend kubernetes`,
// and P pods created through the API as anyone would (`spec.schedulerName: gpupool`, pipelined),
// of five kinds: plain CPU pods, pods selecting the agent nodes (nodeSelector), GPU pods that
// tolerate the taint (exactly one per GPU), CPU pods that tolerate it, and larger CPU pods.
//
// A pod informer of the bound pods (fieldSelector spec.nodeName!=) records when each pod is first
// seen bound. Then, pod by pod, over all pods as the API server lists them after the stream:
// bound once (as many bindings asked as pods bound), on a node that exists, whose allocatable
// its pods' effective requests (and pod count) do not exceed, whose NoSchedule/NoExecute taints
// the pod tolerates and whose labels match its nodeSelector.
//
// Used by tests/kube/kube_scale_e2e_test.cc (1,000 nodes, 10,000 pods: the checks) and
// bench/kube_schedule_bench.cc (5,000 nodes: binds per second, creation -> binding, CPU).

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "kube/informer.h"

namespace gpupool::kube_e2e {

struct ScaleOptions {
  int nodes = 1000;
  int pods = 10000;
  int in_flight = 64;    // creations outstanding at once
  int rate = 0;          // creations per second (open loop); 0: as fast as `in_flight` allows
  int fake_threads = 2;  // the fake API server's
  std::vector<std::string> serve_flags;  // added to gpupool-serve's (e.g. --interval)
  // Two gpupool-serve on one store (one leads, by its lease); the leader is killed with SIGKILL
  // once a third of the pods are bound, and the other takes over.
  bool failover = false;
  std::chrono::seconds bound{300};  // for all pods to be bound
  // Called just before the first creation (the benchmark says so, for a profiler to attach).
  std::function<void()> on_stream_start;
};

struct ScaleReport {
  int nodes = 0;
  int created = 0;
  int bound = 0;
  int64_t bindings_asked = 0;  // `create pods/binding` requests the fake answered
  double seconds = 0;          // first creation to last binding seen
  // First binding seen to the last: at an offered rate r, `created / seconds` cannot reach r
  // (the last creation is sent (created - 1) / r after the first, and binding takes time), while
  // (bound - 1) / binding_seconds is r when the bindings keep up with the creations.
  double binding_seconds = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;  // creation (sent) -> binding (seen)
  double serve_cpu_s = 0;                     // gpupool-serve over the run (its start-up excluded)
  double serve_idle_cpu_rate = 0;  // gpupool-serve before the run, nodes read: CPU s per s
  double fake_cpu_s = 0;           // the fake API server over the run
  double client_cpu_s = 0;         // this process: creations and the informer
  bool leader_killed = false;      // failover: whether it happened, and the pods bound by then
  int bound_at_kill = 0;
  std::vector<std::string> violations;  // the pod-by-pod checks that failed (at most 20)
  std::string serve_log;                // the end of gpupool-serve's log, for failures
};

// The pod-by-pod checks over pods and nodes as the API server holds them (at most 20 violations,
// each naming the pod or node).
std::vector<std::string> CheckPlacement(const std::vector<kube::ObjectPtr>& pods,
                                        const std::vector<kube::ObjectPtr>& nodes);

// Runs the scenario; an error when the processes cannot start or a request fails.
Result<ScaleReport> RunScaleScenario(const ScaleOptions& options);

}  // namespace gpupool::kube_e2e
