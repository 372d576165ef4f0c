#pragma once
// A cycle's setup and state, built from a snapshot the way a cycle builds them (bound pods
// bound, nothing decided yet), for the unit tests of the cycle's parts: scorers, queue order,
// accounting. Not copyable or movable: the view points into the snapshot.

#include <gtest/gtest.h>

#include <string>

#include "scheduler/cluster_view.h"
#include "scheduler/cycle_setup.h"
#include "scheduler/cycle_state.h"
#include "scheduler/quota_table.h"
#include "scheduler/scheduler.h"

namespace gpupool::scheduler::testing {

struct CycleFixture {
  explicit CycleFixture(ClusterSnapshot s)
      : snapshot(std::move(s)),
        view(snapshot.nodes, snapshot.node_pools),
        setup(BuildCycleSetup(snapshot, view)),
        state(view, setup.queues, QuotaTable::Resolve(setup.queues, view), std::move(setup.pods)) {
    BindPods(state);
  }
  CycleFixture(const CycleFixture&) = delete;
  CycleFixture& operator=(const CycleFixture&) = delete;

  int Pod(const std::string& key) const {
    for (int i = 0; i < state.NumPods(); ++i) {
      if (state.pod(i).key == key) return i;
    }
    ADD_FAILURE() << "no pod " << key;
    return 0;
  }
  int Node(const std::string& name) const {
    const int node = view.FindNode(name);
    EXPECT_GE(node, 0) << "no node " << name;
    return node;
  }

  ClusterSnapshot snapshot;
  ClusterView view;
  CycleSetup setup;
  CycleState state;
};

}  // namespace gpupool::scheduler::testing
