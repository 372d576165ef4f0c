#pragma once
// NodeSync: keeps the store's copy of a real cluster's nodes current. A backend that reports its
// own nodes (Slurm: a node set DOWN, drained, or busy with someone else's jobs) is asked for
// them every period, and the nodes whose object changed are written to the store, where the
// scheduling loop reads them. Nodes the backend stops reporting stay in the store (removal is
// for the coming event-based backend contract).
//
// Thread contract: Start() runs SyncOnce() on a private thread; SyncOnce() must not run
// concurrently with itself.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "backend/backend.h"
#include "store/store.h"

namespace gpupool::controller {

class NodeSync {
 public:
  NodeSync(backend::Backend& backend, store::Store& store, std::chrono::milliseconds period);
  ~NodeSync();

  // Returns how many nodes were written.
  Result<size_t> SyncOnce();

  void Start();
  void Stop();

 private:
  backend::Backend& backend_;
  store::Store& store_;
  const std::chrono::milliseconds period_;
  std::map<std::string, nlohmann::ordered_json> written_;  // name -> the object last written
  std::optional<std::string> synced_version_;              // Backend::NodesVersion at the last sync
  std::string last_error_;

  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gpupool::controller
