#pragma once
// What one step of the scheduling loop's leader works on, handed from one named step to the next
// (controller/scheduling_loop.h lists the steps). Internal to the server module.

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "config/config_set.h"
#include "controller/handed_in_pods.h"
#include "controller/scheduling_loop.h"
#include "controller/task_lifecycle.h"
#include "controller/workflow_runs.h"
#include "scheduler/cluster_settings.h"
#include "scheduler/scheduler.h"
#include "store/store.h"

namespace gpupool::controller {

struct SchedulingLoop::StepState {
  int64_t now = 0;
  // Loaded at the start (LoadState).
  std::vector<store::WorkflowRecord> workflows;  // the unfinished ones, oldest first
  config::ConfigSet configs;
  std::shared_ptr<const StepMemo::Nodes> nodes;  // the store's, and the scheduler's reading
  std::vector<RunPolicy> policies;               // per workflow: timeouts, exit actions
  std::vector<RunLimits> limits;                 // per workflow: parallelism, backoff limit
  // Written by the steps.
  std::vector<bool> changed;                    // per workflow: to be written back
  std::set<size_t> unwritten;                   // workflows whose write lost its race this step
  std::set<std::string> running_keys;           // tasks that stay RUNNING on the backend
  std::map<std::string, std::string> refusals;  // task key -> why the cluster refused its eviction
  std::set<std::string> evicted_now;            // requeued by the cluster's eviction this step
  std::set<std::string> launched_now;           // launched, or RUNNING as started, this step
  // The scheduler's view of this step and what it decided.
  scheduler::ClusterSnapshot snapshot;
  scheduler::ClusterSettings settings;
  TaskPodIndex pod_index;       // snapshot pod name -> (workflow, task)
  HandedInPods handed_in_pods;  // as the backend listed them this step
  HandedIn handed_in;           // those of them in the cycle
  scheduler::CycleResult cycle;
};

}  // namespace gpupool::controller
