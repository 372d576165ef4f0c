#pragma once
// The fake API server's kubelets: one simulated kubelet for every node, driven by annotations,
// so tests can run pods to any end without a container runtime.
//
// A pod bound to a node that exists (spec.nodeName) starts after `start_ms`: phase Running,
// containerStatuses running, condition Ready. It then runs for its run time and ends: every
// container terminated with the exit code, phase Succeeded (all 0) or Failed. Per pod:
//   fake.gpupool.io/run-ms          run time in ms (else gpupool.io/sim-duration-seconds x 1000,
//                                   else KubeletOptions::run_ms)
//   fake.gpupool.io/exit-code       exit code (else gpupool.io/sim-exit-code, else 0)
//   fake.gpupool.io/reason          termination reason (default Completed for 0, else Error;
//                                   OOMKilled conventionally with exit code 137)
//   fake.gpupool.io/waiting-reason  the pod never starts: containers wait with this reason
//                                   (ErrImagePull, ImagePullBackOff, ...), phase stays Pending
//   fake.gpupool.io/ignore-sigterm  "true": a graceful delete waits the whole grace period
// Each container's log gets a line at start and at exit (pods/log).
//
// A graceful delete of a bound pod (Terminate) stops its containers (exit code 143, phase Failed
// unless it had already ended) right away, or at the end of the grace period when the pod
// ignores SIGTERM, and then removes the object, as a kubelet confirms a deletion. With the
// simulation off, the object goes when its grace period ends.
//
// Thread contract: safe from any thread; the work runs on the io_context's threads.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kube/testing/fake_store.h"

namespace gpupool::kube::fake {

struct KubeletOptions {
  bool simulate = false;  // run bound pods
  int64_t start_ms = 0;   // bound -> Running
  int64_t run_ms = 1000;  // Running -> terminated, when the pod does not say
};

// Container logs by pod uid, with followers (pods/log?follow=true).
class PodLogs {
 public:
  void Append(const std::string& pod, const std::string& line);
  std::string Text(const std::string& pod) const;
  // The log so far, then new lines as they come; closed when the pod's containers end.
  std::shared_ptr<LineQueue> Follow(const std::string& pod, std::function<void()> wake);
  void Finish(const std::string& pod);

 private:
  struct Log {
    std::vector<std::string> lines;
    bool finished = false;
    std::vector<std::weak_ptr<LineQueue>> followers;
  };
  mutable std::mutex mu_;
  std::map<std::string, Log> logs_;
};

class Kubelet {
 public:
  Kubelet(ObjectStore& store, PodLogs& logs, boost::asio::io_context& io, KubeletOptions options,
          std::function<int64_t()> now_ms);

  // Starts watching the store for bound pods.
  void Start();
  // A graceful delete of a bound pod (see the header comment).
  void Terminate(const std::string& namespace_, const std::string& name, const std::string& uid,
                 int64_t grace_seconds);

 private:
  struct Run {
    std::shared_ptr<boost::asio::steady_timer> timer;
    bool running = false;
    bool ended = false;
  };

  void OnChange(const Change& change);
  void StartPod(const std::string& namespace_, const std::string& name, const std::string& uid);
  void EndPod(const std::string& namespace_, const std::string& name, const std::string& uid,
              int exit_code, const std::string& reason);
  void After(int64_t ms, const std::string& uid, std::function<void()> fn);

  ObjectStore& store_;
  PodLogs& logs_;
  boost::asio::io_context& io_;
  const KubeletOptions options_;
  const std::function<int64_t()> now_ms_;
  const int pods_;
  const int nodes_;

  std::mutex mu_;
  std::map<std::string, Run> runs_;  // by pod uid
};

}  // namespace gpupool::kube::fake
