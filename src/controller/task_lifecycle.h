#pragma once
// A task's life in the scheduling loop (controller/scheduling_loop.h): its status changes (the
// statuses and their transitions are model/task_state.h's), the run policy of its workflow
// (timeouts and exit actions), the launch the backend gets for it, and the workflow's status
// derived from its tasks.
//
// Thread contract: pure functions (SetStatus counts into a thread-safe Counter).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "config/config_set.h"
#include "metrics/metrics.h"
#include "model/task_state.h"
#include "store/store.h"

namespace gpupool::controller {

using model::TaskStatus;

// The task's entry in the stored spec (the `workflow:` document, or an object holding it).
const nlohmann::ordered_json* FindTaskSpec(const nlohmann::ordered_json& spec,
                                           const std::string& group, const std::string& task);

// What the loop needs to know about one workflow, from its spec and its pool.
struct RunPolicy {
  std::optional<int64_t> queue_timeout_ms;
  std::optional<int64_t> exec_timeout_ms;
  std::vector<config::ExitAction> pool_exit_actions;
};
RunPolicy PolicyFor(const store::WorkflowRecord& workflow, const config::ConfigSet& configs);

// COMPLETE | FAIL | RESCHEDULE for an exit code: the task's exitActions, else the pool's
// default_exit_actions, else 0 = COMPLETE and anything else = FAIL.
std::string ExitActionFor(const nlohmann::ordered_json* task_spec, const RunPolicy& policy,
                          int exit_code);

// Sets the status and its change time, counting the transition.
void SetStatus(store::TaskRecord& task, TaskStatus status, int64_t now_ms,
               metrics::Counter* counter);

// A workflow's status from its tasks' latest attempts: the first failure, else COMPLETED (or
// CANCELED when one was) once all ended, else RUNNING, SCHEDULED or PENDING.
model::WorkflowStatus DeriveWorkflowStatus(const std::vector<store::TaskRecord>& tasks);

// The namespace of a pool's pods on a Kubernetes backend: its BACKEND config's k8s_namespace
// ("" = the backend's default).
std::string PodNamespace(const config::ConfigSet& configs, const std::string& pool_name);

// The backend's launch of a task (see the definition for the simulated run's sources).
backend::TaskLaunch LaunchFor(std::string key, const store::TaskRecord& task,
                              const nlohmann::ordered_json* spec, int64_t start_ms,
                              int64_t default_duration_ms, const RunPolicy& policy, bool adopt,
                              std::string pod_namespace);

// The pod's name in the scheduler's snapshot: "<workflow id>.<task index>".
std::string SnapshotPodName(const std::string& workflow_id, size_t index);

// The message of a task the cycle leaves pending: the scheduler's reason, and, for a task
// requeued by an eviction and not placed since, why it was evicted ("<reason>; earlier: evicted
// (reclaim): ..."), so that a user still sees why a task that ran waits again once the next
// cycle has said why it waits. `current` is the task's message now.
std::string PendingMessage(const std::string& reason, const std::string& current);

// "<workflow>/<group>/<task>/<retry>": the backend key of one task attempt.
std::string TaskKey(const std::string& workflow_id, const store::TaskRecord& task);

}  // namespace gpupool::controller
