#include "kube/testing/fake_process.h"

#include <fcntl.h>
#include <signal.h>  // NOLINT(modernize-deprecated-headers): kill() is POSIX, not <csignal>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/strings.h"
#include "model/input_file.h"

extern char** environ;

namespace gpupool::kube::fake {
namespace {

namespace fs = std::filesystem;

// Polls for the port file the fake writes once it listens (it binds in well under a second; the
// bound keeps a broken start from hanging a test).
constexpr auto kStartDeadline = std::chrono::seconds(30);

Result<int> WaitForPort(const std::string& file, pid_t pid) {
  auto deadline = std::chrono::steady_clock::now() + kStartDeadline;
  while (std::chrono::steady_clock::now() < deadline) {
    auto text = model::ReadFile(file);
    if (text.ok()) {
      int port = std::atoi(std::string(Trim(*text)).c_str());
      if (port > 0) return port;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      auto log = model::ReadFile(file + ".log");
      return UnavailableError("the fake API server exited at start: " +
                              (log.ok() ? std::string(Trim(*log)) : "(no log)"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return UnavailableError("the fake API server did not start within 30 s");
}

std::string Base64File(const std::string& path) {
  auto text = model::ReadFile(path);
  if (!text.ok()) return "";
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::string& in = *text;
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t n = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<FakeApiServerProcess>> FakeApiServerProcess::Start(
    FakeProcessOptions options) {
  std::string pattern = (fs::temp_directory_path() / "gpupool-fake-apiserver-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return InternalError("mkdtemp failed");
  std::unique_ptr<FakeApiServerProcess> process(
      new FakeApiServerProcess(std::move(options), pattern));
  std::string command = "bash '" + process->options_.cert_script + "' '" + pattern + "'";
  if (std::system(command.c_str()) != 0) {
    return InternalError("cannot make test certificates: " + command);
  }
  RETURN_IF_ERROR(process->Spawn(0));
  return process;
}

FakeApiServerProcess::~FakeApiServerProcess() {
  (void)Stop();
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

Status FakeApiServerProcess::Spawn(int port) {
  const std::string port_file = dir_ + "/port";
  std::error_code ec;
  fs::remove(port_file, ec);
  std::vector<std::string> args = {options_.binary,
                                   "--cert",
                                   dir_ + "/server.crt",
                                   "--key",
                                   dir_ + "/server.key",
                                   "--client-ca",
                                   dir_ + "/ca.crt",
                                   "--token-file",
                                   dir_ + "/token",
                                   "--port",
                                   std::to_string(port),
                                   "--port-file",
                                   port_file,
                                   "--state-file",
                                   dir_ + "/state.json"};
  args.insert(args.end(), options_.args.begin(), options_.args.end());
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string log = port_file + ".log";
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return InternalError("cannot start " + options_.binary + ": " + strerror(rc));
  ASSIGN_OR_RETURN(port_, WaitForPort(port_file, pid_));
  return OkStatus();
}

Status FakeApiServerProcess::Stop() {
  if (pid_ <= 0) return OkStatus();
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return OkStatus();
}

Status FakeApiServerProcess::Restart(std::chrono::milliseconds down) {
  RETURN_IF_ERROR(Stop());
  std::this_thread::sleep_for(down);
  return Spawn(port_);
}

RestConfig FakeApiServerProcess::Config() const {
  RestConfig config;
  config.server = "https://127.0.0.1:" + std::to_string(port_);
  config.ca_pem = model::ReadFile(dir_ + "/ca.crt").value();
  config.token = std::string(Trim(model::ReadFile(dir_ + "/token").value()));
  config.source = "fake API server";
  return config;
}

Result<std::string> FakeApiServerProcess::WriteKubeconfig(bool client_certificate) const {
  std::string path = dir_ + (client_certificate ? "/kubeconfig-cert" : "/kubeconfig");
  std::ofstream out(path);
  out << "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
      << "clusters:\n- name: fake\n  cluster:\n    server: https://127.0.0.1:" << port_
      << "\n    certificate-authority-data: " << Base64File(dir_ + "/ca.crt") << "\n"
      << "users:\n- name: tester\n  user:\n";
  if (client_certificate) {
    out << "    client-certificate: client.crt\n    client-key: client.key\n";
  } else {
    out << "    tokenFile: token\n";
  }
  out << "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: tester\n"
      << "    namespace: gpupool\n";
  if (!out) return InternalError("cannot write " + path);
  return path;
}

}  // namespace gpupool::kube::fake
