#pragma once
// How many of a workflow's tasks run at once, and how many failures it survives: a workflow's
// `parallelism` and `backoff_limit` (a batch/v1 Job's parallelism and backoffLimit, as `apply -f`
// makes them; submit/job_workflow.h). The scheduling loop's side:
//   - tasks past the parallelism are stored WAITING (service/submission.cc); each step lets them
//     in, in workflow order, while fewer than `parallelism` are PENDING, SCHEDULED or RUNNING. A
//     task let in is PENDING from then on, and its queue timeout counts from then;
//   - a failed attempt (exit action FAIL) is retried as a new attempt while the workflow's
//     failed attempts, this one counted, are at most `backoff_limit`; past it the task fails,
//     and with it the workflow (Kubernetes' Job controller: failed pods > backoffLimit).
// Without the fields nothing changes: every task at once, a failure fails the workflow.
//
// Thread contract: pure functions of the workflow record (the loop's thread).

#include <cstdint>
#include <optional>
#include <string>

#include "controller/task_lifecycle.h"
#include "metrics/metrics.h"
#include "store/store.h"

namespace gpupool::controller {

struct RunLimits {
  std::optional<int64_t> parallelism;
  std::optional<int64_t> backoff_limit;
};

// The limits in the stored spec (`workflow.parallelism`, `workflow.backoff_limit`).
RunLimits RunLimitsOf(const store::WorkflowRecord& workflow);

// WAITING tasks let in (-> PENDING at `now`, counted in `transitions`) while the workflow has
// fewer than its parallelism active. Returns how many.
int AdmitWaitingTasks(store::WorkflowRecord& workflow, const RunLimits& limits, int64_t now,
                      metrics::Counter* transitions);

// The workflow's attempts that ended failed and were retried (RESCHEDULED with a non-zero exit
// code), with those that failed it (FAILED).
int64_t FailedAttempts(const store::WorkflowRecord& workflow);

// Whether a failed attempt is retried under the backoff limit (this attempt counted), and the
// words for its message: "retried (failure 2 of backoff limit 6)" or "backoff limit 6 reached
// (7 failures)"; "" without a limit.
struct BackoffDecision {
  bool retry = false;
  std::string words;
};
BackoffDecision DecideBackoff(const store::WorkflowRecord& workflow, const RunLimits& limits);

}  // namespace gpupool::controller
