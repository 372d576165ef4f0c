#pragma once
// The inputs of `gpupool replay` as the command line names them (module-internal to the command,
// public for tests): scenario files and spot interruption lists.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "replay/engine.h"
#include "scheduler/scenario.h"

namespace gpupool::replay {

// Scenario files as `gpupool schedule -f` reads them (Nodes, Pods, Queues, NodePools,
// MachinePools in YAML or JSON), and node lists in the openb CSV form (`sn,cpu_milli,...`, see
// model::ParseOpenbNodeCsv), merged in order and validated.
Result<scheduler::Scenario> LoadReplayScenario(const std::vector<std::string>& files);

// "NODE@TIME": a spot interruption notice for NODE at TIME after the start (a duration: `90m`,
// `2h30m`, `3600`).
Result<InterruptionAt> ParseInterruptionAt(std::string_view text);

}  // namespace gpupool::replay
