#pragma once
// ConfigSet: every config of the OSMO kinds, decoded, as one value. Reference checks across
// kinds (DESIGN §3 improvements: references to missing templates/rules/platforms are refused at
// save time; templates in use cannot be deleted) and the built-in configs of a new store.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "config/kinds.h"

namespace gpupool::config {

// The backend every server has: the cluster it runs (simulated, Kubernetes or Slurm). A BACKEND
// config of this name may describe it (its switches, namespace); pools may name it without one.
inline constexpr std::string_view kDefaultBackend = "default";

struct ConfigSet {
  std::map<std::string, Pool> pools;
  std::map<std::string, PodTemplate> pod_templates;
  std::map<std::string, ValidationSet> validations;
  std::map<std::string, Role> roles;
  std::map<std::string, Backend> backends;

  const Pool* FindPool(std::string_view name) const;
  const PodTemplate* FindPodTemplate(std::string_view name) const;
  const ValidationSet* FindValidation(std::string_view name) const;
  const Role* FindRole(std::string_view name) const;
  const Backend* FindBackend(std::string_view name) const;
};

// Decodes `body` as `kind` and puts it into the set (replacing one of the same name).
// NODE_POOL / QUEUE / MACHINE_POOL are not held here: InvalidArgument.
Status PutConfig(ConfigSet& set, Kind kind, std::string_view name, const Json& body);
// Removes it; NotFound when absent.
Status RemoveConfig(ConfigSet& set, Kind kind, std::string_view name);
// The body as stored (ToJson of the typed value); NotFound when absent.
Result<Json> GetConfigBody(const ConfigSet& set, Kind kind, std::string_view name);
// Names of the configs of `kind`, sorted.
std::vector<std::string> ConfigNames(const ConfigSet& set, Kind kind);

// Every dangling reference, one Status each (InvalidArgument), in pool-name order:
//   Pool "p": default_platform "x" not in platforms (a100, l40s)      [also caught by decoding]
//   Pool "p": common_pod_template[1]: pod template "defualt_ctrl" does not exist (did you mean
//     "default_ctrl"?)
//   Pool "p": platforms.a100.override_pod_template[0]: pod template "a100" does not exist
//   Pool "p": common_resource_validations[3]: resource validation "x" does not exist
//   pool "p": backend: backend "gpu-cluster-1" does not exist (did you mean "gpu-cluster-01"?);
//     backends: default, gpu-cluster-01 (register it first: gpupool config update BACKEND ...)
// A pool's backend is `default` or a BACKEND config's name (OSMO registers a backend before pools
// target it; the seeds' gpu-cluster-01 and others are in examples/osmo/backends.json).
std::vector<Status> ValidateReferenceList(const ConfigSet& set);
// Every pool's and platform's default_node_pools names `default` or one of `node_pools` (the
// NODE_POOL configs' names); one InvalidArgument per other name, in pool-name order:
//   pool "p": platforms.a100.default_node_pools[0]: node pool "A100-8" does not exist (did you
//     mean "A100-80"?); node pools: A100-80, default
std::vector<Status> ValidateDefaultNodePools(const ConfigSet& set,
                                             std::vector<std::string> node_pools);
// All of the above joined into one InvalidArgument (lines separated by "\n"), or OK.
Status ValidateReferences(const ConfigSet& set);

// Which pools use a config (for refusing deletes). POD_TEMPLATE: pools naming it in
// common_pod_template or any platform's override_pod_template; RESOURCE_VALIDATION: in
// common_resource_validations or any platform's resource_validations; BACKEND: pools whose
// backend it is; NODE_POOL: pools naming it in default_node_pools (theirs or a platform's).
// Other kinds: empty. Sorted pool names.
std::vector<std::string> UsersOf(const ConfigSet& set, Kind kind, std::string_view name);

// FailedPrecondition `Pod template "x" is used by pools: a, b` when UsersOf is not empty, and
// `Role "osmo-admin" is immutable` for an immutable role.
Status CheckDeletable(const ConfigSet& set, Kind kind, std::string_view name);

// An update of an immutable role (osmo.md §4.1) may change its description only:
// FailedPrecondition `Role "osmo-admin" is immutable` when `new_body` differs otherwise (or makes
// it mutable). OK for other kinds and for names not in `set`.
Status CheckUpdatable(const ConfigSet& set, Kind kind, std::string_view name, const Json& new_body);

// The configs a new store starts with (osmo.md §2.1, §4.1):
//   pod templates default_user (the user container {{USER_CONTAINER_NAME}} with requests =
//     limits = USER_CPU / USER_MEMORY / USER_STORAGE and nvidia.com/gpu = USER_GPU) and
//     default_ctrl (the osmo-ctrl sidecar: requests 1 cpu/1Gi/1Gi, limits = USER_*);
//   validation sets default_cpu, default_memory, default_storage (static sanity rules and
//     USER_* <= K8_* node-capacity rules);
//   pool `default` (backend `default`, platform `default`, the default variables
//     USER_CPU 1, USER_GPU 0, USER_MEMORY 1Gi, USER_STORAGE 1Gi, the pod templates default_user
//     and, with `control_sidecar`, default_ctrl);
//   roles osmo-admin (everything), osmo-user, osmo-default.
struct BuiltinOptions {
  // Whether pool `default` carries the osmo-ctrl sidecar (default_ctrl). Not on Slurm: a task
  // runs there as its batch script and nothing beside it, so the sidecar's 1 CPU and 1 GiB
  // would be asked of Slurm for every job and never used.
  bool control_sidecar = true;
};
ConfigSet BuiltinConfigs(const BuiltinOptions& options = {});

}  // namespace gpupool::config
