#pragma once
// Durations as configs write them: `30s`, `5m`, `2h`, `1d`, compound `1h30m`, `500ms` (rounds up
// to whole seconds), a bare integer (seconds), or ISO-8601 `PT2H`, `P1DT2H30M`, `PT0.5S`.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace gpupool::model {

// True when `text` is empty or only whitespace; callers decide what "no duration" means.
bool IsEmptyDuration(std::string_view text);

// Whole seconds. Numbers may carry a fraction (`1.5h`, `PT0.5S`); sub-second parts round up. Errors
// (InvalidArgument) name the text; empty text is an error too (check IsEmptyDuration first when
// empty means "unset"). Negative durations are rejected.
Result<int64_t> ParseDurationSeconds(std::string_view original);

// Shortest compound form: 5400 -> "1h30m", 172800 -> "2d", 45 -> "45s", 0 -> "0s".
std::string FormatDuration(int64_t seconds);

}  // namespace gpupool::model
