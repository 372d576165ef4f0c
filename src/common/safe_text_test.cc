#include "common/safe_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "common/strings.h"
#include "common/table.h"

namespace gpupool {
namespace safe_text_test {

TEST(SafeTextTest, ToValidUtf8ReplacesEachBadByte) {
  struct Case {
    std::string in;
    std::string out;
  };
  const std::string kReplacement = "\xEF\xBF\xBD";
  std::vector<Case> cases = {
      {"plain", "plain"},
      {"caf\xC3\xA9 \xE2\x80\xAE", "caf\xC3\xA9 \xE2\x80\xAE"},  // valid stays as it is
      {"\xFF", kReplacement},
      {"a\xFF\xFE"
       "b",
       "a" + kReplacement + kReplacement + "b"},
      {"\xC0\xAE", kReplacement + kReplacement},                     // overlong '.'
      {"\xED\xA0\x80", kReplacement + kReplacement + kReplacement},  // surrogate
      {"\xE2\x82", kReplacement + kReplacement},                     // truncated
      {"\xF4\x90\x80\x80",
       kReplacement + kReplacement + kReplacement + kReplacement},  // > U+10FFFF
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.in);
    std::string got = ToValidUtf8(c.in);
    EXPECT_TRUE(IsValidUtf8(got));
    EXPECT_EQ(got, c.out);
  }
}

TEST(SafeTextTest, FindInvalidUtf8GivesLineColumnAndByte) {
  EXPECT_FALSE(FindInvalidUtf8("fine\nt\xC3\xA9xt").has_value());
  auto bad = FindInvalidUtf8("first\nsé\xFFz");
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->line, 2u);
  EXPECT_EQ(bad->column, 3u);  // columns count characters: 's', 'é', then the bad byte
  EXPECT_EQ(bad->ByteText(), "0xff");
}

TEST(SafeTextTest, TerminalSafeEscapesControlsAndBidiVisibly) {
  struct Case {
    std::string in;
    std::string out;
  };
  std::vector<Case> cases = {
      {"ordinary text, é ü 日本", "ordinary text, é ü 日本"},
      {"\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"},
      {std::string("nul\0here", 8), "nul\\x00here"},
      {"tab\tnew\nline\rcr", "tab\\x09new\\x0aline\\x0dcr"},
      {"del\x7f", "del\\x7f"},
      {"\xC2\x9B"
       "c1 CSI",
       "\\u009bc1 CSI"},
      {"evil\xE2\x80\xAEtxt.exe", "evil\\u202etxt.exe"},
      {"\xE2\x81\xA6iso\xE2\x81\xA9", "\\u2066iso\\u2069"},
      {"\xE2\x80\x8F\xD8\x9C", "\\u200f\\u061c"},
      {"line\xE2\x80\xA8sep", "line\\u2028sep"},
      {"bad\xFF", "bad\\xff"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.out);
    EXPECT_EQ(TerminalSafe(c.in), c.out);
  }
  EXPECT_EQ(TerminalSafe("a\nb\x1b", Newlines::kKeep), "a\nb\\x1b");
}

TEST(SafeTextTest, DumpJsonNeverThrowsOnInvalidUtf8) {
  nlohmann::ordered_json ordered = {{"description", "\xFF\xFE"}, {"ok", "caf\xC3\xA9"}};
  EXPECT_THROW((void)ordered.dump(), nlohmann::json::type_error);  // what DumpJson prevents
  std::string text = DumpJson(ordered);
  EXPECT_EQ(text, "{\"description\":\"\xEF\xBF\xBD\xEF\xBF\xBD\",\"ok\":\"caf\xC3\xA9\"}");
  EXPECT_TRUE(IsValidUtf8(text));
  nlohmann::json plain = {{"k", std::string("\xC0\xAE")}};
  EXPECT_NO_THROW((void)DumpJson(plain, 2));
  EXPECT_TRUE(nlohmann::json::accept(DumpJson(plain, 2)));
}

TEST(TableTest, CellsAreMadeSafeAndAligned) {
  std::string table = FormatTable({{"NAME", "DESCRIPTION", "X"},
                                   {"a", "\x1b]0;pwned\x07", "1"},
                                   {"b", std::string("nul\0", 4), "2"},
                                   {"c", "\xE2\x80\xAEgnp.exe", ""},
                                   {"d\xC3\xA9", "ok", "3"}});
  EXPECT_EQ(table.find('\x1b'), std::string::npos);
  EXPECT_EQ(table.find('\0'), std::string::npos);
  EXPECT_EQ(table.find("\xE2\x80\xAE"), std::string::npos);
  EXPECT_EQ(table,
            "NAME  DESCRIPTION       X\n"
            "a     \\x1b]0;pwned\\x07  1\n"
            "b     nul\\x00           2\n"
            "c     \\u202egnp.exe\n"                // no trailing spaces for an empty last cell
            "d\xC3\xA9    ok                3\n");  // é takes one column
}

}  // namespace safe_text_test
}  // namespace gpupool
