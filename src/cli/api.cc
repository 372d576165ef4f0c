#include "cli/api.h"

#include <ctime>

#include "client/client.h"
#include "common/json_text.h"
#include "model/quantity.h"
#include "service/views.h"

namespace gpupool::cli {
namespace {

using json = nlohmann::ordered_json;

class Local final : public Api {
 public:
  Local(service::Service& svc, store::Store& store, const Clock& clock)
      : svc_(svc), store_(store), clock_(clock) {}
  Result<service::WriteResult> UpdateConfig(const service::Caller& c,
                                            const service::UpdateConfigRequest& r) override {
    return svc_.UpdateConfig(c, r);
  }
  Result<service::WriteResult> SetPoolRole(const service::Caller& c, std::string_view role,
                                           std::string_view d) override {
    return svc_.SetPoolRole(c, role, d);
  }
  Result<service::WriteResult> DeleteConfig(const service::Caller& c,
                                            const service::DeleteConfigRequest& r) override {
    return svc_.DeleteConfig(c, r);
  }
  Result<service::WriteResult> Rollback(const service::Caller& c,
                                        const service::RollbackRequest& r) override {
    return svc_.Rollback(c, r);
  }
  Result<service::ApplyResult> Apply(const service::Caller& c,
                                     const service::ApplyRequest& r) override {
    return svc_.Apply(c, r);
  }
  Result<service::ConfigView> ShowConfig(std::string_view kind, std::string_view name,
                                         std::optional<int64_t> revision) override {
    return svc_.ShowConfig(kind, name, revision);
  }
  Result<std::vector<service::ConfigView>> ListConfigs(
      std::optional<std::string_view> kind) override {
    return svc_.ListConfigs(kind);
  }
  Result<std::vector<service::HistoryEntry>> History(const service::HistoryFilter& f) override {
    return svc_.History(f);
  }
  Result<service::NodeImportResult> ImportNodes(const service::Caller& c, std::string_view text,
                                                std::string_view file, bool replace) override {
    return svc_.ImportNodes(c, text, file, replace);
  }
  Result<std::vector<service::PoolRow>> ListPools(const service::Caller& c) override {
    return svc_.ListPools(c);
  }
  Result<service::ProfileView> Profile(const service::Caller& c) override {
    return svc_.Profile(c);
  }
  Result<std::vector<service::ResourceRow>> ListResources(
      const service::Caller& c, const service::ResourceFilter& f) override {
    return svc_.ListResources(c, f);
  }
  Result<service::SubmitResult> SubmitWorkflow(const service::Caller& c,
                                               const service::SubmitRequest& r) override {
    return svc_.SubmitWorkflow(c, r);
  }
  Result<service::WorkflowView> QueryWorkflow(const service::Caller& c,
                                              std::string_view id) override {
    return svc_.QueryWorkflow(c, id);
  }
  Result<std::vector<service::WorkflowView>> ListWorkflows(
      const service::Caller& c, const service::WorkflowFilter& f) override {
    return svc_.ListWorkflows(c, f);
  }
  Result<service::WorkflowView> CancelWorkflow(const service::Caller& c,
                                               std::string_view id) override {
    return svc_.CancelWorkflow(c, id);
  }
  Result<json> View(const service::Caller& c, const std::string& view,
                    const std::map<std::string, std::string>& query) override {
    if (views_ == nullptr) {
      service::ViewOptions options;
      options.background_refresh = false;  // one answer, no refresher thread
      views_ = std::make_unique<service::Views>(svc_, store_, clock_, options);
    }
    if (view == "queues") {
      auto resource = query.find("resource");
      return views_->Queues(c, resource == query.end() ? "gpu" : resource->second);
    }
    if (view == "machine-pools") return views_->MachinePools(c);
    return NotFoundError("no view \"" + view + "\"");
  }

 private:
  service::Service& svc_;
  store::Store& store_;
  const Clock& clock_;
  std::unique_ptr<service::Views> views_;
};

// ---- The service's JSON shapes back into its types ----------------------------------------

std::string Str(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "";
  const json& v = j[key];
  return v.is_string() ? v.get<std::string>() : (v.is_null() ? "" : DumpJson(v));
}

int64_t Int(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return 0;
  return j[key].get<int64_t>();
}

// "2026-11-22T01:02:03Z" -> milliseconds.
int64_t Millis(const std::string& text) {
  std::tm tm{};
  if (strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr) return 0;
  return static_cast<int64_t>(timegm(&tm)) * 1000;
}

const json& Field(const json& j, const char* key) {
  static const json kNull;
  return j.is_object() && j.contains(key) ? j[key] : kNull;
}

int64_t QuantityMilli(const json& j, const char* outer, const char* inner) {
  auto q = model::Quantity::Parse(Str(Field(j, outer), inner));
  return q.ok() ? q->MilliValue() : 0;
}

// Whole units (bytes of memory and storage), as service::ResourceRow holds them.
int64_t QuantityUnits(const json& j, const char* outer, const char* inner) {
  auto q = model::Quantity::Parse(Str(Field(j, outer), inner));
  return q.ok() ? q->Value() : 0;
}

std::vector<std::string> Strings(const json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const auto& s : j) out.push_back(s.is_string() ? s.get<std::string>() : DumpJson(s));
  return out;
}

service::WriteResult WriteFromJson(const json& j) {
  service::WriteResult r;
  for (const auto& c : Field(j, "changes")) {
    r.changes.push_back(service::ConfigChange{Str(c, "kind"), Str(c, "name"), Int(c, "revision"),
                                              Str(c, "action")});
  }
  r.warnings = Strings(Field(j, "warnings"));
  return r;
}

service::ConfigView ConfigFromJson(const json& j) {
  return service::ConfigView{Str(j, "kind"),
                             Str(j, "name"),
                             Int(j, "revision"),
                             Str(j, "updated_by"),
                             Millis(Str(j, "updated_at")),
                             Field(j, "body")};
}

service::WorkflowView WorkflowFromJson(const json& j) {
  service::WorkflowView v;
  v.id = Str(j, "id");
  v.name = Str(j, "name");
  v.pool = Str(j, "pool");
  v.queue = Str(j, "queue");
  v.user = Str(j, "user");
  v.status = Str(j, "status");
  v.submitted_ms = Millis(Str(j, "submitted_at"));
  for (const auto& t : Field(j, "tasks")) {
    v.tasks.push_back(service::TaskView{Str(t, "group"), Str(t, "name"), Str(t, "platform"),
                                        Str(t, "status"), Str(t, "node"),
                                        static_cast<int>(Int(t, "exit_code")), Str(t, "message")});
  }
  return v;
}

template <typename T, typename F>
Result<std::vector<T>> ListFromJson(Result<json> response, const char* key, F convert) {
  if (!response.ok()) return response.status();
  std::vector<T> out;
  const json& items = response->is_array() ? *response : Field(*response, key);
  for (const auto& item : items) out.push_back(convert(item));
  return out;
}

// The server names the text it was sent "request body"; the user knows it as `file`, and the
// line and column numbers that follow are the file's (its text is sent as written).
Status NameTheFile(const Status& status, std::string_view file) {
  if (status.ok() || file.empty()) return status;
  static constexpr std::string_view kSent = "request body:";
  std::string message = status.message();
  for (size_t at = message.find(kSent); at != std::string::npos;
       at = message.find(kSent, at + file.size())) {
    message.replace(at, kSent.size() - 1, file);
  }
  return Status(status.code(), std::move(message));
}

// The client sends --queue as the query parameter `queue`; the user knows it as --queue.
Status NameTheFlags(const Status& status) {
  if (status.ok()) return status;
  std::string message = status.message();
  const std::string_view sent = service::kQueueParameterOrigin;
  for (size_t at = message.find(sent); at != std::string::npos; at = message.find(sent, at)) {
    message.replace(at, sent.size(), "--queue");
  }
  return Status(status.code(), std::move(message));
}

class Remote final : public Api {
 public:
  explicit Remote(std::unique_ptr<client::Client> client) : client_(std::move(client)) {}

  Result<service::WriteResult> UpdateConfig(const service::Caller&,
                                            const service::UpdateConfigRequest& r) override {
    // The file as written, so that the server's errors give its lines (as offline).
    auto response = r.text.empty() ? client_->UpdateConfig(r.kind, r.name, r.body, r.description,
                                                           r.expected_revision)
                                   : client_->UpdateConfigFile(r.kind, r.name, r.text, r.file_name,
                                                               r.description, r.expected_revision);
    if (!response.ok()) return response.status();
    return WriteFromJson(*response);
  }
  Result<service::WriteResult> SetPoolRole(const service::Caller&, std::string_view role,
                                           std::string_view d) override {
    ASSIGN_OR_RETURN(json j, client_->SetPoolRole(std::string(role), std::string(d)));
    return WriteFromJson(j);
  }
  Result<service::WriteResult> DeleteConfig(const service::Caller&,
                                            const service::DeleteConfigRequest& r) override {
    ASSIGN_OR_RETURN(json j, client_->DeleteConfig(r.kind, r.name, r.force, r.description));
    return WriteFromJson(j);
  }
  Result<service::WriteResult> Rollback(const service::Caller&,
                                        const service::RollbackRequest& r) override {
    ASSIGN_OR_RETURN(json j, client_->Rollback(r.kind, r.name, r.revision, r.description));
    return WriteFromJson(j);
  }
  Result<service::ApplyResult> Apply(const service::Caller&,
                                     const service::ApplyRequest& r) override {
    // All files in one request: one transaction on the server.
    ASSIGN_OR_RETURN(json j, client_->Apply(r.files, r.description));
    service::ApplyResult result;
    result.configs = WriteFromJson(j);
    result.nodes_imported = static_cast<int>(Int(j, "nodes_imported"));
    if (auto jobs = j.find("jobs"); jobs != j.end() && jobs->is_array()) {
      for (const json& job : *jobs) {
        result.jobs.push_back(service::AppliedJob{
            Str(job, "name"), Str(job, "workflow_id"), Str(job, "pool"), Str(job, "queue"),
            Str(job, "status"), static_cast<int>(Int(job, "tasks")),
            job.contains("unchanged") && job["unchanged"] == true});
      }
    }
    return result;
  }
  Result<service::ConfigView> ShowConfig(std::string_view kind, std::string_view name,
                                         std::optional<int64_t> revision) override {
    ASSIGN_OR_RETURN(json j, client_->ShowConfig(std::string(kind), std::string(name), revision));
    return ConfigFromJson(j);
  }
  Result<std::vector<service::ConfigView>> ListConfigs(
      std::optional<std::string_view> kind) override {
    std::optional<std::string> k;
    if (kind) k = std::string(*kind);
    return ListFromJson<service::ConfigView>(client_->ListConfigs(k), "configs", ConfigFromJson);
  }
  Result<std::vector<service::HistoryEntry>> History(const service::HistoryFilter& f) override {
    return ListFromJson<service::HistoryEntry>(
        client_->History(f.kind, f.name, f.limit), "history", [](const json& e) {
          return service::HistoryEntry{Str(e, "kind"),        Str(e, "name"),
                                       Int(e, "revision"),    Str(e, "action"),
                                       Str(e, "author"),      Millis(Str(e, "created_at")),
                                       Str(e, "description"), Field(e, "body")};
        });
  }
  Result<service::NodeImportResult> ImportNodes(const service::Caller&, std::string_view text,
                                                std::string_view file, bool replace) override {
    auto response = client_->ImportNodes(std::string(text), replace);
    if (!response.ok()) return NameTheFile(response.status(), file);
    const json& j = *response;
    return service::NodeImportResult{static_cast<int>(Int(j, "imported")),
                                     Strings(Field(j, "nodes"))};
  }
  Result<std::vector<service::PoolRow>> ListPools(const service::Caller&) override {
    return ListFromJson<service::PoolRow>(client_->ListPools(), "pools", [](const json& p) {
      service::PoolRow r;
      r.name = Str(p, "name");
      r.description = Str(p, "description");
      r.status = Str(p, "status");
      r.backend = Str(p, "backend");
      r.platforms = Strings(Field(p, "platforms"));
      const json& gpu = Field(p, "gpu");
      r.gpu_quota_used = Int(gpu, "quota_used");
      r.gpu_quota_limit = Int(gpu, "quota_limit");
      r.gpu_used = Int(gpu, "total_used");
      r.gpu_capacity = Int(gpu, "total_capacity");
      return r;
    });
  }
  Result<service::ProfileView> Profile(const service::Caller&) override {
    ASSIGN_OR_RETURN(json j, client_->Profile());
    service::ProfileView p;
    p.user = Str(j, "user");
    p.roles = Strings(Field(j, "roles"));
    p.pools = Strings(Field(j, "pools"));
    p.default_pool = Str(j, "default_pool");
    p.queues = Strings(Field(j, "queues"));
    return p;
  }
  Result<std::vector<service::ResourceRow>> ListResources(
      const service::Caller&, const service::ResourceFilter& f) override {
    return ListFromJson<service::ResourceRow>(
        client_->ListResources(f.pool, f.platform, f.selector), "resources", [](const json& j) {
          service::ResourceRow r;
          r.node = Str(j, "node");
          r.pool = Str(j, "pool");
          r.platform = Str(j, "platform");
          r.type = Str(j, "type");
          r.gpu_product = Str(j, "gpu_product");
          r.storage_used = QuantityUnits(j, "storage", "used");
          r.storage_capacity = QuantityUnits(j, "storage", "capacity");
          r.cpu_used = QuantityMilli(j, "cpu", "used");
          r.cpu_capacity = QuantityMilli(j, "cpu", "capacity");
          r.memory_used = QuantityUnits(j, "memory", "used");
          r.memory_capacity = QuantityUnits(j, "memory", "capacity");
          r.gpu_used = Int(Field(j, "gpu"), "used") * 1000;
          r.gpu_capacity = Int(Field(j, "gpu"), "capacity") * 1000;
          r.node_pools = Strings(Field(j, "node_pools"));
          r.node_pool_conflict = Str(j, "node_pool_conflict");
          return r;
        });
  }
  Result<service::SubmitResult> SubmitWorkflow(const service::Caller&,
                                               const service::SubmitRequest& r) override {
    auto response = client_->SubmitWorkflow(r.pool, r.spec_text, r.set_values, r.dry_run,
                                            r.idempotency_key, r.node_pools, r.queue);
    if (!response.ok()) return NameTheFlags(NameTheFile(response.status(), r.file_name));
    const json& j = *response;
    service::SubmitResult result;
    result.workflow_id = Str(j, "workflow_id");
    result.name = Str(j, "name");
    result.pool = Str(j, "pool");
    result.queue = Str(j, "queue");
    result.status = Str(j, "status");
    result.warnings = Strings(Field(j, "warnings"));
    result.task_count = static_cast<int>(Int(j, "tasks"));
    for (const auto& pod : Field(j, "pods")) result.pods.push_back(pod);
    return result;
  }
  Result<service::WorkflowView> QueryWorkflow(const service::Caller&,
                                              std::string_view id) override {
    ASSIGN_OR_RETURN(json j, client_->QueryWorkflow(std::string(id)));
    return WorkflowFromJson(j);
  }
  Result<std::vector<service::WorkflowView>> ListWorkflows(
      const service::Caller&, const service::WorkflowFilter& f) override {
    return ListFromJson<service::WorkflowView>(
        client_->ListWorkflows(f.pool, f.user, f.status, f.limit), "workflows", WorkflowFromJson);
  }
  Result<service::WorkflowView> CancelWorkflow(const service::Caller&,
                                               std::string_view id) override {
    ASSIGN_OR_RETURN(json j, client_->CancelWorkflow(std::string(id)));
    return WorkflowFromJson(j);
  }
  Result<json> View(const service::Caller&, const std::string& view,
                    const std::map<std::string, std::string>& query) override {
    return client_->View(view, query);
  }

 private:
  std::unique_ptr<client::Client> client_;
};

}  // namespace

std::unique_ptr<Api> LocalApi(service::Service& service, store::Store& store, const Clock& clock) {
  return std::make_unique<Local>(service, store, clock);
}

std::unique_ptr<Api> RemoteApi(std::unique_ptr<client::Client> client) {
  return std::make_unique<Remote>(std::move(client));
}

}  // namespace gpupool::cli
