// gpupool-fake-apiserver: a Kubernetes API server for tests and benchmarks (fake_server.h,
// fake_api.h). It serves nodes loaded from files (and copies of them, for scale), pods, events,
// PodDisruptionBudgets, Leases, and machine sets with their Machines, over TLS with a bearer
// token; with --kubelet it also runs the pods bound to its nodes (fake_kubelet.h). Its machine
// controller (fake_machines.h) makes and deletes the Machines and Nodes of OpenShift MachineSets
// and Cluster API MachineDeployments as their replicas change; a new Machine's Node is Ready
// after --machine-provision-delay-ms (default 1000; 0: at once).
//
//   gpupool-fake-apiserver --cert server.crt --key server.key --token-file token
//       --nodes data/edgexr-k8s-node-json --node-count 5000 --kubelet --port-file port
//       [--rbac deploy/kubernetes/clusterrole.yaml] [--machine-provision-delay-ms 1000]
//
// It prints "listening on https://HOST:PORT" and writes the port to --port-file once ready.
// SIGTERM or SIGINT stops it; with --state-file, the objects and the revision are written there
// on the way out and read back at start, so a restart keeps the cluster (as etcd does) but no
// watch history (older resourceVersions answer 410).

#include <utility>
//
#include <CLI/CLI.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <thread>

#include "codec/yaml_reader.h"
#include "common/clock.h"
#include "common/strings.h"
#include "kube/testing/fake_disruption.h"
#include "kube/testing/fake_machines.h"
#include "kube/testing/fake_server.h"
#include "model/input_file.h"

namespace {

namespace fs = std::filesystem;
using gpupool::Result;
using gpupool::Status;
using Json = nlohmann::ordered_json;

void CollectNodes(const Json& doc, std::vector<Json>& out) {
  if (!doc.is_object()) return;
  std::string kind = doc.value("kind", "");
  if (kind == "Node") out.push_back(doc);
  if ((kind == "List" || kind == "NodeList") && doc.contains("items") && doc["items"].is_array()) {
    for (const auto& item : doc["items"]) CollectNodes(item, out);
  }
}

Result<std::vector<Json>> LoadNodes(const std::vector<std::string>& paths) {
  std::vector<Json> nodes;
  for (const std::string& path : paths) {
    std::vector<fs::path> files;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      for (const auto& entry : fs::directory_iterator(path, ec)) {
        auto ext = entry.path().extension();
        if (ext == ".json" || ext == ".yaml" || ext == ".yml") files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
    } else {
      files.emplace_back(path);
    }
    for (const auto& file : files) {
      ASSIGN_OR_RETURN(std::string text, gpupool::model::ReadFile(file.string()));
      ASSIGN_OR_RETURN(auto docs, gpupool::codec::ParseJsonOrYamlDocuments(text, file.string()));
      for (const auto& doc : docs) CollectNodes(doc, nodes);
    }
  }
  return nodes;
}

// `count` nodes cycling through the templates, named "<template>-<i>" (0 = the templates as
// they are).
std::vector<Json> Replicate(const std::vector<Json>& templates, int count) {
  if (count <= 0 || templates.empty()) return templates;
  std::vector<Json> nodes;
  nodes.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    Json node = templates[static_cast<size_t>(i) % templates.size()];
    std::string name = node["metadata"].value("name", "node") + "-" + std::to_string(i);
    node["metadata"]["name"] = name;
    if (node["metadata"].contains("labels") && node["metadata"]["labels"].is_object()) {
      node["metadata"]["labels"]["kubernetes.io/hostname"] = name;
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

Status WriteAtomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out) return gpupool::InternalError("cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return gpupool::InternalError("cannot rename " + tmp + ": " + ec.message());
  return gpupool::OkStatus();
}

// The command line.
struct Flags {
  gpupool::kube::fake::ServerOptions server;
  gpupool::kube::fake::KubeletOptions kubelet;
  gpupool::kube::fake::StoreOptions store;
  gpupool::kube::fake::MachineOptions machines;
  std::string token_file, port_file, state_file, rbac_file;
  std::vector<std::string> node_paths;
  int node_count = 0;
  int threads = 2;
};

void AddFlags(CLI::App& app, Flags& f) {
  app.add_option("--host", f.server.host, "address to listen on")->capture_default_str();
  app.add_option("--port", f.server.port, "port (0: any free port)")->capture_default_str();
  app.add_option("--cert", f.server.cert_file, "server certificate chain (PEM)")->required();
  app.add_option("--key", f.server.key_file, "server private key (PEM)")->required();
  app.add_option("--client-ca", f.server.client_ca_file, "CA that signs client certificates");
  app.add_option("--token-file", f.token_file, "file holding the bearer token")->required();
  app.add_option("--port-file", f.port_file, "write the port here once listening");
  app.add_option("--state-file", f.state_file, "load the objects from here; save them on exit");
  app.add_option("--rbac", f.rbac_file,
                 "authorize requests by the first ClusterRole of this file (else: all allowed)");
  app.add_option("--nodes", f.node_paths, "Node objects: JSON/YAML files or directories");
  app.add_option("--node-count", f.node_count, "serve this many copies of the nodes (0: as is)");
  app.add_option("--history", f.store.history_limit, "changes kept for watches")
      ->capture_default_str();
  app.add_option("--bookmark-interval-ms", f.server.bookmark_interval_ms, "BOOKMARK period")
      ->capture_default_str();
  app.add_flag("--kubelet", f.kubelet.simulate, "run the pods bound to the nodes");
  app.add_option("--kubelet-start-ms", f.kubelet.start_ms, "bound to Running")
      ->capture_default_str();
  app.add_option("--kubelet-run-ms", f.kubelet.run_ms, "default run time")->capture_default_str();
  app.add_option("--machine-provision-delay-ms", f.machines.provision_delay_ms,
                 "a Machine the machine controller makes -> its Node Ready (0: at once)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--threads", f.threads, "I/O threads")->capture_default_str();
}

// The objects at start: the state file of an earlier run, else the nodes from files.
Status Seed(gpupool::kube::fake::ObjectStore& store, const Flags& f) {
  using namespace gpupool::kube::fake;
  if (!f.state_file.empty() && fs::exists(f.state_file)) {
    ASSIGN_OR_RETURN(std::string text, gpupool::model::ReadFile(f.state_file));
    Status loaded = store.Load(Json::parse(text, nullptr, false));
    return loaded.ok() ? loaded : loaded.WithContext(f.state_file);
  }
  ASSIGN_OR_RETURN(auto nodes, LoadNodes(f.node_paths));
  for (Json& node : Replicate(nodes, f.node_count)) {
    auto created = store.Create(ResourceId("nodes"), "", std::move(node));
    if (!created.ok()) return created.status().WithContext("node");
  }
  return gpupool::OkStatus();
}

// Serves until SIGINT or SIGTERM, then saves the objects to the state file.
Status Serve(gpupool::kube::fake::ObjectStore& store, Flags& f,
             const std::function<int64_t()>& now_ms) {
  using namespace gpupool::kube::fake;
  boost::asio::io_context io;
  PodLogs logs;
  Kubelet kubelet(store, logs, io, f.kubelet, now_ms);
  kubelet.Start();
  DisruptionController disruption(store, io);
  disruption.Start();
  MachineController machines(store, io, f.machines, now_ms);
  machines.Start();
  FakeApi api(store, kubelet, logs, now_ms);
  if (!f.rbac_file.empty()) {
    ASSIGN_OR_RETURN(ClusterRole role, ClusterRole::Load(f.rbac_file));
    api.SetRole(std::move(role));
  }
  FakeServer fake(io, api, store, f.server);
  ASSIGN_OR_RETURN(int port, fake.Start());
  if (!f.port_file.empty())
    RETURN_IF_ERROR(WriteAtomically(f.port_file, std::to_string(port) + "\n"));
  std::cout << "listening on https://" << f.server.host << ":" << port << std::endl;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) {
    fake.Stop();
    io.stop();
  });
  auto guard = boost::asio::make_work_guard(io);
  std::vector<std::thread> pool;
  for (int i = 1; i < f.threads; ++i) pool.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : pool) t.join();
  if (f.state_file.empty()) return gpupool::OkStatus();
  return WriteAtomically(f.state_file, store.Dump().dump());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpupool-fake-apiserver: a Kubernetes API server for tests"};
  Flags flags;
  AddFlags(app, flags);
  CLI11_PARSE(app, argc, argv);
  auto fail = [](const Status& status, int code) {
    std::cerr << "gpupool-fake-apiserver: " << status.message() << "\n";
    return code;
  };
  auto token = gpupool::model::ReadFile(flags.token_file);
  if (!token.ok()) return fail(token.status(), 2);
  flags.server.token = std::string(gpupool::Trim(*token));
  gpupool::SystemClock clock;
  auto now_ms = [&clock] { return clock.NowMillis(); };
  flags.store.now_ms = now_ms;
  gpupool::kube::fake::ObjectStore store(flags.store);
  if (Status seeded = Seed(store, flags); !seeded.ok()) return fail(seeded, 2);
  if (Status served = Serve(store, flags, now_ms); !served.ok()) return fail(served, 1);
  return 0;
}
