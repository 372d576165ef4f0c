// `workflow submit`: the submission planned on the cached configs and nodes (submit::Submit),
// stored by the store's group commit, and planned again on fresh ones when its write finds the
// plan stale.

#include <future>
#include <memory>
#include <string>
#include <utility>

#include "common/strings.h"
#include "config/access.h"
#include "model/task_state.h"
#include "service/quota_configs.h"
#include "service/service_internal.h"
#include "service/snapshot_cache.h"
#include "store/store.h"
#include "submit/submit.h"
#include "submit/workflow.h"

namespace gpupool::service {

struct Service::PreparedSubmission {
  SubmitResult result;
  std::optional<store::WorkflowRecord> record;  // nullopt for a dry run
  store::AuditRecord audit;
  store::Store::Generations planned_on;  // the generations of the configs and nodes used
};

namespace {

using json = nlohmann::ordered_json;

// The pool-access decision of a submission, the only one: the HTTP layer leaves submissions'
// access to the service (RouteOptions::access_in_service), and submit::Submit assumes it. Taken
// before anything else, so a denied caller learns nothing of the pool and burns no workflow id.
Status CheckSubmitAccess(const Caller& caller, const std::string& pool,
                         const config::ConfigSet& configs) {
  Status access = config::CheckAccess(caller.roles, config::PoolSubmission(pool), configs);
  if (access.ok()) return access;
  std::string message = "access denied: user \"" + caller.user + "\" with roles " +
                        (caller.roles.empty() ? "(none)" : Join(caller.roles, ", ")) +
                        " may not submit to pool \"" + pool + "\": " + access.message();
  return access.code() == StatusCode::kInvalidArgument ? InvalidArgumentError(message)
                                                       : PermissionDeniedError(message);
}

// Plans a submission on the given configs and nodes (taking its workflow id).
Result<submit::SubmitPlan> PlanSubmission(store::Store& store, Service::SnapshotCache& cache,
                                          const Caller& caller, const SubmitRequest& request,
                                          const submit::WorkflowSpec& spec,
                                          const Service::SnapshotCache::Keyed& state) {
  const Snapshot& snap = *state.snapshot;
  NodesPtr submit_nodes = cache.NodesForSubmit(state.snapshot, state.nodes);
  submit::SubmitOptions options;
  options.platform_nodes = [&cache, snapshot = state.snapshot, submit_nodes](
                               std::string_view pool, std::string_view platform,
                               const json& merged_template) {
    return cache.PlatformNodes(snapshot, submit_nodes, pool, platform, merged_template);
  };
  options.platform_setup = [&cache, snapshot = state.snapshot](const config::Pool& pool,
                                                               std::string_view platform) {
    return cache.PlatformSetup(snapshot, pool, platform);
  };
  QuotaConfigs quota_configs = DecodeQuotaConfigs(snap.other);
  for (auto& [name, node_pool] : quota_configs.node_pools) {
    options.node_pools.push_back(std::move(node_pool));
  }
  for (auto& [name, queue] : quota_configs.queues) options.queues.push_back(std::move(queue));
  if (request.dry_run) {
    options.workflow_id = spec.name;
  } else {
    ASSIGN_OR_RETURN(int64_t seq, store.NextSequence("workflow"));
    options.workflow_id = spec.name + "-" + std::to_string(seq);
  }
  return submit::Submit(snap.set, *submit_nodes, submit::SubmitCaller{caller.user, caller.roles},
                        request.pool, spec, options);
}

// The result of a stored submission: the stored workflow's id and status (with an idempotency
// key, those of the workflow stored earlier).
SubmitResult Submitted(SubmitResult result, const store::WorkflowRecord& stored) {
  result.workflow_id = stored.id;
  result.status = stored.status;
  return result;
}

// A submission is planned on the cached configs and nodes and its write checks that they are
// still current; when they changed, it is planned again on fresh ones, up to this many times in
// all (then the kAborted refusal reaches the client: 409, submit again).
constexpr int kMaxPlans = 4;

bool IsStalePlan(const Status& status) {
  return status.code() == StatusCode::kAborted && status.message() == store::Store::kStalePlan;
}

// The stored workflow of a planned submission: its tasks pending up to the workflow's
// parallelism, waiting past it (the scheduling loop lets them in).
store::WorkflowRecord WorkflowRecordOf(submit::SubmitPlan& plan, submit::WorkflowSpec spec,
                                       const std::string& user, const std::string& idempotency_key,
                                       int64_t now_ms) {
  store::WorkflowRecord record;
  record.id = plan.workflow_id;
  record.name = plan.name;
  record.pool = plan.pool;
  record.user = user;
  record.status = ToString(model::WorkflowStatus::kPending);
  record.submitted_ms = now_ms;
  record.idempotency_key = idempotency_key;
  json tasks = json::array();
  for (const auto& t : plan.tasks) {
    tasks.push_back(json{{"group", t.group},
                         {"task", t.task},
                         {"platform", t.platform},
                         {"sim_duration_seconds", t.sim_duration_seconds},
                         {"sim_exit_code", t.sim_exit_code}});
  }
  // Assigned member by member: a braced initializer list would copy the document and the tasks.
  record.spec = json::object();
  record.spec["workflow"] = std::move(spec.document);  // parallelism and backoff_limit in it
  record.spec["queue"] = plan.queue;
  record.spec["priority"] = std::string(submit::PriorityName(plan.priority));
  record.spec["exec_timeout_seconds"] = plan.exec_timeout_seconds;
  record.spec["queue_timeout_seconds"] = plan.queue_timeout_seconds;
  record.spec["tasks"] = std::move(tasks);
  const size_t parallelism =
      spec.parallelism ? static_cast<size_t>(*spec.parallelism) : plan.tasks.size();
  for (auto& t : plan.tasks) {
    store::TaskRecord task;
    task.group = t.group;
    task.name = t.task;
    task.status = ToString(record.tasks.size() < parallelism ? model::TaskStatus::kPending
                                                             : model::TaskStatus::kWaiting);
    task.pod = std::move(t.pod);
    task.status_changed_ms = record.submitted_ms;
    record.tasks.push_back(std::move(task));
  }
  return record;
}

}  // namespace

Result<Service::PreparedSubmission> Service::PrepareSubmission(const Caller& caller,
                                                               const SubmitRequest& request,
                                                               bool fresh, bool* refused_on_cache) {
  // A dry run stores nothing that could check its inputs, so it reads the generations.
  bool cached = !fresh && !request.dry_run;
  ASSIGN_OR_RETURN(SnapshotCache::Keyed state,
                   cached ? cache_->LastKeyed(store_) : cache_->GetKeyed(store_));
  if (Status access = CheckSubmitAccess(caller, request.pool, state.snapshot->set); !access.ok()) {
    *refused_on_cache = cached;  // the roles may have just changed: asked again on fresh configs
    return access;
  }
  submit::WorkflowSpec spec;
  if (request.workflow != nullptr) {
    spec = *request.workflow;
  } else {
    ASSIGN_OR_RETURN(
        spec, submit::ParseWorkflow(request.spec_text, request.file_name, request.set_values));
  }
  if (!request.node_pools.empty()) spec.node_pools = request.node_pools;  // --node-pools wins
  if (!request.queue.empty()) {                                           // --queue wins
    spec.queue = request.queue;
    spec.queue_origin = request.queue_origin;
  }
  auto plan = PlanSubmission(store_, *cache_, caller, request, spec, state);
  if (!plan.ok()) {
    *refused_on_cache = cached;
    return plan.status();
  }
  PreparedSubmission prepared;
  prepared.planned_on = state.generations;
  SubmitResult& result = prepared.result;
  result.name = plan->name;
  result.pool = plan->pool;
  result.queue = plan->queue;
  result.warnings = plan->warnings;
  result.task_count = static_cast<int>(plan->tasks.size());
  if (request.dry_run) {
    for (auto& t : plan->tasks) result.pods.push_back(std::move(t.pod));
    result.status = "DRY_RUN";
    return prepared;
  }
  store::WorkflowRecord& record = prepared.record.emplace(WorkflowRecordOf(
      *plan, std::move(spec), caller.user, request.idempotency_key, clock_.NowMillis()));
  store::AuditRecord& audit = prepared.audit;
  audit.user = caller.user;
  audit.source = caller.source;
  audit.action = "workflow submit";
  audit.target = record.id;
  audit.detail = "pool " + plan->pool + ", queue " + plan->queue;
  return prepared;
}

Result<SubmitResult> Service::SubmitWorkflow(const Caller& caller, const SubmitRequest& request) {
  // The asynchronous submission, waited for: one path for the CLI's local mode and the server.
  std::promise<Result<SubmitResult>> outcome;
  SubmitWorkflowAsync(caller, request, [&outcome](Result<SubmitResult> result) {
    outcome.set_value(std::move(result));
  });
  return outcome.get_future().get();
}

void Service::SubmitWorkflowAsync(const Caller& caller, const SubmitRequest& request,
                                  SubmitDone done) {
  SubmitAttempt(caller, request, 1, std::move(done));
}

void Service::Replan(const Caller& caller, const SubmitRequest& request, int attempt,
                     SubmitDone done) {
  replanner_->worker.Push([this, caller, request, attempt, done = std::move(done)]() mutable {
    SubmitAttempt(caller, request, attempt + 1, std::move(done));
  });
}

void Service::SubmitAttempt(const Caller& caller, const SubmitRequest& request, int attempt,
                            SubmitDone done) {
  bool refused_on_cache = false;
  Result<PreparedSubmission> prepared =
      PrepareSubmission(caller, request, attempt > 1, &refused_on_cache);
  if (!prepared.ok() && refused_on_cache && attempt < kMaxPlans) {
    // A refusal on cached configs and nodes stands only if they are still the current ones:
    // planned again on fresh ones, on the replanner's thread (reading them would block the I/O
    // loop this runs on).
    return Replan(caller, request, attempt, std::move(done));
  }
  if (!prepared.ok()) return done(prepared.status());
  if (!prepared->record) return done(std::move(prepared->result));
  // The audit record is written in the workflow's transaction (group-committed with concurrent
  // submissions); the HTTP layer writes no second record for a successful submission.
  std::string planned_id = prepared->record->id;
  store_.CreateWorkflowWithAuditAsync(
      std::move(*prepared->record), std::move(prepared->audit), prepared->planned_on,
      [this, caller, request, attempt, planned_id = std::move(planned_id),
       result = std::move(prepared->result),
       done = std::move(done)](Result<store::WorkflowRecord> stored) mutable {
        // Rare (a config or node write landed meanwhile): planned again on the replanner's
        // thread, so that the commit thread goes on committing.
        if (!stored.ok() && IsStalePlan(stored.status()) && attempt < kMaxPlans) {
          return Replan(caller, request, attempt, std::move(done));
        }
        if (!stored.ok()) return done(stored.status());
        result.existing = stored->id != planned_id;
        // Shared with the scheduling loop, which holds it until its next step: no copy here.
        auto record = std::make_shared<const store::WorkflowRecord>(std::move(*stored));
        if (!result.existing && submitted_) submitted_(record);
        done(Submitted(std::move(result), *record));
      });
}

}  // namespace gpupool::service
