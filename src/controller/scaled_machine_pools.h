#pragma once
// Machine pools whose nodes the cluster makes (a MACHINE_POOL with a scale_target, on the
// Kubernetes backend; model/scale_target.h): the scheduling loop's machine-pool step there. At
// most once per interval it reads each pool's replicas from the cluster, plans them
// (autoscaler::PlanReplicas over the cycle's result) and sets what changed through the backend;
// the cluster's machine controller then makes or removes Machines and Nodes, and the nodes come
// back through the backend's node informer like any other (matched to the pool by the label
// node.kubernetes.io/machinepool). Every change is an audit record by user "autoscaler".
//
// Pools without a scale_target are left alone here: on a real cluster gpupool cannot make a
// node by itself. When each empty node was first seen empty is kept in memory: a new leader
// starts that wait again, which only delays a removal.
//
// Thread contract: the scheduling loop's thread only.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "autoscaler/replicas.h"
#include "backend/backend.h"
#include "store/store.h"

namespace gpupool::controller {

class ScaledMachinePools {
 public:
  explicit ScaledMachinePools(int64_t interval_ms) : interval_ms_(interval_ms) {}

  // Whether a pass is due at `now_ms`: the first one, then once per interval. The caller asks
  // before building the cluster after the cycle, which a pass needs and the other steps do not.
  bool Due(int64_t now_ms) const { return !ran_ || now_ms - last_ms_ >= interval_ms_; }

  // One pass when the interval has passed since the last (else nothing). The events say what
  // was set ("replicas 0 -> 1 (pending pods)"); an error (a machine pool the catalog cannot
  // build, the API refusing) stops this pass only, after what was already set. `after_cycle`
  // (the cluster after the cycle: a copy of the whole snapshot) is called only when a machine
  // pool has a scale target: at 5,000 nodes and 20,000 pods the copy took 70 ms of a step.
  Result<std::vector<autoscaler::NodeEvent>> Step(
      store::Store& store, backend::Backend& backend,
      const std::function<scheduler::ClusterSnapshot()>& after_cycle,
      const autoscaler::Catalog& catalog, int64_t now_ms,
      const autoscaler::ProvisionOptions& options);

 private:
  int64_t interval_ms_;
  bool ran_ = false;
  int64_t last_ms_ = 0;
  std::map<std::string, int64_t> empty_since_;
};

}  // namespace gpupool::controller
