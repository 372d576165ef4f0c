// The workflow views: a page of workflows (newest first, filtered, `limit` + `continue` as
// Kubernetes lists page) and one workflow with its tasks, their times, the scheduler's reason and
// queue position for pending ones, and their pods.
#include <algorithm>
#include <cstdlib>
#include <deque>
#include <tuple>

#include "model/task_state.h"
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

namespace {

bool Newer(const store::WorkflowRecord& a, const store::WorkflowRecord& b) {
  return std::tie(a.submitted_ms, a.id) > std::tie(b.submitted_ms, b.id);
}

bool After(const store::WorkflowRecord& workflow, const store::WorkflowFilter::Position& position) {
  return std::tie(workflow.submitted_ms, workflow.id) <
         std::tie(position.submitted_ms, position.id);
}

// Which workflows a status filter can match: finished ones (from the store), unfinished ones (from
// the context), or both (no filter).
struct Sources {
  bool finished = true, unfinished = true;
};

Sources SourcesFor(const std::optional<std::string>& status) {
  if (!status) return {};
  const bool finished = model::IsFinishedWorkflowText(*status);
  return {finished, !finished};
}

// The finished workflows after a position, newest first, read from the store a batch at a time
// (every batch is kept: the page points into them).
class FinishedWorkflows {
 public:
  FinishedWorkflows(store::Store& store, store::WorkflowFilter filter)
      : store_(store), filter_(std::move(filter)) {}

  // The next one, or null at the end.
  Result<const store::WorkflowRecord*> Next() {
    if (batches_.empty() || index_ == batches_.back().size()) {
      if (done_) return nullptr;
      if (!batches_.empty()) {
        const store::WorkflowRecord& last = batches_.back().back();
        filter_.after = store::WorkflowFilter::Position{last.submitted_ms, last.id};
        filter_.limit = std::min(kBatch * 5, filter_.limit * 2);
      }
      ASSIGN_OR_RETURN(auto batch, store_.ListWorkflows(filter_));
      done_ = static_cast<int>(batch.size()) < filter_.limit;
      if (batch.empty()) return nullptr;
      batches_.push_back(std::move(batch));
      index_ = 0;
    }
    return &batches_.back()[index_];
  }
  void Pop() { ++index_; }

 private:
  store::Store& store_;
  store::WorkflowFilter filter_;
  std::deque<std::vector<store::WorkflowRecord>> batches_;
  size_t index_ = 0;
  bool done_ = false;
};

// The context's unfinished workflows after a position that match the request's pool, user and
// status, newest first (Context::newest_first).
class UnfinishedWorkflows {
 public:
  UnfinishedWorkflows(const Views::Context& context, const WorkflowPageRequest& request,
                      const std::optional<store::WorkflowFilter::Position>& after)
      : workflows_(context.state->workflows),
        request_(request),
        next_(context.newest_first.begin()),
        end_(context.newest_first.end()) {
    if (after) {
      next_ = std::partition_point(next_, end_,
                                   [&](size_t w) { return !After(workflows_[w], *after); });
    }
  }

  // The next one, or null at the end.
  const store::WorkflowRecord* Next() {
    while (next_ != end_ && !Matches(workflows_[*next_])) ++next_;
    return next_ == end_ ? nullptr : &workflows_[*next_];
  }
  void Pop() { ++next_; }

 private:
  bool Matches(const store::WorkflowRecord& w) const {
    return (!request_.pool || w.pool == *request_.pool) &&
           (!request_.user || w.user == *request_.user) &&
           (!request_.status || w.status == *request_.status);
  }

  const std::vector<store::WorkflowRecord>& workflows_;
  const WorkflowPageRequest& request_;
  std::vector<size_t>::const_iterator next_;
  const std::vector<size_t>::const_iterator end_;
};

// The two lists merged, newest first, from the sources the status filter can match. A workflow
// that finished after the context's state is in both: it comes once, as the store's record.
class NewestFirst {
 public:
  NewestFirst(FinishedWorkflows finished, UnfinishedWorkflows unfinished, Sources sources)
      : finished_(std::move(finished)), unfinished_(std::move(unfinished)), sources_(sources) {}

  // The next one, or null at the end.
  Result<const store::WorkflowRecord*> Next() {
    for (;;) {
      const store::WorkflowRecord* from_store = nullptr;
      if (sources_.finished) {
        ASSIGN_OR_RETURN(from_store, finished_.Next());
      }
      const store::WorkflowRecord* from_context =
          sources_.unfinished ? unfinished_.Next() : nullptr;
      if (from_store == nullptr && from_context == nullptr) return nullptr;
      if (from_context == nullptr ||
          (from_store != nullptr && !Newer(*from_context, *from_store))) {
        finished_.Pop();
        last_finished_ = from_store->id;
        return from_store;
      }
      unfinished_.Pop();
      // Finished since the context's state: the store's record (same position) came just before.
      if (from_context->id != last_finished_) return from_context;
    }
  }

 private:
  FinishedWorkflows finished_;
  UnfinishedWorkflows unfinished_;
  const Sources sources_;
  std::string last_finished_;  // the id of the store's record taken last
};

// The store's filter for the finished workflows of a page.
store::WorkflowFilter FinishedFilter(const WorkflowPageRequest& request,
                                     const std::optional<store::WorkflowFilter::Position>& after) {
  store::WorkflowFilter filter;
  filter.pool = request.pool;
  filter.user = request.user;
  filter.status = request.status;
  filter.finished_only = true;
  filter.newest_first = true;
  filter.after = after;
  // One more than the page to know whether another follows; more only when filters the store
  // cannot apply drop some (then growing batches).
  filter.limit = request.limit + 1;
  return filter;
}

}  // namespace

// A page merges two lists, newest first: the unfinished workflows of the context (the loop's last
// state, kept sorted: the rows the loop rewrites at every step are never read back for a page)
// and the finished ones from the store (written once; the `finished` index serves them in order).
// A workflow that finished after the context's state is in both: the store's record wins.
Result<Json> Views::Workflows(const Caller& caller, const WorkflowPageRequest& request) {
  if (request.limit < 1 || request.limit > 500) {
    return InvalidArgumentError("limit " + std::to_string(request.limit) + ": expected 1 to 500");
  }
  std::optional<store::WorkflowFilter::Position> after;
  if (!request.continue_token.empty()) {
    ASSIGN_OR_RETURN(after, PositionOf(request.continue_token));
  }
  ASSIGN_OR_RETURN(auto context_ptr, Current());
  const Context& context = *context_ptr;
  const SchedulerInsight* insight = context.insight();
  views::ReadAccess may_read(context, caller);
  NewestFirst workflows(FinishedWorkflows(store_, FinishedFilter(request, after)),
                        UnfinishedWorkflows(context, request, after), SourcesFor(request.status));

  std::vector<const store::WorkflowRecord*> page;
  std::string next;
  int scanned = 0;
  for (;;) {
    ASSIGN_OR_RETURN(const store::WorkflowRecord* workflow, workflows.Next());
    if (workflow == nullptr) break;
    if ((!request.queue || views::WorkflowQueue(*workflow) == *request.queue) &&
        may_read(*workflow)) {
      if (static_cast<int>(page.size()) == request.limit) {
        // One more match exists: the page ends at the previous item.
        next = PositionToken(*page.back());
        break;
      }
      page.push_back(workflow);
    }
    if (++scanned >= kMaxScanned) {
      next = PositionToken(*workflow);  // a short page; the rest follows
      break;
    }
  }
  Json items = Json::array();
  for (const store::WorkflowRecord* workflow : page) {
    items.push_back(WorkflowJson(*workflow, insight, /*detail=*/false));
  }
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
