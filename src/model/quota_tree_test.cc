#include "model/quota_tree.h"

#include <gtest/gtest.h>

namespace gpupool::model {
namespace quota_tree_test {

using Json = nlohmann::ordered_json;

std::map<std::string, Queue> Queues(const Json& bodies) {
  std::map<std::string, Queue> out;
  for (const auto& [name, body] : bodies.items()) {
    auto queue = QueueFromJson(body, name);
    EXPECT_TRUE(queue.ok()) << queue.status().ToString();
    if (queue.ok()) out[name] = *queue;
  }
  return out;
}

std::map<std::string, NodePool> NodePools(const Json& bodies) {
  std::map<std::string, NodePool> out;
  for (const auto& [name, body] : bodies.items()) {
    auto pool = NodePoolFromJson(body, name);
    EXPECT_TRUE(pool.ok()) << pool.status().ToString();
    if (pool.ok()) out[name] = *pool;
  }
  return out;
}

std::vector<std::string> Messages(const std::vector<QuotaTreeFinding>& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) out.push_back(f.kind + "/" + f.name + ": " + f.message);
  return out;
}

struct TreeCase {
  std::string name;
  std::string queues;
  std::string node_pools;
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
};

TEST(QuotaTreeTest, ChecksTheTree) {
  const std::string kPools = R"({"a100-80": {"label_key": "node-pool", "label_value": "a100-80"},
                                 "l40s": {"label_key": "node-pool", "label_value": "l40s"}})";
  const std::vector<TreeCase> cases = {
      {"department and project within quota",
       R"({"rnd": {"resources": {"a100-80": {"gpu": {"deserved": 8}}}},
           "nlp": {"parent": "rnd", "resources": {"a100-80": {"gpu": {"deserved": 8}}}}})",
       kPools,
       {},
       {}},
      {"unknown parent, with a did-you-mean",
       R"({"rnd": {}, "nlp": {"parent": "rdn"}})",
       kPools,
       {"QUEUE/nlp: queue \"nlp\": parent: queue \"rdn\" does not exist (did you mean \"rnd\"?); "
        "a project's parent is a department (a queue without parent)"},
       {}},
      {"three levels",
       R"({"rnd": {}, "nlp": {"parent": "rnd"}, "nlp-a": {"parent": "nlp"}})",
       kPools,
       {"QUEUE/nlp-a: queue \"nlp-a\": parent: queue \"nlp\" is a project (its parent is "
        "\"rnd\"); queues have two levels, department -> project"},
       {}},
      {"unknown node pool, with a did-you-mean",
       R"({"rnd": {"resources": {"a100-8": {"gpu": {"deserved": 1}}}}})",
       kPools,
       {"QUEUE/rnd: queue \"rnd\": resources.a100-8: node pool \"a100-8\" does not exist (did "
        "you mean \"a100-80\"?)"},
       {}},
      {"Default is the default node pool",
       R"({"rnd": {"resources": {"Default": {"gpu": {"deserved": 1}}}}})",
       kPools,
       {},
       {}},
      {"a project deserving more than its department: a warning",
       R"({"rnd": {"resources": {"a100-80": {"gpu": {"deserved": 4}}}},
           "nlp": {"parent": "rnd", "resources": {"a100-80": {"gpu": {"deserved": 6}}}}})",
       kPools,
       {},
       {"QUEUE/nlp: queue \"nlp\": resources.a100-80.gpu.deserved: 6 is more than department "
        "\"rnd\" deserves (4); accepted, but the project never gets more than its department's "
        "share"}},
      {"projects together above their department: a warning",
       R"({"rnd": {"resources": {"a100-80": {"gpu": {"deserved": 4}}}},
           "nlp": {"parent": "rnd", "resources": {"a100-80": {"gpu": {"deserved": 3}}}},
           "cv": {"parent": "rnd", "resources": {"a100-80": {"gpu": {"deserved": 3}}}}})",
       kPools,
       {},
       {"QUEUE/rnd: queue \"rnd\": resources.a100-80.gpu.deserved: 4 is less than its projects "
        "deserve together (6); accepted, but their deserved quotas cannot all be met"}},
      {"an unlimited department takes anything",
       R"({"rnd": {"resources": {"a100-80": {"gpu": {"deserved": -1}}}},
           "nlp": {"parent": "rnd", "resources": {"a100-80": {"gpu": {"deserved": 60}}}}})",
       kPools,
       {},
       {}},
      {"two node pools with one label",
       R"({})",
       R"({"a100-80": {"label_key": "node-pool", "label_value": "a100-80"},
           "big": {"label_key": "node-pool", "label_value": "a100-80"}})",
       {"NODE_POOL/a100-80: node pool \"a100-80\": label_value: label node-pool=a100-80 also "
        "selects node pool \"big\"; each node pool needs its own label",
        "NODE_POOL/big: node pool \"big\": label_value: label node-pool=a100-80 also selects "
        "node pool \"a100-80\"; each node pool needs its own label"},
       {}},
  };
  for (const TreeCase& c : cases) {
    SCOPED_TRACE(c.name);
    QuotaTreeCheck check =
        CheckQuotaTree(Queues(Json::parse(c.queues)), NodePools(Json::parse(c.node_pools)));
    EXPECT_EQ(Messages(check.errors), c.errors);
    EXPECT_EQ(Messages(check.warnings), c.warnings);
  }
}

TEST(QuotaTreeTest, DefaultSpellings) {
  EXPECT_TRUE(IsDefaultNodePoolName("default"));
  EXPECT_TRUE(IsDefaultNodePoolName("Default"));
  EXPECT_FALSE(IsDefaultNodePoolName("DEFAULT-x"));
  EXPECT_EQ(CanonicalNodePoolName("Default"), "default");
  EXPECT_EQ(CanonicalNodePoolName("a100-80"), "a100-80");
  auto queue =
      QueueFromJson(Json::parse(R"({"resources": {"Default": {"gpu": {"deserved": 2}}}})"), "rnd");
  ASSERT_TRUE(queue.ok()) << queue.status().ToString();
  EXPECT_EQ(QueueToJson(*queue)["resources"].begin().key(), "default");
  auto both = QueueFromJson(
      Json::parse(R"({"resources": {"default": {}, "Default": {"gpu": {"deserved": 2}}}})"), "rnd");
  EXPECT_FALSE(both.ok());
  for (const char* name : {"default", "Default"}) {
    auto pool = NodePoolFromJson(Json::parse(R"({"label_key": "k", "label_value": "v"})"), name);
    ASSERT_FALSE(pool.ok()) << name;
    EXPECT_NE(pool.status().message().find("reserved"), std::string::npos);
  }
}

TEST(QuotaTreeTest, ReferencesAndMatches) {
  auto queues = Queues(Json::parse(R"({"rnd": {"resources": {"a100-80": {}}},
      "nlp": {"parent": "rnd"}, "cv": {"parent": "rnd", "resources": {"a100-80": {}}},
      "ops": {}})"));
  EXPECT_EQ(QueuesUsingNodePool(queues, "a100-80"), (std::vector<std::string>{"cv", "rnd"}));
  EXPECT_EQ(ProjectsOf(queues, "rnd"), (std::vector<std::string>{"cv", "nlp"}));
  EXPECT_TRUE(ProjectsOf(queues, "ops").empty());
  auto pools = NodePools(Json::parse(R"({"a100-80": {"label_key": "node-pool", "label_value":
      "a100-80"}, "fast": {"label_key": "net", "label_value": "ib"}})"));
  Node node;
  node.labels = {{"node-pool", "a100-80"}, {"net", "ib"}};
  EXPECT_EQ(MatchingNodePools(node, pools), (std::vector<std::string>{"a100-80", "fast"}));
  EXPECT_EQ(NodePoolConflictMessage("gpu-1", MatchingNodePools(node, pools)),
            "node \"gpu-1\" matches node pools a100-80, fast; it is scheduled in \"a100-80\" "
            "(the first by name); give it one node pool's label");
  node.labels = {{"net", "ib"}};
  EXPECT_EQ(MatchingNodePools(node, pools), (std::vector<std::string>{"fast"}));
  node.labels = {};
  EXPECT_TRUE(MatchingNodePools(node, pools).empty());
}

}  // namespace quota_tree_test
}  // namespace gpupool::model
