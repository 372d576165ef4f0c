#include "api/what_if.h"

#include "scheduler/scenario.h"

namespace gpupool::api {

WhatIf MakeWhatIf(scheduler::PlacementPolicy policy, const autoscaler::Catalog& catalog,
                  const Clock& clock) {
  return
      [policy, &catalog, &clock](std::string_view text, const std::vector<std::string>& interrupts,
                                 bool table) -> Result<nlohmann::ordered_json> {
        scheduler::Scenario scenario;
        RETURN_IF_ERROR(scheduler::AddScenarioText(text, "request body", scenario));
        RETURN_IF_ERROR(scheduler::ValidateScenario(scenario));
        scenario.snapshot.now_ms = clock.NowMillis();
        autoscaler::AutoscaleOptions options;
        options.scheduler.policy = policy;
        options.interrupt_nodes = interrupts;
        ASSIGN_OR_RETURN(auto result, autoscaler::SimulateScenario(scenario, catalog, options));
        nlohmann::ordered_json answer = autoscaler::AutoscaleResultToJson(result);
        if (table) answer["table"] = autoscaler::AutoscaleResultToTable(result);
        return answer;
      };
}

}  // namespace gpupool::api
