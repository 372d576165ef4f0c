#pragma once
// Slurm's objects as gpupool reads them from slurmrestd's OpenAPI v0.0.38 (Slurm 22.05), and the
// job submission it writes. Only the fields gpupool uses; the field names are those of
// src/plugins/openapi/v0.0.38/{nodes,partitions,jobs}.c in Slurm 22.05 (the published spec lacks
// some, e.g. the submission's `nodelist`).
//
// Parsing is strict about types (a string where a number belongs is an error naming the field
// path, e.g. `nodes[2].cpus: expected an integer, got "64"`) and lenient about absence and null,
// which slurmrestd writes for unset values.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace gpupool::slurm {

// The OpenAPI version gpupool speaks, and the Slurm release that serves it.
inline constexpr char kApiVersion[] = "v0.0.38";
inline constexpr char kApiPrefix[] = "/slurm/v0.0.38";

struct SlurmNode {
  std::string name;
  std::string state;               // base state, lower case: idle, mixed, allocated, down, ...
  std::vector<std::string> flags;  // DRAIN, MAINTENANCE, NOT_RESPONDING, RESERVED, ...
  std::string reason;              // why an admin or Slurm made it unavailable ("" = none)
  int64_t reason_changed_at = 0;   // Unix seconds
  int64_t cpus = 0;
  int64_t real_memory_mb = 0;     // MiB, as Slurm counts them
  int64_t temporary_disk_mb = 0;  // TmpDisk, MiB
  std::string gres;               // "gpu:a100:8(S:0-1)", "gpu:4,mps:400", "" = none
  std::string gres_used;          // "gpu:a100:3(IDX:0-2)"
  int64_t alloc_cpus = 0;
  int64_t alloc_memory_mb = 0;
  std::vector<std::string> features;  // active features, else configured ones
  std::vector<std::string> partitions;
};

struct SlurmPartition {
  std::string name;
  std::string state;  // UP, DOWN, DRAIN, INACTIVE
  std::string nodes;  // host list expression, "gpu[0001-0004]"
  bool is_default = false;
};

struct SlurmJob {
  int64_t job_id = 0;
  std::string name;
  std::string comment;
  std::string state;         // PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, NODE_FAIL, ...
  std::string state_reason;  // "None", "Resources", "NonZeroExitCode", "TimeLimit", ...
  std::string state_description;
  int64_t exit_code = 0;  // the batch script's wait status: exit << 8, or the killing signal
  std::string nodes;      // allocated nodes (host list), "" while pending
  std::string partition;
  int64_t submit_time = 0;  // Unix seconds
  int64_t start_time = 0;   // expected start while pending
  int64_t end_time = 0;     // expected end while running
  int64_t cpus = 0;
  int64_t memory_per_node_mb = 0;  // 0 when the job asked per CPU
  int64_t memory_per_cpu_mb = 0;
  std::vector<std::string> gres_detail;  // per allocated node, "gpu:a100:1(IDX:3)"
  std::string standard_output;
  // Job arrays: every element's record carries the array's id (the id the submission returned;
  // 0 when not an array) and its index. Elements not started yet share one record whose
  // array_task_id is absent and whose array_task_string lists their indexes ("2-5,7").
  int64_t array_job_id = 0;
  std::optional<int64_t> array_task_id;
  std::string array_task_string;
};

// A batch job for POST /job/submit. Field names and meanings as sbatch's options.
struct JobSubmission {
  std::string name;     // --job-name: the task's attempt key
  std::string comment;  // --comment: marks gpupool's jobs
  std::string partition;
  std::string nodelist;  // --nodelist: the node gpupool chose
  int64_t cpus_per_task = 1;
  int64_t memory_per_node_mb = 0;             // --mem (0 = the partition's default)
  int64_t temporary_disk_per_node_mb = 0;     // --tmp
  std::string gpus_per_node;                  // --gpus-per-node: "a100:2" or "2"; "" = none
  std::optional<int64_t> time_limit_minutes;  // --time; nullopt = the partition's limit
  std::string working_directory;
  std::string standard_output;  // --output
  std::map<std::string, std::string> environment;
  std::string script;      // "#!/bin/sh\n..."
  std::string array;       // --array: "0-7"; "" = a single job
  bool hold = false;       // --hold: submitted with priority 0, never started until released
  std::string dependency;  // --dependency: "afterany:123"; "" = none
};

// Parsers of whole responses: {"nodes": [...]}, {"partitions": [...]}, {"jobs": [...]}.
Result<std::vector<SlurmNode>> ParseNodes(const nlohmann::ordered_json& response);
Result<std::vector<SlurmPartition>> ParsePartitions(const nlohmann::ordered_json& response);
Result<std::vector<SlurmJob>> ParseJobs(const nlohmann::ordered_json& response);

// {"script": ..., "job": {...}} with only the fields that are set (no_requeue always: gpupool,
// not Slurm, decides whether a task runs again).
nlohmann::ordered_json SubmissionToJson(const JobSubmission& submission);

// slurmrestd's `errors` array as one line ("Unknown key \"x\" (hsearch_r); Failure during
// parsing"), "" when there is none.
std::string ResponseErrors(const nlohmann::ordered_json& response);

// The `meta.Slurm.release` of a response ("22.05.8"), "" when absent.
std::string SlurmRelease(const nlohmann::ordered_json& response);

}  // namespace gpupool::slurm
