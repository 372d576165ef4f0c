#pragma once
// FakeApiServerProcess: the fake API server as a child process of a test. Start() makes a
// throwaway PKI and token with make-test-certs.sh in a temporary directory, starts
// gpupool-fake-apiserver on a free loopback port and waits until it listens. Restart() stops it
// (SIGTERM: it saves its objects) and starts it again on the same port from that state, as an
// API server restarts over a surviving etcd. The destructor stops it and removes the directory.
//
// Thread contract: one owner thread.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "kube/kubeconfig.h"

namespace gpupool::kube::fake {

struct FakeProcessOptions {
  std::string binary;             // gpupool-fake-apiserver
  std::string cert_script;        // make-test-certs.sh
  std::vector<std::string> args;  // more flags: --nodes, --kubelet, --bookmark-interval-ms, ...
};

class FakeApiServerProcess {
 public:
  static Result<std::unique_ptr<FakeApiServerProcess>> Start(FakeProcessOptions options);
  ~FakeApiServerProcess();

  // Server, CA and token of the fake.
  RestConfig Config() const;
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  pid_t pid() const { return pid_; }  // -1 when stopped
  // Writes a kubeconfig for the fake (token, or the client certificate) and returns its path.
  Result<std::string> WriteKubeconfig(bool client_certificate) const;

  Status Restart(std::chrono::milliseconds down);
  Status Stop();

 private:
  FakeApiServerProcess(FakeProcessOptions options, std::string dir)
      : options_(std::move(options)), dir_(std::move(dir)) {}
  Status Spawn(int port);

  const FakeProcessOptions options_;
  const std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace gpupool::kube::fake
