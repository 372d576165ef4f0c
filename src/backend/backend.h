#pragma once
// Backend: one cluster that runs work. The server's scheduling loop decides where a task goes;
// the backend runs it there and reports when it ends. Implementations: sim/ (simulated nodes),
// slurm/ (a Slurm cluster through slurmrestd), kubernetes/ (a cluster's API server).
//
// Thread contract: a Backend is used by one thread at a time (the scheduling loop); ListNodes and
// ReadLog may be called from any thread.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpupool::backend {

// One task to start on a node. `key` identifies the attempt ("<workflow>/<group>/<task>/<retry>")
// and makes Launch idempotent, so a restarted leader can re-adopt tasks that were running.
struct TaskLaunch {
  std::string key;
  std::string node;
  int64_t start_ms = 0;     // when the task started (the store's record, not "now")
  int64_t duration_ms = 0;  // simulated run time (workflow field `sim_duration`)
  int exit_code = 0;        // simulated exit code (workflow field `sim_exit_code`)
  // For backends that run tasks for real: the task's rendered Pod, its exec timeout, and whether
  // the task was already running under an earlier leader (find it; never start it again).
  nlohmann::ordered_json pod;
  std::optional<int64_t> exec_timeout_ms;
  bool adopt = false;
  // Kubernetes: the namespace of the pool's pods, from its BACKEND config's k8s_namespace ("" =
  // the backend's default).
  std::string namespace_;
};

struct TaskExit {
  std::string key;
  int exit_code = 0;
  int64_t finished_ms = 0;
  std::string reason;  // why it ended, when the backend knows more than the exit code ("" = none)
};

// A piece of one task attempt's output (Backend::ReadLog): `data` is bytes [offset, offset +
// data.size()) of the output as written so far, which is `size` bytes long.
struct LogChunk {
  int64_t offset = 0;
  int64_t size = 0;
  std::string data;
};

// How to reach a Kubernetes API server (`gpupool serve --kubeconfig --context --kube-qps
// --kube-burst --kube-namespace`).
struct KubernetesFlags {
  std::string kubeconfig;  // "" = in-cluster, else $KUBECONFIG, else ~/.kube/config
  std::string context;
  double qps = 5;  // client-go's defaults
  int burst = 10;
  std::string namespace_ = "gpupool";  // for pools whose BACKEND config names none
};

// Options of backends that talk to a real cluster (`gpupool serve --slurm-*`, `--kube*`).
struct BackendOptions {
  std::string slurm_jwt_file;    // token when $SLURM_JWT is unset
  std::string slurm_user;        // "" = the OS user
  std::string slurm_output_dir;  // where each task's job writes its output ("" = /tmp)
  std::string slurm_partition;   // "" = each node's default
  KubernetesFlags kubernetes;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "sim", "slurm", "kubernetes".
  virtual std::string_view Kind() const = 0;

  // The cluster's nodes as Kubernetes v1 Node objects.
  virtual Result<std::vector<nlohmann::ordered_json>> ListNodes() const = 0;

  // Starts (or re-adopts, when the key is already running) a task. kInvalidArgument for an unknown
  // node.
  virtual Status Launch(const TaskLaunch& launch) = 0;

  // Stops a running task; unknown keys are ignored (it may have ended already).
  virtual Status Kill(std::string_view key) = 0;

  // Tasks that ended at or before now_ms, each reported exactly once, ordered by end time.
  virtual std::vector<TaskExit> Poll(int64_t now_ms) = 0;

  // Tasks started and not yet reported by Poll.
  virtual size_t RunningCount() const = 0;

  // The nodes the control plane knows now (the store's: imported over the API, or launched by a
  // machine pool), given by the scheduling loop every step. A real cluster reports its own nodes
  // and ignores this; the simulated cluster runs tasks on its file's nodes and these.
  virtual void SetKnownNodes(const std::vector<std::string>& names) { (void)names; }

  // Up to `max_bytes` of the output of attempt `key` (stdout and stderr as the task wrote them)
  // from byte `offset`. kNotFound when the attempt has written nothing (yet); an offset past the
  // end gives an empty chunk. A backend that keeps no output (the simulated cluster runs no
  // processes) answers kFailedPrecondition saying so. May be called from any thread.
  virtual Result<LogChunk> ReadLog(std::string_view key, int64_t offset, int64_t max_bytes) const;
};

// Opens a backend from its command-line spec: "sim:CLUSTER_FILE" (a file or a directory of
// JSON/YAML Node manifests), "slurm:http://HOST:PORT" / "slurm:unix:PATH" (slurmrestd; see
// backend/slurm/slurm_backend.h), or "kubernetes" (backend/kubernetes/kube_backend.h).
Result<std::unique_ptr<Backend>> OpenBackend(std::string_view spec,
                                             const BackendOptions& options = {});

}  // namespace gpupool::backend
