// gpupool-fake-apiserver: a Kubernetes API server for tests and benchmarks (fake_server.h,
// fake_api.h). It serves nodes loaded from files (and copies of them, for scale), pods, events,
// PodDisruptionBudgets, Leases and scalable machine sets, over TLS with a bearer token; with
// --kubelet it also runs the pods bound to its nodes (fake_kubelet.h).
//
//   gpupool-fake-apiserver --cert server.crt --key server.key --token-file token
//       --nodes data/edgexr-k8s-node-json --node-count 5000 --kubelet --port-file port
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
#include <iostream>
#include <thread>

#include "common/clock.h"
#include "common/strings.h"
#include "kube/testing/fake_server.h"
#include "model/json_io.h"

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
      files.push_back(path);
    }
    for (const auto& file : files) {
      ASSIGN_OR_RETURN(std::string text, gpupool::model::ReadFile(file.string()));
      ASSIGN_OR_RETURN(auto docs, gpupool::model::ParseJsonOrYamlDocuments(text, file.string()));
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

}  // namespace

int main(int argc, char** argv) {
  using namespace gpupool::kube::fake;
  CLI::App app{"gpupool-fake-apiserver: a Kubernetes API server for tests"};
  ServerOptions server;
  KubeletOptions kubelet_options;
  StoreOptions store_options;
  std::string token_file, port_file, state_file;
  std::vector<std::string> node_paths;
  int node_count = 0;
  int threads = 2;
  app.add_option("--host", server.host, "address to listen on")->capture_default_str();
  app.add_option("--port", server.port, "port (0: any free port)")->capture_default_str();
  app.add_option("--cert", server.cert_file, "server certificate chain (PEM)")->required();
  app.add_option("--key", server.key_file, "server private key (PEM)")->required();
  app.add_option("--client-ca", server.client_ca_file, "CA that signs client certificates");
  app.add_option("--token-file", token_file, "file holding the bearer token")->required();
  app.add_option("--port-file", port_file, "write the port here once listening");
  app.add_option("--state-file", state_file, "load the objects from here; save them on exit");
  app.add_option("--nodes", node_paths, "Node objects: JSON/YAML files or directories");
  app.add_option("--node-count", node_count, "serve this many copies of the nodes (0: as is)");
  app.add_option("--history", store_options.history_limit, "changes kept for watches")
      ->capture_default_str();
  app.add_option("--bookmark-interval-ms", server.bookmark_interval_ms, "BOOKMARK period")
      ->capture_default_str();
  app.add_flag("--kubelet", kubelet_options.simulate, "run the pods bound to the nodes");
  app.add_option("--kubelet-start-ms", kubelet_options.start_ms, "bound to Running")
      ->capture_default_str();
  app.add_option("--kubelet-run-ms", kubelet_options.run_ms, "default run time")
      ->capture_default_str();
  app.add_option("--threads", threads, "I/O threads")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto token = gpupool::model::ReadFile(token_file);
  if (!token.ok()) {
    std::cerr << "gpupool-fake-apiserver: " << token.status().message() << "\n";
    return 2;
  }
  server.token = std::string(gpupool::Trim(*token));
  gpupool::SystemClock clock;
  auto now_ms = [&clock] { return clock.NowMillis(); };
  store_options.now_ms = now_ms;
  ObjectStore store(store_options);
  if (!state_file.empty() && fs::exists(state_file)) {
    auto text = gpupool::model::ReadFile(state_file);
    Json dump = text.ok() ? Json::parse(*text, nullptr, false) : Json();
    Status loaded = store.Load(dump);
    if (!loaded.ok()) {
      std::cerr << "gpupool-fake-apiserver: " << state_file << ": " << loaded.message() << "\n";
      return 2;
    }
  } else {
    auto nodes = LoadNodes(node_paths);
    if (!nodes.ok()) {
      std::cerr << "gpupool-fake-apiserver: " << nodes.status().message() << "\n";
      return 2;
    }
    for (Json& node : Replicate(*nodes, node_count)) {
      auto created = store.Create(ResourceId("nodes"), "", std::move(node));
      if (!created.ok()) {
        std::cerr << "gpupool-fake-apiserver: node: " << created.status().message() << "\n";
        return 2;
      }
    }
  }

  boost::asio::io_context io;
  PodLogs logs;
  Kubelet kubelet(store, logs, io, kubelet_options, now_ms);
  kubelet.Start();
  FakeApi api(store, kubelet, logs, now_ms);
  FakeServer fake(io, api, store, server);
  auto port = fake.Start();
  if (!port.ok()) {
    std::cerr << "gpupool-fake-apiserver: " << port.status().message() << "\n";
    return 1;
  }
  if (!port_file.empty()) {
    if (Status s = WriteAtomically(port_file, std::to_string(*port) + "\n"); !s.ok()) {
      std::cerr << "gpupool-fake-apiserver: " << s.message() << "\n";
      return 1;
    }
  }
  std::cout << "listening on https://" << server.host << ":" << *port << std::endl;

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) {
    fake.Stop();
    io.stop();
  });
  auto guard = boost::asio::make_work_guard(io);
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : pool) t.join();
  if (!state_file.empty()) {
    if (Status s = WriteAtomically(state_file, store.Dump().dump()); !s.ok()) {
      std::cerr << "gpupool-fake-apiserver: " << s.message() << "\n";
      return 1;
    }
  }
  return 0;
}
