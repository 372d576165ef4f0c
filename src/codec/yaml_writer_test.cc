#include "codec/yaml_writer.h"

#include <gtest/gtest.h>

#include "codec/yaml_reader.h"

namespace gpupool::codec {
namespace yaml_writer_test {

using nlohmann::ordered_json;

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
                                 // A document end marker as a string (found by the yaml fuzz
                                 // target: `!f ...` read back as "...").
                                 ordered_json("..."), ordered_json("... x"),
                                 ordered_json::parse(R"({"a": "...", "b": ["..."]})"),
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

}  // namespace yaml_writer_test
}  // namespace gpupool::codec
