#pragma once
// Machine pools in the running server (seed 004; DESIGN section 5): the scheduling loop's
// machine-pool step and the spot interruption notice of the API. The lifecycle itself is
// autoscaler::Reconcile (autoscaler/provisioner.h); this file reads its inputs from the store and
// writes its node changes back (compare-and-set): the store first (so any leader carries on from
// there), then the backend learns the store's nodes at the next step (Backend::SetKnownNodes).
// Every node event is an audit record by user "autoscaler".
//
// Thread contract: functions are free; they use the store's own thread safety.

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "autoscaler/provisioner.h"
#include "service/service.h"
#include "store/store.h"

namespace gpupool::controller {

// MACHINE_POOL configs, decoded and checked against the catalog, sorted by name. A body that no
// longer decodes (written by an older version) is an error naming it.
Result<std::vector<model::MachinePool>> LoadMachinePools(store::Store& store,
                                                         const autoscaler::Catalog& catalog);

struct MachinePoolStep {
  int launched = 0;
  int removed = 0;
  bool stale = false;  // a node changed since the step read it: nothing written, next step redoes
  std::vector<autoscaler::NodeEvent> events;
};

using AfterCycleFn = std::function<scheduler::ClusterSnapshot()>;

// One reconciliation after the loop's scheduling cycle (`after_cycle` makes autoscaler::AfterCycle
// of the snapshot built from `nodes_as_read`; called only when there are machine pools, as it
// copies the whole snapshot). Node writes are a compare-and-set against
// `nodes_as_read` (Store::ChangeNodesIfUnchanged), so a node changed meanwhile (a spot
// interruption notice, an import) is never overwritten with the step's older view, and they are
// fenced by the leader's lease: a loop that lost its lease launches and removes nothing
// (kFailedPrecondition). Does nothing when there are no machine pools.
Result<MachinePoolStep> RunMachinePoolStep(store::Store& store,
                                           const std::vector<store::NodeRecord>& nodes_as_read,
                                           const AfterCycleFn& after_cycle,
                                           const autoscaler::Catalog& catalog, int64_t now_ms,
                                           const autoscaler::ProvisionOptions& options,
                                           const store::Store::LeaseFence& fence);

// The 2-minute spot interruption notice for a stored node (POST /api/nodes/{name}/interrupt).
// kNotFound for an unknown node, kFailedPrecondition when it is not a spot machine-pool node or
// already has its notice.
Status InterruptNode(store::Store& store, const autoscaler::Catalog& catalog,
                     std::string_view node_name, int64_t now_ms, const store::Actor& actor);

}  // namespace gpupool::controller
