#include "backend/slurm/slurm_backend.h"

#include <pwd.h>
#include <unistd.h>

#include <iostream>

namespace gpupool::backend {
namespace {

std::string OsUser() {
  if (const passwd* pw = getpwuid(geteuid()); pw != nullptr && pw->pw_name != nullptr) {
    return pw->pw_name;
  }
  return "";
}

}  // namespace

Result<std::unique_ptr<SlurmBackend>> SlurmBackend::Open(std::string_view url,
                                                         const BackendOptions& options) {
  ASSIGN_OR_RETURN(slurm::Endpoint endpoint, slurm::ParseEndpoint(url));
  slurm::ClientOptions client_options;
  client_options.user = options.slurm_user.empty() ? OsUser() : options.slurm_user;
  client_options.token = slurm::TokenSource::FromEnvironmentOr(options.slurm_jwt_file);
  auto client = std::make_shared<slurm::RestClient>(
      endpoint, slurm::MakeBeastTransport(endpoint, slurm::HttpTimeouts{}),
      std::move(client_options));
  slurm::ClusterOptions cluster_options;
  cluster_options.submit.output_dir =
      options.slurm_output_dir.empty() ? "/tmp" : options.slurm_output_dir;
  cluster_options.submit.partition = options.slurm_partition;
  auto cluster = std::make_unique<slurm::SlurmCluster>(client, std::move(cluster_options));
  auto release = cluster->Connect();
  if (!release.ok()) return release.status().WithContext("slurm backend");
  auto backend = std::make_unique<SlurmBackend>(std::move(cluster));
  backend->release_ = *release;
  return backend;
}

SlurmBackend::SlurmBackend(std::unique_ptr<slurm::SlurmCluster> cluster)
    : cluster_(std::move(cluster)) {}

Result<std::vector<nlohmann::ordered_json>> SlurmBackend::ListNodes() const {
  return cluster_->Nodes();
}

Status SlurmBackend::Launch(const TaskLaunch& launch) {
  slurm::TaskRun run;
  run.key = launch.key;
  run.node = launch.node;
  run.pod = launch.pod;
  if (launch.exec_timeout_ms) run.exec_timeout_seconds = (*launch.exec_timeout_ms + 999) / 1000;
  return cluster_->Run(run, launch.adopt);
}

Status SlurmBackend::Kill(std::string_view key) { return cluster_->Stop(std::string(key)); }

std::vector<TaskExit> SlurmBackend::Poll(int64_t now_ms) {
  std::vector<TaskExit> exits;
  auto events = cluster_->Poll();
  if (!events.ok()) {
    // The loop calls this every step: say it once per distinct failure, then again when it
    // changes, so a Slurm outage is visible but does not flood the log.
    if (events.status().message() != last_poll_error_) {
      last_poll_error_ = events.status().message();
      std::cerr << "gpupool: slurm backend: " << last_poll_error_ << std::endl;
    }
    return exits;
  }
  if (!last_poll_error_.empty()) {
    std::cerr << "gpupool: slurm backend: reachable again" << std::endl;
    last_poll_error_.clear();
  }
  for (const auto& event : *events) {
    if (event.kind != slurm::TaskEvent::Kind::kEnded) continue;
    TaskExit exit;
    exit.key = event.key;
    exit.exit_code = event.exit_code;
    exit.finished_ms = event.time_ms > 0 ? event.time_ms : now_ms;
    exit.reason = event.lost ? "lost: " + event.reason : event.reason;
    exits.push_back(std::move(exit));
  }
  return exits;
}

size_t SlurmBackend::RunningCount() const { return cluster_->Tracked(); }

}  // namespace gpupool::backend
