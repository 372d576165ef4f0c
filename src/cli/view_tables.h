#pragma once
// `gpupool queue list`, `gpupool machinepool list` and `gpupool profile`. The first two are the
// dashboard's read-only views (/api/views/queues, /api/views/machine-pools, service/views.h) as
// tables, like Run:ai's projects table and `rosa list machinepools`; `-o json|yaml` prints the
// view as the API gives it.

#include <string_view>

#include "cli/api.h"
#include "cli/format.h"
#include "common/status.h"

namespace gpupool::cli {

// Departments, each followed by its projects (indented), per node pool: deserved, limit,
// over-quota weight, fair share, allocated, allocation ratio (allocated / deserved), pending.
// `resource`: gpu | cpu | memory.
Status PrintQueueList(Api& api, const service::Caller& caller, OutputFormat format,
                      std::string_view resource);

// Name, instance type, capacity type, replicas current/min-max, price per node-hour, cost so
// far, status and the last scale event.
Status PrintMachinePoolList(Api& api, const service::Caller& caller, OutputFormat format);

// `gpupool profile` (GET /api/profile): user, roles, the pools they may use, the default pool.
Status PrintProfile(Api& api, const service::Caller& caller, OutputFormat format);

}  // namespace gpupool::cli
