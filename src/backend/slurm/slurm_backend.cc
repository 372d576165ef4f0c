#include "backend/slurm/slurm_backend.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>

namespace gpupool::backend {
namespace {

std::string OsUser() {
  if (const passwd* pw = getpwuid(geteuid()); pw != nullptr && pw->pw_name != nullptr) {
    return pw->pw_name;
  }
  return "";
}

// How often the worker asks Slurm for job changes when nothing is queued.
constexpr std::chrono::milliseconds kPollPeriod{200};
// Launches nobody said were all there (LaunchesDone) go to Slurm after this long.
constexpr std::chrono::milliseconds kReleaseAfter{1000};

// How long a burst waits for the loop's next step while the loop says more launches may follow:
// a step of the placing kind takes 0.1-0.5 s on a busy 2-core machine.
constexpr std::chrono::milliseconds kMoreLaunchesWait{1000};

// Connections that submit a burst of jobs side by side (slurmrestd served 286 submissions/s on
// one connection and 740/s on eight on a 2-core machine).
constexpr int kSubmitConnections = 4;

// Polls list the jobs at most a fifth of the time (slurm::ClusterOptions::listing_pace).
constexpr double kListingPace = 4;

}  // namespace

Result<std::unique_ptr<SlurmBackend>> SlurmBackend::Open(std::string_view url,
                                                         const BackendOptions& options) {
  ASSIGN_OR_RETURN(slurm::Endpoint endpoint, slurm::ParseEndpoint(url));
  slurm::ClientOptions client_options;
  client_options.user = options.slurm_user.empty() ? OsUser() : options.slurm_user;
  client_options.token = slurm::TokenSource::FromEnvironmentOr(options.slurm_jwt_file);
  // slurmrestd takes about 9 s to say that slurmctld does not answer: one retry, and the
  // worker's next round tries again.
  client_options.max_attempts = 2;
  auto connect = [&] {
    return std::make_shared<slurm::RestClient>(
        endpoint, slurm::MakeBeastTransport(endpoint, slurm::HttpTimeouts{}), client_options);
  };
  auto client = connect();
  // A burst of launches is submitted over several connections at once: slurmrestd serves
  // requests in parallel, and one job per round trip is what limits a serial stream.
  std::vector<std::shared_ptr<slurm::RestClient>> submitters;
  for (int i = 0; i < kSubmitConnections; ++i) submitters.push_back(connect());
  slurm::ClusterOptions cluster_options;
  cluster_options.submit.output_dir =
      options.slurm_output_dir.empty() ? "/tmp" : options.slurm_output_dir;
  cluster_options.submit.partition = options.slurm_partition;
  cluster_options.listing_pace = kListingPace;
  // One submission per node per burst instead of one per task: slurmctld takes submissions one
  // at a time (1.4 ms each at 200 nodes, ~10 ms at 1,000), an array's elements in one go.
  cluster_options.arrays = true;
  // A burst waits behind a gate until all of it is in: once slurmctld starts launching jobs it
  // takes each further submission ten to a hundred times slower, and a gang must start whole.
  cluster_options.gate_bursts = true;
  cluster_options.pause_listing_after_burst = std::chrono::seconds(3);
  auto cluster = std::make_unique<slurm::SlurmCluster>(client, std::move(cluster_options),
                                                       std::move(submitters));
  auto release = cluster->Connect();
  if (!release.ok()) return release.status().WithContext("slurm backend");
  auto backend = std::make_unique<SlurmBackend>(std::move(cluster));
  backend->release_ = *release;
  backend->node_labels_ = options.node_labels;
  return backend;
}

SlurmBackend::SlurmBackend(std::unique_ptr<slurm::SlurmCluster> cluster)
    : cluster_(std::move(cluster)) {
  worker_ = std::thread([this] { Work(); });
}

SlurmBackend::~SlurmBackend() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

Result<std::vector<nlohmann::ordered_json>> SlurmBackend::ListNodes() const {
  ASSIGN_OR_RETURN(std::vector<nlohmann::ordered_json> nodes, cluster_->Nodes());
  for (auto& node : nodes) {
    for (const auto& [key, value] : node_labels_) node["metadata"]["labels"][key] = value;
  }
  return nodes;
}

Status SlurmBackend::Launch(const TaskLaunch& launch) {
  Command command;
  command.run.key = launch.key;
  command.run.node = launch.node;
  command.run.pod = launch.pod;
  if (launch.exec_timeout_ms) {
    command.run.exec_timeout_seconds = (*launch.exec_timeout_ms + 999) / 1000;
  }
  command.adopt = launch.adopt;
  // What Slurm could never run fails now, with its reason (no command, env from valueFrom).
  if (!launch.adopt) RETURN_IF_ERROR(cluster_->Check(command.run).status());
  std::lock_guard lock(mu_);
  if (!running_.insert(launch.key).second) return OkStatus();  // launched already
  if (!launch.adopt) awaiting_start_[launch.key] = ++launches_;
  if (step_launches_.empty()) first_step_launch_ = std::chrono::steady_clock::now();
  step_launches_.push_back(std::move(command));
  return OkStatus();
}

std::vector<std::string> SlurmBackend::Started() {
  std::lock_guard lock(mu_);
  std::vector<std::string> started;
  started.swap(started_);
  return started;
}

void SlurmBackend::LaunchesDone() {
  std::lock_guard lock(mu_);
  if (step_launches_.empty()) return;
  ReleaseStepLaunches();
  wake_.notify_all();
}

void SlurmBackend::MoreLaunchesMayFollow(bool may) {
  std::lock_guard lock(mu_);
  more_may_follow_ = may;
  if (may) more_until_ = std::chrono::steady_clock::now() + kMoreLaunchesWait;
  wake_.notify_all();
}

// Under mu_. In order: a kill after a launch of the same step must come after it.
void SlurmBackend::ReleaseStepLaunches() {
  for (Command& command : step_launches_) commands_.push_back(std::move(command));
  step_launches_.clear();
}

Status SlurmBackend::Kill(std::string_view key) {
  std::lock_guard lock(mu_);
  ReleaseStepLaunches();
  auto it = running_.find(key);
  if (it != running_.end()) running_.erase(it);
  if (auto awaiting = awaiting_start_.find(key); awaiting != awaiting_start_.end()) {
    awaiting_start_.erase(awaiting);
  }
  std::erase(started_, key);
  Command command;
  command.stop = true;
  command.run.key = std::string(key);
  commands_.push_back(std::move(command));
  wake_.notify_all();
  return OkStatus();
}

std::vector<TaskExit> SlurmBackend::Poll(int64_t now_ms) {
  std::lock_guard lock(mu_);
  std::vector<TaskExit> exits;
  exits.swap(exits_);
  for (auto& exit : exits) {
    if (exit.finished_ms <= 0) exit.finished_ms = now_ms;
  }
  return exits;
}

Result<LogChunk> SlurmBackend::ReadLog(std::string_view key, int64_t offset,
                                       int64_t max_bytes) const {
  if (offset < 0 || max_bytes < 0)
    return InvalidArgumentError("log offset and length must be >= 0");
  const std::string path = cluster_->OutputFile(std::string(key));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFoundError("no output yet at " + path);
    return UnavailableError("cannot read " + path + ": " + std::strerror(errno));
  }
  LogChunk chunk;
  chunk.offset = offset;
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    return UnavailableError("cannot read " + path + ": " + std::strerror(error));
  }
  chunk.size = info.st_size;
  const int64_t wanted = std::max<int64_t>(0, std::min(max_bytes, chunk.size - offset));
  chunk.data.resize(static_cast<size_t>(wanted));
  int64_t done = 0;
  while (done < wanted) {
    const ssize_t n = ::pread(fd, chunk.data.data() + done, static_cast<size_t>(wanted - done),
                              static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the file shrank meanwhile (truncated): return what was read
    done += n;
  }
  ::close(fd);
  chunk.data.resize(static_cast<size_t>(done));
  return chunk;
}

size_t SlurmBackend::RunningCount() const {
  std::lock_guard lock(mu_);
  return running_.size();
}

void SlurmBackend::Report(const Status& status) {
  // Said once per distinct failure, and once when Slurm answers again, so an outage is visible
  // without flooding the log.
  if (!status.ok() && status.message() != last_error_) {
    std::cerr << "gpupool: slurm backend: " << status.message() << std::endl;
  } else if (status.ok() && !last_error_.empty()) {
    std::cerr << "gpupool: slurm backend: reachable again" << std::endl;
  }
  last_error_ = status.ok() ? "" : status.message();
}

std::vector<TaskExit> SlurmBackend::Execute(const std::deque<Command>& commands) {
  std::vector<TaskExit> exits;
  // Consecutive runs go to Slurm together (one job listing for the lot); a stop between them
  // keeps its place, so a task stopped and launched again is cancelled before it is resubmitted.
  std::vector<slurm::SlurmCluster::RunRequest> runs;
  auto flush_runs = [&](bool last) {
    // The last runs' burst takes in launches queued while it is submitted (SlurmCluster::RunAll):
    // nothing queued comes before them.
    std::vector<slurm::SlurmCluster::RunRequest> joined;
    slurm::SlurmCluster::MoreRuns more;
    if (last) {
      more = [&] {
        std::vector<slurm::SlurmCluster::RunRequest> queued = TakeQueuedRuns();
        joined.insert(joined.end(), queued.begin(), queued.end());
        return queued;
      };
    }
    std::vector<Status> statuses = cluster_->RunAll(runs, more);
    runs.insert(runs.end(), joined.begin(), joined.end());
    for (size_t i = 0; i < runs.size() && i < statuses.size(); ++i) {
      // Run keeps a task whose submission must wait for Slurm and submits it on a later Poll;
      // an error here is Slurm refusing the task for good.
      if (!statuses[i].ok()) {
        exits.push_back({runs[i].run.key, 1, 0, "refused by Slurm: " + statuses[i].message()});
      }
    }
    runs.clear();
  };
  for (const Command& command : commands) {
    if (command.stop) {
      flush_runs(/*last=*/false);
      (void)cluster_->Stop(command.run.key);  // retried by the cluster's Poll when it failed
    } else {
      runs.push_back({command.run, command.adopt});
    }
  }
  flush_runs(/*last=*/true);
  return exits;
}

// The launches at the head of the queue, up to the first stop (which must keep its place). While
// the loop says its next step may launch more (it is placing the rest of a stream of
// submissions), waits for them, up to kMoreLaunchesWait: a stream whose submissions came a
// little slower than the loop's quiet wait is placed over two or three steps, and the launches of
// the later ones, submitted after this burst's gate opened, would meet slurmctld launching this
// burst's jobs and crawl (docs/benchmarks/slurm.md, run 11).
std::vector<slurm::SlurmCluster::RunRequest> SlurmBackend::TakeQueuedRuns() {
  std::unique_lock lock(mu_);
  // A step still making its launches (not yet LaunchesDone) belongs to this burst even when the
  // loop has said that none follows it.
  wake_.wait_until(lock, more_until_, [this] {
    return stop_ || !commands_.empty() || (!more_may_follow_ && step_launches_.empty());
  });
  std::vector<slurm::SlurmCluster::RunRequest> runs;
  while (!commands_.empty() && !commands_.front().stop) {
    runs.push_back({std::move(commands_.front().run), commands_.front().adopt});
    commands_.pop_front();
  }
  return runs;
}

void SlurmBackend::Work() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    wake_.wait_for(lock, kPollPeriod, [this] { return stop_ || !commands_.empty(); });
    if (stop_) break;
    if (!step_launches_.empty() &&
        std::chrono::steady_clock::now() - first_step_launch_ >= kReleaseAfter) {
      ReleaseStepLaunches();
    }
    std::deque<Command> commands;
    commands.swap(commands_);
    std::vector<std::pair<std::string, uint64_t>> awaiting(awaiting_start_.begin(),
                                                           awaiting_start_.end());
    lock.unlock();
    std::vector<TaskExit> exits = Execute(commands);
    auto events = cluster_->Poll();
    Report(events.status());
    if (events.ok()) {
      for (const auto& event : *events) {
        if (event.kind != slurm::TaskEvent::Kind::kEnded) continue;
        exits.push_back({event.key, event.exit_code, event.time_ms,
                         event.lost ? "lost: " + event.reason : event.reason});
      }
    }
    CollectStarts(awaiting);
    lock.lock();
    for (auto& exit : exits) {
      awaiting_start_.erase(exit.key);
      // A task killed meanwhile is not reported (as on the simulated cluster).
      if (running_.erase(exit.key) > 0) exits_.push_back(std::move(exit));
    }
  }
}

void SlurmBackend::CollectStarts(const std::vector<std::pair<std::string, uint64_t>>& awaiting) {
  if (awaiting.empty()) return;
  std::vector<std::string> keys;
  keys.reserve(awaiting.size());
  for (const auto& [key, launch] : awaiting) keys.push_back(key);
  const std::vector<bool> have_jobs = cluster_->HaveJobs(keys);
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < awaiting.size(); ++i) {
    if (!have_jobs[i]) continue;
    auto it = awaiting_start_.find(awaiting[i].first);
    if (it == awaiting_start_.end() || it->second != awaiting[i].second) continue;
    awaiting_start_.erase(it);
    started_.push_back(awaiting[i].first);
  }
}

}  // namespace gpupool::backend
