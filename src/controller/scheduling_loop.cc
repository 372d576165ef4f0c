#include "controller/scheduling_loop.h"
// The loop's life (lease, leadership, the thread) and the leader's step as its named steps:
// those over tasks are in task_steps.cc, those around the scheduler cycle in cycle_steps.cc.

#include <algorithm>
#include <charconv>
#include <chrono>
#include <iostream>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "common/json_text.h"
#include "config/kinds.h"
#include "config/membership.h"
#include "controller/handed_in_pods.h"
#include "controller/loop_step.h"
#include "controller/machine_pools.h"
#include "controller/step_trace.h"
#include "controller/task_lifecycle.h"
#include "controller/workflow_runs.h"
#include "model/duration.h"
#include "model/k8s.h"
#include "model/node_pool.h"
#include "model/queue.h"
#include "model/quota_tree.h"
#include "scheduler/cluster_settings.h"

namespace gpupool::controller {

using Json = nlohmann::ordered_json;

SchedulingLoop::SchedulingLoop(store::Store& store, backend::Backend& backend, const Clock& clock,
                               metrics::Registry& registry, LoopOptions options)
    : store_(store),
      backend_(backend),
      clock_(clock),
      options_(std::move(options)),
      scheduler_(options_.scheduler),
      evictions_(options_.refused_eviction_backoff_ms),
      scaled_pools_(options_.scale_interval_ms) {
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
  cycle_seconds_ = registry.AddHistogram("gpupool_scheduling_cycle_seconds",
                                         "Duration of one scheduling step of the leader.", {},
                                         metrics::LatencyBuckets());
  placement_cpu_seconds_ = registry.AddHistogram(
      "gpupool_placement_cycle_cpu_seconds",
      "CPU time of the scheduler's placement cycle within a step (the decisions alone, without "
      "the store's reads and writes around them).",
      {}, metrics::LatencyBuckets());
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
      // What arrives from here on, this step may not have seen.
      const uint64_t nudges_before = nudges_.load();
      auto stats = Step();
      std::string error = !stats.ok() ? stats.status().message() : stats->machine_pool_error;
      // Reported once per distinct message, so a lasting fault does not flood the log.
      if (!error.empty() && error != last_error) {
        std::cerr << "gpupool serve: scheduling step: " << error << "\n";
      }
      last_error = std::move(error);
      // A step that placed tasks is followed at once: on the sim it launches them (and writes
      // them RUNNING), so a placement does not wait an interval to start; on the real backends
      // they went out in the placing step, and this one places the rest of a burst of
      // submissions that arrived meanwhile, whose launches then reach a batching backend while
      // it still holds the first ones (Slurm: behind the same gate, kept shut for them while
      // the loop says MoreLaunchesMayFollow), not an interval later. At most kMaxStepsAtOnce in
      // a row.
      if (stats.ok() && FollowedAtOnce(*stats)) {
        ++steps_at_once_;
        continue;
      }
      steps_at_once_ = 0;
      WaitForNextStep(stats.ok() && stats->leader && stats->pending == 0, nudges_before);
    }
  });
}

void SchedulingLoop::Nudge() { nudges_.fetch_add(1); }

void SchedulingLoop::Submitted(std::shared_ptr<const store::WorkflowRecord> stored) {
  {
    std::lock_guard<std::mutex> lock(submitted_mu_);
    if (submitted_tasks_ + stored->tasks.size() <= kMaxSubmittedTasks) {
      submitted_tasks_ += stored->tasks.size();
      submitted_.push_back(std::move(stored));
    }
  }
  Nudge();
}

std::vector<std::shared_ptr<const store::WorkflowRecord>> SchedulingLoop::TakeSubmitted() {
  std::lock_guard<std::mutex> lock(submitted_mu_);
  submitted_tasks_ = 0;
  return std::exchange(submitted_, {});
}

// The interval, cut short by nudges when the last step left nothing pending: work submitted to
// an idle cluster is placed kNudgeQuietMs after the last of a burst of submissions rather than up
// to an interval later (as kube-scheduler takes a new pod at once and slurmctld tries a
// submitted job at once). Waiting for the burst to go quiet keeps it in one step: a burst split
// over steps reaches a batching backend as several (Slurm: a second gate's submissions crawl
// while slurmctld launches the first's jobs). Not after a step that left work pending: with a
// backlog the interval paces the loop, so a stream onto it does not run the cycles back to back.
void SchedulingLoop::WaitForNextStep(bool idle, uint64_t nudges_before) {
  static constexpr int64_t kNudgeQuietMs = 50;
  uint64_t seen = nudges_before;
  int64_t last_nudge_ms = -1;  // when the count last moved, in the wait's time
  for (int64_t waited = 0; waited < options_.interval_ms && !stop_.load(); waited += 10) {
    if (const uint64_t now = nudges_.load(); now != seen) {
      seen = now;
      last_nudge_ms = waited;
    }
    if (idle && last_nudge_ms >= 0 && waited - last_nudge_ms >= kNudgeQuietMs) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
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
    (void)TakeSubmitted();  // only a leader's next step would use them
    leader_ = false;
    leader_gauge_->Set({}, 0);
    ClearLeaderGauges();
    return lease.status();
  }
  if (!*lease) {
    (void)TakeSubmitted();
    if (leader_.exchange(false)) {
      // Lost the lease: forget what we ran; the new leader re-adopts from the store.
      for (const auto& key : launched_) (void)backend_.Kill(key);
      launched_.clear();
      exits_.clear();
      started_.clear();
      evictions_.Clear();
      memo_.Clear();
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
    backend_.MoreLaunchesMayFollow(false);  // the step may have stopped before saying so
    return status;
  }
  return stats;
}

// The leader's step, as the named steps of the header's list. A step slower than
// options_.slow_step_ms says in the log how long each part took.
Status SchedulingLoop::LeaderStep(int64_t now, StepStats& stats) {
  StepTrace trace;
  StepState step;
  step.now = now;
  RETURN_IF_ERROR(LoadState(step));
  trace.Mark("load");
  AdoptRunningTasks(step);    // 1
  CollectExits(step);         // 2
  AdvanceTasks(step, stats);  // 2-4: exits, timeouts, launches
  backend_.LaunchesDone();    // before the write-back: a task RUNNING in the store has its job
  SettleWorkflows(step);      // failed workflows stopped, waiting tasks let in
  trace.Mark("tasks");
  step.handed_in_pods = backend_.HandedInPods();
  PruneEvictions(step);                         // before the cycle: the pods they held enter it
  RETURN_IF_ERROR(BuildClusterSnapshot(step));  // 5
  AddTaskPods(step);
  trace.Mark("snapshot");
  RunCycle(step, stats);
  trace.Mark("cycle");
  RETURN_IF_ERROR(WriteBack(step, stats));  // 6
  trace.Mark("writes");
  // A step that placed tasks is followed at once (Start), and may launch the rest of a burst.
  // Said before this step's launches when more follow, after them when none does: a batching
  // backend then keeps its burst open for them either way.
  const bool more_follow = FollowedAtOnce(stats);
  if (more_follow) backend_.MoreLaunchesMayFollow(true);
  LaunchPlacedTasks(step, stats);
  if (!more_follow) backend_.MoreLaunchesMayFollow(false);
  std::vector<service::MachinePoolEvent> events = ReconcileMachinePools(step, stats);  // 7
  SyncBackend(step);
  ExportGauges(step, stats);
  trace.Mark("backend");
  if (options_.views != nullptr) {
    PublishStep(now, std::move(step.workflows), step.snapshot, std::move(step.cycle),
                std::move(events));
  }
  memo_.KeepSnapshotNodes(step.nodes, std::move(step.snapshot.nodes));
  trace.Mark("views");
  if (options_.slow_step_ms > 0 &&
      trace.Total() >= std::chrono::milliseconds(options_.slow_step_ms)) {
    std::cerr << "gpupool: slow scheduling step, " << trace.Summary() << " (" << stats.bound
              << " placed, " << stats.launched << " launched, " << stats.pending << " pending)"
              << std::endl;
  }
  return OkStatus();
}

// Evictions in flight end with their victims: a task no longer RUNNING (evicted, ended,
// canceled), a pod handed in no longer bound (evicted: gone).
void SchedulingLoop::PruneEvictions(const StepState& step) {
  // Most steps have no eviction to prune, and the set below names every pod that holds a node.
  if (evictions_.Empty()) return;
  std::set<std::string> holding = step.running_keys;
  for (const auto& pod : step.handed_in_pods) {
    if (!pod->pod.node_name.empty()) holding.insert(backend::HandedInKey(pod->ref));
  }
  evictions_.Prune(holding, step.now);
}

// The leader's gauges: pending and running tasks, and per queue, node pool and resource the fair
// share, allocation and deserved quota of the cycle.
void SchedulingLoop::ExportGauges(const StepState& step, StepStats& stats) {
  for (const auto& wf : step.workflows) {
    for (const auto& task : wf.tasks) {
      if (task.status == TaskStatus::kPending) ++stats.pending;
      if (task.status == TaskStatus::kRunning || task.status == TaskStatus::kScheduled)
        ++stats.running;
    }
  }
  pending_gauge_->Set({}, stats.pending);
  running_gauge_->Set({}, stats.running);
  static constexpr const char* kResources[] = {"gpu", "cpu", "memory"};
  std::map<metrics::LabelValues, double> fair, allocated, deserved;
  for (const auto& share : step.cycle.fair_share) {
    for (size_t r = 0; r < share.resources.size() && r < 3; ++r) {
      metrics::LabelValues labels = {share.queue, share.node_pool, kResources[r]};
      fair[labels] = static_cast<double>(share.resources[r].fair_share);
      allocated[labels] = static_cast<double>(share.resources[r].allocated);
      deserved[labels] = static_cast<double>(share.resources[r].deserved);
    }
  }
  fair_share_gauge_->ReplaceAll(std::move(fair));
  allocated_gauge_->ReplaceAll(std::move(allocated));
  deserved_gauge_->ReplaceAll(std::move(deserved));
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

}  // namespace gpupool::controller
