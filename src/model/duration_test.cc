#include "model/duration.h"

#include <gtest/gtest.h>

#include "common/strings.h"

namespace gpupool::model {
namespace duration_test {

TEST(DurationTest, ParsesSeconds) {
  struct Case {
    std::string input;
    int64_t seconds;
  };
  const Case cases[] = {
      {"0", 0},
      {"45", 45},
      {"45s", 45},
      {"5m", 300},
      {"2h", 7200},
      {"1d", 86400},
      {"1h30m", 5400},
      {"1d2h3m4s", 93784},
      {"1h0m0s", 3600},
      {"500ms", 1},
      {"1500ms", 2},
      {"2s500ms", 3},
      {"1000ms", 1},
      {"0s", 0},
      {"1.5h", 5400},
      {"0.5s", 1},
      {" 10m ", 600},
      {"PT2H", 7200},
      {"P1DT2H", 93600},
      {"PT1H30M", 5400},
      {"PT45S", 45},
      {"PT0.5S", 1},
      {"P2D", 172800},
      {"P1W", 604800},
      {"P1DT2H30M15S", 95415},
      {"pt2h", 7200},
      {"PT1.5H", 5400},
      {"PT0S", 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input);
    auto seconds = ParseDurationSeconds(c.input);
    ASSERT_TRUE(seconds.ok()) << seconds.status().ToString();
    EXPECT_EQ(*seconds, c.seconds);
  }
}

TEST(DurationTest, RejectsInvalid) {
  struct Case {
    std::string input;
    std::string message_part;
  };
  const Case cases[] = {
      {"", "empty"},
      {"   ", "empty"},
      {"h", "expected a number"},
      {"1x", "unknown unit \"x\""},
      {"1H", "unknown unit \"H\""},
      {"1m1h", "largest to smallest"},
      {"1h1h", "largest to smallest"},
      {"1h30", "no unit"},
      {"-5m", "negative"},
      {"P", "no components"},
      {"PT", "nothing after 'T'"},
      {"P1H", "date part"},
      {"PT1D", "time part"},
      {"P1Y", "date part"},
      {"PT1S2M", "time part"},
      {"P1", "without a designator"},
      {"1..5h", "no unit"},
      {"99999999999999999999s", "too large"},
      {"1 h", "unknown unit \" h\""},
      // A designator outside ASCII is quoted whole: one byte of it would make the message
      // invalid UTF-8 (found by fuzz/duration_fuzz.cc).
      {"P,0540\u039c\u04af", "unexpected designator '\u039c' in the date part"},
      {"PT1\u00e9", "unexpected designator '\u00e9' in the time part"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input);
    auto seconds = ParseDurationSeconds(c.input);
    ASSERT_FALSE(seconds.ok()) << "parsed as " << *seconds;
    EXPECT_EQ(seconds.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(seconds.status().message().find("\"" + c.input + "\""), std::string::npos)
        << seconds.status().message();
    EXPECT_NE(seconds.status().message().find(c.message_part), std::string::npos)
        << seconds.status().message();
    EXPECT_TRUE(IsValidUtf8(seconds.status().message())) << seconds.status().message();
  }
}

TEST(DurationTest, IsEmptyDuration) {
  EXPECT_TRUE(IsEmptyDuration(""));
  EXPECT_TRUE(IsEmptyDuration(" \t"));
  EXPECT_FALSE(IsEmptyDuration("0"));
  EXPECT_FALSE(IsEmptyDuration("1h"));
}

TEST(DurationTest, Formats) {
  struct Case {
    int64_t seconds;
    std::string text;
  };
  const Case cases[] = {
      {0, "0s"},           {45, "45s"},    {60, "1m"},      {5400, "1h30m"},      {172800, "2d"},
      {93784, "1d2h3m4s"}, {3601, "1h1s"}, {-90, "-1m30s"}, {86399, "23h59m59s"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.seconds);
    EXPECT_EQ(FormatDuration(c.seconds), c.text);
    auto back = ParseDurationSeconds(c.text);
    if (c.seconds >= 0) {
      ASSERT_TRUE(back.ok());
      EXPECT_EQ(*back, c.seconds);
    }
  }
}

}  // namespace duration_test
}  // namespace gpupool::model
