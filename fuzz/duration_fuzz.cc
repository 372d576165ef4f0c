// Durations (model/duration.h) as pools (timeouts) and workflows (timeouts, sim_duration) write
// them. A duration that parses is not negative, and its shortest form (FormatDuration) parses to
// the same number of seconds; every refusal is a clear InvalidArgument.

#include "common/strings.h"
#include "fuzz/support/fuzz_util.h"
#include "model/duration.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  const std::string_view text = AsText(data, size);
  auto seconds = model::ParseDurationSeconds(text);
  if (!seconds.ok()) {
    CheckInputError(seconds.status(), "ParseDurationSeconds", IsValidUtf8(text),
                    "invalid duration");
    return 0;
  }
  Check(!model::IsEmptyDuration(text), "an empty duration is refused");
  Check(*seconds >= 0, "a duration is not negative", std::to_string(*seconds));
  const std::string formatted = model::FormatDuration(*seconds);
  auto again = model::ParseDurationSeconds(formatted);
  Check(again.ok() && *again == *seconds, "FormatDuration reads back as the same duration",
        std::string(text) + " -> " + std::to_string(*seconds) + " -> " + formatted);
  Check(model::FormatDuration(*again) == formatted, "FormatDuration is a fixed point", formatted);
  return 0;
}
