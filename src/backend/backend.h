#pragma once
// Backend: one cluster that runs work. The server's scheduling loop decides where a task goes;
// the backend runs it there and reports when it ends. Implementations: sim/ (simulated nodes).
//
// Thread contract: a Backend is used by one thread at a time (the scheduling loop); ListNodes may
// be called from any thread.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
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
};

struct TaskExit {
  std::string key;
  int exit_code = 0;
  int64_t finished_ms = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "sim", later "kubernetes", "slurm".
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
};

// Opens a backend from its command-line spec: "sim:CLUSTER_FILE" (a file or a directory of
// JSON/YAML Node manifests).
Result<std::unique_ptr<Backend>> OpenBackend(std::string_view spec);

}  // namespace gpupool::backend
