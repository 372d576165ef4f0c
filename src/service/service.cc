#include "service/service.h"

#include <algorithm>
#include <memory>
#include <mutex>

#include "common/strings.h"
#include "config/config_set.h"
#include "config/kinds.h"
#include "model/node_pool.h"
#include "model/quantity.h"
#include "model/task_state.h"
#include "service/service_internal.h"
#include "service/snapshot_cache.h"
#include "store/store.h"

namespace gpupool::service {
namespace {

using json = nlohmann::ordered_json;
using config::Kind;

constexpr std::string_view kSystemUser = "system";

}  // namespace

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

bool HasRole(const Caller& caller, std::string_view role) {
  return std::find(caller.roles.begin(), caller.roles.end(), std::string(role)) !=
         caller.roles.end();
}

std::string WorkflowIds(const std::vector<store::WorkflowRecord>& workflows) {
  std::vector<std::string> ids;
  for (const auto& wf : workflows) ids.push_back(wf.id);
  return Join(ids, ", ");
}

Result<std::string> NormalizeKind(std::string_view kind) {
  ASSIGN_OR_RETURN(Kind k, config::ParseKind(kind));
  return std::string(config::KindName(k));
}

bool IsUnfinishedStatus(std::string_view status) { return !model::IsFinishedWorkflowText(status); }

// ---- Service ------------------------------------------------------------------------------

Service::Service(store::Store& store, const Clock& clock)
    : store_(store),
      clock_(clock),
      cache_(std::make_shared<SnapshotCache>()),
      replanner_(std::make_unique<Replanner>()) {}

Service::~Service() = default;

void Service::SetSubmittedListener(SubmittedListener listener) { submitted_ = std::move(listener); }

void Service::SetMachinePoolSupport(MachinePoolSupport support) {
  machine_pools_ = support;
  std::lock_guard<std::mutex> lock(cache_->mu);
  cache_->machine_pools = std::move(support);
  cache_->generation = -1;  // a snapshot read before has no scale-up nodes
  cache_->snapshot = nullptr;
}

Status Service::EnsureBuiltins() { return EnsureBuiltins(config::BuiltinOptions{}); }

Status Service::EnsureBuiltins(const config::BuiltinOptions& options) {
  ASSIGN_OR_RETURN(auto history, store_.History(std::nullopt, std::nullopt, 1));
  if (!history.empty()) return OkStatus();
  config::ConfigSet builtins = config::BuiltinConfigs(options);
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

Result<Service::CachedInputs> Service::Inputs() {
  ASSIGN_OR_RETURN(auto state, cache_->GetWithNodes(store_));
  CachedInputs inputs;
  inputs.configs = &state.first->set;
  inputs.other = &state.first->other;
  inputs.owner = std::move(state.first);
  inputs.nodes = std::move(state.second);
  return inputs;
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
  json jobs = json::array();
  for (const AppliedJob& job : result.jobs) {
    jobs.push_back(json{{"name", job.name},
                        {"workflow_id", job.workflow_id},
                        {"pool", job.pool},
                        {"queue", job.queue},
                        {"status", job.status},
                        {"tasks", job.task_count},
                        {"unchanged", job.unchanged}});
  }
  out["jobs"] = std::move(jobs);
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
