// SqlStore: workflows and their tasks as they are read, checked for changes and updated.
// (Creates are group-committed: sql_store_group_commit.cc.)

#include <algorithm>
#include <bit>
#include <unordered_map>
#include <unordered_set>

#include "model/task_state.h"
#include "store/sql_store.h"
#include "store/sql_store_internal.h"

namespace gpupool::store {

namespace internal {

// Rows per multi-row INSERT of tasks (13 parameters each): a statement of 1 to 64 rows, so at
// most 64 distinct SQL texts (each a prepared statement of the PostgreSQL writer session).
constexpr size_t kTasksPerInsert = 64;

Status InsertTaskRows(SqlConnection& db, const std::vector<TaskRow>& rows, bool defer) {
  for (size_t begin = 0; begin < rows.size(); begin += kTasksPerInsert) {
    size_t end = std::min(rows.size(), begin + kTasksPerInsert);
    SqlParams params;
    params.reserve((end - begin) * 13);
    std::string sql =
        "INSERT INTO tasks (workflow_id, position, group_name, name, status, node, pod, retry, "
        "status_changed_ms, started_ms, finished_ms, exit_code, message) VALUES ";
    for (size_t i = begin; i < end; ++i) {
      const TaskRecord& t = *rows[i].task;
      std::string pod;
      if (rows[i].pod != nullptr) {
        pod = *rows[i].pod;
      } else {
        ASSIGN_OR_RETURN(
            pod, DumpJson(t.pod, "task " + std::string(rows[i].workflow_id) + "/" + t.name));
      }
      AppendRow(sql, params,
                {std::string(rows[i].workflow_id), rows[i].position, t.group, t.name, t.status,
                 t.node, std::move(pod), int64_t{t.retry}, t.status_changed_ms, t.started_ms,
                 t.finished_ms, int64_t{t.exit_code}, t.message},
                i == begin);
    }
    RETURN_IF_ERROR(Execute(db, defer, sql, std::move(params)));
  }
  return OkStatus();
}

}  // namespace internal

namespace {

using internal::AuditRow;
using internal::AuditTime;
using internal::DumpJson;
using internal::HoldFence;
using internal::InsertAudits;
using internal::InsertTaskRows;
using internal::Param;
using internal::ParseStoredJson;
using internal::RequireNonEmpty;
using internal::TaskRow;
using nlohmann::ordered_json;

constexpr std::string_view kWorkflowColumns =
    "id, name, pool, user_name, status, submitted_ms, spec, version, idempotency_key";

Result<WorkflowRecord> WorkflowFromRow(const SqlRow& row) {
  WorkflowRecord record;
  record.id = row.Text(0);
  record.name = row.Text(1);
  record.pool = row.Text(2);
  record.user = row.Text(3);
  record.status = row.Text(4);
  record.submitted_ms = row.Int(5);
  ASSIGN_OR_RETURN(record.spec, ParseStoredJson(row, 6, "workflow " + record.id));
  record.version = row.Int(7);
  record.idempotency_key = row.Text(8);
  return record;
}

constexpr std::string_view kTaskColumns =
    "workflow_id, group_name, name, status, node, pod, retry, status_changed_ms, started_ms, "
    "finished_ms, exit_code, message";

Result<TaskRecord> TaskFromRow(const SqlRow& row) {
  TaskRecord task;
  task.workflow_id = row.Text(0);
  task.group = row.Text(1);
  task.name = row.Text(2);
  task.status = row.Text(3);
  task.node = row.Text(4);
  ASSIGN_OR_RETURN(task.pod, ParseStoredJson(row, 5, "task " + task.workflow_id + "/" + task.name));
  task.retry = static_cast<int>(row.Int(6));
  task.status_changed_ms = row.Int(7);
  task.started_ms = row.Int(8);
  task.finished_ms = row.Int(9);
  task.exit_code = static_cast<int>(row.Int(10));
  task.message = row.Text(11);
  return task;
}

// The record `known` holds for the workflow of `row` (kWorkflowColumns) when it is at the stored
// version; nullptr otherwise.
const WorkflowRecord* KnownAtVersion(const std::unordered_map<std::string, WorkflowRecord>* known,
                                     const SqlRow& row) {
  if (known == nullptr) return nullptr;
  auto it = known->find(row.Text(0));
  return it != known->end() && it->second.version == row.Int(7) ? &it->second : nullptr;
}

// Shared WHERE clause of ListWorkflows' two queries.
std::string WorkflowWhere(const WorkflowFilter& filter, SqlParams& params) {
  std::string where = " WHERE 1 = 1";
  if (filter.pool) where += " AND pool = " + Param(params, *filter.pool);
  if (filter.user) where += " AND user_name = " + Param(params, *filter.user);
  if (filter.status) where += " AND status = " + Param(params, *filter.status);
  if (filter.unfinished_only) where += " AND finished = 0";
  if (filter.finished_only) where += " AND finished = 1";
  if (filter.after) {
    const char* op = filter.newest_first ? " < " : " > ";
    const std::string ms = Param(params, filter.after->submitted_ms);
    where += " AND (submitted_ms" + std::string(op) + ms + " OR (submitted_ms = " + ms + " AND id" +
             op + Param(params, filter.after->id) + "))";
  }
  where +=
      filter.newest_first ? " ORDER BY submitted_ms DESC, id DESC" : " ORDER BY submitted_ms, id";
  if (filter.limit > 0) where += " LIMIT " + Param(params, int64_t{filter.limit});
  return where;
}

}  // namespace

Result<WorkflowRecord> SqlStore::LoadWorkflow(SqlConnection& db, std::string_view id) {
  ASSIGN_OR_RETURN(auto rows, db.Query("SELECT " + std::string(kWorkflowColumns) +
                                           " FROM workflows WHERE id = $1",
                                       {std::string(id)}));
  if (rows.empty()) return NotFoundError("workflow " + std::string(id) + " not found");
  ASSIGN_OR_RETURN(WorkflowRecord workflow, WorkflowFromRow(rows[0]));
  ASSIGN_OR_RETURN(auto task_rows,
                   db.Query("SELECT " + std::string(kTaskColumns) +
                                " FROM tasks WHERE workflow_id = $1 ORDER BY position",
                            {std::string(id)}));
  workflow.tasks.reserve(task_rows.size());
  for (const SqlRow& row : task_rows) {
    ASSIGN_OR_RETURN(TaskRecord task, TaskFromRow(row));
    workflow.tasks.push_back(std::move(task));
  }
  return workflow;
}

Status SqlStore::InsertTasks(SqlConnection& db, std::string_view workflow_id,
                             const std::vector<TaskRecord>& tasks,
                             const std::vector<std::string>* pods) {
  std::vector<TaskRow> rows;
  rows.reserve(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    rows.push_back(TaskRow{workflow_id, static_cast<int64_t>(i), &tasks[i],
                           pods != nullptr ? &(*pods)[i] : nullptr});
  }
  return InsertTaskRows(db, rows, /*defer=*/false);
}

Result<WorkflowRecord> SqlStore::GetWorkflow(std::string_view id) {
  return Run(Mode::kRead, [&](SqlConnection& db) { return LoadWorkflow(db, id); });
}

Result<std::optional<WorkflowRecord>> SqlStore::GetWorkflowIfChanged(std::string_view id,
                                                                     int64_t known_version) {
  ASSIGN_OR_RETURN(
      auto version, Run(Mode::kStatement, [&](SqlConnection& db) -> Result<int64_t> {
        ASSIGN_OR_RETURN(
            auto rows, db.Query("SELECT version FROM workflows WHERE id = $1", {std::string(id)}));
        if (rows.empty()) {
          return NotFoundError("workflow " + std::string(id) + " not found");
        }
        return rows[0].Int(0);
      }));
  if (version == known_version) return std::optional<WorkflowRecord>();
  ASSIGN_OR_RETURN(WorkflowRecord workflow, GetWorkflow(id));
  return std::optional<WorkflowRecord>(std::move(workflow));
}

void SqlStore::GetWorkflowIfChangedAsync(std::string id, int64_t known_version,
                                         IfChangedDone done) {
  checker_.Push(VersionCheck{std::move(id), known_version, std::move(done)});
}

Result<std::unordered_map<std::string, int64_t>> SqlStore::Versions(
    const std::vector<std::string>& ids) {
  // Ids per statement: a power of two up to 64 (padded with the last id), so that at most 7
  // distinct SQL texts are prepared.
  constexpr size_t kIdsPerStatement = 64;
  std::unordered_map<std::string, int64_t> versions;
  for (size_t begin = 0; begin < ids.size();) {
    size_t n = std::min(kIdsPerStatement, std::bit_ceil(ids.size() - begin));
    size_t end = std::min(ids.size(), begin + n);
    SqlParams params;
    std::string sql = "SELECT id, version FROM workflows WHERE id IN (";
    for (size_t k = 0; k < n; ++k) {
      if (k > 0) sql += ", ";
      sql += "$" + std::to_string(k + 1);
      params.emplace_back(ids[std::min(begin + k, end - 1)]);
    }
    sql += ")";
    ASSIGN_OR_RETURN(
        auto rows, Run(Mode::kStatement, [&](SqlConnection& db) { return db.Query(sql, params); }));
    for (const SqlRow& row : rows) versions[std::string(row.Text(0))] = row.Int(1);
    begin = end;
  }
  return versions;
}

void SqlStore::CheckBatch(std::vector<VersionCheck>& batch) {
  // Many checks of a batch may name one workflow (a popular one, or a client polling).
  std::vector<std::string> ids;
  std::unordered_set<std::string_view> seen;
  for (const VersionCheck& check : batch) {
    if (seen.insert(check.id).second) ids.push_back(check.id);
  }
  auto versions = Versions(ids);
  // A changed workflow is loaded once for all its checks (it may be newer than the version just
  // read: still current as of each check).
  std::unordered_map<std::string, Result<WorkflowRecord>> loaded;
  for (VersionCheck& check : batch) {
    if (!versions.ok()) {
      check.done(versions.status());
      continue;
    }
    auto found = versions->find(check.id);
    if (found == versions->end()) {
      check.done(NotFoundError("workflow " + check.id + " not found"));
      continue;
    }
    if (found->second == check.known_version) {
      check.done(std::optional<WorkflowRecord>());
      continue;
    }
    auto it = loaded.find(check.id);
    if (it == loaded.end()) it = loaded.emplace(check.id, GetWorkflow(check.id)).first;
    if (!it->second.ok()) {
      check.done(it->second.status());
    } else {
      check.done(std::optional<WorkflowRecord>(*it->second));
    }
  }
}

Result<std::vector<WorkflowRecord>> SqlStore::ListWorkflows(const WorkflowFilter& filter) {
  SqlParams params;
  std::string where = WorkflowWhere(filter, params);
  std::string workflows_sql = "SELECT " + std::string(kWorkflowColumns) + " FROM workflows" + where;
  std::string tasks_sql = "SELECT t." + std::string(kTaskColumns) +
                          " FROM tasks t JOIN (SELECT id FROM workflows" + where +
                          ") w ON t.workflow_id = w.id ORDER BY t.workflow_id, t.position";
  return Run(Mode::kRead, [&](SqlConnection& db) -> Result<std::vector<WorkflowRecord>> {
    ASSIGN_OR_RETURN(auto rows, db.Query(workflows_sql, params));
    std::vector<WorkflowRecord> workflows;
    workflows.reserve(rows.size());
    // Position of each workflow whose tasks are still to be read (not copied from `known`).
    std::unordered_map<std::string, size_t> index;
    for (const SqlRow& row : rows) {
      if (const WorkflowRecord* held = KnownAtVersion(filter.known, row)) {
        workflows.push_back(*held);
        continue;
      }
      ASSIGN_OR_RETURN(WorkflowRecord workflow, WorkflowFromRow(row));
      index.emplace(workflow.id, workflows.size());
      workflows.push_back(std::move(workflow));
    }
    if (index.empty()) return workflows;
    ASSIGN_OR_RETURN(auto task_rows, db.Query(tasks_sql, params));
    for (const SqlRow& row : task_rows) {
      auto it = index.find(row.Text(0));  // the workflow_id column: checked before parsing
      if (it == index.end()) continue;
      ASSIGN_OR_RETURN(TaskRecord task, TaskFromRow(row));
      workflows[it->second].tasks.push_back(std::move(task));
    }
    return workflows;
  });
}

Status SqlStore::UpdateWorkflow(const WorkflowRecord& workflow) {
  return WriteWorkflow(workflow, nullptr);
}

Status SqlStore::UpdateWorkflowWithAudit(const WorkflowRecord& workflow, const AuditRecord& audit) {
  return WriteWorkflow(workflow, nullptr, &audit);
}

Status SqlStore::UpdateWorkflowAsLeader(const WorkflowRecord& workflow, const LeaseFence& fence) {
  return WriteWorkflow(workflow, &fence);
}

Status SqlStore::WriteWorkflow(const WorkflowRecord& workflow, const LeaseFence* fence,
                               const AuditRecord* audit) {
  RETURN_IF_ERROR(RequireNonEmpty(workflow.id, "workflow id"));
  ASSIGN_OR_RETURN(std::string spec, DumpJson(workflow.spec, "workflow " + workflow.id));
  const int64_t audit_at_ms = audit == nullptr ? 0 : AuditTime(*audit, clock_.NowMillis());
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Status {
    if (fence != nullptr) RETURN_IF_ERROR(HoldFence(db, *fence));
    ASSIGN_OR_RETURN(
        auto updated,
        db.Query("UPDATE workflows SET name = $2, pool = $3, user_name = $4, "
                 "status = $5, finished = $6, spec = $7, version = version + 1 "
                 "WHERE id = $1 AND version = $8 RETURNING version",
                 {workflow.id, workflow.name, workflow.pool, workflow.user, workflow.status,
                  int64_t{model::IsFinishedWorkflowText(workflow.status) ? 1 : 0}, spec,
                  workflow.version}));
    if (updated.empty()) {
      ASSIGN_OR_RETURN(auto rows,
                       db.Query("SELECT version FROM workflows WHERE id = $1", {workflow.id}));
      if (rows.empty()) return NotFoundError("workflow " + workflow.id + " not found");
      return AbortedError("workflow " + workflow.id + ": version " +
                          std::to_string(workflow.version) + " is stale (stored version is " +
                          std::to_string(rows[0].Int(0)) + "); reload and retry");
    }
    RETURN_IF_ERROR(db.Query("DELETE FROM tasks WHERE workflow_id = $1", {workflow.id}).status());
    RETURN_IF_ERROR(InsertTasks(db, workflow.id, workflow.tasks));
    if (audit == nullptr) return OkStatus();
    return InsertAudits(db, {AuditRow{audit, audit_at_ms}}, /*defer=*/false);
  });
}

}  // namespace gpupool::store
