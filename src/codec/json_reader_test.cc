#include "codec/json_reader.h"

#include <gtest/gtest.h>

#include "codec/test_util.h"
#include "common/strings.h"

namespace gpupool::codec {
namespace json_reader_test {

using nlohmann::ordered_json;
using testing::kSeed000A100;
using testing::kSeed002A100;

TEST(ParseJsonTest, ReportsTrueLineAndColumn) {
  struct Case {
    std::string name;
    std::string text;
    std::string prefix;        // "<file>:<line>:<column>: "
    std::string message_part;  // part of what follows
  };
  const Case cases[] = {
      {"seed 000 a100", kSeed000A100, "a100_pod_template.json:14:9: ", "expected ']'"},
      {"seed 002 a100", kSeed002A100, "a100_pod_template.json:14:7: ", "unexpected '}'"},
      {"trailing comma", "{\n  \"a\": 1,\n}",
       "a100_pod_template.json:3:1: ", "expected string literal"},
      {"bad literal", "{\"a\": tru}", "a100_pod_template.json:1:7: ", "invalid literal"},
      {"bad literal mid-line", "{\n  \"a\": nul,\n  \"b\": 2\n}",
       "a100_pod_template.json:2:8: ", "invalid literal"},
      {"number then letters", "{\"a\": 12x}", "a100_pod_template.json:1:7: ", "invalid"},
      {"missing comma", "[1 2]", "a100_pod_template.json:1:4: ", "unexpected number literal"},
      {"missing comma long number", "[1 234]",
       "a100_pod_template.json:1:4: ", "unexpected number literal"},
      {"missing comma string", "{\"a\": 1 \"b\": 2}",
       "a100_pod_template.json:1:9: ", "unexpected string literal"},
      {"utf-8 counts characters", "{\"é\": x}", "a100_pod_template.json:1:7: ", "invalid literal"},
      {"unterminated", "{\"a\": 1", "a100_pod_template.json:1:8: ", "unexpected end of input"},
      {"empty", "", "a100_pod_template.json:1:1: ", "unexpected end of input"},
      {"newline in string", "{\"a\": \"x\n\"}",
       "a100_pod_template.json:1:9: ", "control character"},
      {"single quotes", "{'a': 1}", "a100_pod_template.json:1:2: ", "invalid literal"},
      {"extra closing brace", "{\n  \"a\": 1\n}\n}\n",
       "a100_pod_template.json:4:1: ", "expected end of input"},
      {"duplicate key", "{\n  \"a\": 1,\n  \"b\": {\"x\": 1, \"x\": 2}\n}",
       "a100_pod_template.json:3:17: ", "duplicate key \"x\""},
      {"duplicate escaped key", "{\"a\": 1, \"\\u0061\": 2}",
       "a100_pod_template.json:1:10: ", "duplicate key \"a\""},
      // Found by the json fuzz target: nlohmann stops at a NUL byte, so the rest was ignored.
      {"NUL then a second document", std::string("{\"a\": 1}\0{\"b\": 2}", 16),
       "a100_pod_template.json:1:9: ", "a NUL byte"},
      {"null then NUL", std::string("null\0\x80\0{", 8),
       "a100_pod_template.json:1:5: ", "a NUL byte"},
      // Found by the json fuzz target: a key holding "'; " (where the lexer's excerpt of the
      // input was cut) and a bad escape before a two-byte character (cut in two in the excerpt).
      {"excerpt holding a quote and semicolon", "{\"r','; x \\ude0\xC9\x9D\": 1}",
       "a100_pod_template.json:1:", "4 hex digits; expected string literal"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto parsed = ParseJson(c.text, "a100_pod_template.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    std::string message = parsed.status().message();
    EXPECT_EQ(message.substr(0, c.prefix.size()), c.prefix) << message;
    EXPECT_NE(message.find(c.message_part), std::string::npos) << message;
    EXPECT_EQ(message.find("json.exception"), std::string::npos) << message;
    EXPECT_EQ(message.find("last read"), std::string::npos) << message;
    EXPECT_TRUE(IsValidUtf8(message)) << message;
  }
}

TEST(ParseJsonTest, KeepsKeyOrder) {
  auto parsed = ParseJson(R"({"z": 1, "a": {"y": 2, "b": 3}, "m": [1, "x"]})", "f.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->dump(), R"({"z":1,"a":{"y":2,"b":3},"m":[1,"x"]})");
}

}  // namespace json_reader_test
}  // namespace gpupool::codec
