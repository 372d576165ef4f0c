#include "submit/submit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config_set.h"
#include "model/k8s.h"

namespace gpupool::submit {
namespace submit_test {

using json = nlohmann::ordered_json;
using ::testing::HasSubstr;

// Seed 000/002's heterogeneous pool with its two templates, plus a pool exercising limits.
config::ConfigSet Configs() {
  config::ConfigSet set = config::BuiltinConfigs();
  auto put = [&set](config::Kind kind, const std::string& name, const char* body) {
    Status s = config::PutConfig(set, kind, name, json::parse(body));
    if (!s.ok()) ADD_FAILURE() << name << ": " << s.ToString();
  };
  put(config::Kind::kPodTemplate, "l40s",
      R"({"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}}})");
  put(config::Kind::kPodTemplate, "a100", R"({"spec": {
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100"},
        "tolerations": [{"key": "nvidia.com/gpu.product", "operator": "Equal",
                         "value": "NVIDIA-A100", "effect": "NoSchedule"}]}})");
  put(config::Kind::kResourceValidation, "max_gpu", R"([
        {"operator": "LE", "left_operand": "{{USER_GPU}}", "right_operand": "4",
         "assert_message": "At most 4 GPUs per task, got {{USER_GPU}}"}])");
  put(config::Kind::kPool, "heterogeneous_pool", R"({
    "backend": "default", "default_platform": "l40s_platform",
    "description": "Simulation and training pool",
    "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi",
                                 "USER_STORAGE": "1Gi"},
    "common_resource_validations": ["default_cpu", "default_memory", "default_storage"],
    "common_pod_template": ["default_user", "default_ctrl"],
    "platforms": {
      "l40s_platform": {"description": "L40S platform", "host_network_allowed": false,
                        "privileged_allowed": false, "default_variables": {},
                        "resource_validations": [], "override_pod_template": ["l40s"],
                        "allowed_mounts": []},
      "a100_platform": {"description": "A100 platform", "host_network_allowed": false,
                        "privileged_allowed": false, "default_variables": {"USER_GPU": 1},
                        "resource_validations": ["max_gpu"], "override_pod_template": ["a100"],
                        "allowed_mounts": []}}})");
  put(config::Kind::kPool, "team-limits", R"({
    "backend": "default", "default_platform": "open",
    "max_exec_timeout": "8h", "default_exec_timeout": "2h",
    "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi",
                                 "USER_STORAGE": "1Gi"},
    "common_pod_template": ["default_user", "default_ctrl"],
    "platforms": {
      "open": {"host_network_allowed": true, "privileged_allowed": true,
               "allowed_mounts": ["/data"], "override_pod_template": ["l40s"]},
      "strict": {"override_pod_template": ["l40s"]}}})");
  put(config::Kind::kPodTemplate, "typo", R"({"spec": {"containers": [
        {"name": "{{USER_CONTAINER_NAME}}", "env": [{"name": "X", "value": "{{USER_CPUS}}"}]}]}})");
  put(config::Kind::kPool, "team-typo", R"({
    "backend": "default", "default_platform": "p",
    "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi",
                                 "USER_STORAGE": "1Gi"},
    "common_pod_template": ["default_user", "typo"],
    "platforms": {"p": {"override_pod_template": ["l40s"]}}})");
  put(config::Kind::kPool, "team-maint", R"({
    "backend": "default", "default_platform": "p", "enable_maintenance": true,
    "platforms": {"p": {}}})");
  put(config::Kind::kRole, "osmo-team", R"({"policies": [
        {"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/team*"]}]})");
  return set;
}

model::Node MakeNode(const std::string& name, const std::string& product, int gpus,
                     const std::string& taint_json) {
  json node = json::parse(R"({"apiVersion": "v1", "kind": "Node", "metadata": {"labels": {}},
                              "spec": {}, "status": {"allocatable": {}}})");
  node["metadata"]["name"] = name;
  node["metadata"]["labels"]["nvidia.com/gpu.product"] = product;
  if (!taint_json.empty()) node["spec"]["taints"] = json::parse(taint_json);
  node["status"]["allocatable"] = json{{"cpu", "64"},
                                       {"memory", "512Gi"},
                                       {"ephemeral-storage", "1Ti"},
                                       {"nvidia.com/gpu", std::to_string(gpus)},
                                       {"pods", "110"}};
  auto n = model::NodeFromJson(node);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  return *n;
}

std::vector<model::Node> Nodes() {
  return {MakeNode("l40s-0", "NVIDIA-L40S", 4, ""),
          MakeNode("a100-0", "NVIDIA-A100", 8,
                   R"([{"key": "nvidia.com/gpu.product", "value": "NVIDIA-A100",
                        "effect": "NoSchedule"}])")};
}

WorkflowSpec Parse(const std::string& text) {
  auto wf = ParseWorkflow(text, "wf.yaml");
  EXPECT_TRUE(wf.ok()) << wf.status().ToString();
  return wf.ok() ? *wf : WorkflowSpec{};
}

const SubmitCaller kAdmin{"alice", {"osmo-admin"}};

constexpr char kTwoPlatforms[] = R"(workflow:
  name: hetero
  resources:
    default: {cpu: 2, memory: 4Gi, storage: 10Gi}
    big: {cpu: 8, gpu: 2, memory: 64Gi, storage: 100Gi, platform: a100_platform}
  groups:
  - name: g
    tasks:
    - {name: sim, image: "isaac:1"}
    - {name: train, image: "torch:2", resource: big, command: [python, t.py]}
)";

TEST(SubmitTest, PodPerPlatformOfTheHeterogeneousPool) {
  auto plan = Submit(Configs(), Nodes(), kAdmin, "heterogeneous_pool", Parse(kTwoPlatforms),
                     SubmitOptions{"hetero-1"});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->tasks.size(), 2u);

  const json& sim = plan->tasks[0].pod;
  EXPECT_EQ(plan->tasks[0].platform, "l40s_platform");
  EXPECT_EQ(sim["metadata"]["name"], "hetero-1-sim");
  EXPECT_EQ(sim["spec"]["nodeSelector"], json({{"nvidia.com/gpu.product", "NVIDIA-L40S"}}));
  EXPECT_FALSE(sim["spec"].contains("tolerations"));
  const json& sim_c = sim["spec"]["containers"][0];
  EXPECT_EQ(sim_c["name"], "sim");
  EXPECT_EQ(sim_c["image"], "isaac:1");
  EXPECT_EQ(sim_c["resources"]["requests"]["cpu"], "2");
  EXPECT_EQ(sim_c["resources"]["requests"]["memory"], "4Gi");
  EXPECT_EQ(sim_c["resources"]["limits"]["ephemeral-storage"], "10Gi");
  EXPECT_EQ(sim["spec"]["containers"][1]["name"], "osmo-ctrl");
  EXPECT_EQ(sim["spec"]["priorityClassName"], "normal");
  const json& labels = sim["metadata"]["labels"];
  EXPECT_EQ(labels["gpupool.io/workflow"], "hetero-1");
  EXPECT_EQ(labels["gpupool.io/group"], "g");
  EXPECT_EQ(labels["gpupool.io/task"], "sim");
  EXPECT_EQ(labels["gpupool.io/pool"], "heterogeneous_pool");
  EXPECT_EQ(labels["gpupool.io/platform"], "l40s_platform");
  EXPECT_EQ(labels["gpupool.io/queue"], "heterogeneous_pool");
  EXPECT_EQ(labels["gpupool.io/gang"], "hetero-1-g");
  EXPECT_EQ(labels["gpupool.io/gang-min"], "2");

  const json& train = plan->tasks[1].pod;
  EXPECT_EQ(plan->tasks[1].platform, "a100_platform");
  EXPECT_EQ(train["spec"]["nodeSelector"], json({{"nvidia.com/gpu.product", "NVIDIA-A100"}}));
  ASSERT_EQ(train["spec"]["tolerations"].size(), 1u);
  EXPECT_EQ(train["spec"]["tolerations"][0]["value"], "NVIDIA-A100");
  const json& train_c = train["spec"]["containers"][0];
  EXPECT_EQ(train_c["resources"]["limits"]["nvidia.com/gpu"], "2");
  EXPECT_EQ(train_c["command"], json({"python", "t.py"}));
  EXPECT_EQ(plan->tasks[1].requests.at("nvidia.com/gpu").Value(), 2);
}

// Seed 001: platforms are optional. A pool without any routes tasks to its implicit platform
// (its common templates and validations only); naming a platform there is refused.
TEST(SubmitTest, PoolWithoutPlatforms) {
  config::ConfigSet set = Configs();
  ASSERT_TRUE(config::PutConfig(set, config::Kind::kPool, "team-plain", json::parse(R"({
    "backend": "default",
    "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi",
                                 "USER_STORAGE": "1Gi"},
    "common_resource_validations": ["default_cpu", "max_gpu"],
    "common_pod_template": ["default_user", "default_ctrl", "l40s"]})"))
                  .ok());
  auto plan = Submit(set, Nodes(), kAdmin, "team-plain", Parse(R"(workflow:
  name: plain
  resources:
    default: {cpu: 2, gpu: 1, memory: 4Gi, storage: 10Gi}
  tasks:
  - {name: t, image: "torch:2"}
)"),
                     SubmitOptions{"plain-1"});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->tasks.size(), 1u);
  EXPECT_EQ(plan->tasks[0].platform, "");
  const json& pod = plan->tasks[0].pod;
  EXPECT_EQ(pod["spec"]["nodeSelector"], json({{"nvidia.com/gpu.product", "NVIDIA-L40S"}}));
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "1");
  EXPECT_EQ(pod["metadata"]["labels"]["gpupool.io/pool"], "team-plain");

  // The pool's common validations still apply.
  auto too_many = Submit(set, Nodes(), kAdmin, "team-plain", Parse(R"(workflow:
  name: plain
  resources:
    default: {cpu: 2, gpu: 6, memory: 4Gi, storage: 10Gi}
  tasks:
  - {name: t, image: "torch:2"}
)"),
                         SubmitOptions{"plain-2"});
  ASSERT_FALSE(too_many.ok());
  EXPECT_THAT(too_many.status().message(), HasSubstr("At most 4 GPUs per task, got 6"));

  auto named = Submit(set, Nodes(), kAdmin, "team-plain", Parse(R"(workflow:
  name: plain
  resources:
    default: {cpu: 2, memory: 4Gi, storage: 10Gi, platform: a100}
  tasks:
  - {name: t, image: "torch:2"}
)"),
                      SubmitOptions{"plain-3"});
  ASSERT_FALSE(named.ok());
  EXPECT_THAT(named.status().message(), HasSubstr("the pool's platforms: none"));
}

// gpupool.io/node-pool: the workflow's choice, else the node pools of the platform's nodes;
// nothing without NODE_POOL configs; unknown names refused with the field and a did-you-mean.
TEST(SubmitTest, NodePoolsOfThePods) {
  model::NodePool l40s{
      .name = "L40S", .label_key = "nvidia.com/gpu.product", .label_value = "NVIDIA-L40S"};
  std::vector<model::Node> nodes = Nodes();
  nodes.push_back(MakeNode("l40s-1", "NVIDIA-L40S", 4, ""));
  struct Case {
    std::string name;
    std::vector<model::NodePool> node_pools;
    std::vector<std::string> chosen;
    std::string sim_label;    // of the task on l40s_platform; "-" = no label
    std::string train_label;  // of the task on a100_platform
    std::string error;
    bool node_pools_on = true;  // BACKEND default's enable_node_pools
  };
  std::vector<Case> cases = {
      {"no node pools: no label", {}, {}, "-", "-", ""},
      {"switched off: no label", {l40s}, {}, "-", "-", "", false},
      {"switched off: a choice is refused",
       {l40s},
       {"L40S"},
       "",
       "",
       "workflow.node_pools: node pools are off in this cluster (BACKEND default: "
       "enable_node_pools false), every node is in the default node pool; submit without "
       "--node-pools or the workflow's node_pools",
       false},
      {"platform nodes in L40S; a100 in default", {l40s}, {}, "L40S", "default", ""},
      {"chosen, in order", {l40s}, {"default", "L40S"}, "default,L40S", "default,L40S", ""},
      {"unknown",
       {l40s},
       {"L40s"},
       "",
       "",
       "workflow.node_pools[0]: node pool \"L40s\" does not exist (did you mean \"L40S\"?); "
       "node pools: L40S, default"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    WorkflowSpec wf = Parse(kTwoPlatforms);
    wf.node_pools = c.chosen;
    SubmitOptions options{"np-1"};
    options.node_pools = c.node_pools;
    config::ConfigSet configs = Configs();
    if (!c.node_pools_on) {
      ASSERT_TRUE(config::PutConfig(configs, config::Kind::kBackend, "default",
                                    json::parse(R"({"enable_node_pools": false})"))
                      .ok());
    }
    auto plan = Submit(configs, nodes, kAdmin, "heterogeneous_pool", wf, options);
    if (!c.error.empty()) {
      ASSERT_FALSE(plan.ok());
      EXPECT_EQ(plan.status().message(), c.error);
      continue;
    }
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    auto label = [](const json& pod) {
      const json& labels = pod["metadata"]["labels"];
      return labels.contains("gpupool.io/node-pool")
                 ? labels["gpupool.io/node-pool"].get<std::string>()
                 : std::string("-");
    };
    EXPECT_EQ(label(plan->tasks[0].pod), c.sim_label);
    EXPECT_EQ(label(plan->tasks[1].pod), c.train_label);
  }
}

// Without the workflow's choice: the platform's default_node_pools, else the pool's, else the
// node pools of the platform's nodes; the workflow's choice wins over both.
TEST(SubmitTest, DefaultNodePoolsOfPoolAndPlatform) {
  model::NodePool l40s{
      .name = "L40S", .label_key = "nvidia.com/gpu.product", .label_value = "NVIDIA-L40S"};
  struct Case {
    std::string name;
    std::vector<std::string> pool_defaults, a100_defaults, chosen;
    std::string sim_label, train_label, error;
  };
  std::vector<Case> cases = {
      {"none: the nodes'", {}, {}, {}, "L40S", "default", ""},
      {"the pool's", {"default", "L40S"}, {}, {}, "default,L40S", "default,L40S", ""},
      {"the platform's over the pool's",
       {"default", "L40S"},
       {"L40S"},
       {},
       "default,L40S",
       "L40S",
       ""},
      {"the workflow's over both",
       {"default"},
       {"L40S"},
       {"L40S", "default"},
       "L40S,default",
       "L40S,default",
       ""},
      {"a default deleted since",
       {"L4OS"},
       {},
       {},
       "",
       "",
       "pool \"heterogeneous_pool\": default_node_pools[0]: node pool \"L4OS\" does not exist "
       "(did you mean \"L40S\"?); node pools: L40S, default"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    config::ConfigSet configs = Configs();
    config::Pool& pool = configs.pools.at("heterogeneous_pool");
    pool.default_node_pools = c.pool_defaults;
    for (config::Platform& p : pool.platforms) {
      if (p.name == "a100_platform") p.default_node_pools = c.a100_defaults;
    }
    WorkflowSpec wf = Parse(kTwoPlatforms);
    wf.node_pools = c.chosen;
    SubmitOptions options{"np-1"};
    options.node_pools = {l40s};
    auto plan = Submit(configs, Nodes(), kAdmin, "heterogeneous_pool", wf, options);
    if (!c.error.empty()) {
      ASSERT_FALSE(plan.ok());
      EXPECT_EQ(plan.status().message(), c.error);
      continue;
    }
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->tasks[0].pod["metadata"]["labels"]["gpupool.io/node-pool"], c.sim_label);
    EXPECT_EQ(plan->tasks[1].pod["metadata"]["labels"]["gpupool.io/node-pool"], c.train_label);
  }
}

TEST(SubmitTest, NodePoolListsParse) {
  EXPECT_EQ(*ParseNodePoolList(" A100-80 , default"),
            (std::vector<std::string>{"A100-80", "default"}));
  EXPECT_FALSE(ParseNodePoolList("a,,b").ok());
  EXPECT_FALSE(ParseNodePoolList("a,a").ok());
  EXPECT_FALSE(ParseNodePoolList("").ok());
  auto listed = ParseWorkflow(
      "workflow:\n  name: w\n  node_pools: [a, b]\n  tasks:\n"
      "  - {name: t, image: i}\n",
      "wf.yaml");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->node_pools, (std::vector<std::string>{"a", "b"}));
  auto twice = ParseWorkflow(
      "workflow:\n  name: w\n  node_pools: [a, a]\n  tasks:\n"
      "  - {name: t, image: i}\n",
      "wf.yaml");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.status().message(),
            "wf.yaml:3:19: workflow.node_pools[1]: node pool \"a\" named twice");
}

// workflow.queue / --queue: a project the roles allow, counted in the pods' gpupool.io/queue;
// without one the pool's own queue. Unknown, department and not-granted queues are refused.
// Over 80 lines: one scenario whose steps build on each other, told in order.
TEST(SubmitTest, QueueOfTheWorkflow) {
  config::ConfigSet configs = Configs();
  // osmo-rnd may submit to every queue named rnd-*, by policy; osmo-legacy to ml-a, by path.
  Status put = config::PutConfig(configs, config::Kind::kRole, "osmo-rnd", json::parse(R"({
      "policies": [{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/team*"]},
                   {"effect": "Allow", "actions": ["workflow:Create"],
                    "resources": ["queue/rnd-*"]}]})"));
  ASSERT_TRUE(put.ok()) << put.ToString();
  put = config::PutConfig(configs, config::Kind::kRole, "osmo-legacy", json::parse(R"({
      "actions": [{"base": "http", "path": "api/pool/team*", "method": "*"},
                  {"base": "http", "path": "/api/queue/ml-a/workflow", "method": "Post"}]})"));
  ASSERT_TRUE(put.ok()) << put.ToString();
  std::vector<model::Queue> queues = {{.name = "rnd"},
                                      {.name = "rnd-train", .parent = "rnd"},
                                      {.name = "rnd-build", .parent = "rnd"},
                                      {.name = "ml"},
                                      {.name = "ml-a", .parent = "ml"},
                                      {.name = "solo"}};
  struct Case {
    std::string name;
    std::vector<std::string> roles;
    std::string queue;   // the workflow's
    std::string origin;  // "" = the file's field
    std::string label;   // expected gpupool.io/queue; "" = refused
    std::string error;
  };
  const std::string kYours =
      "; queues you may submit to: rnd-build, rnd-train (or none: pool \"team-limits\"'s own "
      "quota)";
  std::vector<Case> cases = {
      {"none: the pool's", {"osmo-rnd"}, "", "", "team-limits", ""},
      {"the pool's own, named", {"osmo-rnd"}, "team-limits", "", "team-limits", ""},
      {"a granted project", {"osmo-rnd"}, "rnd-train", "", "rnd-train", ""},
      {"granted by a legacy path", {"osmo-legacy"}, "ml-a", "--queue", "ml-a", ""},
      {"admin: every project", {"osmo-admin"}, "ml-a", "", "ml-a", ""},
      {"admin: a top-level queue without projects", {"osmo-admin"}, "solo", "", "solo", ""},
      {"unknown, close to a project",
       {"osmo-rnd"},
       "rnd-trian",
       "",
       "",
       "wf.yaml:3:3: workflow.queue: queue \"rnd-trian\" does not exist (did you mean "
       "\"rnd-train\"?)" +
           kYours},
      {"unknown, from the flag",
       {"osmo-rnd"},
       "rnd-x",
       "--queue",
       "",
       "--queue: queue \"rnd-x\" does not exist" + kYours},
      {"a department",
       {"osmo-admin"},
       "rnd",
       "",
       "",
       "wf.yaml:3:3: workflow.queue: queue \"rnd\" is a department; submit to one of its "
       "projects (rnd-build, rnd-train)"},
      {"not granted (deny by default)",
       {"osmo-rnd"},
       "ml-a",
       "--queue",
       "",
       "access denied: user \"alice\" with roles osmo-rnd may not submit to queue \"ml-a\" "
       "(--queue): POST /api/queue/ml-a/workflow is not allowed for roles osmo-rnd, "
       "osmo-default" +
           kYours},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string text = "workflow:\n  name: w\n";
    if (!c.queue.empty() && c.origin.empty()) text += "  queue: " + c.queue + "\n";
    text += "  tasks:\n  - {name: t, image: i}\n";
    WorkflowSpec wf = Parse(text);
    if (!c.origin.empty()) {
      wf.queue = c.queue;
      wf.queue_origin = c.origin;
    }
    SubmitOptions options{"q-1"};
    options.queues = queues;
    auto plan =
        Submit(configs, Nodes(), SubmitCaller{"alice", c.roles}, "team-limits", wf, options);
    if (c.label.empty()) {
      ASSERT_FALSE(plan.ok());
      EXPECT_EQ(plan.status().message(), c.error);
      continue;
    }
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->queue, c.label);
    EXPECT_EQ(plan->tasks[0].pod["metadata"]["labels"]["gpupool.io/queue"], c.label);
  }
  auto bad = ParseWorkflow(
      "workflow:\n  name: w\n  queue: [a]\n  tasks:\n  - {name: t, image: i}\n", "wf.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("wf.yaml:3:3: workflow.queue: expected a string"));
}

TEST(SubmitTest, VariablePrecedence) {
  // a100_platform sets USER_GPU 1 over the pool's 0; the task's own value wins over both.
  auto plan = Submit(Configs(), Nodes(), kAdmin, "heterogeneous_pool", Parse(R"(workflow:
  name: v
  resources:
    default: {platform: a100_platform}
    mine: {platform: a100_platform, gpu: 3}
  tasks:
  - {name: a, image: i}
  - {name: b, image: i, resource: mine}
)"),
                     SubmitOptions{"v-1"});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->tasks[0].pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
            "1");
  EXPECT_EQ(plan->tasks[0].pod["spec"]["containers"][0]["resources"]["limits"]["cpu"], "1");
  EXPECT_EQ(plan->tasks[1].pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
            "3");
}

TEST(SubmitTest, TimeoutsDefaultFromThePool) {
  auto plan =
      Submit(Configs(), Nodes(), kAdmin, "team-limits",
             Parse("workflow:\n  name: t\n  tasks: [{name: a, image: i}]\n"), SubmitOptions{"t-1"});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->exec_timeout_seconds, 2 * 3600);
}

// The pool-access decision is the service's (service_test.cc:
// SubmissionAccessIsTheServicesDecision), taken once before Submit: Submit plans for whoever its
// caller admitted.
TEST(SubmitTest, LeavesThePoolAccessDecisionToItsCaller) {
  auto plan =
      Submit(Configs(), Nodes(), {"bob", {"osmo-team"}}, "heterogeneous_pool",
             Parse("workflow:\n  name: w\n  tasks: [{name: a, image: i}]\n"), SubmitOptions{"w-1"});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->pool, "heterogeneous_pool");
}

// Over 80 lines only by its table of cases, one per row.
TEST(SubmitTest, EachStepNamesItself) {
  struct Case {
    std::string name;
    std::string pool;
    SubmitCaller caller;
    std::string workflow;
    StatusCode code;
    std::vector<std::string> expected;
  };
  const std::string simple = "workflow:\n  name: w\n  tasks: [{name: a, image: i}]\n";
  const std::vector<Case> cases = {
      {"maintenance",
       "team-maint",
       {"bob", {"osmo-team"}},
       simple,
       StatusCode::kFailedPrecondition,
       {"pool in maintenance", "undergoing maintenance"}},
      {"unknown pool", "nope", kAdmin, simple, StatusCode::kNotFound, {"pool \"nope\""}},
      {"unknown platform",
       "heterogeneous_pool",
       kAdmin,
       "workflow:\n  name: w\n  resources:\n    default: {platform: h100_platform}\n  tasks: "
       "[{name: a, image: i}]\n",
       StatusCode::kInvalidArgument,
       {"unknown platform", "h100_platform", "l40s_platform, a100_platform"}},
      {"static validation",
       "heterogeneous_pool",
       kAdmin,
       "workflow:\n  name: w\n  resources:\n    default: {platform: a100_platform, gpu: 6}\n  "
       "tasks: [{name: a, image: i}]\n",
       StatusCode::kInvalidArgument,
       {"validation failed", "task a", "At most 4 GPUs per task, got 6"}},
      {"node validation",
       "heterogeneous_pool",
       kAdmin,
       "workflow:\n  name: w\n  resources:\n    default: {cpu: 100}\n  tasks: [{name: a, image: "
       "i}]\n",
       StatusCode::kInvalidArgument,
       {"validation failed", "exceeds the node capacity", "l40s-0"}},
      {"undefined variable",
       "team-typo",
       kAdmin,
       simple,
       StatusCode::kInvalidArgument,
       {"undefined variable", "\"typo\"", "spec.containers[0].env[0].value", "USER_CPUS"}},
      {"timeout above max",
       "team-limits",
       kAdmin,
       "workflow:\n  name: w\n  timeout: {exec_timeout: 10h}\n  tasks: [{name: a, image: i}]\n",
       StatusCode::kInvalidArgument,
       {"timeout above pool maximum", "max_exec_timeout 8h"}},
      {"privileged",
       "team-limits",
       kAdmin,
       "workflow:\n  name: w\n  resources:\n    default: {platform: strict}\n  tasks: [{name: a, "
       "image: i, privileged: true}]\n",
       StatusCode::kInvalidArgument,
       {"not allowed by platform", "privileged", "strict"}},
      {"host network",
       "team-limits",
       kAdmin,
       "workflow:\n  name: w\n  resources:\n    default: {platform: strict}\n  tasks: [{name: a, "
       "image: i, hostNetwork: true}]\n",
       StatusCode::kInvalidArgument,
       {"not allowed by platform", "hostNetwork"}},
      {"mount",
       "team-limits",
       kAdmin,
       "workflow:\n  name: w\n  tasks: [{name: a, image: i, volumeMounts: [\"/etc:/x\"]}]\n",
       StatusCode::kInvalidArgument,
       {"not allowed by platform", "/etc", "allowed_mounts: /data"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto plan =
        Submit(Configs(), Nodes(), c.caller, c.pool, Parse(c.workflow), SubmitOptions{"w-1"});
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), c.code) << plan.status().ToString();
    for (const auto& s : c.expected) EXPECT_THAT(plan.status().message(), HasSubstr(s));
  }
}

TEST(SubmitTest, AllowedThingsPass) {
  auto plan = Submit(Configs(), Nodes(), {"bob", {"osmo-team"}}, "team-limits", Parse(R"(workflow:
  name: ok
  tasks:
  - {name: a, image: i, privileged: true, hostNetwork: true, volumeMounts: ["/data/x:/x"]}
)"),
                     SubmitOptions{"ok-1"});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const json& spec = plan->tasks[0].pod["spec"];
  EXPECT_EQ(spec["hostNetwork"], true);
  EXPECT_EQ(spec["containers"][0]["securityContext"]["privileged"], true);
  EXPECT_EQ(spec["volumes"][0]["hostPath"]["path"], "/data/x");
  EXPECT_EQ(spec["containers"][0]["volumeMounts"][0]["mountPath"], "/x");
  EXPECT_FALSE(spec["containers"][0]["volumeMounts"][0].contains("hostPath"));
}

// The per-resource reuse gives exactly the pods of the full pipeline.
TEST(SubmitTest, ReuseGivesTheSamePods) {
  const std::vector<std::string> workflows = {
      kTwoPlatforms,
      R"(workflow:
  name: many
  resources:
    default: {cpu: 2, gpu: 1, memory: 8Gi}
    big: {cpu: 8, gpu: 2, memory: 64Gi, platform: a100_platform, nodesExcluded: [old-a100]}
  groups:
  - name: g1
    tasks:
    - {name: a, image: i1, command: [python, a.py], env: {X: "1"}}
    - {name: b, image: i2, command: [python, b.py], args: [--x], env: {X: "2", Y: y}}
    - {name: c, image: i3}
    - {name: d, image: i4, resource: big, command: [torchrun]}
    - {name: e, image: i5, resource: big, command: [torchrun, e.py]}
  - name: g2
    tasks:
    - {name: f_1, image: i6, command: [sh]}
    - {name: G-2, image: i7, command: [sh, -c, "echo {{uuid}}"]}
)",
  };
  for (const std::string& text : workflows) {
    SCOPED_TRACE(text.substr(0, 40));
    WorkflowSpec wf = Parse(text);
    SubmitOptions fast{"wf-7"};
    SubmitOptions full{"wf-7"};
    full.reuse_per_resource = false;
    auto a = Submit(Configs(), Nodes(), kAdmin, "heterogeneous_pool", wf, fast);
    auto b = Submit(Configs(), Nodes(), kAdmin, "heterogeneous_pool", wf, full);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    ASSERT_EQ(a->tasks.size(), b->tasks.size());
    for (size_t i = 0; i < a->tasks.size(); ++i) {
      SCOPED_TRACE(a->tasks[i].task);
      EXPECT_EQ(a->tasks[i].pod.dump(), b->tasks[i].pod.dump());
      EXPECT_EQ(a->tasks[i].requests, b->tasks[i].requests);
    }
  }
  // Mounts and flags with a platform that allows them.
  WorkflowSpec wf = Parse(R"(workflow:
  name: m
  tasks:
  - {name: a, image: i, privileged: true, volumeMounts: ["/data/a:/a"]}
  - {name: b, image: i, privileged: true, volumeMounts: ["/data/b:/b"]}
  - {name: c, image: i, privileged: true, volumeMounts: ["/data/c:/c", "/data/d:/d"]}
)");
  SubmitOptions full{"m-1"};
  full.reuse_per_resource = false;
  auto a = Submit(Configs(), Nodes(), kAdmin, "team-limits", wf, SubmitOptions{"m-1"});
  auto b = Submit(Configs(), Nodes(), kAdmin, "team-limits", wf, full);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  for (size_t i = 0; i < a->tasks.size(); ++i) {
    EXPECT_EQ(a->tasks[i].pod.dump(), b->tasks[i].pod.dump());
  }
  EXPECT_EQ(a->tasks[1].pod["spec"]["volumes"][0]["hostPath"]["path"], "/data/b");
}

// A caller's remembered platform setups give the pods a fresh one gives; the caller's setup is
// the one used (a setup with its template changed shows in the pods).
TEST(SubmitTest, PlatformSetupFromTheCallerIsUsed) {
  WorkflowSpec wf = Parse(R"(workflow:
  name: s
  resources:
    big: {cpu: 4, memory: 8Gi, gpu: 1}
  tasks:
  - {name: a, image: i1}
  - {name: b, image: i2, resource: big}
)");
  std::map<std::string, PlatformSetupPtr> remembered;
  int built = 0;
  SubmitOptions cached{"s-1"};
  cached.platform_setup = [&](const config::Pool& pool, std::string_view platform) {
    std::string key = pool.name + "/" + std::string(platform);
    if (!remembered.count(key)) {
      ++built;
      auto setup = BuildPlatformSetup(pool, platform, Configs());
      if (!setup.ok()) return setup;
      remembered[key] = *setup;
    }
    return Result<PlatformSetupPtr>(remembered[key]);
  };
  auto fresh = Submit(Configs(), Nodes(), kAdmin, "heterogeneous_pool", wf, SubmitOptions{"s-1"});
  auto first = Submit(Configs(), Nodes(), kAdmin, "heterogeneous_pool", wf, cached);
  auto second = Submit(Configs(), Nodes(), kAdmin, "heterogeneous_pool", wf, cached);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(built, static_cast<int>(remembered.size()));  // once per platform, not per submission
  ASSERT_EQ(fresh->tasks.size(), 2u);
  for (size_t i = 0; i < fresh->tasks.size(); ++i) {
    EXPECT_EQ(first->tasks[i].pod.dump(), fresh->tasks[i].pod.dump());
    EXPECT_EQ(second->tasks[i].pod.dump(), fresh->tasks[i].pod.dump());
  }
  // The remembered setup is what the pods come from.
  for (auto& [key, setup] : remembered) {
    auto changed = std::make_shared<PlatformSetup>(*setup);
    changed->merged_template["metadata"]["annotations"]["remembered"] = "yes";
    setup = changed;
  }
  auto third = Submit(Configs(), Nodes(), kAdmin, "heterogeneous_pool", wf, cached);
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_EQ(third->tasks[0].pod["metadata"]["annotations"]["remembered"], "yes");
}

TEST(SubmitTest, Names) {
  EXPECT_EQ(PodName("Sim_Run-1", "Train_Big"), "sim-run-1-train-big");
  EXPECT_EQ(LabelValue("a b/c"), "a-b-c");
  EXPECT_EQ(PodName(std::string(80, 'a'), "t").size(), 63u);
}

}  // namespace submit_test
}  // namespace gpupool::submit
