#include "client/client.h"

#include <httplib.h>

#include <cctype>
#include <cstdlib>

#include "common/json_text.h"
#include "common/safe_text.h"
#include "common/strings.h"

namespace gpupool::client {

using Json = nlohmann::ordered_json;

std::string EncodePathSegment(std::string_view segment) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : segment) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

Status StatusFromHttp(int http_status, const std::string& body) {
  Json parsed = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  std::string message =
      parsed.is_object() && parsed.contains("message") && parsed["message"].is_string()
          ? parsed["message"].get<std::string>()
          : body;
  std::string code = parsed.is_object() ? parsed.value("code", "") : "";
  if (message.empty()) message = "HTTP " + std::to_string(http_status);
  switch (http_status) {
    case 400:
      return InvalidArgumentError(message);
    case 401:
      return UnauthenticatedError(message);
    case 403:
      return PermissionDeniedError(message);
    case 404:
      return NotFoundError(message);
    case 409:
      if (code == "FAILED_PRECONDITION") return FailedPreconditionError(message);
      if (code == "ALREADY_EXISTS") return AlreadyExistsError(message);
      return AbortedError(message);
    case 503:
      return UnavailableError(message);
    default:
      return InternalError("HTTP " + std::to_string(http_status) + ": " + message);
  }
}

namespace {
std::string WithoutTrailingSlash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}
}  // namespace

Client::Client(std::string base_url, std::string token)
    : base_url_(WithoutTrailingSlash(std::move(base_url))), token_(std::move(token)) {
  http_ = std::make_unique<httplib::Client>(base_url_);
  http_->set_connection_timeout(5);
  http_->set_read_timeout(60);
  http_->set_keep_alive(true);
}

Client::~Client() = default;

std::unique_ptr<Client> Client::FromEnvironment(std::string base_url) {
  const char* token = std::getenv("GPUPOOL_TOKEN");
  return std::make_unique<Client>(std::move(base_url), token ? token : "");
}

std::string Client::Query(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out;
  for (const auto& [key, value] : params) {
    if (value.empty()) continue;
    out += out.empty() ? "?" : "&";
    out += key + "=" + EncodePathSegment(value);
  }
  return out;
}

Result<Json> Client::Call(std::string_view method, const std::string& path, const std::string& body,
                          const std::string& content_type,
                          const std::map<std::string, std::string>& extra_headers) {
  httplib::Headers headers;
  if (!token_.empty()) headers.emplace("Authorization", "Bearer " + token_);
  for (const auto& [k, v] : extra_headers) headers.emplace(k, v);
  httplib::Result result(nullptr, httplib::Error::Unknown);
  try {
    if (method == "GET") {
      result = http_->Get(path, headers);
    } else if (method == "POST") {
      result = http_->Post(path, headers, body, content_type);
    } else if (method == "PUT") {
      result = http_->Put(path, headers, body, content_type);
    } else if (method == "DELETE") {
      result = http_->Delete(path, headers, body, content_type);
    } else {
      return InvalidArgumentError("unsupported method " + std::string(method));
    }
  } catch (const std::exception& e) {
    return UnavailableError("gpupool server " + base_url_ + ": " + e.what());
  }
  if (!result) {
    return UnavailableError("gpupool server " + base_url_ + ": " +
                            httplib::to_string(result.error()));
  }
  if (result->status < 200 || result->status >= 300) {
    return StatusFromHttp(result->status, result->body);
  }
  Json parsed = Json::parse(result->body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Json(result->body);  // text routes (/metrics, /healthz)
  return parsed;
}

namespace {
std::string Seg(const std::string& s) { return EncodePathSegment(s); }

// Text sent inside a JSON body must be UTF-8 (the server cannot point at a byte DumpJson has
// replaced): refused here, with where the bad byte is, as the server does for raw bodies.
Status CheckUtf8(std::string_view text, std::string_view what) {
  auto bad = FindInvalidUtf8(text);
  if (!bad) return OkStatus();
  return InvalidArgumentError(std::string(what) + ":" + std::to_string(bad->line) + ":" +
                              std::to_string(bad->column) + ": not valid UTF-8 (byte " +
                              bad->ByteText() + ")");
}
}  // namespace

Result<Json> Client::UpdateConfig(const std::string& kind, const std::optional<std::string>& name,
                                  const Json& body, const std::string& description,
                                  std::optional<int64_t> expected_revision) {
  return UpdateConfigFile(kind, name, DumpJson(body), "", description, expected_revision);
}

Result<Json> Client::UpdateConfigFile(const std::string& kind,
                                      const std::optional<std::string>& name,
                                      const std::string& text, const std::string& file_name,
                                      const std::string& description,
                                      std::optional<int64_t> expected_revision) {
  std::string path = "/api/configs/" + Seg(kind) + (name ? "/" + Seg(*name) : "");
  // A name the server would refuse to show is left out: errors then say "request body".
  const bool showable = IsPrintableLine(file_name, kMaxBodyFileName);
  path +=
      Query({{"file", showable ? file_name : ""},
             {"description", description},
             {"expected_revision", expected_revision ? std::to_string(*expected_revision) : ""}});
  return Call("PUT", path, text);
}

Result<Json> Client::SetPoolRole(const std::string& role_name, const std::string& description) {
  return Call("POST", "/api/configs/role/" + Seg(role_name) + "/pool" +
                          Query({{"description", description}}));
}

Result<Json> Client::ShowConfig(const std::string& kind, const std::string& name,
                                std::optional<int64_t> revision) {
  return Call("GET", "/api/configs/" + Seg(kind) + "/" + Seg(name) +
                         Query({{"revision", revision ? std::to_string(*revision) : ""}}));
}

Result<Json> Client::ListConfigs(const std::optional<std::string>& kind) {
  return Call("GET", kind ? "/api/configs/" + Seg(*kind) : "/api/configs");
}

Result<Json> Client::DeleteConfig(const std::string& kind, const std::string& name, bool force,
                                  const std::string& description) {
  return Call("DELETE", "/api/configs/" + Seg(kind) + "/" + Seg(name) +
                            Query({{"force", force ? "true" : ""}, {"description", description}}));
}

Result<Json> Client::History(const std::optional<std::string>& kind,
                             const std::optional<std::string>& name, int limit) {
  return Call("GET", "/api/configs/history" + Query({{"kind", kind.value_or("")},
                                                     {"name", name.value_or("")},
                                                     {"limit", std::to_string(limit)}}));
}

Result<Json> Client::Rollback(const std::string& kind, const std::string& name, int64_t revision,
                              const std::string& description) {
  RETURN_IF_ERROR(CheckUtf8(description, "description"));
  Json body = {{"kind", kind}, {"name", name}, {"revision", revision}};
  if (!description.empty()) body["description"] = description;
  return Call("POST", "/api/configs/history/rollback", DumpJson(body));
}

Result<Json> Client::Apply(const std::string& text, const std::string& description) {
  return Call("POST", "/api/apply" + Query({{"description", description}}), text,
              "application/yaml");
}

Result<Json> Client::Apply(const std::vector<service::ManifestFile>& files,
                           const std::string& description) {
  Json envelope = {{"files", Json::array()}};
  for (const auto& file : files) {
    RETURN_IF_ERROR(CheckUtf8(file.text, file.name));
    envelope["files"].push_back({{"name", file.name}, {"text", file.text}});
  }
  return Call("POST", "/api/apply" + Query({{"description", description}}), DumpJson(envelope),
              "application/json");
}

Result<Json> Client::ImportNodes(const std::string& text, bool replace_all) {
  return Call("PUT", "/api/nodes" + Query({{"replace_all", replace_all ? "true" : ""}}), text,
              "text/plain");
}

Result<Json> Client::ListPools() { return Call("GET", "/api/pool"); }

Result<Json> Client::Profile() { return Call("GET", "/api/profile"); }

Result<Json> Client::ListResources(const std::optional<std::string>& pool,
                                   const std::optional<std::string>& platform,
                                   const std::string& selector) {
  return Call("GET", "/api/resources" + Query({{"pool", pool.value_or("")},
                                               {"platform", platform.value_or("")},
                                               {"selector", selector}}));
}

Result<Json> Client::View(const std::string& view,
                          const std::map<std::string, std::string>& query) {
  std::vector<std::pair<std::string, std::string>> pairs(query.begin(), query.end());
  return Call("GET", "/api/views/" + view + Query(pairs));
}

Result<Json> Client::SubmitWorkflow(const std::string& pool, const std::string& spec_text,
                                    const std::map<std::string, std::string>& set_values,
                                    bool dry_run, const std::string& idempotency_key,
                                    const std::vector<std::string>& node_pools,
                                    const std::string& queue) {
  RETURN_IF_ERROR(CheckUtf8(spec_text, "workflow"));
  Json body = {{"file", spec_text}, {"set_variables", Json::array()}};
  for (const auto& [k, v] : set_values) body["set_variables"].push_back(k + "=" + v);
  if (!node_pools.empty()) body["node_pools"] = node_pools;
  std::map<std::string, std::string> headers;
  if (!idempotency_key.empty()) headers["Idempotency-Key"] = idempotency_key;
  return Call("POST",
              "/api/pool/" + Seg(pool) + "/workflow" +
                  Query({{"dry_run", dry_run ? "true" : ""}, {"queue", queue}}),
              DumpJson(body), "application/json", headers);
}

Result<Json> Client::QueryWorkflow(const std::string& id) {
  return Call("GET", "/api/workflow/" + Seg(id));
}

Result<Json> Client::TaskLog(const std::string& id, const std::string& task,
                             std::optional<int> retry, int64_t offset) {
  return Call("GET", "/api/workflow/" + Seg(id) + "/logs" +
                         Query({{"task", task},
                                {"retry", retry ? std::to_string(*retry) : ""},
                                {"offset", std::to_string(offset)}}));
}

Result<Json> Client::ListWorkflows(const std::optional<std::string>& pool,
                                   const std::optional<std::string>& user,
                                   const std::optional<std::string>& status, int limit) {
  return Call("GET", "/api/workflow" + Query({{"pool", pool.value_or("")},
                                              {"user", user.value_or("")},
                                              {"status", status.value_or("")},
                                              {"limit", std::to_string(limit)}}));
}

Result<Json> Client::CancelWorkflow(const std::string& id) {
  return Call("POST", "/api/workflow/" + Seg(id) + "/cancel");
}

Result<Json> Client::Schedule(const std::string& scenario_text) {
  return Call("POST", "/api/schedule", scenario_text, "application/yaml");
}

}  // namespace gpupool::client
