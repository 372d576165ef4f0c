#include "submit/submit.h"
// Over ~800 lines, knowingly for now: Submit (~340 lines) runs the pipeline's numbered steps
// (submit.h) over shared per-platform state; it is to become a Submission class with one
// method per step (issue 16), which is the split this file waits for.

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "common/strings.h"
#include "config/access.h"
#include "config/membership.h"
#include "config/merge.h"
#include "config/rules.h"
#include "config/variables.h"
#include "model/duration.h"

namespace gpupool::submit {
namespace {

using json = nlohmann::ordered_json;

// Stand-ins for the per-task values while a pod skeleton is built once per (platform,
// resource, task shape); replaced in every string of the copy made for each task.
constexpr std::string_view kTaskSentinel = "\x01T\x01";
constexpr std::string_view kGroupSentinel = "\x01G\x01";
constexpr std::string_view kContainerSentinel = "\x01C\x01";
constexpr std::string_view kImageSentinel = "\x01I\x01";

struct Skeleton {
  nlohmann::ordered_json pod;
  model::ResourceList requests;
};

// What the pipeline needs of one platform, computed once per submission.
struct PlatformContext {
  const config::Platform* platform = nullptr;
  std::string name;
  std::string label;       // LabelValue(name)
  PlatformSetupPtr setup;  // never null
  std::vector<std::string> template_names;
  bool has_node_rules = false;
  bool cacheable = true;                  // rules do not depend on per-task built-ins
  SubmitOptions::NodeList nodes;          // loaded when first needed
  std::optional<std::string> node_pools;  // the gpupool.io/node-pool value; computed once
  std::map<std::string, bool> validated;  // resource name -> passed
  // (resource, task shape) -> the pod merged once with sentinel task values, built after the
  // first task of that key; nullopt when it could not be built (that key takes the full path).
  std::map<std::string, std::optional<Skeleton>> skeletons;
  std::set<std::string> seen_keys;  // keys whose first task took the full path
};

// The node pools `nodes` are in (model::NodePoolOf): named node pools by name, then `default`.
std::string NodePoolsOfNodes(const std::vector<const model::Node*>& nodes,
                             const std::vector<model::NodePool>& node_pools) {
  std::set<std::string> named;
  bool in_default = false;
  for (const model::Node* node : nodes) {
    std::string_view pool = model::NodePoolOf(*node, node_pools);
    if (pool == model::kDefaultNodePool) {
      in_default = true;
    } else {
      named.emplace(pool);
    }
  }
  std::vector<std::string> out(named.begin(), named.end());
  if (in_default) out.emplace_back(model::kDefaultNodePool);
  return Join(out, ",");
}

// Node pools named by `field` (the workflow's, or a pool's or platform's defaults), each one a
// NODE_POOL config or `default`, as the label's comma list.
Result<std::string> CheckedNodePools(const std::vector<std::string>& names, std::string_view field,
                                     const std::vector<model::NodePool>& node_pools) {
  std::vector<std::string> known = {std::string(model::kDefaultNodePool)};
  for (const model::NodePool& p : node_pools) known.push_back(p.name);
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    std::sort(known.begin(), known.end());
    return InvalidArgumentError(std::string(field) + "[" + std::to_string(i) + "]: node pool \"" +
                                name + "\" does not exist" + DidYouMean(name, known) +
                                "; node pools: " + Join(known, ", "));
  }
  return Join(names, ",");
}

std::string JoinRoles(const std::vector<std::string>& roles) {
  return roles.empty() ? std::string("(none)") : Join(roles, ", ");
}

// The access path of submitting to a queue: a role grants it as it grants a pool's
// (`/api/pool/<pool>/workflow`), by a legacy path glob or by workflow:Create on queue/<name>.
std::string QueueAccessPath(std::string_view queue) {
  return "/api/queue/" + std::string(queue) + "/workflow";
}

}  // namespace

std::vector<std::string> SubmittableQueues(const config::ConfigSet& configs,
                                           const std::vector<std::string>& roles,
                                           const std::vector<model::Queue>& queues) {
  std::set<std::string> parents;
  for (const model::Queue& q : queues) parents.insert(q.parent);
  std::vector<std::string> allowed;
  for (const model::Queue& q : queues) {
    if (parents.contains(q.name)) continue;
    if (config::CheckAccess(roles, "POST", QueueAccessPath(q.name), configs).ok()) {
      allowed.push_back(q.name);
    }
  }
  std::sort(allowed.begin(), allowed.end());
  return allowed;
}

namespace {

// The queue the workflow's quota is counted in: its pool's implicit queue (named as the pool)
// unless it names a QUEUE config, which must hold pods (a project, or a top-level queue without
// projects: Run:ai submits to projects) and be allowed by the caller's roles (deny by default).
Result<std::string> ChosenQueue(const config::ConfigSet& configs, const SubmitCaller& caller,
                                const std::string& pool, const WorkflowSpec& workflow,
                                const std::vector<model::Queue>& queues) {
  const std::string& name = workflow.queue;
  if (name.empty() || name == pool) return pool;
  const std::string at = workflow.queue_origin + ": ";
  std::set<std::string> parents;
  for (const model::Queue& q : queues) parents.insert(q.parent);
  // Suggestions: the queues a workflow can name (not departments).
  std::vector<std::string> leaves;
  for (const model::Queue& q : queues) {
    if (!parents.contains(q.name)) leaves.push_back(q.name);
  }
  std::sort(leaves.begin(), leaves.end());
  const std::vector<std::string> allowed = SubmittableQueues(configs, caller.roles, queues);
  const std::string yours = "; queues you may submit to: " +
                            (allowed.empty() ? std::string("none") : Join(allowed, ", ")) +
                            " (or none: pool \"" + pool + "\"'s own quota)";
  auto found = std::find_if(queues.begin(), queues.end(),
                            [&](const model::Queue& q) { return q.name == name; });
  if (found == queues.end()) {
    return InvalidArgumentError(at + "queue \"" + name + "\" does not exist" +
                                DidYouMean(name, leaves) + yours);
  }
  if (parents.contains(name)) {
    std::vector<std::string> projects;
    for (const model::Queue& q : queues) {
      if (q.parent == name) projects.push_back(q.name);
    }
    std::sort(projects.begin(), projects.end());
    return InvalidArgumentError(at + "queue \"" + name +
                                "\" is a department; submit to one of its projects (" +
                                Join(projects, ", ") + ")");
  }
  Status access = config::CheckAccess(caller.roles, "POST", QueueAccessPath(name), configs);
  if (!access.ok()) {
    return PermissionDeniedError("access denied: user \"" + caller.user + "\" with roles " +
                                 JoinRoles(caller.roles) + " may not submit to queue \"" + name +
                                 "\" (" + workflow.queue_origin + "): " + access.message() + yours);
  }
  return name;
}

std::string K8sName(std::string_view text, size_t max_len) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  if (out.size() > max_len) out.resize(max_len);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? std::string("x") : out;
}

std::string ValueText(const json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

bool MentionsTaskBuiltins(const config::ValidationRule& rule) {
  for (const std::string* s : {&rule.left_operand, &rule.right_operand}) {
    if (s->find("WF_") != std::string::npos ||
        s->find("USER_CONTAINER_NAME") != std::string::npos) {
      return true;
    }
  }
  return false;
}

bool MountAllowed(std::string_view host_path, const std::vector<std::string>& allowed) {
  for (const std::string& a : allowed) {
    std::string_view prefix = a;
    while (prefix.size() > 1 && prefix.back() == '/') prefix.remove_suffix(1);
    if (host_path == prefix) return true;
    if (StartsWith(host_path, prefix) && host_path.size() > prefix.size() &&
        (prefix == "/" || host_path[prefix.size()] == '/')) {
      return true;
    }
  }
  return false;
}

Status CheckTimeout(std::string_view field, std::optional<int64_t> requested,
                    const config::Timeout& max, std::string_view max_field, std::string_view pool) {
  if (!requested.has_value() || max.empty() || !max.seconds.has_value()) return OkStatus();
  if (*requested > *max.seconds) {
    return InvalidArgumentError("timeout above pool maximum: workflow.timeout." +
                                std::string(field) + " " + model::FormatDuration(*requested) +
                                " is above the maximum of pool \"" + std::string(pool) + "\" (" +
                                std::string(max_field) + " " + max.text + ")");
  }
  return OkStatus();
}

Status CheckPlatformPolicy(const TaskSpec& task, const config::Platform& platform,
                           std::string_view pool) {
  std::string where = "platform \"" + platform.name + "\" of pool \"" + std::string(pool) + "\"";
  if (task.privileged && !platform.privileged_allowed) {
    return InvalidArgumentError("not allowed by platform: task \"" + task.name +
                                "\" requests privileged: true, which " + where +
                                " does not allow (privileged_allowed: false)");
  }
  if (task.host_network && !platform.host_network_allowed) {
    return InvalidArgumentError("not allowed by platform: task \"" + task.name +
                                "\" requests hostNetwork: true, which " + where +
                                " does not allow (host_network_allowed: false)");
  }
  for (const json& mount : task.volume_mounts) {
    std::string host = mount.contains("hostPath") && mount["hostPath"].is_string()
                           ? mount["hostPath"].get<std::string>()
                           : ValueText(mount.value("name", json()));
    if (!MountAllowed(host, platform.allowed_mounts)) {
      return InvalidArgumentError(
          "not allowed by platform: task \"" + task.name + "\" mounts \"" + host + "\", which " +
          where + " does not allow (allowed_mounts: " +
          (platform.allowed_mounts.empty() ? std::string("none")
                                           : Join(platform.allowed_mounts, ", ")) +
          ")");
    }
  }
  return OkStatus();
}

Result<model::ResourceList> RequestsFromVariables(const config::VariableMap& vars,
                                                  std::string_view task) {
  static const std::pair<const char*, const char*> kResources[] = {
      {"USER_CPU", "cpu"},
      {"USER_MEMORY", "memory"},
      {"USER_STORAGE", "ephemeral-storage"},
      {"USER_GPU", "nvidia.com/gpu"}};
  model::ResourceList out;
  for (const auto& [var, resource] : kResources) {
    auto it = vars.find(var);
    if (it == vars.end() || it->second.empty()) continue;
    auto q = model::Quantity::Parse(it->second);
    if (!q.ok()) {
      return InvalidArgumentError("variables: task \"" + std::string(task) + "\": " + var +
                                  " is \"" + it->second +
                                  "\", not a quantity: " + q.status().message());
    }
    if (q->MilliValue() < 0) {
      return InvalidArgumentError("variables: task \"" + std::string(task) + "\": " + var +
                                  " must not be negative");
    }
    if (std::string_view(resource) == "nvidia.com/gpu") {
      if (q->IsZero()) continue;
      if (q->MilliValue() % 1000 != 0) {
        return InvalidArgumentError("variables: task \"" + std::string(task) +
                                    "\": USER_GPU must be a whole number, got " + it->second);
      }
    }
    out[resource] = *q;
  }
  return out;
}

// The pod before templates. With `skeleton`, per-task values are left out: the image is a
// sentinel and the task's lists are empty (present when the task has them, so keys keep their
// place); InstantiateSkeleton puts them back.
json BasePod(const TaskSpec& task, const std::string& pod_name, const std::string& container,
             const model::ResourceList& requests, bool skeleton = false) {
  json c = json::object();
  c["name"] = container;
  c["image"] = skeleton ? std::string(kImageSentinel) : task.image;
  if (!task.command.empty()) c["command"] = skeleton ? json::array() : json(task.command);
  if (!task.args.empty()) c["args"] = skeleton ? json::array() : json(task.args);
  if (!task.env.empty()) c["env"] = skeleton ? json::array() : task.env;
  json resources = model::ResourceListToJson(requests);
  c["resources"] = json{{"requests", resources}, {"limits", resources}};
  json volumes = json::array();
  if (!task.volume_mounts.empty() && skeleton) {
    c["volumeMounts"] = json::array();
    for (const json& m : task.volume_mounts) {
      if (m.contains("hostPath")) volumes = json::array({json::object()});
    }
  } else if (!task.volume_mounts.empty()) {
    json mounts = json::array();
    for (const json& m : task.volume_mounts) {
      json mount = m;
      if (mount.contains("hostPath")) {
        std::string name = mount.value("name", std::string("mount"));
        volumes.push_back(json{{"name", name}, {"hostPath", json{{"path", mount["hostPath"]}}}});
        mount.erase("hostPath");
      }
      mounts.push_back(std::move(mount));
    }
    c["volumeMounts"] = std::move(mounts);
  }
  if (task.privileged) c["securityContext"] = json{{"privileged", true}};
  // A Job's pod fields (the same for every task of it, so a skeleton keeps them as they are).
  const json no_fields = json::object();
  const json& pod_fields = task.pod_fields.is_object() ? task.pod_fields : no_fields;
  if (auto it = pod_fields.find("container"); it != pod_fields.end()) {
    for (const auto& [key, value] : it->items()) c[key] = value;
  }

  json spec = json::object();
  spec["restartPolicy"] = "Never";
  if (task.host_network) spec["hostNetwork"] = true;
  spec["containers"] = json::array({std::move(c)});
  if (!volumes.empty()) spec["volumes"] = skeleton ? json::array() : std::move(volumes);
  if (auto it = pod_fields.find("spec"); it != pod_fields.end()) {
    for (const auto& [key, value] : it->items()) spec[key] = value;
  }

  json pod = json::object();
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  pod["metadata"] = json{{"name", pod_name}};
  pod["spec"] = std::move(spec);
  return pod;
}

// The merged template failed to render: find the template (and field) that uses the variable.
Status ExplainRenderError(const Status& merged_error, const PlatformContext& ctx,
                          const config::ConfigSet& configs, const config::VariableMap& vars) {
  for (const std::string& name : ctx.template_names) {
    const config::PodTemplate* t = configs.FindPodTemplate(name);
    if (t == nullptr) continue;
    auto r = config::Render(t->body, vars, name);
    if (!r.ok()) return InvalidArgumentError("undefined variable: " + r.status().message());
  }
  return InvalidArgumentError("undefined variable: " + merged_error.message());
}

void ReplaceAll(std::string& s, std::string_view from, std::string_view to) {
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) {
    s.replace(pos, from.size(), to);
  }
}

void ReplaceSentinels(json& j, const TaskSpec& task, std::string_view group,
                      std::string_view container) {
  if (j.is_string()) {
    std::string& s = j.get_ref<std::string&>();
    if (s.find('\x01') == std::string::npos) return;
    ReplaceAll(s, kTaskSentinel, task.name);
    ReplaceAll(s, kGroupSentinel, group);
    ReplaceAll(s, kContainerSentinel, container);
    ReplaceAll(s, kImageSentinel, task.image);
  } else if (j.is_structured()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      ReplaceSentinels(it.value(), task, group, container);
    }
  }
}

// dst's list merged with src's as the template merge does (dst first).
json MergedList(const json& task_list, const json& template_list) {
  json a = json::object();
  a["x"] = task_list;
  json b = json::object();
  b["x"] = template_list;
  config::MergeInto(a, b);
  return std::move(a["x"]);
}

// Which optional fields a task has: tasks of one shape share a skeleton.
std::string TaskShape(const TaskSpec& t) {
  std::string shape(6, '0');
  if (!t.command.empty()) shape[0] = '1';
  if (!t.args.empty()) shape[1] = '1';
  if (!t.env.empty()) shape[2] = '1';
  if (!t.volume_mounts.empty()) shape[3] = '1';
  if (t.privileged) shape[4] = '1';
  if (t.host_network) shape[5] = '1';
  for (const json& m : t.volume_mounts) {
    if (m.contains("hostPath")) shape += 'h';
  }
  return shape;
}

// The pod of one task from its skeleton: sentinels replaced, the task's lists merged under the
// template's as the full merge would. False when the fast path cannot be exact (the template
// names a container like the task's), and the caller takes the full path.
bool InstantiateSkeleton(const Skeleton& skeleton, const TaskSpec& task, std::string_view group,
                         const std::string& container, json* out) {
  json pod = skeleton.pod;
  ReplaceSentinels(pod, task, group, container);
  json& containers = pod["spec"]["containers"];
  json* user = nullptr;
  for (json& c : containers) {
    if (c.contains("name") && c["name"] == container) {
      if (user != nullptr) return false;
      user = &c;
    }
  }
  if (user == nullptr) return false;
  auto put = [user](const char* field, const json& value) {
    (*user)[field] = user->contains(field) ? MergedList(value, (*user)[field]) : value;
  };
  if (!task.command.empty()) put("command", json(task.command));
  if (!task.args.empty()) put("args", json(task.args));
  if (!task.env.empty()) put("env", task.env);
  if (!task.volume_mounts.empty()) {
    json mounts = json::array();
    json volumes = json::array();
    for (const json& m : task.volume_mounts) {
      json mount = m;
      if (mount.contains("hostPath")) {
        std::string name = mount.value("name", std::string("mount"));
        volumes.push_back(json{{"name", name}, {"hostPath", json{{"path", mount["hostPath"]}}}});
        mount.erase("hostPath");
      }
      mounts.push_back(std::move(mount));
    }
    put("volumeMounts", mounts);
    if (!volumes.empty()) {
      json& spec = pod["spec"];
      spec["volumes"] =
          spec.contains("volumes") ? MergedList(volumes, spec["volumes"]) : std::move(volumes);
    }
  }
  *out = std::move(pod);
  return true;
}

}  // namespace

std::string PodName(std::string_view workflow_id, std::string_view task) {
  return K8sName(std::string(workflow_id) + "-" + std::string(task), 63);
}

std::string LabelValue(std::string_view text) {
  std::string out;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    out += (std::isalnum(u) || c == '-' || c == '_' || c == '.') ? c : '-';
  }
  if (out.size() > 63) out.resize(63);
  while (!out.empty() && !std::isalnum(static_cast<unsigned char>(out.back()))) out.pop_back();
  size_t start = 0;
  while (start < out.size() && !std::isalnum(static_cast<unsigned char>(out[start]))) ++start;
  return out.substr(start);
}

Result<PlatformSetupPtr> BuildPlatformSetup(const config::Pool& pool, std::string_view platform,
                                            const config::ConfigSet& configs) {
  auto setup = std::make_shared<PlatformSetup>();
  ASSIGN_OR_RETURN(setup->merged_template, config::PlatformTemplate(pool, platform, configs));
  ASSIGN_OR_RETURN(setup->rules, config::PlatformRules(pool, platform, configs));
  return PlatformSetupPtr(std::move(setup));
}

Result<SubmitPlan> Submit(const config::ConfigSet& configs, const std::vector<model::Node>& nodes,
                          const SubmitCaller& caller, std::string_view pool_name,
                          const WorkflowSpec& workflow, const SubmitOptions& options) {
  const std::string pool_str(pool_name);
  // 1. Access, then maintenance.
  Status access =
      config::CheckAccess(caller.roles, "POST", "/api/pool/" + pool_str + "/workflow", configs);
  if (!access.ok()) {
    std::string msg = "access denied: user \"" + caller.user + "\" with roles " +
                      JoinRoles(caller.roles) + " may not submit to pool \"" + pool_str +
                      "\": " + access.message();
    return access.code() == StatusCode::kInvalidArgument ? InvalidArgumentError(msg)
                                                         : PermissionDeniedError(msg);
  }
  const config::Pool* pool = configs.FindPool(pool_name);
  if (pool == nullptr) {
    std::vector<std::string> names;
    for (const auto& [n, p] : configs.pools) names.push_back(n);
    return NotFoundError("pool \"" + pool_str + "\" does not exist" + DidYouMean(pool_str, names));
  }
  bool is_admin = std::find(caller.roles.begin(), caller.roles.end(),
                            std::string(config::kAdminRole)) != caller.roles.end();
  if (pool->enable_maintenance && !is_admin) {
    return FailedPreconditionError(
        "pool in maintenance: Pool " + pool_str +
        " is undergoing maintenance. Users will have to wait until maintenance is completed "
        "before submission.");
  }

  ASSIGN_OR_RETURN(std::string queue,
                   ChosenQueue(configs, caller, pool_str, workflow, options.queues));

  // 2. Timeouts against the pool's maximum.
  RETURN_IF_ERROR(CheckTimeout("exec_timeout", workflow.exec_timeout_seconds,
                               pool->max_exec_timeout, "max_exec_timeout", pool_name));
  RETURN_IF_ERROR(CheckTimeout("queue_timeout", workflow.queue_timeout_seconds,
                               pool->max_queue_timeout, "max_queue_timeout", pool_name));

  SubmitPlan plan;
  plan.workflow_id = options.workflow_id.empty() ? workflow.name : options.workflow_id;
  plan.name = workflow.name;
  plan.pool = pool_str;
  plan.user = caller.user;
  plan.queue = queue;
  plan.priority = workflow.priority;
  plan.exec_timeout_seconds =
      workflow.exec_timeout_seconds.value_or(config::EffectiveSeconds(pool->default_exec_timeout));
  plan.queue_timeout_seconds = workflow.queue_timeout_seconds.value_or(
      config::EffectiveSeconds(pool->default_queue_timeout));
  if (!pool->max_exec_timeout.empty() && pool->max_exec_timeout.seconds &&
      plan.exec_timeout_seconds > *pool->max_exec_timeout.seconds) {
    plan.exec_timeout_seconds = *pool->max_exec_timeout.seconds;
  }
  if (!pool->max_queue_timeout.empty() && pool->max_queue_timeout.seconds &&
      plan.queue_timeout_seconds > *pool->max_queue_timeout.seconds) {
    plan.queue_timeout_seconds = *pool->max_queue_timeout.seconds;
  }

  std::map<std::string, PlatformContext> platforms;
  auto platform_for = [&](const ResourceSpec* resource,
                          std::string_view resource_name) -> Result<PlatformContext*> {
    std::string name = resource != nullptr && !resource->platform.empty()
                           ? resource->platform
                           : pool->default_platform.value_or("");
    // A pool without platforms routes every task to its implicit platform "" (kinds.h).
    if (name.empty() && !pool->platforms.empty()) {
      return InvalidArgumentError(
          "unknown platform: resource \"" + std::string(resource_name) +
          "\" names no platform and pool \"" + pool_str +
          "\" has no default_platform; the pool's platforms: " +
          (pool->platforms.empty() ? std::string("none") : Join(pool->PlatformNames(), ", ")));
    }
    auto it = platforms.find(name);
    if (it != platforms.end()) return &it->second;
    const config::Platform* platform = pool->FindPlatform(name);
    if (platform == nullptr) {
      return InvalidArgumentError(
          "unknown platform: resource \"" + std::string(resource_name) + "\" names platform \"" +
          name + "\", which is not in pool \"" + pool_str + "\"" +
          DidYouMean(name, pool->PlatformNames()) + "; the pool's platforms: " +
          (pool->platforms.empty() ? std::string("none") : Join(pool->PlatformNames(), ", ")));
    }
    PlatformContext ctx;
    ctx.platform = platform;
    ctx.name = name;
    ctx.label = LabelValue(name);
    ctx.template_names = pool->common_pod_template;
    ctx.template_names.insert(ctx.template_names.end(), platform->override_pod_template.begin(),
                              platform->override_pod_template.end());
    ASSIGN_OR_RETURN(ctx.setup, options.platform_setup ? options.platform_setup(*pool, name)
                                                       : BuildPlatformSetup(*pool, name, configs));
    for (const auto& r : ctx.setup->rules) {
      if (config::IsNodeRule(r.rule)) ctx.has_node_rules = true;
      if (MentionsTaskBuiltins(r.rule)) ctx.cacheable = false;
    }
    return &platforms.emplace(name, std::move(ctx)).first->second;
  };

  // Seed 003's node-pool switch (BACKEND default's enable_node_pools): off, every node is in the
  // default node pool, so a choice of node pools cannot be honoured and pods carry none.
  const config::Backend* cluster = configs.FindBackend(config::kDefaultBackend);
  const bool node_pools_on = cluster == nullptr || cluster->enable_node_pools;
  static const std::vector<model::NodePool> kNoNodePools;
  const std::vector<model::NodePool>& node_pool_configs =
      node_pools_on ? options.node_pools : kNoNodePools;
  std::string chosen_node_pools;
  if (!workflow.node_pools.empty() && !node_pools_on) {
    return InvalidArgumentError(
        "workflow.node_pools: node pools are off in this cluster (BACKEND default: "
        "enable_node_pools false), every node is in the default node pool; submit without "
        "--node-pools or the workflow's node_pools");
  }
  if (!workflow.node_pools.empty()) {
    ASSIGN_OR_RETURN(chosen_node_pools, CheckedNodePools(workflow.node_pools, "workflow.node_pools",
                                                         node_pool_configs));
  }
  // Without a choice: the platform's default_node_pools, else the pool's, else the node pools of
  // the platform's nodes (matched once per platform).
  auto node_pools_for = [&](PlatformContext& ctx) -> Result<std::string> {
    if (!chosen_node_pools.empty() || node_pool_configs.empty()) return chosen_node_pools;
    if (!ctx.node_pools.has_value() && !ctx.platform->default_node_pools.empty()) {
      ASSIGN_OR_RETURN(ctx.node_pools, CheckedNodePools(ctx.platform->default_node_pools,
                                                        "pool \"" + pool_str + "\": platforms." +
                                                            ctx.name + ".default_node_pools",
                                                        node_pool_configs));
    }
    if (!ctx.node_pools.has_value() && !pool->default_node_pools.empty()) {
      ASSIGN_OR_RETURN(
          ctx.node_pools,
          CheckedNodePools(pool->default_node_pools,
                           "pool \"" + pool_str + "\": default_node_pools", node_pool_configs));
    }
    if (!ctx.node_pools.has_value()) {
      SubmitOptions::NodeList list;
      if (options.platform_nodes) {
        ASSIGN_OR_RETURN(list,
                         options.platform_nodes(pool_str, ctx.name, ctx.setup->merged_template));
      } else {
        ASSIGN_OR_RETURN(auto matched,
                         config::PlatformNodesOf(ctx.setup->merged_template, nodes, pool->backend));
        list = std::make_shared<const std::vector<const model::Node*>>(std::move(matched));
      }
      ctx.node_pools = NodePoolsOfNodes(*list, node_pool_configs);
    }
    return *ctx.node_pools;
  };

  plan.tasks.reserve(workflow.TaskCount());
  const std::string priority_class(PriorityClassName(workflow.priority));
  const std::string priority_name = ToLower(PriorityName(workflow.priority));
  const std::string workflow_label = LabelValue(plan.workflow_id);
  const std::string pool_label = LabelValue(pool_str);
  const std::string queue_label = LabelValue(queue);
  const std::string user_label = LabelValue(caller.user);
  for (const GroupSpec& group : workflow.groups) {
    const std::string gang = LabelValue(plan.workflow_id + "-" + group.name);
    const std::string gang_min = std::to_string(group.tasks.size());
    const std::string group_label = LabelValue(group.name);
    for (const TaskSpec& task : group.tasks) {
      const ResourceSpec* resource = workflow.FindResource(task.resource);
      ASSIGN_OR_RETURN(PlatformContext * ctx, platform_for(resource, task.resource));
      RETURN_IF_ERROR(CheckPlatformPolicy(task, *ctx->platform, pool_name));
      const std::string container = K8sName(task.name, 63);
      PlannedTask planned;
      planned.group = group.name;
      planned.task = task.name;
      planned.platform = ctx->name;
      planned.pod_name = PodName(plan.workflow_id, task.name);
      planned.sim_duration_seconds = task.sim_duration_seconds.value_or(0);
      planned.sim_exit_code = task.sim_exit_code;

      // Fast path: a task whose (resource, shape) was seen before reuses the skeleton built
      // from it (variables resolved, validated, templates rendered and merged once).
      std::string skeleton_key;
      bool built = false;
      json pod;
      if (options.reuse_per_resource && ctx->cacheable) {
        skeleton_key = task.resource + '\0' + TaskShape(task);
        if (!task.pod_fields.is_null()) skeleton_key += '\0' + task.pod_fields.dump();
        auto it = ctx->skeletons.find(skeleton_key);
        if (it != ctx->skeletons.end() && it->second.has_value() &&
            InstantiateSkeleton(*it->second, task, group.name, container, &pod)) {
          planned.requests = it->second->requests;
          built = true;
        }
      }
      if (!built) {
        // 3. Variables.
        config::VariableMap user_values;
        if (resource != nullptr) {
          if (!resource->cpu.is_null()) user_values["USER_CPU"] = ValueText(resource->cpu);
          if (!resource->gpu.is_null()) user_values["USER_GPU"] = ValueText(resource->gpu);
          if (!resource->memory.is_null()) user_values["USER_MEMORY"] = ValueText(resource->memory);
          if (!resource->storage.is_null()) {
            user_values["USER_STORAGE"] = ValueText(resource->storage);
          }
          user_values["USER_EXCLUDED_NODES"] =
              "ARRAY:[" + Join(resource->nodes_excluded, ",") + "]";
        } else {
          user_values["USER_EXCLUDED_NODES"] = "ARRAY:[]";
        }
        config::TaskContext tc;
        tc.workflow_id = plan.workflow_id;
        tc.pool = pool_str;
        tc.platform = ctx->name;
        tc.task_name = task.name;
        tc.group_name = group.name;
        tc.submitted_by = caller.user;
        tc.priority = priority_name;
        tc.container_name = container;
        auto vars_or = config::ResolveVariables(*pool, ctx->platform, user_values, tc);
        if (!vars_or.ok()) {
          return InvalidArgumentError("variables: task \"" + task.name +
                                      "\": " + vars_or.status().message());
        }
        const config::VariableMap& vars = *vars_or;

        // 4. Validation (cached per resource when the rules do not depend on the task).
        bool validated = false;
        if (ctx->cacheable) {
          auto it = ctx->validated.find(task.resource);
          validated = it != ctx->validated.end() && it->second;
        }
        if (!validated && !ctx->setup->rules.empty()) {
          if (ctx->nodes == nullptr) {
            if (!ctx->has_node_rules) {
              ctx->nodes = std::make_shared<const std::vector<const model::Node*>>();
            } else if (options.platform_nodes) {
              ASSIGN_OR_RETURN(ctx->nodes, options.platform_nodes(pool_str, ctx->name,
                                                                  ctx->setup->merged_template));
            } else {
              ASSIGN_OR_RETURN(auto list, config::PlatformNodesOf(ctx->setup->merged_template,
                                                                  nodes, pool->backend));
              ctx->nodes = std::make_shared<const std::vector<const model::Node*>>(std::move(list));
            }
          }
          std::vector<const model::Node*> candidates;
          const std::vector<const model::Node*>* node_list = ctx->nodes.get();
          if (resource != nullptr && !resource->nodes_excluded.empty()) {
            for (const model::Node* n : *ctx->nodes) {
              if (std::find(resource->nodes_excluded.begin(), resource->nodes_excluded.end(),
                            n->name) == resource->nodes_excluded.end()) {
                candidates.push_back(n);
              }
            }
            node_list = &candidates;
          }
          config::ValidationScope scope{task.name, pool_str, ctx->name};
          auto result = config::ValidateTask(scope, ctx->setup->rules, vars, *node_list);
          if (!result.ok()) {
            return InvalidArgumentError("validation failed: task \"" + task.name +
                                        "\": " + result.status().message());
          }
          if (!result->ok()) {
            return InvalidArgumentError("validation failed: " +
                                        config::FormatValidationFailure(*result->failure));
          }
          if (ctx->cacheable) ctx->validated[task.resource] = true;
        }

        // 5. Templates.
        auto rendered = config::Render(ctx->setup->merged_template, vars,
                                       "platform " + ctx->name + " of pool " + pool_str);
        if (!rendered.ok()) return ExplainRenderError(rendered.status(), *ctx, configs, vars);

        // 6. The pod.
        ASSIGN_OR_RETURN(model::ResourceList requests, RequestsFromVariables(vars, task.name));
        planned.requests = requests;
        pod = BasePod(task, planned.pod_name, container, requests);
        config::MergeInto(pod, *rendered);

        // The skeleton for the next tasks of this (resource, shape): the same steps with sentinel
        // task values. Any failure just leaves the full path in use.
        // Built when a key comes up the second time, so workflows whose tasks all differ pay
        // nothing for it.
        if (!skeleton_key.empty() && !ctx->skeletons.contains(skeleton_key) &&
            !ctx->seen_keys.insert(skeleton_key).second) {
          std::optional<Skeleton> skeleton;
          config::TaskContext stc = tc;
          stc.task_name = std::string(kTaskSentinel);
          stc.group_name = std::string(kGroupSentinel);
          stc.container_name = std::string(kContainerSentinel);
          auto svars = config::ResolveVariables(*pool, ctx->platform, user_values, stc);
          if (svars.ok()) {
            auto srendered = config::Render(ctx->setup->merged_template, *svars, "skeleton");
            if (srendered.ok()) {
              Skeleton sk;
              sk.requests = requests;
              sk.pod = BasePod(task, planned.pod_name, std::string(kContainerSentinel), requests,
                               /*skeleton=*/true);
              config::MergeInto(sk.pod, *srendered);
              skeleton = std::move(sk);
            }
          }
          ctx->skeletons.emplace(skeleton_key, std::move(skeleton));
        }
      }  // !built
      pod["apiVersion"] = "v1";
      pod["kind"] = "Pod";
      json& metadata = pod["metadata"];
      metadata["name"] = planned.pod_name;
      json& labels = metadata["labels"];
      if (!labels.is_object()) labels = json::object();
      for (const auto& [k, v] : workflow.labels.items()) labels[k] = v;
      labels["gpupool.io/workflow"] = workflow_label;
      labels["gpupool.io/group"] = group_label;
      labels["gpupool.io/task"] = LabelValue(task.name);
      labels["gpupool.io/pool"] = pool_label;
      labels["gpupool.io/platform"] = ctx->label;
      labels["gpupool.io/queue"] = queue_label;
      ASSIGN_OR_RETURN(std::string task_node_pools, node_pools_for(*ctx));
      if (!task_node_pools.empty()) labels["gpupool.io/node-pool"] = task_node_pools;
      labels["gpupool.io/gang"] = gang;
      labels["gpupool.io/gang-min"] = gang_min;
      if (!user_label.empty()) labels["gpupool.io/user"] = user_label;
      if (task.sim_duration_seconds.has_value() || task.sim_exit_code != 0) {
        json& annotations = metadata["annotations"];
        if (!annotations.is_object()) annotations = json::object();
        annotations["gpupool.io/sim-duration-seconds"] =
            std::to_string(planned.sim_duration_seconds);
        annotations["gpupool.io/sim-exit-code"] = std::to_string(task.sim_exit_code);
      }
      pod["spec"]["priorityClassName"] = priority_class;
      planned.pod = std::move(pod);
      plan.tasks.push_back(std::move(planned));
    }
  }
  if (workflow.priority != Priority::kLow && pool->gpu.has_value() && pool->gpu->guarantee >= 0) {
    for (const GroupSpec& group : workflow.groups) {
      int64_t gpus = 0;
      for (const PlannedTask& t : plan.tasks) {
        if (t.group != group.name) continue;
        auto it = t.requests.find("nvidia.com/gpu");
        if (it != t.requests.end()) gpus += it->second.Value();
      }
      if (gpus > pool->gpu->guarantee) {
        plan.warnings.push_back("group \"" + group.name + "\" requests " + std::to_string(gpus) +
                                " GPUs, above the guarantee of pool \"" + pool_str + "\" (" +
                                std::to_string(pool->gpu->guarantee) +
                                "); consider priority LOW so it may borrow idle GPUs");
      }
    }
  }
  return plan;
}

}  // namespace gpupool::submit
