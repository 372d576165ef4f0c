#pragma once
// Test helpers of the slurm module: responses captured from a real slurmrestd (testdata/).

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace gpupool::slurm::testing {

inline std::string ReadTestFile(const std::string& name) {
  std::string path = std::string(GPUPOOL_SOURCE_DIR) + "/src/slurm/testdata/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline nlohmann::ordered_json ReadTestJson(const std::string& name) {
  return nlohmann::ordered_json::parse(ReadTestFile(name));
}

}  // namespace gpupool::slurm::testing
