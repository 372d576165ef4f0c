#pragma once
// The OSMO config kinds as typed values with strict JSON codecs (research/osmo.md §1, §2.1, §3.1,
// §4; DESIGN §2).
//
// Strictness (DESIGN §10-style improvements over OSMO, which ignores unknown keys):
//   * an unknown field is an InvalidArgument error naming the field path and a did-you-mean;
//   * a wrong JSON type names the field path and the expected type;
//   * names (pool, platform, pod template, validation set, role, backend) must match
//     kNameRegex = ^[a-zA-Z]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?$;
//   * timeouts are parsed (model::ParseDurationSeconds) and a default above its max is refused.
//
// Round trips: every decoded struct keeps the body it was read from in `raw`. ToJson starts from
// `raw` (so key order and untouched fields survive) and writes the typed fields over it; fields
// that were absent from the input and still hold their default are not added. A struct built in
// code (empty `raw`) prints every field that differs from its default, in documentation order.
//
// Bodies never carry their name: the name is the map key / the store key (OSMO: "the map key /
// URL name is authoritative"). A body may contain "name" (seed 000's single-object form); the
// decoders check it equals the given name and ToJson drops it unless `with_name` is true.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace gpupool::config {

using Json = nlohmann::ordered_json;

inline constexpr std::string_view kNameRegex = "^[a-zA-Z]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?$";

// OSMO's global default for every empty (inherited) pool timeout: 60 days.
inline constexpr int64_t kDefaultTimeoutSeconds = int64_t{60} * 24 * 3600;

// ---- Kinds --------------------------------------------------------------------------------

enum class Kind {
  kPool,
  kPodTemplate,
  kResourceValidation,
  kRole,
  kBackend,
  // Kinds whose bodies are decoded elsewhere (model/queue.h, model/node_pool.h, autoscaler);
  // listed so SplitConfigFile and the service can handle every config kind alike.
  kNodePool,
  kQueue,
  kMachinePool,
  // policy/v1 PodDisruptionBudget (model/disruption_budget.h): the body is the spec; its manifest
  // has apiVersion policy/v1, the others gpupool.io/v1.
  kPodDisruptionBudget,
};

// "POOL", "POD_TEMPLATE", "RESOURCE_VALIDATION", "ROLE", "BACKEND", "NODE_POOL", "QUEUE",
// "MACHINE_POOL", "POD_DISRUPTION_BUDGET".
std::string_view KindName(Kind kind);
// Manifest spelling: "Pool", "PodTemplate", "ResourceValidation", ...
std::string_view KindManifestName(Kind kind);
// Accepts the CLI spelling in any case (`POOL`, `pool`, `pod_template`, `pod-template`) and the
// manifest spelling (`PodTemplate`). Error lists the kinds with a did-you-mean.
Result<Kind> ParseKind(std::string_view text);
std::vector<Kind> AllKinds();

// OK when `name` matches kNameRegex; else `<what> name "<name>" is not valid: ...`.
Status ValidateName(std::string_view what, std::string_view name);

// ---- POOL ---------------------------------------------------------------------------------

// A duration field as written ("" = inherit) and its parsed value.
struct Timeout {
  std::string text;
  std::optional<int64_t> seconds;  // nullopt when text is empty

  bool empty() const { return text.empty(); }
  friend bool operator==(const Timeout&, const Timeout&) = default;
};

// "1,3-5" -> {1,1},{3,5}.
struct ExitCodeRange {
  int64_t first = 0;
  int64_t last = 0;
  friend bool operator==(const ExitCodeRange&, const ExitCodeRange&) = default;
};

// One entry of default_exit_actions, in map order: ACTION -> code ranges.
struct ExitAction {
  std::string action;  // COMPLETE | FAIL | RESCHEDULE (upper case; input is case-insensitive)
  std::string codes;   // as written, e.g. "1,3-5"
  std::vector<ExitCodeRange> ranges;
  friend bool operator==(const ExitAction&, const ExitAction&) = default;
};

// resources.gpu: -1 = unset.
struct GpuResource {
  int64_t guarantee = -1;
  int64_t maximum = -1;
  int64_t weight = 1;
  friend bool operator==(const GpuResource&, const GpuResource&) = default;
};

// topology_keys entries, coarsest to finest.
struct TopologyKey {
  std::string key;    // a short name used by workflows ("zone", "rack")
  std::string label;  // the node label ("topology.kubernetes.io/zone")
  friend bool operator==(const TopologyKey&, const TopologyKey&) = default;
};

struct Platform {
  std::string name;  // the key in the pool's `platforms` map
  std::string description;
  bool host_network_allowed = false;
  bool privileged_allowed = false;
  Json default_variables = Json::object();         // name -> scalar; overrides the pool's
  std::vector<std::string> resource_validations;   // appended after the pool's common ones
  std::vector<std::string> override_pod_template;  // merged after the pool's common ones
  std::vector<std::string> allowed_mounts;         // host paths tasks may mount
  // Node pools (NODE_POOL names or `default`) in preference order for the platform's tasks when
  // the workflow names none; empty: the pool's default_node_pools.
  std::vector<std::string> default_node_pools;
  Json raw = Json::object();
};

struct Pool {
  std::string name;
  std::string description;
  std::string backend;  // required; `default` or a BACKEND config's name (checked on write)
  std::optional<std::string> default_platform;
  bool enable_maintenance = false;
  std::optional<std::string> download_type;  // legacy; only "download"
  Timeout default_exec_timeout;
  Timeout default_queue_timeout;
  Timeout max_exec_timeout;
  Timeout max_queue_timeout;
  std::vector<ExitAction> default_exit_actions;
  // Legacy (removed upstream in 2026-02, replaced by role policies): {execute, portforward,
  // cancel, rsync} -> PUBLIC|POOL|PRIVATE. Accepted, validated and kept; nothing enforces it.
  Json action_permissions;         // null when absent
  std::optional<GpuResource> gpu;  // resources.gpu; nullopt = absent or null
  std::vector<TopologyKey> topology_keys;
  // Node pools (NODE_POOL names or `default`) in preference order for tasks whose workflow and
  // platform name none; empty: every node pool the platform's nodes are in. Seed 003's
  // `Default` is stored as `default`; names are checked against the NODE_POOLs on write.
  std::vector<std::string> default_node_pools;
  Json common_default_variables = Json::object();
  std::vector<std::string> common_resource_validations;
  std::vector<std::string> common_pod_template;
  std::vector<std::string> common_group_templates;
  // In the order written. Optional (seed 001): a pool without platforms has one implicit,
  // unnamed platform (name "", no override template, no rules of its own), so its tasks run on
  // the nodes its common templates select.
  std::vector<Platform> platforms;
  Json raw = Json::object();

  // The platform of that name; for a pool without platforms, "" names the implicit one.
  const Platform* FindPlatform(std::string_view platform) const;
  std::vector<std::string> PlatformNames() const;  // the written ones only
  // What tasks may be routed to: the written platforms' names, or {""} without any.
  std::vector<std::string> RouteNames() const;
};

// Decodes a pool body. `file_context` (e.g. "platform_config.json") prefixes error messages;
// field paths are relative to the pool (`platforms.a100_platform.override_pod_template[0]`).
// Checks: required backend, names, types, unknown fields, durations, default <= max timeouts
// (`default_exec_timeout 9h is above max_exec_timeout 8h`), exit-action syntax, gpu limits,
// default_platform among platforms (`Default platform X not in platforms`).
Result<Pool> PoolFromJson(std::string_view name, const Json& body);
Json PoolToJson(const Pool& pool, bool with_name = false);

// The effective timeout in seconds: the pool's value, else kDefaultTimeoutSeconds.
int64_t EffectiveSeconds(const Timeout& timeout);

// Parses "1,3-5" (regex ^(\d+(-\d+)?)+(,\d+(-\d+)?)*$; first <= last).
Result<std::vector<ExitCodeRange>> ParseExitCodes(std::string_view codes);
// The first exit action (in map order) whose ranges contain `exit_code`, or nullopt.
std::optional<std::string> MatchExitAction(const std::vector<ExitAction>& actions,
                                           int64_t exit_code);

// ---- POD_TEMPLATE -------------------------------------------------------------------------

// A partial Kubernetes Pod: any fields, kept verbatim. Top-level value must be an object.
struct PodTemplate {
  std::string name;
  Json body = Json::object();
};
Result<PodTemplate> PodTemplateFromJson(std::string_view name, const Json& body);
Json PodTemplateToJson(const PodTemplate& tmpl);

// ---- RESOURCE_VALIDATION ------------------------------------------------------------------

enum class Operator { kGt, kGe, kLt, kLe, kEq, kNe };
std::string_view OperatorName(Operator op);
Result<Operator> ParseOperator(std::string_view text);

struct ValidationRule {
  Operator op = Operator::kLe;
  std::string left_operand;
  std::string right_operand;
  std::string assert_message;
  friend bool operator==(const ValidationRule&, const ValidationRule&) = default;
};

struct ValidationSet {
  std::string name;
  std::vector<ValidationRule> rules;
};
// Body: a JSON array of rules; each rule has exactly operator, left_operand, right_operand,
// assert_message (strings; numbers are accepted for operands and kept as their text).
Result<ValidationSet> ValidationSetFromJson(std::string_view name, const Json& body);
Json ValidationSetToJson(const ValidationSet& set);
Json ValidationRuleToJson(const ValidationRule& rule);

// ---- ROLE ---------------------------------------------------------------------------------

// Legacy action {base:"http", path, method} or "http:<path>:<method>" (osmo.md §4.3).
struct LegacyAction {
  std::string base = "http";
  std::string path;    // glob; a leading '!' denies; "http:/api/..." is accepted as "/api/..."
  std::string method;  // lower case: * get post put patch delete websocket
  friend bool operator==(const LegacyAction&, const LegacyAction&) = default;
};

enum class Effect { kAllow, kDeny };

// A policy holds new-style actions ("workflow:Create", "*:*") on resources ("pool/team-*"),
// and/or legacy path/method actions (osmo.md §4.3 stored them inside policies too).
struct Policy {
  Effect effect = Effect::kAllow;
  std::vector<std::string> actions;          // ^(\*|[a-z]+):(\*|[A-Z][a-zA-Z]*)$ or "*"
  std::vector<LegacyAction> legacy_actions;  // in the order written
  std::vector<std::string> resources;        // empty: only global (unscoped) actions
};

struct Role {
  std::string name;
  std::string description;
  // Seed 000's top-level `actions` (legacy form), kept as one implicit policy.
  std::vector<LegacyAction> actions;
  std::vector<Policy> policies;
  bool immutable = false;
  std::string sync_mode;                                   // "" | import | force | ignore
  std::optional<std::vector<std::string>> external_roles;  // null = 1:1 by name
  Json raw = Json::object();
};
Result<Role> RoleFromJson(std::string_view name, const Json& body);
Json RoleToJson(const Role& role, bool with_name = false);

// `config set ROLE osmo-<prefix> pool` (osmo.md §4.2): name must start with "osmo-" and the
// prefix must be non-empty; grants workflow:* on pool/<prefix>* (every pool whose name starts
// with <prefix>), description "Generated Role for pool <prefix>".
Result<Role> GeneratePoolRole(std::string_view role_name);

// ---- BACKEND ------------------------------------------------------------------------------

struct SchedulerSettings {
  std::string scheduler_type = "kai";
  std::string scheduler_name = "kai-scheduler";
  int64_t scheduler_timeout = 30;
};

struct NodeConditions {
  Json rules = Json::object();  // typeRegex -> statusRegex; default {"Ready": "True"}
  std::string prefix = "osmo.nvidia.com/";
};

// How the server reaches a Slurm cluster when it runs `gpupool serve --backend config:NAME`:
// what `--backend slurm:URL` and the --slurm-* flags say (a flag given wins). The token itself
// never goes into a config: `jwt_file` names a file, or $SLURM_JWT holds it.
struct SlurmConnection {
  std::string url;  // "http://HOST:PORT" (slurmrestd with JWT) or "unix:PATH"
  std::string jwt_file;
  std::string user;        // "" = the server's OS user
  std::string partition;   // "" = each node's default
  std::string output_dir;  // "" = /tmp on the nodes
};

struct Backend {
  std::string name;
  std::string description;
  std::string version;
  std::string k8s_uid;
  std::string k8s_namespace;
  std::string dashboard_url;
  std::string grafana_url;
  std::string router_address;
  std::vector<std::string> tests;
  SchedulerSettings scheduler_settings;
  NodeConditions node_conditions;
  // Seed 003's administrator switches for the cluster (Run:ai "Settings > General"); the server
  // reads those of BACKEND `default` (scheduler/cluster_settings.h says what each changes).
  bool enable_node_pools = true;         // off: every node in the `default` node pool
  bool enable_cpu_quota = true;          // off: cpu and memory quotas ignored, GPUs alone counted
  bool enable_over_quota = true;         // off: no queue uses more than its deserved quota
  std::optional<SlurmConnection> slurm;  // the cluster is Slurm, reached so
  Json raw = Json::object();
};
// Runtime fields OSMO reports (last_heartbeat, created_date, online) are accepted and kept.
Result<Backend> BackendFromJson(std::string_view name, const Json& body);
Json BackendToJson(const Backend& backend, bool with_name = false);

// ---- File shapes --------------------------------------------------------------------------

struct NamedBody {
  std::string name;
  Json body;               // without a "name" key
  bool map_entry = false;  // an entry of the map form {"<name>": {...}}, not the file itself
};

// Splits a config file into named bodies (DESIGN §2). Rule, in order:
//   1. RESOURCE_VALIDATION: a top-level array is one set (its name must come from the CLI).
//   2. A top-level object with a string "name" key is the single form; the name comes from it
//      (and must equal `name_from_cli` when both are given).
//   3. A top-level object having any key that is a field of the kind (POOL: backend,
//      description, platforms, ...; POD_TEMPLATE: apiVersion, kind, metadata, spec, status;
//      ROLE: actions, policies, description, ...) is the single form; its name is
//      `name_from_cli` (required).
//   4. Otherwise the object is the map form {"<name>": <body>, ...}; every value must be an
//      object (an array for RESOURCE_VALIDATION). With `name_from_cli` the map must hold exactly
//      that one name (seed 000: `config update POD_TEMPLATE l40s --file l40s_pod_template.json`
//      where the file is {"l40s": {...}}).
// Names are checked against kNameRegex. Order of the file is kept. The bodies are moved out of
// `doc` (pass it with std::move when it is not needed after).
Result<std::vector<NamedBody>> SplitConfigFile(Kind kind, Json doc,
                                               std::optional<std::string> name_from_cli);

}  // namespace gpupool::config
