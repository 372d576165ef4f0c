#pragma once
// The REST API: one route per CLI verb (OSMO's routes where they exist, research/osmo.md §6).
// Each handler decodes its input, calls one service::Service function and encodes the result with
// the service's ToJson, so the CLI's `-o json` and the API return the same shapes.
//
//   GET    /healthz /readyz /metrics                    public
//   GET    /api/version
//   GET    /api/pool                                    {"pools": [PoolRow]}
//   GET    /api/pool_quota                              {"pools": [PoolRow]}
//   GET    /api/resources?pool=P&platform=X             {"resources": [ResourceRow]}
//   GET    /api/nodes                                   {"nodes": [Node]}
//   PUT    /api/nodes?replace_all=false                 body: NodeList/Node JSON|YAML or openb CSV
//   GET    /api/configs                                 {"configs": [ConfigView]}
//   GET    /api/configs/{kind}                          {"configs": [ConfigView]}
//   PUT    /api/configs/{kind}?description=&file=       body: map form {"<name>": {...}} or
//                                                       {"configs": {...}} (OSMO's bulk PUT)
//   GET    /api/configs/{kind}/{name}?revision=N        ConfigView
//   PUT    /api/configs/{kind}/{name}?description=&expected_revision=N&file=   (or If-Match: N)
//                                                       errors give the line and column of the
//                                                       field in the body, naming it `file` (the
//                                                       CLI's file name) or "request body"
//   DELETE /api/configs/{kind}/{name}?force=&description=
//   POST   /api/configs/role/{name}/pool                the generated pool role (config set ROLE)
//   GET    /api/configs/history?kind=&name=&limit=      {"history": [HistoryEntry]}
//   POST   /api/configs/history/rollback                {"kind"|"config_type", "name",
//                                                        "revision", "description"?}
//   POST   /api/apply?description=                      body: manifests (multi-document YAML,
//                                                       or JSON); or, with Content-Type
//                                                       application/json, the files they come
//                                                       from: {"files": [{"name": "pools.yaml",
//                                                       "text": "..."}]} (what the CLI sends),
//                                                       so that errors name the file and line.
//                                                       One transaction for all the configs.
//   POST   /api/pool/{pool}/workflow?dry_run=&set=k=v   body: workflow YAML, or OSMO's JSON
//                                                       {"file": "<yaml>", "set_variables":
//                                                       ["k=v"]}; header Idempotency-Key
//   GET    /api/workflow?pool=&user=&status=&limit=     {"workflows": [WorkflowView]}
//   GET    /api/workflow/{id}                           WorkflowView
//   POST   /api/workflow/{id}/cancel                    WorkflowView
//   POST   /api/schedule                                what-if over a scenario (DESIGN §7)
//   GET    /api/audit?limit=                            {"audit": [...]} (admin)
// Writes are 200 with the service's WriteResult JSON; errors use status_to_http.

#include <functional>
#include <memory>

#include "api/access_control.h"
#include "api/http_server.h"
#include "api/what_if.h"
#include "autoscaler/autoscaler.h"
#include "common/clock.h"
#include "metrics/metrics.h"
#include "service/service.h"
#include "store/store.h"

namespace gpupool::api {

struct ApiContext {
  service::Service* service = nullptr;
  store::Store* store = nullptr;
  AccessControl* access = nullptr;
  metrics::Registry* registry = nullptr;
  const Clock* clock = nullptr;
  // /readyz: OK when the server can serve (store reachable); the reason otherwise.
  std::function<Status()> ready;
  // Called before /metrics renders (the scheduling loop refreshes its gauges there).
  std::function<void()> before_metrics;
  // POST /api/schedule[?interrupt=NODE,...][&output=table] (api/what_if.h; empty: the route
  // answers 503).
  WhatIf what_if;
  // Machine pools' instance types (POST /api/nodes/{name}/interrupt); nullptr: the built-in ones.
  const autoscaler::Catalog* catalog = nullptr;
};

// Adds every route above to `router`.
void AddApiRoutes(Router& router, const ApiContext& ctx);

// The access checker and audit hook HttpServer needs, bound to the context.
AccessChecker MakeAccessChecker(const ApiContext& ctx);
AuditHook MakeAuditHook(const ApiContext& ctx);

}  // namespace gpupool::api
