#pragma once
// The statuses of a task attempt and of a workflow: the one place that names them. The stored,
// JSON and API spelling is ToString's (upper case, e.g. "FAILED_EXEC_TIMEOUT"); everything else
// compares through the enums.
//
// A task attempt (the scheduling loop, controller/scheduling_loop.h, moves it):
//
//   WAITING --(a place under the workflow's parallelism)--> PENDING --(bound)--> SCHEDULED
//   SCHEDULED --(launched)--> RUNNING --(exit)--> COMPLETED | FAILED | RESCHEDULED (+ new attempt)
//   PENDING --(queue timeout)--> FAILED_QUEUE_TIMEOUT; RUNNING --(exec timeout)-->
//   FAILED_EXEC_TIMEOUT; RUNNING --(evicted)--> PENDING; any unfinished --(cancel)--> CANCELED
//
// A workflow's status follows from its tasks' latest attempts: the first failure (FAILED*), else
// COMPLETED or CANCELED when all ended, else RUNNING, SCHEDULED or PENDING (see the loop's
// WorkflowStatus). A workflow is never WAITING or RESCHEDULED.
//
// Stored records (store::TaskRecord, store::WorkflowRecord) keep the status as its text, since
// the store is opaque to semantics: compare them as `task.status == TaskStatus::kRunning` (the
// operators below) and assign `ToString(...)`.
//
// Thread contract: pure functions.

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "common/status.h"

namespace gpupool::model {

enum class TaskStatus : uint8_t {
  kWaiting,  // past its workflow's parallelism
  kPending,
  kScheduled,
  kRunning,
  kCompleted,
  kFailed,
  kFailedQueueTimeout,
  kFailedExecTimeout,
  kCanceled,
  kRescheduled,  // an attempt that ended and was retried as a new attempt
};

// Each workflow status is the task status of the same name, with the same value (and spelling).
enum class WorkflowStatus : uint8_t {
  kPending = static_cast<uint8_t>(TaskStatus::kPending),
  kScheduled = static_cast<uint8_t>(TaskStatus::kScheduled),
  kRunning = static_cast<uint8_t>(TaskStatus::kRunning),
  kCompleted = static_cast<uint8_t>(TaskStatus::kCompleted),
  kFailed = static_cast<uint8_t>(TaskStatus::kFailed),
  kFailedQueueTimeout = static_cast<uint8_t>(TaskStatus::kFailedQueueTimeout),
  kFailedExecTimeout = static_cast<uint8_t>(TaskStatus::kFailedExecTimeout),
  kCanceled = static_cast<uint8_t>(TaskStatus::kCanceled),
};

// Every value, in declaration order (for tables and tests).
std::span<const TaskStatus> AllTaskStatuses();
std::span<const WorkflowStatus> AllWorkflowStatuses();

constexpr std::string_view ToString(TaskStatus status) {
  switch (status) {
    case TaskStatus::kWaiting:
      return "WAITING";
    case TaskStatus::kPending:
      return "PENDING";
    case TaskStatus::kScheduled:
      return "SCHEDULED";
    case TaskStatus::kRunning:
      return "RUNNING";
    case TaskStatus::kCompleted:
      return "COMPLETED";
    case TaskStatus::kFailed:
      return "FAILED";
    case TaskStatus::kFailedQueueTimeout:
      return "FAILED_QUEUE_TIMEOUT";
    case TaskStatus::kFailedExecTimeout:
      return "FAILED_EXEC_TIMEOUT";
    case TaskStatus::kCanceled:
      return "CANCELED";
    case TaskStatus::kRescheduled:
      return "RESCHEDULED";
  }
  return "";
}

constexpr std::string_view ToString(WorkflowStatus status) {
  return ToString(static_cast<TaskStatus>(status));
}

// The status a stored spelling names (exact, case-sensitive), else kInvalidArgument naming the
// text, the statuses there are and the nearest one.
Result<TaskStatus> ParseTaskStatus(std::string_view text);
Result<WorkflowStatus> ParseWorkflowStatus(std::string_view text);

// The same lookups without the error, for loops over many records: nullopt for any other text.
std::optional<TaskStatus> FindTaskStatus(std::string_view text);
std::optional<WorkflowStatus> FindWorkflowStatus(std::string_view text);

// The comparisons of a stored text with a status: `task.status == TaskStatus::kRunning`.
constexpr bool operator==(std::string_view text, TaskStatus status) {
  return text == ToString(status);
}
constexpr bool operator==(std::string_view text, WorkflowStatus status) {
  return text == ToString(status);
}

// ---- Predicates ----

// FAILED, FAILED_QUEUE_TIMEOUT, FAILED_EXEC_TIMEOUT.
constexpr bool IsFailure(TaskStatus s) {
  return s == TaskStatus::kFailed || s == TaskStatus::kFailedQueueTimeout ||
         s == TaskStatus::kFailedExecTimeout;
}
constexpr bool IsFailure(WorkflowStatus s) {
  return s == WorkflowStatus::kFailed || s == WorkflowStatus::kFailedQueueTimeout ||
         s == WorkflowStatus::kFailedExecTimeout;
}
// The attempt has ended: COMPLETED, CANCELED, RESCHEDULED and every failure.
constexpr bool IsTerminal(TaskStatus s) {
  return s == TaskStatus::kCompleted || s == TaskStatus::kCanceled ||
         s == TaskStatus::kRescheduled || IsFailure(s);
}
// The workflow has ended: COMPLETED, CANCELED and every failure.
constexpr bool IsTerminal(WorkflowStatus s) {
  return s == WorkflowStatus::kCompleted || s == WorkflowStatus::kCanceled || IsFailure(s);
}
// Bound to a node, holding its resources there: SCHEDULED, RUNNING.
constexpr bool IsBound(TaskStatus s) {
  return s == TaskStatus::kScheduled || s == TaskStatus::kRunning;
}
// Counts against its workflow's parallelism: PENDING, SCHEDULED, RUNNING.
constexpr bool HoldsPlace(TaskStatus s) { return s == TaskStatus::kPending || IsBound(s); }

// The predicates over a stored text; a text that names no status is none of them.
bool IsFailureText(std::string_view task_or_workflow_status);
bool IsTerminalTaskText(std::string_view task_status);
bool IsBoundTaskText(std::string_view task_status);
bool HoldsPlaceText(std::string_view task_status);

// Whether a stored workflow status has ended, for the store's `finished` column. Besides
// gpupool's own statuses, OSMO's other terminal spellings count as ended (the British CANCELLED
// and any FAILED_* reason, e.g. FAILED_CANCELED), so that a row written by another tool never
// stays unfinished for ever.
bool IsFinishedWorkflowText(std::string_view workflow_status);

// The workflow status a failed attempt gives its workflow (FAILED* -> the same spelling).
// Requires IsFailure(status).
WorkflowStatus WorkflowFailure(TaskStatus status);

}  // namespace gpupool::model
