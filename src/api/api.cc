#include "api/api.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "client/client.h"
#include "codec/json_reader.h"
#include "common/strings.h"
#include "controller/machine_pools.h"

namespace gpupool::api {

using Json = nlohmann::ordered_json;

namespace {

service::Caller CallerOf(const RouteRequest& request) {
  return {request.identity.user, request.identity.roles, request.source,
          request.access_checked_pool};
}

template <typename T>
Json JsonList(const std::vector<T>& items) {
  Json out = Json::array();
  for (const auto& item : items) out.push_back(service::ToJson(item));
  return out;
}

std::optional<std::string> FirstQuery(const RouteRequest& request,
                                      std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (auto value = request.Query(name); value && !value->empty()) return value;
  }
  return std::nullopt;
}

std::string Description(const RouteRequest& request, const std::string& fallback) {
  auto description = request.Query("description");
  return description && !description->empty() ? *description : fallback;
}

// The pool of a workflow, for access control on /api/workflow/{id}. A workflow never changes
// pool, so answers are cached (bounded: the cache is cleared when it grows past kMaxEntries).
class WorkflowPoolCache {
 public:
  explicit WorkflowPoolCache(service::Service& service) : service_(service) {}
  std::optional<std::string> Find(const std::string& id) {
    {
      std::lock_guard lock(mu_);
      auto it = pools_.find(id);
      if (it != pools_.end()) return it->second;
    }
    // Through the service's workflow cache: the handler's read that follows finds it there.
    auto pool = service_.WorkflowPool(id);
    if (!pool.ok()) return std::nullopt;  // the handler reports NotFound
    std::lock_guard lock(mu_);
    if (pools_.size() >= kMaxEntries) pools_.clear();
    pools_[id] = *pool;
    return *pool;
  }

 private:
  static constexpr size_t kMaxEntries = 100000;
  service::Service& service_;
  std::mutex mu_;
  std::unordered_map<std::string, std::string> pools_;
};

// Optimistic lock for PUT and PATCH /api/configs/{kind}/{name}: `expected_revision=N` or
// `If-Match: N` (0 = must not exist). The service passes it to the store, which checks it in the
// write's transaction: kAborted (409) when the current revision differs. The revision is the
// config's entity tag, so If-Match also takes it quoted (`"3"`, RFC 9110 §8.8.3); the other forms
// of the header are refused, not ignored: a weak tag (`W/"3"`) never matches under If-Match's
// strong comparison, `*` and lists of tags are not revisions.
Result<std::optional<int64_t>> ExpectedRevision(const RouteRequest& request) {
  std::string source = "expected_revision";
  std::optional<std::string> text = request.Query("expected_revision");
  if (!text) {
    std::string if_match = request.Header("If-Match");
    if (if_match.empty()) return std::optional<int64_t>();
    source = "If-Match";
    text = std::string(Trim(if_match));
  }
  auto refuse = [&](std::string_view why) {
    return InvalidArgumentError(source + " \"" + *text + "\": " + std::string(why));
  };
  std::string_view digits = *text;
  if (StartsWith(digits, "W/")) {
    return refuse(
        "a weak entity tag never matches (If-Match compares strongly); send the "
        "revision, e.g. \"3\"");
  }
  if (digits == "*" || digits.find(',') != std::string_view::npos) {
    return refuse("expected one revision, e.g. \"3\"");
  }
  if (digits.size() >= 2 && digits.front() == '"' && digits.back() == '"') {
    digits = digits.substr(1, digits.size() - 2);
  }
  int64_t expected = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), expected);
  if (error == std::errc::result_out_of_range) {
    return refuse("the revision is out of range (at most " +
                  std::to_string(std::numeric_limits<int64_t>::max()) + ")");
  }
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() ||
      digits.front() == '-' || digits.front() == '+') {
    return refuse("expected a revision, a whole number >= 0 (0: the config must not exist)");
  }
  return std::optional<int64_t>(expected);
}

// The name a config update's errors give the request body: the `file` query parameter (the
// CLI's file, so that remote errors read as offline ones), else "request body". It is only shown,
// so it must be printable text: at most 1024 bytes of UTF-8 without control characters.
Result<std::string> BodyFileName(const RouteRequest& request) {
  constexpr size_t kMaxLength = client::kMaxBodyFileName;
  std::optional<std::string> file = request.Query("file");
  if (!file || file->empty()) return std::string("request body");
  if (!IsPrintableLine(*file, kMaxLength)) {
    return InvalidArgumentError("file: expected a file name of printable characters (at most " +
                                std::to_string(kMaxLength) + " bytes)");
  }
  return std::move(*file);
}

// PUT /api/configs/{kind}[/{name}]: the body, its text (for the lines and columns of errors) and
// the file name errors give it. The bulk PUT (no name) also takes OSMO's {"configs": {...}}.
Result<service::UpdateConfigRequest> DecodeUpdate(const RouteRequest& request,
                                                  std::optional<std::string> name) {
  service::UpdateConfigRequest update;
  ASSIGN_OR_RETURN(update.kind, service::NormalizeKind(request.Param("kind")));
  ASSIGN_OR_RETURN(update.file_name, BodyFileName(request));
  auto body = DecodeBody(request);
  if (!body.ok()) {
    // Syntax errors name the file too: "pool.json:3:5: ..." rather than "request body:3:5: ...".
    constexpr std::string_view kBody = "request body:";
    const Status error = body.status();
    if (!StartsWith(error.message(), kBody)) return error;
    return Status(error.code(), update.file_name + error.message().substr(kBody.size() - 1));
  }
  update.body = std::move(*body);
  update.text = request.Body();
  if (!name && update.body.is_object() && update.body.size() == 1) {
    for (const char* key : {"configs", "configs_dict"}) {
      if (!update.body.contains(key)) continue;
      update.body = Json(update.body[key]);
      update.body_path = key;
      break;
    }
  }
  update.name = std::move(name);
  update.description = Description(request, "");
  if (update.name) {
    ASSIGN_OR_RETURN(update.expected_revision, ExpectedRevision(request));
  }
  return update;
}

// At most 255 printable ASCII characters (as Stripe's and the IETF draft's keys): the key is
// stored and compared byte for byte.
Status CheckIdempotencyKey(std::string_view key) {
  constexpr size_t kMaxLength = 255;
  if (key.size() > kMaxLength) {
    return InvalidArgumentError("Idempotency-Key: longer than " + std::to_string(kMaxLength) +
                                " characters");
  }
  for (char c : key) {
    if (c < 0x21 || c > 0x7E) {
      return InvalidArgumentError(
          "Idempotency-Key: expected printable ASCII characters without spaces");
    }
  }
  return OkStatus();
}

Result<service::SubmitRequest> DecodeSubmit(const RouteRequest& request) {
  service::SubmitRequest submit;
  submit.pool = request.Param("pool");
  submit.file_name = "request body";
  submit.idempotency_key = request.Header("Idempotency-Key");
  RETURN_IF_ERROR(CheckIdempotencyKey(submit.idempotency_key));
  ASSIGN_OR_RETURN(submit.dry_run, BoolQuery(request, "dry_run", false));
  std::vector<std::string> sets = request.QueryAll("set");
  submit.queue = request.Query("queue").value_or("");
  submit.queue_origin = std::string(service::kQueueParameterOrigin);
  std::string_view body = Trim(request.Body());
  if (body.empty()) return InvalidArgumentError("request body is empty: expected a workflow");
  std::string content_type = ToLower(request.Header("Content-Type"));
  if (body.front() == '{' && content_type.find("yaml") == std::string::npos) {
    // OSMO's JSON shape: {"file": "<workflow yaml>", "set_variables": ["k=v"]} (and gpupool's
    // "node_pools": ["a100-80", "default"] and "queue": "<project>", replacing the workflow's,
    // as does ?queue=); a JSON body
    // with a top-level "workflow" key is the workflow itself.
    ASSIGN_OR_RETURN(Json json, codec::ParseJson(request.Body(), "request body"));
    if (json.contains("workflow")) {
      submit.spec_text = request.Body();
    } else {
      ASSIGN_OR_RETURN(submit.spec_text, StringField(json, "file"));
      if (json.contains("set_variables")) {
        const Json& vars = json["set_variables"];
        if (!vars.is_array()) {
          return InvalidArgumentError("request body: field \"set_variables\": expected an array");
        }
        for (size_t i = 0; i < vars.size(); ++i) {
          if (!vars[i].is_string()) {
            return InvalidArgumentError("request body: field \"set_variables[" + std::to_string(i) +
                                        "]\": expected a string k=v");
          }
          sets.push_back(vars[i].get<std::string>());
        }
      }
      if (json.contains("queue")) {
        if (!json["queue"].is_string()) {
          return InvalidArgumentError(
              "request body: field \"queue\": expected a queue name (a project)");
        }
        const std::string queue = json["queue"].get<std::string>();
        if (!submit.queue.empty() && submit.queue != queue) {
          return InvalidArgumentError("request body: field \"queue\": \"" + queue +
                                      "\" differs from the query's queue \"" + submit.queue + "\"");
        }
        submit.queue = queue;
        submit.queue_origin = "request body: field \"queue\"";
      }
      if (json.contains("node_pools")) {
        const Json& pools = json["node_pools"];
        for (size_t i = 0; pools.is_array() && i < pools.size(); ++i) {
          if (!pools[i].is_string()) {
            return InvalidArgumentError("request body: field \"node_pools[" + std::to_string(i) +
                                        "]\": expected a node pool name");
          }
          submit.node_pools.push_back(pools[i].get<std::string>());
        }
        if (!pools.is_array()) {
          return InvalidArgumentError(
              "request body: field \"node_pools\": expected an array of node pool names");
        }
      }
    }
  } else {
    submit.spec_text = request.Body();
  }
  for (const std::string& set : sets) {
    size_t eq = set.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgumentError("set \"" + set + "\": expected key=value");
    }
    submit.set_values[set.substr(0, eq)] = set.substr(eq + 1);
  }
  return submit;
}

// The files of the envelope {"files": [{"name": "pools.yaml", "text": "..."}]}. A name is only
// shown (in errors, the revision note, the audit log), but must be one line for that.
Result<std::vector<service::ManifestFile>> EnvelopeFiles(const Json& envelope) {
  for (const auto& [key, value] : envelope.items()) {
    if (key != "files") return InvalidArgumentError("request body: " + key + ": unknown field");
  }
  const Json& files = envelope["files"];
  if (!files.is_array() || files.empty()) {
    return InvalidArgumentError("request body: files: expected a non-empty list of {name, text}");
  }
  std::vector<service::ManifestFile> out;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string at = "request body: files[" + std::to_string(i) + "]";
    const Json& file = files[i];
    if (!file.is_object() || file.size() != 2 || !file.contains("name") || !file.contains("text")) {
      return InvalidArgumentError(at + ": expected an object with exactly name and text");
    }
    if (!file["name"].is_string() || !file["text"].is_string()) {
      return InvalidArgumentError(at + ": name and text must be strings");
    }
    std::string name = file["name"].get<std::string>();
    if (name.empty() || std::any_of(name.begin(), name.end(),
                                    [](char c) { return static_cast<unsigned char>(c) < 0x20; })) {
      return InvalidArgumentError(at + ".name: expected a non-empty file name on one line");
    }
    out.push_back(service::ManifestFile{std::move(name), file["text"].get<std::string>()});
  }
  return out;
}

// POST /api/apply's body: manifest text (as curl sends a file), or the CLI's envelope of the
// user's files (Content-Type application/json, an object with "files" and no "kind", which no
// manifest is), so that errors name each file and its lines, not the request body.
Result<std::vector<service::ManifestFile>> DecodeApply(const RouteRequest& request) {
  std::vector<service::ManifestFile> plain = {{"request body", request.Body()}};
  const std::string_view body = Trim(request.Body());
  if (body.empty() || body.front() != '{' ||
      ToLower(request.Header("Content-Type")).find("json") == std::string::npos) {
    return plain;
  }
  ASSIGN_OR_RETURN(Json parsed, codec::ParseJson(request.Body(), "request body"));
  if (!parsed.contains("files") || parsed.contains("kind")) return plain;
  return EnvelopeFiles(parsed);
}

}  // namespace

AccessChecker MakeAccessChecker(const ApiContext& ctx) {
  AccessControl* access = ctx.access;
  return [access](const Identity& identity, const RouteRequest& request,
                  const std::optional<std::string>& pool) {
    return access->Check(identity, request.method, request.Target(), pool);
  };
}

AuditHook MakeAuditHook(const ApiContext& ctx) {
  store::Store* store = ctx.store;
  AccessControl* access = ctx.access;
  return [store, access](const RouteRequest& request, int status) {
    if (request.path.starts_with("/api/configs") || request.path == "/api/apply") {
      access->Invalidate();  // roles may have changed
    }
    store::AuditRecord record;
    record.user = request.identity.user;
    record.source = request.source;
    record.action = request.method + " " + request.pattern;
    record.target = request.path;
    record.detail = "HTTP " + std::to_string(status);
    (void)store->AppendAudit(record);  // a failed audit append must not fail the request
  };
}

namespace {

// Health and metrics (no authentication), and the caller's version view.
void AddHealthRoutes(Router& router, const ApiContext& ctx) {
  store::Store& store = *ctx.store;
  router.Add("GET", "/healthz",
             [](const RouteRequest&) -> Result<Reply> { return Reply::Text("ok\n", "text/plain"); },
             {.requires_auth = false});
  router.Add("GET", "/readyz",
             [ctx](const RouteRequest&) -> Result<Reply> {
               if (ctx.ready) RETURN_IF_ERROR(ctx.ready());
               return Reply::Text("ready\n", "text/plain");
             },
             {.requires_auth = false});
  router.Add("GET", "/metrics",
             [ctx](const RouteRequest&) -> Result<Reply> {
               if (ctx.before_metrics) ctx.before_metrics();
               return Reply::Text(ctx.registry->Render(), "text/plain; version=0.0.4");
             },
             {.requires_auth = false});
  router.Add("GET", "/api/version", [&store](const RouteRequest& r) -> Result<Reply> {
    return Reply::Json({{"version", "0.1.0"},
                        {"store", std::string(store.Backend())},
                        {"user", r.identity.user},
                        {"roles", r.identity.roles}});
  });
}

// Pools, resources and nodes.
void AddPoolAndNodeRoutes(Router& router, const ApiContext& ctx) {
  service::Service& svc = *ctx.service;
  store::Store& store = *ctx.store;
  auto list_pools = [&svc](const RouteRequest& r) -> Result<Reply> {
    ASSIGN_OR_RETURN(auto rows, svc.ListPools(CallerOf(r)));
    return Reply::Json({{"pools", JsonList(rows)}});
  };
  router.Add("GET", "/api/profile", [&svc](const RouteRequest& r) -> Result<Reply> {
    ASSIGN_OR_RETURN(auto profile, svc.Profile(CallerOf(r)));
    return Reply::Json(service::ToJson(profile));
  });
  router.Add("GET", "/api/pool", list_pools);
  router.Add("GET", "/api/pool_quota", list_pools);
  router.Add("GET", "/api/resources", [&svc](const RouteRequest& r) -> Result<Reply> {
    service::ResourceFilter filter;
    filter.pool = FirstQuery(r, {"pool", "pools"});
    filter.platform = FirstQuery(r, {"platform", "platforms"});
    // `selector` as /api/views/nodes takes it; `labelSelector` as Kubernetes' list calls do.
    filter.selector = FirstQuery(r, {"selector", "labelSelector"}).value_or("");
    ASSIGN_OR_RETURN(auto rows, svc.ListResources(CallerOf(r), filter));
    return Reply::Json({{"resources", JsonList(rows)}});
  });
  router.Add("GET", "/api/nodes", [&store](const RouteRequest&) -> Result<Reply> {
    ASSIGN_OR_RETURN(auto nodes, store.ListNodes());
    Json items = Json::array();
    for (auto& node : nodes) items.push_back(std::move(node.object));
    return Reply::Json({{"apiVersion", "v1"}, {"kind", "NodeList"}, {"items", std::move(items)}});
  });
  router.Add("PUT", "/api/nodes", [&svc](const RouteRequest& r) -> Result<Reply> {
    ASSIGN_OR_RETURN(bool replace_all, BoolQuery(r, "replace_all", false));
    if (Trim(r.Body()).empty())
      return InvalidArgumentError("request body is empty: expected nodes");
    ASSIGN_OR_RETURN(auto result,
                     svc.ImportNodes(CallerOf(r), r.Body(), "request body", replace_all));
    return Reply::Json(service::ToJson(result));
  });

  // The 2-minute spot interruption notice of a machine-pool node (the scheduling loop replaces
  // it, evicts its pods at the deadline and removes it).
  router.Add("POST", "/api/nodes/{name}/interrupt", [ctx](const RouteRequest& r) -> Result<Reply> {
    const autoscaler::Catalog& catalog =
        ctx.catalog ? *ctx.catalog : autoscaler::Catalog::Builtin();
    store::Actor actor{CallerOf(r).user, CallerOf(r).source};
    RETURN_IF_ERROR(controller::InterruptNode(*ctx.store, catalog, r.Param("name"),
                                              ctx.clock->NowMillis(), actor));
    return Reply::Json(
        {{"node", r.Param("name")}, {"noticeSeconds", autoscaler::kSpotInterruptionNoticeSeconds}});
  });
}

// Configs: the lists, the history and its rollback.
void AddConfigListRoutes(Router& router, service::Service& svc) {
  router.Add("GET", "/api/configs", [&svc](const RouteRequest&) -> Result<Reply> {
    ASSIGN_OR_RETURN(auto views, svc.ListConfigs(std::nullopt));
    return Reply::Json({{"configs", JsonList(views)}});
  });
  router.Add("GET", "/api/configs/history", [&svc](const RouteRequest& r) -> Result<Reply> {
    service::HistoryFilter filter;
    filter.kind = FirstQuery(r, {"kind", "config_type", "config_types"});
    filter.name = FirstQuery(r, {"name"});
    ASSIGN_OR_RETURN(auto limit, IntQuery(r, "limit"));
    if (!limit) {
      ASSIGN_OR_RETURN(limit, IntQuery(r, "count"));
    }
    if (limit) filter.limit = static_cast<int>(*limit);
    ASSIGN_OR_RETURN(auto entries, svc.History(filter));
    return Reply::Json({{"history", JsonList(entries)}});
  });
  router.Add("POST", "/api/configs/history/rollback",
             [&svc](const RouteRequest& r) -> Result<Reply> {
               ASSIGN_OR_RETURN(Json body, DecodeBody(r));
               if (!body.is_object())
                 return InvalidArgumentError("request body: expected an object");
               service::RollbackRequest request;
               std::optional<std::string> kind;
               if (body.contains("kind")) {
                 ASSIGN_OR_RETURN(kind, StringField(body, "kind"));
               } else {
                 ASSIGN_OR_RETURN(kind, StringField(body, "config_type"));
               }
               request.kind = *kind;
               ASSIGN_OR_RETURN(request.name, StringField(body, "name"));
               ASSIGN_OR_RETURN(request.revision, IntField(body, "revision"));
               ASSIGN_OR_RETURN(request.description, StringField(body, "description", ""));
               ASSIGN_OR_RETURN(auto result, svc.Rollback(CallerOf(r), request));
               return Reply::Json(service::ToJson(result));
             });
  router.Add("GET", "/api/configs/{kind}", [&svc](const RouteRequest& r) -> Result<Reply> {
    ASSIGN_OR_RETURN(std::string kind, service::NormalizeKind(r.Param("kind")));
    ASSIGN_OR_RETURN(auto views, svc.ListConfigs(kind));
    return Reply::Json({{"configs", JsonList(views)}});
  });
}

// Configs: writes of a kind (PUT), one config's read and writes (PUT, PATCH, DELETE), pool roles,
// and apply.
void AddConfigWriteRoutes(Router& router, service::Service& svc) {
  router.Add("PUT", "/api/configs/{kind}", [&svc](const RouteRequest& r) -> Result<Reply> {
    ASSIGN_OR_RETURN(auto request, DecodeUpdate(r, std::nullopt));
    ASSIGN_OR_RETURN(auto result, svc.UpdateConfig(CallerOf(r), request));
    return Reply::Json(service::ToJson(result));
  });
  router.Add("GET", "/api/configs/{kind}/{name}", [&svc](const RouteRequest& r) -> Result<Reply> {
    ASSIGN_OR_RETURN(std::string kind, service::NormalizeKind(r.Param("kind")));
    ASSIGN_OR_RETURN(auto revision, IntQuery(r, "revision"));
    ASSIGN_OR_RETURN(auto view, svc.ShowConfig(kind, r.Param("name"), revision));
    return Reply::Json(service::ToJson(view));
  });
  router.Add("PUT", "/api/configs/{kind}/{name}", [&svc](const RouteRequest& r) -> Result<Reply> {
    ASSIGN_OR_RETURN(auto request, DecodeUpdate(r, r.Param("name")));
    ASSIGN_OR_RETURN(auto result, svc.UpdateConfig(CallerOf(r), request));
    return Reply::Json(service::ToJson(result));
  });
  // JSON merge patch (RFC 7396), e.g. `{"description": "x", "enable_maintenance": true}`;
  // If-Match / expected_revision as for PUT.
  router.Add("PATCH", "/api/configs/{kind}/{name}", [&svc](const RouteRequest& r) -> Result<Reply> {
    service::PatchConfigRequest request;
    request.kind = r.Param("kind");
    request.name = r.Param("name");
    ASSIGN_OR_RETURN(request.patch, DecodeBody(r));
    ASSIGN_OR_RETURN(request.expected_revision, ExpectedRevision(r));
    request.description = Description(r, "");
    ASSIGN_OR_RETURN(auto result, svc.PatchConfig(CallerOf(r), request));
    return Reply::Json(service::ToJson(result));
  });
  router.Add("DELETE", "/api/configs/{kind}/{name}",
             [&svc](const RouteRequest& r) -> Result<Reply> {
               ASSIGN_OR_RETURN(std::string kind, service::NormalizeKind(r.Param("kind")));
               service::DeleteConfigRequest request;
               request.kind = kind;
               request.name = r.Param("name");
               ASSIGN_OR_RETURN(request.force, BoolQuery(r, "force", false));
               request.description = Description(r, "");
               ASSIGN_OR_RETURN(auto result, svc.DeleteConfig(CallerOf(r), request));
               return Reply::Json(service::ToJson(result));
             });
  router.Add("POST", "/api/configs/role/{name}/pool",
             [&svc](const RouteRequest& r) -> Result<Reply> {
               ASSIGN_OR_RETURN(auto result,
                                svc.SetPoolRole(CallerOf(r), r.Param("name"), Description(r, "")));
               return Reply::Json(service::ToJson(result));
             });
  router.Add("POST", "/api/apply", [&svc](const RouteRequest& r) -> Result<Reply> {
    service::ApplyRequest request;
    ASSIGN_OR_RETURN(request.files, DecodeApply(r));
    request.description = Description(r, "");
    ASSIGN_OR_RETURN(auto result, svc.Apply(CallerOf(r), request));
    return Reply::Json(service::ToJson(result));
  });
}

// Workflows: submission, lists, reads and cancel. A submission's audit record is written by the
// service in the workflow's transaction. The reply waits for the group commit without holding a
// worker. Its access to the pool is the service's to check (once, as for the offline CLI).
void AddWorkflowRoutes(Router& router, service::Service& svc) {
  auto pool_cache = std::make_shared<WorkflowPoolCache>(svc);
  RouteOptions workflow_scoped;
  workflow_scoped.resource_pool = [pool_cache](const RouteRequest& r) {
    return pool_cache->Find(r.Param("id"));
  };
  router.AddAsync(
      "POST", "/api/pool/{pool}/workflow",
      [&svc](const RouteRequest& r, const Respond& respond) {
        auto request = DecodeSubmit(r);
        if (!request.ok()) return respond(request.status());
        // `r` lives until `respond` is called.
        svc.SubmitWorkflowAsync(
            CallerOf(r), *request,
            [&r, respond, dry_run = request->dry_run](Result<service::SubmitResult> result) {
              if (!result.ok()) return respond(result.status());
              r.audited = !dry_run;
              respond(Reply::Json(service::ToJson(*result)));
            });
      },
      RouteOptions{.access_in_service = true});
  router.Add("GET", "/api/workflow", [&svc](const RouteRequest& r) -> Result<Reply> {
    service::WorkflowFilter filter;
    filter.pool = FirstQuery(r, {"pool", "pools"});
    filter.user = FirstQuery(r, {"user", "users"});
    filter.status = FirstQuery(r, {"status", "statuses"});
    ASSIGN_OR_RETURN(auto limit, IntQuery(r, "limit"));
    if (limit) filter.limit = static_cast<int>(*limit);
    ASSIGN_OR_RETURN(auto views, svc.ListWorkflows(CallerOf(r), filter));
    return Reply::Json({{"workflows", JsonList(views)}});
  });
  router.AddAsync(
      "GET", "/api/workflow/{id}",
      [&svc](const RouteRequest& r, const Respond& respond) {
        // Encoded once per workflow version by the service; sent as is. The version check is
        // batched with those of concurrent reads, and no thread waits for it.
        svc.QueryWorkflowJsonAsync(CallerOf(r), r.Param("id"),
                                   [respond](Result<std::shared_ptr<const std::string>> text) {
                                     if (!text.ok()) return respond(text.status());
                                     respond(Reply::Text(**text, "application/json"));
                                   });
      },
      workflow_scoped);
  router.Add(
      "POST", "/api/workflow/{id}/cancel",
      [&svc](const RouteRequest& r) -> Result<Reply> {
        ASSIGN_OR_RETURN(auto view, svc.CancelWorkflow(CallerOf(r), r.Param("id")));
        return Reply::Json(service::ToJson(view));
      },
      workflow_scoped);
}

// The what-if scheduler and the audit log.
void AddWhatIfAndAuditRoutes(Router& router, const ApiContext& ctx) {
  store::Store& store = *ctx.store;
  router.Add("POST", "/api/schedule", [ctx](const RouteRequest& r) -> Result<Reply> {
    if (!ctx.what_if) return UnavailableError("the what-if scheduler is not available");
    if (Trim(r.Body()).empty())
      return InvalidArgumentError("request body is empty: expected a scenario");
    std::vector<std::string> interrupts;
    if (auto nodes = FirstQuery(r, {"interrupt"})) {
      for (const std::string& node : Split(*nodes, ',')) {
        if (!Trim(node).empty()) interrupts.emplace_back(Trim(node));
      }
    }
    const std::string output = FirstQuery(r, {"output"}).value_or("json");
    if (output != "json" && output != "table") {
      return InvalidArgumentError("output \"" + output + "\": expected json or table");
    }
    ASSIGN_OR_RETURN(Json result, ctx.what_if(r.Body(), interrupts, output == "table"));
    return Reply::Json(std::move(result));
  });
  router.Add("GET", "/api/audit", [&store](const RouteRequest& r) -> Result<Reply> {
    ASSIGN_OR_RETURN(auto limit, IntQuery(r, "limit"));
    ASSIGN_OR_RETURN(auto records, store.ListAudit(limit ? static_cast<int>(*limit) : 100));
    Json items = Json::array();
    for (const auto& a : records) {
      items.push_back({{"at", FormatTimestamp(a.at_ms)},
                       {"user", a.user},
                       {"source", a.source},
                       {"action", a.action},
                       {"target", a.target},
                       {"detail", a.detail}});
    }
    return Reply::Json({{"audit", std::move(items)}});
  });
}

}  // namespace

void AddApiRoutes(Router& router, const ApiContext& ctx) {
  AddHealthRoutes(router, ctx);
  AddPoolAndNodeRoutes(router, ctx);
  AddConfigListRoutes(router, *ctx.service);
  AddConfigWriteRoutes(router, *ctx.service);
  AddWorkflowRoutes(router, *ctx.service);
  AddWhatIfAndAuditRoutes(router, ctx);
}

}  // namespace gpupool::api
