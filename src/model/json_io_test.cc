#include "model/json_io.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "common/strings.h"

namespace gpupool::model {
namespace {

using nlohmann::ordered_json;

// Seed 000's a100_pod_template.json, verbatim (the text between `echo '` and `'`): the
// tolerations list is closed with `}` instead of `]`.
constexpr char kSeed000A100[] = R"({
    "a100": {
      "spec": {
        "nodeSelector": {
          "nvidia.com/gpu.product": "NVIDIA-A100"
        },
        "tolerations": [
          {
            "key": "nvidia.com/gpu.product",
            "operator": "Equal",
            "value": "NVIDIA-A100",
            "effect": "NoSchedule"
          }
        }
      }
    }
  })";

// Seed 002's a100_pod_template.json (the heredoc body), verbatim.
constexpr char kSeed002A100[] = R"({
  "a100": {
    "spec": {
      "nodeSelector": {
        "nvidia.com/gpu.product": "NVIDIA-A100"
      },
      "tolerations": [
        {
          "key": "nvidia.com/gpu.product",
          "operator": "Equal",
          "value": "NVIDIA-A100",
          "effect": "NoSchedule"
        }
      }
    }
  }
}
)";

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

TEST(ParseYamlTest, TypesScalarsLikeYaml12Core) {
  struct Case {
    std::string yaml;
    ordered_json expected;
  };
  const Case cases[] = {
      {"a: 1", {{"a", 1}}},
      {"a: -7", {{"a", -7}}},
      {"a: 1.5", {{"a", 1.5}}},
      {"a: 1e3", {{"a", 1000.0}}},
      {"a: .5", {{"a", 0.5}}},
      {"a: true", {{"a", true}}},
      {"a: False", {{"a", false}}},
      {"a: null", {{"a", nullptr}}},
      {"a: ~", {{"a", nullptr}}},
      {"a:", {{"a", nullptr}}},
      {"a: 0x1F", {{"a", 31}}},
      {"a: 0o17", {{"a", 15}}},
      // YAML 1.1 words are plain strings in 1.2 core.
      {"a: yes", {{"a", "yes"}}},
      {"a: on", {{"a", "on"}}},
      {"a: 500m", {{"a", "500m"}}},
      {"a: 64Gi", {{"a", "64Gi"}}},
      {"a: 1h30m", {{"a", "1h30m"}}},
      {"a: \"1\"", {{"a", "1"}}},
      {"a: '1.5'", {{"a", "1.5"}}},
      {"a: 'true'", {{"a", "true"}}},
      {"a: \"null\"", {{"a", "null"}}},
      {"a: !!str 12", {{"a", "12"}}},
      {"a: !!float 1", {{"a", 1.0}}},
      {"a: 12345678901234567890", {{"a", 12345678901234567890ULL}}},
      {"a: 1.2.3", {{"a", "1.2.3"}}},
      {"a: .inf", {{"a", ".inf"}}},
      {"a: 2024-01-01", {{"a", "2024-01-01"}}},
      {"1: x", {{"1", "x"}}},
      {"true: x", {{"true", "x"}}},
      {"a: [1, \"2\", x]", {{"a", {1, "2", "x"}}}},
      {"a: {b: 1}", {{"a", {{"b", 1}}}}},
      {"a: |\n  line1\n  line2\n", {{"a", "line1\nline2\n"}}},
      {"a: &x {b: 1}\nc: *x", {{"a", {{"b", 1}}}, {"c", {{"b", 1}}}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    auto docs = ParseYamlDocuments(c.yaml, "f.yaml");
    ASSERT_TRUE(docs.ok()) << docs.status().ToString();
    ASSERT_EQ(docs->size(), 1u);
    EXPECT_EQ((*docs)[0].value, c.expected) << (*docs)[0].value.dump();
  }
}

TEST(ParseYamlTest, KeepsKeyOrderAndSplitsDocuments) {
  const char* text = R"(# leading comment
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels:
    zeta: "1"
    alpha: "2"
---
---
kind: Pod
metadata: {name: p}
...
)";
  auto docs = ParseYamlDocuments(text, "f.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ(
      (*docs)[0].value.dump(),
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{"zeta":"1","alpha":"2"}}})");
  EXPECT_EQ((*docs)[0].line, 2);
  EXPECT_EQ((*docs)[1].value["kind"], "Pod");
  EXPECT_EQ((*docs)[1].line, 11);

  // Source positions of values, by field path.
  auto alpha = (*docs)[0].source_map.FindFieldPath("metadata.labels.alpha");
  ASSERT_TRUE(alpha.has_value());
  EXPECT_EQ(alpha->line, 8);
  EXPECT_EQ(alpha->column, 5);
  EXPECT_EQ((*docs)[1].source_map.Prefix("f.yaml", "metadata.name"), "f.yaml:12:12: ");
  EXPECT_EQ((*docs)[1].source_map.Prefix("f.yaml", "spec"), "f.yaml: ");

  auto seq = ParseYamlDocuments("tasks:\n- name: a\n  image: x\n- name: b\n  args: [1, 2]\n", "w");
  ASSERT_TRUE(seq.ok());
  EXPECT_EQ((*seq)[0].source_map.Prefix("w", "tasks[1].args[1]"), "w:5:13: ");
  EXPECT_EQ((*seq)[0].source_map.Prefix("w", "tasks[0].image"), "w:3:3: ");
  EXPECT_EQ((*seq)[0].source_map.Prefix("w", "tasks[1]"), "w:4:3: ");
}

// A document that is only null is skipped as an empty one, however the null is written. Found by
// the yaml fuzz target: a tagged scalar typed as null (`!x` with no value) was kept, so that
// `-o yaml` of it (`null`) read back as no document.
TEST(ParseYamlTest, SkipsDocumentsThatAreOnlyNull) {
  const char* only_null[] = {"",   "null",  "~",        "# comment\n", "!!null x",
                             "!f", "!f \n", "!!binary", "&a",          "--- !x\n...\n"};
  for (const char* text : only_null) {
    SCOPED_TRACE(text);
    auto docs = ParseYamlDocuments(text, "f.yaml");
    ASSERT_TRUE(docs.ok()) << docs.status().ToString();
    EXPECT_TRUE(docs->empty()) << (*docs)[0].value.dump();
  }
  auto docs = ParseYamlDocuments("--- !x\n--- {a: !x }\n--- [!!null y]\n", "f.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0].value, ordered_json({{"a", nullptr}}));
  EXPECT_EQ((*docs)[1].value, ordered_json::array({nullptr}));
}

TEST(ParseYamlTest, PositionsCountCharactersAndLines) {
  // Columns count characters, not bytes, after multi-byte UTF-8.
  auto docs = ParseYamlDocuments("\xC3\xA9\xC3\xA9: [\xC3\xA9, x]\n", "w");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  EXPECT_EQ((*docs)[0].source_map.Prefix("w", "\xC3\xA9\xC3\xA9[1]"), "w:1:9: ");
  // An empty sequence item is found on its own line, just after its dash.
  auto empty = ParseYamlDocuments("- a\n-\n- b\n", "w");
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ((*empty)[0].value, ordered_json::parse(R"(["a", null, "b"])"));
  EXPECT_EQ((*empty)[0].source_map.Prefix("w", "[1]"), "w:2:2: ");
  // Text that is not UTF-8, or holds control characters, is refused where it goes wrong.
  auto bad_byte = ParseYamlDocuments("a: 1\nb: \xFF\n", "w.yaml");
  ASSERT_FALSE(bad_byte.ok());
  EXPECT_EQ(bad_byte.status().message(),
            "w.yaml:2:4: malformed YAML: invalid leading UTF-8 octet (#xFF)");
  auto control = ParseYamlDocuments("a: b\x01\n", "w.yaml");
  ASSERT_FALSE(control.ok());
  EXPECT_EQ(control.status().message().rfind("w.yaml:1:5: ", 0), 0u) << control.status().message();
}

TEST(ParseYamlTest, ReportsErrorsWithPosition) {
  struct Case {
    std::string name;
    std::string yaml;
    std::string prefix;
    std::string message_part;
  };
  const Case cases[] = {
      {"bad indentation", "a:\n  b: 1\n c: 2\n", "w.yaml:3:", ""},
      {"unclosed flow", "a: [1, 2\nb: 3\n", "w.yaml:", "flow"},
      {"duplicate key", "a: 1\nb: 2\na: 3\n", "w.yaml:3:1: ", "duplicate key \"a\""},
      {"nested duplicate", "x:\n  a: 1\n  a: 2\n", "w.yaml:3:3: ", "duplicate key \"a\""},
      {"complex key", "? [a, b]\n: 1\n", "w.yaml:1:3: ", "keys must be scalars"},
      {"tab indentation", "a:\n\tb: 1\n", "w.yaml:", ""},
      {"bad !!int", "a: !!int abc\n", "w.yaml:1:4: ", "not an integer"},
      {"document starting with a comma", ",\n", "w.yaml:1:1: ", "malformed YAML"},
      {"comma after a sequence", "- a\n,\n", "w.yaml:2:1: ", "malformed YAML"},
      {"comma after a document marker", "a: 1\n---\n,{\n}\n", "w.yaml:3:1: ", "malformed YAML"},
      {"billion laughs",
       "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, "
       "*c]\n"
       "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, "
       "*e]\n",
       "w.yaml:", "too many values after expanding aliases"},
      {"map value in a plain scalar", "a: b: c\n",
       "w.yaml:1:5: ", "mapping values are not allowed"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto docs = ParseYamlDocuments(c.yaml, "w.yaml");
    ASSERT_FALSE(docs.ok()) << (docs->empty() ? "" : (*docs)[0].value.dump());
    std::string message = docs.status().message();
    EXPECT_EQ(message.substr(0, c.prefix.size()), c.prefix) << message;
    EXPECT_NE(message.find(c.message_part), std::string::npos) << message;
  }
}

TEST(ParseYamlTest, ResolvesAnchorsAndAliases) {
  struct Case {
    std::string yaml;
    ordered_json expected;
  };
  const Case cases[] = {
      {"a: &x [1, 2]\nb: *x\n", {{"a", {1, 2}}, {"b", {1, 2}}}},
      {"- &s hello\n- *s\n", {"hello", "hello"}},
      {"a: &n 5\nb: *n\n", {{"a", 5}, {"b", 5}}},
      {"a: &q '5'\nb: *q\n", {{"a", "5"}, {"b", "5"}}},
      {"a: &z\nb: *z\n", {{"a", nullptr}, {"b", nullptr}}},
      {"a: &k name\n*k : 2\n", {{"a", "name"}, {"name", 2}}},
      {"a: &m {x: &i 1, y: [*i]}\nb: [*m, *m]\n",
       {{"a", {{"x", 1}, {"y", {1}}}}, {"b", {{{"x", 1}, {"y", {1}}}, {{"x", 1}, {"y", {1}}}}}}},
      // Merge keys (a YAML 1.1 type, not in 1.2 core) are not applied: "<<" is a plain key.
      {"base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n",
       {{"base", {{"x", 1}}}, {"d", {{"<<", {{"x", 1}}}, {"y", 2}}}}},
      // A redefined anchor refers to its latest definition.
      {"a: &x 1\nb: &x 2\nc: *x\n", {{"a", 1}, {"b", 2}, {"c", 2}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    auto docs = ParseYamlDocuments(c.yaml, "f.yaml");
    ASSERT_TRUE(docs.ok()) << docs.status().ToString();
    ASSERT_EQ(docs->size(), 1u);
    EXPECT_EQ((*docs)[0].value, c.expected) << (*docs)[0].value.dump();
  }

  // An alias's members are found at the anchored node's positions; a member holding an alias
  // is found at its own key.
  auto docs = ParseYamlDocuments(
      "defaults: &d\n  image: x\n  env: [a]\ntasks:\n- *d\n- name: t\n  "
      "opts: *d\n",
      "w");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  const JsonSourceMap& map = (*docs)[0].source_map;
  EXPECT_EQ(map.Prefix("w", "tasks[0].image"), "w:2:3: ");
  EXPECT_EQ(map.Prefix("w", "tasks[0].env[0]"), "w:3:9: ");
  EXPECT_EQ(map.Prefix("w", "tasks[1].opts"), "w:7:3: ");
  EXPECT_EQ(map.Prefix("w", "tasks[1].opts.env"), "w:3:3: ");
  EXPECT_EQ(map.Prefix("w", "tasks[0].missing"), "w: ");
}

std::string RepeatText(std::string_view piece, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += piece;
  return out;
}

TEST(ParseYamlTest, RefusesBadAliasesAndDeepNesting) {
  struct Case {
    std::string name;
    std::string yaml;
    std::string prefix;
    std::string message_part;
  };
  const Case cases[] = {
      {"recursive alias", "a: &a [1, *a]\n", "w.yaml:1:11: ", "used recursively"},
      {"recursive alias in a map", "a: &a\n  b: *a\n", "w.yaml:2:6: ", "used recursively"},
      {"map alias as a key", "a: &m {x: 1}\n? *m\n: 2\n", "w.yaml:1:4: ", "keys must be scalars"},
      {"duplicate key through an alias", "a: &k b\nb: 1\n*k : 2\n",
       "w.yaml:3:1: ", "duplicate key \"b\""},
      {"duplicate null keys", "~: 1\nnull: 2\n", "w.yaml:2:1: ", "duplicate key \"null\""},
      {"undefined alias", "a: *nope\n", "w.yaml:1:4: ", "undefined anchor \"nope\""},
      // Nesting deeper than 512 is refused, written out or through aliases.
      {"nesting too deep", RepeatText("- ", 600) + "x\n", "w.yaml:1:", ""},
      {"alias expanding too deep",
       "a: &a " + std::string(300, '[') + std::string(300, ']') + "\nb: " + std::string(300, '[') +
           "*a" + std::string(300, ']') + "\n",
       "w.yaml:", "nested deeper than 512 levels"},
      // A syntax error anywhere in the stream wins over a semantic error earlier on.
      {"syntax error after a duplicate key", "a: 1\na: 2\n---\n,\n", "w.yaml:", "malformed YAML"},
      {"bad !!bool", "a: !!bool maybe\n", "w.yaml:1:4: ", "not true or false"},
      {"bad !!float", "a: !!float x\n", "w.yaml:1:4: ", "not a number"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto docs = ParseYamlDocuments(c.yaml, "w.yaml");
    ASSERT_FALSE(docs.ok()) << (docs->empty() ? "" : (*docs)[0].value.dump());
    std::string message = docs.status().message();
    EXPECT_EQ(message.substr(0, c.prefix.size()), c.prefix) << message;
    EXPECT_NE(message.find(c.message_part), std::string::npos) << message;
  }
}

TEST(ParseYamlTest, MalformedStreamsTerminateWithAnError) {
  // Inputs on which the previous parser emitted events forever: each ends with an error.
  const std::string cases[] = {",\n", "- a\n,\n", "a: 1\n---\n,{\n}\n", ",,,,\n", "[a]\n,\n"};
  for (const std::string& yaml : cases) {
    SCOPED_TRACE(yaml);
    auto docs = ParseYamlDocuments(yaml, "w.yaml");
    ASSERT_FALSE(docs.ok());
    EXPECT_EQ(docs.status().message().rfind("w.yaml:", 0), 0u) << docs.status().message();
  }
}

TEST(ParseJsonOrYamlTest, ChoosesByContent) {
  struct Case {
    std::string name;
    std::string text;
    size_t documents;
    std::string first_dump;
  };
  const Case cases[] = {
      {"json object", "  {\"b\": 1, \"a\": \"1\"}", 1, R"({"b":1,"a":"1"})"},
      {"json array is one document", "[{\"a\": 1}, {\"a\": 2}]", 1, R"([{"a":1},{"a":2}])"},
      {"yaml", "b: 1\na: '1'\n", 1, R"({"b":1,"a":"1"})"},
      {"multi yaml", "a: 1\n---\na: 2\n", 2, R"({"a":1})"},
      {"yaml flow mapping", "{a: 1}", 1, R"({"a":1})"},
      {"empty", "", 0, ""},
      {"bom", "\xEF\xBB\xBF{\"a\": 1}", 1, R"({"a":1})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto docs = ParseJsonOrYamlDocuments(c.text, "x");
    ASSERT_TRUE(docs.ok()) << docs.status().ToString();
    ASSERT_EQ(docs->size(), c.documents);
    if (c.documents > 0) {
      EXPECT_EQ((*docs)[0].dump(), c.first_dump);
    }
  }
  // JSON-looking input that is broken reports the JSON position.
  auto broken = ParseJsonOrYamlDocuments(kSeed000A100, "a100_pod_template.json");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().message().rfind("a100_pod_template.json:14:9: ", 0), 0u)
      << broken.status().message();
}

TEST(ToYamlTest, WritesReadableBlockYaml) {
  ordered_json value = ordered_json::parse(R"({
    "name": "pool",
    "count": 3,
    "ratio": 1.5,
    "enabled": true,
    "nothing": null,
    "quoted": ["1", "true", "null", "", " pad", "a: b", "-x", "yes", "1.5", "#c", "x #y",
               "line\nbreak", "0x1F", "1e3", "2024-01-01"],
    "plain": ["500m", "64Gi", "nvidia.com/gpu", "NVIDIA-A100", "1h30m", "a-b_c.d"],
    "empty_map": {},
    "empty_list": [],
    "nested": {"labels": {"a": "1"}, "list": [{"name": "c", "ports": [1, 2]}, [1, [2]]]}
  })");
  std::string yaml = ToYaml(value);
  EXPECT_EQ(yaml, R"(name: pool
count: 3
ratio: 1.5
enabled: true
nothing: null
quoted:
- "1"
- "true"
- "null"
- ""
- " pad"
- "a: b"
- "-x"
- "yes"
- "1.5"
- "#c"
- "x #y"
- |-
  line
  break
- "0x1F"
- "1e3"
- "2024-01-01"
plain:
- 500m
- 64Gi
- nvidia.com/gpu
- NVIDIA-A100
- 1h30m
- a-b_c.d
empty_map: {}
empty_list: []
nested:
  labels:
    a: "1"
  list:
  - name: c
    ports:
    - 1
    - 2
  - - 1
    - - 2
)");
  // And it reads back to the same value.
  auto back = ParseYamlDocuments(yaml, "out.yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].value, value);
}

TEST(ToYamlTest, MultiLineStringsAsLiteralBlocks) {
  struct Case {
    std::string name;
    ordered_json value;
    std::string yaml;
  };
  const Case cases[] = {
      {"clip",
       {{"script", "echo a\n  indented\n\necho b\n"}},
       "script: |\n  echo a\n    indented\n\n  echo b\n"},
      {"strip", {{"s", "a\nb"}}, "s: |-\n  a\n  b\n"},
      {"keep", {{"s", "a\n\n\n"}}, "s: |+\n  a\n\n\n"},
      {"in a list", {{"args", {"-c", "set -e\nrun\n"}}}, "args:\n- \"-c\"\n- |\n  set -e\n  run\n"},
      {"in a list of maps",
       {{"tasks", {{{"name", "t"}, {"script", "a\nb\n"}}}}},
       "tasks:\n- name: t\n  script: |\n    a\n    b\n"},
      {"leading space falls back to quotes", {{"s", " a\nb"}}, "s: \" a\\nb\"\n"},
      {"carriage return falls back to quotes", {{"s", "a\r\nb"}}, "s: \"a\\r\\nb\"\n"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string yaml = ToYaml(c.value);
    EXPECT_EQ(yaml, c.yaml);
    auto back = ParseYamlDocuments(yaml, "out.yaml");
    ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << yaml;
    ASSERT_EQ(back->size(), 1u);
    EXPECT_EQ((*back)[0].value, c.value) << yaml;
  }
}

TEST(ToYamlTest, RoundTripsScalarsAndOddKeys) {
  const ordered_json values[] = {ordered_json("x"), ordered_json(5), ordered_json(nullptr),
                                 ordered_json::array(), ordered_json::object(),
                                 ordered_json::parse(R"({"1": "a", "": 2, "a b": {"k: v": []}})"),
                                 ordered_json::parse(R"([[], {}, [{}]])"),
                                 // Line breaks (NEL, LS, PS), a byte-order mark, DEL, a C1
                                 // control and a noncharacter, which YAML reads only escaped.
                                 ordered_json::parse(R"({"k\u2028": "a\u0085b", "x": "\u2029",
                                     "bom": "\ufeffbom", "del": "d\u007f", "c1": "\u0090",
                                     "nc": "\uffff", "block": "l1\u2028\nl2\n"})"),
                                 // Keys past YAML's 1,024 characters for an implicit key (found
                                 // by the json fuzz target), in a mapping and in a sequence.
                                 [] {
                                   ordered_json item;
                                   item["k"] = 1;
                                   item[std::string(1030, 'q')] = ordered_json::array({1, 2});
                                   ordered_json v;
                                   v[std::string(1100, 'k')] = {{"a", 1}};
                                   v["s"] = ordered_json::array({item});
                                   v[std::string(1025, 'x') + "\n"] = nullptr;
                                   return v;
                                 }()};
  for (const ordered_json& v : values) {
    SCOPED_TRACE(v.dump());
    std::string yaml = ToYaml(v);
    auto back = ParseYamlDocuments(yaml, "out.yaml");
    ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << yaml;
    if (v.is_null()) {
      EXPECT_TRUE(back->empty());  // a null document is skipped
    } else {
      ASSERT_EQ(back->size(), 1u) << yaml;
      EXPECT_EQ((*back)[0].value, v) << yaml;
    }
  }
}

TEST(FieldPathTest, BuildsPaths) {
  EXPECT_EQ(FieldPath("", "spec"), "spec");
  EXPECT_EQ(FieldPath("spec", "containers"), "spec.containers");
  EXPECT_EQ(IndexPath(FieldPath("spec", "containers"), 0), "spec.containers[0]");
  EXPECT_EQ(FieldPath(IndexPath("spec.containers", 2), "resources"),
            "spec.containers[2].resources");
  EXPECT_EQ(JsonTypeName(ordered_json::array()), "array");
  EXPECT_EQ(JsonTypeName(ordered_json(1.5)), "number");
}

TEST(ReadFileTest, ReadsAndReportsMissing) {
  std::string path = std::string(GPUPOOL_BINARY_DIR) + "/json_io_test_read.txt";
  {
    std::ofstream out(path, std::ios::binary);
    out << "hello\nworld";
  }
  auto text = ReadFile(path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "hello\nworld");
  std::remove(path.c_str());
  auto missing = ReadFile(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(path), std::string::npos);
}

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

}  // namespace
}  // namespace gpupool::model

namespace gpupool::model {
namespace {

// DumpCompact promises nlohmann's dump() byte for byte: every case is checked against it.
TEST(DumpCompactTest, MatchesNlohmannDumpOnEveryKindOfValue) {
  const std::vector<ordered_json> cases = {
      ordered_json(nullptr),
      ordered_json(true),
      ordered_json(false),
      ordered_json(0),
      ordered_json(-1),
      ordered_json(std::numeric_limits<int64_t>::min()),
      ordered_json(std::numeric_limits<int64_t>::max()),
      ordered_json(std::numeric_limits<uint64_t>::max()),
      ordered_json(0.1),
      ordered_json(1.0),
      ordered_json(-0.0),
      ordered_json(1e21),
      ordered_json(123456.789e-300),
      ordered_json(""),
      ordered_json("plain ascii ~!@#$%^&*()_+{}|:<>?`-=[];',./"),
      ordered_json("quote \" and backslash \\"),
      ordered_json("tab\tnewline\ncarriage\rnul" + std::string(1, '\0') + "bell\x07"),
      ordered_json("del \x7f stays"),
      ordered_json("unicode: H100 \xc3\xa9\xe2\x82\xac \xf0\x9f\x9a\x80"),
      ordered_json::object(),
      ordered_json::array(),
      ordered_json::parse(R"({"b":1,"a":[1,2.5,"x",null,{}],"é":{"k\"":[[]]}})"),
  };
  for (const ordered_json& value : cases) {
    EXPECT_EQ(DumpCompact(value), value.dump()) << value.dump();
  }
}

// nlohmann's dump() throws on a string that is not UTF-8 (on the server's I/O loop, that ended
// the process); DumpCompact replaces the bytes and says so when asked.
TEST(DumpCompactTest, ReplacesInvalidUtf8AndSaysSo) {
  ordered_json bad = {{"name", std::string("\xff\xfe")}, {"fine", "caf\xC3\xA9"}};
  EXPECT_THROW((void)bad.dump(), nlohmann::json::type_error);
  bool invalid = false;
  EXPECT_EQ(DumpCompact(bad, &invalid),
            "{\"name\":\"\xEF\xBF\xBD\xEF\xBF\xBD\",\"fine\":\"caf\xC3\xA9\"}");
  EXPECT_TRUE(invalid);
  ordered_json bad_key = {{std::string("k\xC0\xAE"), 1}};
  invalid = false;
  EXPECT_NO_THROW((void)DumpCompact(bad_key, &invalid));
  EXPECT_TRUE(invalid);
  invalid = false;
  (void)DumpCompact(ordered_json{{"fine", "caf\xC3\xA9 \u00e9"}}, &invalid);
  EXPECT_FALSE(invalid);
}

TEST(DumpCompactTest, MatchesNlohmannDumpOnTheSeedsAndNodeObjects) {
  const std::string root = std::string(GPUPOOL_SOURCE_DIR) + "/src/config/testdata/";
  int checked = 0;
  for (const char* file :
       {"seed000/platform_config.json", "seed000/role_config.json",
        "seed001/robotics_training.json", "seed002/l40s_pod_template.json", "nodes.json"}) {
    auto text = ReadFile(root + file);
    ASSERT_TRUE(text.ok()) << file;
    auto value = ParseJson(*text, file);
    ASSERT_TRUE(value.ok()) << value.status().message();
    EXPECT_EQ(DumpCompact(*value), value->dump()) << file;
    ++checked;
  }
  EXPECT_EQ(checked, 5);
}

// Random documents (fixed seed): nesting, key order, and strings drawn from bytes that need
// no escape, need one, or are multi-byte UTF-8.
ordered_json RandomValue(std::mt19937& rng, int depth) {
  static const std::vector<std::string> kPieces = {
      "a",  "Z",    "0",    " ",    "-",        "\"",          "\\",
      "\n", "\x01", "\x1f", "\x7f", "\xc3\xa9", "\xe2\x82\xac"};
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto random_string = [&] {
    std::string s;
    for (int i = pick(8); i > 0; --i) s += kPieces[pick(static_cast<int>(kPieces.size()))];
    return s;
  };
  switch (depth > 3 ? pick(5) : pick(7)) {
    case 0:
      return ordered_json(random_string());
    case 1:
      return ordered_json(static_cast<int64_t>(rng()) - (int64_t{1} << 31));
    case 2:
      return ordered_json(static_cast<double>(rng()) / 7.0);
    case 3:
      return pick(2) ? ordered_json(pick(2) == 1) : ordered_json(nullptr);
    case 4:
      return ordered_json(static_cast<uint64_t>(rng()) << 32);
    case 5: {
      ordered_json object = ordered_json::object();
      for (int i = pick(5); i > 0; --i) object[random_string()] = RandomValue(rng, depth + 1);
      return object;
    }
    default: {
      ordered_json array = ordered_json::array();
      for (int i = pick(5); i > 0; --i) array.push_back(RandomValue(rng, depth + 1));
      return array;
    }
  }
}

TEST(DumpCompactTest, MatchesNlohmannDumpOnRandomDocuments) {
  std::mt19937 rng(20261124);
  for (int i = 0; i < 2000; ++i) {
    ordered_json value = RandomValue(rng, 0);
    ASSERT_EQ(DumpCompact(value), value.dump()) << "document " << i;
  }
}

}  // namespace
}  // namespace gpupool::model
