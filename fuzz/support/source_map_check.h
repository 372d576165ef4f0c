#pragma once
// The source-map invariant of the JSON and YAML targets: every value of a parsed document has a
// position, so that an error found after parsing can name its line and column.

#include <string_view>

#include "codec/source_map.h"
#include "fuzz/support/fuzz_util.h"

namespace gpupool::fuzz {

enum class LineBreaks {
  kJson,  // '\n'
  kYaml,  // libyaml's: CR LF, CR, LF, NEL, LS, PS
};

// Looks up every value of `value` (at most `limit` of them) in `map` by JSON pointer and by
// field path; each must be found at a line and column inside `text`.
void CheckSourceMap(const Json& value, const codec::JsonSourceMap& map, std::string_view text,
                    LineBreaks breaks, int limit = 2000);

}  // namespace gpupool::fuzz
