#pragma once
// SimBackend: a simulated cluster. Each task "runs" from its start time for its duration and then
// ends with its exit code; nothing executes. Deterministic: the end of a task depends only on the
// launch record, so a restarted server re-adopts running tasks by launching them again.
//
// Thread contract: all methods are safe to call from several threads (one mutex).

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace gpupool::backend {

class SimBackend final : public Backend {
 public:
  explicit SimBackend(std::vector<nlohmann::ordered_json> nodes);

  std::string_view Kind() const override { return "sim"; }
  Result<std::vector<nlohmann::ordered_json>> ListNodes() const override;
  Status Launch(const TaskLaunch& launch) override;
  Status Kill(std::string_view key) override;
  std::vector<TaskExit> Poll(int64_t now_ms) override;
  size_t RunningCount() const override;
  void SetKnownNodes(const std::vector<std::string>& names) override;

 private:
  const std::vector<nlohmann::ordered_json> nodes_;
  std::set<std::string, std::less<>> node_names_;   // the cluster file's
  std::set<std::string, std::less<>> known_nodes_;  // the control plane's (SetKnownNodes)

  mutable std::mutex mu_;
  std::map<std::string, TaskLaunch, std::less<>> running_;  // by key
};

// Reads Kubernetes Node objects from a JSON or (multi-document) YAML file, or from every
// .json/.yaml/.yml file of a directory (sorted by name). `kind: List` and `NodeList` are unpacked;
// documents of other kinds are skipped. Errors name the file.
Result<std::vector<nlohmann::ordered_json>> LoadClusterNodes(const std::string& path);

}  // namespace gpupool::backend
