#pragma once
// SlurmBackend: the server's Backend over a Slurm cluster, a thin adapter onto
// slurm::SlurmCluster (src/slurm/), which holds everything Slurm-specific.
//
//   gpupool serve --backend slurm:http://HOST:PORT   (slurmrestd with rest_auth/jwt; the token
//                                                     from $SLURM_JWT or --slurm-jwt-file)
//   gpupool serve --backend slurm:unix:PATH          (slurmrestd with rest_auth/local)
//
// Mapping of today's Backend calls:
//   ListNodes  -> SlurmCluster::Nodes (Slurm's nodes as v1 Nodes);
//   Launch     -> SlurmCluster::Run (a batch job named after the attempt key on the chosen node;
//                 an existing job of that name is adopted, never submitted twice);
//   Kill       -> SlurmCluster::Stop (the job is cancelled);
//   Poll       -> the ended events of SlurmCluster::Poll as exits, with Slurm's reason. Started
//                 events have no place in this contract yet (the loop marks a task RUNNING when
//                 it launches it), and a Poll that cannot reach Slurm reports nothing and tries
//                 again next time.
//
// Thread contract: as Backend; ListNodes may be called from any thread.

#include <memory>
#include <string>

#include "backend/backend.h"
#include "slurm/cluster.h"

namespace gpupool::backend {

class SlurmBackend final : public Backend {
 public:
  // `url`: "http://HOST:PORT" or "unix:PATH". Connects: checks the API version and the
  // credentials and lists the cluster, so a wrong URL or token fails here, at start-up.
  static Result<std::unique_ptr<SlurmBackend>> Open(std::string_view url,
                                                    const BackendOptions& options);

  explicit SlurmBackend(std::unique_ptr<slurm::SlurmCluster> cluster);

  std::string_view Kind() const override { return "slurm"; }
  Result<std::vector<nlohmann::ordered_json>> ListNodes() const override;
  Status Launch(const TaskLaunch& launch) override;
  Status Kill(std::string_view key) override;
  std::vector<TaskExit> Poll(int64_t now_ms) override;
  size_t RunningCount() const override;

  const std::string& release() const { return release_; }

 private:
  std::unique_ptr<slurm::SlurmCluster> cluster_;
  std::string release_;
  std::string last_poll_error_;  // printed once, not every step
};

}  // namespace gpupool::backend
