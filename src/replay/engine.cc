#include "replay/engine.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <queue>
#include <random>
#include <set>
#include <unordered_map>

#include "autoscaler/provisioner.h"
#include "common/strings.h"
#include "replay/cluster.h"

namespace gpupool::replay {
namespace {

// Events at one time run in this order.
enum class EventKind { kCompletion, kExecTimeout, kQueueTimeout, kArrival, kInterruption, kWakeup };

struct Event {
  int64_t t_ms;
  EventKind kind;
  uint64_t seq;  // insertion order: ties stay deterministic
  int job = -1;
  int epoch = 0;
  std::string node;
  bool operator>(const Event& o) const {
    if (t_ms != o.t_ms) return t_ms > o.t_ms;
    if (kind != o.kind) return kind > o.kind;
    return seq > o.seq;
  }
};

enum class Phase { kFuture, kPending, kRunning, kDone };

struct JobState {
  const TraceJob* trace = nullptr;
  JobRecord record;
  Phase phase = Phase::kFuture;
  int gang_min = 1;
  int bound = 0;
  int epoch = 0;  // moves when the job stops, so its old timers are ignored
};

int64_t CeilTo(int64_t t, int64_t period) { return (t + period - 1) / period * period; }

// Exponential draw with mean 1/rate hours, in milliseconds, from the generator's raw bits (the
// standard distributions' algorithms are not fixed across libraries; this is).
int64_t ExponentialMs(std::mt19937_64& rng, double per_hour) {
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
  const double hours = -std::log1p(-u) / per_hour;
  return static_cast<int64_t>(std::min(hours * 3.6e6, 9.0e15));
}

class Engine {
 public:
  Engine(const ReplayInput& input, const ReplayOptions& options,
         std::vector<model::MachinePool> pools)
      : input_(input),
        options_(options),
        scheduler_(options.scheduler),
        pools_(std::move(pools)),
        cluster_(input.scenario->snapshot, *input.trace),
        rng_(options.seed) {}

  Result<PolicyRun> Run(const ProgressFn& progress);

 private:
  void Push(int64_t t, EventKind kind, int job = -1, int epoch = 0, std::string node = "") {
    events_.push(Event{t, kind, seq_++, job, epoch, std::move(node)});
  }
  void RequestTick(int64_t t) {
    const int64_t at = CeilTo(std::max(t, now_), options_.cycle_period_ms);
    if (!next_tick_ || at < *next_tick_) next_tick_ = at;
  }
  // Something changed: the next tick decides on it (during a tick, the one a period later).
  void Changed() {
    dirty_ = true;
    RequestTick(in_tick_ ? now_ + 1 : now_);
  }
  void AdvanceTo(int64_t t);
  void Handle(const Event& e);
  void Arrive(int job);
  void Start(int job);
  void Finish(int job, JobOutcome outcome);
  Status Tick();
  void ApplyCycle(const scheduler::CycleResult& r);
  Status Reconcile();
  void Interrupt(const std::string& name);
  void ScheduleWakeups();
  void NoteNodes();
  void Sample(int64_t t);
  // Every change of a job's phase, so that the jobs in each are counted as they change (a
  // sample would otherwise read all ~24,000 jobs).
  void SetPhase(JobState& j, Phase phase) {
    --jobs_in_[static_cast<int>(j.phase)];
    ++jobs_in_[static_cast<int>(phase)];
    j.phase = phase;
  }
  void RecordNodeEvent(const std::string& node, const std::string& pool, std::string what) {
    run_.node_events.push_back({now_, node, pool, std::move(what)});
  }

  const ReplayInput& input_;
  const ReplayOptions& options_;
  const scheduler::Scheduler scheduler_;
  scheduler::ViewCache views_;  // the nodes' part of the view, kept while the nodes stay
  const std::vector<model::MachinePool> pools_;
  ReplayCluster cluster_;
  std::mt19937_64 rng_;

  std::vector<JobState> jobs_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t seq_ = 0;
  int64_t now_ = 0;
  std::optional<int64_t> next_tick_;
  bool dirty_ = true;  // the cluster changed since the last cycle
  bool due_ = false;   // a timer of the cluster came due
  bool in_tick_ = false;
  std::set<int64_t> wakeups_;
  std::set<std::string> seen_nodes_;
  std::map<std::string, double> cost_usd_;    // per machine pool, so far
  std::map<std::string, int> interruptions_;  // per machine pool, so far
  std::map<std::string, std::pair<std::optional<double>, std::optional<double>>> shares_;
  PolicyRun run_;
  int64_t cycles_ = 0;
  std::array<int, 4> jobs_in_{};  // by Phase (kFuture's unread)
};

void Engine::AdvanceTo(int64_t t) {
  if (t <= now_) return;
  const double hours = static_cast<double>(t - now_) / 3.6e6;
  for (const auto& [pool, micros] : cluster_.HourlyMicrosByMachinePool(*input_.catalog)) {
    cost_usd_[pool] += static_cast<double>(micros) / 1e6 * hours;
  }
  now_ = t;
}

void Engine::Arrive(int job) {
  JobState& j = jobs_[job];
  SetPhase(j, Phase::kPending);
  cluster_.AddJobPods(job, *j.trace);
  if (std::optional<int64_t> timeout = j.trace->queue_timeout_ms.has_value()
                                           ? j.trace->queue_timeout_ms
                                           : options_.queue_timeout_ms) {
    Push(now_ + *timeout, EventKind::kQueueTimeout, job, j.epoch);
  }
  Changed();
}

void Engine::Start(int job) {
  JobState& j = jobs_[job];
  SetPhase(j, Phase::kRunning);
  if (!j.record.start_ms) j.record.start_ms = now_;
  if (j.trace->duration_ms)
    Push(now_ + *j.trace->duration_ms, EventKind::kCompletion, job, j.epoch);
  if (std::optional<int64_t> timeout = j.trace->exec_timeout_ms.has_value()
                                           ? j.trace->exec_timeout_ms
                                           : options_.exec_timeout_ms) {
    Push(now_ + *timeout, EventKind::kExecTimeout, job, j.epoch);
  }
}

void Engine::Finish(int job, JobOutcome outcome) {
  JobState& j = jobs_[job];
  SetPhase(j, Phase::kDone);
  ++j.epoch;
  j.bound = 0;
  j.record.outcome = outcome;
  j.record.end_ms = now_;
  j.record.reason.clear();
  cluster_.RemoveJobPods(job);
  Changed();
}

void Engine::Handle(const Event& e) {
  switch (e.kind) {
    case EventKind::kCompletion:
      if (jobs_[e.job].epoch == e.epoch && jobs_[e.job].phase == Phase::kRunning) {
        Finish(e.job, JobOutcome::kCompleted);
      }
      break;
    case EventKind::kExecTimeout:
      if (jobs_[e.job].epoch == e.epoch && jobs_[e.job].phase == Phase::kRunning) {
        Finish(e.job, JobOutcome::kExecTimeout);
      }
      break;
    case EventKind::kQueueTimeout:
      // Only a job that never started times out in the queue.
      if (jobs_[e.job].phase == Phase::kPending && !jobs_[e.job].record.start_ms) {
        Finish(e.job, JobOutcome::kQueueTimeout);
      }
      break;
    case EventKind::kArrival:
      Arrive(e.job);
      break;
    case EventKind::kInterruption:
      Interrupt(e.node);
      break;
    case EventKind::kWakeup:
      wakeups_.erase(e.t_ms);
      due_ = true;
      RequestTick(now_);
      break;
  }
}

void Engine::Interrupt(const std::string& name) {
  const model::Node* node = cluster_.FindNode(name);
  if (node == nullptr) {
    RecordNodeEvent(name, "", "interruption skipped: no such node at this time");
    return;
  }
  Result<model::Node> tainted = autoscaler::BeginInterruption(*node, pools_, now_);
  if (!tainted.ok()) {
    RecordNodeEvent(name, "", "interruption skipped: " + tainted.status().message());
    return;
  }
  const std::string pool = tainted->labels.at(model::kMachinePoolLabel);
  ++interruptions_[pool];
  RecordNodeEvent(name, pool, "spot interruption notice");
  cluster_.UpsertNode(std::move(tainted).value());
  Changed();
}

void Engine::ApplyCycle(const scheduler::CycleResult& r) {
  ++cycles_;
  std::set<std::pair<int, int>> counted;  // (job, reason): one count per job and cycle
  for (const scheduler::Eviction& e : r.evictions) {
    const int job = cluster_.Unbind(e.pod);
    if (job < 0) continue;
    JobState& j = jobs_[job];
    --j.bound;
    if (counted.insert({job, static_cast<int>(e.reason)}).second) {
      switch (e.reason) {
        case scheduler::EvictionReason::kPreempt:
          ++j.record.preemptions;
          break;
        case scheduler::EvictionReason::kReclaim:
          ++j.record.reclaims;
          break;
        case scheduler::EvictionReason::kNoExecute:
          ++j.record.interruptions;
          break;
      }
    }
    if (j.phase == Phase::kRunning && j.bound < j.gang_min) {
      SetPhase(j, Phase::kPending);
      ++j.epoch;  // its completion and exec timeout no longer apply: it runs anew later
    }
  }
  for (const scheduler::Binding& b : r.bindings) {
    const int job = cluster_.Bind(b.pod, b.node);
    if (job < 0) continue;
    JobState& j = jobs_[job];
    ++j.bound;
    if (j.phase == Phase::kPending && j.bound >= j.gang_min) Start(job);
  }
  for (const scheduler::PendingPod& p : r.unschedulable) {
    const int job = cluster_.JobOfPod(p.pod);
    if (job >= 0) jobs_[job].record.reason = p.reason;
  }
  shares_.clear();
  std::set<std::string> unlimited;
  for (const scheduler::QueueShare& q : r.fair_share) {
    const scheduler::ResourceShare& gpu = q.resources[0];
    auto& [deserved, fair] = shares_[q.queue];
    if (gpu.deserved == model::kUnlimited) unlimited.insert(q.queue);
    const int64_t own = gpu.deserved == model::kUnlimited ? 0 : gpu.deserved;
    deserved = deserved.value_or(0) + static_cast<double>(own) / 1000.0;
    fair = fair.value_or(0) + static_cast<double>(gpu.fair_share) / 1000.0;
  }
  for (const std::string& q : unlimited) shares_[q].first.reset();
  for (const scheduler::NoExecuteDeadline& d : r.no_execute_deadlines) {
    if (d.deadline_ms && *d.deadline_ms > now_ && wakeups_.insert(*d.deadline_ms).second) {
      Push(*d.deadline_ms, EventKind::kWakeup);
    }
  }
  // Evicted pods wait for the next cycle; placed pods changed nothing the next cycle would see.
  dirty_ = !r.evictions.empty();
  if (dirty_) RequestTick(now_ + 1);
}

Status Engine::Reconcile() {
  autoscaler::ProvisionOptions po;
  po.provision_delay_ms = options_.provision_delay_ms;
  po.scale_down_after_ms = options_.scale_down_after_ms;
  po.scheduler = options_.scheduler;
  ASSIGN_OR_RETURN(autoscaler::ProvisionDecision d,
                   autoscaler::Reconcile(cluster_.snapshot(), pools_, *input_.catalog, now_, po));
  for (const autoscaler::NodeEvent& e : d.events) RecordNodeEvent(e.node, e.machine_pool, e.what);
  for (const std::string& name : d.deletes) cluster_.RemoveNode(name);
  for (model::Node& node : d.upserts) cluster_.UpsertNode(std::move(node));
  if (!d.deletes.empty() || !d.upserts.empty()) {
    NoteNodes();
    Changed();
  }
  return OkStatus();
}

// Draws the interruption time of spot nodes seen for the first time.
void Engine::NoteNodes() {
  for (const model::Node& node : cluster_.snapshot().nodes) {
    if (!seen_nodes_.insert(node.name).second) continue;
    auto capacity = node.labels.find(model::kCapacityTypeLabel);
    if (options_.spot_interruptions_per_node_hour <= 0 || capacity == node.labels.end() ||
        capacity->second != model::CapacityTypeName(model::CapacityType::kSpot)) {
      continue;
    }
    Push(now_ + ExponentialMs(rng_, options_.spot_interruptions_per_node_hour),
         EventKind::kInterruption, -1, 0, node.name);
  }
}

// Timers the nodes carry: ready, interruption deadline, scale-down of an empty node.
void Engine::ScheduleWakeups() {
  for (const model::Node& node : cluster_.snapshot().nodes) {
    if (!node.labels.contains(model::kMachinePoolLabel)) continue;
    std::optional<int64_t> empty_until =
        autoscaler::AnnotationMs(node, autoscaler::kEmptySinceAnnotation);
    if (empty_until) *empty_until += options_.scale_down_after_ms;
    for (std::optional<int64_t> t :
         {autoscaler::AnnotationMs(node, autoscaler::kReadyAtAnnotation),
          autoscaler::AnnotationMs(node, autoscaler::kInterruptionDeadlineAnnotation),
          empty_until}) {
      if (t && *t > now_ && wakeups_.insert(*t).second) Push(*t, EventKind::kWakeup);
    }
  }
}

Status Engine::Tick() {
  next_tick_.reset();
  in_tick_ = true;
  const bool changed = dirty_ || due_;
  due_ = false;
  if (changed && (cluster_.pending_pods() > 0 || cluster_.HasNoExecuteTaint())) {
    cluster_.SetNow(now_);
    ApplyCycle(scheduler_.RunCycle(cluster_.snapshot(), &views_));
  } else {
    dirty_ = false;
  }
  if (!pools_.empty() && changed) {
    Status s = Reconcile();
    in_tick_ = false;
    RETURN_IF_ERROR(s);
    ScheduleWakeups();
  }
  in_tick_ = false;
  return OkStatus();
}

void Engine::Sample(int64_t t) {
  Series& s = run_.series;
  s.t_ms.push_back(t);
  const ClusterMeasure m = cluster_.Measure();
  for (auto& [name, pool] : s.node_pools) {
    auto it = m.node_pools.find(name);
    const PoolMeasure p = it == m.node_pools.end() ? PoolMeasure{} : it->second;
    pool.capacity_gpus.push_back(static_cast<double>(p.capacity_milli) / 1000.0);
    pool.allocated_gpus.push_back(static_cast<double>(p.allocated_milli) / 1000.0);
    pool.fragmentation_gpus.push_back(p.fragmentation_milli / 1000.0);
  }
  s.pending_gpus.push_back(static_cast<double>(m.pending_gpu_milli) / 1000.0);
  s.pending_jobs.push_back(jobs_in_[static_cast<int>(Phase::kPending)]);
  s.running_jobs.push_back(jobs_in_[static_cast<int>(Phase::kRunning)]);
  for (auto& [name, q] : s.queues) {
    auto it = m.queue_allocated_milli.find(name);
    q.allocated_gpus.push_back(
        it == m.queue_allocated_milli.end() ? 0.0 : static_cast<double>(it->second) / 1000.0);
    auto share = shares_.find(name);
    q.deserved_gpus.push_back(share == shares_.end() ? std::nullopt : share->second.first);
    q.fair_share_gpus.push_back(share == shares_.end() ? std::nullopt : share->second.second);
  }
  for (auto& [name, mp] : s.machine_pools) {
    auto nodes = m.machine_pool_nodes.find(name);
    mp.nodes.push_back(nodes == m.machine_pool_nodes.end() ? 0 : nodes->second);
    mp.cost_usd.push_back(cost_usd_[name]);
    mp.interruptions.push_back(interruptions_[name]);
  }
}

Result<PolicyRun> Engine::Run(const ProgressFn& progress) {
  run_.policy = std::string(scheduler::PlacementPolicyName(options_.scheduler.policy));
  const Trace& trace = *input_.trace;
  jobs_.resize(trace.jobs.size());
  for (size_t i = 0; i < trace.jobs.size(); ++i) {
    JobState& j = jobs_[i];
    const TraceJob& t = trace.jobs[i];
    j.trace = &t;
    j.gang_min = t.gang_min > 0 ? t.gang_min : t.pods;
    j.record.name = t.name;
    j.record.queue = t.queue.empty() ? scheduler::kDefaultQueue : t.queue;
    j.record.pods = t.pods;
    j.record.gpu_milli = t.GpuMilliPerPod() * t.pods;
    j.record.submit_ms = t.submit_ms;
    Push(t.submit_ms, EventKind::kArrival, static_cast<int>(i));
  }
  for (const InterruptionAt& at : options_.interruptions) {
    Push(at.at_ms, EventKind::kInterruption, -1, 0, at.node);
  }
  for (const std::string& pool : cluster_.NodePoolNames()) run_.series.node_pools[pool];
  for (const std::string& queue : cluster_.QueueNames()) run_.series.queues[queue];
  for (const model::MachinePool& pool : pools_) run_.series.machine_pools[pool.name];
  const int64_t horizon = options_.until_ms.value_or(trace.end_ms);
  const int64_t sample_period =
      options_.sample_period_ms > 0
          ? options_.sample_period_ms
          : std::max(options_.cycle_period_ms,
                     CeilTo(std::max<int64_t>(horizon, 1) / 400 + 1, options_.cycle_period_ms));
  NoteNodes();
  if (!pools_.empty()) RequestTick(0);  // min_replicas come up at the start
  int64_t next_sample = 0;
  while (true) {
    std::optional<int64_t> t;
    if (!events_.empty()) t = events_.top().t_ms;
    if (next_tick_ && (!t || *next_tick_ < *t)) t = next_tick_;
    if (!t || (options_.until_ms && *t > *options_.until_ms)) break;
    while (next_sample < *t) {
      AdvanceTo(next_sample);
      Sample(next_sample);
      next_sample += sample_period;
    }
    AdvanceTo(*t);
    while (!events_.empty() && events_.top().t_ms == *t) {
      Event e = events_.top();
      events_.pop();
      Handle(e);
    }
    if (next_tick_ && *next_tick_ == *t) {
      RETURN_IF_ERROR(Tick());
    }
    if (progress) progress(now_, horizon);
  }
  const int64_t end = options_.until_ms.value_or(std::max(now_, trace.end_ms));
  while (next_sample <= end) {
    AdvanceTo(next_sample);
    Sample(next_sample);
    next_sample += sample_period;
  }
  AdvanceTo(end);
  if (run_.series.t_ms.empty() || run_.series.t_ms.back() < end) Sample(end);
  for (JobState& j : jobs_) {
    if (j.phase == Phase::kRunning) j.record.outcome = JobOutcome::kRunning;
    if (j.phase == Phase::kPending || j.phase == Phase::kFuture) {
      j.record.outcome = JobOutcome::kPending;
    }
    if (j.phase != Phase::kPending) j.record.reason.clear();
    run_.jobs.push_back(std::move(j.record));
  }
  SummarizeJobs(run_.jobs, run_.summary, run_.queues);
  SummarizeSeries(run_.series, run_.summary);
  for (const auto& [pool, n] : interruptions_) run_.summary.interruptions += n;
  for (const auto& [pool, usd] : cost_usd_) run_.summary.machine_pool_cost_usd += usd;
  run_.summary.cycles = cycles_;
  run_.summary.end_ms = end;
  return std::move(run_);
}

}  // namespace

Status Validate(const ReplayOptions& options) {
  RETURN_IF_ERROR(scheduler::Validate(options.scheduler));
  if (options.cycle_period_ms <= 0) return InvalidArgumentError("--period: must be positive");
  if (options.sample_period_ms < 0) return InvalidArgumentError("--sample: must not be negative");
  if (!(options.spot_interruptions_per_node_hour >= 0)) {
    return InvalidArgumentError("--spot-interruption-rate: must not be negative");
  }
  if (options.provision_delay_ms < 0) {
    return InvalidArgumentError("--provision-delay: must not be negative");
  }
  return OkStatus();
}

Status CheckInput(const ReplayInput& input) {
  const scheduler::Scenario& scenario = *input.scenario;
  std::vector<std::string> queues = {scheduler::kDefaultQueue};
  for (const model::Queue& q : scenario.snapshot.queues) queues.push_back(q.name);
  std::vector<std::string> pools = {std::string(model::kDefaultNodePool)};
  for (const model::NodePool& p : scenario.snapshot.node_pools) pools.push_back(p.name);
  for (const TraceJob& job : input.trace->jobs) {
    const std::string where = input.trace->file + ":" + std::to_string(job.line) + ": ";
    if (!job.queue.empty() && std::find(queues.begin(), queues.end(), job.queue) == queues.end()) {
      return InvalidArgumentError(where + "job " + job.name + ": queue \"" + job.queue +
                                  "\" is not in the scenario" + DidYouMean(job.queue, queues));
    }
    for (const std::string& pool : Split(job.node_pools, ',')) {
      if (pool.empty() || std::find(pools.begin(), pools.end(), pool) != pools.end()) continue;
      return InvalidArgumentError(where + "job " + job.name + ": node pool \"" + pool +
                                  "\" is not in the scenario" + DidYouMean(pool, pools));
    }
  }
  return autoscaler::MachinePoolsFromManifests(scenario.machine_pools, *input.catalog).status();
}

Result<PolicyRun> Run(const ReplayInput& input, const ReplayOptions& options,
                      const ProgressFn& progress) {
  RETURN_IF_ERROR(Validate(options));
  RETURN_IF_ERROR(CheckInput(input));
  ASSIGN_OR_RETURN(
      std::vector<model::MachinePool> pools,
      autoscaler::MachinePoolsFromManifests(input.scenario->machine_pools, *input.catalog));
  Engine engine(input, options, std::move(pools));
  return engine.Run(progress);
}

}  // namespace gpupool::replay
