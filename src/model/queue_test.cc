#include "model/queue.h"

#include <gtest/gtest.h>

namespace gpupool::model {
namespace queue_test {

using Json = nlohmann::ordered_json;

TEST(QueueTest, ParsesFullBody) {
  Json body = Json::parse(R"({
    "parent": "rnd", "priority": 10, "description": "team 1",
    "resources": {
      "a100-80": {"gpu": {"deserved": 8, "limit": 12, "over_quota_weight": 2},
                  "cpu": {"deserved": "500m"}, "memory": {"deserved": "64Gi", "limit": -1}},
      "default": {"gpu": {"deserved": 0.5}}}})");
  Result<Queue> queue = QueueFromJson(body, "rnd-1");
  ASSERT_TRUE(queue.ok()) << queue.status().ToString();
  EXPECT_EQ(queue->parent, "rnd");
  EXPECT_EQ(queue->priority, 10);
  const NodePoolQuota& a100 = queue->QuotaIn("a100-80");
  EXPECT_EQ(a100[QuotaResource::kGpu].deserved_milli, 8000);
  EXPECT_EQ(a100[QuotaResource::kGpu].limit_milli, 12000);
  EXPECT_EQ(a100[QuotaResource::kGpu].over_quota_weight, 2);
  EXPECT_EQ(a100[QuotaResource::kCpu].deserved_milli, 500);
  EXPECT_EQ(a100[QuotaResource::kCpu].limit_milli, kUnlimited);
  EXPECT_EQ(a100[QuotaResource::kMemory].deserved_milli, int64_t{64} * 1024 * 1024 * 1024 * 1000);
  EXPECT_EQ(queue->QuotaIn("default")[QuotaResource::kGpu].deserved_milli, 500);
  // Missing node pool: deserved 0, unlimited, weight 1.
  const NodePoolQuota& missing = queue->QuotaIn("v100");
  EXPECT_EQ(missing[QuotaResource::kGpu].deserved_milli, 0);
  EXPECT_EQ(missing[QuotaResource::kGpu].limit_milli, kUnlimited);
  EXPECT_EQ(missing[QuotaResource::kGpu].over_quota_weight, 1);
}

TEST(QueueTest, RoundTrip) {
  Json body = Json::parse(R"({"parent": "rnd", "priority": 0, "resources": {"a100-80":
      {"gpu": {"deserved": 8, "limit": -1, "over_quota_weight": 1},
       "memory": {"deserved": "64Gi", "limit": "128Gi", "over_quota_weight": 1}}}})");
  Result<Queue> queue = QueueFromJson(body, "rnd-1");
  ASSERT_TRUE(queue.ok()) << queue.status().ToString();
  Json out = QueueToJson(*queue);
  EXPECT_EQ(out["resources"]["a100-80"]["gpu"]["deserved"], 8);
  EXPECT_EQ(out["resources"]["a100-80"]["memory"]["deserved"], "64Gi");
  Result<Queue> again = QueueFromJson(out, "rnd-1");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *queue);
  Result<Queue> manifest = QueueFromManifest(QueueToManifest(*queue));
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(*manifest, *queue);
}

TEST(QueueTest, RejectsBadInput) {
  struct Case {
    std::string name;
    std::string body;
    std::string queue_name;
    std::string want;  // substring of the error
  };
  std::vector<Case> cases = {
      {"unknown field", R"({"prority": 1})", "q",
       "q.prority: unknown field (did you mean \"priority\"?)"},
      {"unknown resource", R"({"resources": {"a": {"gpus": {"deserved": 1}}}})", "q",
       "q.resources.a.gpus: unknown resource (did you mean \"gpu\"?)"},
      {"unknown quota field", R"({"resources": {"a": {"gpu": {"deserve": 1}}}})", "q",
       "q.resources.a.gpu.deserve: unknown field (did you mean \"deserved\"?)"},
      {"bad quantity", R"({"resources": {"a": {"cpu": {"deserved": "1.2.3"}}}})", "q",
       "q.resources.a.cpu.deserved"},
      {"negative", R"({"resources": {"a": {"gpu": {"deserved": -2}}}})", "q", "non-negative"},
      {"deserved over limit", R"({"resources": {"a": {"gpu": {"deserved": 4, "limit": 2}}}})", "q",
       "exceeds limit"},
      {"weight not integer", R"({"resources": {"a": {"gpu": {"over_quota_weight": 1.5}}}})", "q",
       "over_quota_weight: expected a non-negative integer"},
      {"priority string", R"({"priority": "high"})", "q", "q.priority: expected an integer"},
      {"bad name", R"({})", "9lives", "invalid name"},
      {"self parent", R"({"parent": "q"})", "q", "own parent"},
      {"name mismatch", R"({"name": "other"})", "q", "does not match"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<Queue> queue = QueueFromJson(Json::parse(c.body), c.queue_name);
    ASSERT_FALSE(queue.ok());
    EXPECT_NE(queue.status().message().find(c.want), std::string::npos) << queue.status().message();
  }
}

TEST(QueueTest, ManifestErrors) {
  Json m = Json::parse(R"({"apiVersion": "gpupool.io/v1", "kind": "Queue",
      "metadata": {"name": "q"}, "spek": {}})");
  Result<Queue> queue = QueueFromManifest(m);
  ASSERT_FALSE(queue.ok());
  EXPECT_NE(queue.status().message().find("did you mean \"spec\""), std::string::npos);
  m = Json::parse(
      R"({"apiVersion": "v1", "kind": "Queue", "metadata": {"name": "q"}, "spec": {}})");
  EXPECT_FALSE(QueueFromManifest(m).ok());
}

TEST(QueueTest, FormatQuotaAmount) {
  struct Case {
    QuotaResource r;
    int64_t milli;
    std::string want;
  };
  std::vector<Case> cases = {
      {QuotaResource::kGpu, 8000, "8"},
      {QuotaResource::kGpu, 500, "0.5"},
      {QuotaResource::kGpu, 1250, "1.25"},
      {QuotaResource::kCpu, 500, "500m"},
      {QuotaResource::kCpu, 4000, "4"},
      {QuotaResource::kMemory, int64_t{64} << 30 /*bytes*/ * 1, ""},
      {QuotaResource::kGpu, kUnlimited, "unlimited"},
  };
  cases[5] = {QuotaResource::kMemory, (int64_t{64} << 30) * 1000, "64Gi"};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    EXPECT_EQ(FormatQuotaAmount(c.r, c.milli), c.want);
  }
}

}  // namespace queue_test
}  // namespace gpupool::model
