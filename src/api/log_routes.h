#pragma once
// Task output, read from the backend that ran the task:
//
//   GET /api/workflow/{id}/logs?task=NAME[&retry=N][&offset=BYTES][&limit=BYTES]
//
// answers one chunk of the output of one attempt of one task (the latest attempt unless `retry`
// names an earlier one), as JSON:
//   {"workflow", "group", "task", "retry", "status",
//    "offset", "next_offset", "size", "complete", "text"}
// `text` is the output's bytes [offset, next_offset) as UTF-8 (a sequence the chunk would cut in
// two is left for the next chunk; bytes that are not UTF-8 become U+FFFD). `complete` is true once
// the attempt has ended and everything it wrote has been read: a follower (`gpupool workflow logs
// --follow`, the dashboard's workflow page) asks again from `next_offset` until then. A task that
// has not started, or has written nothing yet, gives an empty chunk. `task` may be left out for a
// workflow of one task; "GROUP/NAME" picks a task whose name is in several groups.
//
// Access is that of GET /api/workflow/{id} (workflow:Read on the workflow's pool; a user always
// reads their own). A backend that keeps no output (the simulated cluster) and a server without a
// backend answer 409 saying so.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/http_server.h"
#include "backend/backend.h"
#include "service/service.h"
#include "store/store.h"

namespace gpupool::api {

inline constexpr int64_t kDefaultLogChunkBytes = int64_t{64} * 1024;
inline constexpr int64_t kMaxLogChunkBytes = int64_t{1024} * 1024;

struct LogRequest {
  std::string task;  // "", NAME or GROUP/NAME
  std::optional<int> retry;
  int64_t offset = 0;
  int64_t limit = kDefaultLogChunkBytes;
};

// One chunk of `workflow`'s task output from `backend` (null: this server has none). The JSON
// described above, or kNotFound / kInvalidArgument naming the task, or the backend's error.
Result<nlohmann::ordered_json> ReadTaskLog(const store::WorkflowRecord& workflow,
                                           const LogRequest& request,
                                           const backend::Backend* backend);

// Adds the route. `backend` may be null; it must outlive the router otherwise.
void AddLogRoutes(
    Router& router, service::Service& service, store::Store& store, const backend::Backend* backend,
    const std::function<std::optional<std::string>(const std::string& id)>& resource_pool);

}  // namespace gpupool::api
