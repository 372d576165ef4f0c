#pragma once
// Bounds on user input, shared by every path that reads it (the CLI's files, the server's request
// bodies, the parsers of JSON and YAML, config writes): one number each, so that what one path
// accepts the others accept too, and nothing a user sends can exhaust the stack or the memory.

#include <cstddef>

namespace gpupool {

// Arrays and objects (YAML sequences and mappings) nested deeper than this are refused by every
// parser of user input, with the file, line and column of the first one too deep, and by every
// config write. Kubernetes objects nest about a dozen levels; the bound keeps each recursive walk
// of a parsed document (copies, merges, printing as JSON or YAML) far from the end of the stack.
inline constexpr int kMaxNestingDepth = 512;

// Files read as input (config files, manifests, node lists, workflows, scenario files, catalogs)
// and request bodies (`gpupool serve --max-body-bytes`) larger than this are refused: 8 MiB.
// Offline, the environment variable GPUPOOL_MAX_INPUT_BYTES sets another limit for files.
inline constexpr size_t kDefaultMaxInputBytes = size_t{8} << 20;

}  // namespace gpupool
