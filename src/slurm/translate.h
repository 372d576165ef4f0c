#pragma once
// Pure translations between Slurm's objects and gpupool's: a Slurm node as a Kubernetes v1 Node,
// a gpupool task (its rendered pod) as a batch job submission, a job's state as a task outcome.
// No I/O; table-tested against responses captured from slurmrestd (testdata/).

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "slurm/objects.h"

namespace gpupool::slurm {

// Label keys gpupool puts on nodes imported from Slurm (besides kubernetes.io/hostname and
// NVIDIA's nvidia.com/gpu.product and nvidia.com/gpu.count).
inline constexpr char kFeatureLabelPrefix[] = "feature.slurm.gpupool.io/";      // + feature
inline constexpr char kPartitionLabelPrefix[] = "partition.slurm.gpupool.io/";  // + partition
inline constexpr char kSourceLabel[] = "gpupool.io/source";                     // = "slurm"
// The taint on a node Slurm does not offer for new jobs; its value is the state
// (down, drain, maint, ...) and spec.unschedulable is set too.
inline constexpr char kUnavailableTaint[] = "slurm.gpupool.io/unavailable";
// Resources that jobs gpupool did not submit hold on the node ("cpu=4,memory=8000Mi,gpu=3").
inline constexpr char kForeignUsageAnnotation[] = "slurm.gpupool.io/foreign-usage";
inline constexpr char kReasonAnnotation[] = "slurm.gpupool.io/reason";

// The GPUs of a GRES string: "gpu:a100:8(S:0-1)" -> 8 of type a100; "gpu:4" -> 4 untyped;
// "gpu:a100:4,gpu:v100:4" -> 8, types {a100, v100}; "gpu:a100:3(IDX:0-2)" (gres_used) -> 3;
// other GRES (mps, shard, ...) are not GPUs. "", "(null)" -> 0.
struct GpuGres {
  int64_t count = 0;
  std::set<std::string> types;  // empty for untyped GPUs
  // The one type, or "" when untyped or mixed.
  std::string SingleType() const { return types.size() == 1 ? *types.begin() : ""; }
};
Result<GpuGres> ParseGpuGres(std::string_view gres);

// What gpupool's own running jobs hold on one node (so the rest is someone else's).
struct NodeUsage {
  int64_t cpus = 0;
  int64_t memory_mb = 0;
  int64_t gpus = 0;
  void Add(const NodeUsage& other);
};

struct NodeOptions {
  // Slurm GPU type -> nvidia.com/gpu.product value (e.g. a100 -> NVIDIA-A100-SXM4-80GB); a type
  // not in the map is used as it is.
  std::map<std::string, std::string> gpu_products;
  // Partitions that accept no jobs (state other than UP); a node only in such partitions is
  // unschedulable.
  std::set<std::string> closed_partitions;
};

// Why Slurm offers a node for no new jobs ("" when it does): the base state down, future,
// unknown or error, or a flag DRAIN, FAIL, MAINTENANCE, NOT_RESPONDING, RESERVED, POWERED_DOWN,
// POWERING_DOWN, POWERING_UP, REBOOT_REQUESTED, REBOOT_ISSUED, INVALID_REG. The word is the
// taint's value: "down", "drain", "maint", ...
std::string UnavailableState(const SlurmNode& node, const NodeOptions& options);

// A Slurm node as a v1 Node:
//   metadata.labels: kubernetes.io/hostname, gpupool.io/source=slurm, nvidia.com/gpu.product
//     (one GPU type) and nvidia.com/gpu.count, feature.slurm.gpupool.io/<f>=true per feature,
//     partition.slurm.gpupool.io/<p>=true per partition;
//   status.capacity: cpu, memory (Mi), nvidia.com/gpu, ephemeral-storage (TmpDisk, when set),
//     pods (= CPUs: every job takes at least one);
//   status.allocatable: capacity less what jobs gpupool did not submit hold (node usage less
//     `own`), recorded in the foreign-usage annotation;
//   unavailable (UnavailableState): spec.unschedulable, a NoSchedule taint
//     slurm.gpupool.io/unavailable=<state>, a Ready=False condition with Slurm's reason.
Result<nlohmann::ordered_json> NodeFromSlurm(const SlurmNode& slurm, const NodeUsage& own,
                                             const NodeOptions& options);

// One task to run as a batch job.
struct TaskRun {
  std::string key;  // the attempt key "<workflow>/<group>/<task>/<retry>": the job's name
  std::string node;
  nlohmann::ordered_json pod;  // the task's rendered Pod
  std::optional<int64_t> exec_timeout_seconds;
};

struct SubmitOptions {
  std::string partition;   // "" = the node's: the default partition when the node is in it,
                           // else its first
  std::string output_dir;  // each task writes <dir>/<key with '/' as '.'>.out; must exist on
                           // the nodes and be writable by the jobs' user
  std::string comment;     // marks gpupool's jobs
};

// The submission for a task on `node`:
//   name = key, comment, nodelist = the node, partition;
//   cpus_per_task = the pod's cpu request rounded up (at least 1), memory_per_node = its memory
//     in MiB rounded up, temporary_disk_per_node = its ephemeral-storage, gpus_per_node =
//     "<type>:<n>" with the node's GPU type (just "<n>" when untyped or mixed);
//   time_limit = the exec timeout in minutes, rounded up, plus one: gpupool ends the task at its
//     timeout and Slurm's limit only backs that up;
//   environment = the first container's env (plain values; valueFrom is refused) over a default
//     PATH, plus GPUPOOL_TASK_KEY; script = its command and args, shell-quoted, exec'd by
//     /bin/sh; output to the per-task file.
// InvalidArgument (naming the field) for what Slurm cannot run: no command, env from valueFrom.
Result<JobSubmission> SubmissionForTask(const TaskRun& task, const SlurmNode& node,
                                        const std::vector<SlurmPartition>& partitions,
                                        const SubmitOptions& options);

// Job arrays: a scheduling step's tasks on one node go to Slurm as one array job (one submission
// instead of one per task: slurmctld takes submissions one at a time under its job lock).
//
// Which submissions (SubmissionForTask's, in order) can share an array: the same node,
// partition, working directory, comment and resource requests (cpus, memory, tmp disk, GPUs,
// time limit), environment names that are shell identifiers (an element exports its own
// environment) and keys without spaces (the comment lists them), at most as many as fit
// Slurm's 1,024-character comment. Groups of indexes in order of their first member; a group of
// one stays a single job.
std::vector<std::vector<size_t>> GroupForArrays(const std::vector<JobSubmission>& submissions);

// The array job whose element i runs elements[i] (at least two, grouped by GroupForArrays):
//   array = "0-(k-1)", name = the first key + " +<k-1>", comment = "<comment> array:" + the keys
//   in element order, separated by spaces (what a restarted gpupool maps elements back by);
//   script = a dispatcher that selects by $SLURM_ARRAY_TASK_ID: the element sends its output to
//   its task's own file (OutputPath, so logs are read as for a single job), exports its
//   environment and execs its command; Slurm's own output (slurmstepd's notices) goes to
//   <dir>/gpupool-array.<array id>_<index>.out.
JobSubmission ArraySubmission(const std::vector<const JobSubmission*>& elements);

// The attempt keys of an array job's elements, in element order, from its comment; nullopt when
// the comment is not that of an array job submitted with `comment`.
std::optional<std::vector<std::string>> ArrayKeys(std::string_view job_comment,
                                                  std::string_view comment);

// Gates: a burst of several jobs is submitted behind one job (the gate) that each of them depends
// on (`afterany`), and the gate is then cancelled, which frees them all at once. Slurm starts
// none of them while the burst is being submitted, so its scheduling cycles and job launches do
// not slow the submissions (slurmctld takes them one at a time under its job lock), and a gang's
// members either all reach Slurm before any can start or are cancelled unstarted.
//
// The gate runs: slurmctld starts a free job at its submission when it can, and the end of a
// running job (its epilog's completion) brings slurmctld's next scheduling pass forward at once,
// where the cancel of a pending job only asks for one at its background loop's next tick (every
// second, so 0.5 s on average). Where it cannot start (a full partition), it waits as a pending
// job and opens the burst the slower way.
//
// The gate of a burst like `like` (its partition and working directory) of jobs marked with
// `comment`: one CPU, 64 MB, `sleep` under a one-minute time limit; comment "<comment> gate".
JobSubmission GateSubmission(const JobSubmission& like, std::string_view comment);
// Whether a job's comment is that of a gate submitted with `comment`.
bool IsGateComment(std::string_view job_comment, std::string_view comment);
// The gang of an attempt key "<workflow>/<group>/<task>/<retry>": "<workflow>/<group>" (a
// group's tasks are scheduled together); the key itself when it has fewer parts.
std::string_view GangOf(std::string_view key);

// The indexes in an array task string: "0-3,7" -> 0 1 2 3 7 (a "%N" throttle is ignored).
Result<std::vector<int64_t>> ParseArrayIndexes(std::string_view text);

// The output file of a task's job.
std::string OutputPath(const std::string& output_dir, const std::string& key);

// What a job's state means for its task.
enum class JobPhase { kPending, kRunning, kEnded };

struct JobOutcome {
  JobPhase phase = JobPhase::kPending;
  int exit_code = 0;   // kEnded: the script's exit code, 128 + N when signal N ended it
  std::string reason;  // kEnded and not COMPLETED: "TIMEOUT: ...", "NODE_FAIL: ...", ...
  bool lost = false;   // kEnded through no fault of the task: node failure, boot failure,
                       // preemption, revocation
};

// COMPLETED -> exit 0; FAILED -> the exit code; TIMEOUT, CANCELLED, DEADLINE, PREEMPTED,
// OUT_OF_MEMORY, NODE_FAIL, BOOT_FAIL, REVOKED, SPECIAL_EXIT -> the decoded exit code, or the
// state's conventional one when the job never ran (143 = SIGTERM, 137 = SIGKILL/OOM, 1);
// PENDING, CONFIGURING, REQUEUED, ... -> kPending; RUNNING, COMPLETING, SUSPENDED, ... ->
// kRunning. An unknown state is kPending with the state in the reason.
JobOutcome OutcomeOf(const SlurmJob& job);

// The exit code in a wait status: status >> 8 when it exited, 128 + signal when killed.
int DecodeWaitStatus(int64_t status);

// gpupool's share of a running job on its node (single-node jobs): CPUs, memory, GPUs.
NodeUsage JobUsage(const SlurmJob& job);

}  // namespace gpupool::slurm
