#include "api/log_routes.h"

#include <algorithm>
#include <vector>

#include "controller/scheduling_loop.h"
#include "model/task_state.h"

namespace gpupool::api {
namespace {

using Json = nlohmann::ordered_json;

Result<const store::TaskRecord*> FindTask(const store::WorkflowRecord& workflow,
                                          const std::string& wanted) {
  if (wanted.empty()) {
    if (workflow.tasks.size() == 1) return &workflow.tasks[0];
    std::string names;
    for (const auto& task : workflow.tasks) names += (names.empty() ? "" : ", ") + task.name;
    return InvalidArgumentError("workflow " + workflow.id + " has " +
                                std::to_string(workflow.tasks.size()) +
                                " tasks: name one with ?task= (" + names + ")");
  }
  std::vector<const store::TaskRecord*> found;
  for (const auto& task : workflow.tasks) {
    if (task.name == wanted || task.group + "/" + task.name == wanted) found.push_back(&task);
  }
  if (found.size() == 1) return found[0];
  if (found.empty()) {
    return NotFoundError("workflow " + workflow.id + " has no task \"" + wanted + "\"");
  }
  return InvalidArgumentError("task \"" + wanted + "\" is in several groups of workflow " +
                              workflow.id + ": name it GROUP/NAME");
}

// The length of the longest prefix of `text` that does not end inside a UTF-8 sequence.
size_t WholeSequences(std::string_view text) {
  // A sequence is at most 4 bytes: look at the last 3 for a lead byte whose sequence is cut.
  for (size_t back = 1; back <= std::min<size_t>(3, text.size()); ++back) {
    const auto c = static_cast<unsigned char>(text[text.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: keep looking for the lead
    const size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return length > back ? text.size() - back : text.size();
  }
  return text.size();
}

// `bytes` as a valid UTF-8 string: nlohmann's serializer replaces what is not UTF-8 by U+FFFD.
std::string AsUtf8(const std::string& bytes) {
  const std::string quoted = Json(bytes).dump(-1, ' ', false, Json::error_handler_t::replace);
  return Json::parse(quoted).get<std::string>();
}

}  // namespace

Result<Json> ReadTaskLog(const store::WorkflowRecord& workflow, const LogRequest& request,
                         const backend::Backend* backend) {
  if (request.offset < 0) return InvalidArgumentError("offset: expected a byte offset >= 0");
  if (request.limit < 1 || request.limit > kMaxLogChunkBytes) {
    return InvalidArgumentError("limit: expected 1 to " + std::to_string(kMaxLogChunkBytes) +
                                " bytes");
  }
  ASSIGN_OR_RETURN(const store::TaskRecord* task, FindTask(workflow, request.task));
  const int retry = request.retry.value_or(task->retry);
  if (retry < 0 || retry > task->retry) {
    return NotFoundError("task " + task->name + " has attempts 0 to " +
                         std::to_string(task->retry) + ", not " + std::to_string(retry));
  }
  if (backend == nullptr) {
    return FailedPreconditionError(
        "this server runs no backend (gpupool serve --backend): task output is read from the "
        "backend that ran the task");
  }
  store::TaskRecord attempt = *task;
  attempt.retry = retry;
  const bool ended = retry < task->retry || model::IsTerminalTaskText(task->status);
  Result<backend::LogChunk> read =
      backend->ReadLog(controller::TaskKey(workflow.id, attempt), request.offset, request.limit);
  backend::LogChunk chunk;
  chunk.offset = request.offset;
  if (read.ok()) {
    chunk = std::move(*read);
  } else if (read.status().code() != StatusCode::kNotFound) {
    return read.status().WithContext("logs of " + workflow.id + " task " + task->name);
  }
  const bool at_end = chunk.offset + static_cast<int64_t>(chunk.data.size()) >= chunk.size;
  // Only the very end of an ended attempt may stop inside a sequence (it never gets the rest).
  // (A chunk of one cut sequence, from a tiny limit, is sent as it is: the reader moves on.)
  if (!(ended && at_end) && WholeSequences(chunk.data) > 0) {
    chunk.data.resize(WholeSequences(chunk.data));
  }
  const int64_t next = chunk.offset + static_cast<int64_t>(chunk.data.size());
  return Json{{"workflow", workflow.id},
              {"group", task->group},
              {"task", task->name},
              {"retry", retry},
              {"status", retry < task->retry ? ToString(model::TaskStatus::kRescheduled)
                                             : std::string_view(task->status)},
              {"offset", chunk.offset},
              {"next_offset", next},
              {"size", chunk.size},
              {"complete", ended && next >= chunk.size},
              {"text", AsUtf8(chunk.data)}};
}

void AddLogRoutes(
    Router& router, service::Service& service, store::Store& store, const backend::Backend* backend,
    const std::function<std::optional<std::string>(const std::string& id)>& resource_pool) {
  RouteOptions workflow_scoped;
  workflow_scoped.resource_pool = [resource_pool](const RouteRequest& r) {
    return resource_pool(r.Param("id"));
  };
  router.Add(
      "GET", "/api/workflow/{id}/logs",
      [&service, &store, backend](const RouteRequest& r) -> Result<Reply> {
        const service::Caller caller{r.identity.user, r.identity.roles, r.source,
                                     r.access_checked_pool};
        // The access rules of GET /api/workflow/{id} (the owner, or workflow:Read on its pool).
        ASSIGN_OR_RETURN(service::WorkflowView checked,
                         service.QueryWorkflow(caller, r.Param("id")));
        (void)checked;
        ASSIGN_OR_RETURN(store::WorkflowRecord workflow, store.GetWorkflow(r.Param("id")));
        LogRequest request;
        request.task = r.Query("task").value_or("");
        ASSIGN_OR_RETURN(auto retry, IntQuery(r, "retry"));
        if (retry) {
          if (*retry < 0 || *retry > 1'000'000) return InvalidArgumentError("retry: out of range");
          request.retry = static_cast<int>(*retry);
        }
        ASSIGN_OR_RETURN(auto offset, IntQuery(r, "offset"));
        if (offset) request.offset = *offset;
        ASSIGN_OR_RETURN(auto limit, IntQuery(r, "limit"));
        if (limit) request.limit = *limit;
        ASSIGN_OR_RETURN(Json chunk, ReadTaskLog(workflow, request, backend));
        Reply reply = Reply::Json(std::move(chunk));
        reply.headers = {{"Cache-Control", "no-store"}};
        return reply;
      },
      workflow_scoped);
}

}  // namespace gpupool::api
