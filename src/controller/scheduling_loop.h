#pragma once
// The server's scheduling loop. Exactly one server per database runs it: the holder of the leader
// lease "scheduler" (store::Store::TryAcquireLease on the database's clock, renewed every step; a
// crashed leader's lease expires after lease_ttl_ms and another server takes over). Each step of
// the leader:
//   1. re-adopts RUNNING tasks on the backend when it has just become leader (the sim backend is
//      deterministic from the stored start time, so nothing is lost across a restart);
//   2. applies task exits from the backend: the task's exitActions, else the pool's
//      default_exit_actions, else exit 0 = COMPLETE and anything else = FAIL; COMPLETE ->
//      COMPLETED, FAIL -> FAILED, RESCHEDULE -> the attempt becomes RESCHEDULED and a new attempt
//      (retry + 1) is PENDING (at most max_retries times, then FAILED); a workflow with a
//      backoff_limit (a Job's backoffLimit) retries FAIL the same way until more attempts
//      failed than the limit (controller/workflow_runs.h);
//   3. enforces timeouts: PENDING longer than the queue timeout -> FAILED_QUEUE_TIMEOUT, RUNNING
//      longer than the exec timeout -> killed, FAILED_EXEC_TIMEOUT (workflow `timeout`, else the
//      pool's default_queue_timeout / default_exec_timeout);
//      Then WAITING tasks (past their workflow's parallelism) take the places that freed up;
//   4. launches SCHEDULED tasks on the backend (-> RUNNING) and kills backend tasks whose task is
//      no longer RUNNING in the store (canceled through the API);
//   5. runs one scheduler::Scheduler cycle over all nodes, bound pods (SCHEDULED and RUNNING
//      tasks) and pending pods (in submission order): bindings PENDING -> SCHEDULED (launched
//      right after step 6's writes on a backend that reports starts, else at the next step's
//      4, which writes RUNNING), evictions back to PENDING (Backend::Evict; a cluster that decides
//      evictions itself, kInFlight, keeps the victim RUNNING until it answers, and the pods placed
//      on its node wait: controller/evictions.h); unschedulable reasons go to the task message and,
//      after the step's writes, to the backend (Backend::ReportUnschedulable; a reported task that
//      ends without a launch is Kill'ed, so that what the backend made for it goes). Pods handed in
//      by others through the backend (Backend::HandedInPods; no workflow in the store) join the
//      cycle too: the ones it places are bound by Backend::BindPods after the step's writes (a gang
//      in one command), the others are told why they wait; bound ones may be victims
//      (Backend::Evict, then gone once evicted: nothing to requeue). The cluster's
//      PodDisruptionBudgets (Backend::DisruptionBudgets) join gpupool's POD_DISRUPTION_BUDGET
//      configs, so that the cycle picks victims a budget allows. The cycle gets the step's time and
//      each bound task's binding time, so a task that tolerates a node's NoExecute taint only for
//      tolerationSeconds is evicted (reason NoExecute, back to PENDING) at the first step after its
//      deadline;
//   6. derives each workflow's status from its tasks and writes every changed workflow with
//      compare-and-set (a concurrent cancel wins; the loop re-reads next step);
//   7. reconciles machine pools (controller/machine_pools.h): nodes launched for the pods still
//      pending, ready after the provisioning delay, removed when empty, spot interruptions.
//      Before the cycle of step 5, the spot drain's decisions are applied (ApplySpotDrain): a
//      task told to stop says so in its message, and leaves its node once its grace period ends.
// The backend is told the store's nodes at the start of every step (Backend::SetKnownNodes).
// Every decision is persisted before it acts on the backend, so a crash at any point leaves the
// store consistent: a node is never counted twice, an acknowledged workflow is never lost.
//
// Thread contract: Step() must not run concurrently with itself; Start() runs it on a private
// thread every interval_ms, except that a step which placed tasks is followed at once by the
// step that launches them (up to three in a row), and that a Nudge (work submitted) after a step
// that left nothing pending brings the next step forward. IsLeader(), Nudge() and the metrics may
// be used from any thread.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "autoscaler/provisioner.h"
#include "backend/backend.h"
#include "common/clock.h"
#include "controller/evictions.h"
#include "controller/handed_in_pods.h"
#include "controller/scaled_machine_pools.h"
#include "controller/step_memo.h"
#include "controller/task_lifecycle.h"
#include "metrics/metrics.h"
#include "scheduler/scheduler.h"
#include "service/views.h"
#include "store/store.h"

namespace gpupool::controller {

struct LoopOptions {
  std::string holder;  // this server's identity for the lease (unique per process)
  std::string lease_name = "scheduler";
  int64_t lease_ttl_ms = 5000;
  int64_t interval_ms = 200;
  // A step that takes at least this long logs how long each of its parts took; 0: never.
  int64_t slow_step_ms = 1000;
  int64_t default_sim_duration_ms = 1000;  // a task without sim_duration
  int max_retries = 3;                     // RESCHEDULE at most this many times per task
  // A task whose eviction the cluster refused (a PodDisruptionBudget) is no victim for this long.
  int64_t refused_eviction_backoff_ms = 30000;
  scheduler::SchedulerOptions scheduler;
  // Machine pools (MACHINE_POOL configs): launch, ready, scale down, spot interruptions
  // (controller/machine_pools.h). Instance types from `catalog` (nullptr: the built-in one).
  bool machine_pools = true;
  // Machine pools the cluster makes (a MACHINE_POOL with a scale_target; the Kubernetes backend):
  // replicas read and set through the backend at most every `scale_interval_ms`
  // (controller/scaled_machine_pools.h). Not with `machine_pools`.
  bool scaled_machine_pools = false;
  int64_t scale_interval_ms = 10'000;  // cluster-autoscaler's scan interval
  const autoscaler::Catalog* catalog = nullptr;
  autoscaler::ProvisionOptions provision;
  // The dashboard's views: after every step of the leader they receive the step's state (the
  // unfinished workflows, the cycle's fair shares and queue positions, machine-pool events).
  // nullptr: none.
  service::Views* views = nullptr;
};

struct StepStats {
  bool leader = false;
  int bound = 0;
  int launched = 0;
  int finished = 0;
  int timed_out = 0;
  int evicted = 0;
  int pending = 0;
  int running = 0;
  int conflicts = 0;       // CAS failures (a concurrent write won)
  int nodes_launched = 0;  // by machine pools
  int nodes_removed = 0;
  std::string machine_pool_error;  // why the machine-pool part failed ("" when it did not)
};

class SchedulingLoop {
 public:
  // All references must outlive the loop.
  SchedulingLoop(store::Store& store, backend::Backend& backend, const Clock& clock,
                 metrics::Registry& registry, LoopOptions options);
  ~SchedulingLoop();

  // One step (lease, then the leader's work). Errors are store failures; the loop retries.
  Result<StepStats> Step();

  void Start();
  void Stop();  // releases the lease if held
  // Work arrived (a workflow submitted to this server): if the last step left nothing pending,
  // the next one runs once the nudges have been quiet for 50 ms, instead of at the end of the
  // interval. Any thread.
  void Nudge();
  // A workflow this server just stored, as the store returned it: Nudge, and the next step holds
  // the record as loaded (StepMemo::KeepCreated), so that it copies it instead of parsing it back
  // (a 2,000-task burst: 30 of the placing step's 100 ms). Records of at most kMaxSubmittedTasks
  // tasks wait, and only for a leader's step (a follower drops them at each of its steps); the
  // others the step reads as any other. Any thread.
  void Submitted(std::shared_ptr<const store::WorkflowRecord> stored);
  bool IsLeader() const { return leader_.load(); }

 private:
  struct StepState;  // controller/loop_step.h

  Status LeaderStep(int64_t now, StepStats& stats);
  // The leader's step, in order (task_steps.cc, then cycle_steps.cc).
  Status LoadState(StepState& step);
  void AdoptRunningTasks(const StepState& step);
  void CollectExits(StepState& step);
  void AdvanceTasks(StepState& step, StepStats& stats);
  void AdvanceRunningTask(StepState& step, size_t w, store::TaskRecord& task,
                          std::vector<store::TaskRecord>& added, StepStats& stats);
  void ApplyExit(const StepState& step, size_t w, store::TaskRecord& task,
                 const backend::TaskExit& exit, std::vector<store::TaskRecord>& added);
  void LaunchScheduledTask(StepState& step, size_t w, store::TaskRecord& task, StepStats& stats);
  backend::TaskLaunch FirstLaunchOf(const StepState& step, size_t w, const store::TaskRecord& task,
                                    std::string key) const;
  void NoteLaunched(StepState& step, const std::string& key, StepStats& stats);
  void AdvanceLaunchedTask(StepState& step, size_t w, store::TaskRecord& task,
                           const std::string& key, std::vector<store::TaskRecord>& added,
                           StepStats& stats);
  void EnforceQueueTimeout(StepState& step, size_t w, store::TaskRecord& task, StepStats& stats);
  void SettleWorkflows(StepState& step);
  void PruneEvictions(const StepState& step);
  Status BuildClusterSnapshot(StepState& step);
  void AddTaskPods(StepState& step);
  void RunCycle(StepState& step, StepStats& stats);
  void ApplySpotDrain(StepState& step, StepStats& stats);
  void AddClusterBudgets(StepState& step);
  void ApplyEvictions(StepState& step, StepStats& stats);
  void EvictHandedInPod(StepState& step, const scheduler::Eviction& eviction, StepStats& stats);
  void HoldPlacements(StepState& step);
  Status WriteBack(StepState& step, StepStats& stats);
  void LaunchPlacedTasks(StepState& step, StepStats& stats);
  std::vector<service::MachinePoolEvent> ReconcileMachinePools(const StepState& step,
                                                               StepStats& stats);
  std::vector<service::MachinePoolEvent> ScaleMachinePools(const StepState& step, StepStats& stats);
  void SyncBackend(const StepState& step);
  void ExportGauges(const StepState& step, StepStats& stats);
  void PublishStep(int64_t now, std::vector<store::WorkflowRecord> workflows,
                   const scheduler::ClusterSnapshot& snapshot, scheduler::CycleResult cycle,
                   std::vector<service::MachinePoolEvent> events);
  void ClearLeaderGauges();

  // A step that placed tasks is followed at once by the next, at most this many times in a row
  // (Start), so that a steady stream of submissions still leaves the loop idle between steps.
  static constexpr int kMaxStepsAtOnce = 3;
  // Whether the step that ended with `stats` is followed at once by the next (Start).
  bool FollowedAtOnce(const StepStats& stats) const {
    return stats.bound > 0 && steps_at_once_ < kMaxStepsAtOnce;
  }
  void ReportNodePoolConflicts(const scheduler::ClusterSnapshot& snapshot);

  store::Store& store_;
  backend::Backend& backend_;
  const Clock& clock_;
  const LoopOptions options_;
  const scheduler::Scheduler scheduler_;

  std::atomic<bool> leader_{false};
  bool adopted_ = false;
  std::set<std::string> launched_;  // backend keys this process launched and saw no exit for
  std::map<std::string, backend::TaskExit> exits_;  // polled, not yet applied to the store
  // Launched SCHEDULED tasks the backend reports on the cluster (Backend::Started), not yet
  // RUNNING in the store.
  std::set<std::string> started_;
  std::string node_pool_conflicts_;  // the last logged report (loop thread only)
  std::set<std::string> reported_;   // task keys reported unschedulable, not launched or ended
  EvictionsInFlight evictions_;      // victims the cluster is evicting (controller/evictions.h)
  ScaledMachinePools scaled_pools_;  // machine pools the cluster makes (loop thread only)
  StepMemo memo_;                    // workflows and their pods read by earlier steps
  scheduler::ViewCache views_;       // the cycle's view of the nodes, while they stay the same
  HandedInMemo handed_in_memo_;      // the pods handed in: their ids for the scheduler

  metrics::Gauge* leader_gauge_;
  metrics::Gauge* pending_gauge_;
  metrics::Gauge* running_gauge_;
  metrics::Gauge* fair_share_gauge_;
  metrics::Gauge* allocated_gauge_;
  metrics::Gauge* deserved_gauge_;
  metrics::Histogram* cycle_seconds_;
  metrics::Histogram* placement_cpu_seconds_;
  metrics::Counter* transitions_;
  metrics::Counter* step_errors_;

  void WaitForNextStep(bool idle, uint64_t nudges_before);

  // What Submitted handed in since the last step took it (TakeSubmitted).
  static constexpr size_t kMaxSubmittedTasks = 100'000;
  std::vector<std::shared_ptr<const store::WorkflowRecord>> TakeSubmitted();
  std::mutex submitted_mu_;
  std::vector<std::shared_ptr<const store::WorkflowRecord>> submitted_;
  size_t submitted_tasks_ = 0;  // in submitted_

  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> nudges_{0};
  int steps_at_once_ = 0;  // steps in a row run without waiting the interval (the loop's thread)
  std::thread thread_;
};

}  // namespace gpupool::controller
