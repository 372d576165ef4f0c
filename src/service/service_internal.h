#pragma once
// What the files that implement Service share. The class is split by concern: service.cc (the
// object, its built-in configs and cached inputs, the JSON shapes), snapshot_cache.cc (its cache,
// snapshot_cache.h), validate_and_write.cc (the one path of config writes), config_writes.cc and
// config_reads.cc, manifests.cc (apply), node_writes.cc, pools_and_resources.cc (pool list,
// profile, resource list), submission.cc and workflows.cc (query, list, cancel). Internal to the
// service module.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/strings.h"
#include "config/kinds.h"
#include "service/located_errors.h"
#include "service/service.h"
#include "store/batch_worker.h"
#include "store/store.h"

namespace gpupool::service {

// ---- Small helpers (service.cc) -----------------------------------------------------------

std::string LowerKind(config::Kind kind);

bool IsOsmoKind(config::Kind kind);

std::string FilePrefix(std::string_view file_name);

Status WithPrefix(const Status& status, std::string_view prefix);

store::Actor ActorOf(const Caller& caller);

store::AuditRecord AuditOf(const Caller& caller, std::string_view action, std::string_view target,
                           std::string_view detail);

bool HasRole(const Caller& caller, std::string_view role);

std::string WorkflowIds(const std::vector<store::WorkflowRecord>& workflows);

// ---- Config writes (validate_and_write.cc) ------------------------------------------------

Status CheckConfigWriteAccess(const Caller& caller, config::Kind kind, std::string_view name,
                              std::string_view method, const config::ConfigSet& set);

// A batch of puts of one or more kinds, validated together and written atomically.
struct PendingPut {
  config::Kind kind;
  std::string name;
  nlohmann::ordered_json body;  // as given (without name)
  // The caller's optimistic lock (0 = must not exist); absent: the revision this update read.
  std::optional<int64_t> expected_revision = std::nullopt;
  // Rewords an error of this config's body to point at the field of the user's file it comes
  // from (apply; config update given the file's text); unset: the error is prefixed with the
  // file name.
  std::function<Status(const Status&)> locate = nullptr;
};

// A config of a config file as the OSMO kinds' decoders name it (`pool "p"`, `pod template "t"`,
// `resource validation "v"`), and the other kinds alike (`queue "q"`, `machine pool "m"`).
DocumentSubject ConfigSubject(config::Kind kind, std::string name);

// Writes the configs with their audit records and `also` (nodes, more records) in one
// transaction. A write that states no revision for any config (no If-Match) is last-writer-wins:
// a concurrent commit between its read and its write only means validating it again against
// the newer configs, a few times (each retry follows someone else's commit, so this ends).
// Only a write that states a revision is refused with kAborted (409) when another came first.
Result<WriteResult> ValidateAndWrite(store::Store& store, Service::SnapshotCache& cache,
                                     const MachinePoolSupport& machine_pools, const Caller& caller,
                                     const std::vector<PendingPut>& puts, std::string_view action,
                                     std::string_view description, std::string_view file_name,
                                     const store::Store::WriteAlso& also = {});

// ---- Nodes (node_writes.cc) ---------------------------------------------------------------

Status CheckNodeWriteAccess(const Caller& caller, const config::ConfigSet& set);

// ---- Workflows (workflows.cc) -------------------------------------------------------------

WorkflowView ToView(const store::WorkflowRecord& wf);

// ---- Submissions (submission.cc) ----------------------------------------------------------

struct Service::Replanner {
  store::BatchWorker<std::function<void()>> worker{16, [](auto& batch) {
                                                     for (auto& replan : batch) replan();
                                                   }};
};

}  // namespace gpupool::service
