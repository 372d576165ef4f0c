// ReadFile: contents, a missing file, and the input limit on files and pipes.

#include "model/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "common/limits.h"

namespace gpupool::model {
namespace input_file_test {

TEST(ReadFileTest, ReadsAndReportsMissing) {
  std::string path = std::string(GPUPOOL_BINARY_DIR) + "/input_file_test_read.txt";
  {
    std::ofstream out(path, std::ios::binary);
    out << "hello\nworld";
  }
  auto text = ReadFile(path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "hello\nworld");
  std::remove(path.c_str());
  auto missing = ReadFile(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(path), std::string::npos);
}

class ReadFileLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::string(GPUPOOL_BINARY_DIR) + "/input_file_test_" + std::to_string(::getpid()) +
            ".json";
    unsetenv(kMaxInputBytesVariable);
  }
  void TearDown() override {
    std::remove(path_.c_str());
    unsetenv(kMaxInputBytesVariable);
  }
  void WriteBytes(size_t n) {
    std::ofstream out(path_, std::ios::binary);
    out << std::string(n, ' ');
  }
  std::string path_;
};

TEST_F(ReadFileLimitTest, FilesOverTheLimitAreRefusedNamingFileSizeAndLimit) {
  WriteBytes(kDefaultMaxInputBytes);
  auto at_limit = ReadFile(path_);
  ASSERT_TRUE(at_limit.ok()) << at_limit.status().ToString();
  EXPECT_EQ(at_limit->size(), kDefaultMaxInputBytes);

  WriteBytes(kDefaultMaxInputBytes + 1);
  auto over = ReadFile(path_);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(over.status().message(),
            path_ +
                ": the file is 8.0 MiB (8388609 bytes), over the input limit of 8 MiB (8388608 "
                "bytes) (set GPUPOOL_MAX_INPUT_BYTES to read larger files)");

  // The variable raises or lowers the limit, in bytes or as a quantity.
  setenv(kMaxInputBytesVariable, "16Mi", 1);
  EXPECT_TRUE(ReadFile(path_).ok());
  setenv(kMaxInputBytesVariable, "1000", 1);
  EXPECT_EQ(ReadFile(path_).status().message(),
            path_ +
                ": the file is 8.0 MiB (8388609 bytes), over the input limit of 1000 bytes (set "
                "GPUPOOL_MAX_INPUT_BYTES to read larger files)");
  for (const char* bad : {"0", "-5", "lots", "1.5"}) {
    setenv(kMaxInputBytesVariable, bad, 1);
    auto refused = ReadFile(path_);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().message(),
              std::string("GPUPOOL_MAX_INPUT_BYTES=\"") + bad +
                  "\": expected a positive whole number of bytes, such as 8388608 or 8Mi");
  }
}

TEST_F(ReadFileLimitTest, APipeIsReadUpToTheLimitOnly) {
  ASSERT_EQ(mkfifo(path_.c_str(), 0600), 0);
  std::thread writer([this] {
    std::ofstream out(path_, std::ios::binary);
    out << std::string(5000, 'x');  // stops early if the reader closes: the stream fails
  });
  auto read = ReadFile(path_, 4096);
  writer.join();
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(),
            path_ +
                ": the file is larger than 4096 bytes, over the input limit of 4 KiB (4096 bytes) "
                "(set GPUPOOL_MAX_INPUT_BYTES to read larger files)");
}

}  // namespace input_file_test
}  // namespace gpupool::model
