#pragma once
// The submission pipeline (DESIGN §3): one pure, deterministic function from (configs, nodes,
// caller, pool, workflow) to one Kubernetes Pod per task, or an error naming its step. No I/O.
//
// The caller's access to the pool is not checked here: service::Service takes that decision,
// once per submission, before planning (config::PoolSubmission); Submit's callers must too.
//
// Steps, in order; each failure message starts with the step's name:
//   1. "pool in maintenance"  enable_maintenance blocks everyone but osmo-admin;
//      the queue              the workflow's `queue` (or --queue), else the pool's implicit
//                             queue (named as the pool): a QUEUE config that is not a department
//                             (no queue names it as parent) and that the roles allow as
//                             POST /api/queue/<queue>/workflow (workflow:Create on queue/<queue>);
//   2. "unknown platform"     each resource's platform, else the pool's default_platform (the
//                             message lists the pool's platforms);
//      "timeout above pool maximum"  exec/queue timeout above max_*_timeout (names the maximum);
//      "not allowed by platform"     privileged / hostNetwork / volume mounts the platform does
//                                    not allow;
//   3. variables: pool common_default_variables < platform default_variables < the task's
//      resource values (cpu, gpu, memory, storage; an explicit 0 is kept) < built-ins;
//   4. "validation failed"    pool rules then platform rules (task, rule, rendered message; for
//                             node rules a per-node table);
//   5. "undefined variable"   pod templates merged (pool common then platform override) and
//                             rendered; names template, field path and variable.
//   6. output: the base pod (user container with image, command, args, env, resources from
//      USER_*, mounts, privileged, hostNetwork; a Job's pod fields, TaskSpec::pod_fields) with
//      the rendered template merged over it, then
//      the system labels gpupool.io/{workflow,group,task,pool,platform,queue,gang,gang-min,user}
//      (and gpupool.io/node-pool with NODE_POOL configs)
//      and priorityClassName high|normal|low.
//
// Thread contract: pure; safe to call concurrently.

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "config/config_set.h"
#include "config/merge.h"
#include "model/k8s.h"
#include "model/node_pool.h"
#include "model/quantity.h"
#include "model/queue.h"
#include "submit/workflow.h"

namespace gpupool::submit {

struct SubmitCaller {
  std::string user;
  std::vector<std::string> roles;
};

// What a platform's pods start from: its merged, unrendered pod template and its validation
// rules. Both depend on the configs only, not on the workflow.
struct PlatformSetup {
  nlohmann::ordered_json merged_template;  // config::PlatformTemplate
  std::vector<config::NamedRule> rules;    // config::PlatformRules
};
using PlatformSetupPtr = std::shared_ptr<const PlatformSetup>;
Result<PlatformSetupPtr> BuildPlatformSetup(const config::Pool& pool, std::string_view platform,
                                            const config::ConfigSet& configs);

struct SubmitOptions {
  // WF_ID and the pod-name prefix. The service uses "<name>-<sequence>"; dry runs
  // "<name>-dry-run".
  std::string workflow_id;
  // Tasks that share a resource and the same optional fields reuse the pod built for the first
  // of them (variables, validation, template render and merge done once), with the task's own
  // values put in. The result is the same as building each pod in full (submit_test checks);
  // false builds every pod in full.
  bool reuse_per_resource = true;
  // The nodes of a platform (pointers into Submit's `nodes`), from its merged pod template: a
  // caller that plans many workflows on the same configs and nodes remembers them, since
  // matching every node per submission costs O(nodes). Empty: computed per submission.
  using NodeList = std::shared_ptr<const std::vector<const model::Node*>>;
  std::function<Result<NodeList>(std::string_view pool, std::string_view platform,
                                 const nlohmann::ordered_json& merged_template)>
      platform_nodes;
  // A platform's setup (BuildPlatformSetup on Submit's configs), remembered by a caller that
  // plans many workflows on the same configs. Empty: built per submission.
  std::function<Result<PlatformSetupPtr>(const config::Pool& pool, std::string_view platform)>
      platform_setup;
  // The NODE_POOL configs. Pods get label gpupool.io/node-pool: the workflow's `node_pools` (each
  // name checked), else every node pool the task's platform's nodes are in (by name, `default`
  // last), so the scheduler may fall back from one to the next. Empty: no label (`default`).
  std::vector<model::NodePool> node_pools;
  // The QUEUE configs, for the workflow's `queue` (a project; see step 1 above).
  std::vector<model::Queue> queues;
};

struct PlannedTask {
  std::string group;
  std::string task;
  std::string platform;
  std::string pod_name;
  nlohmann::ordered_json pod;    // the Kubernetes Pod
  model::ResourceList requests;  // of the user container (cpu, memory, ephemeral-storage, gpu)
  int64_t sim_duration_seconds = 0;
  int sim_exit_code = 0;
};

struct SubmitPlan {
  std::string workflow_id;
  std::string name;
  std::string pool;
  std::string user;
  std::string queue;  // the tasks' gpupool.io/queue: the chosen project, else the pool
  Priority priority = Priority::kNormal;
  int64_t exec_timeout_seconds = 0;  // effective (workflow's, else the pool default)
  int64_t queue_timeout_seconds = 0;
  std::vector<PlannedTask> tasks;  // in workflow order (groups, then tasks)
  std::vector<std::string> warnings;
};

// The queues `roles` may submit workflows to (step 1 above: projects and top-level queues
// without projects, granted as POST /api/queue/<queue>/workflow), sorted. `gpupool profile` and
// the --queue error messages list them.
std::vector<std::string> SubmittableQueues(const config::ConfigSet& configs,
                                           const std::vector<std::string>& roles,
                                           const std::vector<model::Queue>& queues);

// Runs the pipeline. NotFound for an unknown pool; PermissionDenied for the queue's access;
// FailedPrecondition for maintenance; InvalidArgument for the other steps.
Result<SubmitPlan> Submit(const config::ConfigSet& configs, const std::vector<model::Node>& nodes,
                          const SubmitCaller& caller, std::string_view pool,
                          const WorkflowSpec& workflow, const SubmitOptions& options);

// "<workflow id>-<task>" made a valid Kubernetes name (lower case, '_' -> '-', <= 63 chars).
std::string PodName(std::string_view workflow_id, std::string_view task);
// A value made label-safe (<= 63 chars of [A-Za-z0-9._-], alphanumeric at both ends).
std::string LabelValue(std::string_view text);

}  // namespace gpupool::submit
