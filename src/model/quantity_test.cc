#include "model/quantity.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "model/duration.h"

namespace gpupool::model {
namespace quantity_test {

using nlohmann::ordered_json;

TEST(QuantityTest, ParsesAndPrintsCanonically) {
  struct Case {
    std::string input;
    int64_t milli;
    std::string canonical;
    QuantityFormat format;
  };
  const Case cases[] = {
      {"0", 0, "0", QuantityFormat::kDecimalSI},
      {"500m", 500, "500m", QuantityFormat::kDecimalSI},
      {"1", 1000, "1", QuantityFormat::kDecimalSI},
      {"2", 2000, "2", QuantityFormat::kDecimalSI},
      {"1.5", 1500, "1500m", QuantityFormat::kDecimalSI},
      {"0.5", 500, "500m", QuantityFormat::kDecimalSI},
      {".5", 500, "500m", QuantityFormat::kDecimalSI},
      {"5.", 5000, "5", QuantityFormat::kDecimalSI},
      {"+5", 5000, "5", QuantityFormat::kDecimalSI},
      {"1000", 1000000, "1k", QuantityFormat::kDecimalSI},
      {"1500", 1500000, "1500", QuantityFormat::kDecimalSI},
      {"1k", 1000000, "1k", QuantityFormat::kDecimalSI},
      {"1M", 1000000000, "1M", QuantityFormat::kDecimalSI},
      {"1G", 1000000000000, "1G", QuantityFormat::kDecimalSI},
      {"1T", 1000000000000000, "1T", QuantityFormat::kDecimalSI},
      {"1P", 1000000000000000000, "1P", QuantityFormat::kDecimalSI},
      {"64Gi", 68719476736000, "64Gi", QuantityFormat::kBinarySI},
      {"1Gi", 1073741824000, "1Gi", QuantityFormat::kBinarySI},
      {"1.5Gi", 1610612736000, "1536Mi", QuantityFormat::kBinarySI},
      {"0.5Gi", 536870912000, "512Mi", QuantityFormat::kBinarySI},
      {"1024Mi", 1073741824000, "1Gi", QuantityFormat::kBinarySI},
      {"1Ki", 1024000, "1Ki", QuantityFormat::kBinarySI},
      {"1Mi", 1048576000, "1Mi", QuantityFormat::kBinarySI},
      {"1Ti", 1099511627776000, "1Ti", QuantityFormat::kBinarySI},
      {"1Pi", 1125899906842624000, "1Pi", QuantityFormat::kBinarySI},
      // BinarySI below 1024 or with a fraction prints as DecimalSI.
      {"0.5Ki", 512000, "512", QuantityFormat::kBinarySI},
      {"1.001Ki", 1025024, "1025024m", QuantityFormat::kBinarySI},
      {"32900632Ki", 33690247168000, "32900632Ki", QuantityFormat::kBinarySI},
      {"1e3", 1000000, "1e3", QuantityFormat::kDecimalExponent},
      {"1E3", 1000000, "1e3", QuantityFormat::kDecimalExponent},
      {"1e-3", 1, "1e-3", QuantityFormat::kDecimalExponent},
      {"1.5e3", 1500000, "1500", QuantityFormat::kDecimalExponent},
      {"2e6", 2000000000, "2e6", QuantityFormat::kDecimalExponent},
      {"1e+3", 1000000, "1e3", QuantityFormat::kDecimalExponent},
      {"0.1m", 1, "1m", QuantityFormat::kDecimalSI},
      {"0.001", 1, "1m", QuantityFormat::kDecimalSI},
      {"0.0001", 1, "1m", QuantityFormat::kDecimalSI},
      {"1.0001", 1001, "1001m", QuantityFormat::kDecimalSI},
      {"100u", 1, "1m", QuantityFormat::kDecimalSI},
      {"1n", 1, "1m", QuantityFormat::kDecimalSI},
      {"1000n", 1, "1m", QuantityFormat::kDecimalSI},
      {"1000000n", 1, "1m", QuantityFormat::kDecimalSI},
      {"1500000n", 2, "2m", QuantityFormat::kDecimalSI},
      {"250m", 250, "250m", QuantityFormat::kDecimalSI},
      {"1000m", 1000, "1", QuantityFormat::kDecimalSI},
      {"007", 7000, "7", QuantityFormat::kDecimalSI},
      {"1.G", 1000000000000, "1G", QuantityFormat::kDecimalSI},
      {"1.50", 1500, "1500m", QuantityFormat::kDecimalSI},
      {"-1", -1000, "-1", QuantityFormat::kDecimalSI},
      {"-500m", -500, "-500m", QuantityFormat::kDecimalSI},
      {"-1.5Gi", -1610612736000, "-1536Mi", QuantityFormat::kBinarySI},
      {"-0.1m", -1, "-1m", QuantityFormat::kDecimalSI},
      {"0Gi", 0, "0", QuantityFormat::kBinarySI},
      {"0.000", 0, "0", QuantityFormat::kDecimalSI},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input);
    auto q = Quantity::Parse(c.input);
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    EXPECT_EQ(q->MilliValue(), c.milli);
    EXPECT_EQ(q->ToString(), c.canonical);
    EXPECT_EQ(q->format(), c.format);
    // The canonical form parses back to the same value.
    auto again = Quantity::Parse(q->ToString());
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(again->MilliValue(), c.milli);
  }
}

TEST(QuantityTest, RejectsInvalidForms) {
  struct Case {
    std::string input;
    std::string message_part;
  };
  const Case cases[] = {
      {"", "empty"},
      {"1.2.3", "more than one decimal point"},
      {"Gi", "expected a number"},
      {"1gi", "unknown suffix \"gi\""},
      {"1GI", "unknown suffix \"GI\""},
      {"1K", "unknown suffix \"K\""},
      {"--1", "more than one sign"},
      {"+-1", "more than one sign"},
      {"1 Gi", "contains a space"},
      {" 1", "expected a number"},
      {"1 ", "contains a space"},
      {"1e", "unknown suffix \"e\""},
      {"1e1.5", "unknown suffix \"e1.5\""},
      {"1Gib", "unknown suffix \"Gib\""},
      {".", "no digits"},
      {"-", "expected a number"},
      {"abc", "expected a number"},
      {"1-", "misplaced sign"},
      {"1m1", "unknown suffix \"m1\""},
      {"10E", "too large"},
      {"8Ei", "too large"},
      {"9223372036854775808", "too large"},
      {"-9223372036854775808", "too large"},
      {"1e400", "too large"},
      {"1e100000000000", "too large"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input);
    auto q = Quantity::Parse(c.input);
    ASSERT_FALSE(q.ok()) << "parsed as " << q->ToString();
    EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(q.status().message().find("\"" + c.input + "\""), std::string::npos)
        << q.status().message();
    EXPECT_NE(q.status().message().find(c.message_part), std::string::npos) << q.status().message();
  }
}

TEST(QuantityTest, LargestValues) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto q = Quantity::Parse("9P");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->Value(), 9000000000000000);
  EXPECT_EQ(q->MilliValue(), 9000000000000000000);
  // Kubernetes' range goes on to 2^63-1 units, far past int64 milli-units (9.2P): a node's
  // `memory: 3Ei` is exact in units; its milli-units saturate.
  struct Case {
    std::string input;
    int64_t value;
    std::string canonical;
  };
  const Case cases[] = {
      {"3Ei", 3458764513820540928, "3Ei"},
      {"1E", 1000000000000000000, "1E"},
      {"10P", 10000000000000000, "10P"},
      {"9223372036854775807", kMax, "9223372036854775807"},
      {"-9223372036854775807", -kMax, "-9223372036854775807"},
      {"9223372036854775806.5", kMax, "9223372036854775806500m"},
      {"7.5Ei", 8646911284551352320, "7680Pi"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input);
    auto big = Quantity::Parse(c.input);
    ASSERT_TRUE(big.ok()) << big.status().ToString();
    EXPECT_EQ(big->Value(), c.value);
    EXPECT_EQ(big->ToString(), c.canonical);
    EXPECT_FALSE(big->FitsMilli());
    EXPECT_EQ(big->MilliValue(), c.value < 0 ? std::numeric_limits<int64_t>::min() : kMax);
    auto again = Quantity::Parse(big->ToString());
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(*again == *big);
  }
  EXPECT_LT(*Quantity::Parse("3Ei"), *Quantity::Parse("4Ei"));
  EXPECT_LT(*Quantity::Parse("9P"), *Quantity::Parse("3Ei"));
  EXPECT_EQ(*Quantity::Parse("3Ei"), *Quantity::Parse("3072Pi"));
  // Sums saturate at the end of the range rather than overflow.
  Quantity max = *Quantity::Parse("9223372036854775807");
  EXPECT_EQ((max + max).Value(), kMax);
  EXPECT_EQ((-max - max).Value(), -kMax);
  EXPECT_EQ(Quantity::FromUnits(kMax).Value(), kMax);
  auto max_milli = Quantity::Parse("9223372036854775807m");
  ASSERT_TRUE(max_milli.ok()) << max_milli.status().ToString();
  EXPECT_EQ(max_milli->MilliValue(), kMax);
  EXPECT_TRUE(max_milli->FitsMilli());
  EXPECT_TRUE(Quantity::Parse("9223372036854775808m").ok());
  // Tiny values far below a milli still round up, whatever the length.
  auto tiny = Quantity::Parse("0." + std::string(100, '0') + "1");
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(tiny->MilliValue(), 1);
  auto tiny_exp = Quantity::Parse("1e-300");
  ASSERT_TRUE(tiny_exp.ok());
  EXPECT_EQ(tiny_exp->MilliValue(), 1);
}

TEST(QuantityTest, ValueRoundsUp) {
  struct Case {
    std::string input;
    int64_t value;
  };
  const Case cases[] = {
      {"500m", 1}, {"1", 1},     {"1001m", 2},   {"64Gi", 68719476736}, {"0", 0},
      {"1.5", 2},  {"-500m", 0}, {"-1500m", -1}, {"1k", 1000},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input);
    auto q = Quantity::Parse(c.input);
    ASSERT_TRUE(q.ok());
    EXPECT_EQ(q->Value(), c.value);
  }
}

TEST(QuantityTest, ComparesAcrossUnits) {
  struct Case {
    std::string smaller;
    std::string larger;
  };
  const Case cases[] = {
      {"500m", "1"},  {"1G", "1Gi"},   {"1k", "1Ki"},  {"999m", "1"},
      {"1M", "1Mi"},  {"1023", "1Ki"}, {"-1", "0"},    {"1e3", "1001"},
      {"0.1m", "2m"}, {"1Gi", "1.1G"}, {"2", "2001m"}, {"1Ti", "1.1T"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.smaller + " < " + c.larger);
    auto a = Quantity::Parse(c.smaller);
    auto b = Quantity::Parse(c.larger);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_LT(*a, *b);
    EXPECT_GT(*b, *a);
    EXPECT_NE(*a, *b);
  }
  struct EqualCase {
    std::string a;
    std::string b;
  };
  const EqualCase equal[] = {{"1", "1000m"},  {"1k", "1e3"},     {"1Ki", "1024"},
                             {"0.5", "500m"}, {"1Gi", "1024Mi"}, {"1G", "1000M"}};
  for (const EqualCase& c : equal) {
    SCOPED_TRACE(c.a + " == " + c.b);
    EXPECT_EQ(*Quantity::Parse(c.a), *Quantity::Parse(c.b));
  }
}

TEST(QuantityTest, Arithmetic) {
  Quantity a = *Quantity::Parse("1.5Gi");
  Quantity b = *Quantity::Parse("512Mi");
  EXPECT_EQ((a + b).ToString(), "2Gi");
  EXPECT_EQ((a - b).ToString(), "1Gi");
  Quantity c = *Quantity::Parse("500m");
  c += *Quantity::Parse("1500m");
  EXPECT_EQ(c.ToString(), "2");
  c -= *Quantity::Parse("3");
  EXPECT_EQ(c.ToString(), "-1");
  EXPECT_EQ((-c).ToString(), "1");
  EXPECT_TRUE((c - c).IsZero());
  // Saturation instead of overflow.
  Quantity max = Quantity::FromMilli(std::numeric_limits<int64_t>::max());
  EXPECT_EQ((max + Quantity::FromUnits(1)).MilliValue(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Quantity::FromUnits(std::numeric_limits<int64_t>::max()).MilliValue(),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Quantity::FromUnits(4).MilliValue(), 4000);
  EXPECT_EQ(Quantity::FromUnits(1 << 30, QuantityFormat::kBinarySI).ToString(), "1Gi");
  EXPECT_EQ(Quantity::FromMilli(1500).ToString(), "1500m");
}

TEST(QuantityTest, ParsesResourceLists) {
  ordered_json json = ordered_json::parse(
      R"({"cpu": "500m", "memory": "64Gi", "nvidia.com/gpu": 1, "ephemeral-storage": 1.5,
          "big": 4000})");
  auto list = ParseResourceList(json, "spec.containers[0].resources.requests");
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->at("cpu").MilliValue(), 500);
  EXPECT_EQ(list->at("memory").Value(), int64_t{64} << 30);
  EXPECT_EQ(list->at("nvidia.com/gpu").MilliValue(), 1000);
  EXPECT_EQ(list->at("ephemeral-storage").MilliValue(), 1500);
  EXPECT_EQ(list->at("big").ToString(), "4k");
  ordered_json back = ResourceListToJson(*list);
  EXPECT_EQ(back["memory"], "64Gi");
  EXPECT_EQ(back["cpu"], "500m");

  EXPECT_TRUE(ParseResourceList(nullptr, "x")->empty());

  struct Case {
    std::string json;
    std::string message;
  };
  const Case errors[] = {
      {R"({"cpu": "1.2.3"})", "spec.resources.cpu: invalid quantity \"1.2.3\""},
      {R"({"cpu": true})",
       "spec.resources.cpu: expected a quantity (string or number), got boolean"},
      {R"({"cpu": {"a": 1}})",
       "spec.resources.cpu: expected a quantity (string or number), got object"},
      {R"([1, 2])", "spec.resources: expected an object"},
      {R"({"memory": "1gi"})", "spec.resources.memory: invalid quantity \"1gi\""},
  };
  for (const Case& c : errors) {
    SCOPED_TRACE(c.json);
    auto result = ParseResourceList(ordered_json::parse(c.json), "spec.resources");
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.status().message().find(c.message), std::string::npos)
        << result.status().message();
  }
}

TEST(QuantityTest, AddAndMaxResources) {
  ResourceList a = {{"cpu", *Quantity::Parse("1")}, {"memory", *Quantity::Parse("1Gi")}};
  ResourceList b = {{"cpu", *Quantity::Parse("500m")}, {"nvidia.com/gpu", Quantity::FromUnits(2)}};
  ResourceList sum = a;
  AddResources(sum, b);
  EXPECT_EQ(sum.at("cpu").MilliValue(), 1500);
  EXPECT_EQ(sum.at("memory").ToString(), "1Gi");
  EXPECT_EQ(sum.at("nvidia.com/gpu").Value(), 2);
  ResourceList max = a;
  MaxResources(max, b);
  EXPECT_EQ(max.at("cpu").MilliValue(), 1000);
  EXPECT_EQ(max.at("nvidia.com/gpu").Value(), 2);
}

// Short quantities are computed in 128 bits, long ones digit by digit. Leading zeros make any
// quantity long, so each random quantity is parsed both ways and must agree: the value, the
// format, and the refusal of what is too large.
TEST(QuantityTest, ShortAndLongArithmeticAgree) {
  const std::vector<std::string> suffixes = {"",   "m",  "k",  "M",   "G",   "T",   "P",
                                             "E",  "n",  "u",  "Ki",  "Mi",  "Gi",  "Ti",
                                             "Pi", "Ei", "e3", "e-2", "E18", "e-9", "e19"};
  std::mt19937_64 rng(11);
  auto digits = [&](int max_len) {
    std::string out;
    for (int n = static_cast<int>(rng() % static_cast<uint64_t>(max_len + 1)); n > 0; --n) {
      out += static_cast<char>('0' + rng() % 10);
    }
    return out;
  };
  int checked = 0;
  for (int i = 0; i < 50000; ++i) {
    // Mostly short (the 128-bit path), sometimes at the edge of 18 digits and beyond.
    std::string number = digits(rng() % 4 == 0 ? 19 : 10);
    if (rng() % 2) number += "." + digits(rng() % 4 == 0 ? 12 : 6);
    if (number.empty() || number == ".") number = "1";
    const std::string suffix = suffixes[rng() % suffixes.size()];
    const std::string sign = rng() % 4 == 0 ? "-" : "";
    const std::string text = sign + number + suffix;
    const std::string padded = sign + std::string(20, '0') + number + suffix;
    SCOPED_TRACE(text);
    Result<Quantity> short_form = Quantity::Parse(text);
    Result<Quantity> long_form = Quantity::Parse(padded);
    ASSERT_EQ(short_form.ok(), long_form.ok()) << padded;
    if (!short_form.ok()) continue;
    ASSERT_TRUE(*short_form == *long_form);
    ASSERT_EQ(short_form->format(), long_form->format());
    ++checked;
  }
  EXPECT_GT(checked, 25000);  // most are in range
}

TEST(QuantityTest, RandomTextNeverCrashesAndRoundTrips) {
  std::mt19937 random(7);
  const std::string alphabet = "0123456789.+-eEkKmMGgTPinu ";
  int ok = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    int length = static_cast<int>(random() % 8);
    for (int j = 0; j < length; ++j) text += alphabet[random() % alphabet.size()];
    SCOPED_TRACE(text);
    auto q = Quantity::Parse(text);
    if (q.ok()) {
      ++ok;
      auto again = Quantity::Parse(q->ToString());
      ASSERT_TRUE(again.ok()) << q->ToString();
      EXPECT_TRUE(*again == *q) << q->ToString();
    } else {
      EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
    }
    auto d = ParseDurationSeconds(text);
    if (d.ok()) {
      EXPECT_GE(*d, 0);
      EXPECT_EQ(*ParseDurationSeconds(FormatDuration(*d)), *d);
    } else {
      EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    }
  }
  EXPECT_GT(ok, 100);
}

}  // namespace quantity_test
}  // namespace gpupool::model
