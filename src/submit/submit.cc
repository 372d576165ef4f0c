#include "submit/submit.h"
// The pipeline as a Submission: one method per step of submit.h over the state they share.
// The pod's base and its skeleton are in pod_skeleton.h.

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
#include "submit/pod_skeleton.h"

namespace gpupool::submit {
namespace {

using json = nlohmann::ordered_json;

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

}  // namespace

std::vector<std::string> SubmittableQueues(const config::ConfigSet& configs,
                                           const std::vector<std::string>& roles,
                                           const std::vector<model::Queue>& queues) {
  std::set<std::string> parents;
  for (const model::Queue& q : queues) parents.insert(q.parent);
  std::vector<std::string> allowed;
  for (const model::Queue& q : queues) {
    if (parents.contains(q.name)) continue;
    if (config::CheckAccess(roles, config::QueueSubmission(q.name), configs).ok()) {
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
  Status access = config::CheckAccess(caller.roles, config::QueueSubmission(name), configs);
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

namespace {

// One run of the pipeline (the numbered steps of submit.h) over the state its steps share: the
// pool, the plan, the per-platform contexts and the node pools.
class Submission {
 public:
  Submission(const config::ConfigSet& configs, const std::vector<model::Node>& nodes,
             const SubmitCaller& caller, std::string_view pool, const WorkflowSpec& workflow,
             const SubmitOptions& options)
      : configs_(configs),
        nodes_(nodes),
        caller_(caller),
        pool_name_(pool),
        workflow_(workflow),
        options_(options) {}

  Result<SubmitPlan> Run() {
    RETURN_IF_ERROR(CheckPool());
    RETURN_IF_ERROR(PlanQueueAndTimeouts());
    RETURN_IF_ERROR(CheckNodePoolChoice());
    plan_.tasks.reserve(workflow_.TaskCount());
    for (const GroupSpec& group : workflow_.groups) {
      for (const TaskSpec& task : group.tasks) RETURN_IF_ERROR(PlanTask(group, task));
    }
    WarnAboveGuarantee();
    return std::move(plan_);
  }

 private:
  // 1. The pool and its maintenance (the caller's access to it was checked: see submit.h).
  Status CheckPool() {
    pool_ = configs_.FindPool(pool_name_);
    if (pool_ == nullptr) {
      std::vector<std::string> names;
      for (const auto& [n, p] : configs_.pools) names.push_back(n);
      return NotFoundError("pool \"" + pool_name_ + "\" does not exist" +
                           DidYouMean(pool_name_, names));
    }
    const bool is_admin = std::find(caller_.roles.begin(), caller_.roles.end(),
                                    std::string(config::kAdminRole)) != caller_.roles.end();
    if (pool_->enable_maintenance && !is_admin) {
      return FailedPreconditionError(
          "pool in maintenance: Pool " + pool_name_ +
          " is undergoing maintenance. Users will have to wait until maintenance is completed "
          "before submission.");
    }
    return OkStatus();
  }

  // 1. The queue; 2. the timeouts against the pool's maximum, and the effective ones.
  Status PlanQueueAndTimeouts() {
    ASSIGN_OR_RETURN(std::string queue,
                     ChosenQueue(configs_, caller_, pool_name_, workflow_, options_.queues));
    RETURN_IF_ERROR(CheckTimeout("exec_timeout", workflow_.exec_timeout_seconds,
                                 pool_->max_exec_timeout, "max_exec_timeout", pool_name_));
    RETURN_IF_ERROR(CheckTimeout("queue_timeout", workflow_.queue_timeout_seconds,
                                 pool_->max_queue_timeout, "max_queue_timeout", pool_name_));
    plan_.workflow_id = options_.workflow_id.empty() ? workflow_.name : options_.workflow_id;
    plan_.name = workflow_.name;
    plan_.pool = pool_name_;
    plan_.user = caller_.user;
    plan_.queue = queue;
    plan_.priority = workflow_.priority;
    plan_.exec_timeout_seconds = workflow_.exec_timeout_seconds.value_or(
        config::EffectiveSeconds(pool_->default_exec_timeout));
    plan_.queue_timeout_seconds = workflow_.queue_timeout_seconds.value_or(
        config::EffectiveSeconds(pool_->default_queue_timeout));
    if (!pool_->max_exec_timeout.empty() && pool_->max_exec_timeout.seconds &&
        plan_.exec_timeout_seconds > *pool_->max_exec_timeout.seconds) {
      plan_.exec_timeout_seconds = *pool_->max_exec_timeout.seconds;
    }
    if (!pool_->max_queue_timeout.empty() && pool_->max_queue_timeout.seconds &&
        plan_.queue_timeout_seconds > *pool_->max_queue_timeout.seconds) {
      plan_.queue_timeout_seconds = *pool_->max_queue_timeout.seconds;
    }
    labels_.workflow = LabelValue(plan_.workflow_id);
    labels_.pool = LabelValue(pool_name_);
    labels_.queue = LabelValue(queue);
    labels_.user = LabelValue(caller_.user);
    return OkStatus();
  }

  // Seed 003's node-pool switch (BACKEND default's enable_node_pools): off, every node is in the
  // default node pool, so a choice of node pools cannot be honoured and pods carry none.
  Status CheckNodePoolChoice() {
    const config::Backend* cluster = configs_.FindBackend(config::kDefaultBackend);
    const bool node_pools_on = cluster == nullptr || cluster->enable_node_pools;
    if (node_pools_on) node_pool_configs_ = &options_.node_pools;
    if (workflow_.node_pools.empty()) return OkStatus();
    if (!node_pools_on) {
      return InvalidArgumentError(
          "workflow.node_pools: node pools are off in this cluster (BACKEND default: "
          "enable_node_pools false), every node is in the default node pool; submit without "
          "--node-pools or the workflow's node_pools");
    }
    ASSIGN_OR_RETURN(
        chosen_node_pools_,
        CheckedNodePools(workflow_.node_pools, "workflow.node_pools", *node_pool_configs_));
    return OkStatus();
  }

  // 2. The platform of a task's resource (else the pool's default_platform; a pool without
  // platforms routes every task to its implicit platform "", kinds.h), set up once.
  Result<PlatformContext*> PlatformFor(const ResourceSpec* resource,
                                       std::string_view resource_name) {
    std::string name = resource != nullptr && !resource->platform.empty()
                           ? resource->platform
                           : pool_->default_platform.value_or("");
    const std::string listed =
        pool_->platforms.empty() ? std::string("none") : Join(pool_->PlatformNames(), ", ");
    if (name.empty() && !pool_->platforms.empty()) {
      return InvalidArgumentError("unknown platform: resource \"" + std::string(resource_name) +
                                  "\" names no platform and pool \"" + pool_name_ +
                                  "\" has no default_platform; the pool's platforms: " + listed);
    }
    auto it = platforms_.find(name);
    if (it != platforms_.end()) return &it->second;
    const config::Platform* platform = pool_->FindPlatform(name);
    if (platform == nullptr) {
      return InvalidArgumentError("unknown platform: resource \"" + std::string(resource_name) +
                                  "\" names platform \"" + name + "\", which is not in pool \"" +
                                  pool_name_ + "\"" + DidYouMean(name, pool_->PlatformNames()) +
                                  "; the pool's platforms: " + listed);
    }
    PlatformContext ctx;
    ctx.platform = platform;
    ctx.name = name;
    ctx.label = LabelValue(name);
    ctx.template_names = pool_->common_pod_template;
    ctx.template_names.insert(ctx.template_names.end(), platform->override_pod_template.begin(),
                              platform->override_pod_template.end());
    ASSIGN_OR_RETURN(ctx.setup, options_.platform_setup
                                    ? options_.platform_setup(*pool_, name)
                                    : BuildPlatformSetup(*pool_, name, configs_));
    for (const auto& r : ctx.setup->rules) {
      if (config::IsNodeRule(r.rule)) ctx.has_node_rules = true;
      if (MentionsTaskBuiltins(r.rule)) ctx.cacheable = false;
    }
    return &platforms_.emplace(name, std::move(ctx)).first->second;
  }

  // The nodes of a platform, from its merged template (the caller's cache when it has one).
  Result<SubmitOptions::NodeList> PlatformNodes(const PlatformContext& ctx) {
    if (options_.platform_nodes) {
      return options_.platform_nodes(pool_name_, ctx.name, ctx.setup->merged_template);
    }
    ASSIGN_OR_RETURN(auto matched,
                     config::PlatformNodesOf(ctx.setup->merged_template, nodes_, pool_->backend));
    return std::make_shared<const std::vector<const model::Node*>>(std::move(matched));
  }

  // The pods' gpupool.io/node-pool: the workflow's choice; without one, the platform's
  // default_node_pools, else the pool's, else the node pools of the platform's nodes (matched
  // once per platform).
  Result<std::string> NodePoolsFor(PlatformContext& ctx) {
    if (!chosen_node_pools_.empty() || node_pool_configs_->empty()) return chosen_node_pools_;
    if (!ctx.node_pools.has_value() && !ctx.platform->default_node_pools.empty()) {
      ASSIGN_OR_RETURN(ctx.node_pools, CheckedNodePools(ctx.platform->default_node_pools,
                                                        "pool \"" + pool_name_ + "\": platforms." +
                                                            ctx.name + ".default_node_pools",
                                                        *node_pool_configs_));
    }
    if (!ctx.node_pools.has_value() && !pool_->default_node_pools.empty()) {
      ASSIGN_OR_RETURN(
          ctx.node_pools,
          CheckedNodePools(pool_->default_node_pools,
                           "pool \"" + pool_name_ + "\": default_node_pools", *node_pool_configs_));
    }
    if (!ctx.node_pools.has_value()) {
      ASSIGN_OR_RETURN(SubmitOptions::NodeList list, PlatformNodes(ctx));
      ctx.node_pools = NodePoolsOfNodes(*list, *node_pool_configs_);
    }
    return *ctx.node_pools;
  }

  // 2-6 for one task: its platform and policy, its pod (from a skeleton when one fits), its
  // labels.
  Status PlanTask(const GroupSpec& group, const TaskSpec& task) {
    const ResourceSpec* resource = workflow_.FindResource(task.resource);
    ASSIGN_OR_RETURN(PlatformContext * ctx, PlatformFor(resource, task.resource));
    RETURN_IF_ERROR(CheckPlatformPolicy(task, *ctx->platform, pool_name_));
    const std::string container = K8sName(task.name, 63);
    PlannedTask planned;
    planned.group = group.name;
    planned.task = task.name;
    planned.platform = ctx->name;
    planned.pod_name = PodName(plan_.workflow_id, task.name);
    planned.sim_duration_seconds = task.sim_duration_seconds.value_or(0);
    planned.sim_exit_code = task.sim_exit_code;

    // Fast path: a task whose (resource, shape) was seen before reuses the skeleton built from
    // it (variables resolved, validated, templates rendered and merged once).
    std::string skeleton_key;
    json pod;
    bool built = false;
    if (options_.reuse_per_resource && ctx->cacheable) {
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
      ASSIGN_OR_RETURN(pod,
                       BuildPod(*ctx, resource, group, task, container, skeleton_key, planned));
    }
    RETURN_IF_ERROR(LabelPod(pod, *ctx, group, task, planned));
    planned.pod = std::move(pod);
    plan_.tasks.push_back(std::move(planned));
    return OkStatus();
  }

  // The USER_* values of a task's resource (an explicit 0 is kept).
  static config::VariableMap UserValues(const ResourceSpec* resource) {
    config::VariableMap values;
    if (resource == nullptr) {
      values["USER_EXCLUDED_NODES"] = "ARRAY:[]";
      return values;
    }
    if (!resource->cpu.is_null()) values["USER_CPU"] = ValueText(resource->cpu);
    if (!resource->gpu.is_null()) values["USER_GPU"] = ValueText(resource->gpu);
    if (!resource->memory.is_null()) values["USER_MEMORY"] = ValueText(resource->memory);
    if (!resource->storage.is_null()) values["USER_STORAGE"] = ValueText(resource->storage);
    values["USER_EXCLUDED_NODES"] = "ARRAY:[" + Join(resource->nodes_excluded, ",") + "]";
    return values;
  }

  // 3-6 in full for one task: variables, validation, templates, the pod; then the skeleton for
  // the next tasks of its key.
  Result<json> BuildPod(PlatformContext& ctx, const ResourceSpec* resource, const GroupSpec& group,
                        const TaskSpec& task, const std::string& container,
                        const std::string& skeleton_key, PlannedTask& planned) {
    const config::VariableMap user_values = UserValues(resource);
    config::TaskContext tc;
    tc.workflow_id = plan_.workflow_id;
    tc.pool = pool_name_;
    tc.platform = ctx.name;
    tc.task_name = task.name;
    tc.group_name = group.name;
    tc.submitted_by = caller_.user;
    tc.priority = ToLower(PriorityName(workflow_.priority));
    tc.container_name = container;
    auto vars = config::ResolveVariables(*pool_, ctx.platform, user_values, tc);
    if (!vars.ok()) {
      return InvalidArgumentError("variables: task \"" + task.name +
                                  "\": " + vars.status().message());
    }
    RETURN_IF_ERROR(Validate(ctx, resource, task, *vars));
    auto rendered = config::Render(ctx.setup->merged_template, *vars,
                                   "platform " + ctx.name + " of pool " + pool_name_);
    if (!rendered.ok()) return ExplainRenderError(rendered.status(), ctx, configs_, *vars);
    ASSIGN_OR_RETURN(model::ResourceList requests, RequestsFromVariables(*vars, task.name));
    planned.requests = requests;
    json pod = BasePod(task, planned.pod_name, container, requests);
    config::MergeInto(pod, *rendered);
    // Built when a key comes up the second time, so workflows whose tasks all differ pay
    // nothing for it.
    if (!skeleton_key.empty() && !ctx.skeletons.contains(skeleton_key) &&
        !ctx.seen_keys.insert(skeleton_key).second) {
      ctx.skeletons.emplace(skeleton_key,
                            MakeSkeleton(ctx, task, user_values, tc, requests, planned.pod_name));
    }
    return pod;
  }

  // 4. The pool's and platform's rules (cached per resource when they do not depend on the
  // task), node rules over the platform's nodes less the resource's excluded ones.
  Status Validate(PlatformContext& ctx, const ResourceSpec* resource, const TaskSpec& task,
                  const config::VariableMap& vars) {
    if (ctx.setup->rules.empty()) return OkStatus();
    if (ctx.cacheable) {
      auto it = ctx.validated.find(task.resource);
      if (it != ctx.validated.end() && it->second) return OkStatus();
    }
    if (ctx.nodes == nullptr) {
      if (!ctx.has_node_rules) {
        ctx.nodes = std::make_shared<const std::vector<const model::Node*>>();
      } else {
        ASSIGN_OR_RETURN(ctx.nodes, PlatformNodes(ctx));
      }
    }
    std::vector<const model::Node*> candidates;
    const std::vector<const model::Node*>* node_list = ctx.nodes.get();
    if (resource != nullptr && !resource->nodes_excluded.empty()) {
      for (const model::Node* n : *ctx.nodes) {
        if (std::find(resource->nodes_excluded.begin(), resource->nodes_excluded.end(), n->name) ==
            resource->nodes_excluded.end()) {
          candidates.push_back(n);
        }
      }
      node_list = &candidates;
    }
    config::ValidationScope scope{task.name, pool_name_, ctx.name};
    auto result = config::ValidateTask(scope, ctx.setup->rules, vars, *node_list);
    if (!result.ok()) {
      return InvalidArgumentError("validation failed: task \"" + task.name +
                                  "\": " + result.status().message());
    }
    if (!result->ok()) {
      return InvalidArgumentError("validation failed: " +
                                  config::FormatValidationFailure(*result->failure));
    }
    if (ctx.cacheable) ctx.validated[task.resource] = true;
    return OkStatus();
  }

  // The skeleton of a (resource, shape): the same steps with sentinel task values; nullopt when
  // any fails (that key keeps the full path).
  std::optional<Skeleton> MakeSkeleton(const PlatformContext& ctx, const TaskSpec& task,
                                       const config::VariableMap& user_values,
                                       config::TaskContext tc, const model::ResourceList& requests,
                                       const std::string& pod_name) {
    tc.task_name = std::string(kTaskSentinel);
    tc.group_name = std::string(kGroupSentinel);
    tc.container_name = std::string(kContainerSentinel);
    auto vars = config::ResolveVariables(*pool_, ctx.platform, user_values, tc);
    if (!vars.ok()) return std::nullopt;
    auto rendered = config::Render(ctx.setup->merged_template, *vars, "skeleton");
    if (!rendered.ok()) return std::nullopt;
    Skeleton skeleton;
    skeleton.requests = requests;
    skeleton.pod =
        BasePod(task, pod_name, std::string(kContainerSentinel), requests, /*skeleton=*/true);
    config::MergeInto(skeleton.pod, *rendered);
    return skeleton;
  }

  // 6. The system labels, the simulated run's annotations and the priority class.
  Status LabelPod(json& pod, PlatformContext& ctx, const GroupSpec& group, const TaskSpec& task,
                  const PlannedTask& planned) {
    pod["apiVersion"] = "v1";
    pod["kind"] = "Pod";
    json& metadata = pod["metadata"];
    metadata["name"] = planned.pod_name;
    json& labels = metadata["labels"];
    if (!labels.is_object()) labels = json::object();
    for (const auto& [k, v] : workflow_.labels.items()) labels[k] = v;
    labels["gpupool.io/workflow"] = labels_.workflow;
    labels["gpupool.io/group"] = LabelValue(group.name);
    labels["gpupool.io/task"] = LabelValue(task.name);
    labels["gpupool.io/pool"] = labels_.pool;
    labels["gpupool.io/platform"] = ctx.label;
    labels["gpupool.io/queue"] = labels_.queue;
    ASSIGN_OR_RETURN(std::string task_node_pools, NodePoolsFor(ctx));
    if (!task_node_pools.empty()) labels["gpupool.io/node-pool"] = task_node_pools;
    labels["gpupool.io/gang"] = LabelValue(plan_.workflow_id + "-" + group.name);
    labels["gpupool.io/gang-min"] = std::to_string(group.tasks.size());
    if (!labels_.user.empty()) labels["gpupool.io/user"] = labels_.user;
    if (task.sim_duration_seconds.has_value() || task.sim_exit_code != 0) {
      json& annotations = metadata["annotations"];
      if (!annotations.is_object()) annotations = json::object();
      annotations["gpupool.io/sim-duration-seconds"] = std::to_string(planned.sim_duration_seconds);
      annotations["gpupool.io/sim-exit-code"] = std::to_string(task.sim_exit_code);
    }
    pod["spec"]["priorityClassName"] = std::string(PriorityClassName(workflow_.priority));
    return OkStatus();
  }

  // A group at HIGH or NORMAL asking more GPUs than the pool's guarantee is told LOW may borrow.
  void WarnAboveGuarantee() {
    if (workflow_.priority == Priority::kLow || !pool_->gpu.has_value() ||
        pool_->gpu->guarantee < 0) {
      return;
    }
    for (const GroupSpec& group : workflow_.groups) {
      int64_t gpus = 0;
      for (const PlannedTask& t : plan_.tasks) {
        if (t.group != group.name) continue;
        auto it = t.requests.find("nvidia.com/gpu");
        if (it != t.requests.end()) gpus += it->second.Value();
      }
      if (gpus > pool_->gpu->guarantee) {
        plan_.warnings.push_back("group \"" + group.name + "\" requests " + std::to_string(gpus) +
                                 " GPUs, above the guarantee of pool \"" + pool_name_ + "\" (" +
                                 std::to_string(pool_->gpu->guarantee) +
                                 "); consider priority LOW so it may borrow idle GPUs");
      }
    }
  }

  const config::ConfigSet& configs_;
  const std::vector<model::Node>& nodes_;
  const SubmitCaller& caller_;
  const std::string pool_name_;
  const WorkflowSpec& workflow_;
  const SubmitOptions& options_;

  const config::Pool* pool_ = nullptr;
  SubmitPlan plan_;
  std::map<std::string, PlatformContext> platforms_;
  // The NODE_POOL configs the pods may name: none when node pools are off.
  const std::vector<model::NodePool>* node_pool_configs_ = &kNoNodePools;
  std::string chosen_node_pools_;  // the workflow's node_pools, checked, as the label value
  struct {
    std::string workflow, pool, queue, user;
  } labels_;  // label values shared by every pod

  static inline const std::vector<model::NodePool> kNoNodePools;
};

}  // namespace

Result<SubmitPlan> Submit(const config::ConfigSet& configs, const std::vector<model::Node>& nodes,
                          const SubmitCaller& caller, std::string_view pool_name,
                          const WorkflowSpec& workflow, const SubmitOptions& options) {
  return Submission(configs, nodes, caller, pool_name, workflow, options).Run();
}

}  // namespace gpupool::submit
