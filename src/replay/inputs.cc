#include "replay/inputs.h"

#include "common/strings.h"
#include "model/duration.h"
#include "model/input_file.h"
#include "model/node_import.h"

namespace gpupool::replay {

Result<scheduler::Scenario> LoadReplayScenario(const std::vector<std::string>& files) {
  scheduler::Scenario scenario;
  for (const std::string& file : files) {
    ASSIGN_OR_RETURN(std::string text, model::ReadFile(file));
    const std::string_view first = Trim(text.substr(0, text.find('\n')));
    if (StartsWith(first, "sn,")) {
      ASSIGN_OR_RETURN(std::vector<model::Node> nodes, model::ParseOpenbNodeCsv(text, file));
      for (model::Node& node : nodes) scenario.snapshot.nodes.push_back(std::move(node));
      continue;
    }
    RETURN_IF_ERROR(scheduler::AddScenarioText(text, file, scenario));
  }
  RETURN_IF_ERROR(scheduler::ValidateScenario(scenario));
  return scenario;
}

Result<InterruptionAt> ParseInterruptionAt(std::string_view text) {
  const size_t at = text.rfind('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == text.size()) {
    return InvalidArgumentError("--interrupt \"" + std::string(text) +
                                "\": expected NODE@TIME, e.g. gpu-spot-1@2h30m");
  }
  Result<int64_t> seconds = model::ParseDurationSeconds(text.substr(at + 1));
  if (!seconds.ok()) {
    return InvalidArgumentError("--interrupt \"" + std::string(text) +
                                "\": " + seconds.status().message());
  }
  return InterruptionAt{std::string(text.substr(0, at)), *seconds * 1000};
}

}  // namespace gpupool::replay
