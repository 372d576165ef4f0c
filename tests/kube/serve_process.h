#pragma once
// `gpupool-serve` as a child process of a test or benchmark (its port from the line it prints
// once listening), and Eventually, a bounded poll. No GoogleTest here: the Kubernetes scale
// benchmark uses them too.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "model/input_file.h"

extern char** environ;

namespace gpupool::kube_e2e {

template <typename Condition>
bool Eventually(Condition condition, std::chrono::seconds bound = std::chrono::seconds(90)) {
  auto deadline = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return condition();
}

// `gpupool-serve` as a child process; its port from the line it prints once listening.
class ServeProcess {
 public:
  // Its output goes to `dir`/`log_name`.
  ServeProcess(const std::string& dir, std::vector<std::string> args,
               const std::string& log_name = "serve.log")
      : log_(dir + "/" + log_name) {
    args.insert(args.begin(), GPUPOOL_SERVE_BINARY);
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    Eventually(
        [&] {
          auto text = model::ReadFile(log_);
          std::smatch match;
          if (text.ok() && std::regex_search(*text, match, listening)) port_ = std::stoi(match[1]);
          return port_ > 0 || waitpid(pid_, nullptr, WNOHANG) == pid_;
        },
        std::chrono::seconds(60));
  }
  ~ServeProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string Log() const { return model::ReadFile(log_).value(); }
  void Kill9() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace gpupool::kube_e2e
