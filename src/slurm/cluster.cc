#include "slurm/cluster.h"

#include <algorithm>
#include <atomic>
#include <iostream>
#include <iterator>
#include <optional>
#include <thread>

namespace gpupool::slurm {
namespace {

using Json = nlohmann::ordered_json;

// The newest moment of the past a job shows on slurmctld's clock: when it was submitted,
// started (running or ended jobs; a pending job's start_time is a forecast) and ended (ended
// jobs; a running job's end_time is its limit). Every change slurmctld makes after the listing
// is at or after it, so `update_time` = this misses none.
int64_t NewestPastTime(const SlurmJob& job, const JobOutcome& outcome) {
  int64_t newest = job.submit_time;
  if (outcome.phase != JobPhase::kPending) newest = std::max(newest, job.start_time);
  if (outcome.phase == JobPhase::kEnded) newest = std::max(newest, job.end_time);
  return newest;
}

bool Ended(const SlurmJob& job) { return OutcomeOf(job).phase == JobPhase::kEnded; }

}  // namespace

SlurmCluster::SlurmCluster(std::shared_ptr<RestClient> client, ClusterOptions options,
                           std::vector<std::shared_ptr<RestClient>> submitters)
    : client_(std::move(client)), submitters_(std::move(submitters)), options_(std::move(options)) {
  if (options_.submit.comment.empty()) options_.submit.comment = "gpupool";
}

// How long Run() leaves Slurm alone after it did not answer.
constexpr std::chrono::seconds kUnreachablePause{5};

Result<std::string> SlurmCluster::Connect() {
  ASSIGN_OR_RETURN(std::string release, client_->CheckVersion());
  std::lock_guard lock(mu_);
  RETURN_IF_ERROR(RefreshNodes());
  RETURN_IF_ERROR(RefreshJobsLocked());
  return release;
}

bool SlurmCluster::SlurmRecentlyUnreachable() const {
  return std::chrono::steady_clock::now() < unreachable_until_;
}

Status SlurmCluster::RefreshJobsLocked() {
  const auto asked = std::chrono::steady_clock::now();
  auto answer = client_->GetJobs(jobs_since_);
  listed_at_ = std::chrono::steady_clock::now();
  listing_took_ = listed_at_ - asked;
  if (!answer.ok() && answer.status().code() == StatusCode::kUnavailable) {
    unreachable_until_ = std::chrono::steady_clock::now() + kUnreachablePause;
  }
  ASSIGN_OR_RETURN(auto listing, std::move(answer));
  if (!listing) return OkStatus();  // 304: nothing changed
  std::map<int64_t, SlurmJob> jobs;
  std::map<std::string, JobRef> by_key;
  int64_t since = 0;
  int64_t max_id = 0;
  for (SlurmJob& job : *listing) {
    JobOutcome outcome = OutcomeOf(job);
    since = std::max(since, NewestPastTime(job, outcome));
    max_id = std::max(max_id, job.job_id);
    if (IsGateComment(job.comment, options_.submit.comment)) {
      // Shut outside this process's RunAll: left by a gpupool that stopped mid-burst, or another
      // replica's burst under way. Poll opens it once it has been shut for stale_gate_after.
      if (job.state == "PENDING" || job.state == "RUNNING") {
        held_gates_.try_emplace(job.job_id, asked);
      } else {
        held_gates_.erase(job.job_id);
      }
      continue;
    }
    auto keys = KeysOfJob(job);
    if (keys.empty()) continue;  // someone else's
    const bool cancelled = job.state == "CANCELLED";
    for (auto& [key, ref] : keys) {
      // Several jobs of one key (a cancelled one and its successor): the newest that is not
      // cancelled wins, else the newest.
      auto it = by_key.find(key);
      bool replace = it == by_key.end();
      if (!replace) {
        const SlurmJob& other = jobs[it->second.job_id];
        bool other_cancelled = other.state == "CANCELLED";
        replace = (cancelled == other_cancelled) ? job.job_id > other.job_id : other_cancelled;
      }
      if (replace) by_key[key] = ref;
    }
    jobs.emplace(job.job_id, std::move(job));
  }
  jobs_ = std::move(jobs);
  job_by_key_ = std::move(by_key);
  jobs_since_ = since;
  max_job_id_ = max_id;
  return OkStatus();
}

std::string SlurmCluster::JobRef::CancelId() const {
  if (array_job_id == 0) return std::to_string(job_id);
  return std::to_string(array_job_id) + "_" + std::to_string(index);
}

std::vector<std::pair<std::string, SlurmCluster::JobRef>> SlurmCluster::KeysOfJob(
    const SlurmJob& job) const {
  std::vector<std::pair<std::string, JobRef>> out;
  if (job.comment == options_.submit.comment) {
    out.emplace_back(job.name, JobRef{job.job_id});
    return out;
  }
  auto keys = ArrayKeys(job.comment, options_.submit.comment);
  if (!keys || job.array_job_id == 0) return out;
  auto add = [&](int64_t index) {
    if (index >= 0 && index < static_cast<int64_t>(keys->size())) {
      out.emplace_back((*keys)[index], JobRef{job.job_id, job.array_job_id, index});
    }
  };
  if (job.array_task_id) {
    add(*job.array_task_id);
  } else if (auto pending = ParseArrayIndexes(job.array_task_string); pending.ok()) {
    for (int64_t index : *pending) add(index);
  }
  return out;
}

const SlurmJob* SlurmCluster::JobOfLocked(const std::string& key, const Task& task) const {
  int64_t record = task.job_id;
  if (task.array_index >= 0) {
    // An element's record changes when it starts (slurmctld splits it off the pending ones).
    auto ref = job_by_key_.find(key);
    if (ref == job_by_key_.end() || ref->second.array_job_id != task.job_id ||
        ref->second.index != task.array_index) {
      return nullptr;
    }
    record = ref->second.job_id;
  }
  auto it = jobs_.find(record);
  return it == jobs_.end() ? nullptr : &it->second;
}

void SlurmCluster::Follow(Task& task, const JobRef& ref) {
  task.job_id = ref.array_job_id != 0 ? ref.array_job_id : ref.job_id;
  task.array_index = ref.array_job_id != 0 ? ref.index : -1;
}

Status SlurmCluster::RefreshNodes() {
  // Nodes carry no time of their last change, so they are listed in full (1,000 nodes: ~1 MB).
  // The requests are made outside nodes_mu_, so readers of the cached nodes never wait on them.
  ASSIGN_OR_RETURN(auto nodes, client_->GetNodes());
  ASSIGN_OR_RETURN(auto partitions, client_->GetPartitions());
  std::lock_guard nodes_lock(nodes_mu_);
  if (nodes) nodes_ = std::move(*nodes);
  if (partitions) partitions_ = std::move(*partitions);
  node_options_ = options_.nodes;
  for (const auto& p : partitions_) {
    if (p.state != "UP") node_options_.closed_partitions.insert(p.name);
  }
  return OkStatus();
}

Result<std::optional<JobSubmission>> SlurmCluster::Check(const TaskRun& run) const {
  std::lock_guard nodes_lock(nodes_mu_);
  for (const auto& node : nodes_) {
    if (node.name != run.node) continue;
    ASSIGN_OR_RETURN(JobSubmission submission,
                     SubmissionForTask(run, node, partitions_, options_.submit));
    return std::optional(std::move(submission));
  }
  return std::optional<JobSubmission>();
}

Result<std::vector<Json>> SlurmCluster::Nodes() {
  std::vector<SlurmNode> nodes;
  NodeOptions node_options;
  RETURN_IF_ERROR(RefreshNodes());
  {
    std::lock_guard nodes_lock(nodes_mu_);
    nodes = nodes_;
    node_options = node_options_;
  }
  // What gpupool's running jobs hold, from the job listing: refreshed here when nobody else is
  // talking to Slurm (Poll and Run keep it fresh otherwise).
  std::map<std::string, NodeUsage> own;
  {
    std::unique_lock lock(mu_, std::try_to_lock);
    if (lock.owns_lock() && !SlurmRecentlyUnreachable()) {
      (void)RefreshJobsLocked();
    } else if (!lock.owns_lock()) {
      lock.lock();
    }
    for (const auto& [id, job] : jobs_) {
      if (OutcomeOf(job).phase != JobPhase::kRunning || job.nodes.empty()) continue;
      own[job.nodes].Add(JobUsage(job));
    }
  }
  std::vector<Json> out;
  out.reserve(nodes.size());
  for (const auto& node : nodes) {
    auto usage = own.find(node.name);
    ASSIGN_OR_RETURN(
        Json json,
        NodeFromSlurm(node, usage == own.end() ? NodeUsage{} : usage->second, node_options));
    out.push_back(std::move(json));
  }
  return out;
}

Result<JobSubmission> SlurmCluster::SubmissionLocked(const std::string& key, const Task& task) {
  ASSIGN_OR_RETURN(auto submission, Check(task.run));
  if (!submission) {
    RETURN_IF_ERROR(RefreshNodes());
    ASSIGN_OR_RETURN(submission, Check(task.run));
  }
  if (!submission) {
    return InvalidArgumentError("Slurm has no node \"" + task.run.node + "\" for task " + key);
  }
  return std::move(*submission);
}

Status SlurmCluster::SubmitLocked(const std::string& key, Task& task) {
  ASSIGN_OR_RETURN(JobSubmission submission, SubmissionLocked(key, task));
  ASSIGN_OR_RETURN(task.job_id, client_->SubmitJob(submission));
  return OkStatus();
}

std::vector<Result<int64_t>> SlurmCluster::SubmitAllLocked(
    const std::vector<JobSubmission>& submissions) {
  std::vector<Result<int64_t>> ids(submissions.size(),
                                   UnavailableError("not submitted: Slurm stopped answering"));
  // Each connection submits the next job not taken yet; once Slurm stops answering, no one takes
  // another (each attempt would take seconds): those wait for Poll.
  std::atomic<size_t> next{0};
  std::atomic<bool> unreachable{false};
  auto submit = [&](RestClient& client) {
    for (size_t i = next++; i < submissions.size() && !unreachable; i = next++) {
      ids[i] = client.SubmitJob(submissions[i]);
      if (!ids[i].ok() && ids[i].status().code() == StatusCode::kUnavailable) unreachable = true;
    }
  };
  const size_t threads = std::min(submitters_.size(), submissions.size());
  if (threads <= 1) {
    submit(submitters_.empty() ? *client_ : *submitters_.front());
  } else {
    std::vector<std::jthread> workers;
    workers.reserve(threads);
    for (size_t t = 0; t < threads; ++t) workers.emplace_back([&, t] { submit(*submitters_[t]); });
  }
  if (unreachable) unreachable_until_ = std::chrono::steady_clock::now() + kUnreachablePause;
  return ids;
}

Status SlurmCluster::ListUnlessUnreachableLocked() {
  if (SlurmRecentlyUnreachable()) return UnavailableError("Slurm did not answer a moment ago");
  // The listing is fresh (304 when nothing changed), so a job submitted for a key by an earlier
  // process is found rather than submitted again.
  return RefreshJobsLocked();
}

Status SlurmCluster::Run(const TaskRun& run, bool adopt) {
  return RunAll({RunRequest{run, adopt}}).front();
}

// A burst under way in RunAll: its gate while held, and for each task submitted behind it (over
// every round), the request's index, its key and its job's id and array index.
struct SlurmCluster::Burst {
  bool gate_decided = false;
  std::optional<int64_t> gate;
  std::vector<size_t> requests;
  std::vector<std::string> keys;
  std::vector<std::pair<Result<int64_t>, int64_t>> ids;
};

std::vector<Status> SlurmCluster::RunAll(const std::vector<RunRequest>& requests,
                                         const MoreRuns& more) {
  std::lock_guard lock(mu_);
  std::vector<RunRequest> all = requests;  // the caller's, then those `more` gave
  std::vector<Status> out;
  std::optional<Status> listed;  // listed once, before the first task that needs it
  Burst burst;
  for (size_t begin = 0, round = 1;; ++round) {
    out.resize(all.size());
    std::vector<JobSubmission> submissions;
    for (size_t i = begin; i < all.size(); ++i) {
      const RunRequest& request = all[i];
      if (tasks_.contains(request.run.key)) continue;
      if (!listed) listed = ListUnlessUnreachableLocked();
      bool submit = false;
      out[i] = TrackLocked(request.run, request.adopt, *listed, submit);
      if (!out[i].ok() || !submit) continue;
      auto submission = SubmissionLocked(request.run.key, tasks_.at(request.run.key));
      if (!submission.ok()) {
        tasks_.erase(request.run.key);
        out[i] = submission.status();
        continue;
      }
      burst.requests.push_back(i);
      submissions.push_back(std::move(*submission));
    }
    SubmitGroupedLocked(std::move(submissions), burst);
    begin = all.size();
    // Launches that came while this burst was submitted join it behind its gate: submitted
    // after the gate opened, they would meet slurmctld launching this burst's jobs and take ten
    // to a hundred times longer each. A few rounds at most, so a stream cannot hold it shut.
    if (!burst.gate || !more || round >= kMaxBurstRounds) break;
    std::vector<RunRequest> joining = more();
    if (joining.empty()) break;
    all.insert(all.end(), std::make_move_iterator(joining.begin()),
               std::make_move_iterator(joining.end()));
  }
  CloseBurstLocked(burst);
  for (size_t n = 0; n < burst.requests.size(); ++n) {
    const std::string& key = burst.keys[n];
    auto& [id, index] = burst.ids[n];
    if (id.ok()) {
      tasks_.at(key).job_id = *id;
      tasks_.at(key).array_index = index;
    } else if (id.status().code() != StatusCode::kUnavailable) {
      tasks_.erase(key);  // refused by Slurm
      out[burst.requests[n]] = id.status();
    }  // else: waits for Poll, which first looks for a job of its key (by name or array comment)
  }
  return out;
}

void SlurmCluster::SubmitGroupedLocked(std::vector<JobSubmission> submissions, Burst& burst) {
  std::vector<std::vector<size_t>> groups;
  if (options_.arrays) {
    groups = GroupForArrays(submissions);
  } else {
    for (size_t i = 0; i < submissions.size(); ++i) groups.push_back({i});
  }
  const size_t first = burst.keys.size();
  for (const JobSubmission& submission : submissions) burst.keys.push_back(submission.name);
  std::vector<JobSubmission> jobs;
  jobs.reserve(groups.size());
  for (const auto& group : groups) {
    if (group.size() == 1) {
      jobs.push_back(std::move(submissions[group.front()]));
      continue;
    }
    std::vector<const JobSubmission*> elements;
    for (size_t i : group) elements.push_back(&submissions[i]);
    jobs.push_back(ArraySubmission(elements));
  }
  // A burst of several jobs goes behind a gate (translate.h, GateSubmission), decided by its
  // first round; without one (a single job, or the gate refused) they are submitted free.
  if (!burst.gate_decided && !jobs.empty()) {
    burst.gate_decided = true;
    if (options_.gate_bursts && jobs.size() > 1) burst.gate = OpenGateLocked(jobs.front());
  }
  if (burst.gate) {
    for (JobSubmission& job : jobs) job.dependency = "afterany:" + std::to_string(*burst.gate);
  }
  std::vector<Result<int64_t>> ids = SubmitAllLocked(jobs);
  burst.ids.resize(burst.keys.size(), {UnavailableError("not submitted"), -1});
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t e = 0; e < groups[g].size(); ++e) {
      burst.ids[first + groups[g][e]] = {ids[g],
                                         groups[g].size() == 1 ? -1 : static_cast<int64_t>(e)};
    }
  }
}

void SlurmCluster::CloseBurstLocked(Burst& burst) {
  if (!burst.gate) return;
  listing_paused_until_ = std::chrono::steady_clock::now() + options_.pause_listing_after_burst;
  CancelPartialGangsLocked(burst.keys, burst.ids);
  // A failed cancel is retried at the next Poll: held "since ever", the gate is past stale.
  if (!client_->CancelJob(*burst.gate).ok()) held_gates_[*burst.gate] = {};
}

std::optional<int64_t> SlurmCluster::OpenGateLocked(const JobSubmission& like) {
  auto gate = client_->SubmitJob(GateSubmission(like, options_.submit.comment));
  if (!gate.ok()) {
    // Not worth failing the burst over: its jobs then start as Slurm takes them.
    std::cerr << "gpupool: slurm: submitting the burst without a gate: " << gate.status().message()
              << std::endl;
    return std::nullopt;
  }
  return *gate;
}

void SlurmCluster::CancelPartialGangsLocked(const std::vector<std::string>& keys,
                                            std::vector<std::pair<Result<int64_t>, int64_t>>& ids) {
  std::map<std::string_view, int> members;
  std::map<std::string_view, std::string> missing;  // gang -> the first member not submitted
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string_view gang = GangOf(keys[i]);
    ++members[gang];
    if (!ids[i].first.ok() && !missing.contains(gang)) {
      missing[gang] = keys[i] + ": " + ids[i].first.status().message();
    }
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string_view gang = GangOf(keys[i]);
    auto why = missing.find(gang);
    if (why == missing.end() || members[gang] < 2) continue;
    auto& [id, index] = ids[i];
    if (id.ok()) {
      JobRef ref{*id, index >= 0 ? *id : 0, index};
      if (!client_->CancelJob(ref.CancelId()).ok()) to_cancel_.insert(keys[i]);
    }
    // Refused, so RunAll forgets the task and its caller fails it, whatever kept it from Slurm.
    id = FailedPreconditionError("not started: " + std::string(gang) +
                                 " starts whole or not at all, and member " + why->second);
  }
}

Status SlurmCluster::TrackLocked(const TaskRun& run, bool adopt, const Status& listed,
                                 bool& submit) {
  if (tasks_.contains(run.key)) return OkStatus();
  to_cancel_.erase(run.key);
  Task task;
  task.run = run;
  if (listed.ok()) {
    // A cancelled job of the key was stopped (gpupool evicted the task, which then keeps its
    // key): a new launch runs it again. An adopted task keeps even a cancelled job.
    if (auto it = job_by_key_.find(run.key);
        it != job_by_key_.end() && (adopt || jobs_.at(it->second.job_id).state != "CANCELLED")) {
      Follow(task, it->second);
      tasks_.emplace(run.key, std::move(task));
      return OkStatus();
    }
    if (adopt) {
      task.lost = "no Slurm job named " + run.key +
                  " (it ended longer ago than slurmctld keeps jobs, MinJobAge, or never started)";
      tasks_.emplace(run.key, std::move(task));
      return OkStatus();
    }
  } else if (listed.code() != StatusCode::kUnavailable) {
    return listed;
  }
  // Submitted now, or (Slurm did not answer a moment ago) waiting for Poll to submit it.
  submit = listed.ok();
  tasks_.emplace(run.key, std::move(task));
  return OkStatus();
}

Status SlurmCluster::Stop(const std::string& key) {
  std::lock_guard lock(mu_);
  std::optional<JobRef> ref;
  const SlurmJob* job = nullptr;
  if (auto it = tasks_.find(key); it != tasks_.end()) {
    if (it->second.job_id != 0) {
      ref = JobRef{it->second.job_id, it->second.array_index >= 0 ? it->second.job_id : 0,
                   it->second.array_index};
      job = JobOfLocked(key, it->second);
    }
    tasks_.erase(it);
  } else if (auto known = job_by_key_.find(key); known != job_by_key_.end()) {
    ref = known->second;
    job = &jobs_.at(known->second.job_id);
  }
  if (!ref) {
    // Maybe submitted by a request whose answer was lost: cancel whatever shows up.
    to_cancel_.insert(key);
    return OkStatus();
  }
  if (job != nullptr && Ended(*job)) return OkStatus();
  // An array element is cancelled alone ("100_3"); its siblings run on.
  Status cancelled = client_->CancelJob(ref->CancelId());
  if (!cancelled.ok()) to_cancel_.insert(key);
  return cancelled;
}

Result<std::vector<TaskEvent>> SlurmCluster::Poll() {
  std::lock_guard lock(mu_);
  std::vector<TaskEvent> events;
  if (tasks_.empty() && to_cancel_.empty() && held_gates_.empty()) return events;
  const auto pause = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      listing_took_ * options_.listing_pace);
  if (std::chrono::steady_clock::now() < std::max(listed_at_ + pause, listing_paused_until_)) {
    return events;
  }
  RETURN_IF_ERROR(RefreshJobsLocked());

  for (auto it = to_cancel_.begin(); it != to_cancel_.end();) {
    auto known = job_by_key_.find(*it);
    if (known != job_by_key_.end() && !Ended(jobs_.at(known->second.job_id))) {
      if (!client_->CancelJob(known->second.CancelId()).ok()) {
        ++it;
        continue;
      }
    }
    it = to_cancel_.erase(it);
  }
  // Gates open only after the cancels above: a gang's members cancelled because one of them
  // never reached Slurm must not start in between.
  const auto now = std::chrono::steady_clock::now();
  for (auto it = held_gates_.begin(); it != held_gates_.end();) {
    if (now - it->second < options_.stale_gate_after) {
      ++it;
      continue;
    }
    // Asked once: an error other than Slurm not answering means the gate has ended already.
    Status cancelled = client_->CancelJob(it->first);
    it = cancelled.code() == StatusCode::kUnavailable ? std::next(it) : held_gates_.erase(it);
  }

  for (auto it = tasks_.begin(); it != tasks_.end();) {
    const std::string& key = it->first;
    Task& task = it->second;
    if (task.job_id == 0 && task.lost.empty()) {
      if (auto known = job_by_key_.find(key);
          known != job_by_key_.end() && jobs_.at(known->second.job_id).state != "CANCELLED") {
        Follow(task, known->second);  // an earlier, unanswered submission did reach Slurm
      } else {
        Status submitted = SubmitLocked(key, task);
        if (!submitted.ok() && submitted.code() != StatusCode::kUnavailable) {
          task.lost = "Slurm refused the job: " + submitted.message();
        }
      }
    }
    if (!task.lost.empty()) {
      TaskEvent event{TaskEvent::Kind::kEnded, key};
      event.job_id = task.job_id;
      event.exit_code = 1;
      event.reason = task.lost;
      event.lost = true;
      events.push_back(std::move(event));
      it = tasks_.erase(it);
      continue;
    }
    if (task.job_id == 0) {
      ++it;
      continue;
    }
    const SlurmJob* found = JobOfLocked(key, task);
    if (found == nullptr) {
      // Listed by id up to a newer one, yet absent: slurmctld forgot it (purged, or its state
      // was lost in a restart).
      if (task.job_id <= max_job_id_)
        task.lost = "Slurm job " + std::to_string(task.job_id) +
                    (task.array_index >= 0 ? "_" + std::to_string(task.array_index) : "") + " of " +
                    key + " is gone from slurmctld";
      ++it;
      continue;
    }
    const SlurmJob& job = *found;
    JobOutcome outcome = OutcomeOf(job);
    if (outcome.phase != JobPhase::kPending && !task.started) {
      task.started = true;
      TaskEvent event{TaskEvent::Kind::kStarted, key, job.job_id, job.nodes};
      event.time_ms = job.start_time * 1000;
      events.push_back(std::move(event));
    }
    if (outcome.phase == JobPhase::kEnded) {
      TaskEvent event{TaskEvent::Kind::kEnded, key, job.job_id, job.nodes};
      event.time_ms = job.end_time * 1000;
      event.exit_code = outcome.exit_code;
      event.reason = outcome.reason;
      event.lost = outcome.lost;
      events.push_back(std::move(event));
      it = tasks_.erase(it);
      continue;
    }
    ++it;
  }
  return events;
}

size_t SlurmCluster::Tracked() const {
  std::lock_guard lock(mu_);
  return tasks_.size();
}

std::vector<bool> SlurmCluster::HaveJobs(const std::vector<std::string>& keys) const {
  std::lock_guard lock(mu_);
  std::vector<bool> out;
  out.reserve(keys.size());
  for (const std::string& key : keys) {
    auto it = tasks_.find(key);
    out.push_back(it != tasks_.end() && it->second.job_id != 0);
  }
  return out;
}

std::string SlurmCluster::OutputFile(const std::string& key) const {
  // options_ is set by the constructor and read-only afterwards: no lock.
  return OutputPath(options_.submit.output_dir, key);
}

}  // namespace gpupool::slurm
