// The bounds on user input (common/limits.h) as the parsers apply them: nesting depth and numbers
// out of range. (The file size: model/input_file_test.cc.)

#include <gtest/gtest.h>

#include <string>

#include "codec/json_reader.h"
#include "codec/yaml_reader.h"
#include "common/limits.h"

namespace gpupool::codec {
namespace input_limits_test {

using nlohmann::ordered_json;

std::string Repeat(std::string_view piece, int n) {
  std::string out;
  out.reserve(piece.size() * n);
  for (int i = 0; i < n; ++i) out += piece;
  return out;
}

// An array nested `depth` levels deep, built without recursion (and destroyed without it too,
// as nlohmann destroys values).
ordered_json DeepArray(int depth) {
  ordered_json value = ordered_json::array();
  for (int i = 1; i < depth; ++i) {
    ordered_json outer = ordered_json::array();
    outer.push_back(std::move(value));
    value = std::move(outer);
  }
  return value;
}

struct DepthCase {
  std::string name;
  std::string text;
  std::string error;  // the whole message; "" = accepted
};

TEST(NestingDepthTest, EveryParserRefusesTheSameDepthAtItsPosition) {
  const std::string too_deep = "nested deeper than 512 levels of arrays and objects";
  const DepthCase cases[] = {
      {"JSON at the limit", Repeat("[", 512) + Repeat("]", 512), ""},
      {"JSON one level more", Repeat("[", 513) + Repeat("]", 513), "f:1:513: " + too_deep},
      {"JSON, 100,000 levels (once a stack overflow)", Repeat("[", 100000) + Repeat("]", 100000),
       "f:1:513: " + too_deep},
      {"JSON, unterminated", Repeat("[", 100000), "f:1:513: " + too_deep},
      {"JSON objects, with strings holding brackets",
       "{\"a\": \"[{\",\n \"b\": " + Repeat("{\"k\": ", 600) + "1" + Repeat("}", 600) + "}",
       "f:2:3073: " + too_deep},
      {"YAML at the limit", Repeat("- ", 512) + "x\n", ""},
      {"YAML block, 100,000 levels", Repeat("- ", 100000) + "x\n", "f:1:1025: " + too_deep},
      {"YAML mapping one level more", "a:\n" + Repeat("- ", 512) + "x\n", "f:2:1023: " + too_deep},
  };
  for (const DepthCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto docs = ParseJsonOrYamlDocuments(c.text, "f");
    if (c.error.empty()) {
      ASSERT_TRUE(docs.ok()) << docs.status().ToString();
      ASSERT_EQ(docs->size(), 1u);
      EXPECT_EQ(NestingDepth((*docs)[0]), kMaxNestingDepth);
    } else {
      ASSERT_FALSE(docs.ok());
      EXPECT_EQ(docs.status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(docs.status().message(), c.error);
    }
  }
}

TEST(NestingDepthTest, MeasuresAnyTreeWithoutRecursion) {
  EXPECT_EQ(NestingDepth(ordered_json(1)), 0);
  EXPECT_EQ(NestingDepth(ordered_json::array()), 1);
  EXPECT_EQ(NestingDepth(ordered_json::parse(R"({"a": [1, {"b": []}], "c": {}})")), 4);
  const ordered_json deep = DeepArray(20000);
  EXPECT_EQ(NestingDepth(deep), kMaxNestingDepth + 1);
  EXPECT_EQ(NestingDepth(deep, 30000), 20000);
  EXPECT_TRUE(CheckNestingDepth(DeepArray(512)).ok());
  EXPECT_EQ(CheckNestingDepth(deep).message(),
            "[0]: nested deeper than 512 levels of arrays and objects");
  ordered_json body = {{"metadata", {{"name", "t"}}}, {"spec", DeepArray(20000)}};
  EXPECT_EQ(CheckNestingDepth(body).message(),
            "spec: nested deeper than 512 levels of arrays and objects");
}

TEST(NumberRangeTest, NumbersNoDoubleHoldsAreRefusedWithTheirPosition) {
  const std::string out_of_range =
      "number out of range (larger than a 64-bit floating-point number can hold)";
  const DepthCase cases[] = {
      {"JSON 1e400", "{\"a\": 1,\n \"b\": 1e400}", "f:2:7: " + out_of_range},
      {"JSON -1e400 in an array", "[0, -1e400]", "f:1:5: " + out_of_range},
      {"JSON 400 digits", "[" + Repeat("9", 400) + "]", "f:1:2: " + out_of_range},
      {"YAML 1e400", "a: 1\nb: 1e400\n", "f:2:4: " + out_of_range},
      {"YAML -1E+400 in a list", "- -1E+400\n", "f:1:3: " + out_of_range},
      {"YAML 400 digits", "a: " + Repeat("9", 400) + "\n", "f:1:4: " + out_of_range},
      {"YAML !!float 1e400", "a: !!float 1e400\n", "f:1:4: " + out_of_range},
  };
  for (const DepthCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto docs = ParseJsonOrYamlDocuments(c.text, "f");
    ASSERT_FALSE(docs.ok()) << (*docs)[0].dump();
    EXPECT_EQ(docs.status().message(), c.error);
  }
  // Large numbers that a double holds stay numbers; quoted ones stay strings.
  auto fine = ParseYamlDocuments("a: 1e300\nb: '1e400'\nc: 18446744073709551616\n", "f");
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  EXPECT_EQ((*fine)[0].value["a"], 1e300);
  EXPECT_EQ((*fine)[0].value["b"], "1e400");
  EXPECT_EQ((*fine)[0].value["c"], 18446744073709551616.0);
}

}  // namespace input_limits_test
}  // namespace gpupool::codec
