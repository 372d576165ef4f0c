// The scheduling loop's steps over the tasks (controller/scheduling_loop.h, steps 1-4): load the
// step's state, re-adopt running tasks, collect exits, move each task along (exits, timeouts,
// launches), stop failed workflows and let waiting tasks in.

#include <string>
#include <utility>
#include <vector>

#include "controller/loop_step.h"
#include "model/duration.h"

namespace gpupool::controller {

using Json = nlohmann::ordered_json;

Status SchedulingLoop::LoadState(StepState& step) {
  for (const auto& created : TakeSubmitted()) memo_.KeepCreated(*created);
  store::WorkflowFilter filter;
  filter.unfinished_only = true;
  filter.limit = 0;
  filter.known = memo_.Known();
  ASSIGN_OR_RETURN(step.workflows, store_.ListWorkflows(filter));
  memo_.KeepWorkflows(step.workflows);
  ASSIGN_OR_RETURN(step.configs, service::LoadConfigSet(store_));
  // The backend runs tasks on the nodes the store knows (imported, or launched by machine pools).
  ASSIGN_OR_RETURN(step.nodes, memo_.LoadNodes(store_));
  std::vector<std::string> node_names;
  for (const auto& record : step.nodes->records) node_names.push_back(record.name);
  backend_.SetKnownNodes(node_names);
  step.changed.assign(step.workflows.size(), false);
  for (const auto& wf : step.workflows) {
    step.policies.push_back(PolicyFor(wf, step.configs));
    step.limits.push_back(RunLimitsOf(wf));
  }
  return OkStatus();
}

// 1. After becoming leader: the RUNNING tasks are the backend's to find again, never to start.
void SchedulingLoop::AdoptRunningTasks(const StepState& step) {
  if (adopted_) return;
  for (size_t w = 0; w < step.workflows.size(); ++w) {
    const auto& wf = step.workflows[w];
    for (const auto& task : wf.tasks) {
      if (task.status != TaskStatus::kRunning) continue;
      const Json* spec = FindTaskSpec(wf.spec, task.group, task.name);
      backend::TaskLaunch launch = LaunchFor(TaskKey(wf.id, task), task, spec, task.started_ms,
                                             options_.default_sim_duration_ms, step.policies[w],
                                             /*adopt=*/true, PodNamespace(step.configs, wf.pool));
      if (backend_.Launch(launch).ok()) launched_.insert(launch.key);
    }
  }
  adopted_ = true;
}

// 2. Exits, kept until applied (in case a write fails), and the evictions the cluster refused.
void SchedulingLoop::CollectExits(StepState& step) {
  for (auto& key : backend_.Started()) {
    if (launched_.contains(key)) started_.insert(std::move(key));
  }
  for (auto& exit : backend_.Poll(step.now)) {
    launched_.erase(exit.key);
    started_.erase(exit.key);
    exits_[exit.key] = exit;
  }
  for (const auto& refused : backend_.RefusedEvictions()) {
    step.refusals[refused.key] = evictions_.Refused(refused, step.now);
  }
}

// 2-4 for every task of every workflow.
void SchedulingLoop::AdvanceTasks(StepState& step, StepStats& stats) {
  for (size_t w = 0; w < step.workflows.size(); ++w) {
    std::vector<store::TaskRecord> added;  // new attempts, appended after the walk
    for (auto& task : step.workflows[w].tasks) {
      if (task.status == TaskStatus::kRunning) {
        AdvanceRunningTask(step, w, task, added, stats);
      } else if (task.status == TaskStatus::kScheduled) {
        const std::string key = TaskKey(step.workflows[w].id, task);
        if (launched_.contains(key) || exits_.contains(key)) {
          AdvanceLaunchedTask(step, w, task, key, added, stats);
        } else {
          LaunchScheduledTask(step, w, task, stats);
        }
      } else if (task.status == TaskStatus::kPending) {
        EnforceQueueTimeout(step, w, task, stats);
      }
    }
    for (auto& task : added) step.workflows[w].tasks.push_back(std::move(task));
  }
}

// A RUNNING task: evicted by the cluster, ended (its exit action), past its exec timeout, or
// still running (and launched again if the backend lost it).
void SchedulingLoop::AdvanceRunningTask(StepState& step, size_t w, store::TaskRecord& task,
                                        std::vector<store::TaskRecord>& added, StepStats& stats) {
  const store::WorkflowRecord& wf = step.workflows[w];
  const RunPolicy& policy = step.policies[w];
  const std::string key = TaskKey(wf.id, task);
  auto exit = exits_.find(key);
  if (exit != exits_.end() && exit->second.evicted) {
    // An eviction the cluster carried out (backend::EvictionStart::kInFlight): requeued.
    task.message = evictions_.Evicted(key).value_or("evicted by the cluster");
    step.evicted_now.insert(key);
    task.node.clear();
    task.started_ms = 0;
    SetStatus(task, TaskStatus::kPending, step.now, transitions_);
    ++stats.evicted;
    step.changed[w] = true;
  } else if (exit != exits_.end()) {
    ApplyExit(step, w, task, exit->second, added);
    ++stats.finished;
    step.changed[w] = true;
  } else if (policy.exec_timeout_ms && step.now - task.started_ms > *policy.exec_timeout_ms) {
    (void)backend_.Kill(key);
    launched_.erase(key);
    SetStatus(task, TaskStatus::kFailedExecTimeout, step.now, transitions_);
    task.finished_ms = step.now;
    task.message = "ran longer than the exec timeout of " +
                   model::FormatDuration(*policy.exec_timeout_ms / 1000);
    ++stats.timed_out;
    step.changed[w] = true;
  } else {
    step.running_keys.insert(key);
    if (auto refused = step.refusals.find(key); refused != step.refusals.end()) {
      task.message = refused->second;
      step.changed[w] = true;
    }
    if (!launched_.contains(key)) {  // e.g. lost by a backend restart: adopt again
      const Json* spec = FindTaskSpec(wf.spec, task.group, task.name);
      backend::TaskLaunch launch =
          LaunchFor(key, task, spec, task.started_ms, options_.default_sim_duration_ms, policy,
                    /*adopt=*/true, PodNamespace(step.configs, wf.pool));
      if (backend_.Launch(launch).ok()) launched_.insert(key);
    }
  }
}

// An ended attempt: COMPLETED, FAILED, or RESCHEDULED with a new attempt PENDING (the exit
// action RESCHEDULE up to max_retries, or a failure under the workflow's backoff limit).
void SchedulingLoop::ApplyExit(const StepState& step, size_t w, store::TaskRecord& task,
                               const backend::TaskExit& exit,
                               std::vector<store::TaskRecord>& added) {
  const store::WorkflowRecord& wf = step.workflows[w];
  task.exit_code = exit.exit_code;
  task.finished_ms = exit.finished_ms;
  const std::string why = exit.reason.empty() ? "" : " (" + exit.reason + ")";
  const Json* spec = FindTaskSpec(wf.spec, task.group, task.name);
  const std::string action = ExitActionFor(spec, step.policies[w], task.exit_code);
  const BackoffDecision backoff =
      action == "FAIL" ? DecideBackoff(wf, step.limits[w]) : BackoffDecision{};
  if ((action == "RESCHEDULE" && task.retry < options_.max_retries) || backoff.retry) {
    SetStatus(task, TaskStatus::kRescheduled, step.now, transitions_);
    task.message = "exit code " + std::to_string(task.exit_code) + why + ": " +
                   (backoff.retry ? backoff.words : "rescheduled");
    store::TaskRecord next = task;
    next.retry = task.retry + 1;
    next.node.clear();
    next.started_ms = next.finished_ms = 0;
    next.exit_code = 0;
    next.message.clear();
    next.status = ToString(TaskStatus::kPending);
    next.status_changed_ms = step.now;
    added.push_back(std::move(next));
  } else if (action == "COMPLETE") {
    SetStatus(task, TaskStatus::kCompleted, step.now, transitions_);
  } else {
    SetStatus(task, TaskStatus::kFailed, step.now, transitions_);
    task.message = "exit code " + std::to_string(task.exit_code) + why +
                   (action == "RESCHEDULE" ? " (retries exhausted)" : "") +
                   (backoff.words.empty() ? "" : ": " + backoff.words);
  }
}

// 4. A SCHEDULED task is launched on its node: launch first (idempotent; if the write loses a
// race, the next step kills it), RUNNING when the backend took it, FAILED when it refused.
void SchedulingLoop::LaunchScheduledTask(StepState& step, size_t w, store::TaskRecord& task,
                                         StepStats& stats) {
  const std::string key = TaskKey(step.workflows[w].id, task);
  Status launched = backend_.Launch(FirstLaunchOf(step, w, task, key));
  if (launched.ok()) {
    NoteLaunched(step, key, stats);
    if (backend_.ReportsStarts()) return;  // SCHEDULED until Started says it is on the cluster
    task.started_ms = step.now;
    SetStatus(task, TaskStatus::kRunning, step.now, transitions_);
  } else {
    SetStatus(task, TaskStatus::kFailed, step.now, transitions_);
    task.finished_ms = step.now;
    task.message = "backend: " + launched.message();
  }
  step.changed[w] = true;
}

backend::TaskLaunch SchedulingLoop::FirstLaunchOf(const StepState& step, size_t w,
                                                  const store::TaskRecord& task,
                                                  std::string key) const {
  const store::WorkflowRecord& wf = step.workflows[w];
  const Json* spec = FindTaskSpec(wf.spec, task.group, task.name);
  return LaunchFor(std::move(key), task, spec, step.now, options_.default_sim_duration_ms,
                   step.policies[w], /*adopt=*/false, PodNamespace(step.configs, wf.pool));
}

void SchedulingLoop::NoteLaunched(StepState& step, const std::string& key, StepStats& stats) {
  launched_.insert(key);
  step.launched_now.insert(key);
  step.running_keys.insert(key);
  ++stats.launched;
}

// 6b. On a backend that reports starts (a task stays SCHEDULED until its job or pod exists), the
// tasks this step placed are launched right after the write that made them SCHEDULED rather than
// at the next step: the placement is in the store before anything exists on the cluster, so a
// crash in between launches them again on restart (idempotent by the attempt key), and a burst
// reaches the cluster a step sooner. A launch the backend refuses is left to the next step, which
// launches again and writes the task FAILED with the backend's reason. On other backends the
// launch writes RUNNING, so it stays with the next step's writes.
void SchedulingLoop::LaunchPlacedTasks(StepState& step, StepStats& stats) {
  if (!backend_.ReportsStarts()) return;
  bool launched = false;
  for (const auto& binding : step.cycle.bindings) {
    auto it = step.pod_index.find(binding.pod);
    if (it == step.pod_index.end() || step.unwritten.contains(it->second.first)) continue;
    const auto [w, t] = it->second;
    const store::TaskRecord& task = step.workflows[w].tasks[t];
    if (task.status != TaskStatus::kScheduled || task.node != binding.node) continue;
    std::string key = TaskKey(step.workflows[w].id, task);
    if (launched_.contains(key)) continue;
    if (!backend_.Launch(FirstLaunchOf(step, w, task, key)).ok()) continue;
    NoteLaunched(step, key, stats);
    launched = true;
  }
  if (launched) backend_.LaunchesDone();
}

// 4. A SCHEDULED task launched by this process (or ended before the loop saw it start): RUNNING
// once the backend reports it on the cluster, its exit then applied as any running task's; until
// then it keeps its node and waits (a launch Slurm cannot reach yet is submitted when it can).
void SchedulingLoop::AdvanceLaunchedTask(StepState& step, size_t w, store::TaskRecord& task,
                                         const std::string& key,
                                         std::vector<store::TaskRecord>& added, StepStats& stats) {
  if (!started_.contains(key) && !exits_.contains(key)) {
    step.running_keys.insert(key);
    return;
  }
  started_.erase(key);
  task.started_ms = step.now;
  SetStatus(task, TaskStatus::kRunning, step.now, transitions_);
  step.launched_now.insert(key);
  step.changed[w] = true;
  AdvanceRunningTask(step, w, task, added, stats);
}

// 3. A PENDING task past its queue timeout fails. Its queue time counts from the submission, or
// from its new attempt; a task let in under a parallelism counts from when it was let in.
void SchedulingLoop::EnforceQueueTimeout(StepState& step, size_t w, store::TaskRecord& task,
                                         StepStats& stats) {
  const store::WorkflowRecord& wf = step.workflows[w];
  const RunPolicy& policy = step.policies[w];
  const int64_t since =
      task.retry == 0 && !step.limits[w].parallelism ? wf.submitted_ms : task.status_changed_ms;
  if (!policy.queue_timeout_ms || step.now - since <= *policy.queue_timeout_ms) return;
  SetStatus(task, TaskStatus::kFailedQueueTimeout, step.now, transitions_);
  task.finished_ms = step.now;
  task.message = "pending longer than the queue timeout of " +
                 model::FormatDuration(*policy.queue_timeout_ms / 1000);
  ++stats.timed_out;
  step.changed[w] = true;
}

// A failed task fails its workflow: the rest of it is canceled. Then the tasks waiting for a
// place under their workflow's parallelism take the places freed.
void SchedulingLoop::SettleWorkflows(StepState& step) {
  for (size_t w = 0; w < step.workflows.size(); ++w) {
    auto& wf = step.workflows[w];
    if (!model::IsFailure(DeriveWorkflowStatus(wf.tasks))) continue;
    for (auto& task : wf.tasks) {
      if (model::IsTerminalTaskText(task.status)) continue;
      step.running_keys.erase(TaskKey(wf.id, task));
      SetStatus(task, TaskStatus::kCanceled, step.now, transitions_);
      task.message = "canceled: another task of the workflow failed";
      step.changed[w] = true;
    }
  }
  for (size_t w = 0; w < step.workflows.size(); ++w) {
    if (AdmitWaitingTasks(step.workflows[w], step.limits[w], step.now, transitions_) > 0) {
      step.changed[w] = true;
    }
  }
}

}  // namespace gpupool::controller
