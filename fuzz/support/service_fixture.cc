#include "fuzz/support/service_fixture.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fuzz/support/fuzz_util.h"

namespace gpupool::fuzz {
namespace {

namespace fs = std::filesystem;

// One CPU node and one labelled, tainted GPU node: enough for submissions to find a platform
// and for resource views to have rows.
constexpr char kNodes[] = R"(apiVersion: v1
kind: NodeList
items:
- apiVersion: v1
  kind: Node
  metadata: {name: cpu-0, labels: {kubernetes.io/hostname: cpu-0}}
  status:
    allocatable: {cpu: "8", memory: 64Gi, ephemeral-storage: 200Gi, pods: "110"}
- apiVersion: v1
  kind: Node
  metadata:
    name: gpu-0
    labels: {kubernetes.io/hostname: gpu-0, nvidia.com/gpu.product: NVIDIA-A100}
  spec:
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  status:
    allocatable: {cpu: "64", memory: 512Gi, ephemeral-storage: 1Ti, nvidia.com/gpu: "8",
                  pods: "110"}
)";

const service::Caller kAdmin{"root", {"osmo-admin"}, "cli", std::nullopt};

constexpr char kDirectoryPrefix[] = "gpupool-fuzz-";

// Removes the directories of fuzzer processes that have exited (libFuzzer ends a process with
// _Exit after a crash or a timeout, so none cleans up after itself).
void RemoveStaleDirectories() {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path(), error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kDirectoryPrefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + sizeof(kDirectoryPrefix) - 1, nullptr, 10);
    if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) {
      fs::remove_all(entry.path(), error);
    }
  }
}

// This process's directory for the databases.
const fs::path& Directory() {
  static const fs::path directory = [] {
    RemoveStaleDirectories();
    fs::path path = fs::temp_directory_path() / (kDirectoryPrefix + std::to_string(::getpid()));
    fs::create_directories(path);
    return path;
  }();
  return directory;
}

Result<std::unique_ptr<store::Store>> OpenFile(const fs::path& path, const Clock& clock) {
  store::StoreOptions options;
  options.clock = &clock;
  options.max_readers = 0;
  return store::OpenStore("sqlite:" + path.string(), options);
}

// The database every input starts from, written once per process: the migrations, the built-in
// configs and the nodes cost more than most inputs, and copying a closed file costs little.
const fs::path& TemplateDatabase() {
  static const fs::path path = [] {
    fs::path file = Directory() / "template.db";
    FakeClock clock;
    auto store = OpenFile(file, clock);
    Check(store.ok(), "the template store opens", store.status().ToString());
    service::Service service(**store, clock);
    Status builtins = service.EnsureBuiltins();
    Check(builtins.ok(), "the built-in configs are written", builtins.ToString());
    auto nodes = service.ImportNodes(kAdmin, kNodes, "nodes.yaml");
    Check(nodes.ok(), "the fixture's nodes import", nodes.status().ToString());
    return file;  // closed (and checkpointed) when `store` goes
  }();
  return path;
}

}  // namespace

std::unique_ptr<ServiceFixture> ServiceFixture::Open() {
  const fs::path& from = TemplateDatabase();
  const fs::path work = Directory() / "work.db";
  std::error_code error;
  for (const char* suffix : {"-wal", "-shm"}) fs::remove(work.string() + suffix, error);
  fs::copy_file(from, work, fs::copy_options::overwrite_existing, error);
  Check(!error, "the template database copies", error.message());
  std::unique_ptr<ServiceFixture> fixture(new ServiceFixture());
  auto store = OpenFile(work, fixture->clock_);
  Check(store.ok(), "the fixture's store opens", store.status().ToString());
  fixture->store_ = std::move(*store);
  fixture->service_ = std::make_unique<service::Service>(*fixture->store_, fixture->clock_);
  return fixture;
}

}  // namespace gpupool::fuzz
