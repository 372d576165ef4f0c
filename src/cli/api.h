#pragma once
// What the CLI's commands call: the service functions directly on a store (offline), or the
// same functions over HTTP on a gpupool server (`--server URL`, token from GPUPOOL_TOKEN). Both
// return the service's typed results, so every command prints the same way in both modes.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "service/service.h"

namespace gpupool::client {
class Client;
}  // namespace gpupool::client

namespace gpupool::cli {

class Api {
 public:
  virtual ~Api() = default;
  virtual Result<service::WriteResult> UpdateConfig(const service::Caller& caller,
                                                    const service::UpdateConfigRequest& req) = 0;
  virtual Result<service::WriteResult> SetPoolRole(const service::Caller& caller,
                                                   std::string_view role,
                                                   std::string_view description) = 0;
  virtual Result<service::WriteResult> DeleteConfig(const service::Caller& caller,
                                                    const service::DeleteConfigRequest& req) = 0;
  virtual Result<service::WriteResult> Rollback(const service::Caller& caller,
                                                const service::RollbackRequest& req) = 0;
  virtual Result<service::ApplyResult> Apply(const service::Caller& caller,
                                             const service::ApplyRequest& req) = 0;
  virtual Result<service::ConfigView> ShowConfig(std::string_view kind, std::string_view name,
                                                 std::optional<int64_t> revision) = 0;
  virtual Result<std::vector<service::ConfigView>> ListConfigs(
      std::optional<std::string_view> kind) = 0;
  virtual Result<std::vector<service::HistoryEntry>> History(
      const service::HistoryFilter& filter) = 0;
  virtual Result<service::NodeImportResult> ImportNodes(const service::Caller& caller,
                                                        std::string_view text,
                                                        std::string_view file_name,
                                                        bool replace_all) = 0;
  virtual Result<std::vector<service::PoolRow>> ListPools(const service::Caller& caller) = 0;
  virtual Result<service::ProfileView> Profile(const service::Caller& caller) = 0;
  virtual Result<std::vector<service::ResourceRow>> ListResources(
      const service::Caller& caller, const service::ResourceFilter& filter) = 0;
  virtual Result<service::SubmitResult> SubmitWorkflow(const service::Caller& caller,
                                                       const service::SubmitRequest& req) = 0;
  virtual Result<service::WorkflowView> QueryWorkflow(const service::Caller& caller,
                                                      std::string_view id) = 0;
  virtual Result<std::vector<service::WorkflowView>> ListWorkflows(
      const service::Caller& caller, const service::WorkflowFilter& filter) = 0;
  virtual Result<service::WorkflowView> CancelWorkflow(const service::Caller& caller,
                                                       std::string_view id) = 0;
  // A read-only view of service/views.h by its route's name ("queues", "machine-pools"), with
  // the route's query parameters.
  virtual Result<nlohmann::ordered_json> View(const service::Caller& caller,
                                              const std::string& view,
                                              const std::map<std::string, std::string>& query) = 0;
};

// Offline: forwards to the Service (which, with the store and clock, must outlive the Api). Views
// are computed from the store alone (no scheduling loop: no fair shares).
std::unique_ptr<Api> LocalApi(service::Service& service, store::Store& store, const Clock& clock);
// Online: the server's HTTP API. The caller's identity comes from the token, not --user.
std::unique_ptr<Api> RemoteApi(std::unique_ptr<client::Client> client);

}  // namespace gpupool::cli
