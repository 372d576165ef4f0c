// Scenario files of the offline what-if (`gpupool schedule -f FILE`, POST /api/schedule): Nodes,
// Pods, Queues, NodePools and MachinePools in YAML or JSON, read with
// scheduler::AddScenarioText, checked with ValidateScenario, then simulated with the built-in
// instance catalog (autoscaler::SimulateScenario), as the CLI and the server's what-if do.
//
// Invariants: a refusal is InvalidArgument naming the file; a simulation that runs prints as JSON
// (`-o json`) that dumps and as a table (`-o table`).

#include "autoscaler/autoscaler.h"
#include "common/strings.h"
#include "fuzz/support/fuzz_util.h"
#include "scheduler/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  constexpr char kFile[] = "scenario.yaml";
  const std::string_view text = AsText(data, size);
  const bool utf8 = IsValidUtf8(text);
  scheduler::Scenario scenario;
  if (Status added = scheduler::AddScenarioText(text, kFile, scenario); !added.ok()) {
    CheckInputError(added, "AddScenarioText", utf8, kFile);
    return 0;
  }
  if (Status valid = scheduler::ValidateScenario(scenario); !valid.ok()) {
    CheckInputError(valid, "ValidateScenario", utf8);
    return 0;
  }
  scenario.snapshot.now_ms = 1'700'000'000'000;
  autoscaler::AutoscaleOptions options;
  auto result = autoscaler::SimulateScenario(scenario, autoscaler::Catalog::Builtin(), options);
  if (!result.ok()) {
    CheckInputError(result.status(), "SimulateScenario", utf8);
    return 0;
  }
  CheckedDump(autoscaler::AutoscaleResultToJson(*result), "schedule -o json");
  (void)autoscaler::AutoscaleResultToTable(*result);
  return 0;
}
