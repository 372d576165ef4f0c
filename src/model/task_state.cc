#include "model/task_state.h"

#include <array>
#include <string>
#include <vector>

#include "common/strings.h"

namespace gpupool::model {

namespace {

constexpr std::array kTaskStatuses = {
    TaskStatus::kWaiting,
    TaskStatus::kPending,
    TaskStatus::kScheduled,
    TaskStatus::kRunning,
    TaskStatus::kCompleted,
    TaskStatus::kFailed,
    TaskStatus::kFailedQueueTimeout,
    TaskStatus::kFailedExecTimeout,
    TaskStatus::kCanceled,
    TaskStatus::kRescheduled,
};

constexpr std::array kWorkflowStatuses = {
    WorkflowStatus::kPending,
    WorkflowStatus::kScheduled,
    WorkflowStatus::kRunning,
    WorkflowStatus::kCompleted,
    WorkflowStatus::kFailed,
    WorkflowStatus::kFailedQueueTimeout,
    WorkflowStatus::kFailedExecTimeout,
    WorkflowStatus::kCanceled,
};

template <typename Enum, size_t N>
std::optional<Enum> Find(const std::array<Enum, N>& all, std::string_view text) {
  for (Enum status : all) {
    if (ToString(status) == text) return status;
  }
  return std::nullopt;
}

template <typename Enum, size_t N>
Result<Enum> Parse(const std::array<Enum, N>& all, std::string_view what, std::string_view text) {
  if (std::optional<Enum> status = Find(all, text)) return *status;
  std::vector<std::string> names;
  for (Enum status : all) names.emplace_back(ToString(status));
  return InvalidArgumentError("unknown " + std::string(what) + " status \"" + std::string(text) +
                              "\"" + DidYouMean(text, names) + "; expected one of " +
                              Join(names, ", "));
}

}  // namespace

std::span<const TaskStatus> AllTaskStatuses() { return kTaskStatuses; }
std::span<const WorkflowStatus> AllWorkflowStatuses() { return kWorkflowStatuses; }

Result<TaskStatus> ParseTaskStatus(std::string_view text) {
  return Parse(kTaskStatuses, "task", text);
}
Result<WorkflowStatus> ParseWorkflowStatus(std::string_view text) {
  return Parse(kWorkflowStatuses, "workflow", text);
}

std::optional<TaskStatus> FindTaskStatus(std::string_view text) {
  return Find(kTaskStatuses, text);
}
std::optional<WorkflowStatus> FindWorkflowStatus(std::string_view text) {
  return Find(kWorkflowStatuses, text);
}

namespace {

// A predicate over a stored text: false for a text that names no status.
bool TextIs(std::string_view text, bool (*predicate)(TaskStatus)) {
  std::optional<TaskStatus> task = FindTaskStatus(text);
  return task.has_value() && predicate(*task);
}

}  // namespace

bool IsFailureText(std::string_view status) { return TextIs(status, IsFailure); }
bool IsTerminalTaskText(std::string_view status) { return TextIs(status, IsTerminal); }
bool IsBoundTaskText(std::string_view status) { return TextIs(status, IsBound); }
bool HoldsPlaceText(std::string_view status) { return TextIs(status, HoldsPlace); }

bool IsFinishedWorkflowText(std::string_view status) {
  if (std::optional<WorkflowStatus> known = FindWorkflowStatus(status)) return IsTerminal(*known);
  // OSMO's other terminal spellings; ToString(kFailed) is the prefix of every failure reason.
  return status == "CANCELLED" || status.starts_with(ToString(WorkflowStatus::kFailed));
}

WorkflowStatus WorkflowFailure(TaskStatus status) {
  return IsFailure(status) ? static_cast<WorkflowStatus>(status) : WorkflowStatus::kFailed;
}

}  // namespace gpupool::model
