// SqlStore: workflow creates and audit appends, group-committed by one commit thread.

#include <algorithm>
#include <bit>
#include <memory>
#include <unordered_set>

#include "model/task_state.h"
#include "store/sql_store.h"
#include "store/sql_store_internal.h"

namespace gpupool::store {
namespace {

using internal::AppendRow;
using internal::AuditRow;
using internal::AuditTime;
using internal::DumpJson;
using internal::InsertAudits;
using internal::InsertTaskRows;
using internal::RequireNonEmpty;
using internal::TaskRow;

}  // namespace

Result<SqlStore::CreateOutcome> SqlStore::CreateIn(SqlConnection& db, const PendingWrite& write) {
  const WorkflowRecord& workflow = *write.workflow;
  const std::string& spec = write.spec;
  SqlParam key =
      workflow.idempotency_key.empty() ? SqlParam(nullptr) : SqlParam(workflow.idempotency_key);
  auto find_by_key = [&]() -> Result<std::optional<WorkflowRecord>> {
    if (workflow.idempotency_key.empty()) return std::optional<WorkflowRecord>();
    ASSIGN_OR_RETURN(auto rows, db.Query("SELECT id FROM workflows WHERE idempotency_key = $1",
                                         {workflow.idempotency_key}));
    if (rows.empty()) return std::optional<WorkflowRecord>();
    ASSIGN_OR_RETURN(WorkflowRecord existing, LoadWorkflow(db, rows[0].Text(0)));
    return std::optional<WorkflowRecord>(std::move(existing));
  };
  CreateOutcome outcome;
  ASSIGN_OR_RETURN(outcome.existing, find_by_key());
  if (outcome.existing) return outcome;
  // DO NOTHING on any conflict (id or idempotency key), so a taken id is a refusal that leaves
  // the transaction (and the rest of its batch) usable. With PostgreSQL it waits for a concurrent
  // insert of the same key to commit, so the second lookup below sees it.
  ASSIGN_OR_RETURN(
      auto inserted,
      db.Query("INSERT INTO workflows (id, name, pool, user_name, status, finished, "
               "submitted_ms, spec, version, idempotency_key) "
               "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9) "
               "ON CONFLICT DO NOTHING RETURNING id",
               {workflow.id, workflow.name, workflow.pool, workflow.user, workflow.status,
                int64_t{model::IsFinishedWorkflowText(workflow.status) ? 1 : 0},
                workflow.submitted_ms, spec, key}));
  if (inserted.empty()) {
    ASSIGN_OR_RETURN(outcome.existing, find_by_key());
    if (!outcome.existing) {
      outcome.refused = AlreadyExistsError("workflow " + workflow.id + " already exists");
    }
    return outcome;
  }
  RETURN_IF_ERROR(InsertTasks(db, workflow.id, workflow.tasks, &write.pods));
  outcome.inserted = true;
  return outcome;
}

void SqlStore::Enqueue(PendingWrite* write) {
  write->queued_at = std::chrono::steady_clock::now();
  committer_.Push(write);
}

void SqlStore::GroupCommit(PendingWrite& write) {
  Enqueue(&write);
  write.done.wait(false);
}

void SqlStore::CommitBatch(std::vector<PendingWrite*>& batch) {
  WriteBatch(batch);
  for (PendingWrite* write : batch) {
    if (write->owned) {
      std::unique_ptr<PendingWrite> own(write);
      auto parts = std::move(write->owned);
      parts->done(Created(*write, std::move(parts->workflow)));
    } else {
      write->done.store(true);
      write->done.notify_one();
    }
  }
}

Status SqlStore::CreateTogether(SqlConnection& db, const std::vector<PendingWrite*>& todo,
                                const std::vector<size_t>& together,
                                std::vector<CreateOutcome>& outcomes) {
  // Rows per multi-row INSERT (8 parameters each): the largest power of two up to 64 that the
  // rest fills, so at most 7 distinct SQL texts (1, 2, 4, ..., 64 rows) and at most 7 statements
  // for 127 creates.
  constexpr size_t kWorkflowsPerInsert = 64;
  // Deferred: PostgreSQL sends them with the batch's COMMIT. A taken id (no ON CONFLICT clause)
  // fails the statement and with it the transaction; WriteBatch then writes the batch one create
  // at a time, where CreateIn refuses that create alone. Ids come from sequences, so that is rare.
  std::vector<TaskRow> tasks;
  for (size_t begin = 0; begin < together.size();) {
    size_t end = begin + std::min(kWorkflowsPerInsert, std::bit_floor(together.size() - begin));
    SqlParams params;
    params.reserve((end - begin) * 8);
    std::string sql =
        "INSERT INTO workflows (id, name, pool, user_name, status, finished, submitted_ms, spec, "
        "version) VALUES ";
    for (size_t k = begin; k < end; ++k) {
      const PendingWrite& write = *todo[together[k]];
      const WorkflowRecord& w = *write.workflow;
      AppendRow(
          sql, params,
          {w.id, w.name, w.pool, w.user, w.status,
           int64_t{model::IsFinishedWorkflowText(w.status) ? 1 : 0}, w.submitted_ms, write.spec},
          k == begin, "1");
      outcomes[together[k]].inserted = true;
      for (size_t i = 0; i < w.tasks.size(); ++i) {
        tasks.push_back(TaskRow{w.id, static_cast<int64_t>(i), &w.tasks[i], &write.pods[i]});
      }
    }
    RETURN_IF_ERROR(db.Defer(sql, std::move(params)));
    begin = end;
  }
  return InsertTaskRows(db, tasks, /*defer=*/true);
}

Status SqlStore::RefuseStalePlans(SqlConnection& db, const std::vector<PendingWrite*>& todo,
                                  std::vector<CreateOutcome>& outcomes) {
  bool any = std::any_of(todo.begin(), todo.end(),
                         [](const PendingWrite* w) { return w->if_generations.has_value(); });
  if (!any) return OkStatus();
  ASSIGN_OR_RETURN(Generations now, ReadGenerations(db));
  for (size_t i = 0; i < todo.size(); ++i) {
    const std::optional<Generations>& planned = todo[i]->if_generations;
    if (planned && (planned->configs != now.configs || planned->nodes != now.nodes)) {
      outcomes[i].refused = AbortedError(std::string(kStalePlan));
    }
  }
  return OkStatus();
}

std::vector<size_t> SqlStore::Together(const std::vector<PendingWrite*>& todo,
                                       const std::vector<CreateOutcome>& outcomes,
                                       bool one_by_one) {
  // The creates that go together: no idempotency key, and an id that no earlier write of the
  // batch has. Written first, each still gets the outcome it would get in batch order: none
  // can conflict with an earlier write of the batch (a key-less create conflicts on its id
  // only), and the later writes of its id still come after it. The other creates (keyed, or a
  // repeated id) run one at a time in batch order, as CreateIn. Refused creates write nothing.
  std::vector<size_t> together;
  if (one_by_one) return together;
  std::unordered_set<std::string_view> ids;
  for (size_t i = 0; i < todo.size(); ++i) {
    const WorkflowRecord* workflow = todo[i]->workflow;
    if (workflow == nullptr || !outcomes[i].refused.ok()) continue;
    if (ids.insert(workflow->id).second && workflow->idempotency_key.empty()) {
      together.push_back(i);
    }
  }
  return together;
}

void SqlStore::WriteBatch(const std::vector<PendingWrite*>& batch) {
  std::vector<PendingWrite*> todo = batch;
  // Multi-row statements write the batch's creates without an idempotency key, their tasks and
  // the audit records, deferred to the COMMIT (one round trip with PostgreSQL). A failing shared
  // statement does not tell whose row failed, so the batch is then rerun with one statement per
  // write, none deferred (and stays so), to find the write that fails.
  bool one_by_one = false;
  while (!todo.empty()) {
    std::vector<CreateOutcome> outcomes;
    size_t failed = todo.size();  // the write whose statement failed, if one did
    bool shared_failed = false;   // a shared statement (or one sent with them) failed
    auto write_batch = [&](SqlConnection& db) -> Status {
      outcomes.assign(todo.size(), CreateOutcome{});
      failed = todo.size();
      shared_failed = false;
      RETURN_IF_ERROR(RefuseStalePlans(db, todo, outcomes));
      std::vector<size_t> together = Together(todo, outcomes, one_by_one);
      std::vector<bool> is_together(todo.size(), false);
      for (size_t i : together) is_together[i] = true;
      shared_failed = true;  // SQLite runs deferred statements at once
      RETURN_IF_ERROR(CreateTogether(db, todo, together, outcomes));
      // The next statement sent carries the deferred ones: its failure may be theirs.
      bool deferred = !together.empty();
      std::vector<AuditRow> audited;
      for (size_t i = 0; i < todo.size(); ++i) {
        const PendingWrite& write = *todo[i];
        failed = i;
        shared_failed = deferred;
        if (write.workflow != nullptr) {
          if (!outcomes[i].refused.ok()) continue;  // planned against changed configs or nodes
          if (!is_together[i]) {
            ASSIGN_OR_RETURN(outcomes[i], CreateIn(db, write));
            deferred = false;
          }
          if (!outcomes[i].refused.ok()) continue;  // no audit record for a refused create
        }
        if (write.audit == nullptr) continue;
        AuditRow row{write.audit, write.audit_at_ms};
        if (one_by_one) {
          RETURN_IF_ERROR(InsertAudits(db, {row}, /*defer=*/false));
        } else {
          audited.push_back(row);
        }
      }
      failed = todo.size();
      shared_failed = !one_by_one;  // the COMMIT carries the deferred statements
      return InsertAudits(db, audited, /*defer=*/true);
    };
    // Writes are queued in order, so the batch's first one waited longest.
    BatchInfo info{todo.size(), batch.front()->queued_at};
    Status status = Run(Mode::kWrite, write_batch, &info);
    if (status.ok()) {
      for (size_t i = 0; i < todo.size(); ++i) {
        CreateOutcome& outcome = outcomes[i];
        todo[i]->status = outcome.refused;
        todo[i]->inserted = outcome.inserted;
        todo[i]->existing = std::move(outcome.existing);
      }
      return;
    }
    // A lost connection leaves the COMMIT's outcome unknown: the whole batch fails (retryable),
    // as rerunning it could refuse creates that did commit.
    if (shared_failed && !one_by_one && status.code() != StatusCode::kUnavailable) {
      one_by_one = true;
      continue;
    }
    if (failed >= todo.size()) {
      // Begin or commit failed: the whole batch failed (after the retries of Run).
      for (PendingWrite* write : todo) write->status = status;
      return;
    }
    // One write's statement failed: it fails alone; rerun the others without it.
    todo[failed]->status = status;
    todo.erase(todo.begin() + static_cast<ptrdiff_t>(failed));
  }
}

Result<WorkflowRecord> SqlStore::Created(PendingWrite& write, WorkflowRecord workflow) {
  if (!write.status.ok()) return write.status;
  if (write.existing) return std::move(*write.existing);
  workflow.version = 1;
  for (TaskRecord& task : workflow.tasks) task.workflow_id = workflow.id;
  return workflow;
}

// Encodes the workflow's spec and its tasks' pods on the caller's thread, not the commit
// thread, which every create waits on.
Status SqlStore::EncodeCreate(PendingWrite& write, const WorkflowRecord& workflow) {
  RETURN_IF_ERROR(RequireNonEmpty(workflow.id, "workflow id"));
  write.workflow = &workflow;
  ASSIGN_OR_RETURN(write.spec, DumpJson(workflow.spec, "workflow " + workflow.id));
  write.pods.clear();
  write.pods.reserve(workflow.tasks.size());
  for (const TaskRecord& task : workflow.tasks) {
    ASSIGN_OR_RETURN(std::string pod, DumpJson(task.pod, "task " + workflow.id + "/" + task.name));
    write.pods.push_back(std::move(pod));
  }
  return OkStatus();
}

Result<WorkflowRecord> SqlStore::CreateWorkflow(const WorkflowRecord& workflow) {
  PendingWrite write;
  RETURN_IF_ERROR(EncodeCreate(write, workflow));
  GroupCommit(write);
  if (!write.status.ok()) return write.status;
  if (write.existing) return std::move(*write.existing);
  return Created(write, workflow);
}

Status SqlStore::PrepareCreate(PendingWrite& write, const WorkflowRecord& workflow,
                               const AuditRecord& audit,
                               std::optional<Generations> if_generations) {
  RETURN_IF_ERROR(EncodeCreate(write, workflow));
  write.audit = &audit;
  write.audit_at_ms = AuditTime(audit, clock_.NowMillis());
  write.if_generations = if_generations;
  return OkStatus();
}

Result<WorkflowRecord> SqlStore::CreateWorkflowWithAudit(
    WorkflowRecord workflow, const AuditRecord& audit, std::optional<Generations> if_generations) {
  PendingWrite write;
  RETURN_IF_ERROR(PrepareCreate(write, workflow, audit, if_generations));
  GroupCommit(write);
  return Created(write, std::move(workflow));
}

void SqlStore::CreateWorkflowWithAuditAsync(WorkflowRecord workflow, AuditRecord audit,
                                            std::optional<Generations> if_generations,
                                            CreateDone done) {
  auto write = std::make_unique<PendingWrite>();
  write->owned = std::make_unique<PendingWrite::Owned>(
      PendingWrite::Owned{std::move(workflow), std::move(audit), std::move(done)});
  PendingWrite::Owned& owned = *write->owned;
  if (Status s = PrepareCreate(*write, owned.workflow, owned.audit, if_generations); !s.ok()) {
    return owned.done(s);
  }
  Enqueue(write.release());
}

}  // namespace gpupool::store
