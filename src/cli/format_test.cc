#include "cli/format.h"

#include <gtest/gtest.h>

namespace gpupool::cli {
namespace format_test {

TEST(TableTest, AlignsColumns) {
  Table t({"NODE", "GPU"});
  t.AddRow({"a100-node-0", "0/8"});
  t.AddRow({"t4", "1/1"});
  EXPECT_EQ(t.ToString(),
            "NODE         GPU\n"
            "a100-node-0  0/8\n"
            "t4           1/1\n");
}

TEST(FormatTest, UsedOfCapacity) {
  struct Case {
    int64_t used, capacity, unit;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {0, 8000, 1000, "0/8"},
      {500, 3900, 1000, "1/3"},  // used rounds up, capacity down
      {int64_t{1000} << 30, int64_t{64000} << 30, int64_t{1000} << 30, "1/64"},
      // Bytes of a node with `memory: 3Ei`, and a use at the end of int64: no overflow.
      {int64_t{1} << 30, int64_t{3} << 60, int64_t{1} << 30, "1/3221225472"},
      {INT64_MAX, INT64_MAX, int64_t{1} << 30, "8589934592/8589934591"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expected);
    EXPECT_EQ(UsedOfCapacity(c.used, c.capacity, c.unit), c.expected);
  }
}

TEST(FormatTest, OutputFormats) {
  EXPECT_EQ(*ParseOutputFormat("JSON"), OutputFormat::kJson);
  EXPECT_EQ(*ParseOutputFormat("yaml"), OutputFormat::kYaml);
  EXPECT_EQ(*ParseOutputFormat("table"), OutputFormat::kTable);
  auto bad = ParseOutputFormat("jsn");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("did you mean \"json\""), std::string::npos);
  EXPECT_EQ(Render(nlohmann::ordered_json{{"b", 1}, {"a", 2}}, OutputFormat::kJson),
            "{\n  \"b\": 1,\n  \"a\": 2\n}\n");
}

}  // namespace format_test
}  // namespace gpupool::cli
