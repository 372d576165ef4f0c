#pragma once
// Role-based access control, deny by default (research/osmo.md §4, DESIGN §3.1).
//
// A request (method, path) is first normalised: query string stripped, percent-decoded once
// (`%2e%2e`, `%2F`), a '%' left after decoding (double encoding), a decoded '?' or '#', a
// backslash, NUL or control character is refused, `//` collapsed, `.` and `..` resolved (escaping
// the root is refused), trailing '/' removed. Matching only ever sees the normalised path, so
// `/api/pool/team-a/../other/workflow` is `/api/pool/other/workflow`; a normalised path
// normalises to itself.
//
// Each role the caller holds (plus `osmo-default`, which everyone has) is looked up in the
// ConfigSet; unknown names grant nothing. `osmo-admin` allows everything. Then:
//   * legacy actions {base:"http", path, method} (a role's top-level `actions` form one policy;
//     a policy's legacy actions another): shell-glob match of the path (fnmatch: `*` crosses '/',
//     case-sensitive), method `*` or equal (case-insensitive); within one policy a matching
//     `!path` denies and stops that policy; a policy ending allowed grants access;
//   * new-style policies: the request maps to (action, resource) by a route table (below);
//     actions match exactly, `*`, `*:*`, `type:*`, `*:Name`; resources match exactly, `*`,
//     `x/*` (prefix "x/"), trailing `*` string prefix (`pool/team*` matches `pool/team-gpu`);
//     a policy without resources matches only unscoped actions. Any matching Deny (in any
//     role) refuses; otherwise any matching Allow grants.
// Route table (new-style): POST /api/pool/<p>/workflow[/...] -> workflow:Create on pool/<p>;
// POST /api/queue/<q>/workflow (no route: what submitting to queue <q>, a project, is checked as)
// -> workflow:Create on queue/<q>;
// GET /api/pool, /api/pool_quota -> pool:List; GET /api/resources[/...] -> resources:Read;
// GET /api/configs[/...] -> config:Read on config/<kind>; PUT|PATCH /api/configs/<kind>...
// -> config:Update on config/<kind> (DELETE, POST: unregistered, as in OSMO); GET /api/workflow,
// /api/task, /api/tag -> workflow:List; /api/workflow/<id> GET -> workflow:Read, PUT|PATCH ->
// workflow:Update, DELETE -> workflow:Delete, POST .../cancel -> workflow:Cancel, .../exec ->
// workflow:Exec,
// .../portforward -> workflow:PortForward, .../rsync -> workflow:Rsync, all on
// pool/<workflow's pool> (AccessRequest::workflow_pool, else pool/*);
// /api/profile[/...] GET -> profile:Read, else profile:Update; /api/auth/login -> auth:Login,
// /api/auth/refresh -> auth:Refresh, /api/auth/... -> auth:Token; /healthz, /readyz, /metrics,
// /api/health -> system:Health; /api/version -> system:Version; GET /api/users -> user:List;
// the dashboard's GET /api/views/{overview,pools[/..],queues[/..]} -> pool:List,
// /api/views/{nodes,machine-pools} -> resources:Read, /api/views/workflows -> workflow:List,
// /api/views/workflows/<id> -> workflow:Read on pool/<workflow's pool>.
// Other routes map to no action: only `*` / `*:*` policies (admin) allow them.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "config/config_set.h"

namespace gpupool::config {

inline constexpr std::string_view kAdminRole = "osmo-admin";
inline constexpr std::string_view kDefaultRole = "osmo-default";
inline constexpr std::string_view kPoolRolePrefix = "osmo-";

// The normalised path, or InvalidArgument explaining why it is refused. Routing and access
// control both call it, so they always agree on a path.
Result<std::string> NormalizeRequestPath(std::string_view raw);
// A path's segments, empty ones skipped: "/a/b" -> {"a", "b"}; "/" -> {}. The views point into
// `path`. Routing splits its patterns and the normalised paths with it, as access control does.
std::vector<std::string_view> PathSegments(std::string_view path);
namespace internal {
// NormalizeRequestPath without its shortcut for paths that are already normal (for tests).
Result<std::string> NormalizeRequestPathFully(std::string_view raw);
}  // namespace internal

// (action, resource) of a request for the new-style policies; action "" = unregistered route.
struct ResolvedAction {
  std::string action;    // e.g. "workflow:Create"
  std::string resource;  // e.g. "pool/team-a"; "" = unscoped
};
ResolvedAction ResolveAction(std::string_view method, std::string_view normalized_path,
                             std::optional<std::string_view> workflow_pool = std::nullopt);

struct AccessRequest {
  std::string method;  // GET, POST, ... (any case)
  std::string path;    // raw request path, may include a query string
  // For /api/workflow/<id>... routes: the pool of that workflow (from the store).
  std::optional<std::string> workflow_pool;
};

// OK when allowed; PermissionDenied `POST /api/pool/other/workflow is not allowed for roles
// osmo-team, osmo-default` (the caller adds the user); InvalidArgument for a refused path.
Status CheckAccess(const std::vector<std::string>& roles, const AccessRequest& request,
                   const ConfigSet& set);
Status CheckAccess(const std::vector<std::string>& roles, std::string_view method,
                   std::string_view path, const ConfigSet& set);

// The one spelling of submitting a workflow, as the rules see it: to pool <p>,
// POST /api/pool/<p>/workflow (workflow:Create on pool/<p>); to queue <q> (a project),
// POST /api/queue/<q>/workflow (workflow:Create on queue/<q>), granted as a pool's is.
AccessRequest PoolSubmission(std::string_view pool);
AccessRequest QueueSubmission(std::string_view queue);

// The user may submit to `pool`: CheckAccess(PoolSubmission(pool)) allows it.
bool PoolAllowed(const std::vector<std::string>& roles, std::string_view pool,
                 const ConfigSet& set);
// The pools of `set` the roles may submit to, sorted.
std::vector<std::string> AllowedPools(const std::vector<std::string>& roles, const ConfigSet& set);

// Shell-glob match with fnmatch semantics without FNM_PATHNAME (`*` and `?` cross '/', `[...]`
// classes with `!`/`^` negation).
bool GlobMatch(std::string_view pattern, std::string_view text);

// Single-role checks, exposed for tests and `config show ROLE` explanations.
bool LegacyPolicyAllows(const std::vector<LegacyAction>& actions, std::string_view method,
                        std::string_view normalized_path);
bool ActionMatches(std::string_view pattern, std::string_view action);
bool ResourceMatches(std::string_view pattern, std::string_view resource);

}  // namespace gpupool::config
