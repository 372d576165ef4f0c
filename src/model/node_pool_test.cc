#include "model/node_pool.h"

#include <gtest/gtest.h>

namespace gpupool::model {
namespace node_pool_test {

using Json = nlohmann::ordered_json;

TEST(NodePoolTest, ParsesAndRoundTrips) {
  Json body = Json::parse(R"({"label_key": "node-pool", "label_value": "a100-80",
      "description": "R&D training", "topology_keys": ["topology.kubernetes.io/zone"]})");
  Result<NodePool> pool = NodePoolFromJson(body, "a100-80");
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ(pool->label_key, "node-pool");
  EXPECT_EQ(pool->label_value, "a100-80");
  EXPECT_EQ(pool->topology_keys, std::vector<std::string>{"topology.kubernetes.io/zone"});
  EXPECT_EQ(NodePoolToJson(*pool), body);
  Result<NodePool> again = NodePoolFromManifest(NodePoolToManifest(*pool));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *pool);
}

TEST(NodePoolTest, RejectsBadInput) {
  struct Case {
    std::string name;
    std::string body;
    std::string pool_name;
    std::string want;
  };
  std::vector<Case> cases = {
      {"unknown field", R"({"label_key": "a", "label_value": "b", "lable_value": "c"})", "p",
       "p.lable_value: unknown field (did you mean \"label_value\"?)"},
      {"missing key", R"({"label_value": "b"})", "p", "p.label_key: required"},
      {"missing value", R"({"label_key": "b"})", "p", "p.label_value: required"},
      {"wrong type", R"({"label_key": 3, "label_value": "b"})", "p",
       "p.label_key: expected a string"},
      {"topology not list", R"({"label_key": "a", "label_value": "b", "topology_keys": "z"})", "p",
       "p.topology_keys: expected a list"},
      {"reserved name", R"({"label_key": "a", "label_value": "b"})", "default", "reserved"},
      {"bad name", R"({"label_key": "a", "label_value": "b"})", "a100-", "invalid name"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<NodePool> pool = NodePoolFromJson(Json::parse(c.body), c.pool_name);
    ASSERT_FALSE(pool.ok());
    EXPECT_NE(pool.status().message().find(c.want), std::string::npos) << pool.status().message();
  }
}

TEST(NodePoolTest, ManifestNeedsKindAndApiVersion) {
  Json m = Json::parse(R"({"apiVersion": "gpupool.io/v1", "kind": "Queue",
      "metadata": {"name": "p"}, "spec": {"label_key": "a", "label_value": "b"}})");
  EXPECT_FALSE(NodePoolFromManifest(m).ok());
  m["kind"] = "NodePool";
  EXPECT_TRUE(NodePoolFromManifest(m).ok());
  m["metadata"]["nam"] = "x";
  EXPECT_FALSE(NodePoolFromManifest(m).ok());
}

}  // namespace node_pool_test
}  // namespace gpupool::model
