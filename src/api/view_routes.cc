#include "api/view_routes.h"

#include <cstdio>

#include "codec/json_writer.h"
#include "common/strings.h"

namespace gpupool::api {
namespace {

service::Caller CallerOf(const RouteRequest& request) {
  return {request.identity.user, request.identity.roles, request.source,
          request.access_checked_pool};
}

std::optional<std::string> NonEmptyQuery(const RouteRequest& request, const char* name) {
  auto value = request.Query(name);
  if (!value || value->empty()) return std::nullopt;
  return value;
}

std::string Fnv1a(std::string_view text) {
  uint64_t hash = 1469598103934665603ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  char out[24];
  std::snprintf(out, sizeof(out), "\"%016llx\"", static_cast<unsigned long long>(hash));
  return out;
}

using View = std::function<Result<nlohmann::ordered_json>(const RouteRequest&)>;

RouteHandler Handler(View view) {
  return [view = std::move(view)](const RouteRequest& request) -> Result<Reply> {
    ASSIGN_OR_RETURN(auto json, view(request));
    return WithEtag(request, Reply::Json(std::move(json)));
  };
}

Result<int> LimitQuery(const RouteRequest& request, int default_limit) {
  ASSIGN_OR_RETURN(auto limit, IntQuery(request, "limit"));
  return limit ? static_cast<int>(std::clamp<int64_t>(*limit, -1, 1 << 20)) : default_limit;
}

}  // namespace

Reply WithEtag(const RouteRequest& request, Reply reply) {
  std::string body = reply.text.empty() ? codec::DumpCompact(reply.json) + "\n" : reply.text;
  const std::string etag = Fnv1a(body);
  reply.headers.emplace_back("ETag", etag);
  reply.headers.emplace_back("Cache-Control", "no-cache");
  for (const std::string& candidate : Split(request.Header("If-None-Match"), ',')) {
    if (Trim(candidate) == etag) {
      reply.status = 304;
      reply.json = nullptr;
      reply.text.clear();
      return reply;
    }
  }
  reply.text = std::move(body);
  reply.content_type = "application/json";
  return reply;
}

void AddViewRoutes(
    Router& router, service::Views& views,
    const std::function<std::optional<std::string>(const std::string& id)>& resource_pool) {
  service::Views* v = &views;
  router.Add("GET", "/api/views/overview",
             Handler([v](const RouteRequest& r) { return v->Overview(CallerOf(r)); }));
  router.Add("GET", "/api/views/pools",
             Handler([v](const RouteRequest& r) { return v->Pools(CallerOf(r)); }));
  router.Add("GET", "/api/views/pools/{name}",
             Handler([v](const RouteRequest& r) { return v->Pool(CallerOf(r), r.Param("name")); }));
  router.Add("GET", "/api/views/queues", Handler([v](const RouteRequest& r) {
               return v->Queues(CallerOf(r), r.Query("resource").value_or("gpu"));
             }));
  router.Add("GET", "/api/views/queues/{name}", Handler([v](const RouteRequest& r) {
               return v->Queue(CallerOf(r), r.Param("name"), r.Query("node_pool").value_or(""),
                               r.Query("resource").value_or("gpu"));
             }));
  router.Add("GET", "/api/views/workflows",
             Handler([v](const RouteRequest& r) -> Result<nlohmann::ordered_json> {
               service::WorkflowPageRequest request;
               request.pool = NonEmptyQuery(r, "pool");
               request.user = NonEmptyQuery(r, "user");
               request.status = NonEmptyQuery(r, "status");
               request.queue = NonEmptyQuery(r, "queue");
               ASSIGN_OR_RETURN(request.limit, LimitQuery(r, 50));
               request.continue_token = r.Query("continue").value_or("");
               return v->Workflows(CallerOf(r), request);
             }));
  RouteOptions workflow_scoped;
  workflow_scoped.resource_pool = [resource_pool](const RouteRequest& r) {
    return resource_pool(r.Param("id"));
  };
  router.Add("GET", "/api/views/workflows/{id}", Handler([v](const RouteRequest& r) {
               return v->Workflow(CallerOf(r), r.Param("id"));
             }),
             workflow_scoped);
  router.Add("GET", "/api/views/nodes",
             Handler([v](const RouteRequest& r) -> Result<nlohmann::ordered_json> {
               service::NodePageRequest request;
               request.selector = r.Query("selector").value_or("");
               request.pool = NonEmptyQuery(r, "pool");
               request.node_pool = NonEmptyQuery(r, "node_pool");
               ASSIGN_OR_RETURN(request.limit, LimitQuery(r, 100));
               request.continue_token = r.Query("continue").value_or("");
               return v->Nodes(CallerOf(r), request);
             }));
  router.Add("GET", "/api/views/machine-pools",
             Handler([v](const RouteRequest& r) { return v->MachinePools(CallerOf(r)); }));
}

}  // namespace gpupool::api
