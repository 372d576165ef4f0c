#pragma once
// SlurmCluster: what gpupool asks of one Slurm cluster, in the shape of an event-based backend
// (nodes in; task started/ended events out; run and stop commands idempotent by the attempt
// key). It owns no gpupool state: the server's backend adapter (backend/slurm) maps its calls
// onto whatever contract the server has.
//
//   Nodes()  the cluster's nodes as v1 Nodes (translate.h), with what jobs gpupool did not
//            submit hold already taken off their allocatable resources.
//   Run()    submits the task's batch job, unless a job named after its attempt key exists
//            (a restarted gpupool finds its jobs instead of submitting twice). When Slurm cannot
//            be reached the submission waits and Poll() retries it: only a job Slurm refuses,
//            or a task Slurm cannot run, fails Run().
//   Stop()   cancels the task's job (retried by Poll() while Slurm is unreachable).
//   Poll()   the started and ended events since the last call, each once, from an incremental
//            job listing (`update_time`: an unchanged cluster answers 304 and costs nothing).
//
// gpupool's jobs carry `comment` (SubmitOptions::comment, "gpupool" by default) and are named
// after the attempt key; jobs without the comment are someone else's. With `arrays`, RunAll
// submits a burst's tasks on one node as one job array whose comment lists the elements' keys
// ("gpupool array:KEY0 KEY1 ..."; translate.h, ArraySubmission): each element is tracked,
// adopted and cancelled ("ARRAY_INDEX") as its own task. With `gate_bursts`, a burst of several
// jobs waits behind a gate job until all of it is submitted (ClusterOptions::gate_bursts).
//
// Outages: slurmrestd takes seconds to say that slurmctld does not answer. After such an answer
// Run() does not ask again for a few seconds (the task waits for Poll() to submit it), so the
// caller's loop is not held up once per task.
//
// Thread contract: all methods are safe to call from several threads. Run, Stop and Poll share
// one mutex (HTTP requests are made under it); Nodes() lists nodes under another one, so a slow
// node listing does not hold up job submissions.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "slurm/rest_client.h"
#include "slurm/translate.h"

namespace gpupool::slurm {

struct ClusterOptions {
  NodeOptions nodes;
  SubmitOptions submit;  // comment "" becomes "gpupool"
  // Poll lists the jobs again only once `listing_pace` times as long as the last listing took
  // has passed since it (0: at every call). A full listing of a few thousand jobs costs
  // slurmrestd a tenth of a second of CPU; with 4, polling takes at most a fifth of its time
  // and slurmctld's, however many jobs there are, and an unchanged cluster (304) is still
  // asked often.
  double listing_pace = 0;
  // A burst's tasks on one node with identical requests go to Slurm as one job array
  // (GroupForArrays); false: one job per task.
  bool arrays = false;
  // A burst of several jobs is submitted behind a gate job that each depends on, then the
  // gate is cancelled (translate.h, GateSubmission): none starts before all are in, and a gang
  // (a group's tasks) whose members did not all reach Slurm is cancelled before any starts.
  bool gate_bursts = false;
  // After a burst behind a gate, Poll lists no jobs for this long. A listing taken while
  // slurmctld starts the burst is its largest (every job changed: ~1 s of slurmctld's job lock
  // for 1,600 jobs) and holds up the very scheduling pass that starts them; an exit in the pause
  // is reported at most this late.
  std::chrono::milliseconds pause_listing_after_burst{0};
  // A gate the listings show held this long was left by a gpupool that stopped between submitting
  // a burst and opening its gate: Poll cancels it, and the burst starts. A live burst holds its
  // gate for a second or two (another replica's too, which must not be opened early).
  std::chrono::milliseconds stale_gate_after{30'000};
};

struct TaskEvent {
  enum class Kind { kStarted, kEnded };
  Kind kind = Kind::kStarted;
  std::string key;
  int64_t job_id = 0;
  std::string node;     // where the job ran ("" when it never did)
  int64_t time_ms = 0;  // when it started or ended, on slurmctld's clock
  // kEnded:
  int exit_code = 0;
  std::string reason;  // "" for a job that completed
  bool lost = false;   // ended through no fault of the task (node failure, preemption, or its
                       // job vanished from Slurm)
};

class SlurmCluster {
 public:
  // `submitters`: further connections to the same slurmrestd, each used by one thread to submit
  // the jobs of a burst (RunAll) side by side; none: `client` submits them one after another.
  SlurmCluster(std::shared_ptr<RestClient> client, ClusterOptions options,
               std::vector<std::shared_ptr<RestClient>> submitters = {});

  // Checks the API version and credentials, loads nodes, partitions and jobs. Returns the Slurm
  // release.
  Result<std::string> Connect();

  Result<std::vector<nlohmann::ordered_json>> Nodes();

  // `adopt`: the task was running under an earlier gpupool process; find its job, never submit.
  // A job that cannot be found is reported by the next Poll() as ended and lost.
  Status Run(const TaskRun& run, bool adopt);
  struct RunRequest {
    TaskRun run;
    bool adopt = false;
  };
  // Run for each request, with one job listing before them all instead of one per task (a
  // burst of launches costs one GET /jobs, a full listing whenever anything changed: megabytes
  // at a few thousand jobs), then the submissions, side by side on the `submitters`
  // connections. Behind a gate (gate_bursts), before it opens, `more` is asked for launches that
  // arrived meanwhile, which join the burst (up to kMaxBurstRounds rounds). One status per
  // request, in order: `requests`, then those `more` gave.
  using MoreRuns = std::function<std::vector<RunRequest>()>;
  static constexpr size_t kMaxBurstRounds = 4;
  std::vector<Status> RunAll(const std::vector<RunRequest>& requests,
                             const MoreRuns& more = nullptr);
  // Unknown keys are ignored (the task may have ended already).
  Status Stop(const std::string& key);
  // The submission Run() would make, from the cached nodes, without asking Slurm: InvalidArgument
  // for a task Slurm cannot run; nullopt when the node is not (yet) known.
  Result<std::optional<JobSubmission>> Check(const TaskRun& run) const;
  Result<std::vector<TaskEvent>> Poll();

  // Tasks run or adopted and not yet reported ended.
  size_t Tracked() const;
  // For each key, whether its task has a job in Slurm now: submitted and acknowledged, or found
  // by its name. false for a task whose submission waits for Slurm, and for one not tracked.
  std::vector<bool> HaveJobs(const std::vector<std::string>& keys) const;

  // Where the job of attempt `key` writes its output (SubmitOptions::output_dir): a path on the
  // nodes, readable here when that directory is shared with this host.
  std::string OutputFile(const std::string& key) const;

 private:
  // The job of an attempt key in the last listing: a single job, or an element of an array (its
  // own record once started; before that, the record of the array's pending elements).
  struct JobRef {
    int64_t job_id = 0;        // the record's id in jobs_
    int64_t array_job_id = 0;  // 0: not an array element
    int64_t index = -1;
    // What DELETE /job/{id} takes to cancel this task's job alone: "123" or "100_3".
    std::string CancelId() const;
  };
  struct Task {
    TaskRun run;
    int64_t job_id = 0;  // 0: not submitted yet (Slurm was unreachable); the array's id for an
                         // array element
    int64_t array_index = -1;  // >= 0: the task is this element of array job_id
    bool started = false;
    std::string lost;  // set: report as ended and lost at the next Poll
  };

  Status RefreshJobsLocked();
  // The keys a listed job of gpupool's runs (one, or an array's), with their refs.
  std::vector<std::pair<std::string, JobRef>> KeysOfJob(const SlurmJob& job) const;
  // The task's job record in the last listing; nullptr when absent.
  const SlurmJob* JobOfLocked(const std::string& key, const Task& task) const;
  static void Follow(Task& task, const JobRef& ref);
  struct Burst;  // cluster.cc
  // Submits the `submissions` (in order), as arrays where GroupForArrays allows, behind the
  // burst's gate (opened by its first round when it has several jobs); appends to the burst one
  // key and one id or error per submission: an array element gets the array's id and its index.
  void SubmitGroupedLocked(std::vector<JobSubmission> submissions, Burst& burst);
  // Once the burst is all submitted: its partial gangs cancelled, then its gate.
  void CloseBurstLocked(Burst& burst);
  // Run's bookkeeping once the listing was refreshed (`listed`: its outcome): tracks the task,
  // adopting its job if one exists; `submit` is set when its job is to be submitted now.
  Status TrackLocked(const TaskRun& run, bool adopt, const Status& listed, bool& submit);
  Result<JobSubmission> SubmissionLocked(const std::string& key, const Task& task);
  // The new jobs' ids, in order; Unavailable for those not submitted because Slurm stopped
  // answering (it then counts as recently unreachable).
  std::vector<Result<int64_t>> SubmitAllLocked(const std::vector<JobSubmission>& submissions);
  // Submits the gate for the burst whose first job is `like`; nullopt when Slurm refused it.
  std::optional<int64_t> OpenGateLocked(const JobSubmission& like);
  // Gangs (GangOf) with a member among `keys` that was not submitted: the members submitted are
  // cancelled (or left to Poll's cancels) and every member's result becomes FailedPrecondition
  // naming the one that did not reach Slurm.
  void CancelPartialGangsLocked(const std::vector<std::string>& keys,
                                std::vector<std::pair<Result<int64_t>, int64_t>>& ids);
  // RefreshJobsLocked, unless Slurm did not answer a moment ago.
  Status ListUnlessUnreachableLocked();
  Status RefreshNodes();
  Status SubmitLocked(const std::string& key, Task& task);
  bool SlurmRecentlyUnreachable() const;

  const std::shared_ptr<RestClient> client_;
  const std::vector<std::shared_ptr<RestClient>> submitters_;
  ClusterOptions options_;

  mutable std::mutex mu_;
  std::chrono::steady_clock::time_point unreachable_until_{};
  // gpupool's jobs in slurmctld's last listing, by id, and the newest id per attempt key.
  std::map<int64_t, SlurmJob> jobs_;
  std::map<std::string, JobRef> job_by_key_;
  std::chrono::steady_clock::time_point listed_at_{};  // when the last listing ended
  std::chrono::steady_clock::duration listing_took_{};
  std::chrono::steady_clock::time_point listing_paused_until_{};  // pause_listing_after_burst
  int64_t jobs_since_ = 0;             // for update_time: the newest past time the listing showed
  int64_t max_job_id_ = 0;             // the largest id in the last listing (of any user)
  std::map<std::string, Task> tasks_;  // by attempt key
  // Gates to open, by id, with when a listing first showed them held outside this process's
  // RunAll; this process's own gates whose cancel failed are entered as held since ever.
  std::map<int64_t, std::chrono::steady_clock::time_point> held_gates_;
  std::set<std::string> to_cancel_;  // keys whose jobs are cancelled once Slurm answers

  // Taken after mu_ when both are needed, never before.
  mutable std::mutex nodes_mu_;
  std::vector<SlurmNode> nodes_;
  std::vector<SlurmPartition> partitions_;
  NodeOptions node_options_;
};

}  // namespace gpupool::slurm
