#pragma once
// `gpupool workflow logs WORKFLOW [TASK] [--retry N] [--follow]`: a task's output, read from the
// server (GET /api/workflow/{id}/logs, api/log_routes.h), which reads it from the backend that
// ran the task. Without TASK, every task of the workflow, each under a "==> GROUP/NAME <=="
// header when there are several (as `tail` heads its files). --follow asks again from where the
// last answer ended, every poll interval, until every task has ended and its output is read.
// Online only: the output lives with the backend, not in the store.

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "common/status.h"

namespace gpupool::client {
class Client;
}  // namespace gpupool::client

namespace gpupool::cli {

struct LogsOptions {
  std::string workflow;
  std::string task;  // "" = every task
  std::optional<int> retry;
  bool follow = false;
  int64_t poll_ms = 1000;
};

// Writes the output to `out` as it arrives (flushed after each chunk). `wait` sleeps between
// polls (tests pass one that does not).
Status PrintWorkflowLogs(client::Client& client, const LogsOptions& options, std::ostream& out,
                         const std::function<void(int64_t ms)>& wait);

}  // namespace gpupool::cli
