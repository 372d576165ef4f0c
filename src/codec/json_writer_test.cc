#include "codec/json_writer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

#include "codec/json_reader.h"

namespace gpupool::codec {
namespace json_writer_test {

using nlohmann::ordered_json;

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

// The whole of a file, or nullopt when it cannot be read.
std::optional<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(DumpCompactTest, MatchesNlohmannDumpOnTheSeedsAndNodeObjects) {
  const std::string root = std::string(GPUPOOL_SOURCE_DIR) + "/src/config/testdata/";
  int checked = 0;
  for (const char* file :
       {"seed000/platform_config.json", "seed000/role_config.json",
        "seed001/robotics_training.json", "seed002/l40s_pod_template.json", "nodes.json"}) {
    std::optional<std::string> text = ReadWholeFile(root + file);
    ASSERT_TRUE(text.has_value()) << file;
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

}  // namespace json_writer_test
}  // namespace gpupool::codec
