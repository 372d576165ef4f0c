#include "config/membership.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "codec/json_reader.h"
#include "config/merge.h"
#include "config/test_util.h"
#include "model/match.h"
#include "model/node_import.h"

namespace gpupool::config {
namespace membership_test {

using testing::J;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void LoadFile(ConfigSet& set, Kind kind, const std::string& path) {
  Result<Json> doc = codec::ParseJson(ReadText(path), path);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  auto bodies = SplitConfigFile(kind, *doc, std::nullopt);
  ASSERT_TRUE(bodies.ok()) << bodies.status().ToString();
  for (const NamedBody& nb : *bodies) {
    Status s = PutConfig(set, kind, nb.name, nb.body);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
}

// Built-ins + seed 000's l40s/a100 templates (a100 corrected) + examples/osmo (templates,
// validations, roles, the backends seed 001 names) + the pools of
// seeds 000, 001 and (optionally) 002's Jetson inference pool.
ConfigSet SeedSet(bool seed002_inference) {
  const std::string src = GPUPOOL_SOURCE_DIR;
  ConfigSet set = BuiltinConfigs();
  EXPECT_TRUE(
      PutConfig(set, Kind::kPodTemplate, "l40s",
                J(R"({"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L40S"}}})"))
          .ok());
  EXPECT_TRUE(PutConfig(set, Kind::kPodTemplate, "a100", J(R"({"spec": {
      "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100"},
      "tolerations": [{"key": "nvidia.com/gpu.product", "operator": "Equal",
                       "value": "NVIDIA-A100", "effect": "NoSchedule"}]}})"))
                  .ok());
  LoadFile(set, Kind::kPodTemplate, src + "/examples/osmo/pod_templates.json");
  LoadFile(set, Kind::kResourceValidation, src + "/examples/osmo/resource_validations.json");
  LoadFile(set, Kind::kRole, src + "/examples/osmo/roles.json");
  LoadFile(set, Kind::kBackend, src + "/examples/osmo/backends.json");
  const std::string td = src + "/src/config/testdata/";
  Result<Json> doc = codec::ParseJson(ReadText(td + "seed000/platform_config.json"), "p.json");
  EXPECT_TRUE(doc.ok());
  auto bodies = SplitConfigFile(Kind::kPool, *doc, "shared_simulation_training_pool");
  EXPECT_TRUE(bodies.ok());
  EXPECT_TRUE(PutConfig(set, Kind::kPool, (*bodies)[0].name, (*bodies)[0].body).ok());
  LoadFile(set, Kind::kPool, td + "seed002/platform_config.json");
  for (const char* f :
       {"robotics_training", "robotics_simulation", "robotics_inference", "team_development"}) {
    LoadFile(set, Kind::kPool, td + "seed001/" + f + ".json");
  }
  if (seed002_inference) LoadFile(set, Kind::kPool, td + "seed002/robotics_inference.json");
  return set;
}

std::vector<model::Node> SeedNodes() {
  std::string path = std::string(GPUPOOL_SOURCE_DIR) + "/src/config/testdata/nodes.json";
  Result<std::vector<model::Node>> nodes = model::ParseNodes(ReadText(path), "nodes.json");
  EXPECT_TRUE(nodes.ok()) << nodes.status().ToString();
  return nodes.ok() ? *nodes : std::vector<model::Node>{};
}

TEST(MembershipTest, ExamplesResolveAgainstEverySeedPool) {
  ConfigSet set = SeedSet(false);
  Status s = ValidateReferences(set);
  EXPECT_TRUE(s.ok()) << s.ToString();
  // Every platform's template merges and renders with the pool's variables.
  for (const auto& [name, pool] : set.pools) {
    for (const Platform& p : pool.platforms) {
      SCOPED_TRACE(name + "/" + p.name);
      Result<Json> merged = PlatformTemplate(pool, p.name, set);
      ASSERT_TRUE(merged.ok()) << merged.status().ToString();
      TaskContext task;
      task.container_name = "train";
      Result<VariableMap> vars = ResolveVariables(pool, &p, {}, task);
      ASSERT_TRUE(vars.ok());
      Result<Json> rendered =
          RenderPlatformTemplate(*merged, PlatformTemplateNames(pool, p), set, *vars);
      EXPECT_TRUE(rendered.ok()) << rendered.status().ToString();
    }
  }
}

TEST(MembershipTest, SeedPoolsOverRealisticNodes) {
  ConfigSet set = SeedSet(false);
  std::vector<model::Node> nodes = SeedNodes();
  ASSERT_EQ(nodes.size(), 11u);
  Result<std::vector<NodeMembership>> got = ComputeMembership(set, nodes);
  ASSERT_TRUE(got.ok()) << got.status().ToString();

  struct Case {
    std::string node;
    std::vector<std::string> want;  // "pool/platform", sorted
    NodeType type;
  };
  std::vector<Case> cases = {
      {"cpu-1",
       {"default/default", "robotics-inference/cpu-platform", "team-development/cpu-only"},
       NodeType::kShared},
      {"h100-1",
       {"robotics-training/h100-platform", "team-development/small-gpu"},
       NodeType::kShared},
      {"a100-1",
       {"robotics-training/a100-platform", "team-development/small-gpu"},
       NodeType::kShared},
      // The seed's A100 taint (nvidia.com/gpu.product=NVIDIA-A100) is tolerated only by the
      // seed's own a100 template.
      {"a100-seed",
       {"heterogeneous_pool/a100_platform", "shared_simulation_training_pool/a100_platform"},
       NodeType::kShared},
      // arm64: the gb200 override replaces default_amd64's kubernetes.io/arch.
      {"gb200-1", {"robotics-training/gb200-platform"}, NodeType::kReserved},
      {"l40s-1",
       {"default/default", "heterogeneous_pool/l40s_platform", "robotics-simulation/l40s-platform",
        "shared_simulation_training_pool/l40s_platform", "team-development/small-gpu"},
       NodeType::kShared},
      {"l40-1",
       {"robotics-simulation/l40-platform", "team-development/small-gpu"},
       NodeType::kShared},
      {"t4-1", {"robotics-inference/t4-platform", "team-development/small-gpu"}, NodeType::kShared},
      {"thor-1", {}, NodeType::kUnused},
      // PreferNoSchedule taints do not keep a node out of a platform.
      {"cpu-prefer",
       {"default/default", "robotics-inference/cpu-platform", "team-development/cpu-only"},
       NodeType::kShared},
      {"spare", {}, NodeType::kUnused},
  };
  ASSERT_EQ(got->size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(c.node);
    const NodeMembership& m = (*got)[i];
    EXPECT_EQ(m.node, c.node);
    std::vector<std::string> names;
    for (const PoolPlatform& pp : m.memberships) names.push_back(pp.pool + "/" + pp.platform);
    EXPECT_EQ(names, c.want);
    EXPECT_EQ(m.type, c.type) << NodeTypeName(m.type);
  }
}

// gpupool.io/backend keeps a node to one backend's pools; unlabelled nodes serve every backend.
TEST(MembershipTest, BackendLabelScopesNodes) {
  ConfigSet set = SeedSet(false);
  std::vector<model::Node> nodes = SeedNodes();
  for (model::Node& node : nodes) {
    if (node.name == "h100-1") node.labels[std::string(kBackendLabel)] = "gpu-cluster-01";
    if (node.name == "l40s-1") node.labels[std::string(kBackendLabel)] = "graphics-cluster-01";
    if (node.name == "t4-1") node.labels[std::string(kBackendLabel)] = "nowhere";
  }
  Result<std::vector<NodeMembership>> got = ComputeMembership(set, nodes);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  std::map<std::string, std::vector<std::string>> want = {
      {"h100-1", {"robotics-training/h100-platform"}},
      {"l40s-1", {"robotics-simulation/l40s-platform"}},
      {"t4-1", {}},
      // Unlabelled: as before, pools of every backend.
      {"a100-1", {"robotics-training/a100-platform", "team-development/small-gpu"}},
  };
  for (const NodeMembership& m : *got) {
    if (!want.contains(m.node)) continue;
    std::vector<std::string> names;
    for (const PoolPlatform& pp : m.memberships) names.push_back(pp.pool + "/" + pp.platform);
    EXPECT_EQ(names, want[m.node]) << m.node;
  }
  const Pool& training = set.pools.at("robotics-training");
  auto h100 = PlatformNodes(set, training, "h100-platform", nodes);
  ASSERT_TRUE(h100.ok());
  ASSERT_EQ(h100->size(), 1u);
  EXPECT_EQ((*h100)[0]->name, "h100-1");
  auto dev = PlatformNodes(set, set.pools.at("team-development"), "small-gpu", nodes);
  ASSERT_TRUE(dev.ok());
  for (const model::Node* node : *dev) EXPECT_NE(node->name, "h100-1");
}

// A pool without platforms: its nodes are those its common templates select (platform "").
TEST(MembershipTest, PoolWithoutPlatforms) {
  ConfigSet set = SeedSet(false);
  ASSERT_TRUE(PutConfig(set, Kind::kPool, "plain", J(R"({"backend": "default",
      "common_pod_template": ["default_user", "default_ctrl", "l40s"]})"))
                  .ok());
  std::vector<model::Node> nodes = SeedNodes();
  Result<std::vector<NodeMembership>> got = ComputeMembership(set, nodes);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  for (const NodeMembership& m : *got) {
    bool plain = std::find(m.memberships.begin(), m.memberships.end(), PoolPlatform{"plain", ""}) !=
                 m.memberships.end();
    EXPECT_EQ(plain, m.node == "l40s-1") << m.node;
  }
  auto listed = PlatformNodes(set, set.pools.at("plain"), "", nodes);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(PlatformNodes(set, set.pools.at("plain"), "x", nodes).status().code(),
            StatusCode::kNotFound);
}

// The scheduler's side of the same rule: the requirement ScopePodToBackend adds, matched with
// Kubernetes' node-affinity semantics.
TEST(MembershipTest, ScopePodToBackend) {
  model::Node plain, gpu, dev;
  gpu.labels[std::string(kBackendLabel)] = "gpu-cluster-01";
  dev.labels[std::string(kBackendLabel)] = "dev-cluster-01";
  const std::set<std::string> backends = {"dev-cluster-01", "gpu-cluster-01"};
  model::NodeSelectorTerm zone{{{"zone", model::SelectorOperator::kExists, {}}}, {}};
  plain.labels["zone"] = gpu.labels["zone"] = dev.labels["zone"] = "a";
  struct Case {
    std::string name;
    std::optional<std::vector<model::NodeSelectorTerm>> required;
    std::string backend;
    std::set<std::string> node_backends;
    bool plain, gpu, dev;  // matches
  };
  std::vector<Case> cases = {
      {"default backend, no affinity", std::nullopt, "default", backends, true, false, false},
      {"gpu backend, no affinity", std::nullopt, "gpu-cluster-01", backends, true, true, false},
      {"ANDed into the pod's own term", std::vector{zone}, "gpu-cluster-01", backends, true, true,
       false},
      {"an empty term still matches nothing", std::vector{model::NodeSelectorTerm{}},
       "gpu-cluster-01", backends, false, false, false},
      {"no labelled node: nothing added", std::nullopt, "default", {}, true, true, true},
      {"only its own backend labelled",
       std::nullopt,
       "gpu-cluster-01",
       {"gpu-cluster-01"},
       true,
       true,
       true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    model::PodScheduling pod;
    pod.affinity.required = c.required;
    ScopePodToBackend(pod, c.backend, c.node_backends);
    EXPECT_EQ(model::MatchesRequiredAffinity(pod.affinity, plain), c.plain);
    EXPECT_EQ(model::MatchesRequiredAffinity(pod.affinity, gpu), c.gpu);
    EXPECT_EQ(model::MatchesRequiredAffinity(pod.affinity, dev), c.dev);
  }
  std::vector<model::Node> nodes = {plain, gpu, dev, gpu};
  EXPECT_EQ(NodeBackends(nodes), backends);
}

TEST(MembershipTest, Seed002JetsonPool) {
  ConfigSet set = SeedSet(true);
  std::vector<model::Node> nodes = SeedNodes();
  const Pool& pool = set.pools.at("robotics-inference");
  auto members = PlatformNodes(set, pool, "jetson-thor-platform", nodes);
  ASSERT_TRUE(members.ok()) << members.status().ToString();
  ASSERT_EQ(members->size(), 1u);
  EXPECT_EQ((*members)[0]->name, "thor-1");
  EXPECT_FALSE(PlatformNodes(set, pool, "t4-platform", nodes).ok());
}

TEST(MembershipTest, SelectorSemantics) {
  model::Node node;
  node.name = "n1";
  node.labels = {{"gpu", "h100"}, {"zone", "a"}, {"rack", "7"}};
  node.taints = {model::Taint{"nvidia.com/gpu", "present", model::TaintEffect::kNoSchedule},
                 model::Taint{"soft", "", model::TaintEffect::kPreferNoSchedule}};
  struct Case {
    std::string name;
    std::string tmpl;
    bool want;
  };
  std::vector<Case> cases = {
      {"untolerated NoSchedule", R"({"spec": {"nodeSelector": {"gpu": "h100"}}})", false},
      {"tolerated by Exists",
       R"({"spec": {"nodeSelector": {"gpu": "h100"}, "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}})",
       true},
      {"Equal with wrong value",
       R"({"spec": {"tolerations": [{"key": "nvidia.com/gpu", "value": "yes", "effect": "NoSchedule"}]}})",
       false},
      {"empty key Exists tolerates everything (Kubernetes)",
       R"({"spec": {"tolerations": [{"operator": "Exists"}]}})", true},
      {"selector mismatch",
       R"({"spec": {"nodeSelector": {"gpu": "a100"}, "tolerations": [{"operator": "Exists"}]}})",
       false},
      {"templated selector never matches",
       R"({"spec": {"nodeSelector": {"gpu": "{{GPU}}"}, "tolerations": [{"operator": "Exists"}]}})",
       false},
      {"affinity In",
       R"({"spec": {"tolerations": [{"operator": "Exists"}], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}}}})",
       true},
      {"affinity Gt",
       R"({"spec": {"tolerations": [{"operator": "Exists"}], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "Gt", "values": ["9"]}]}]}}}}})",
       false},
      {"affinity terms OR",
       R"({"spec": {"tolerations": [{"operator": "Exists"}], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z"]}]}, {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]}}}}})",
       true},
      {"templated NotIn expression is skipped",
       R"({"spec": {"tolerations": [{"operator": "Exists"}], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn", "values": "{{USER_EXCLUDED_NODES}}"}, {"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}})",
       true},
      {"templated toleration is skipped",
       R"({"spec": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "tolerationSeconds": "{{T}}"}]}})",
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<PlatformSelector> sel = SelectorFromTemplate(Json::parse(c.tmpl));
    ASSERT_TRUE(sel.ok()) << sel.status().ToString();
    EXPECT_EQ(NodeMatchesSelector(*sel, node), c.want);
  }
  EXPECT_FALSE(
      SelectorFromTemplate(J(R"({"spec": {"tolerations": [{"key": "a", "effect": "Sometimes"}]}})"))
          .ok());
}

}  // namespace membership_test
}  // namespace gpupool::config
