#include "server/scheduling_loop.h"
// Over ~800 lines, knowingly for now: LeaderStep (~350 lines) is one cycle's steps in order
// (load, snapshot, drain, handed-in pods, decide, bind, evict, launch, poll). Issue 16 moves
// them to src/controller/ as named step functions; splitting the file before that would only
// scatter the one function.

#include <algorithm>
#include <charconv>
#include <chrono>
#include <iostream>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>

#include "common/json_text.h"
#include "config/kinds.h"
#include "config/membership.h"
#include "model/duration.h"
#include "model/k8s.h"
#include "model/node_pool.h"
#include "model/queue.h"
#include "model/quota_tree.h"
#include "scheduler/cluster_settings.h"
#include "server/access_control.h"
#include "server/handed_in_pods.h"
#include "server/machine_pools.h"
#include "server/workflow_runs.h"

namespace gpupool::server {

using Json = nlohmann::ordered_json;

namespace {

// The BACKEND config whose switches (enable_node_pools, ...) apply to the cluster this server
// schedules: the built-in pool's backend.
constexpr std::string_view kClusterBackend = config::kDefaultBackend;
constexpr char kPending[] = "PENDING";
constexpr char kScheduled[] = "SCHEDULED";
constexpr char kRunning[] = "RUNNING";
constexpr char kCompleted[] = "COMPLETED";
constexpr char kFailed[] = "FAILED";
constexpr char kCanceled[] = "CANCELED";
constexpr char kRescheduled[] = "RESCHEDULED";
constexpr char kQueueTimeout[] = "FAILED_QUEUE_TIMEOUT";

constexpr char kExecTimeout[] = "FAILED_EXEC_TIMEOUT";

bool IsFinishedTask(std::string_view status) {
  return status == kCompleted || status == kCanceled || status == kRescheduled ||
         status.starts_with("FAILED");
}

// The task's entry in the stored spec (the `workflow:` document, or an object holding it).
const Json* FindTaskSpec(const Json& spec, const std::string& group, const std::string& task) {
  const Json* doc = &spec;
  if (doc->is_object() && doc->contains("workflow") && (*doc)["workflow"].is_object()) {
    doc = &(*doc)["workflow"];
  }
  if (!doc->is_object()) return nullptr;
  auto find_in = [&](const Json& tasks) -> const Json* {
    if (!tasks.is_array()) return nullptr;
    for (const auto& t : tasks) {
      if (t.is_object() && t.value("name", "") == task) return &t;
    }
    return nullptr;
  };
  if (doc->contains("groups") && (*doc)["groups"].is_array()) {
    for (const auto& g : (*doc)["groups"]) {
      if (g.is_object() && g.value("name", "") == group && g.contains("tasks")) {
        if (const Json* t = find_in(g["tasks"])) return t;
      }
    }
  }
  if (doc->contains("tasks")) return find_in((*doc)["tasks"]);
  return nullptr;
}

std::optional<int64_t> DurationMs(const Json* value) {
  if (value == nullptr || value->is_null()) return std::nullopt;
  if (value->is_number_integer()) return value->get<int64_t>() * 1000;
  if (value->is_number()) return static_cast<int64_t>(value->get<double>() * 1000);
  if (value->is_string()) {
    auto seconds = model::ParseDurationSeconds(value->get<std::string>());
    if (seconds.ok()) return *seconds * 1000;
  }
  return std::nullopt;
}

const Json* Field(const Json* object, const char* name) {
  if (object == nullptr || !object->is_object()) return nullptr;
  auto it = object->find(name);
  return it == object->end() ? nullptr : &*it;
}

// What the loop needs to know about one workflow, from its spec and its pool.
struct RunPolicy {
  std::optional<int64_t> queue_timeout_ms;
  std::optional<int64_t> exec_timeout_ms;
  std::vector<config::ExitAction> pool_exit_actions;
};

RunPolicy PolicyFor(const store::WorkflowRecord& workflow, const config::ConfigSet& configs) {
  RunPolicy policy;
  // The service stores the effective timeouts (workflow value, else the pool default) at the top.
  if (const Json* v = Field(&workflow.spec, "queue_timeout_seconds"); v && v->is_number_integer()) {
    policy.queue_timeout_ms = v->get<int64_t>() * 1000;
  }
  if (const Json* v = Field(&workflow.spec, "exec_timeout_seconds"); v && v->is_number_integer()) {
    policy.exec_timeout_ms = v->get<int64_t>() * 1000;
  }
  const Json* doc = &workflow.spec;
  if (const Json* inner = Field(doc, "workflow"); inner != nullptr) doc = inner;
  const Json* timeout = Field(doc, "timeout");
  if (!policy.queue_timeout_ms)
    policy.queue_timeout_ms = DurationMs(Field(timeout, "queue_timeout"));
  if (!policy.exec_timeout_ms) policy.exec_timeout_ms = DurationMs(Field(timeout, "exec_timeout"));
  if (const config::Pool* pool = configs.FindPool(workflow.pool); pool != nullptr) {
    if (!policy.queue_timeout_ms) {
      policy.queue_timeout_ms = config::EffectiveSeconds(pool->default_queue_timeout) * 1000;
    }
    if (!policy.exec_timeout_ms) {
      policy.exec_timeout_ms = config::EffectiveSeconds(pool->default_exec_timeout) * 1000;
    }
    policy.pool_exit_actions = pool->default_exit_actions;
  }
  return policy;
}

// COMPLETE | FAIL | RESCHEDULE for an exit code.
std::string ExitActionFor(const Json* task_spec, const RunPolicy& policy, int exit_code) {
  if (const Json* actions = Field(task_spec, "exitActions"); actions && actions->is_object()) {
    std::vector<config::ExitAction> task_actions;
    for (const auto& [action, codes] : actions->items()) {
      if (!codes.is_string() && !codes.is_number_integer()) continue;
      std::string text = codes.is_string() ? codes.get<std::string>() : DumpJson(codes);
      auto ranges = config::ParseExitCodes(text);
      if (!ranges.ok()) continue;
      std::string upper;
      for (char c : action) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      task_actions.push_back({upper, text, *ranges});
    }
    if (auto match = config::MatchExitAction(task_actions, exit_code)) return *match;
  }
  if (auto match = config::MatchExitAction(policy.pool_exit_actions, exit_code)) return *match;
  return exit_code == 0 ? "COMPLETE" : "FAIL";
}

void SetStatus(store::TaskRecord& task, const char* status, int64_t now_ms, Counter* counter) {
  counter->Increment({task.status, status});
  task.status = status;
  task.status_changed_ms = now_ms;
}

// A workflow's status from its tasks' latest attempts.
std::string WorkflowStatus(const std::vector<store::TaskRecord>& tasks) {
  bool all_done = true, any_running = false, any_scheduled = false;
  std::string failure;
  bool any_canceled = false;
  for (const auto& task : tasks) {
    if (task.status == kRescheduled) continue;
    if (task.status.starts_with("FAILED") && failure.empty()) failure = task.status;
    if (task.status == kCanceled) any_canceled = true;
    if (!IsFinishedTask(task.status)) all_done = false;
    if (task.status == kRunning) any_running = true;
    if (task.status == kScheduled) any_scheduled = true;
  }
  if (!failure.empty()) return failure;
  if (all_done) return any_canceled ? kCanceled : kCompleted;
  if (any_running) return kRunning;
  if (any_scheduled) return kScheduled;
  return kPending;
}

// A JSON string holding a whole decimal integer in int64's range ("30", "-1"), else nothing.
// Parses the stored string in place: strtoll over a copy (`get<std::string>().c_str()`) left its
// end pointer in a destroyed temporary, so the check after it read freed memory.
std::optional<int64_t> WholeInteger(const Json* value) {
  if (value == nullptr || !value->is_string()) return std::nullopt;
  const std::string& text = value->get_ref<const std::string&>();
  const char* last = text.data() + text.size();
  int64_t parsed = 0;
  auto [end, error] = std::from_chars(text.data(), last, parsed);
  if (text.empty() || error != std::errc() || end != last) return std::nullopt;
  return parsed;
}

// The namespace of a pool's pods on a Kubernetes backend: its BACKEND config's k8s_namespace
// ("" = the backend's default).
std::string PodNamespace(const config::ConfigSet& configs, const std::string& pool_name) {
  const config::Pool* pool = configs.FindPool(pool_name);
  const config::Backend* backend = pool ? configs.FindBackend(pool->backend) : nullptr;
  return backend ? backend->k8s_namespace : "";
}

// The simulated run of a task: pod annotations gpupool.io/sim-duration-seconds and
// gpupool.io/sim-exit-code (written by the service), else the task's sim_duration / sim_exit_code
// in the stored spec, else the default duration and exit code 0.
// Backends that run tasks for real get the pod, the exec timeout and whether the task is adopted
// from an earlier leader (`adopt`: find it, never start it again); a Kubernetes backend, the
// namespace of the pool's pods.
backend::TaskLaunch LaunchFor(std::string key, const store::TaskRecord& task, const Json* spec,
                              int64_t start_ms, int64_t default_duration_ms,
                              const RunPolicy& policy, bool adopt, std::string pod_namespace) {
  backend::TaskLaunch launch;
  launch.key = std::move(key);
  launch.node = task.node;
  launch.start_ms = start_ms;
  launch.pod = task.pod;
  launch.exec_timeout_ms = policy.exec_timeout_ms;
  launch.adopt = adopt;
  launch.namespace_ = std::move(pod_namespace);
  launch.duration_ms = DurationMs(Field(spec, "sim_duration")).value_or(default_duration_ms);
  launch.exit_code = 0;
  if (const Json* code = Field(spec, "sim_exit_code"); code && code->is_number_integer()) {
    launch.exit_code = code->get<int>();
  }
  const Json* annotations = Field(Field(&task.pod, "metadata"), "annotations");
  std::optional<int64_t> seconds =
      WholeInteger(Field(annotations, "gpupool.io/sim-duration-seconds"));
  if (seconds && *seconds >= 0 && *seconds <= std::numeric_limits<int64_t>::max() / 1000) {
    launch.duration_ms = *seconds * 1000;
  }
  std::optional<int64_t> code = WholeInteger(Field(annotations, "gpupool.io/sim-exit-code"));
  if (code && *code >= std::numeric_limits<int>::min() &&
      *code <= std::numeric_limits<int>::max()) {
    launch.exit_code = static_cast<int>(*code);
  }
  return launch;
}

std::string SnapshotPodName(const std::string& workflow_id, size_t index) {
  return workflow_id + "." + std::to_string(index);
}

// Tells the backend why each task the cycle left pending stays so (every cycle: the backend
// writes only what changed), and Kills the reported tasks that ended without a launch.
void ReportPendingTasks(backend::Backend& backend, std::set<std::string>& reported,
                        const std::vector<store::WorkflowRecord>& workflows,
                        const TaskPodIndex& pod_index, const scheduler::CycleResult& cycle,
                        const config::ConfigSet& configs) {
  std::set<std::string> still_pending;
  for (const auto& pending : cycle.unschedulable) {
    auto it = pod_index.find(pending.pod);
    if (it == pod_index.end()) continue;
    const auto& wf = workflows[it->second.first];
    const auto& task = wf.tasks[it->second.second];
    if (task.status != kPending) continue;
    backend::Unschedulable report;
    report.task_key = TaskKey(wf.id, task);
    report.task_pod = &task.pod;
    report.namespace_ = PodNamespace(configs, wf.pool);
    report.message = pending.reason;
    backend.ReportUnschedulable(report);
    still_pending.insert(report.task_key);
    reported.insert(std::move(report.task_key));
  }
  if (reported.size() == still_pending.size()) return;
  std::unordered_map<std::string, std::string_view> status;  // of the reported tasks
  for (const auto& wf : workflows) {
    for (const auto& task : wf.tasks) {
      std::string key = TaskKey(wf.id, task);
      if (reported.contains(key)) status[key] = task.status;
    }
  }
  for (auto it = reported.begin(); it != reported.end();) {
    if (still_pending.contains(*it)) {
      ++it;
      continue;
    }
    auto found = status.find(*it);
    std::string_view now = found == status.end() ? std::string_view(kCanceled) : found->second;
    if (now == kPending) {  // pending and not reported this cycle: the next one says
      ++it;
      continue;
    }
    // Bound (its launch takes the pod over) or ended (what the backend made for it goes).
    if (IsFinishedTask(now)) (void)backend.Kill(*it);
    it = reported.erase(it);
  }
}

}  // namespace

std::string TaskKey(const std::string& workflow_id, const store::TaskRecord& task) {
  return workflow_id + "/" + task.group + "/" + task.name + "/" + std::to_string(task.retry);
}

SchedulingLoop::SchedulingLoop(store::Store& store, backend::Backend& backend, const Clock& clock,
                               Registry& registry, LoopOptions options)
    : store_(store),
      backend_(backend),
      clock_(clock),
      options_(std::move(options)),
      scheduler_(options_.scheduler),
      evictions_(options_.refused_eviction_backoff_ms) {
  leader_gauge_ = registry.AddGauge("gpupool_scheduler_leader",
                                    "1 when this server holds the scheduler lease.");
  pending_gauge_ = registry.AddGauge("gpupool_pending_pods", "Pods waiting to be scheduled.");
  running_gauge_ = registry.AddGauge("gpupool_running_pods", "Pods scheduled or running.");
  fair_share_gauge_ = registry.AddGauge("gpupool_queue_fair_share",
                                        "Fair share per queue, node pool and resource "
                                        "(gpu and cpu in milli-units, memory in bytes).",
                                        {"queue", "node_pool", "resource"});
  allocated_gauge_ =
      registry.AddGauge("gpupool_queue_allocated", "Allocation per queue, node pool and resource.",
                        {"queue", "node_pool", "resource"});
  deserved_gauge_ = registry.AddGauge("gpupool_queue_deserved",
                                      "Deserved quota per queue, node pool and resource.",
                                      {"queue", "node_pool", "resource"});
  cycle_seconds_ =
      registry.AddHistogram("gpupool_scheduling_cycle_seconds",
                            "Duration of one scheduling step of the leader.", {}, LatencyBuckets());
  transitions_ =
      registry.AddCounter("gpupool_task_transitions_total",
                          "Task status transitions made by the scheduling loop.", {"from", "to"});
  step_errors_ = registry.AddCounter(
      "gpupool_scheduling_step_errors_total",
      "Scheduling steps that failed (step) or whose machine-pool part failed (machine_pools).",
      {"part"});
}

SchedulingLoop::~SchedulingLoop() { Stop(); }

// Only the leader's view is current: a follower (or a former leader) exports none, so that a sum
// or max over the servers' /metrics counts the cluster once.
void SchedulingLoop::ClearLeaderGauges() {
  pending_gauge_->ReplaceAll({});
  running_gauge_->ReplaceAll({});
  fair_share_gauge_->ReplaceAll({});
  allocated_gauge_->ReplaceAll({});
  deserved_gauge_->ReplaceAll({});
}

void SchedulingLoop::Start() {
  stop_ = false;
  thread_ = std::thread([this] {
    std::string last_error;
    while (!stop_.load()) {
      auto stats = Step();
      std::string error = !stats.ok() ? stats.status().message() : stats->machine_pool_error;
      // Reported once per distinct message, so a lasting fault does not flood the log.
      if (!error.empty() && error != last_error) {
        std::cerr << "gpupool serve: scheduling step: " << error << "\n";
      }
      last_error = std::move(error);
      for (int64_t waited = 0; waited < options_.interval_ms && !stop_.load(); waited += 10) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  });
}

// A node carrying the labels of two node pools is scheduled in the first by name (the
// scheduler's rule); it is logged whenever the set of such nodes changes, never silently.
void SchedulingLoop::ReportNodePoolConflicts(const scheduler::ClusterSnapshot& snapshot) {
  std::map<std::string, model::NodePool> pools;
  for (const auto& pool : snapshot.node_pools) pools[pool.name] = pool;
  std::string report;
  for (const auto& node : snapshot.nodes) {
    auto matches = model::MatchingNodePools(node, pools);
    if (matches.size() > 1) {
      report += "gpupool serve: " + model::NodePoolConflictMessage(node.name, matches) + "\n";
    }
  }
  if (report != node_pool_conflicts_ && !report.empty()) std::cerr << report;
  node_pool_conflicts_ = std::move(report);
}

void SchedulingLoop::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (leader_.exchange(false)) (void)store_.ReleaseLease(options_.lease_name, options_.holder);
}

Result<StepStats> SchedulingLoop::Step() {
  StepStats stats;
  int64_t now = clock_.NowMillis();
  // The lease runs on the database's clock: servers whose clocks disagree still agree on it.
  auto lease = store_.TryAcquireLease(options_.lease_name, options_.holder, std::nullopt,
                                      options_.lease_ttl_ms);
  if (!lease.ok()) {
    leader_ = false;
    leader_gauge_->Set({}, 0);
    ClearLeaderGauges();
    return lease.status();
  }
  if (!*lease) {
    if (leader_.exchange(false)) {
      // Lost the lease: forget what we ran; the new leader re-adopts from the store.
      for (const auto& key : launched_) (void)backend_.Kill(key);
      launched_.clear();
      exits_.clear();
      evictions_.Clear();
    }
    adopted_ = false;
    leader_gauge_->Set({}, 0);
    ClearLeaderGauges();
    return stats;
  }
  leader_ = true;
  leader_gauge_->Set({}, 1);
  stats.leader = true;
  auto start = std::chrono::steady_clock::now();
  Status status = LeaderStep(now, stats);
  cycle_seconds_->Observe(
      {}, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (!status.ok()) {
    step_errors_->Increment({"step"});
    return status;
  }
  return stats;
}

Status SchedulingLoop::LeaderStep(int64_t now, StepStats& stats) {
  store::WorkflowFilter filter;
  filter.unfinished_only = true;
  filter.limit = 0;
  ASSIGN_OR_RETURN(std::vector<store::WorkflowRecord> workflows, store_.ListWorkflows(filter));
  ASSIGN_OR_RETURN(config::ConfigSet configs, LoadConfigSet(store_));
  // The backend runs tasks on the nodes the store knows (imported, or launched by machine pools).
  ASSIGN_OR_RETURN(std::vector<store::NodeRecord> node_records, store_.ListNodes());
  std::vector<std::string> node_names;
  for (const auto& record : node_records) node_names.push_back(record.name);
  backend_.SetKnownNodes(node_names);

  // 1. Re-adopt running tasks after becoming leader.
  if (!adopted_) {
    for (const auto& wf : workflows) {
      for (const auto& task : wf.tasks) {
        if (task.status != kRunning) continue;
        const Json* spec = FindTaskSpec(wf.spec, task.group, task.name);
        backend::TaskLaunch launch = LaunchFor(
            TaskKey(wf.id, task), task, spec, task.started_ms, options_.default_sim_duration_ms,
            PolicyFor(wf, configs), /*adopt=*/true, PodNamespace(configs, wf.pool));
        if (backend_.Launch(launch).ok()) launched_.insert(launch.key);
      }
    }
    adopted_ = true;
  }

  // 2. Collect exits (kept until applied, in case a write fails).
  for (auto& exit : backend_.Poll(now)) {
    launched_.erase(exit.key);
    exits_[exit.key] = exit;
  }
  std::map<std::string, std::string> refusals;  // task key -> its message
  std::set<std::string> evicted_now;            // requeued by the cluster's eviction this step
  for (const auto& refused : backend_.RefusedEvictions()) {
    refusals[refused.key] = evictions_.Refused(refused, now);
  }

  std::vector<bool> changed(workflows.size(), false);
  std::vector<RunLimits> limits;  // parallelism and backoff limit (server/workflow_runs.h)
  limits.reserve(workflows.size());
  for (const auto& wf : workflows) limits.push_back(RunLimitsOf(wf));
  std::vector<RunPolicy> policies;
  policies.reserve(workflows.size());
  std::set<std::string> running_keys;
  for (size_t w = 0; w < workflows.size(); ++w) {
    store::WorkflowRecord& wf = workflows[w];
    policies.push_back(PolicyFor(wf, configs));
    const RunPolicy& policy = policies.back();
    std::vector<store::TaskRecord> added;
    for (auto& task : wf.tasks) {
      std::string key = TaskKey(wf.id, task);
      const Json* spec = FindTaskSpec(wf.spec, task.group, task.name);
      if (task.status == kRunning) {
        auto exit = exits_.find(key);
        if (exit != exits_.end() && exit->second.evicted) {
          // An eviction the cluster carried out (backend::EvictionStart::kInFlight): requeued.
          task.message = evictions_.Evicted(key).value_or("evicted by the cluster");
          evicted_now.insert(key);
          task.node.clear();
          task.started_ms = 0;
          SetStatus(task, kPending, now, transitions_);
          ++stats.evicted;
          changed[w] = true;
        } else if (exit != exits_.end()) {
          task.exit_code = exit->second.exit_code;
          task.finished_ms = exit->second.finished_ms;
          const std::string why =
              exit->second.reason.empty() ? "" : " (" + exit->second.reason + ")";
          std::string action = ExitActionFor(spec, policy, task.exit_code);
          const BackoffDecision backoff =
              action == "FAIL" ? DecideBackoff(wf, limits[w]) : BackoffDecision{};
          if ((action == "RESCHEDULE" && task.retry < options_.max_retries) || backoff.retry) {
            SetStatus(task, kRescheduled, now, transitions_);
            task.message = "exit code " + std::to_string(task.exit_code) + why + ": " +
                           (backoff.retry ? backoff.words : "rescheduled");
            store::TaskRecord next = task;
            next.retry = task.retry + 1;
            next.node.clear();
            next.started_ms = next.finished_ms = 0;
            next.exit_code = 0;
            next.message.clear();
            next.status = kPending;
            next.status_changed_ms = now;
            added.push_back(std::move(next));
          } else if (action == "COMPLETE") {
            SetStatus(task, kCompleted, now, transitions_);
          } else {
            SetStatus(task, kFailed, now, transitions_);
            task.message = "exit code " + std::to_string(task.exit_code) + why +
                           (action == "RESCHEDULE" ? " (retries exhausted)" : "") +
                           (backoff.words.empty() ? "" : ": " + backoff.words);
          }
          ++stats.finished;
          changed[w] = true;
        } else if (policy.exec_timeout_ms && now - task.started_ms > *policy.exec_timeout_ms) {
          (void)backend_.Kill(key);
          launched_.erase(key);
          SetStatus(task, kExecTimeout, now, transitions_);
          task.finished_ms = now;
          task.message = "ran longer than the exec timeout of " +
                         model::FormatDuration(*policy.exec_timeout_ms / 1000);
          ++stats.timed_out;
          changed[w] = true;
        } else {
          running_keys.insert(key);
          if (auto refused = refusals.find(key); refused != refusals.end()) {
            task.message = refused->second;
            changed[w] = true;
          }
          if (!launched_.contains(key)) {  // e.g. lost by a backend restart: adopt again
            backend::TaskLaunch launch = LaunchFor(key, task, spec, task.started_ms,
                                                   options_.default_sim_duration_ms, policy,
                                                   /*adopt=*/true, PodNamespace(configs, wf.pool));
            if (backend_.Launch(launch).ok()) launched_.insert(key);
          }
        }
      } else if (task.status == kScheduled) {
        // Launch first (idempotent; if the write below loses a race, the next step kills it).
        backend::TaskLaunch launch =
            LaunchFor(key, task, spec, now, options_.default_sim_duration_ms, policy,
                      /*adopt=*/false, PodNamespace(configs, wf.pool));
        Status launched = backend_.Launch(launch);
        if (launched.ok()) {
          launched_.insert(key);
          task.started_ms = now;
          SetStatus(task, kRunning, now, transitions_);
          running_keys.insert(key);
          ++stats.launched;
        } else {
          SetStatus(task, kFailed, now, transitions_);
          task.finished_ms = now;
          task.message = "backend: " + launched.message();
        }
        changed[w] = true;
      } else if (task.status == kPending) {
        // A task let in under a parallelism waited its turn first: its queue time starts then.
        int64_t since =
            task.retry == 0 && !limits[w].parallelism ? wf.submitted_ms : task.status_changed_ms;
        if (policy.queue_timeout_ms && now - since > *policy.queue_timeout_ms) {
          SetStatus(task, kQueueTimeout, now, transitions_);
          task.finished_ms = now;
          task.message = "pending longer than the queue timeout of " +
                         model::FormatDuration(*policy.queue_timeout_ms / 1000);
          ++stats.timed_out;
          changed[w] = true;
        }
      }
    }
    for (auto& task : added) wf.tasks.push_back(std::move(task));
  }

  // A failed task fails its workflow: stop the rest of it.
  for (size_t w = 0; w < workflows.size(); ++w) {
    auto& wf = workflows[w];
    if (!WorkflowStatus(wf.tasks).starts_with("FAILED")) continue;
    for (auto& task : wf.tasks) {
      if (IsFinishedTask(task.status)) continue;
      std::string key = TaskKey(wf.id, task);
      running_keys.erase(key);
      SetStatus(task, kCanceled, now, transitions_);
      task.message = "canceled: another task of the workflow failed";
      changed[w] = true;
    }
  }

  // Tasks waiting for a place under their workflow's parallelism take the places freed above.
  for (size_t w = 0; w < workflows.size(); ++w) {
    if (AdmitWaitingTasks(workflows[w], limits[w], now, transitions_) > 0) changed[w] = true;
  }

  // 5. One scheduler cycle.
  evictions_.Prune(running_keys, now);  // before the cycle: the pods they held enter it
  scheduler::ClusterSnapshot snapshot;
  // NoExecute taints tolerated for tolerationSeconds expire against this step's time; a bound
  // task's binding time is when it became SCHEDULED (RUNNING: its launch, right after).
  snapshot.now_ms = now;
  for (const auto& node : node_records) {
    auto parsed = model::NodeFromJson(node.object);
    if (parsed.ok()) snapshot.nodes.push_back(std::move(*parsed));
  }
  ASSIGN_OR_RETURN(auto queue_configs, store_.ListConfigs("QUEUE"));
  for (const auto& record : queue_configs) {
    auto queue = model::QueueFromJson(record.body, record.name);
    if (queue.ok()) snapshot.queues.push_back(std::move(*queue));
  }
  ASSIGN_OR_RETURN(auto pool_configs, store_.ListConfigs("NODE_POOL"));
  for (const auto& record : pool_configs) {
    auto pool = model::NodePoolFromJson(record.body, record.name);
    if (pool.ok()) snapshot.node_pools.push_back(std::move(*pool));
  }
  ASSIGN_OR_RETURN(auto budget_configs, store_.ListConfigs("POD_DISRUPTION_BUDGET"));
  for (const auto& record : budget_configs) {
    auto budget = model::PodDisruptionBudgetFromSpec(record.body, record.name);
    if (budget.ok()) snapshot.disruption_budgets.push_back(std::move(*budget));
  }
  // Seed 003's administrator switches: those of BACKEND `default`, the cluster this server runs.
  scheduler::ClusterSettings settings;
  if (const config::Backend* cluster = configs.FindBackend(kClusterBackend)) {
    settings = {cluster->enable_node_pools, cluster->enable_cpu_quota, cluster->enable_over_quota};
  }
  if (settings.node_pools) ReportNodePoolConflicts(snapshot);
  scheduler::ApplyNodePoolSwitch(settings, snapshot.queues, snapshot.node_pools);
  service::AddImplicitPoolQueues(configs, snapshot.nodes, snapshot.node_pools, snapshot.queues);
  std::unordered_map<std::string, std::pair<size_t, size_t>> pod_index;  // name -> (wf, task)
  const std::set<std::string> node_backends = config::NodeBackends(snapshot.nodes);
  for (int pass = 0; pass < 2; ++pass) {  // bound pods first, then pending in arrival order
    for (size_t w = 0; w < workflows.size(); ++w) {
      auto& wf = workflows[w];
      for (size_t t = 0; t < wf.tasks.size(); ++t) {
        auto& task = wf.tasks[t];
        bool bound = task.status == kRunning || task.status == kScheduled;
        if (pass == 0 ? !bound : task.status != kPending) continue;
        Json pod = task.pod.is_object() ? task.pod : Json::object();
        std::string name = SnapshotPodName(wf.id, t);
        pod["metadata"]["name"] = name;
        pod["metadata"]["namespace"] = "default";
        if (pod["metadata"].contains("labels") &&
            pod["metadata"]["labels"].contains(scheduler::kGangLabel)) {
          pod["metadata"]["labels"][scheduler::kGangLabel] = wf.id + "." + task.group;
        }
        if (bound) pod["spec"]["nodeName"] = task.node;
        auto parsed = model::PodSchedulingFromJson(pod);
        if (!parsed.ok()) {
          if (!bound) {
            SetStatus(task, kFailed, now, transitions_);
            task.message = "pod cannot be scheduled: " + parsed.status().message();
            changed[w] = true;
          }
          continue;
        }
        pod_index[name] = {w, t};
        if (!bound && !node_backends.empty()) {
          const config::Pool* pool = configs.FindPool(wf.pool);
          config::ScopePodToBackend(*parsed, pool ? pool->backend : config::kDefaultBackend,
                                    node_backends);
        }
        if (bound && evictions_.Protected(TaskKey(wf.id, task), now)) {
          parsed->priority = std::max(parsed->priority.value_or(0),
                                      scheduler::kNonPreemptiblePriority);  // being evicted
        }
        if (bound) {
          const int64_t bound_at = task.status == kRunning && task.started_ms > 0
                                       ? task.started_ms
                                       : task.status_changed_ms;
          if (bound_at > 0) snapshot.bound_at_ms[name] = bound_at;
        }
        snapshot.pods.push_back(std::move(*parsed));
      }
    }
  }
  ApplySpotDrain(now, pod_index, workflows, changed, running_keys, snapshot, stats);
  // After the drain, which walks workflow pods only: handed-in pods have no workflow.
  const HandedIn handed_in = AddHandedInPods(backend_, pod_index, snapshot);
  evictions_.LeaveOutHeld(snapshot);
  scheduler::ApplyClusterSettings(settings, snapshot);
  scheduler::CycleResult cycle = scheduler_.RunCycle(snapshot);
  ApplyEvictions(now, cycle, pod_index, workflows, changed, running_keys, stats);
  for (const auto& held : evictions_.HoldBindings(cycle, snapshot)) {
    auto it = pod_index.find(held.pod);
    if (it == pod_index.end()) continue;
    auto& task = workflows[it->second.first].tasks[it->second.second];
    std::string message = "placed on node " + held.node +
                          " once the pods evicted there have left (the cluster is evicting them)";
    if (task.status == kPending && task.message != message) {
      task.message = std::move(message);
      changed[it->second.first] = true;
    }
  }
  for (const auto& binding : cycle.bindings) {
    auto it = pod_index.find(binding.pod);
    if (it == pod_index.end()) continue;
    auto& task = workflows[it->second.first].tasks[it->second.second];
    if (task.status != kPending) continue;
    task.node = binding.node;
    task.message.clear();
    SetStatus(task, kScheduled, now, transitions_);
    changed[it->second.first] = true;
    ++stats.bound;
  }
  for (const auto& pending : cycle.unschedulable) {
    auto it = pod_index.find(pending.pod);
    if (it == pod_index.end()) continue;
    auto& wf = workflows[it->second.first];
    auto& task = wf.tasks[it->second.second];
    if (!evicted_now.empty() && evicted_now.contains(TaskKey(wf.id, task))) {
      continue;  // its message says it was evicted, for this step
    }
    if (task.status == kPending && task.message != pending.reason) {
      task.message = pending.reason;
      changed[it->second.first] = true;
    }
  }

  // 6. Persist, then act on the backend.
  for (size_t w = 0; w < workflows.size(); ++w) {
    auto& wf = workflows[w];
    std::string status = WorkflowStatus(wf.tasks);
    if (status != wf.status) {
      wf.status = status;
      changed[w] = true;
    }
    if (!changed[w]) continue;
    Status written = store_.UpdateWorkflowAsLeader(wf, {options_.lease_name, options_.holder});
    if (!written.ok()) {
      ++stats.conflicts;
      // Undo this step's launches of that workflow; the next step decides again from the store.
      for (const auto& task : wf.tasks) {
        if (task.status == kRunning && task.started_ms == now) {
          std::string key = TaskKey(wf.id, task);
          (void)backend_.Kill(key);
          launched_.erase(key);
          running_keys.erase(key);
        }
      }
      // kFailedPrecondition: the lease is gone (this server stalled past it); stop here, the
      // next step finds itself a follower.
      if (written.code() != StatusCode::kAborted && written.code() != StatusCode::kNotFound) {
        return written;
      }
      continue;
    }
    for (const auto& task : wf.tasks) {
      // Applied: ended, or requeued by an eviction (the attempt's key runs again later).
      if (IsFinishedTask(task.status) || task.status == kPending) {
        exits_.erase(TaskKey(wf.id, task));
      }
    }
  }
  // 7. Machine pools: launch for what stays pending, mark ready, scale down, interruptions.
  std::vector<service::MachinePoolEvent> machine_pool_events;
  if (options_.machine_pools) {
    // A failure here (a machine pool naming an instance type the catalog lacks) must not stop
    // the rest of the step: it is reported and counted, and scheduling carries on.
    auto step =
        RunMachinePoolStep(store_, node_records, autoscaler::AfterCycle(snapshot, cycle),
                           options_.catalog ? *options_.catalog : autoscaler::Catalog::Builtin(),
                           now, options_.provision, {options_.lease_name, options_.holder});
    if (step.ok()) {
      stats.nodes_launched = step->launched;
      stats.nodes_removed = step->removed;
      for (const auto& event : step->events) {
        machine_pool_events.push_back({now, event.machine_pool, event.node, event.what});
      }
    } else {
      stats.machine_pool_error = step.status().message();
      step_errors_->Increment({"machine_pools"});
    }
  }

  // Kill what runs on the backend but is no longer RUNNING in the store (canceled, failed).
  for (auto it = launched_.begin(); it != launched_.end();) {
    if (!running_keys.contains(*it)) {
      (void)backend_.Kill(*it);
      it = launched_.erase(it);
    } else {
      ++it;
    }
  }

  ReportPendingTasks(backend_, reported_, workflows, pod_index, cycle, configs);
  ActOnHandedInPods(backend_, handed_in, cycle);

  // Gauges.
  for (const auto& wf : workflows) {
    for (const auto& task : wf.tasks) {
      if (task.status == kPending) ++stats.pending;
      if (task.status == kRunning || task.status == kScheduled) ++stats.running;
    }
  }
  pending_gauge_->Set({}, stats.pending);
  running_gauge_->Set({}, stats.running);
  static constexpr const char* kResources[] = {"gpu", "cpu", "memory"};
  std::map<LabelValues, double> fair, allocated, deserved;
  for (const auto& share : cycle.fair_share) {
    for (size_t r = 0; r < share.resources.size() && r < 3; ++r) {
      LabelValues labels = {share.queue, share.node_pool, kResources[r]};
      fair[labels] = static_cast<double>(share.resources[r].fair_share);
      allocated[labels] = static_cast<double>(share.resources[r].allocated);
      deserved[labels] = static_cast<double>(share.resources[r].deserved);
    }
  }
  fair_share_gauge_->ReplaceAll(std::move(fair));
  allocated_gauge_->ReplaceAll(std::move(allocated));
  deserved_gauge_->ReplaceAll(std::move(deserved));
  if (options_.views != nullptr) {
    PublishStep(now, std::move(workflows), snapshot, std::move(cycle),
                std::move(machine_pool_events));
  }
  return OkStatus();
}

// The cycle's victims. A backend that stops them at once (kStopped) has them requeued now and
// Kill'ed after the step's writes; one that asks the cluster (kInFlight) keeps them running
// until it answers (server/evictions.h).
void SchedulingLoop::ApplyEvictions(int64_t now, const scheduler::CycleResult& cycle,
                                    const TaskPodIndex& pod_index,
                                    std::vector<store::WorkflowRecord>& workflows,
                                    std::vector<bool>& changed, std::set<std::string>& running_keys,
                                    StepStats& stats) {
  for (const auto& eviction : cycle.evictions) {
    auto it = pod_index.find(eviction.pod);
    if (it == pod_index.end()) continue;
    auto& wf = workflows[it->second.first];
    auto& task = wf.tasks[it->second.second];
    if (task.status != kRunning && task.status != kScheduled) continue;
    std::string key = TaskKey(wf.id, task);
    const std::string reason(scheduler::EvictionReasonName(eviction.reason));
    changed[it->second.first] = true;
    if (task.status == kRunning &&
        backend_.Evict({key, reason, eviction.message,
                        eviction.reason != scheduler::EvictionReason::kNoExecute}) ==
            backend::EvictionStart::kInFlight) {
      evictions_.Asked(key, task.node, "evicted (" + reason + "): " + eviction.message);
      task.message = "being evicted (" + reason + "): " + eviction.message;
      continue;
    }
    running_keys.erase(key);
    task.node.clear();
    task.started_ms = 0;
    task.message = "evicted (" + reason + "): " + eviction.message;
    SetStatus(task, kPending, now, transitions_);
    ++stats.evicted;
  }
}

// Spot drain (autoscaler/provisioner.h): a task told to stop on an interrupted node says so in
// its message; once its grace period has ended (at the latest at the node's deadline) it leaves
// the node, pending again, before the cycle places it elsewhere.
void SchedulingLoop::ApplySpotDrain(
    int64_t now, const std::unordered_map<std::string, std::pair<size_t, size_t>>& pod_index,
    std::vector<store::WorkflowRecord>& workflows, std::vector<bool>& changed,
    std::set<std::string>& running_keys, scheduler::ClusterSnapshot& snapshot, StepStats& stats) {
  std::map<std::string, model::PodScheduling*> bound;
  for (auto& pod : snapshot.pods) {
    if (!pod.node_name.empty()) bound[scheduler::PodKey(pod)] = &pod;
  }
  for (const model::Node& node : snapshot.nodes) {
    for (const autoscaler::DrainEntry& entry : autoscaler::DrainEntries(node)) {
      auto pod = bound.find(entry.pod);
      auto at = pod_index.find(entry.pod);
      if (!entry.told_ms || pod == bound.end() || pod->second->node_name != node.name ||
          at == pod_index.end()) {
        continue;
      }
      auto& wf = workflows[at->second.first];
      auto& task = wf.tasks[at->second.second];
      if (task.status != kRunning && task.status != kScheduled) continue;
      if (entry.end_ms > now) {
        const std::string message =
            "stopping (spot interruption of node " + node.name + "): " + entry.why;
        if (task.message != message) {
          task.message = message;
          changed[at->second.first] = true;
        }
        continue;
      }
      running_keys.erase(TaskKey(wf.id, task));
      task.node.clear();
      task.started_ms = 0;
      task.message = "evicted (spot interruption of node " + node.name + "): " + entry.why;
      SetStatus(task, kPending, now, transitions_);
      changed[at->second.first] = true;
      ++stats.evicted;
      pod->second->node_name.clear();
      snapshot.bound_at_ms.erase(entry.pod);
    }
  }
}

// The step's state for the dashboard: the workflows as written, what the cycle knew, the positions
// of the pods it left pending.
void SchedulingLoop::PublishStep(int64_t now, std::vector<store::WorkflowRecord> workflows,
                                 const scheduler::ClusterSnapshot& snapshot,
                                 scheduler::CycleResult cycle,
                                 std::vector<service::MachinePoolEvent> events) {
  auto insight = std::make_shared<service::SchedulerInsight>();
  insight->shares = std::move(cycle.fair_share);
  insight->node_pools = std::move(cycle.node_pools);
  insight->queues = snapshot.queues;
  std::set<std::string> pending;
  for (const auto& pod : cycle.unschedulable) pending.insert(pod.pod);
  insight->positions = service::RankPendingPods(snapshot.pods, pending);
  auto state = std::make_shared<service::LiveState>();
  state->at_ms = now;
  state->workflows = std::move(workflows);
  state->insight = std::move(insight);
  state->events = std::move(events);
  options_.views->Publish(std::move(state));
}

}  // namespace gpupool::server
