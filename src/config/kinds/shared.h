#pragma once
// Pieces every OSMO config kind's decoder uses (config/kinds/*.cc): variables, the body's own
// name, timeouts. Internal to the config module.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "config/kinds.h"

namespace gpupool::config::internal {

// The fields of a POOL, BACKEND and ROLE body besides "name", one list per kind, beside its
// decoder. The decoder accepts these and "name" (unknown field otherwise); SplitConfigFile reads
// a file with one of them at its top level as one body rather than a map of named bodies.
std::span<const std::string_view> PoolFields();
std::span<const std::string_view> BackendFields();
std::span<const std::string_view> RoleFields();
// The fields SplitConfigFile tells a single body of `kind` by: the decoder's own list for every
// kind gpupool decodes (the three above, and src/model's NODE_POOL, QUEUE and MACHINE_POOL);
// the top-level fields of POD_TEMPLATE and PodDisruptionBudget (Kubernetes objects).
std::span<const std::string_view> BodyFields(Kind kind);

// [A-Za-z_][A-Za-z0-9_]*
bool IsVariableName(std::string_view name);
// obj[key], when present, as an object of scalar variables, into *out.
Status ReadVariables(const Json& obj, std::string_view key, std::string_view path, Json* out);
// `"name"` in a body must agree with the name it is stored under.
Status CheckBodyName(const Json& body, std::string_view name, std::string_view what);
// `body` without its "name", with `name` first when `with_name`.
Json WithName(const Json& body, std::string_view name, bool with_name);
Json StringList(const std::vector<std::string>& values);
// obj[key] as a duration ("30m", "8h", "2d", "PT2H"; empty = unset).
Status ReadTimeout(const Json& obj, std::string_view key, std::string_view path, Timeout* out);
// A default timeout must not exceed its maximum (the default maximum when unset).
Status CheckTimeoutPair(const Timeout& def, std::string_view def_name, const Timeout& max,
                        std::string_view max_name);

}  // namespace gpupool::config::internal
