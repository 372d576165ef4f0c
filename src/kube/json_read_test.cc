#include "kube/json_read.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "model/input_file.h"

namespace gpupool::kube {
namespace {

using Json = nlohmann::ordered_json;

// The same tree as nlohmann's: the same types (an unsigned is not a signed integer here, though
// they compare equal), the same keys in the same order, the same values.
::testing::AssertionResult SameTree(const Json& got, const Json& want, const std::string& at) {
  if (got.type() != want.type()) {
    return ::testing::AssertionFailure()
           << at << ": type " << got.type_name() << ", want " << want.type_name();
  }
  if (want.is_object()) {
    if (got.size() != want.size()) {
      return ::testing::AssertionFailure()
             << at << ": " << got.size() << " keys, want " << want.size();
    }
    for (auto g = got.begin(), w = want.begin(); w != want.end(); ++g, ++w) {
      if (g.key() != w.key()) {
        return ::testing::AssertionFailure() << at << ": key " << g.key() << ", want " << w.key();
      }
      auto same = SameTree(g.value(), w.value(), at + "." + w.key());
      if (!same) return same;
    }
    return ::testing::AssertionSuccess();
  }
  if (want.is_array()) {
    if (got.size() != want.size()) {
      return ::testing::AssertionFailure()
             << at << ": " << got.size() << " items, want " << want.size();
    }
    for (size_t i = 0; i < want.size(); ++i) {
      auto same = SameTree(got[i], want[i], at + "[" + std::to_string(i) + "]");
      if (!same) return same;
    }
    return ::testing::AssertionSuccess();
  }
  if (got != want && !(want.is_discarded() && got.is_discarded())) {
    return ::testing::AssertionFailure() << at << ": " << got.dump() << ", want " << want.dump();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult ReadsAsNlohmann(const std::string& text) {
  return SameTree(ReadJson(text), Json::parse(text, nullptr, false), "(top)");
}

// A pod as the fake API server writes it in a watch event, pending then bound.
std::string PodEvent(const std::string& type, bool bound) {
  Json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "scale-12345"},
        {"namespace", "scale"},
        {"labels", {{"app", "train"}, {"gpupool.io/queue", "research"}}},
        {"annotations", {{"gpupool.io/gang", "g-7"}, {"note", "a \"quoted\" line\n"}}},
        {"uid", "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"},
        {"creationTimestamp", "2026-11-27T13:25:43Z"},
        {"generation", 1},
        {"resourceVersion", "123456"}}},
      {"spec",
       {{"schedulerName", "gpupool"},
        {"priority", -5},
        {"tolerations",
         Json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}},
                      {{"key", "t"}, {"tolerationSeconds", 300}}})},
        {"nodeSelector", {{"kubernetes.io/role", "agent"}}},
        {"containers",
         Json::array({{{"name", "main"},
                       {"image", "busybox"},
                       {"command", Json::array({"sh", "-c", "echo ok; exit 0"})},
                       {"resources", {{"requests", {{"cpu", "50m"}, {"memory", "32Mi"}}}}}}})},
        {"restartPolicy", "Always"},
        {"terminationGracePeriodSeconds", 30},
        {"enableServiceLinks", false},
        {"hostNetwork", nullptr}}},
      {"status", {{"phase", "Pending"}, {"conditions", Json::array()}}}};
  if (bound) pod["spec"]["nodeName"] = "node-0042";
  return Json{{"type", type}, {"object", pod}}.dump();
}

TEST(ReadJsonTest, ReadsWatchEventsOfPodsAsNlohmann) {
  EXPECT_TRUE(ReadsAsNlohmann(PodEvent("ADDED", false)));
  EXPECT_TRUE(ReadsAsNlohmann(PodEvent("MODIFIED", true)));
  // As a watch line: the newline after it.
  EXPECT_TRUE(ReadsAsNlohmann(PodEvent("DELETED", true) + "\n"));
  // The tree, not a discarded value or a copy of nlohmann's answer from the fallback.
  EXPECT_EQ(ReadJson(PodEvent("MODIFIED", true))["object"]["spec"]["nodeName"], "node-0042");
}

TEST(ReadJsonTest, ReadsRealObjectsAsNlohmann) {
  // Node lists written by kubectl (managedFields, quantities, timestamps) and pod templates.
  for (const char* file : {"/data/edgexr-k8s-node-json/aks_cpu_nodes_kubectl_get_nodes.json",
                           "/data/edgexr-k8s-node-json/vgpu_a16_node_kubectl_get_nodes.json",
                           "/src/config/testdata/seed000/a100_pod_template.json",
                           "/src/config/testdata/seed000/l40s_pod_template.json"}) {
    auto text = model::ReadFile(std::string(GPUPOOL_SOURCE_DIR) + file);
    ASSERT_TRUE(text.ok()) << file;
    EXPECT_TRUE(ReadsAsNlohmann(*text)) << file;
    const Json list = Json::parse(*text, nullptr, false);  // a100_pod_template.json is not JSON
    if (!list.is_object() || !list.contains("items")) continue;
    for (const Json& item : list["items"]) {
      EXPECT_TRUE(ReadsAsNlohmann(Json{{"type", "MODIFIED"}, {"object", item}}.dump())) << file;
    }
  }
}

TEST(ReadJsonTest, TakesNlohmannsAnswerForWhatItLeaves) {
  const std::vector<std::string> texts = {
      // Valid, read by the fast path or left to nlohmann.
      "{}", "[]", "0", "-0", "7", "-7", "123456789012345678", "1234567890123456789",
      "18446744073709551615", "18446744073709551616", "-9223372036854775808", "1.5", "-2e3", "1E2",
      R"("")", R"("a\"b\\c\/d\b\f\n\r\t")", R"("\u00e9\ud83d\ude00")", "\"caf\xc3\xa9\"",
      R"({"a":1,"a":2,"b":3})", R"({"k":{"k":{"k":[1,[2,[3,{}]]]}}})", " \t\r\n{ \"a\" : [ ] }\n",
      "true", "false", "null", "[true,false,null]", "\xef\xbb\xbf{}",
      // Not JSON: discarded, as nlohmann says.
      "", " ", "{", "}", "[1,]", R"({"a":1,})", R"({"a" 1})", R"({a:1})", "01", "-", "1x", "truex",
      "nul", R"("abc)", "\"a\x01b\"", "\"\xff\"", R"("\x")", "{} {}", "[1 2]", R"({"a":1}})", "'a'",
      "NaN", std::string("{\"a\":\0}", 7)};
  for (const std::string& text : texts) EXPECT_TRUE(ReadsAsNlohmann(text)) << text;
  EXPECT_TRUE(ReadJson("{").is_discarded());
}

TEST(ReadJsonTest, DeepNestingGoesToNlohmann) {
  std::string deep(1000, '[');
  deep += std::string(1000, ']');
  EXPECT_TRUE(ReadsAsNlohmann(deep));
  std::string objects;
  for (int i = 0; i < 300; ++i) objects += "{\"k\":";
  objects += "1" + std::string(300, '}');
  EXPECT_TRUE(ReadsAsNlohmann(objects));
}

// Random trees of every kind of value, dumped and read back.
Json RandomValue(std::mt19937& random, int depth) {
  std::uniform_int_distribution<int> kind(0, depth > 4 ? 5 : 7);
  static const std::vector<std::string> kStrings = {"",
                                                    "x",
                                                    "a long string that does not fit in place",
                                                    "tab\there",
                                                    "quote\"d",
                                                    "back\\slash",
                                                    "caf\xc3\xa9",
                                                    "\xe2\x82\xac",
                                                    "ctl\x01",
                                                    "nl\n"};
  switch (kind(random)) {
    case 0:
      return nullptr;
    case 1:
      return random() % 2 == 0;
    case 2:
      return static_cast<uint64_t>(random()) << (random() % 33);
    case 3:
      return -static_cast<int64_t>(random() % 100000);
    case 4:
      return static_cast<double>(random()) / 7.0;
    case 5:
      return kStrings[random() % kStrings.size()];
    case 6: {
      Json array = Json::array();
      for (int i = static_cast<int>(random() % 5); i > 0; --i) {
        array.push_back(RandomValue(random, depth + 1));
      }
      return array;
    }
    default: {
      Json object = Json::object();
      for (int i = static_cast<int>(random() % 6); i > 0; --i) {
        object[kStrings[random() % kStrings.size()] + std::to_string(i)] =
            RandomValue(random, depth + 1);
      }
      return object;
    }
  }
}

TEST(ReadJsonTest, ReadsRandomTreesAsNlohmann) {
  std::mt19937 random(18);
  for (int i = 0; i < 2000; ++i) {
    const std::string text = RandomValue(random, 0).dump();
    ASSERT_TRUE(ReadsAsNlohmann(text)) << text;
  }
}

}  // namespace
}  // namespace gpupool::kube
