// Every reader and writer of the codec on mutated real inputs.

#include <gtest/gtest.h>

#include <iterator>
#include <random>

#include "codec/json_reader.h"
#include "codec/source_map.h"
#include "codec/test_util.h"
#include "codec/yaml_reader.h"
#include "codec/yaml_writer.h"

namespace gpupool::codec {
namespace robustness_test {

using nlohmann::ordered_json;
using testing::kSeed000A100;
using testing::kSeed002A100;

TEST(RobustnessTest, MutatedInputsNeverThrowOrCrash) {
  // Deterministic mutations of real inputs: every outcome is a value or an InvalidArgument that
  // names the file.
  std::mt19937 random(20260101);
  const std::string bases[] = {kSeed000A100, kSeed002A100,
                               R"({"l40s": {"spec": {"nodeSelector": {"nvidia.com/gpu.product":
                                   "NVIDIA-L40S"}, "tolerations": [{"key": "a", "value": 1.5}],
                                   "x": [true, null, -2e3, "s"]}}})",
                               "apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n  labels: "
                               "{x: \"1\"}\nspec:\n  taints:\n  - {key: k, effect: NoSchedule}\n"};
  const std::string alphabet = "{}[]:,\"'\\ \n\t-#&*!|>?%@`abc019.eE+";
  int parsed_ok = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = bases[i % std::size(bases)];
    int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t at = random() % text.size();
      char c = alphabet[random() % alphabet.size()];
      switch (random() % 3) {
        case 0:
          text[at] = c;
          break;
        case 1:
          text.erase(at, 1);
          break;
        default:
          text.insert(at, 1, c);
      }
    }
    SCOPED_TRACE(text);
    auto json = ParseJson(text, "m.json");
    if (json.ok()) {
      ++parsed_ok;
      JsonSourceMap map = JsonSourceMap::Build(text);
      EXPECT_FALSE(map.empty());
      (void)map.FindFieldPath("a100.spec.tolerations[0].key");
      auto again = ParseYamlDocuments(ToYaml(*json), "again.yaml");
      ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << ToYaml(*json);
    } else {
      EXPECT_EQ(json.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(json.status().message().rfind("m.json:", 0), 0u) << json.status().message();
    }
    auto yaml = ParseYamlDocuments(text, "m.yaml");
    if (!yaml.ok()) {
      EXPECT_EQ(yaml.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(yaml.status().message().rfind("m.yaml", 0), 0u) << yaml.status().message();
    } else {
      for (const YamlDocument& doc : *yaml) {
        auto back = ParseYamlDocuments(ToYaml(doc.value), "back.yaml");
        ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << ToYaml(doc.value);
        if (!doc.value.is_null()) {
          ASSERT_EQ(back->size(), 1u) << ToYaml(doc.value);
          EXPECT_EQ((*back)[0].value, doc.value) << ToYaml(doc.value);
        }
      }
    }
  }
  EXPECT_GT(parsed_ok, 0);
}

}  // namespace robustness_test
}  // namespace gpupool::codec
