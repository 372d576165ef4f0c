#pragma once
// SlurmBackend: the server's Backend over a Slurm cluster, a thin adapter onto
// slurm::SlurmCluster (src/slurm/), which holds everything Slurm-specific.
//
//   gpupool serve --backend slurm:http://HOST:PORT   (slurmrestd with rest_auth/jwt; the token
//                                                     from $SLURM_JWT or --slurm-jwt-file)
//   gpupool serve --backend slurm:unix:PATH          (slurmrestd with rest_auth/local)
//
// The scheduling loop must never wait on Slurm (slurmrestd takes seconds to say that slurmctld
// is down, and a step longer than the leader lease loses it), so Launch, Kill and Poll only queue
// and collect: a worker thread talks to Slurm.
//   ListNodes  -> SlurmCluster::Nodes (Slurm's nodes as v1 Nodes; called by the node sync);
//   Launch     -> checked at once against the cached nodes (a task Slurm cannot run fails
//                 here), then SlurmCluster::Run on the worker (a batch job named after the
//                 attempt key on the chosen node; an existing job of that name is adopted, never
//                 submitted twice);
//   Kill       -> SlurmCluster::Stop on the worker (the job is cancelled);
//   ReadLog    -> the job's output file, read directly (slurmrestd has no way to read it);
//   Started    -> the launches whose job Slurm acknowledged (or that were found by name), once
//                 the worker submitted them: the loop keeps a task SCHEDULED until then, so a
//                 gpupool killed between a launch and its submission launches the task again
//                 on restart instead of finding no job to adopt;
//   Poll       -> the exits the worker collected from SlurmCluster::Poll, with Slurm's reason.
//                 A job Slurm refuses ends its task with exit code 1 and the refusal as the
//                 reason.
//
// Thread contract: as Backend; ListNodes may be called from any thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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
  ~SlurmBackend() override;

  std::string_view Kind() const override { return "slurm"; }
  Result<std::vector<nlohmann::ordered_json>> ListNodes() const override;
  Status Launch(const TaskLaunch& launch) override;
  void LaunchesDone() override;
  // A burst being submitted waits (up to kMoreLaunchesWait) for the next step's launches before
  // its gate opens, while the loop says more may follow.
  void MoreLaunchesMayFollow(bool may) override;
  // A launch is on the cluster once its job is submitted (or found), which the worker does.
  bool ReportsStarts() const override { return true; }
  std::vector<std::string> Started() override;
  Status Kill(std::string_view key) override;
  std::vector<TaskExit> Poll(int64_t now_ms) override;
  size_t RunningCount() const override;
  // The job's output file (slurm::SlurmCluster::OutputFile), read from this host's file system:
  // --slurm-output-dir must be a directory the nodes and the gpupool servers share (as a home
  // or scratch file system usually is) for logs to be seen.
  Result<LogChunk> ReadLog(std::string_view key, int64_t offset, int64_t max_bytes) const override;

  const std::string& release() const { return release_; }

 private:
  struct Command {
    bool stop = false;  // Stop(key), else Run(run, adopt)
    slurm::TaskRun run;
    bool adopt = false;
  };
  void Work();
  void ReleaseStepLaunches();
  // Moves the launches whose job now exists from awaiting_start_ to started_ (worker thread).
  void CollectStarts(const std::vector<std::pair<std::string, uint64_t>>& awaiting);
  // Runs the commands in order, consecutive runs together; returns the runs Slurm refused.
  std::vector<TaskExit> Execute(const std::deque<Command>& commands);
  std::vector<slurm::SlurmCluster::RunRequest> TakeQueuedRuns();
  void Report(const Status& status);

  std::unique_ptr<slurm::SlurmCluster> cluster_;
  std::map<std::string, std::string> node_labels_;  // BackendOptions::node_labels
  std::string release_;
  std::string last_error_;  // printed once per distinct failure (worker thread only)

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Command> commands_;
  // Launches of the step under way, for the worker once the loop says the step's are all there
  // (LaunchesDone) or, for a caller that never says so, after kReleaseAfter: the worker woken by
  // the first launch of a step took only those queued by then, and split a node's tasks between
  // a job and an array.
  std::deque<Command> step_launches_;
  std::chrono::steady_clock::time_point first_step_launch_{};
  // MoreLaunchesMayFollow: while true and before more_until_, the burst under way waits for
  // the loop's next launches (TakeQueuedRuns).
  bool more_may_follow_ = false;
  std::chrono::steady_clock::time_point more_until_{};
  std::vector<TaskExit> exits_;
  std::set<std::string, std::less<>> running_;  // launched, not yet reported or killed
  // Launches (not adoptions) whose job is not known to exist yet, each with the sequence number
  // of its launch: a key killed and launched again while the worker looked is not taken for
  // started by its earlier job.
  std::map<std::string, uint64_t, std::less<>> awaiting_start_;
  uint64_t launches_ = 0;
  std::vector<std::string> started_;  // for Started
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace gpupool::backend
