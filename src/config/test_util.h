#pragma once
// Helpers shared by the config tests.

#include <gtest/gtest.h>

#include <string>

#include "common/status.h"
#include "config/kinds.h"

namespace gpupool::config::testing {

inline Json J(const char* text) { return Json::parse(text); }

// Asserts `status` is an error whose message contains every fragment.
inline void ExpectError(const Status& status, std::initializer_list<std::string> fragments) {
  EXPECT_FALSE(status.ok()) << "expected an error";
  for (const std::string& f : fragments) {
    EXPECT_NE(status.message().find(f), std::string::npos)
        << "message: " << status.message() << "\nmissing: " << f;
  }
}

}  // namespace gpupool::config::testing
