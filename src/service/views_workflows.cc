// The workflow views: a page of workflows (newest first, filtered, `limit` + `continue` as
// Kubernetes lists page) and one workflow with its tasks, their times, the scheduler's reason and
// queue position for pending ones, and their pods.
#include <algorithm>
#include <cstdlib>

#include "service/views.h"
#include "service/views_internal.h"

namespace gpupool::service {

using Json = nlohmann::ordered_json;

namespace {

// Workflows the store hands over per read, and at most how many one page looks at: a page may
// come back short (with a `continue`) when filters the store cannot apply (queue, access) match
// few of them.
constexpr int kBatch = 200;
constexpr int kMaxScanned = 5000;

std::string PositionToken(const store::WorkflowRecord& workflow) {
  return views::EncodeContinue(std::to_string(workflow.submitted_ms) + "\n" + workflow.id);
}

Result<store::WorkflowFilter::Position> PositionOf(std::string_view token) {
  ASSIGN_OR_RETURN(std::string key, views::DecodeContinue(token));
  size_t newline = key.find('\n');
  char* end = nullptr;
  long long ms = newline == std::string::npos ? 0 : std::strtoll(key.c_str(), &end, 10);
  if (newline == std::string::npos || end != key.c_str() + newline) {
    return InvalidArgumentError("continue: not a token of this list");
  }
  return store::WorkflowFilter::Position{ms, key.substr(newline + 1)};
}

Json TaskJson(const store::TaskRecord& task, const QueuePosition* position, bool with_pod) {
  Json out = {{"group", task.group},
              {"name", task.name},
              {"retry", task.retry},
              {"status", task.status},
              {"node", task.node},
              {"status_changed_ms", task.status_changed_ms},
              {"started_ms", task.started_ms},
              {"finished_ms", task.finished_ms},
              {"exit_code", task.exit_code},
              {"message", task.message},
              {"queue_position", position ? Json(position->position) : Json(nullptr)},
              {"queue_length", position ? Json(position->length) : Json(nullptr)}};
  if (with_pod) out["pod"] = task.pod;
  return out;
}

Json WorkflowJson(const store::WorkflowRecord& workflow, const SchedulerInsight* insight,
                  bool detail) {
  Json tasks = Json::array();
  for (size_t t = 0; t < workflow.tasks.size(); ++t) {
    const QueuePosition* position = nullptr;
    if (insight != nullptr && views::IsPendingTask(workflow.tasks[t].status)) {
      auto it = insight->positions.find(PositionKey(workflow.id, t));
      if (it != insight->positions.end()) position = &it->second;
    }
    tasks.push_back(TaskJson(workflow.tasks[t], position, detail));
  }
  Json out = {{"id", workflow.id},
              {"name", workflow.name},
              {"pool", workflow.pool},
              {"user", workflow.user},
              {"status", workflow.status},
              {"queue", views::WorkflowQueue(workflow)},
              {"priority", views::WorkflowPriority(workflow)},
              {"submitted_ms", workflow.submitted_ms},
              {"tasks", std::move(tasks)}};
  if (detail) out["spec"] = workflow.spec;
  return out;
}

}  // namespace

Result<Json> Views::Workflows(const Caller& caller, const WorkflowPageRequest& request) {
  if (request.limit < 1 || request.limit > 500) {
    return InvalidArgumentError("limit " + std::to_string(request.limit) + ": expected 1 to 500");
  }
  store::WorkflowFilter filter;
  filter.pool = request.pool;
  filter.user = request.user;
  filter.status = request.status;
  filter.newest_first = true;
  // One more than the page to know whether another follows; more only when filters the store
  // cannot apply drop some (then growing batches).
  filter.limit = request.limit + 1;
  if (!request.continue_token.empty()) {
    ASSIGN_OR_RETURN(filter.after, PositionOf(request.continue_token));
  }
  ASSIGN_OR_RETURN(auto context_ptr, Current());
  const Context& context = *context_ptr;
  const SchedulerInsight* insight = context.insight();

  Json items = Json::array();
  std::string next;
  int scanned = 0;
  for (;;) {
    ASSIGN_OR_RETURN(auto batch, store_.ListWorkflows(filter));
    for (const store::WorkflowRecord& workflow : batch) {
      ++scanned;
      if (request.queue && views::WorkflowQueue(workflow) != *request.queue) continue;
      if (!context.MayRead(caller, workflow)) continue;
      if (static_cast<int>(items.size()) == request.limit) {
        // One more match exists: the page ends at the previous item.
        next = items.back()["__position"].get<std::string>();
        break;
      }
      Json item = WorkflowJson(workflow, insight, /*detail=*/false);
      item["__position"] = PositionToken(workflow);
      items.push_back(std::move(item));
    }
    if (!next.empty() || static_cast<int>(batch.size()) < filter.limit) break;
    filter.after = store::WorkflowFilter::Position{batch.back().submitted_ms, batch.back().id};
    filter.limit = std::min(kBatch * 5, filter.limit * 2);
    if (scanned >= kMaxScanned) {
      next = PositionToken(batch.back());  // a short page; the rest follows
      break;
    }
  }
  for (Json& item : items) item.erase("__position");
  return Json{{"at", context.state->at_ms},
              {"leader", insight != nullptr},
              {"items", std::move(items)},
              {"continue", next.empty() ? Json(nullptr) : Json(next)}};
}

Result<Json> Views::Workflow(const Caller& caller, std::string_view id) {
  // Access as for GET /api/workflow/{id}: the service checks the caller's roles.
  ASSIGN_OR_RETURN(WorkflowView checked, service_.QueryWorkflow(caller, id));
  (void)checked;
  ASSIGN_OR_RETURN(store::WorkflowRecord workflow, store_.GetWorkflow(id));
  ASSIGN_OR_RETURN(auto context_ptr, Current());
  Json out = WorkflowJson(workflow, context_ptr->insight(), /*detail=*/true);
  out["at"] = context_ptr->state->at_ms;
  return out;
}

}  // namespace gpupool::service
