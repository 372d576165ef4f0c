#include "codec/source_map.h"

#include <gtest/gtest.h>

namespace gpupool::codec {
namespace source_map_test {

TEST(JsonSourceMapTest, FindsFieldsByPointerAndPath) {
  const char* text = R"({
  "name": "pool",
  "platforms": {
    "a100": {
      "override_pod_template": ["a100", "gpu"],
      "labels": {"nvidia.com/gpu.product": "NVIDIA-A100", "nvidia.com/gpu": {"x": [1, {"y": 2}]}}
    },
    "a/b~c": 1,
    "é": {"k": true}
  }
})";
  JsonSourceMap map = JsonSourceMap::Build(text);
  ASSERT_FALSE(map.empty());
  struct Case {
    std::string query;
    bool pointer;  // JSON pointer, else field path
    int line;      // 0 = not found
    int column;
  };
  const Case cases[] = {
      {"", true, 1, 1},
      {"/name", true, 2, 3},
      {"/platforms/a100/override_pod_template", true, 5, 7},
      {"/platforms/a100/override_pod_template/1", true, 5, 41},
      {"/platforms/a100/override_pod_template/2", true, 0, 0},
      {"/platforms/a~1b~0c", true, 8, 5},
      {"/platforms/missing", true, 0, 0},
      {"name", false, 2, 3},
      {"platforms.a100.override_pod_template[0]", false, 5, 33},
      {"platforms.a100.override_pod_template[1]", false, 5, 41},
      {"platforms.a100.labels.nvidia.com/gpu.product", false, 6, 18},
      {"platforms.a100.labels.nvidia.com/gpu.x[1].y", false, 6, 88},
      {"platforms.a100.labels.nvidia.com/gpu.x[1]", false, 6, 87},
      {"platforms.é.k", false, 9, 11},
      {"platforms.a10", false, 0, 0},
      {"platforms.a100.override_pod_template[9]", false, 0, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.query);
    std::optional<SourcePosition> pos = c.pointer ? map.Find(c.query) : map.FindFieldPath(c.query);
    if (c.line == 0) {
      EXPECT_FALSE(pos.has_value());
    } else {
      ASSERT_TRUE(pos.has_value());
      EXPECT_EQ(pos->line, c.line);
      EXPECT_EQ(pos->column, c.column);
    }
  }
  EXPECT_EQ(map.Prefix("pool.json", "platforms.a100"), "pool.json:4:5: ");
  EXPECT_EQ(map.Prefix("pool.json", "platforms.nope"), "pool.json: ");
  EXPECT_TRUE(JsonSourceMap::Build("{\"a\": ").empty());
}

TEST(PositionOfOffsetTest, CountsLinesAndCharacters) {
  struct Case {
    std::string text;
    size_t offset;
    int line;
    int column;
  };
  const Case cases[] = {
      {"abc", 0, 1, 1}, {"abc", 2, 1, 3},      {"a\nbc", 2, 2, 1}, {"a\nbc", 3, 2, 2},
      {"é}", 2, 1, 2},  {"a\n\n\nx", 4, 4, 1}, {"abc", 99, 1, 4},  {"\tx", 1, 1, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text + " @" + std::to_string(c.offset));
    SourcePosition pos = PositionOfOffset(c.text, c.offset);
    EXPECT_EQ(pos.line, c.line);
    EXPECT_EQ(pos.column, c.column);
  }
}

}  // namespace source_map_test
}  // namespace gpupool::codec
