#pragma once
// NoExecute, step 0 of a cycle (module-internal): bound pods whose node has a NoExecute taint
// they do not tolerate are evicted (reason NoExecute); so are those that tolerate it only for a
// while (tolerationSeconds) once that while is over. The rules (Kubernetes' taint manager) are
// those of NoExecuteDeadlineOf (scheduler.h). A gang that drops below its gang-min this way goes
// as a whole: no gang is left partly running. The other bound pods that tolerate a taint only for
// a while are reported with their deadline.

#include <vector>

#include "scheduler/cycle_state.h"
#include "scheduler/cycle_types.h"
#include "scheduler/scheduler.h"

namespace gpupool::scheduler {

// Evicts (CycleState::EvictNow) the bound pods whose NoExecute time is up at snapshot.now_ms;
// returns the deadlines of the others, in snapshot order.
std::vector<NoExecuteDeadline> EvictNoExecute(CycleState& state, const Gangs& gangs,
                                              const ClusterSnapshot& snapshot);

}  // namespace gpupool::scheduler
