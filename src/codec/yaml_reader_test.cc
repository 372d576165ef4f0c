#include "codec/yaml_reader.h"

#include <gtest/gtest.h>

#include "codec/test_util.h"

namespace gpupool::codec {
namespace yaml_reader_test {

using nlohmann::ordered_json;
using testing::kSeed000A100;

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

}  // namespace yaml_reader_test
}  // namespace gpupool::codec
