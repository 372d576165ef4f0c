#pragma once
// The workflow spec users submit, in OSMO's YAML shape (research/osmo.md §5):
//
//   workflow:
//     name: sim-{{run}}
//     timeout: {exec_timeout: 8h, queue_timeout: 2h}
//     priority: NORMAL                       # HIGH | NORMAL | LOW
//     node_pools: [a100-80, default]         # optional; preference order (or "a100-80,default")
//     queue: rnd-training                    # optional; a project (QUEUE config) the roles allow
//     parallelism: 4                         # optional; at most 4 tasks pending or running at once
//     backoff_limit: 6                       # optional; failed attempts retried, up to 6 in all
//     resources:
//       default: {cpu: 4, memory: 32Gi, storage: 50Gi, platform: l40s_platform}
//     tasks:                                 # or groups: [{name, tasks: [...]}]
//     - {name: prep, image: ubuntu:24.04, command: [bash, -c, "echo hi"]}
//   default-values: {run: 1}
//
// `{{k}}` in the text is replaced by `--set k=v` or `default-values` before the YAML is read;
// errors still point at the line and column of the file as written. Unknown fields are refused with
// a did-you-mean. Top-level `tasks` become one group each, named "<task>-group" (as OSMO does).

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpupool::submit {

enum class Priority { kHigh, kNormal, kLow };
std::string_view PriorityName(Priority priority);       // "HIGH", "NORMAL", "LOW"
std::string_view PriorityClassName(Priority priority);  // "high", "normal", "low"

struct ResourceSpec {
  std::string name;
  // As written (number or string; null when absent). Quantities are checked when parsed.
  nlohmann::ordered_json cpu;
  nlohmann::ordered_json gpu;
  nlohmann::ordered_json memory;
  nlohmann::ordered_json storage;
  std::string platform;  // "" = the pool's default_platform
  std::vector<std::string> nodes_excluded;
};

struct TaskSpec {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  // [{name, value}] as Kubernetes writes it; a map {K: V} in the spec is converted to this.
  nlohmann::ordered_json env = nlohmann::ordered_json::array();
  std::string resource = "default";
  bool privileged = false;
  bool host_network = false;
  // Kubernetes volumeMounts ([{name, mountPath, ...}]); "host:container" strings are converted to
  // {name, mountPath: container, hostPath: host}.
  nlohmann::ordered_json volume_mounts = nlohmann::ordered_json::array();
  nlohmann::ordered_json exit_actions;  // {COMPLETE|FAIL|RESCHEDULE: "1,3-5"}; null when absent
  std::optional<int64_t> sim_duration_seconds;
  int sim_exit_code = 0;
  bool lead = false;
  // Pod fields of a batch/v1 Job's template (submit/job_workflow.h) that the workflow YAML has no
  // spelling for: {spec: {nodeSelector, tolerations, affinity, terminationGracePeriodSeconds},
  // container: {lifecycle}}. They are part of the base pod, so the pool's templates merge over
  // them as over the task's other fields. Null for tasks of a workflow file.
  nlohmann::ordered_json pod_fields;
};

struct GroupSpec {
  std::string name;
  std::vector<TaskSpec> tasks;
};

struct WorkflowSpec {
  std::string name;
  std::vector<ResourceSpec> resources;  // in file order
  std::vector<GroupSpec> groups;
  std::optional<int64_t> exec_timeout_seconds;
  std::optional<int64_t> queue_timeout_seconds;
  Priority priority = Priority::kNormal;
  // Node pools in preference order (Run:ai's researcher's choice); empty: every node pool the
  // task's platform's nodes are in. Names are checked against the NODE_POOL configs by Submit.
  std::vector<std::string> node_pools;
  // The queue (a Run:ai project) the tasks' quota is counted in; empty: the pool's implicit
  // queue. Checked against the QUEUE configs and the caller's roles by Submit.
  std::string queue;
  // Where `queue` came from, as its errors start: "wf.yaml:4:10: workflow.queue" (the file's
  // field) or "--queue" (the command line, which wins over the file).
  std::string queue_origin = "workflow.queue";
  // At most this many of the workflow's tasks are PENDING, SCHEDULED or RUNNING at once; the
  // others wait (WAITING) and join in workflow order as tasks end (a Job's parallelism, Argo's
  // spec.parallelism). nullopt: all at once.
  std::optional<int64_t> parallelism;
  // Failed attempts (exit action FAIL) are retried as new attempts until more than this many
  // attempts of the workflow have failed; then the workflow fails (a Job's backoffLimit).
  // nullopt: a failed task fails the workflow (OSMO).
  std::optional<int64_t> backoff_limit;
  nlohmann::ordered_json labels = nlohmann::ordered_json::object();
  // The `workflow:` object after substitution, as parsed (kept for storage and display).
  nlohmann::ordered_json document;

  const ResourceSpec* FindResource(std::string_view name) const;
  size_t TaskCount() const;
};

// Parses a workflow file. `set_values` (from --set k=v) win over the file's `default-values`.
// Errors are InvalidArgument and name the file, the line and column of the field in the file as
// written (before substitution) and the field path, e.g. `train.yaml:14:7:
// workflow.tasks[1].resurce: unknown field (did you mean "resource"?)`. A text that is not YAML
// text at all (invalid UTF-8, control characters) is refused before substitution.
Result<WorkflowSpec> ParseWorkflow(std::string_view text, std::string_view file_name,
                                   const std::map<std::string, std::string>& set_values = {});

// Parses "a100-80, default" (for --node-pools and a `node_pools` string): names in order;
// InvalidArgument for an empty or repeated name.
Result<std::vector<std::string>> ParseNodePoolList(std::string_view text);

// Parses "k=v" (for --set); InvalidArgument when there is no '=' or the key is empty.
Result<std::pair<std::string, std::string>> ParseSetValue(std::string_view text);

}  // namespace gpupool::submit
