// ValidateAndWrite: the one path of every config write (config update, patch, set, rollback and
// apply): each put checked for access and decoded, the resulting configs validated together, then
// written in one transaction.

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codec/json_reader.h"
#include "common/strings.h"
#include "config/access.h"
#include "config/config_set.h"
#include "config/kinds.h"
#include "model/disruption_budget.h"
#include "model/machine_pool.h"
#include "model/node_pool.h"
#include "model/queue.h"
#include "model/quota_tree.h"
#include "service/quota_configs.h"
#include "service/service_internal.h"
#include "service/snapshot_cache.h"
#include "store/store.h"

namespace gpupool::service {
namespace {

using json = nlohmann::ordered_json;
using config::Kind;

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

// One put as the store's write, at the revision the snapshot holds (a caller's expected revision
// must be that one): checked for access and nesting depth, decoded into `next` (an OSMO kind)
// or by its kind's decoder.
Result<store::ConfigWrite> PutAsWrite(const Snapshot& snap, const MachinePoolSupport& machine_pools,
                                      const Caller& caller, const PendingPut& put,
                                      std::string_view action, std::string_view description,
                                      const std::string& prefix, config::ConfigSet& next) {
  RETURN_IF_ERROR(CheckConfigWriteAccess(caller, put.kind, put.name, "PUT", snap.set));
  // Bodies are walked recursively from here on (decoded, copied, stored, printed); the parsers
  // bound what they read, and this bounds what reaches the store by any other way.
  if (Status deep = codec::CheckNestingDepth(put.body); !deep.ok()) {
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
  return w;
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
    ASSIGN_OR_RETURN(store::ConfigWrite w, PutAsWrite(snap, machine_pools, caller, put, action,
                                                      description, prefix, next));
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

}  // namespace

Status CheckConfigWriteAccess(const Caller& caller, Kind kind, std::string_view name,
                              std::string_view method, const config::ConfigSet& set) {
  std::string path = "/api/configs/" + LowerKind(kind) + "/" + std::string(name);
  Status s = config::CheckAccess(caller.roles, method, path, set);
  if (s.ok()) return s;
  return PermissionDeniedError("access denied: user " + Quoted(caller.user) + " with roles " +
                               (caller.roles.empty() ? "(none)" : Join(caller.roles, ", ")) + ": " +
                               s.message());
}

DocumentSubject ConfigSubject(Kind kind, std::string name) {
  std::string words = LowerKind(kind);
  std::replace(words.begin(), words.end(), '_', ' ');
  return {words + " " + Quoted(name), std::move(name), "", !IsOsmoKind(kind)};
}

Result<WriteResult> ValidateAndWrite(store::Store& store, Service::SnapshotCache& cache,
                                     const MachinePoolSupport& machine_pools, const Caller& caller,
                                     const std::vector<PendingPut>& puts, std::string_view action,
                                     std::string_view description, std::string_view file_name,
                                     const store::Store::WriteAlso& also) {
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

}  // namespace gpupool::service
