// The scheduling loop's steps around the scheduler cycle (controller/scheduling_loop.h, steps 5-7):
// the snapshot of the cluster and the tasks' pods, the cycle and what it decided (evictions,
// bindings, reasons), the write-back, the machine pools, and the backend kept in line.

#include <algorithm>
#include <ctime>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "config/kinds.h"
#include "config/membership.h"
#include "controller/loop_step.h"
#include "controller/machine_pools.h"
#include "model/disruption_budget.h"
#include "model/k8s.h"
#include "model/node_pool.h"
#include "model/queue.h"
#include "service/service.h"

namespace gpupool::controller {

using Json = nlohmann::ordered_json;

namespace {

// The BACKEND config whose switches (enable_node_pools, ...) apply to the cluster this server
// schedules: the built-in pool's backend.
constexpr std::string_view kClusterBackend = config::kDefaultBackend;

double ThreadCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
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
    if (task.status != TaskStatus::kPending) continue;
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
    std::string_view now =
        found == status.end() ? ToString(TaskStatus::kCanceled) : std::string_view(found->second);
    if (now == TaskStatus::kPending) {  // pending and not reported this cycle: the next one says
      ++it;
      continue;
    }
    // Bound (its launch takes the pod over) or ended (what the backend made for it goes).
    if (model::IsTerminalTaskText(now)) (void)backend.Kill(*it);
    it = reported.erase(it);
  }
}

}  // namespace

// 5a. The cluster as the scheduler sees it: nodes, queues, node pools, disruption budgets and
// seed 003's administrator switches (those of BACKEND `default`, the cluster this server runs).
Status SchedulingLoop::BuildClusterSnapshot(StepState& step) {
  scheduler::ClusterSnapshot& snapshot = step.snapshot;
  // NoExecute taints tolerated for tolerationSeconds expire against this step's time.
  snapshot.now_ms = step.now;
  snapshot.nodes = memo_.SnapshotNodes(step.nodes);  // the step's copy, kept between steps
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
  if (const config::Backend* cluster = step.configs.FindBackend(kClusterBackend)) {
    step.settings = {cluster->enable_node_pools, cluster->enable_cpu_quota,
                     cluster->enable_over_quota};
  }
  if (step.settings.node_pools) ReportNodePoolConflicts(snapshot);
  scheduler::ApplyNodePoolSwitch(step.settings, snapshot.queues, snapshot.node_pools);
  service::AddImplicitPoolQueues(step.configs, snapshot.nodes, snapshot.node_pools,
                                 snapshot.queues);
  return OkStatus();
}

// 5b. The tasks' pods: bound ones (SCHEDULED, RUNNING) first, then the pending ones in arrival
// order. A pending pod the scheduler cannot read fails its task.
void SchedulingLoop::AddTaskPods(StepState& step) {
  // Read from every node, for pending tasks only: a step with none (pods handed in alone, on
  // thousands of nodes) does not read them.
  std::optional<std::set<std::string>> node_backends;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t w = 0; w < step.workflows.size(); ++w) {
      auto& wf = step.workflows[w];
      for (size_t t = 0; t < wf.tasks.size(); ++t) {
        auto& task = wf.tasks[t];
        const bool bound =
            task.status == TaskStatus::kRunning || task.status == TaskStatus::kScheduled;
        if (pass == 0 ? !bound : task.status != TaskStatus::kPending) continue;
        const std::string name = SnapshotPodName(wf.id, t);
        const Result<model::PodScheduling>& read = memo_.TaskPod(wf, t, step.changed[w], [&] {
          Json pod = task.pod.is_object() ? task.pod : Json::object();
          pod["metadata"]["name"] = name;
          pod["metadata"]["namespace"] = "default";
          if (pod["metadata"].contains("labels") &&
              pod["metadata"]["labels"].contains(scheduler::kGangLabel)) {
            pod["metadata"]["labels"][scheduler::kGangLabel] = wf.id + "." + task.group;
          }
          if (bound) pod["spec"]["nodeName"] = task.node;
          return model::PodSchedulingFromJson(pod);
        });
        if (!read.ok()) {
          if (!bound) {
            SetStatus(task, TaskStatus::kFailed, step.now, transitions_);
            task.message = "pod cannot be scheduled: " + read.status().message();
            step.changed[w] = true;
          }
          continue;
        }
        model::PodScheduling pod = *read;  // a copy: this step adds to it
        step.pod_index[name] = {w, t};
        if (!bound && !node_backends) node_backends = config::NodeBackends(step.snapshot.nodes);
        if (!bound && !node_backends->empty()) {
          const config::Pool* pool = step.configs.FindPool(wf.pool);
          config::ScopePodToBackend(pod, pool ? pool->backend : config::kDefaultBackend,
                                    *node_backends);
        }
        if (bound) {
          if (evictions_.Protected(TaskKey(wf.id, task), step.now)) {
            pod.priority = std::max(pod.priority.value_or(0),
                                    scheduler::kNonPreemptiblePriority);  // being evicted
          }
          // The binding time: when it became SCHEDULED (RUNNING: its launch, right after).
          const int64_t bound_at = task.status == TaskStatus::kRunning && task.started_ms > 0
                                       ? task.started_ms
                                       : task.status_changed_ms;
          if (bound_at > 0) step.snapshot.bound_at_ms[name] = bound_at;
        }
        step.snapshot.pods.push_back(std::move(pod));
      }
    }
  }
}

// 5c. The spot drain, the pods handed in, the cycle, and its decisions applied to the tasks.
void SchedulingLoop::RunCycle(StepState& step, StepStats& stats) {
  ApplySpotDrain(step, stats);
  // After the drain, which walks workflow pods only: handed-in pods have no workflow.
  handed_in_memo_.BeginStep(step.settings);
  step.handed_in = AddHandedInPods(
      std::move(step.handed_in_pods), step.pod_index,
      [&](const std::string& key) { return evictions_.Protected(key, step.now); }, handed_in_memo_,
      step.snapshot);
  AddClusterBudgets(step);
  evictions_.LeaveOutHeld(step.snapshot);
  scheduler::ApplyClusterSettings(step.settings, step.snapshot);
  // CPU time, not wall time: on a shared machine the decisions' own cost stays comparable.
  const double cpu_before = ThreadCpuSeconds();
  step.snapshot.nodes_generation = memo_.NodesGeneration(step.nodes, step.snapshot.node_pools);
  step.cycle = scheduler_.RunCycle(step.snapshot, &views_);
  placement_cpu_seconds_->Observe({}, ThreadCpuSeconds() - cpu_before);
  ApplyEvictions(step, stats);
  HoldPlacements(step);
  for (const auto& binding : step.cycle.bindings) {
    auto it = step.pod_index.find(binding.pod);
    if (it == step.pod_index.end()) continue;
    auto& task = step.workflows[it->second.first].tasks[it->second.second];
    if (task.status != TaskStatus::kPending) continue;
    task.node = binding.node;
    task.message.clear();
    SetStatus(task, TaskStatus::kScheduled, step.now, transitions_);
    step.changed[it->second.first] = true;
    ++stats.bound;
  }
  for (const auto& pending : step.cycle.unschedulable) {
    auto it = step.pod_index.find(pending.pod);
    if (it == step.pod_index.end()) continue;
    auto& wf = step.workflows[it->second.first];
    auto& task = wf.tasks[it->second.second];
    if (step.evicted_now.contains(TaskKey(wf.id, task))) {
      continue;  // its message says it was evicted, for this step
    }
    if (task.status != TaskStatus::kPending) continue;
    if (std::string message = PendingMessage(pending.reason, task.message);
        task.message != message) {
      task.message = std::move(message);
      step.changed[it->second.first] = true;
    }
  }
}

// 6. Each changed workflow written with compare-and-set, its status derived first. A write that
// loses (a concurrent cancel) undoes this step's launches of that workflow; the next step decides
// again from the store. A lost lease stops the step.
Status SchedulingLoop::WriteBack(StepState& step, StepStats& stats) {
  for (size_t w = 0; w < step.workflows.size(); ++w) {
    auto& wf = step.workflows[w];
    const model::WorkflowStatus status = DeriveWorkflowStatus(wf.tasks);
    if (wf.status != status) {
      wf.status = ToString(status);
      step.changed[w] = true;
    }
    if (!step.changed[w]) continue;
    Status written = store_.UpdateWorkflowAsLeader(wf, {options_.lease_name, options_.holder});
    if (!written.ok()) {
      ++stats.conflicts;
      step.unwritten.insert(w);
      for (const auto& task : wf.tasks) {
        std::string key = TaskKey(wf.id, task);
        if (step.launched_now.contains(key)) {
          (void)backend_.Kill(key);
          launched_.erase(key);
          started_.erase(key);
          step.running_keys.erase(key);
        }
      }
      // kFailedPrecondition: the lease is gone (this server stalled past it); stop here, the
      // next step finds itself a follower.
      if (written.code() != StatusCode::kAborted && written.code() != StatusCode::kNotFound) {
        return written;
      }
      continue;
    }
    memo_.KeepWritten(wf);
    for (const auto& task : wf.tasks) {
      // Applied: ended, or requeued by an eviction (the attempt's key runs again later).
      if (model::IsTerminalTaskText(task.status) || task.status == TaskStatus::kPending) {
        exits_.erase(TaskKey(wf.id, task));
      }
    }
  }
  return OkStatus();
}

// 7. Machine pools: launch for what stays pending, mark ready, scale down, interruptions. A
// failure here (a machine pool naming an instance type the catalog lacks) must not stop the rest
// of the step: it is reported and counted, and scheduling carries on.
std::vector<service::MachinePoolEvent> SchedulingLoop::ReconcileMachinePools(const StepState& step,
                                                                             StepStats& stats) {
  std::vector<service::MachinePoolEvent> events;
  if (options_.scaled_machine_pools) return ScaleMachinePools(step, stats);
  if (!options_.machine_pools) return events;
  auto reconciled =
      RunMachinePoolStep(store_, step.nodes->records,
                         [&] { return autoscaler::AfterCycle(step.snapshot, step.cycle); },
                         options_.catalog ? *options_.catalog : autoscaler::Catalog::Builtin(),
                         step.now, options_.provision, {options_.lease_name, options_.holder});
  if (!reconciled.ok()) {
    stats.machine_pool_error = reconciled.status().message();
    step_errors_->Increment({"machine_pools"});
    return events;
  }
  stats.nodes_launched = reconciled->launched;
  stats.nodes_removed = reconciled->removed;
  for (const auto& event : reconciled->events) {
    events.push_back({step.now, event.machine_pool, event.node, event.what});
  }
  return events;
}

// 7, where the cluster makes the nodes: replicas of the pools' MachineSets or MachineDeployments.
std::vector<service::MachinePoolEvent> SchedulingLoop::ScaleMachinePools(const StepState& step,
                                                                         StepStats& stats) {
  std::vector<service::MachinePoolEvent> events;
  if (!scaled_pools_.Due(step.now)) return events;  // AfterCycle copies the whole snapshot
  auto scaled = scaled_pools_.Step(
      store_, backend_, [&] { return autoscaler::AfterCycle(step.snapshot, step.cycle); },
      options_.catalog ? *options_.catalog : autoscaler::Catalog::Builtin(), step.now,
      options_.provision);
  if (!scaled.ok()) {
    stats.machine_pool_error = scaled.status().message();
    step_errors_->Increment({"machine_pools"});
    return events;
  }
  for (const auto& event : *scaled) {
    events.push_back({step.now, event.machine_pool, event.node, event.what});
  }
  return events;
}

// The backend in line with the store: what runs there but is no longer RUNNING (canceled,
// failed) is killed; the pending tasks' reasons and the handed-in pods' bindings go out.
void SchedulingLoop::SyncBackend(const StepState& step) {
  for (auto it = launched_.begin(); it != launched_.end();) {
    if (!step.running_keys.contains(*it)) {
      (void)backend_.Kill(*it);
      started_.erase(*it);
      it = launched_.erase(it);
    } else {
      ++it;
    }
  }
  ReportPendingTasks(backend_, reported_, step.workflows, step.pod_index, step.cycle, step.configs);
  ActOnHandedInPods(backend_, step.handed_in, step.cycle);
}

// The cluster's PodDisruptionBudgets beside gpupool's configs, over the snapshot's pods they
// select (the backend matched their selectors against the pods themselves: their namespace and
// labels on the cluster, which the snapshot's task pods do not carry), with the counts of the
// cluster's disruption controller, which sees every pod a budget selects.
void SchedulingLoop::AddClusterBudgets(StepState& step) {
  std::vector<backend::ClusterDisruptionBudget> budgets = backend_.DisruptionBudgets();
  if (budgets.empty()) return;
  std::unordered_map<std::string, std::pair<std::string, std::string>> pods;  // key -> (ns, name)
  for (const auto& [name, at] : step.pod_index) {
    const auto& wf = step.workflows[at.first];
    pods[TaskKey(wf.id, wf.tasks[at.second])] = {"default", name};
  }
  for (const auto& [key, index] : step.handed_in.by_key) {
    const backend::HandedInPod& pod = *step.handed_in.pods[index];
    const std::string& ns = pod.pod.namespace_.empty() ? "default" : pod.pod.namespace_;
    pods[backend::HandedInKey(pod.ref)] = {ns, pod.pod.name};
  }
  for (auto& cluster : budgets) {
    model::PodDisruptionBudget budget;
    budget.name = cluster.namespace_ + "/" + cluster.name;
    budget.namespace_ = cluster.namespace_;
    // Assigned, not emplace()d: clang 14 does not see the nested struct as default-constructible
    // inside std::optional's constraints (its member initialisers), and refuses emplace().
    budget.observed = model::PodDisruptionBudget::Observed{};
    model::PodDisruptionBudget::Observed& observed = *budget.observed;
    for (const std::string& key : cluster.selects) {
      if (auto it = pods.find(key); it != pods.end()) observed.pods.insert(it->second);
    }
    if (observed.pods.empty()) continue;
    observed.rule = std::move(cluster.rule);
    observed.disruptions_allowed = cluster.disruptions_allowed;
    observed.current_healthy = cluster.current_healthy;
    observed.desired_healthy = cluster.desired_healthy;
    observed.expected_pods = cluster.expected_pods;
    step.snapshot.disruption_budgets.push_back(std::move(budget));
  }
}

// The pods placed where victims are being evicted wait (controller/evictions.h), saying so: a task
// in its message, a pod handed in on the cluster (Backend::ReportUnschedulable).
void SchedulingLoop::HoldPlacements(StepState& step) {
  for (const auto& held : evictions_.HoldBindings(step.cycle, step.snapshot)) {
    std::string message = "placed on node " + held.node +
                          " once the pods evicted there have left (the cluster is evicting them)";
    auto it = step.pod_index.find(held.pod);
    if (it == step.pod_index.end()) {
      auto in = step.handed_in.by_key.find(held.pod);
      if (in != step.handed_in.by_key.end()) {
        step.handed_in.held.emplace_back(in->second, std::move(message));
      }
      continue;
    }
    auto& task = step.workflows[it->second.first].tasks[it->second.second];
    if (task.status == TaskStatus::kPending && task.message != message) {
      task.message = std::move(message);
      step.changed[it->second.first] = true;
    }
  }
}

// A bound pod handed in that the cycle chose as a victim: asked of the backend, with no task to
// requeue (once evicted the pod is gone; its owner, if any, makes a new one). A NoExecute taint
// is the cluster's to enforce on it (Kubernetes' taint manager), not gpupool's.
void SchedulingLoop::EvictHandedInPod(StepState& step, const scheduler::Eviction& eviction,
                                      StepStats& stats) {
  auto it = step.handed_in.by_key.find(eviction.pod);
  if (it == step.handed_in.by_key.end()) return;
  const backend::HandedInPod& pod = *step.handed_in.pods[it->second];
  if (pod.pod.node_name.empty() || eviction.reason == scheduler::EvictionReason::kNoExecute) {
    return;
  }
  backend::TaskEviction ask;
  ask.key = backend::HandedInKey(pod.ref);
  ask.reason = scheduler::EvictionReasonName(eviction.reason);
  ask.message = eviction.message;
  ask.pod = pod.ref;
  if (backend_.Evict(ask) == backend::EvictionStart::kInFlight) {
    evictions_.Asked(ask.key, pod.pod.node_name, "");
  }
  ++stats.evicted;
}

// The cycle's victims. A backend that stops them at once (kStopped) has them requeued now and
// Kill'ed after the step's writes; one that asks the cluster (kInFlight) keeps them running
// until it answers (controller/evictions.h).
void SchedulingLoop::ApplyEvictions(StepState& step, StepStats& stats) {
  for (const auto& eviction : step.cycle.evictions) {
    auto it = step.pod_index.find(eviction.pod);
    if (it == step.pod_index.end()) {
      EvictHandedInPod(step, eviction, stats);
      continue;
    }
    auto& wf = step.workflows[it->second.first];
    auto& task = wf.tasks[it->second.second];
    if (task.status != TaskStatus::kRunning && task.status != TaskStatus::kScheduled) continue;
    std::string key = TaskKey(wf.id, task);
    const std::string reason(scheduler::EvictionReasonName(eviction.reason));
    step.changed[it->second.first] = true;
    if (task.status == TaskStatus::kRunning &&
        backend_.Evict({key, reason, eviction.message,
                        eviction.reason != scheduler::EvictionReason::kNoExecute}) ==
            backend::EvictionStart::kInFlight) {
      evictions_.Asked(key, task.node, "evicted (" + reason + "): " + eviction.message);
      task.message = "being evicted (" + reason + "): " + eviction.message;
      continue;
    }
    step.running_keys.erase(key);
    task.node.clear();
    task.started_ms = 0;
    task.message = "evicted (" + reason + "): " + eviction.message;
    SetStatus(task, TaskStatus::kPending, step.now, transitions_);
    ++stats.evicted;
  }
}

// Spot drain (autoscaler/provisioner.h): a task told to stop on an interrupted node says so in
// its message; once its grace period has ended (at the latest at the node's deadline) it leaves
// the node, pending again, before the cycle places it elsewhere.
void SchedulingLoop::ApplySpotDrain(StepState& step, StepStats& stats) {
  // Most steps have no node being drained: then the pods need no index.
  if (std::none_of(
          step.snapshot.nodes.begin(), step.snapshot.nodes.end(),
          [](const model::Node& node) { return !autoscaler::DrainEntries(node).empty(); })) {
    return;
  }
  std::map<std::string, model::PodScheduling*> bound;
  for (auto& pod : step.snapshot.pods) {
    if (!pod.node_name.empty()) bound[scheduler::PodKey(pod)] = &pod;
  }
  for (const model::Node& node : step.snapshot.nodes) {
    for (const autoscaler::DrainEntry& entry : autoscaler::DrainEntries(node)) {
      auto pod = bound.find(entry.pod);
      auto at = step.pod_index.find(entry.pod);
      if (!entry.told_ms || pod == bound.end() || pod->second->node_name != node.name ||
          at == step.pod_index.end()) {
        continue;
      }
      auto& wf = step.workflows[at->second.first];
      auto& task = wf.tasks[at->second.second];
      if (task.status != TaskStatus::kRunning && task.status != TaskStatus::kScheduled) continue;
      if (entry.end_ms > step.now) {
        const std::string message =
            "stopping (spot interruption of node " + node.name + "): " + entry.why;
        if (task.message != message) {
          task.message = message;
          step.changed[at->second.first] = true;
        }
        continue;
      }
      step.running_keys.erase(TaskKey(wf.id, task));
      task.node.clear();
      task.started_ms = 0;
      task.message = "evicted (spot interruption of node " + node.name + "): " + entry.why;
      SetStatus(task, TaskStatus::kPending, step.now, transitions_);
      step.changed[at->second.first] = true;
      ++stats.evicted;
      pod->second->node_name.clear();
      step.snapshot.bound_at_ms.erase(entry.pod);
    }
  }
}

}  // namespace gpupool::controller
