// Workflow reads (query, list; through the cache of read workflows) and cancel.

#include <memory>
#include <string>
#include <vector>

#include "common/strings.h"
#include "config/access.h"
#include "config/config_set.h"
#include "model/task_state.h"
#include "service/service_internal.h"
#include "service/snapshot_cache.h"
#include "store/store.h"

namespace gpupool::service {
namespace {

using json = nlohmann::ordered_json;

TaskView ToTaskView(const store::TaskRecord& t) {
  TaskView v;
  v.group = t.group;
  v.name = t.name;
  const json& labels =
      t.pod.contains("metadata") ? t.pod["metadata"].value("labels", json()) : json();
  if (labels.is_object() && labels.contains("gpupool.io/platform")) {
    v.platform = labels["gpupool.io/platform"].get<std::string>();
  }
  v.status = t.status;
  v.node = t.node;
  v.exit_code = t.exit_code;
  v.message = t.message;
  return v;
}

// Access to one workflow: one's own workflows need no configs; the HTTP layer may have checked
// the request already (Caller::access_checked_pool).
Status CheckWorkflowAccess(store::Store& store, Service::SnapshotCache& cache, const Caller& caller,
                           std::string_view method, const std::string& path,
                           const std::string& user, const std::string& pool) {
  if (user == caller.user) return OkStatus();
  if (caller.access_checked_pool && *caller.access_checked_pool == pool) return OkStatus();
  ASSIGN_OR_RETURN(SnapshotPtr snap, cache.Get(store));
  config::AccessRequest req{std::string(method), path, pool};
  Status s = config::CheckAccess(caller.roles, req, snap->set);
  if (!s.ok()) {
    return PermissionDeniedError("access denied: user " + Quoted(caller.user) + ": " + s.message());
  }
  return OkStatus();
}

// The pool's `action_permissions.cancel` (OSMO), for a caller who did not submit the workflow,
// on top of the roles (which must still allow the cancel): PRIVATE, only the submitter; POOL, a
// caller whose roles grant the pool; PUBLIC, anyone the roles let through. osmo-admin bypasses
// it, as in OSMO; a pool without it leaves the decision to the roles.
Status CheckCancelPermission(const config::ConfigSet& set, const Caller& caller,
                             const store::WorkflowRecord& wf) {
  const config::Pool* pool = set.FindPool(wf.pool);
  if (pool == nullptr || !pool->action_permissions.is_object() ||
      HasRole(caller, config::kAdminRole)) {
    return OkStatus();
  }
  const std::string permission = pool->action_permissions.value("cancel", "");
  const std::string refused = "access denied: user " + Quoted(caller.user) + ": pool " +
                              Quoted(wf.pool) + "'s action_permissions.cancel is " + permission;
  if (permission == "PRIVATE") {
    return PermissionDeniedError(refused + ": only the submitter (" + wf.user +
                                 ") may cancel workflow " + wf.id);
  }
  if (permission == "POOL" && !config::PoolAllowed(caller.roles, wf.pool, set)) {
    return PermissionDeniedError(refused + ": only users whose roles grant the pool may cancel");
  }
  return OkStatus();
}

}  // namespace

WorkflowView ToView(const store::WorkflowRecord& wf) {
  WorkflowView v;
  v.id = wf.id;
  v.name = wf.name;
  v.pool = wf.pool;
  // Workflows stored before projects existed have no "queue": their pool was their queue.
  v.queue = wf.spec.is_object() ? wf.spec.value("queue", wf.pool) : wf.pool;
  v.user = wf.user;
  v.status = wf.status;
  v.submitted_ms = wf.submitted_ms;
  v.spec = wf.spec;
  for (const auto& t : wf.tasks) v.tasks.push_back(ToTaskView(t));
  return v;
}

Result<WorkflowView> Service::QueryWorkflow(const Caller& caller, std::string_view id) {
  ASSIGN_OR_RETURN(auto wf, cache_->Workflow(store_, id));
  RETURN_IF_ERROR(CheckWorkflowAccess(store_, *cache_, caller, "GET",
                                      "/api/workflow/" + std::string(id), wf->user, wf->pool));
  return wf->view;
}

Result<std::string> Service::WorkflowPool(std::string_view id) {
  ASSIGN_OR_RETURN(auto wf, cache_->Workflow(store_, id));
  return wf->pool;
}

Result<std::shared_ptr<const std::string>> Service::QueryWorkflowJson(const Caller& caller,
                                                                      std::string_view id) {
  ASSIGN_OR_RETURN(auto wf, cache_->Workflow(store_, id));
  RETURN_IF_ERROR(CheckWorkflowAccess(store_, *cache_, caller, "GET",
                                      "/api/workflow/" + std::string(id), wf->user, wf->pool));
  return wf->json_text;
}

void Service::QueryWorkflowJsonAsync(const Caller& caller, const std::string& id, JsonDone done) {
  cache_->WorkflowAsync(
      store_, id,
      [this, caller, id, done = std::move(done)](Result<std::shared_ptr<const CachedWorkflow>> wf) {
        if (!wf.ok()) return done(wf.status());
        Status access = CheckWorkflowAccess(store_, *cache_, caller, "GET", "/api/workflow/" + id,
                                            (*wf)->user, (*wf)->pool);
        if (!access.ok()) return done(access);
        done((*wf)->json_text);
      });
}

Result<std::vector<WorkflowView>> Service::ListWorkflows(const Caller& caller,
                                                         const WorkflowFilter& filter) {
  store::WorkflowFilter f;
  f.pool = filter.pool;
  f.user = filter.user;
  f.status = filter.status;
  f.limit = filter.limit;
  ASSIGN_OR_RETURN(auto workflows, store_.ListWorkflows(f));
  ASSIGN_OR_RETURN(SnapshotPtr snap_ptr, cache_->Get(store_));
  const Snapshot& snap = *snap_ptr;
  std::vector<WorkflowView> out;
  for (const auto& wf : workflows) {
    if (wf.user != caller.user) {
      config::AccessRequest req{"GET", "/api/workflow/" + wf.id, wf.pool};
      if (!config::CheckAccess(caller.roles, req, snap.set).ok()) continue;
    }
    out.push_back(ToView(wf));
  }
  return out;
}

Result<WorkflowView> Service::CancelWorkflow(const Caller& caller, std::string_view id) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto wf = store_.GetWorkflow(id);
    if (!wf.ok()) {
      if (wf.status().code() == StatusCode::kNotFound) {
        return NotFoundError("workflow " + Quoted(id) + " does not exist");
      }
      return wf.status();
    }
    if (wf->user != caller.user) {
      ASSIGN_OR_RETURN(SnapshotPtr snap_ptr, cache_->Get(store_));
      const Snapshot& snap = *snap_ptr;
      RETURN_IF_ERROR(CheckCancelPermission(snap.set, caller, *wf));
      config::AccessRequest req{"POST", "/api/workflow/" + std::string(id) + "/cancel", wf->pool};
      Status s = config::CheckAccess(caller.roles, req, snap.set);
      if (!s.ok()) {
        return PermissionDeniedError("access denied: user " + Quoted(caller.user) + ": " +
                                     s.message());
      }
    }
    if (!IsUnfinishedStatus(wf->status)) {
      return FailedPreconditionError("Workflow " + std::string(id) + " is already finished (" +
                                     wf->status + ")");
    }
    int64_t now = clock_.NowMillis();
    store::WorkflowRecord updated = *wf;
    updated.status = ToString(model::WorkflowStatus::kCanceled);
    for (auto& t : updated.tasks) {
      if (model::IsTerminalTaskText(t.status)) continue;
      t.status = ToString(model::TaskStatus::kCanceled);
      t.status_changed_ms = now;
      t.finished_ms = now;
      t.message = "canceled by " + caller.user;
    }
    Status s = store_.UpdateWorkflowWithAudit(updated, AuditOf(caller, "workflow cancel", id, ""));
    if (s.code() == StatusCode::kAborted) continue;  // changed underneath: re-read and retry
    RETURN_IF_ERROR(s);
    updated.version += 1;
    return ToView(updated);
  }
  return AbortedError("workflow " + Quoted(id) + " kept changing; cancel again");
}

}  // namespace gpupool::service
