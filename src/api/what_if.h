#pragma once
// The what-if behind POST /api/schedule[?interrupt=NODE,...] (DESIGN §7): the request body is a
// scenario (multi-document YAML/JSON: Nodes, Pods, Queues, NodePools, MachinePools), validated
// like `gpupool schedule -f`, then autoscaler::SimulateScenario at the server's current time with
// the named spot nodes interrupted. The answer is autoscaler::AutoscaleResultToJson, the JSON that
// `gpupool schedule -o json` prints offline; with `table`, it also holds the text of
// `gpupool schedule -o table` under "table" (as Kubernetes servers print tables for kubectl).
//
// Errors: kInvalidArgument naming "request body" and the line for a scenario that does not parse
// or validate, or an interrupted node that does not exist or is not a spot machine-pool node.
//
// Thread contract: the returned function keeps no state between calls; HTTP threads may call it
// concurrently. `catalog` and `clock` must outlive it.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "autoscaler/autoscaler.h"
#include "common/clock.h"
#include "common/status.h"
#include "scheduler/scheduler.h"

namespace gpupool::api {

using WhatIf = std::function<Result<nlohmann::ordered_json>(
    std::string_view text, const std::vector<std::string>& interrupts, bool table)>;

WhatIf MakeWhatIf(scheduler::PlacementPolicy policy, const autoscaler::Catalog& catalog,
                  const Clock& clock);

}  // namespace gpupool::api
