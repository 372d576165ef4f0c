#include "common/status.h"

#include <gtest/gtest.h>

#include "common/strings.h"

namespace gpupool {
namespace status_test {

Result<int> ParsePositive(int v) {
  if (v <= 0) return InvalidArgumentError("not positive: " + std::to_string(v));
  return v;
}

Result<int> Doubled(int v) {
  ASSIGN_OR_RETURN(int x, ParsePositive(v));
  return x * 2;
}

Status Check(int v) {
  RETURN_IF_ERROR(ParsePositive(v).status());
  return OkStatus();
}

TEST(StatusTest, ResultCarriesValueOrError) {
  EXPECT_EQ(*Doubled(4), 8);
  Result<int> bad = Doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().ToString(), "INVALID_ARGUMENT: not positive: -1");
  EXPECT_TRUE(Check(1).ok());
  EXPECT_EQ(Check(0).message(), "not positive: 0");
}

TEST(StatusTest, WithContextPrefixes) {
  Status s = NotFoundError("pod template \"x\"").WithContext("pool p");
  EXPECT_EQ(s.message(), "pool p: pod template \"x\"");
  EXPECT_TRUE(OkStatus().WithContext("ignored").ok());
}

TEST(StringsTest, DidYouMean) {
  struct Case {
    std::string word;
    std::vector<std::string> candidates;
    std::string want;
  };
  std::vector<Case> cases = {
      {"default_platfrom", {"default_platform", "description"}, "default_platform"},
      {"platfroms", {"platforms", "backend"}, "platforms"},
      {"zzzzzz", {"platforms", "backend"}, ""},
      {"Backend", {"backend"}, "backend"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.word);
    EXPECT_EQ(ClosestMatch(c.word, c.candidates), c.want);
  }
}

TEST(StringsTest, IsValidUtf8) {
  struct Case {
    std::string text;
    bool want;
  };
  const std::vector<Case> cases = {
      {"", true},
      {"alice", true},
      {"Zo\xC3\xAB", true},            // U+00EB
      {"\xE2\x82\xAC", true},          // U+20AC
      {"\xF0\x9F\x9A\x80", true},      // U+1F680
      {"\xF4\x8F\xBF\xBF", true},      // U+10FFFF, the last code point
      {"\xFF", false},                 // never valid
      {"\x80", false},                 // continuation without a lead
      {"\xC0\xAF", false},             // overlong '/'
      {"\xE0\x80\xAF", false},         // overlong '/'
      {"\xED\xA0\x80", false},         // surrogate U+D800
      {"\xF4\x90\x80\x80", false},     // above U+10FFFF
      {"\xC3", false},                 // truncated
      {"ab\xE2\x82", false},           // truncated at the end
      {std::string("a\0b", 3), true},  // NUL is a code point
  };
  for (const Case& c : cases)
    EXPECT_EQ(IsValidUtf8(c.text), c.want) << testing::PrintToString(c.text);
}

TEST(StringsTest, IsPrintableLine) {
  EXPECT_TRUE(IsPrintableLine("pools/zo\xC3\xAB.json", 100));
  EXPECT_TRUE(IsPrintableLine("", 0));
  EXPECT_FALSE(IsPrintableLine("a\nb", 100));
  EXPECT_FALSE(IsPrintableLine("a\x7F", 100));
  EXPECT_FALSE(IsPrintableLine("\xC0\xAF", 100));
  EXPECT_FALSE(IsPrintableLine("abcd", 3));
}

TEST(StringsTest, SplitJoinTrim) {
  EXPECT_EQ(Split("a,b,,c", ','), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(Join({"a", "b"}, ", "), "a, b");
  EXPECT_EQ(Trim("  x y \n"), "x y");
}

}  // namespace status_test
}  // namespace gpupool
