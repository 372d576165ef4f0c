#include "model/input_file.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/limits.h"
#include "model/quantity.h"

namespace gpupool::model {

Result<size_t> MaxInputBytes() {
  const char* setting = std::getenv(kMaxInputBytesVariable);
  if (setting == nullptr || *setting == '\0') return kDefaultMaxInputBytes;
  Result<Quantity> bytes = Quantity::Parse(setting);
  if (!bytes.ok() || bytes->MilliValue() <= 0 || bytes->MilliValue() % 1000 != 0) {
    return InvalidArgumentError(std::string(kMaxInputBytesVariable) + "=\"" + setting +
                                "\": expected a positive whole number of bytes, such as " +
                                std::to_string(kDefaultMaxInputBytes) + " or 8Mi");
  }
  return static_cast<size_t>(bytes->Value());
}

namespace {

// "8 MiB (8388608 bytes)", "1.5 KiB (1536 bytes)", "100 bytes".
std::string ByteCount(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double scaled = static_cast<double>(bytes);
  int unit = -1;
  while (scaled >= 1024 && unit < 3) {
    scaled /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), scaled == std::floor(scaled) ? "%.0f %s" : "%.1f %s", scaled,
                kUnits[unit]);
  return std::string(text) + " (" + std::to_string(bytes) + " bytes)";
}

Status TooLarge(const std::string& path, std::string_view size, size_t limit) {
  return InvalidArgumentError(path + ": the file is " + std::string(size) +
                              ", over the input limit of " + ByteCount(limit) + " (set " +
                              kMaxInputBytesVariable + " to read larger files)");
}

}  // namespace

Result<std::string> ReadFile(const std::string& path) {
  ASSIGN_OR_RETURN(size_t limit, MaxInputBytes());
  return ReadFile(path, limit);
}

Result<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    if (err == ENOENT) return NotFoundError(path + ": no such file");
    return InternalError(path + ": cannot open: " + std::strerror(err));
  }
  // A regular file's size is known before reading it; a pipe's is found by reading up to the
  // limit and one byte more.
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > max_bytes) return TooLarge(path, ByteCount(size), max_bytes);
  }
  std::string text;
  char buffer[1 << 16];
  while (in) {
    in.read(buffer, sizeof(buffer));
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes) {
      return TooLarge(path, "larger than " + std::to_string(max_bytes) + " bytes", max_bytes);
    }
  }
  if (in.bad()) return InternalError(path + ": read error");
  return text;
}

}  // namespace gpupool::model
