#pragma once
// The dashboard's read-only views (service/views.h), one GET route each:
//   /api/views/overview
//   /api/views/pools                 /api/views/pools/{name}
//   /api/views/queues?resource=gpu   /api/views/queues/{name}?node_pool=&resource=
//   /api/views/workflows?pool=&user=&status=&queue=&limit=&continue=
//   /api/views/workflows/{id}
//   /api/views/nodes?selector=&pool=&node_pool=&limit=&continue=
//   /api/views/machine-pools
// Each answer carries a strong ETag of its body: a client polling with If-None-Match gets 304
// (no body) while nothing changed. Access: config/access.h maps each route to an action.

#include "api/http_server.h"
#include "service/views.h"

namespace gpupool::api {

// `resource_pool`: the pool of a workflow id, for access control on /api/views/workflows/{id}.
void AddViewRoutes(
    Router& router, service::Views& views,
    const std::function<std::optional<std::string>(const std::string& id)>& resource_pool);

// A strong ETag of `body` (FNV-1a 64, quoted) and the reply: 304 when If-None-Match has it.
Reply WithEtag(const RouteRequest& request, Reply reply);

}  // namespace gpupool::api
