#pragma once
// HTTP client of the gpupool server, for the CLI's `--server URL` (token from GPUPOOL_TOKEN).
// Every call returns the response JSON (the service's ToJson shapes, see api/api.h) or a
// Status rebuilt from the HTTP error: 400 kInvalidArgument, 401 kUnauthenticated, 403
// kPermissionDenied, 404 kNotFound, 409 kAborted/kFailedPrecondition/kAlreadyExists (the server's
// symbolic "code" is kept), 503 kUnavailable, anything else kInternal; the message is the
// server's. A connection failure is kUnavailable naming the URL.
//
// Thread contract: a Client may be used by one thread at a time.

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "service/service.h"

namespace httplib {
class Client;
}  // namespace httplib

namespace gpupool::client {

// Longest file name a config update may pass for its errors (the `file` query parameter).
inline constexpr size_t kMaxBodyFileName = 1024;

// Percent-encodes one path segment (RFC 3986 unreserved characters stay).
std::string EncodePathSegment(std::string_view segment);

class Client {
 public:
  // `base_url`: http://host:port (https:// works too). `token`: sent as "Bearer <token>" when
  // non-empty.
  Client(std::string base_url, std::string token);
  ~Client();

  // Reads GPUPOOL_TOKEN from the environment.
  static std::unique_ptr<Client> FromEnvironment(std::string base_url);

  // Generic call. `path` may include a query string (use Query() to build one); `body` is sent
  // with `content_type` when non-empty.
  Result<nlohmann::ordered_json> Call(std::string_view method, const std::string& path,
                                      const std::string& body = "",
                                      const std::string& content_type = "application/json",
                                      const std::map<std::string, std::string>& headers = {});

  // ---- One helper per CLI verb (same routes as api/api.h) ----
  Result<nlohmann::ordered_json> UpdateConfig(const std::string& kind,
                                              const std::optional<std::string>& name,
                                              const nlohmann::ordered_json& body,
                                              const std::string& description = "",
                                              std::optional<int64_t> expected_revision = {});
  // The same with the config file as the user wrote it (JSON), sent as is, and its name
  // (`file_name`, the `file` query parameter), so that the server's errors name the file and the
  // line and column of the field at fault, as offline.
  Result<nlohmann::ordered_json> UpdateConfigFile(const std::string& kind,
                                                  const std::optional<std::string>& name,
                                                  const std::string& text,
                                                  const std::string& file_name,
                                                  const std::string& description = "",
                                                  std::optional<int64_t> expected_revision = {});
  Result<nlohmann::ordered_json> SetPoolRole(const std::string& role_name,
                                             const std::string& description = "");
  Result<nlohmann::ordered_json> ShowConfig(const std::string& kind, const std::string& name,
                                            std::optional<int64_t> revision = {});
  Result<nlohmann::ordered_json> ListConfigs(const std::optional<std::string>& kind);
  Result<nlohmann::ordered_json> DeleteConfig(const std::string& kind, const std::string& name,
                                              bool force, const std::string& description = "");
  Result<nlohmann::ordered_json> History(const std::optional<std::string>& kind,
                                         const std::optional<std::string>& name, int limit);
  Result<nlohmann::ordered_json> Rollback(const std::string& kind, const std::string& name,
                                          int64_t revision, const std::string& description = "");
  // Manifests as text (multi-document YAML or JSON).
  Result<nlohmann::ordered_json> Apply(const std::string& text,
                                       const std::string& description = "");
  // Manifest files as the user wrote them, in one request (one transaction on the server), so
  // that errors name each file and its lines.
  Result<nlohmann::ordered_json> Apply(const std::vector<service::ManifestFile>& files,
                                       const std::string& description = "");
  Result<nlohmann::ordered_json> ImportNodes(const std::string& text, bool replace_all = false);
  Result<nlohmann::ordered_json> ListPools();
  Result<nlohmann::ordered_json> Profile();
  Result<nlohmann::ordered_json> ListResources(const std::optional<std::string>& pool,
                                               const std::optional<std::string>& platform,
                                               const std::string& selector = "");
  // GET /api/views/<view> with query parameters (the dashboard's read-only views).
  Result<nlohmann::ordered_json> View(const std::string& view,
                                      const std::map<std::string, std::string>& query = {});
  Result<nlohmann::ordered_json> SubmitWorkflow(
      const std::string& pool, const std::string& spec_text,
      const std::map<std::string, std::string>& set_values, bool dry_run,
      const std::string& idempotency_key = "", const std::vector<std::string>& node_pools = {},
      const std::string& queue = "");
  Result<nlohmann::ordered_json> QueryWorkflow(const std::string& id);
  Result<nlohmann::ordered_json> ListWorkflows(const std::optional<std::string>& pool,
                                               const std::optional<std::string>& user,
                                               const std::optional<std::string>& status, int limit);
  Result<nlohmann::ordered_json> CancelWorkflow(const std::string& id);
  // One chunk of a task's output (api/log_routes.h): `task` "" for a workflow of one task.
  Result<nlohmann::ordered_json> TaskLog(const std::string& id, const std::string& task,
                                         std::optional<int> retry, int64_t offset);
  Result<nlohmann::ordered_json> Schedule(const std::string& scenario_text);

  // "?a=1&b=x" from the non-empty values (percent-encoded).
  static std::string Query(const std::vector<std::pair<std::string, std::string>>& params);

 private:
  const std::string base_url_;
  const std::string token_;
  std::unique_ptr<httplib::Client> http_;
};

// The Status for an HTTP error response (status code and body).
Status StatusFromHttp(int http_status, const std::string& body);

}  // namespace gpupool::client
