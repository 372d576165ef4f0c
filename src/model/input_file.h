#pragma once
// Reading input files (configs, manifests, node lists, workflows, scenarios, catalogs) under the
// input limit. Here rather than in src/codec: the limit may be set as a quantity (64Mi), which
// model::Quantity reads.

#include <string>

#include "common/status.h"

namespace gpupool::model {

// The environment variable that sets the input limit for files (MaxInputBytes).
inline constexpr char kMaxInputBytesVariable[] = "GPUPOOL_MAX_INPUT_BYTES";

// The largest file ReadFile reads: $GPUPOOL_MAX_INPUT_BYTES (bytes, or a quantity such as 64Mi)
// when set, else kDefaultMaxInputBytes (common/limits.h). InvalidArgument when it is not a
// positive whole number of bytes.
Result<size_t> MaxInputBytes();

// Whole file contents, at most MaxInputBytes() of them (InvalidArgument naming the file, its
// size and the limit otherwise: "big.json: the file is 200 MiB (209715200 bytes), over the input
// limit of 8 MiB (8388608 bytes) ..."). NotFound when it does not exist, Internal on read errors.
Result<std::string> ReadFile(const std::string& path);
// The same with an explicit limit.
Result<std::string> ReadFile(const std::string& path, size_t max_bytes);

}  // namespace gpupool::model
