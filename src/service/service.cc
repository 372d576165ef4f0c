#include "service/service.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include "common/saturating.h"
#include "common/strings.h"
#include "config/access.h"
#include "config/config_set.h"
#include "config/kinds.h"
#include "config/membership.h"
#include "model/disruption_budget.h"
#include "model/json_io.h"
#include "model/k8s.h"
#include "model/label_selector.h"
#include "model/machine_pool.h"
#include "model/node_import.h"
#include "model/node_pool.h"
#include "model/queue.h"
#include "model/quota_tree.h"
#include "service/located_errors.h"
#include "service/quota_configs.h"
#include "store/batch_worker.h"
#include "store/store.h"
#include "submit/submit.h"
#include "submit/workflow.h"

namespace gpupool::service {
namespace {

using json = nlohmann::ordered_json;
using config::Kind;

constexpr std::string_view kSystemUser = "system";

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string LowerKind(Kind kind) { return ToLower(config::KindName(kind)); }

bool IsOsmoKind(Kind kind) {
  return kind == Kind::kPool || kind == Kind::kPodTemplate || kind == Kind::kResourceValidation ||
         kind == Kind::kRole || kind == Kind::kBackend;
}

std::string FilePrefix(std::string_view file_name) {
  return file_name.empty() ? std::string() : std::string(file_name) + ": ";
}

Status WithPrefix(const Status& status, std::string_view prefix) {
  if (status.ok() || prefix.empty()) return status;
  return Status(status.code(), std::string(prefix) + status.message());
}

store::Actor ActorOf(const Caller& caller) { return store::Actor{caller.user, caller.source}; }

// Everything the service reasons about, read from the store.
struct Snapshot {
  config::ConfigSet set;
  // (kind, name) -> revision, for optimistic locking of the write that follows.
  std::map<std::pair<std::string, std::string>, int64_t> revisions;
  // Bodies of kinds the ConfigSet does not hold (NODE_POOL, QUEUE, MACHINE_POOL).
  std::map<std::pair<std::string, std::string>, json> other;
  // The nodes machine pools would add (MachinePoolSupport::template_node), by pool name.
  std::vector<model::Node> scale_up_nodes;
};

// The body of a non-OSMO kind, validated with its decoder (and a machine pool with `check`).
Result<json> CheckOtherKind(Kind kind, std::string_view name, const json& body,
                            const MachinePoolSupport& machine_pools) {
  if (!body.is_object()) {
    return InvalidArgumentError(std::string(config::KindName(kind)) + " " + Quoted(name) +
                                ": expected an object");
  }
  json copy = body;
  copy.erase("name");
  if (kind == Kind::kQueue) {
    ASSIGN_OR_RETURN(auto queue, model::QueueFromJson(body, name));
    (void)queue;
    // Seed 003's `Default` is stored, and so shown, as `default` (the decoder refuses both).
    if (copy.contains("resources") && copy["resources"].contains("Default")) {
      json renamed = json::object();
      for (auto& [pool, quota] : copy["resources"].items()) {
        renamed[model::CanonicalNodePoolName(pool)] = quota;
      }
      copy["resources"] = std::move(renamed);
    }
  } else if (kind == Kind::kNodePool) {
    ASSIGN_OR_RETURN(auto pool, model::NodePoolFromJson(body, name));
    (void)pool;
  } else if (kind == Kind::kMachinePool) {
    ASSIGN_OR_RETURN(auto pool, model::MachinePoolFromJson(body, name));
    if (machine_pools.check) RETURN_IF_ERROR(machine_pools.check(pool));
  } else if (kind == Kind::kPodDisruptionBudget) {
    RETURN_IF_ERROR(config::ValidateName(config::KindName(kind), name));
    ASSIGN_OR_RETURN(auto budget, model::PodDisruptionBudgetFromSpec(body, name, name));
    (void)budget;
  } else {
    RETURN_IF_ERROR(config::ValidateName(config::KindName(kind), name));
  }
  return copy;
}

std::vector<std::string> TaskPlatforms(const store::WorkflowRecord& wf) {
  std::set<std::string> out;
  for (const auto& t : wf.tasks) {
    const json& labels =
        t.pod.contains("metadata") ? t.pod["metadata"].value("labels", json()) : json();
    if (labels.is_object() && labels.contains("gpupool.io/platform") &&
        labels["gpupool.io/platform"].is_string()) {
      out.insert(labels["gpupool.io/platform"].get<std::string>());
    }
  }
  return {out.begin(), out.end()};
}

std::string WorkflowIds(const std::vector<store::WorkflowRecord>& workflows) {
  std::vector<std::string> ids;
  for (const auto& wf : workflows) ids.push_back(wf.id);
  return Join(ids, ", ");
}

bool IsActiveTaskStatus(std::string_view status) {
  return status == "SCHEDULED" || status == "INITIALIZING" || status == "RUNNING";
}

model::ResourceList TaskRequests(const store::TaskRecord& task) {
  auto r = model::PodRequestsFromJson(task.pod);
  return r.ok() ? *r : model::ResourceList{};
}

int64_t Milli(const model::ResourceList& list, const std::string& resource) {
  auto it = list.find(resource);
  return it == list.end() ? 0 : it->second.MilliValue();
}

// Whole units (rounded up), exact over Kubernetes' range: bytes of memory and storage.
int64_t Units(const model::ResourceList& list, const std::string& resource) {
  auto it = list.find(resource);
  return it == list.end() ? 0 : it->second.Value();
}

TaskView ToTaskView(const store::TaskRecord& t) {
  TaskView v;
  v.group = t.group;
  v.name = t.name;
  const json& labels =
      t.pod.contains("metadata") ? t.pod["metadata"].value("labels", json()) : json();
  if (labels.is_object() && labels.contains("gpupool.io/platform")) {
    v.platform = labels["gpupool.io/platform"].get<std::string>();
  }
  v.status = t.status;
  v.node = t.node;
  v.exit_code = t.exit_code;
  v.message = t.message;
  return v;
}

WorkflowView ToView(const store::WorkflowRecord& wf) {
  WorkflowView v;
  v.id = wf.id;
  v.name = wf.name;
  v.pool = wf.pool;
  // Workflows stored before projects existed have no "queue": their pool was their queue.
  v.queue = wf.spec.is_object() ? wf.spec.value("queue", wf.pool) : wf.pool;
  v.user = wf.user;
  v.status = wf.status;
  v.submitted_ms = wf.submitted_ms;
  v.spec = wf.spec;
  for (const auto& t : wf.tasks) v.tasks.push_back(ToTaskView(t));
  return v;
}

bool HasRole(const Caller& caller, std::string_view role) {
  return std::find(caller.roles.begin(), caller.roles.end(), std::string(role)) !=
         caller.roles.end();
}

}  // namespace

Result<std::string> NormalizeKind(std::string_view kind) {
  ASSIGN_OR_RETURN(Kind k, config::ParseKind(kind));
  return std::string(config::KindName(k));
}

bool IsUnfinishedStatus(std::string_view status) {
  return !store::IsFinishedWorkflowStatus(status);
}

// ---- Internal helpers as private static functions of this file --------------------------------

namespace {

// A machine pool that no longer decodes is skipped here: it adds no node, and the scheduling
// loop reports it.
void AddScaleUpNodes(const MachinePoolSupport& machine_pools, Snapshot& snap) {
  if (!machine_pools.template_node) return;
  for (const auto& [key, body] : snap.other) {
    if (key.first != config::KindName(Kind::kMachinePool)) continue;
    auto pool = model::MachinePoolFromJson(body, key.second);
    if (!pool.ok()) continue;
    if (auto node = machine_pools.template_node(*pool)) snap.scale_up_nodes.push_back(*node);
  }
}

Result<Snapshot> LoadSnapshot(store::Store& store, const MachinePoolSupport& machine_pools) {
  Snapshot snap;
  ASSIGN_OR_RETURN(auto records, store.ListConfigs(std::nullopt));
  for (const auto& r : records) {
    snap.revisions[{r.kind, r.name}] = r.revision;
    auto kind = config::ParseKind(r.kind);
    if (!kind.ok()) continue;  // a kind this build does not know: keep it untouched
    if (!IsOsmoKind(*kind)) {
      snap.other[{r.kind, r.name}] = r.body;
      continue;
    }
    Status s = config::PutConfig(snap.set, *kind, r.name, r.body);
    if (!s.ok()) {
      return InternalError("stored " + r.kind + " " + Quoted(r.name) + " (revision " +
                           std::to_string(r.revision) + ") no longer decodes: " + s.message());
    }
  }
  AddScaleUpNodes(machine_pools, snap);
  return snap;
}

using SnapshotPtr = std::shared_ptr<const Snapshot>;

Result<std::vector<model::Node>> LoadNodes(store::Store& store) {
  ASSIGN_OR_RETURN(auto records, store.ListNodes());
  std::vector<model::Node> nodes;
  nodes.reserve(records.size());
  for (const auto& r : records) {
    auto node = model::NodeFromJson(r.object);
    if (!node.ok()) {
      return InternalError("stored node " + Quoted(r.name) +
                           " does not decode: " + node.status().message());
    }
    nodes.push_back(std::move(*node));
  }
  return nodes;
}

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

}  // namespace

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
  Result<submit::SubmitOptions::NodeList> PlatformNodes(const SnapshotPtr& snap,
                                                        const NodesPtr& nodes_of,
                                                        std::string_view pool,
                                                        std::string_view platform,
                                                        const json& merged_template) {
    return platform_lists.Get(
        mu, std::tie(snap, nodes_of), pool, platform,
        [&]() -> Result<submit::SubmitOptions::NodeList> {
          const config::Pool* of = snap->set.FindPool(pool);
          ASSIGN_OR_RETURN(auto list,
                           config::PlatformNodesOf(merged_template, *nodes_of,
                                                   of ? of->backend : config::kDefaultBackend));
          return std::make_shared<const std::vector<const model::Node*>>(std::move(list));
        });
  }
  PlatformMemo<submit::SubmitOptions::NodeList, SnapshotPtr, NodesPtr> platform_lists;

  // Each platform's merged pod template and rules under `snap` (submit::SubmitOptions::
  // platform_setup), remembered for the last snapshot: merging the templates and decoding the
  // rules were ~4 % of a submission's instructions, for the same answer every time.
  Result<submit::PlatformSetupPtr> PlatformSetup(const SnapshotPtr& snap, const config::Pool& pool,
                                                 std::string_view platform) {
    return platform_setups.Get(mu, std::tie(snap), pool.name, platform, [&] {
      return submit::BuildPlatformSetup(pool, platform, snap->set);
    });
  }
  PlatformMemo<submit::PlatformSetupPtr, SnapshotPtr> platform_setups;

  NodesPtr NodesForSubmit(const SnapshotPtr& snap, const NodesPtr& base) {
    if (snap->scale_up_nodes.empty()) return base;
    std::lock_guard<std::mutex> lock(mu);
    if (submit_nodes == nullptr || submit_nodes_snapshot != snap || submit_nodes_base != base) {
      auto combined = std::make_shared<std::vector<model::Node>>(*base);
      combined->insert(combined->end(), snap->scale_up_nodes.begin(), snap->scale_up_nodes.end());
      submit_nodes = std::move(combined);
      submit_nodes_snapshot = snap;
      submit_nodes_base = base;
    }
    return submit_nodes;
  }

  Result<SnapshotPtr> Get(store::Store& store) {
    ASSIGN_OR_RETURN(int64_t now, store.ConfigGeneration());
    return ConfigsAt(store, now);
  }

  // The configs and the nodes, with one read of both generations.
  Result<std::pair<SnapshotPtr, NodesPtr>> GetWithNodes(store::Store& store) {
    ASSIGN_OR_RETURN(Keyed keyed, GetKeyed(store));
    return std::make_pair(std::move(keyed.snapshot), std::move(keyed.nodes));
  }

  // Configs and nodes with the generations they are known to hold (their content is exactly
  // that of those generations whenever those are still the current ones).
  struct Keyed {
    SnapshotPtr snapshot;
    NodesPtr nodes;
    store::Store::Generations generations;
  };
  Result<Keyed> GetKeyed(store::Store& store) {
    ASSIGN_OR_RETURN(store::Store::Generations now, store.GetGenerations());
    ASSIGN_OR_RETURN(SnapshotPtr snap, ConfigsAt(store, now.configs));
    ASSIGN_OR_RETURN(NodesPtr current_nodes, NodesAt(store, now.nodes));
    return Keyed{std::move(snap), std::move(current_nodes), now};
  }
  // The last configs and nodes without reading the store (GetKeyed when none are cached): for a
  // plan whose write checks the generations it was made on (Store::CreateWorkflowWithAudit).
  Result<Keyed> LastKeyed(store::Store& store) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (snapshot != nullptr && nodes != nullptr) {
        return Keyed{snapshot, nodes, {generation, node_generation}};
      }
    }
    return GetKeyed(store);
  }

  Result<SnapshotPtr> ConfigsAt(store::Store& store, int64_t now) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (snapshot != nullptr && generation == now) return snapshot;
    }
    ASSIGN_OR_RETURN(Snapshot loaded, LoadSnapshot(store, machine_pools));
    auto fresh = std::make_shared<const Snapshot>(std::move(loaded));
    std::lock_guard<std::mutex> lock(mu);
    if (now >= generation) {
      generation = now;
      snapshot = fresh;
    }
    return fresh;
  }

  Result<NodesPtr> NodesAt(store::Store& store, int64_t now) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (nodes != nullptr && node_generation == now) return nodes;
    }
    ASSIGN_OR_RETURN(std::vector<model::Node> loaded, LoadNodes(store));
    auto fresh = std::make_shared<const std::vector<model::Node>>(std::move(loaded));
    std::lock_guard<std::mutex> lock(mu);
    if (now >= node_generation) {
      node_generation = now;
      nodes = fresh;
    }
    return fresh;
  }

  // The workflow, current as of this call (one version check when cached).
  Result<std::shared_ptr<const CachedWorkflow>> Workflow(store::Store& store, std::string_view id) {
    std::shared_ptr<const CachedWorkflow> cached = Cached(id);
    return Current(id, cached,
                   store.GetWorkflowIfChanged(id, cached != nullptr ? cached->version : 0));
  }

  // Workflow without a thread waiting: `done` runs on the store's read thread.
  using WorkflowDone = std::function<void(Result<std::shared_ptr<const CachedWorkflow>>)>;
  void WorkflowAsync(store::Store& store, const std::string& id, WorkflowDone done) {
    std::shared_ptr<const CachedWorkflow> cached = Cached(id);
    int64_t known = cached != nullptr ? cached->version : 0;
    store.GetWorkflowIfChangedAsync(id, known,
                                    [this, id, cached, done = std::move(done)](
                                        Result<std::optional<store::WorkflowRecord>> changed) {
                                      done(Current(id, cached, std::move(changed)));
                                    });
  }

 private:
  std::shared_ptr<const CachedWorkflow> Cached(std::string_view id) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = workflows.find(std::string(id));
    return it != workflows.end() ? it->second : nullptr;
  }

  // The entry for `id` after a version check against `cached` (null: none) said `changed`.
  Result<std::shared_ptr<const CachedWorkflow>> Current(
      std::string_view id, std::shared_ptr<const CachedWorkflow> cached,
      Result<std::optional<store::WorkflowRecord>> changed) {
    if (!changed.ok()) {
      if (changed.status().code() == StatusCode::kNotFound) {
        return NotFoundError("workflow " + Quoted(id) + " does not exist");
      }
      return changed.status();
    }
    if (!changed->has_value()) return cached;
    const store::WorkflowRecord& wf = **changed;
    auto fresh = std::make_shared<CachedWorkflow>();
    fresh->version = wf.version;
    fresh->user = wf.user;
    fresh->pool = wf.pool;
    fresh->view = ToView(wf);
    fresh->json_text =
        std::make_shared<const std::string>(model::DumpCompact(ToJson(fresh->view)) + "\n");
    std::lock_guard<std::mutex> lock(mu);
    auto& slot = workflows[std::string(id)];
    if (slot == nullptr || slot->version <= fresh->version) {
      if (workflows.size() > kMaxWorkflows) {
        workflows.clear();
        workflows[std::string(id)] = fresh;
      } else {
        slot = fresh;
      }
    }
    return std::shared_ptr<const CachedWorkflow>(std::move(fresh));
  }
};

namespace {

Status CheckConfigWriteAccess(const Caller& caller, Kind kind, std::string_view name,
                              std::string_view method, const config::ConfigSet& set) {
  std::string path = "/api/configs/" + LowerKind(kind) + "/" + std::string(name);
  Status s = config::CheckAccess(caller.roles, method, path, set);
  if (s.ok()) return s;
  return PermissionDeniedError("access denied: user " + Quoted(caller.user) + " with roles " +
                               (caller.roles.empty() ? "(none)" : Join(caller.roles, ", ")) + ": " +
                               s.message());
}

// Checks a pool change against the unfinished workflows that use the pool. Removing a platform
// they use is refused; any other change is allowed with a warning naming them.
Status CheckPoolChange(store::Store& store, const config::ConfigSet& before,
                       const config::ConfigSet& after, std::string_view pool,
                       std::vector<std::string>* warnings) {
  const config::Pool* old_pool = before.FindPool(pool);
  if (old_pool == nullptr) return OkStatus();  // a new pool has no workflows
  store::WorkflowFilter filter;
  filter.pool = std::string(pool);
  filter.unfinished_only = true;
  filter.limit = 0;
  ASSIGN_OR_RETURN(auto workflows, store.ListWorkflows(filter));
  if (workflows.empty()) return OkStatus();
  const config::Pool* new_pool = after.FindPool(pool);
  if (new_pool != nullptr) {
    std::vector<std::string> removed_users;
    std::set<std::string> removed;
    for (const auto& wf : workflows) {
      for (const std::string& platform : TaskPlatforms(wf)) {
        if (new_pool->FindPlatform(platform) == nullptr) {
          removed.insert(platform);
          removed_users.push_back(wf.id);
        }
      }
    }
    if (!removed.empty()) {
      std::sort(removed_users.begin(), removed_users.end());
      removed_users.erase(std::unique(removed_users.begin(), removed_users.end()),
                          removed_users.end());
      return FailedPreconditionError(
          "pool " + Quoted(pool) + ": removing platform " +
          Join(std::vector<std::string>(removed.begin(), removed.end()), ", ") +
          " is refused: unfinished workflows use it: " + Join(removed_users, ", ") +
          " (cancel them, or delete the pool with --force)");
    }
  }
  warnings->push_back("pool " + Quoted(pool) + " is used by unfinished workflows " +
                      WorkflowIds(workflows) +
                      "; modifying pools that are actively used by running workflows may cause "
                      "scheduling issues");
  return OkStatus();
}

store::AuditRecord AuditOf(const Caller& caller, std::string_view action, std::string_view target,
                           std::string_view detail) {
  store::AuditRecord record;
  record.user = caller.user;
  record.source = caller.source;
  record.action = std::string(action);
  record.target = std::string(target);
  record.detail = std::string(detail);
  return record;
}

// A batch of puts of one or more kinds, validated together and written atomically.
struct PendingPut {
  Kind kind;
  std::string name;
  json body;  // as given (without name)
  // The caller's optimistic lock (0 = must not exist); absent: the revision this update read.
  std::optional<int64_t> expected_revision = std::nullopt;
  // Rewords an error of this config's body to point at the field of the user's file it comes
  // from (apply; config update given the file's text); unset: the error is prefixed with the
  // file name.
  std::function<Status(const Status&)> locate = nullptr;
};

// An error of one put: located in its file, or prefixed with the file name.
Status PutError(const PendingPut& put, const Status& status, std::string_view prefix) {
  return put.locate ? put.locate(status) : WithPrefix(status, prefix);
}

// config::ValidateReferences, one line per error, with the errors of a pool being written
// pointed at its file (each error starts with `pool "<name>": `, config/config_set.h).
Status CheckReferences(const config::ConfigSet& set, const std::vector<PendingPut>& puts,
                       std::string_view prefix) {
  std::vector<Status> errors = config::ValidateReferenceList(set);
  if (errors.empty()) return OkStatus();
  std::vector<std::string> lines;
  for (const Status& error : errors) {
    auto put = std::find_if(puts.begin(), puts.end(), [&](const PendingPut& p) {
      return p.kind == Kind::kPool && StartsWith(error.message(), "pool " + Quoted(p.name) + ": ");
    });
    lines.push_back(put == puts.end() ? WithPrefix(error, prefix).message()
                                      : PutError(*put, error, prefix).message());
  }
  return InvalidArgumentError(Join(lines, "\n"));
}

// A config of a config file as the OSMO kinds' decoders name it (`pool "p"`, `pod template "t"`,
// `resource validation "v"`), and the other kinds alike (`queue "q"`, `machine pool "m"`).
DocumentSubject ConfigSubject(Kind kind, std::string name) {
  std::string words = LowerKind(kind);
  std::replace(words.begin(), words.end(), '_', ' ');
  return {words + " " + Quoted(name), std::move(name), "", !IsOsmoKind(kind)};
}

// The parent a QUEUE body names ("" for a department, or when it names none readable).
std::string QueueParent(const json& body) {
  auto parent = body.is_object() ? body.find("parent") : body.end();
  return parent != body.end() && parent->is_string() ? parent->get<std::string>() : "";
}

// Queues form a tree: a write that would close a cycle of parents (a -> b -> a, or longer) is
// refused at the parent field of the first queue written that is on or leads into it.
Status CheckQueueTree(const Snapshot& snap, const std::vector<PendingPut>& puts,
                      std::string_view prefix) {
  const std::string queue_kind(config::KindName(Kind::kQueue));
  std::map<std::string, std::string> parents;
  for (const auto& [key, body] : snap.other) {
    if (key.first == queue_kind) parents[key.second] = QueueParent(body);
  }
  bool written = false;
  for (const PendingPut& put : puts) {
    if (put.kind != Kind::kQueue) continue;
    parents[put.name] = QueueParent(put.body);
    written = true;
  }
  if (!written) return OkStatus();
  for (const PendingPut& put : puts) {
    if (put.kind != Kind::kQueue) continue;
    std::vector<std::string> cycle = model::FindParentCycle(parents, put.name);
    if (cycle.empty()) continue;
    return PutError(put,
                    InvalidArgumentError(put.name +
                                         ".parent: queues must form a tree, not a "
                                         "cycle: " +
                                         Join(cycle, " -> ")),
                    prefix);
  }
  return OkStatus();
}

// The quota tree and node pools after `writes` (model/quota_tree.h): an error this write brings
// (one that the stored configs did not already have) refuses it, pointed at the put it is about;
// warnings about the configs written, or new ones, are returned.
Status CheckQuotaTreeWrite(const std::map<std::pair<std::string, std::string>, json>& stored,
                           const std::vector<store::ConfigWrite>& writes,
                           const std::vector<PendingPut>& puts, std::string_view prefix,
                           std::vector<std::string>* warnings) {
  const bool touches = std::any_of(writes.begin(), writes.end(), [](const auto& w) {
    return w.kind == config::KindName(Kind::kQueue) || w.kind == config::KindName(Kind::kNodePool);
  });
  if (!touches) return OkStatus();
  auto after = stored;
  for (const store::ConfigWrite& w : writes) after[{w.kind, w.name}] = w.body;
  const QuotaConfigs old_configs = DecodeQuotaConfigs(stored);
  const QuotaConfigs new_configs = DecodeQuotaConfigs(after);
  const model::QuotaTreeCheck before =
      model::CheckQuotaTree(old_configs.queues, old_configs.node_pools);
  const model::QuotaTreeCheck check =
      model::CheckQuotaTree(new_configs.queues, new_configs.node_pools);
  auto written = [&](const model::QuotaTreeFinding& f) {
    return std::find_if(puts.begin(), puts.end(), [&](const PendingPut& p) {
      return config::KindName(p.kind) == f.kind && p.name == f.name;
    });
  };
  auto known = [](const std::vector<model::QuotaTreeFinding>& list,
                  const model::QuotaTreeFinding& f) {
    return std::any_of(list.begin(), list.end(),
                       [&](const auto& g) { return g.message == f.message; });
  };
  // Errors about the configs written, located in their files; only when there are none, the
  // others this write brought (a node pool whose label a new one took names both).
  std::vector<std::string> about_puts, about_others;
  for (const model::QuotaTreeFinding& f : check.errors) {
    const Status error = InvalidArgumentError(f.message);
    auto put = written(f);
    if (put != puts.end()) {
      about_puts.push_back(PutError(*put, error, prefix).message());
    } else if (!known(before.errors, f)) {
      about_others.push_back(WithPrefix(error, prefix).message());
    }
  }
  if (!about_puts.empty()) return InvalidArgumentError(Join(about_puts, "\n"));
  if (!about_others.empty()) return InvalidArgumentError(Join(about_others, "\n"));
  for (const model::QuotaTreeFinding& f : check.warnings) {
    if (written(f) != puts.end() || !known(before.warnings, f)) warnings->push_back(f.message);
  }
  return OkStatus();
}

// The default_node_pools of the pools written name node pools that exist after the write
// (config::ValidateDefaultNodePools), errors pointed at their files. Pools not written are not
// checked: a node pool deleted with --force leaves them to be fixed at their next write.
Status CheckDefaultNodePools(const config::ConfigSet& next,
                             const std::map<std::pair<std::string, std::string>, json>& stored,
                             const std::vector<store::ConfigWrite>& writes,
                             const std::vector<PendingPut>& puts, std::string_view prefix) {
  const bool pools_written = std::any_of(puts.begin(), puts.end(),
                                         [](const PendingPut& p) { return p.kind == Kind::kPool; });
  if (!pools_written) return OkStatus();
  const std::string node_pool_kind(config::KindName(Kind::kNodePool));
  std::set<std::string> names;
  for (const auto& [key, body] : stored) {
    if (key.first == node_pool_kind) names.insert(key.second);
  }
  for (const store::ConfigWrite& w : writes) {
    if (w.kind == node_pool_kind) names.insert(w.name);
  }
  std::vector<std::string> lines;
  for (const Status& error : config::ValidateDefaultNodePools(
           next, std::vector<std::string>(names.begin(), names.end()))) {
    auto put = std::find_if(puts.begin(), puts.end(), [&](const PendingPut& p) {
      return p.kind == Kind::kPool && StartsWith(error.message(), "pool " + Quoted(p.name) + ": ");
    });
    if (put != puts.end()) lines.push_back(PutError(*put, error, prefix).message());
  }
  return lines.empty() ? OkStatus() : InvalidArgumentError(Join(lines, "\n"));
}

// One attempt of ValidateAndWrite: validated against the configs as they are now, written if
// none of them changed in the meantime (else kAborted).
Result<WriteResult> ValidateAndWriteOnce(store::Store& store, Service::SnapshotCache& cache,
                                         const MachinePoolSupport& machine_pools,
                                         const Caller& caller, const std::vector<PendingPut>& puts,
                                         std::string_view action, std::string_view description,
                                         std::string_view file_name, store::Store::WriteAlso also) {
  ASSIGN_OR_RETURN(SnapshotPtr snap_ptr, cache.Get(store));
  const Snapshot& snap = *snap_ptr;
  config::ConfigSet next = snap.set;
  std::vector<store::ConfigWrite> writes;
  const std::string prefix = FilePrefix(file_name);
  for (const PendingPut& put : puts) {
    RETURN_IF_ERROR(CheckConfigWriteAccess(caller, put.kind, put.name, "PUT", snap.set));
    // Bodies are walked recursively from here on (decoded, copied, stored, printed); the parsers
    // bound what they read, and this bounds what reaches the store by any other way.
    if (Status deep = model::CheckNestingDepth(put.body); !deep.ok()) {
      return PutError(put, deep.WithContext(ConfigSubject(put.kind, put.name).text), prefix);
    }
    json stored;
    if (IsOsmoKind(put.kind)) {
      Status decoded = config::PutConfig(next, put.kind, put.name, put.body);
      if (!decoded.ok()) return PutError(put, decoded, prefix);
      ASSIGN_OR_RETURN(stored, config::GetConfigBody(next, put.kind, put.name));
    } else {
      auto checked = CheckOtherKind(put.kind, put.name, put.body, machine_pools);
      if (!checked.ok()) return PutError(put, checked.status(), prefix);
      stored = std::move(*checked);
    }
    store::ConfigWrite w;
    w.op = store::ConfigWrite::Op::kPut;
    w.kind = std::string(config::KindName(put.kind));
    w.name = put.name;
    w.body = std::move(stored);
    auto rev = snap.revisions.find({w.kind, w.name});
    const int64_t current = rev == snap.revisions.end() ? 0 : rev->second;
    w.expected_revision = current;
    if (put.expected_revision && *put.expected_revision != current) {
      return AbortedError(w.kind + " " + Quoted(w.name) + " is at revision " +
                          std::to_string(current) + ", not " +
                          std::to_string(*put.expected_revision) +
                          ": it changed since you read it; fetch it again and retry");
    }
    w.action = std::string(action);
    w.description = description.empty() ? "gpupool config update " + w.kind + " " + w.name
                                        : std::string(description);
    writes.push_back(std::move(w));
  }
  RETURN_IF_ERROR(CheckReferences(next, puts, prefix));
  RETURN_IF_ERROR(CheckQueueTree(snap, puts, prefix));
  WriteResult result;
  RETURN_IF_ERROR(CheckQuotaTreeWrite(snap.other, writes, puts, prefix, &result.warnings));
  RETURN_IF_ERROR(CheckDefaultNodePools(next, snap.other, writes, puts, prefix));
  std::set<std::string> pools_seen;
  for (const PendingPut& put : puts) {
    if (put.kind == Kind::kPool && pools_seen.insert(put.name).second) {
      RETURN_IF_ERROR(CheckPoolChange(store, snap.set, next, put.name, &result.warnings));
    }
  }
  for (const store::ConfigWrite& w : writes) {
    also.audit.push_back(
        AuditOf(caller, "config " + std::string(action), w.kind + "/" + w.name, w.description));
  }
  auto revisions = store.WriteConfigs(writes, ActorOf(caller), also);
  if (!revisions.ok()) {
    if (revisions.status().code() == StatusCode::kAborted) {
      return AbortedError("configs changed while this update was validated; retry: " +
                          revisions.status().message());
    }
    return revisions.status();
  }
  for (size_t i = 0; i < writes.size(); ++i) {
    result.changes.push_back(
        ConfigChange{writes[i].kind, writes[i].name, (*revisions)[i], writes[i].action});
  }
  return result;
}

// Writes the configs with their audit records and `also` (nodes, more records) in one
// transaction. A write that states no revision for any config (no If-Match) is last-writer-wins:
// a concurrent commit between its read and its write only means validating it again against
// the newer configs, a few times (each retry follows someone else's commit, so this ends).
// Only a write that states a revision is refused with kAborted (409) when another came first.
Result<WriteResult> ValidateAndWrite(store::Store& store, Service::SnapshotCache& cache,
                                     const MachinePoolSupport& machine_pools, const Caller& caller,
                                     const std::vector<PendingPut>& puts, std::string_view action,
                                     std::string_view description, std::string_view file_name,
                                     store::Store::WriteAlso also = {}) {
  constexpr int kAttempts = 8;
  const bool conditional = std::any_of(puts.begin(), puts.end(), [](const PendingPut& put) {
    return put.expected_revision.has_value();
  });
  for (int attempt = 1;; ++attempt) {
    auto result = ValidateAndWriteOnce(store, cache, machine_pools, caller, puts, action,
                                       description, file_name, also);
    if (result.ok() || result.status().code() != StatusCode::kAborted || conditional ||
        attempt == kAttempts) {
      return result;
    }
  }
}

// ---- Errors located in the user's file (apply, config update): service/located_errors.h ----

// ---- Manifests (apply) --------------------------------------------------------------------

// The documents of one file: one JSON document (when the first non-blank character is `{` or
// `[`, as model::ParseJsonOrYamlDocuments decides), or every document of a YAML stream.
Result<std::vector<SourceDocument>> ParseManifestFile(const ManifestFile& file) {
  std::vector<SourceDocument> docs;
  if (const std::optional<size_t> start = JsonStart(file.text)) {
    ASSIGN_OR_RETURN(json value, model::ParseJson(file.text, file.name));
    auto map = std::make_shared<const model::JsonSourceMap>(model::JsonSourceMap::Build(file.text));
    docs.push_back({std::move(value), file.name, model::PositionOfOffset(file.text, *start).line,
                    std::move(map), ""});
    return docs;
  }
  ASSIGN_OR_RETURN(auto yaml, model::ParseYamlDocuments(file.text, file.name));
  for (model::YamlDocument& d : yaml) {
    docs.push_back({std::move(d.value), file.name, d.line,
                    std::make_shared<const model::JsonSourceMap>(std::move(d.source_map)), ""});
  }
  return docs;
}

bool IsList(const json& doc) {
  if (!doc.is_object()) return false;
  auto kind = doc.find("kind");
  return kind != doc.end() && (*kind == "NodeList" || *kind == "List");
}

// Every document of every file; the items of a NodeList (or List) are documents of their own.
Result<std::vector<SourceDocument>> ParseManifests(const std::vector<ManifestFile>& files) {
  std::vector<SourceDocument> out;
  for (const ManifestFile& file : files) {
    ASSIGN_OR_RETURN(std::vector<SourceDocument> docs, ParseManifestFile(file));
    for (SourceDocument& doc : docs) {
      if (!IsList(doc.value)) {
        out.push_back(std::move(doc));
        continue;
      }
      const json& items = doc.value.value("items", json());
      for (size_t i = 0; items.is_array() && i < items.size(); ++i) {
        SourceDocument item{items[i], doc.file, doc.line, doc.map,
                            JoinPath(doc.map_path, model::IndexPath("items", i))};
        item.line = NearestPosition(item, "").line;
        out.push_back(std::move(item));
      }
    }
  }
  return out;
}

std::string StringMember(const json& object, std::string_view key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string ManifestName(const json& doc) {
  auto metadata = doc.find("metadata");
  return metadata != doc.end() && metadata->is_object() ? StringMember(*metadata, "name") : "";
}

// What apply does with the documents: configs to validate and write together, nodes to import.
struct ManifestPlan {
  std::vector<PendingPut> puts;
  std::vector<store::NodeRecord> nodes;
};

Status PlanNode(const SourceDocument& doc, ManifestPlan& plan) {
  const DocumentSubject subject = ManifestSubject("Node", ManifestName(doc.value));
  auto node = model::NodeFromJson(doc.value);
  if (!node.ok()) return LocateError(node.status(), doc, subject);
  plan.nodes.push_back(store::NodeRecord{node->name, model::NodeToJson(*node)});
  return OkStatus();
}

// apiVersion, kind and the top-level fields of a config manifest; its kind.
Result<Kind> ManifestKind(const SourceDocument& doc) {
  const json& v = doc.value;
  std::vector<std::string> kinds;
  for (Kind k : config::AllKinds()) kinds.emplace_back(config::KindManifestName(k));
  const std::string kind_text = StringMember(v, "kind");
  if (kind_text == "Job") {
    // A Job's pods would bypass the pool's platforms and validations: they run as workflows.
    return AtField(doc, "Job " + ManifestName(v), "kind",
                   "apply does not run batch/v1 Jobs: submit the work as a workflow (gpupool "
                   "workflow submit), or see what the Job would do with gpupool schedule -f");
  }
  if (std::find(kinds.begin(), kinds.end(), kind_text) == kinds.end()) {
    return AtField(doc, "", "kind",
                   "unknown kind " + Quoted(kind_text) + DidYouMean(kind_text, kinds) +
                       "; expected one of " + Join(kinds, ", ") + ", Node");
  }
  const DocumentSubject subject = ManifestSubject(kind_text, ManifestName(v));
  const std::string api_version = StringMember(v, "apiVersion");
  if (kind_text == config::KindManifestName(Kind::kPodDisruptionBudget)) {
    if (api_version != model::kPodDisruptionBudgetApiVersion) {
      return AtField(doc, subject.text, "apiVersion",
                     "expected \"policy/v1\", got " + Quoted(api_version));
    }
    // The server's tasks run in namespace default: a budget elsewhere would select none of them.
    const json& metadata = v.value("metadata", json());
    const std::string ns = metadata.is_object() ? StringMember(metadata, "namespace") : "";
    if (!ns.empty() && ns != "default") {
      return AtField(
          doc, subject.text, "metadata.namespace",
          "expected \"default\" (the namespace of the server's tasks), got " + Quoted(ns));
    }
  } else if (api_version != "gpupool.io/v1") {
    return AtField(
        doc, subject.text, "apiVersion",
        "expected \"gpupool.io/v1\" (or kind Node with apiVersion v1), got " + Quoted(api_version));
  }
  for (const auto& [key, value] : v.items()) {
    if (key != "apiVersion" && key != "kind" && key != "metadata" && key != "spec") {
      return AtField(doc, subject.text, key,
                     "unknown field" + DidYouMean(key, {"apiVersion", "kind", "metadata", "spec"}) +
                         "; expected apiVersion, kind, metadata, spec");
    }
  }
  return config::ParseKind(kind_text);
}

// A config manifest becomes a put whose errors point into the document (which must outlive it).
Status PlanConfig(const SourceDocument& doc, ManifestPlan& plan) {
  ASSIGN_OR_RETURN(Kind kind, ManifestKind(doc));
  const std::string name = ManifestName(doc.value);
  const std::string kind_text(config::KindManifestName(kind));
  if (name.empty()) return AtField(doc, kind_text, "metadata.name", "required string");
  // Checked here (the decoders check names too) to point at metadata.name, not at the spec.
  const DocumentSubject at_root = ManifestSubject(kind_text, name);
  RETURN_IF_ERROR(LocateError(model::ValidateConfigName(name, "metadata.name"), doc, at_root));
  json spec = doc.value.value("spec", json());
  if (spec.is_null()) spec = kind == Kind::kResourceValidation ? json::array() : json::object();
  const DocumentSubject subject = ManifestSubject(kind_text, name, "spec", !IsOsmoKind(kind));
  PendingPut put{kind, name, std::move(spec)};
  put.locate = [&doc, subject](const Status& status) { return LocateError(status, doc, subject); };
  plan.puts.push_back(std::move(put));
  return OkStatus();
}

Status PlanDocument(const SourceDocument& doc, ManifestPlan& plan) {
  if (!doc.value.is_object()) {
    return AtField(doc, "", "", "expected an object, got " + model::JsonTypeName(doc.value));
  }
  if (StringMember(doc.value, "kind") == "Node") return PlanNode(doc, plan);
  return PlanConfig(doc, plan);
}

// One apply writes each object once: the same kind and name twice (in one file or two) is
// refused at the second, naming the first ("... Queue q: metadata.name: also defined at
// a.yaml:3:9"), rather than failing in the write as a concurrent change would.
Status CheckDefinedOnce(const SourceDocument& doc,
                        std::map<std::string, const SourceDocument*>& defined) {
  if (!doc.value.is_object()) return OkStatus();
  const std::string kind = StringMember(doc.value, "kind");
  const std::string name = ManifestName(doc.value);
  if (kind.empty() || name.empty()) return OkStatus();
  auto [first, inserted] = defined.try_emplace(kind + "/" + name, &doc);
  if (inserted) return OkStatus();
  const model::SourcePosition at = NearestPosition(*first->second, "metadata.name");
  return AtField(doc, kind + " " + name, "metadata.name",
                 "also defined at " + first->second->file + ":" + std::to_string(at.line) + ":" +
                     std::to_string(at.column) + "; an apply defines each object once");
}

std::string FileNames(const std::vector<ManifestFile>& files) {
  std::vector<std::string> names;
  for (const ManifestFile& file : files) names.push_back(file.name);
  return Join(names, " ");
}

Status CheckNodeWriteAccess(const Caller& caller, const config::ConfigSet& set) {
  Status access = config::CheckAccess(caller.roles, "PUT", "/api/nodes", set);
  if (access.ok()) return access;
  return PermissionDeniedError("access denied: user " + Quoted(caller.user) + ": " +
                               access.message());
}

// ---- Config files (config update) ---------------------------------------------------------

// The request's text as a document that errors can point into (the body at `body_path`);
// nullopt without a text or a file name (a merge patch, a programmatic caller), or when the text
// is not one JSON or YAML document.
std::optional<SourceDocument> ConfigFileDocument(const UpdateConfigRequest& request) {
  if (request.text.empty() || request.file_name.empty()) return std::nullopt;
  SourceDocument doc{json(), request.file_name, 1, nullptr, request.body_path};
  if (const std::optional<size_t> start = JsonStart(request.text)) {
    doc.line = model::PositionOfOffset(request.text, *start).line;
    doc.map =
        std::make_shared<const model::JsonSourceMap>(model::JsonSourceMap::Build(request.text));
  } else {
    auto yaml = model::ParseYamlDocuments(request.text, request.file_name);
    if (!yaml.ok() || yaml->size() != 1) return std::nullopt;
    doc.line = yaml->front().line;
    doc.map = std::make_shared<const model::JsonSourceMap>(std::move(yaml->front().source_map));
  }
  if (doc.map->empty()) return std::nullopt;
  return doc;
}

// A SplitConfigFile error: at the field it names ("p.name: ..."), else prefixed with the file's
// name (an error may be about the command line's name, which is not in the file).
Status SplitError(const Status& status, const std::optional<SourceDocument>& file,
                  std::string_view file_name) {
  if (file && !SplitFieldError(status.message()).path.empty()) {
    return LocateError(status, *file, DocumentSubject{});
  }
  return WithPrefix(status, FilePrefix(file_name));
}

// The puts of a config file's configs; with the file's document, each points its errors at its
// fields: `pool.json:7:7: pool "p": platforms.a.descripton: unknown field ...`, the path being
// relative to the config (the object form), or to its entry (the map form).
std::vector<PendingPut> ConfigFilePuts(Kind kind, std::vector<config::NamedBody> configs,
                                       const std::optional<SourceDocument>& file) {
  std::vector<PendingPut> puts;
  for (config::NamedBody& config : configs) {
    PendingPut put{kind, config.name, json()};
    if (file) {
      SourceDocument doc = *file;
      if (config.map_entry) doc.map_path = JoinPath(doc.map_path, config.name);
      put.locate = [doc = std::move(doc), subject = ConfigSubject(kind, config.name)](
                       const Status& status) { return LocateError(status, doc, subject); };
    }
    put.body = std::move(config.body);
    puts.push_back(std::move(put));
  }
  return puts;
}

}  // namespace

// ---- Service ------------------------------------------------------------------------------

struct Service::Replanner {
  store::BatchWorker<std::function<void()>> worker{16, [](auto& batch) {
                                                     for (auto& replan : batch) replan();
                                                   }};
};

Service::Service(store::Store& store, const Clock& clock)
    : store_(store),
      clock_(clock),
      cache_(std::make_shared<SnapshotCache>()),
      replanner_(std::make_unique<Replanner>()) {}

Service::~Service() = default;

void Service::SetMachinePoolSupport(MachinePoolSupport support) {
  machine_pools_ = support;
  std::lock_guard<std::mutex> lock(cache_->mu);
  cache_->machine_pools = std::move(support);
  cache_->generation = -1;  // a snapshot read before has no scale-up nodes
  cache_->snapshot = nullptr;
}

Status Service::EnsureBuiltins() {
  ASSIGN_OR_RETURN(auto history, store_.History(std::nullopt, std::nullopt, 1));
  if (!history.empty()) return OkStatus();
  config::ConfigSet builtins = config::BuiltinConfigs();
  std::vector<store::ConfigWrite> writes;
  for (Kind kind :
       {Kind::kBackend, Kind::kPodTemplate, Kind::kResourceValidation, Kind::kPool, Kind::kRole}) {
    for (const std::string& name : config::ConfigNames(builtins, kind)) {
      store::ConfigWrite w;
      w.kind = std::string(config::KindName(kind));
      w.name = name;
      ASSIGN_OR_RETURN(w.body, config::GetConfigBody(builtins, kind, name));
      w.expected_revision = 0;
      w.action = "update";
      w.description = "built-in config";
      writes.push_back(std::move(w));
    }
  }
  auto written = store_.WriteConfigs(writes, store::Actor{std::string(kSystemUser), "gpupool"});
  if (!written.ok() && written.status().code() != StatusCode::kAborted) return written.status();
  return OkStatus();  // kAborted: another process wrote them first
}

Result<WriteResult> Service::UpdateConfig(const Caller& caller,
                                          const UpdateConfigRequest& request) {
  ASSIGN_OR_RETURN(Kind kind, config::ParseKind(request.kind));
  if (!request.body.is_object() && !request.body.is_array()) {
    return InvalidArgumentError(FilePrefix(request.file_name) + "expected a JSON object, got " +
                                model::JsonTypeName(request.body));
  }
  // Before the body is copied: a copy of a tree nested 20,000 deep overflows the stack.
  RETURN_IF_ERROR(
      WithPrefix(model::CheckNestingDepth(request.body), FilePrefix(request.file_name)));
  const std::optional<SourceDocument> file = ConfigFileDocument(request);
  auto split = config::SplitConfigFile(kind, request.body, request.name);
  if (!split.ok()) return SplitError(split.status(), file, request.file_name);
  if (split->empty()) {
    return InvalidArgumentError(FilePrefix(request.file_name) + "no " +
                                std::string(config::KindName(kind)) + " config in the file");
  }
  std::vector<PendingPut> puts = ConfigFilePuts(kind, std::move(*split), file);
  if (request.expected_revision) {
    if (puts.size() != 1) {
      return InvalidArgumentError("expected_revision applies to one named config, got " +
                                  std::to_string(puts.size()));
    }
    puts.front().expected_revision = request.expected_revision;
  }
  // An empty description becomes "gpupool config update KIND NAME" per config.
  return ValidateAndWrite(store_, *cache_, machine_pools_, caller, puts, "update",
                          request.description, request.file_name);
}

json MergePatch(json target, const json& patch) {
  if (!patch.is_object()) return patch;
  if (!target.is_object()) target = json::object();
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(key);
    } else {
      auto it = target.find(key);
      json merged = MergePatch(it != target.end() ? *it : json(), value);
      target[key] = std::move(merged);
    }
  }
  return target;
}

Result<WriteResult> Service::PatchConfig(const Caller& caller, const PatchConfigRequest& request) {
  ASSIGN_OR_RETURN(std::string kind, NormalizeKind(request.kind));
  if (!request.patch.is_object()) {
    return InvalidArgumentError("merge patch of " + kind + " " + Quoted(request.name) +
                                ": expected a JSON object, got " +
                                model::JsonTypeName(request.patch));
  }
  // MergePatch walks the patch recursively.
  RETURN_IF_ERROR(model::CheckNestingDepth(request.patch)
                      .WithContext("merge patch of " + kind + " " + Quoted(request.name)));
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    auto current = store_.GetConfig(kind, request.name);
    if (!current.ok()) {
      if (current.status().code() == StatusCode::kNotFound) {
        return NotFoundError(kind + " " + Quoted(request.name) +
                             " does not exist (a merge patch changes an existing config)");
      }
      return current.status();
    }
    if (request.expected_revision && *request.expected_revision != current->revision) {
      return AbortedError("config " + kind + "/" + request.name + ": expected revision " +
                          std::to_string(*request.expected_revision) + " but it is " +
                          std::to_string(current->revision) +
                          " (changed concurrently; reload and retry)");
    }
    UpdateConfigRequest update;
    update.kind = kind;
    update.name = request.name;
    update.body = MergePatch(current->body, request.patch);
    update.file_name = "merge patch";
    update.description = request.description;
    update.expected_revision = current->revision;  // the body the patch was applied to
    auto result = UpdateConfig(caller, update);
    // Without If-Match, a concurrent change only means: apply the patch to the newer body.
    if (result.ok() || result.status().code() != StatusCode::kAborted ||
        request.expected_revision || attempt == kAttempts) {
      return result;
    }
  }
}

Result<WriteResult> Service::SetPoolRole(const Caller& caller, std::string_view role_name,
                                         std::string_view description) {
  ASSIGN_OR_RETURN(config::Role role, config::GeneratePoolRole(role_name));
  std::vector<PendingPut> puts{{Kind::kRole, role.name, config::RoleToJson(role)}};
  std::string desc = description.empty()
                         ? "gpupool config set ROLE " + std::string(role_name) + " pool"
                         : std::string(description);
  return ValidateAndWrite(store_, *cache_, machine_pools_, caller, puts, "update", desc, "");
}

namespace {

// The roles that grant `pool` by its name (`pool/<name>` among a policy's resources), as the
// built-in osmo-user role grants every user the default pool.
std::vector<std::string> RolesNamingPool(const config::ConfigSet& set, std::string_view pool) {
  const std::string resource = "pool/" + std::string(pool);
  std::vector<std::string> roles;
  for (const auto& [name, role] : set.roles) {
    bool names = std::any_of(role.policies.begin(), role.policies.end(), [&](const auto& p) {
      return p.effect == config::Effect::kAllow &&
             std::find(p.resources.begin(), p.resources.end(), resource) != p.resources.end();
    });
    if (names) roles.push_back(name);
  }
  return roles;
}

// Deleting a pool that a role grants by name (the default pool: every user's) leaves that role's
// members nowhere to submit; it takes --force, and then says so.
Status CheckPoolNotGranted(const config::ConfigSet& set, const std::string& pool, bool force,
                           std::vector<std::string>* warnings) {
  std::vector<std::string> roles = RolesNamingPool(set, pool);
  if (roles.empty()) return OkStatus();
  const std::string granted = "pool " + Quoted(pool) + " is granted by name by role" +
                              (roles.size() > 1 ? "s " : " ") + Join(roles, ", ");
  if (!force) {
    return FailedPreconditionError(granted +
                                   ": their members would have no pool to submit to; change "
                                   "the roles first, or pass --force to delete it anyway");
  }
  warnings->push_back(granted + ": deleted anyway (--force); their members cannot submit there");
  return OkStatus();
}

}  // namespace

namespace {

// A node pool that queues hold quota in, or a department with projects, is deleted only with
// --force, and then with a warning: the queues' quota there, or the projects' parent, dangles
// (the next write of those queues must fix it).
Status CheckQuotaTreeDelete(const config::ConfigSet& set,
                            const std::map<std::pair<std::string, std::string>, json>& stored,
                            Kind kind, const std::string& name, bool force,
                            std::vector<std::string>* warnings) {
  const QuotaConfigs configs = DecodeQuotaConfigs(stored);
  std::string users;
  if (kind == Kind::kNodePool) {
    auto queues = model::QueuesUsingNodePool(configs.queues, name);
    auto pools = config::UsersOf(set, kind, name);
    if (queues.empty() && pools.empty()) return OkStatus();
    std::vector<std::string> uses;
    if (!queues.empty()) uses.push_back("holds quota of queues " + Join(queues, ", "));
    if (!pools.empty()) uses.push_back("is a default node pool of pools " + Join(pools, ", "));
    users = "node pool " + Quoted(name) + " " + Join(uses, " and ");
  } else {
    auto projects = model::ProjectsOf(configs.queues, name);
    if (projects.empty()) return OkStatus();
    users = "department " + Quoted(name) + " has projects " + Join(projects, ", ");
  }
  if (!force) {
    return FailedPreconditionError(users +
                                   "; change them first, or pass --force to delete it anyway");
  }
  warnings->push_back(users + ": deleted anyway (--force); fix them at their next update");
  return OkStatus();
}

}  // namespace

Result<WriteResult> Service::DeleteConfig(const Caller& caller,
                                          const DeleteConfigRequest& request) {
  ASSIGN_OR_RETURN(Kind kind, config::ParseKind(request.kind));
  const std::string kind_name(config::KindName(kind));
  ASSIGN_OR_RETURN(SnapshotPtr snap_ptr, cache_->Get(store_));
  const Snapshot& snap = *snap_ptr;
  RETURN_IF_ERROR(CheckConfigWriteAccess(caller, kind, request.name, "DELETE", snap.set));
  auto rev = snap.revisions.find({kind_name, request.name});
  if (rev == snap.revisions.end()) {
    return NotFoundError(kind_name + " " + Quoted(request.name) + " does not exist" +
                         DidYouMean(request.name, config::ConfigNames(snap.set, kind)));
  }
  WriteResult result;
  if (IsOsmoKind(kind)) {
    RETURN_IF_ERROR(config::CheckDeletable(snap.set, kind, request.name));
  }
  if (kind == Kind::kNodePool || kind == Kind::kQueue) {
    RETURN_IF_ERROR(CheckQuotaTreeDelete(snap.set, snap.other, kind, request.name, request.force,
                                         &result.warnings));
  }
  if (kind == Kind::kPool) {
    RETURN_IF_ERROR(CheckPoolNotGranted(snap.set, request.name, request.force, &result.warnings));
    store::WorkflowFilter filter;
    filter.pool = request.name;
    filter.unfinished_only = true;
    filter.limit = 0;
    ASSIGN_OR_RETURN(auto workflows, store_.ListWorkflows(filter));
    if (!workflows.empty()) {
      if (!request.force) {
        return FailedPreconditionError(
            "pool " + Quoted(request.name) + " is used by unfinished workflows " +
            WorkflowIds(workflows) + "; cancel them first or pass --force");
      }
      result.warnings.push_back(
          "pool " + Quoted(request.name) +
          " deleted although unfinished workflows use it: " + WorkflowIds(workflows));
    }
  }
  store::ConfigWrite w;
  w.op = store::ConfigWrite::Op::kDelete;
  w.kind = kind_name;
  w.name = request.name;
  w.expected_revision = rev->second;
  w.action = "delete";
  w.description = request.description.empty()
                      ? "gpupool config delete " + kind_name + " " + request.name
                      : request.description;
  store::Store::WriteAlso also;
  also.audit.push_back(
      AuditOf(caller, "config delete", kind_name + "/" + request.name, w.description));
  auto revisions = store_.WriteConfigs({w}, ActorOf(caller), also);
  if (!revisions.ok()) return revisions.status();
  result.changes.push_back(ConfigChange{kind_name, request.name, (*revisions)[0], "delete"});
  return result;
}

Result<WriteResult> Service::Rollback(const Caller& caller, const RollbackRequest& request) {
  ASSIGN_OR_RETURN(Kind kind, config::ParseKind(request.kind));
  const std::string kind_name(config::KindName(kind));
  auto revision = store_.GetRevision(kind_name, request.name, request.revision);
  if (!revision.ok()) {
    if (revision.status().code() == StatusCode::kNotFound) {
      return NotFoundError(kind_name + " " + Quoted(request.name) + " has no revision " +
                           std::to_string(request.revision) + " (see gpupool config history " +
                           kind_name + " " + request.name + ")");
    }
    return revision.status();
  }
  if (revision->body.is_null()) {
    return InvalidArgumentError("revision " + std::to_string(request.revision) + " of " +
                                kind_name + " " + Quoted(request.name) +
                                " is a delete; roll back to a revision that has a body");
  }
  std::string description = request.description.empty()
                                ? "rollback " + kind_name + " " + request.name + " to revision " +
                                      std::to_string(request.revision)
                                : request.description;
  return ValidateAndWrite(store_, *cache_, machine_pools_, caller,
                          {PendingPut{kind, request.name, revision->body}}, "rollback", description,
                          "");
}

Result<ApplyResult> Service::Apply(const Caller& caller, const ApplyRequest& request) {
  ASSIGN_OR_RETURN(std::vector<SourceDocument> docs, ParseManifests(request.files));
  const std::string names = FileNames(request.files);
  if (docs.empty()) {
    return InvalidArgumentError("no manifests in " + (names.empty() ? "the request" : names));
  }
  ManifestPlan plan;                                     // its puts point into `docs`
  std::map<std::string, const SourceDocument*> defined;  // "Kind/name" -> where, first time
  for (const SourceDocument& doc : docs) {
    RETURN_IF_ERROR(CheckDefinedOnce(doc, defined));
    RETURN_IF_ERROR(PlanDocument(doc, plan));
  }
  if (!plan.nodes.empty()) {
    // Before the configs are written, so that a caller who may not write nodes writes nothing.
    ASSIGN_OR_RETURN(SnapshotPtr snap, cache_->Get(store_));
    RETURN_IF_ERROR(CheckNodeWriteAccess(caller, snap->set));
  }
  // Configs, nodes and their audit records commit together: an apply that fails writes nothing.
  store::Store::WriteAlso also;
  if (!plan.nodes.empty()) {
    also.audit.push_back(
        AuditOf(caller, "node import", names, std::to_string(plan.nodes.size()) + " nodes"));
    also.nodes = plan.nodes;
  }
  ApplyResult result;
  result.nodes_imported = static_cast<int>(plan.nodes.size());
  if (!plan.puts.empty()) {
    const std::string description =
        request.description.empty() ? "gpupool apply -f " + names : request.description;
    ASSIGN_OR_RETURN(result.configs,
                     ValidateAndWrite(store_, *cache_, machine_pools_, caller, plan.puts, "update",
                                      description, "", std::move(also)));
  } else {
    RETURN_IF_ERROR(store_.WriteConfigs({}, ActorOf(caller), also).status());
  }
  return result;
}

Result<ConfigView> Service::ShowConfig(std::string_view kind_text, std::string_view name,
                                       std::optional<int64_t> revision) {
  ASSIGN_OR_RETURN(Kind kind, config::ParseKind(kind_text));
  const std::string kind_name(config::KindName(kind));
  ConfigView view;
  view.kind = kind_name;
  view.name = std::string(name);
  if (revision.has_value()) {
    auto rec = store_.GetRevision(kind_name, name, *revision);
    if (!rec.ok()) {
      if (rec.status().code() == StatusCode::kNotFound) {
        return NotFoundError(kind_name + " " + Quoted(name) + " has no revision " +
                             std::to_string(*revision));
      }
      return rec.status();
    }
    view.revision = rec->revision;
    view.updated_by = rec->author;
    view.updated_at_ms = rec->created_at_ms;
    view.body = rec->body;
    return view;
  }
  auto rec = store_.GetConfig(kind_name, name);
  if (!rec.ok()) {
    if (rec.status().code() == StatusCode::kNotFound) {
      std::vector<std::string> names;
      auto all = store_.ListConfigs(kind_name);
      if (all.ok()) {
        for (const auto& r : *all) names.push_back(r.name);
      }
      return NotFoundError(kind_name + " " + Quoted(name) + " does not exist" +
                           DidYouMean(name, names));
    }
    return rec.status();
  }
  view.revision = rec->revision;
  view.updated_by = rec->updated_by;
  view.updated_at_ms = rec->updated_at_ms;
  view.body = rec->body;
  return view;
}

Result<std::vector<ConfigView>> Service::ListConfigs(std::optional<std::string_view> kind) {
  std::optional<std::string> kind_name;
  if (kind.has_value()) {
    ASSIGN_OR_RETURN(Kind k, config::ParseKind(*kind));
    kind_name = std::string(config::KindName(k));
  }
  ASSIGN_OR_RETURN(
      auto records,
      store_.ListConfigs(kind_name ? std::optional<std::string_view>(*kind_name) : std::nullopt));
  std::vector<ConfigView> out;
  for (const auto& r : records) {
    out.push_back(ConfigView{r.kind, r.name, r.revision, r.updated_by, r.updated_at_ms, r.body});
  }
  return out;
}

Result<std::vector<HistoryEntry>> Service::History(const HistoryFilter& filter) {
  std::optional<std::string> kind_name;
  if (filter.kind.has_value()) {
    ASSIGN_OR_RETURN(Kind k, config::ParseKind(*filter.kind));
    kind_name = std::string(config::KindName(k));
  }
  ASSIGN_OR_RETURN(
      auto records,
      store_.History(kind_name ? std::optional<std::string_view>(*kind_name) : std::nullopt,
                     filter.name ? std::optional<std::string_view>(*filter.name) : std::nullopt,
                     filter.limit));
  std::vector<HistoryEntry> out;
  for (const auto& r : records) {
    out.push_back(HistoryEntry{r.kind, r.name, r.revision, r.action, r.author, r.created_at_ms,
                               r.description, r.body});
  }
  return out;
}

Result<NodeImportResult> Service::ImportNodes(const Caller& caller, std::string_view text,
                                              std::string_view file_name, bool replace_all) {
  ASSIGN_OR_RETURN(SnapshotPtr snap, cache_->Get(store_));
  RETURN_IF_ERROR(CheckNodeWriteAccess(caller, snap->set));
  ASSIGN_OR_RETURN(auto nodes, model::ParseNodes(text, file_name));
  std::vector<store::NodeRecord> records;
  NodeImportResult result;
  std::set<std::string> seen;
  for (const auto& n : nodes) {
    if (!seen.insert(n.name).second) {
      return InvalidArgumentError(FilePrefix(file_name) + "node " + Quoted(n.name) +
                                  " appears twice");
    }
    records.push_back(store::NodeRecord{n.name, model::NodeToJson(n)});
    result.names.push_back(n.name);
  }
  result.imported = static_cast<int>(records.size());
  store::Store::WriteAlso also;
  also.audit.push_back(
      AuditOf(caller, "node import", file_name, std::to_string(records.size()) + " nodes"));
  also.nodes = std::move(records);
  also.replace_all_nodes = replace_all;
  RETURN_IF_ERROR(store_.WriteConfigs({}, ActorOf(caller), also).status());
  return result;
}

Result<std::vector<PoolRow>> Service::ListPools(const Caller& caller) {
  ASSIGN_OR_RETURN(auto state, cache_->GetWithNodes(store_));
  const Snapshot& snap = *state.first;
  const std::vector<model::Node>& nodes = *state.second;
  ASSIGN_OR_RETURN(auto membership, config::ComputeMembership(snap.set, nodes));
  store::WorkflowFilter filter;
  filter.unfinished_only = true;
  filter.limit = 0;
  ASSIGN_OR_RETURN(auto workflows, store_.ListWorkflows(filter));

  std::vector<std::string> visible = config::AllowedPools(caller.roles, snap.set);
  std::vector<PoolRow> rows;
  for (const auto& [name, pool] : snap.set.pools) {
    if (!HasRole(caller, config::kAdminRole) &&
        std::find(visible.begin(), visible.end(), name) == visible.end()) {
      continue;
    }
    PoolRow row;
    row.name = name;
    row.description = pool.description;
    row.backend = pool.backend;
    row.platforms = pool.PlatformNames();
    int node_count = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      bool member =
          std::any_of(membership[i].memberships.begin(), membership[i].memberships.end(),
                      [&row](const config::PoolPlatform& pp) { return pp.pool == row.name; });
      if (!member) continue;
      ++node_count;
      auto it = nodes[i].allocatable.find("nvidia.com/gpu");
      if (it != nodes[i].allocatable.end()) {
        row.gpu_capacity = SaturatingAdd(row.gpu_capacity, it->second.Value());
      }
    }
    for (const auto& wf : workflows) {
      if (wf.pool != name) continue;
      bool low = wf.spec.is_object() && wf.spec.value("priority", std::string()) == "LOW";
      for (const auto& t : wf.tasks) {
        if (!IsActiveTaskStatus(t.status)) continue;
        int64_t gpus = Milli(TaskRequests(t), "nvidia.com/gpu") / 1000;
        row.gpu_used += gpus;
        if (!low) row.gpu_quota_used += gpus;
      }
    }
    if (pool.gpu.has_value() && pool.gpu->guarantee >= 0) {
      row.gpu_quota_limit = pool.gpu->guarantee;
    } else {
      row.gpu_quota_limit = row.gpu_capacity;
    }
    row.status = pool.enable_maintenance ? "MAINTENANCE" : (node_count > 0 ? "ONLINE" : "OFFLINE");
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<ProfileView> Service::Profile(const Caller& caller) {
  ASSIGN_OR_RETURN(SnapshotPtr snap, cache_->Get(store_));
  ProfileView profile;
  profile.user = caller.user;
  profile.roles = caller.roles;
  profile.pools = HasRole(caller, config::kAdminRole)
                      ? config::ConfigNames(snap->set, Kind::kPool)
                      : config::AllowedPools(caller.roles, snap->set);
  const bool has_default =
      std::find(profile.pools.begin(), profile.pools.end(), "default") != profile.pools.end();
  if (has_default) {
    profile.default_pool = "default";
  } else if (profile.pools.size() == 1) {
    profile.default_pool = profile.pools.front();
  }
  std::vector<model::Queue> queues;
  for (auto& [name, queue] : DecodeQuotaConfigs(snap->other).queues) {
    queues.push_back(std::move(queue));
  }
  profile.queues = submit::SubmittableQueues(snap->set, caller.roles, queues);
  return profile;
}

json ToJson(const ProfileView& profile) {
  return json{
      {"user", profile.user},
      {"roles", profile.roles},
      {"pools", profile.pools},
      {"default_pool", profile.default_pool.empty() ? json(nullptr) : json(profile.default_pool)},
      {"queues", profile.queues}};
}

Result<std::vector<ResourceRow>> Service::ListResources(const Caller& caller,
                                                        const ResourceFilter& filter) {
  (void)caller;
  ASSIGN_OR_RETURN(auto state, cache_->GetWithNodes(store_));
  const Snapshot& snap = *state.first;
  if (filter.pool.has_value()) {
    const config::Pool* pool = snap.set.FindPool(*filter.pool);
    if (pool == nullptr) {
      return NotFoundError("pool " + Quoted(*filter.pool) + " does not exist" +
                           DidYouMean(*filter.pool, config::ConfigNames(snap.set, Kind::kPool)));
    }
    if (filter.platform.has_value() && pool->FindPlatform(*filter.platform) == nullptr) {
      return NotFoundError("platform " + Quoted(*filter.platform) + " is not in pool " +
                           Quoted(*filter.pool) +
                           DidYouMean(*filter.platform, pool->PlatformNames()) +
                           "; the pool's platforms: " + Join(pool->PlatformNames(), ", "));
    }
  }
  const std::vector<model::Node>& nodes = *state.second;
  ASSIGN_OR_RETURN(auto membership, config::ComputeMembership(snap.set, nodes));
  store::WorkflowFilter wf_filter;
  wf_filter.unfinished_only = true;
  wf_filter.limit = 0;
  ASSIGN_OR_RETURN(auto workflows, store_.ListWorkflows(wf_filter));
  std::map<std::string, model::ResourceList> used;  // node -> requests of active tasks
  for (const auto& wf : workflows) {
    for (const auto& t : wf.tasks) {
      if (t.node.empty() || !IsActiveTaskStatus(t.status)) continue;
      model::AddResources(used[t.node], TaskRequests(t));
    }
  }
  auto selector = model::ParseLabelSelector(filter.selector);
  if (!selector.ok()) return selector.status().WithContext("-l/selector");
  const QuotaConfigs quota_configs = DecodeQuotaConfigs(snap.other);
  std::vector<ResourceRow> rows;
  bool filtered = filter.pool.has_value() || filter.platform.has_value();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const model::Node& node = nodes[i];
    if (!model::MatchesLabelSelector(*selector, node.labels)) continue;
    ResourceRow base;
    base.node = node.name;
    base.type = std::string(config::NodeTypeName(membership[i].type));
    const model::ResourceList& u = used[node.name];
    base.cpu_used = Milli(u, "cpu");
    base.cpu_capacity = Milli(node.allocatable, "cpu");
    base.memory_used = Units(u, "memory");
    base.memory_capacity = Units(node.allocatable, "memory");
    base.storage_used = Units(u, "ephemeral-storage");
    base.storage_capacity = Units(node.allocatable, "ephemeral-storage");
    base.gpu_used = Milli(u, "nvidia.com/gpu");
    base.gpu_capacity = Milli(node.allocatable, "nvidia.com/gpu");
    auto product = node.labels.find("nvidia.com/gpu.product");
    if (product != node.labels.end()) base.gpu_product = product->second;
    base.node_pools = model::MatchingNodePools(node, quota_configs.node_pools);
    if (base.node_pools.size() > 1) {
      base.node_pool_conflict = model::NodePoolConflictMessage(node.name, base.node_pools);
    }
    if (membership[i].memberships.empty()) {
      if (filtered) continue;
      base.pool = "-";
      base.platform = "-";
      rows.push_back(base);
      continue;
    }
    for (const auto& pp : membership[i].memberships) {
      if (filter.pool && pp.pool != *filter.pool) continue;
      if (filter.platform && pp.platform != *filter.platform) continue;
      ResourceRow row = base;
      row.pool = pp.pool;
      row.platform = pp.platform;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

struct Service::PreparedSubmission {
  SubmitResult result;
  std::optional<store::WorkflowRecord> record;  // nullopt for a dry run
  store::AuditRecord audit;
  store::Store::Generations planned_on;  // the generations of the configs and nodes used
};

namespace {

// Plans a submission on the given configs and nodes (taking its workflow id).
Result<submit::SubmitPlan> PlanSubmission(store::Store& store, Service::SnapshotCache& cache,
                                          const Caller& caller, const SubmitRequest& request,
                                          const submit::WorkflowSpec& spec,
                                          const Service::SnapshotCache::Keyed& state) {
  const Snapshot& snap = *state.snapshot;
  NodesPtr submit_nodes = cache.NodesForSubmit(state.snapshot, state.nodes);
  submit::SubmitOptions options;
  options.platform_nodes = [&cache, snapshot = state.snapshot, submit_nodes](
                               std::string_view pool, std::string_view platform,
                               const json& merged_template) {
    return cache.PlatformNodes(snapshot, submit_nodes, pool, platform, merged_template);
  };
  options.platform_setup = [&cache, snapshot = state.snapshot](const config::Pool& pool,
                                                               std::string_view platform) {
    return cache.PlatformSetup(snapshot, pool, platform);
  };
  QuotaConfigs quota_configs = DecodeQuotaConfigs(snap.other);
  for (auto& [name, node_pool] : quota_configs.node_pools) {
    options.node_pools.push_back(std::move(node_pool));
  }
  for (auto& [name, queue] : quota_configs.queues) options.queues.push_back(std::move(queue));
  if (request.dry_run) {
    options.workflow_id = spec.name;
  } else {
    // Check access before taking a sequence number, so a denied caller burns no id.
    Status access = config::CheckAccess(caller.roles, "POST",
                                        "/api/pool/" + request.pool + "/workflow", snap.set);
    if (access.ok()) {
      ASSIGN_OR_RETURN(int64_t seq, store.NextSequence("workflow"));
      options.workflow_id = spec.name + "-" + std::to_string(seq);
    }
  }
  return submit::Submit(snap.set, *submit_nodes, submit::SubmitCaller{caller.user, caller.roles},
                        request.pool, spec, options);
}

}  // namespace

Result<Service::PreparedSubmission> Service::PrepareSubmission(const Caller& caller,
                                                               const SubmitRequest& request,
                                                               bool fresh, bool* refused_on_cache) {
  ASSIGN_OR_RETURN(submit::WorkflowSpec spec,
                   submit::ParseWorkflow(request.spec_text, request.file_name, request.set_values));
  if (!request.node_pools.empty()) spec.node_pools = request.node_pools;  // --node-pools wins
  if (!request.queue.empty()) {                                           // --queue wins
    spec.queue = request.queue;
    spec.queue_origin = request.queue_origin;
  }
  // A dry run stores nothing that could check its inputs, so it reads the generations.
  bool cached = !fresh && !request.dry_run;
  ASSIGN_OR_RETURN(SnapshotCache::Keyed state,
                   cached ? cache_->LastKeyed(store_) : cache_->GetKeyed(store_));
  auto plan = PlanSubmission(store_, *cache_, caller, request, spec, state);
  if (!plan.ok()) {
    *refused_on_cache = cached;
    return plan.status();
  }
  PreparedSubmission prepared;
  prepared.planned_on = state.generations;
  SubmitResult& result = prepared.result;
  result.name = plan->name;
  result.pool = plan->pool;
  result.queue = plan->queue;
  result.warnings = plan->warnings;
  result.task_count = static_cast<int>(plan->tasks.size());
  if (request.dry_run) {
    for (auto& t : plan->tasks) result.pods.push_back(std::move(t.pod));
    result.status = "DRY_RUN";
    return prepared;
  }
  store::WorkflowRecord& record = prepared.record.emplace();
  record.id = plan->workflow_id;
  record.name = plan->name;
  record.pool = plan->pool;
  record.user = caller.user;
  record.status = "PENDING";
  record.submitted_ms = clock_.NowMillis();
  record.idempotency_key = request.idempotency_key;
  json tasks = json::array();
  for (const auto& t : plan->tasks) {
    tasks.push_back(json{{"group", t.group},
                         {"task", t.task},
                         {"platform", t.platform},
                         {"sim_duration_seconds", t.sim_duration_seconds},
                         {"sim_exit_code", t.sim_exit_code}});
  }
  // Assigned member by member: a braced initializer list would copy the document and the tasks.
  record.spec = json::object();
  record.spec["workflow"] = std::move(spec.document);
  record.spec["queue"] = plan->queue;
  record.spec["priority"] = std::string(submit::PriorityName(plan->priority));
  record.spec["exec_timeout_seconds"] = plan->exec_timeout_seconds;
  record.spec["queue_timeout_seconds"] = plan->queue_timeout_seconds;
  record.spec["tasks"] = std::move(tasks);
  for (auto& t : plan->tasks) {
    store::TaskRecord task;
    task.group = t.group;
    task.name = t.task;
    task.status = "PENDING";
    task.pod = std::move(t.pod);
    task.status_changed_ms = record.submitted_ms;
    record.tasks.push_back(std::move(task));
  }
  store::AuditRecord& audit = prepared.audit;
  audit.user = caller.user;
  audit.source = caller.source;
  audit.action = "workflow submit";
  audit.target = record.id;
  audit.detail = "pool " + plan->pool + ", queue " + plan->queue;
  return prepared;
}

namespace {

// The result of a stored submission: the stored workflow's id and status (with an idempotency
// key, those of the workflow stored earlier).
SubmitResult Submitted(SubmitResult result, const store::WorkflowRecord& stored) {
  result.workflow_id = stored.id;
  result.status = stored.status;
  return result;
}

}  // namespace

namespace {

// A submission is planned on the cached configs and nodes and its write checks that they are
// still current; when they changed, it is planned again on fresh ones, up to this many times in
// all (then the kAborted refusal reaches the client: 409, submit again).
constexpr int kMaxPlans = 4;

bool IsStalePlan(const Status& status) {
  return status.code() == StatusCode::kAborted && status.message() == store::Store::kStalePlan;
}

}  // namespace

Result<SubmitResult> Service::SubmitWorkflow(const Caller& caller, const SubmitRequest& request) {
  // The asynchronous submission, waited for: one path for the CLI's local mode and the server.
  std::promise<Result<SubmitResult>> outcome;
  SubmitWorkflowAsync(caller, request, [&outcome](Result<SubmitResult> result) {
    outcome.set_value(std::move(result));
  });
  return outcome.get_future().get();
}

void Service::SubmitWorkflowAsync(const Caller& caller, const SubmitRequest& request,
                                  SubmitDone done) {
  SubmitAttempt(caller, request, 1, std::move(done));
}

void Service::Replan(const Caller& caller, const SubmitRequest& request, int attempt,
                     SubmitDone done) {
  replanner_->worker.Push([this, caller, request, attempt, done = std::move(done)]() mutable {
    SubmitAttempt(caller, request, attempt + 1, std::move(done));
  });
}

void Service::SubmitAttempt(const Caller& caller, const SubmitRequest& request, int attempt,
                            SubmitDone done) {
  bool refused_on_cache = false;
  Result<PreparedSubmission> prepared =
      PrepareSubmission(caller, request, attempt > 1, &refused_on_cache);
  if (!prepared.ok() && refused_on_cache && attempt < kMaxPlans) {
    // A refusal on cached configs and nodes stands only if they are still the current ones:
    // planned again on fresh ones, on the replanner's thread (reading them would block the I/O
    // loop this runs on).
    return Replan(caller, request, attempt, std::move(done));
  }
  if (!prepared.ok()) return done(prepared.status());
  if (!prepared->record) return done(std::move(prepared->result));
  // The audit record is written in the workflow's transaction (group-committed with concurrent
  // submissions); the HTTP layer writes no second record for a successful submission.
  store_.CreateWorkflowWithAuditAsync(
      std::move(*prepared->record), std::move(prepared->audit), prepared->planned_on,
      [this, caller, request, attempt, result = std::move(prepared->result),
       done = std::move(done)](Result<store::WorkflowRecord> stored) mutable {
        // Rare (a config or node write landed meanwhile): planned again on the replanner's
        // thread, so that the commit thread goes on committing.
        if (!stored.ok() && IsStalePlan(stored.status()) && attempt < kMaxPlans) {
          return Replan(caller, request, attempt, std::move(done));
        }
        if (!stored.ok()) return done(stored.status());
        done(Submitted(std::move(result), *stored));
      });
}

namespace {

// Access to one workflow: one's own workflows need no configs; the HTTP layer may have checked
// the request already (Caller::access_checked_pool).
Status CheckWorkflowAccess(store::Store& store, Service::SnapshotCache& cache, const Caller& caller,
                           std::string_view method, const std::string& path,
                           const std::string& user, const std::string& pool) {
  if (user == caller.user) return OkStatus();
  if (caller.access_checked_pool && *caller.access_checked_pool == pool) return OkStatus();
  ASSIGN_OR_RETURN(SnapshotPtr snap, cache.Get(store));
  config::AccessRequest req{std::string(method), path, pool};
  Status s = config::CheckAccess(caller.roles, req, snap->set);
  if (!s.ok()) {
    return PermissionDeniedError("access denied: user " + Quoted(caller.user) + ": " + s.message());
  }
  return OkStatus();
}

}  // namespace

Result<WorkflowView> Service::QueryWorkflow(const Caller& caller, std::string_view id) {
  ASSIGN_OR_RETURN(auto wf, cache_->Workflow(store_, id));
  RETURN_IF_ERROR(CheckWorkflowAccess(store_, *cache_, caller, "GET",
                                      "/api/workflow/" + std::string(id), wf->user, wf->pool));
  return wf->view;
}

Result<std::string> Service::WorkflowPool(std::string_view id) {
  ASSIGN_OR_RETURN(auto wf, cache_->Workflow(store_, id));
  return wf->pool;
}

Result<std::shared_ptr<const std::string>> Service::QueryWorkflowJson(const Caller& caller,
                                                                      std::string_view id) {
  ASSIGN_OR_RETURN(auto wf, cache_->Workflow(store_, id));
  RETURN_IF_ERROR(CheckWorkflowAccess(store_, *cache_, caller, "GET",
                                      "/api/workflow/" + std::string(id), wf->user, wf->pool));
  return wf->json_text;
}

void Service::QueryWorkflowJsonAsync(const Caller& caller, const std::string& id, JsonDone done) {
  cache_->WorkflowAsync(
      store_, id,
      [this, caller, id, done = std::move(done)](Result<std::shared_ptr<const CachedWorkflow>> wf) {
        if (!wf.ok()) return done(wf.status());
        Status access = CheckWorkflowAccess(store_, *cache_, caller, "GET", "/api/workflow/" + id,
                                            (*wf)->user, (*wf)->pool);
        if (!access.ok()) return done(access);
        done((*wf)->json_text);
      });
}

Result<std::vector<WorkflowView>> Service::ListWorkflows(const Caller& caller,
                                                         const WorkflowFilter& filter) {
  store::WorkflowFilter f;
  f.pool = filter.pool;
  f.user = filter.user;
  f.status = filter.status;
  f.limit = filter.limit;
  ASSIGN_OR_RETURN(auto workflows, store_.ListWorkflows(f));
  ASSIGN_OR_RETURN(SnapshotPtr snap_ptr, cache_->Get(store_));
  const Snapshot& snap = *snap_ptr;
  std::vector<WorkflowView> out;
  for (const auto& wf : workflows) {
    if (wf.user != caller.user) {
      config::AccessRequest req{"GET", "/api/workflow/" + wf.id, wf.pool};
      if (!config::CheckAccess(caller.roles, req, snap.set).ok()) continue;
    }
    out.push_back(ToView(wf));
  }
  return out;
}

Result<Service::CachedInputs> Service::Inputs() {
  ASSIGN_OR_RETURN(auto state, cache_->GetWithNodes(store_));
  CachedInputs inputs;
  inputs.configs = &state.first->set;
  inputs.other = &state.first->other;
  inputs.owner = std::move(state.first);
  inputs.nodes = std::move(state.second);
  return inputs;
}

namespace {

// The pool's `action_permissions.cancel` (OSMO), for a caller who did not submit the workflow,
// on top of the roles (which must still allow the cancel): PRIVATE, only the submitter; POOL, a
// caller whose roles grant the pool; PUBLIC, anyone the roles let through. osmo-admin bypasses
// it, as in OSMO; a pool without it leaves the decision to the roles.
Status CheckCancelPermission(const config::ConfigSet& set, const Caller& caller,
                             const store::WorkflowRecord& wf) {
  const config::Pool* pool = set.FindPool(wf.pool);
  if (pool == nullptr || !pool->action_permissions.is_object() ||
      HasRole(caller, config::kAdminRole)) {
    return OkStatus();
  }
  const std::string permission = pool->action_permissions.value("cancel", "");
  const std::string refused = "access denied: user " + Quoted(caller.user) + ": pool " +
                              Quoted(wf.pool) + "'s action_permissions.cancel is " + permission;
  if (permission == "PRIVATE") {
    return PermissionDeniedError(refused + ": only the submitter (" + wf.user +
                                 ") may cancel workflow " + wf.id);
  }
  if (permission == "POOL" && !config::PoolAllowed(caller.roles, wf.pool, set)) {
    return PermissionDeniedError(refused + ": only users whose roles grant the pool may cancel");
  }
  return OkStatus();
}

}  // namespace

Result<WorkflowView> Service::CancelWorkflow(const Caller& caller, std::string_view id) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto wf = store_.GetWorkflow(id);
    if (!wf.ok()) {
      if (wf.status().code() == StatusCode::kNotFound) {
        return NotFoundError("workflow " + Quoted(id) + " does not exist");
      }
      return wf.status();
    }
    if (wf->user != caller.user) {
      ASSIGN_OR_RETURN(SnapshotPtr snap_ptr, cache_->Get(store_));
      const Snapshot& snap = *snap_ptr;
      RETURN_IF_ERROR(CheckCancelPermission(snap.set, caller, *wf));
      config::AccessRequest req{"POST", "/api/workflow/" + std::string(id) + "/cancel", wf->pool};
      Status s = config::CheckAccess(caller.roles, req, snap.set);
      if (!s.ok()) {
        return PermissionDeniedError("access denied: user " + Quoted(caller.user) + ": " +
                                     s.message());
      }
    }
    if (!IsUnfinishedStatus(wf->status)) {
      return FailedPreconditionError("Workflow " + std::string(id) + " is already finished (" +
                                     wf->status + ")");
    }
    int64_t now = clock_.NowMillis();
    store::WorkflowRecord updated = *wf;
    updated.status = "CANCELED";
    for (auto& t : updated.tasks) {
      if (t.status == "COMPLETED" || StartsWith(t.status, "FAILED") || t.status == "CANCELED") {
        continue;
      }
      t.status = "CANCELED";
      t.status_changed_ms = now;
      t.finished_ms = now;
      t.message = "canceled by " + caller.user;
    }
    Status s = store_.UpdateWorkflowWithAudit(updated, AuditOf(caller, "workflow cancel", id, ""));
    if (s.code() == StatusCode::kAborted) continue;  // changed underneath: re-read and retry
    RETURN_IF_ERROR(s);
    updated.version += 1;
    return ToView(updated);
  }
  return AbortedError("workflow " + Quoted(id) + " kept changing; cancel again");
}

// ---- JSON shapes --------------------------------------------------------------------------

json ToJson(const WriteResult& result) {
  json changes = json::array();
  for (const auto& c : result.changes) {
    changes.push_back(
        json{{"kind", c.kind}, {"name", c.name}, {"revision", c.revision}, {"action", c.action}});
  }
  return json{{"changes", changes}, {"warnings", result.warnings}};
}

json ToJson(const ApplyResult& result) {
  json out = ToJson(result.configs);
  out["nodes_imported"] = result.nodes_imported;
  return out;
}

json ToJson(const ConfigView& view) {
  return json{{"kind", view.kind},
              {"name", view.name},
              {"revision", view.revision},
              {"updated_by", view.updated_by},
              {"updated_at", FormatTimestamp(view.updated_at_ms)},
              {"body", view.body}};
}

json ToJson(const HistoryEntry& entry) {
  return json{{"kind", entry.kind},
              {"name", entry.name},
              {"revision", entry.revision},
              {"action", entry.action},
              {"author", entry.author},
              {"created_at", FormatTimestamp(entry.created_at_ms)},
              {"description", entry.description},
              {"body", entry.body}};
}

json ToJson(const NodeImportResult& result) {
  return json{{"imported", result.imported}, {"nodes", result.names}};
}

json ToJson(const PoolRow& row) {
  return json{{"name", row.name},
              {"description", row.description},
              {"status", row.status},
              {"backend", row.backend},
              {"platforms", row.platforms},
              {"gpu", json{{"quota_used", row.gpu_quota_used},
                           {"quota_limit", row.gpu_quota_limit},
                           {"total_used", row.gpu_used},
                           {"total_capacity", row.gpu_capacity}}}};
}

json ToJson(const ResourceRow& row) {
  auto q = [](int64_t milli) { return model::Quantity::FromMilli(milli).ToString(); };
  auto bytes = [](int64_t bytes) {
    return model::Quantity::FromUnits(bytes, model::QuantityFormat::kBinarySI).ToString();
  };
  return json{
      {"node", row.node},
      {"pool", row.pool},
      {"platform", row.platform},
      {"type", row.type},
      {"gpu_product", row.gpu_product},
      {"storage",
       json{{"used", bytes(row.storage_used)}, {"capacity", bytes(row.storage_capacity)}}},
      {"cpu", json{{"used", q(row.cpu_used)}, {"capacity", q(row.cpu_capacity)}}},
      {"memory", json{{"used", bytes(row.memory_used)}, {"capacity", bytes(row.memory_capacity)}}},
      {"gpu", json{{"used", row.gpu_used / 1000}, {"capacity", row.gpu_capacity / 1000}}},
      {"node_pool",
       row.node_pools.empty() ? std::string(model::kDefaultNodePool) : row.node_pools.front()},
      {"node_pools", row.node_pools},
      {"node_pool_conflict", row.node_pool_conflict}};
}

json ToJson(const SubmitResult& result) {
  json out = json::object();
  if (!result.workflow_id.empty()) out["workflow_id"] = result.workflow_id;
  out["name"] = result.name;
  out["pool"] = result.pool;
  out["queue"] = result.queue;
  out["status"] = result.status;
  out["warnings"] = result.warnings;
  out["tasks"] = result.task_count;
  // The rendered pods are what a dry run is for; a stored workflow's are in GET /api/workflow.
  if (result.workflow_id.empty()) out["pods"] = result.pods;
  return out;
}

json ToJson(const WorkflowView& view) {
  json tasks = json::array();
  for (const auto& t : view.tasks) {
    tasks.push_back(json{{"group", t.group},
                         {"name", t.name},
                         {"platform", t.platform},
                         {"status", t.status},
                         {"node", t.node},
                         {"exit_code", t.exit_code},
                         {"message", t.message}});
  }
  return json{{"id", view.id},
              {"name", view.name},
              {"pool", view.pool},
              {"queue", view.queue},
              {"user", view.user},
              {"status", view.status},
              {"submitted_at", FormatTimestamp(view.submitted_ms)},
              {"tasks", tasks}};
}

}  // namespace gpupool::service
