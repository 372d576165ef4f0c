#include "controller/workflow_runs.h"

#include <nlohmann/json.hpp>

namespace gpupool::controller {
namespace {

using Json = nlohmann::ordered_json;

std::optional<int64_t> Count(const Json& doc, const char* key) {
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_number_integer() || it->get<int64_t>() < 0) return std::nullopt;
  return it->get<int64_t>();
}

}  // namespace

RunLimits RunLimitsOf(const store::WorkflowRecord& workflow) {
  RunLimits limits;
  const Json& spec = workflow.spec;
  if (!spec.is_object()) return limits;
  auto doc = spec.find("workflow");
  if (doc == spec.end() || !doc->is_object()) return limits;
  limits.parallelism = Count(*doc, "parallelism");
  limits.backoff_limit = Count(*doc, "backoff_limit");
  if (limits.parallelism && *limits.parallelism == 0) limits.parallelism.reset();
  return limits;
}

int AdmitWaitingTasks(store::WorkflowRecord& workflow, const RunLimits& limits, int64_t now,
                      metrics::Counter* transitions) {
  int64_t active = 0;
  for (const auto& task : workflow.tasks) active += model::HoldsPlaceText(task.status) ? 1 : 0;
  int admitted = 0;
  for (auto& task : workflow.tasks) {
    if (task.status != TaskStatus::kWaiting) continue;
    if (limits.parallelism && active >= *limits.parallelism) break;
    if (transitions != nullptr) {
      transitions->Increment({task.status, std::string(ToString(TaskStatus::kPending))});
    }
    task.status = ToString(TaskStatus::kPending);
    task.status_changed_ms = now;
    task.message.clear();
    ++active;
    ++admitted;
  }
  return admitted;
}

int64_t FailedAttempts(const store::WorkflowRecord& workflow) {
  int64_t failed = 0;
  for (const auto& task : workflow.tasks) {
    if ((task.status == TaskStatus::kRescheduled && task.exit_code != 0) ||
        task.status == TaskStatus::kFailed) {
      ++failed;
    }
  }
  return failed;
}

BackoffDecision DecideBackoff(const store::WorkflowRecord& workflow, const RunLimits& limits) {
  if (!limits.backoff_limit) return {};
  const int64_t failures = FailedAttempts(workflow) + 1;  // with the attempt being decided
  const std::string limit = std::to_string(*limits.backoff_limit);
  if (failures <= *limits.backoff_limit) {
    return {true,
            "retried (failure " + std::to_string(failures) + " of backoff limit " + limit + ")"};
  }
  return {false, "backoff limit " + limit + " reached (" + std::to_string(failures) +
                     (failures == 1 ? " failure)" : " failures)")};
}

}  // namespace gpupool::controller
