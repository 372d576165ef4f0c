#include "controller/node_sync.h"

#include <iostream>

namespace gpupool::controller {

NodeSync::NodeSync(backend::Backend& backend, store::Store& store, std::chrono::milliseconds period)
    : backend_(backend), store_(store), period_(period) {}

NodeSync::~NodeSync() { Stop(); }

Result<size_t> NodeSync::SyncOnce() {
  // Taken before listing: a change during the listing moves it again for the next period.
  std::optional<std::string> version = backend_.NodesVersion();
  if (version && version == synced_version_) return 0;
  ASSIGN_OR_RETURN(auto nodes, backend_.ListNodes());
  std::vector<store::NodeRecord> changed;
  std::map<std::string, nlohmann::ordered_json> listed;
  for (auto& node : nodes) {
    std::string name = node["metadata"]["name"].get<std::string>();
    // Compared as values, not as dumped text: at 5,000 nodes, dumping each one every period
    // was most of the sync's CPU.
    auto it = written_.find(name);
    if (it == written_.end() || it->second != node) changed.push_back({name, node});
    listed.emplace(std::move(name), std::move(node));
  }
  if (!changed.empty()) RETURN_IF_ERROR(store_.UpsertNodes(changed, /*replace_all=*/false));
  written_ = std::move(listed);
  synced_version_ = std::move(version);
  return changed.size();
}

void NodeSync::Start() {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stop_) {
      lock.unlock();
      auto synced = SyncOnce();
      // Said once per distinct failure (a cluster outage would otherwise repeat every period).
      std::string error = synced.ok() ? "" : synced.status().message();
      if (error != last_error_ && !error.empty()) {
        std::cerr << "gpupool: node sync: " << error << std::endl;
      }
      last_error_ = error;
      lock.lock();
      wake_.wait_for(lock, period_, [this] { return stop_; });
    }
  });
}

void NodeSync::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpupool::controller
