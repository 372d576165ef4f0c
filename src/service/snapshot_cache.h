#pragma once
// The Service's cache (Service::SnapshotCache): the decoded configs and nodes keyed by the
// store's generations, the per-platform values submissions reuse, and each read workflow keyed
// by its version. Internal to the service module.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"
#include "config/config_set.h"
#include "service/service.h"
#include "store/store.h"
#include "submit/submit.h"

namespace gpupool::service {

// Everything the service reasons about, read from the store.
struct Snapshot {
  config::ConfigSet set;
  // (kind, name) -> revision, for optimistic locking of the write that follows.
  std::map<std::pair<std::string, std::string>, int64_t> revisions;
  // Bodies of kinds the ConfigSet does not hold (NODE_POOL, QUEUE, MACHINE_POOL).
  std::map<std::pair<std::string, std::string>, nlohmann::ordered_json> other;
  // The nodes machine pools would add (MachinePoolSupport::template_node), by pool name.
  std::vector<model::Node> scale_up_nodes;
};

using SnapshotPtr = std::shared_ptr<const Snapshot>;

using NodesPtr = std::shared_ptr<const std::vector<model::Node>>;

// Values per (pool, platform), each computed from the objects `Sources` (shared pointers: a
// config snapshot, a node list) and remembered while the same objects are current; other
// sources clear them. Holding the sources keeps them alive, so a pointer comparison cannot
// mistake a new object at an old address, and values that point into them stay valid. Guarded by
// the caller's mutex, which `make` runs outside of (two callers may compute the same value; the
// first stored wins, and both are equal).
template <typename Value, typename... Sources>
class PlatformMemo {
 public:
  template <typename Make>
  Result<Value> Get(std::mutex& mu, std::tuple<const Sources&...> sources, std::string_view pool,
                    std::string_view platform, Make&& make) {
    std::string key = std::string(pool) + '\0' + std::string(platform);
    {
      std::lock_guard<std::mutex> lock(mu);
      if (sources_ == sources) {
        auto it = values_.find(key);
        if (it != values_.end()) return it->second;
      }
    }
    ASSIGN_OR_RETURN(Value value, make());
    std::lock_guard<std::mutex> lock(mu);
    if (sources_ != sources) {
      values_.clear();
      sources_ = sources;
    }
    return values_.emplace(std::move(key), std::move(value)).first->second;
  }

 private:
  std::tuple<Sources...> sources_;
  std::unordered_map<std::string, Value> values_;
};

// A workflow as last read, with its view and the view's JSON text (the REST response body).
struct CachedWorkflow {
  int64_t version = 0;
  std::string user;
  std::string pool;
  WorkflowView view;
  std::shared_ptr<const std::string> json_text;
};

// The decoded configs of the last LoadSnapshot, reused while the store's config generation is
// unchanged; likewise the decoded nodes and the node generation, and each read workflow and its
// version. A generation is read before what it keys: a write committed in between leaves a
// snapshot newer than its key, which only costs a reload at the next call, never a stale answer.
// Workflows are revalidated by version (Store::GetWorkflowIfChanged) at every read.
struct Service::SnapshotCache {
  static constexpr size_t kMaxWorkflows = 10000;  // cleared when it grows past this

  std::mutex mu;
  int64_t generation = -1;
  SnapshotPtr snapshot;
  int64_t node_generation = -1;
  NodesPtr nodes;
  std::unordered_map<std::string, std::shared_ptr<const CachedWorkflow>> workflows;
  MachinePoolSupport machine_pools;  // set before the cache is shared
  // The nodes plus the snapshot's scale_up_nodes, for submissions, and what they were built from
  // (held, so a pointer comparison cannot mistake a new object at an old address).
  NodesPtr submit_nodes;
  SnapshotPtr submit_nodes_snapshot;
  NodesPtr submit_nodes_base;

  // The nodes of each platform among `nodes` under `snap` (submit::SubmitOptions::
  // platform_nodes), remembered for the last (snapshot, nodes) pair: a submission then costs
  // O(1) in the cluster's size, not a selector match per node.
  Result<submit::SubmitOptions::NodeList> PlatformNodes(
      const SnapshotPtr& snap, const NodesPtr& nodes_of, std::string_view pool,
      std::string_view platform, const nlohmann::ordered_json& merged_template);
  PlatformMemo<submit::SubmitOptions::NodeList, SnapshotPtr, NodesPtr> platform_lists;

  // Each platform's merged pod template and rules under `snap` (submit::SubmitOptions::
  // platform_setup), remembered for the last snapshot: merging the templates and decoding the
  // rules were ~4 % of a submission's instructions, for the same answer every time.
  Result<submit::PlatformSetupPtr> PlatformSetup(const SnapshotPtr& snap, const config::Pool& pool,
                                                 std::string_view platform);
  PlatformMemo<submit::PlatformSetupPtr, SnapshotPtr> platform_setups;

  NodesPtr NodesForSubmit(const SnapshotPtr& snap, const NodesPtr& base);

  Result<SnapshotPtr> Get(store::Store& store);

  // The configs and the nodes, with one read of both generations.
  Result<std::pair<SnapshotPtr, NodesPtr>> GetWithNodes(store::Store& store);

  // Configs and nodes with the generations they are known to hold (their content is exactly
  // that of those generations whenever those are still the current ones).
  struct Keyed {
    SnapshotPtr snapshot;
    NodesPtr nodes;
    store::Store::Generations generations;
  };
  Result<Keyed> GetKeyed(store::Store& store);
  // The last configs and nodes without reading the store (GetKeyed when none are cached): for a
  // plan whose write checks the generations it was made on (Store::CreateWorkflowWithAudit).
  Result<Keyed> LastKeyed(store::Store& store);

  Result<SnapshotPtr> ConfigsAt(store::Store& store, int64_t now);

  Result<NodesPtr> NodesAt(store::Store& store, int64_t now);

  // The workflow, current as of this call (one version check when cached).
  Result<std::shared_ptr<const CachedWorkflow>> Workflow(store::Store& store, std::string_view id);

  // Workflow without a thread waiting: `done` runs on the store's read thread.
  using WorkflowDone = std::function<void(Result<std::shared_ptr<const CachedWorkflow>>)>;
  void WorkflowAsync(store::Store& store, const std::string& id, WorkflowDone done);

 private:
  std::shared_ptr<const CachedWorkflow> Cached(std::string_view id);

  // The entry for `id` after a version check against `cached` (null: none) said `changed`.
  Result<std::shared_ptr<const CachedWorkflow>> Current(
      std::string_view id, std::shared_ptr<const CachedWorkflow> cached,
      Result<std::optional<store::WorkflowRecord>> changed);
};

}  // namespace gpupool::service
