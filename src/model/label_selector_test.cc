#include "model/label_selector.h"

#include <gtest/gtest.h>

namespace gpupool::model {
namespace label_selector_test {

TEST(LabelSelector, SelectsAsKubectlDoes) {
  const Labels a100 = {{"node-pool", "a100-80"}, {"spot", "true"}, {"zone", "b"}};
  const Labels t4 = {{"node-pool", "t4"}, {"zone", "a"}};
  struct Case {
    std::string selector;
    bool a100, t4;
  };
  const std::vector<Case> cases = {
      {"", true, true},
      {"node-pool=a100-80", true, false},
      {"node-pool==t4", false, true},
      {"node-pool!=t4", true, false},
      {"missing!=x", true, true},  // != also matches objects without the key
      {"spot", true, false},
      {"!spot", false, true},
      {"zone in (a, c)", false, true},
      {"zone notin (a)", true, false},
      {"zone in (a,b),!spot", false, true},
      {" node-pool = a100-80 , spot ", true, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.selector);
    auto selector = ParseLabelSelector(c.selector);
    ASSERT_TRUE(selector.ok()) << selector.status().ToString();
    EXPECT_EQ(MatchesLabelSelector(*selector, a100), c.a100);
    EXPECT_EQ(MatchesLabelSelector(*selector, t4), c.t4);
  }
}

TEST(LabelSelector, ErrorsSayWhereAndWhat) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"zone in a", "at column 9: expected '(' starting a set of values"},
      {"zone in (a", "at column 11: expected ',' or ')' in a set of values"},
      {"=x", "at column 1: expected a label key"},
      {"a=b c=d", "at column 5: expected ',' between requirements"},
      {"a=b,", "at column 5: expected a label key"},
      {"a=b*", "at column 4: expected ',' between requirements"},
  };
  for (const auto& [text, message] : cases) {
    SCOPED_TRACE(text);
    auto selector = ParseLabelSelector(text);
    ASSERT_FALSE(selector.ok());
    EXPECT_EQ(selector.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(selector.status().message().find(message), std::string::npos)
        << selector.status().message();
  }
}

}  // namespace label_selector_test
}  // namespace gpupool::model
