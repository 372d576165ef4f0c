#pragma once
// StepMemo: what the scheduling loop's leader keeps from one step for the next, so that a step
// parses only what changed since. Every step reads every unfinished workflow with its tasks; at
// 10,000 of them, parsing their stored JSON again (the spec, each task's pod) and reading each pod
// for the scheduler took half of a step's CPU (docs/BENCHMARKS.md, "The scheduling loop's step").
//
// Unchanged means "at the same stored version": every write of a workflow, its tasks included,
// bumps its version (store::WorkflowRecord), so a record held at the stored version is what the
// store would return. The records are kept as loaded, before the step changes them; a workflow the
// step writes back is then held as written, at version + 1 (KeepWritten), so the next step copies
// it rather than parsing it again: after a step that placed 2,000 tasks, re-reading them was 30 %
// of the loop's CPU in the next (docs/benchmarks/slurm.md, run 8).
//
// The nodes likewise: listed and read again only when the store's node generation moved
// (Store::GetGenerations), which every committed node write does, also by other processes.
//
// Thread contract: the scheduling loop's thread only.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "model/k8s.h"
#include "model/node_pool.h"
#include "store/store.h"

namespace gpupool::controller {

class StepMemo {
 public:
  // The records the store may copy instead of parsing (store::WorkflowFilter::known).
  const std::unordered_map<std::string, store::WorkflowRecord>* Known() const { return &held_; }

  // Keeps the workflows as just loaded (before the step changes them) for the next step, and
  // forgets those no longer loaded (finished, or gone).
  void KeepWorkflows(const std::vector<store::WorkflowRecord>& loaded);
  // A workflow this process just created, as the store returned it (store::Store::CreateWorkflow
  // and its variants store every field given with version 1): held as if loaded, so the next
  // listing copies it. A record already held stays (it is as new, or newer).
  void KeepCreated(const store::WorkflowRecord& created);
  // A workflow this step loaded and then wrote with a compare-and-set that succeeded
  // (store::Store::UpdateWorkflow stores every field given and sets version + 1): held as the
  // store now holds it. Not for a write that failed, which leaves the stored record as it was.
  void KeepWritten(const store::WorkflowRecord& written);

  // The scheduler's reading of task `t` of `wf` as `read` makes it (`bound`: the task holds a
  // node), made once per stored version of the workflow and kept while the task's status and
  // node are those it was made for. `changed`: the step changed the workflow since it was loaded,
  // so the stored version no longer describes it: `read` runs and nothing is kept.
  template <typename Read>
  const Result<model::PodScheduling>& TaskPod(const store::WorkflowRecord& wf, size_t t,
                                              bool changed, Read&& read);

  // The store's nodes (sorted by name) and the scheduler's reading of those it can read (their
  // model::Node::raw holding spec.taints only), as of a node generation at least as new as the one
  // read before them.
  struct Nodes {
    std::vector<store::NodeRecord> records;
    std::vector<model::Node> read;
  };
  Result<std::shared_ptr<const Nodes>> LoadNodes(store::Store& store);

  // The step's own copy of `nodes->read` for its snapshot: the one the last step handed back
  // (KeepSnapshotNodes) while LoadNodes still gives the same nodes, else a fresh copy. Nothing in a
  // step changes its snapshot's nodes, and at 5,000 nodes copying them and freeing them again was
  // a third of an idle step's CPU.
  std::vector<model::Node> SnapshotNodes(const std::shared_ptr<const Nodes>& nodes);
  void KeepSnapshotNodes(const std::shared_ptr<const Nodes>& nodes, std::vector<model::Node> copy);

  // ClusterSnapshot::nodes_generation for a step whose snapshot holds `nodes` and `node_pools`
  // (as the cycle will see them): the last step's while both are the same, else a new one. The
  // loop's scheduler::ViewCache then keeps the cycle's view of the nodes between steps.
  uint64_t NodesGeneration(const std::shared_ptr<const Nodes>& nodes,
                           const std::vector<model::NodePool>& node_pools);

  // Forgets everything (the loop lost the lead: another leader writes meanwhile).
  void Clear();

 private:
  struct Pod {
    int64_t version = -1;  // of the workflow it was read at; -1: none yet
    std::string status;
    std::string node;
    Result<model::PodScheduling> read = model::PodScheduling{};
  };

  std::unordered_map<std::string, store::WorkflowRecord> held_;    // by workflow id
  std::unordered_map<std::string, std::vector<Pod>> pods_;         // by workflow id, by task
  Result<model::PodScheduling> scratch_ = model::PodScheduling{};  // TaskPod when not kept
  std::shared_ptr<const Nodes> nodes_;
  int64_t nodes_generation_ = -1;                     // of nodes_
  std::shared_ptr<const Nodes> snapshot_nodes_from_;  // what snapshot_nodes_ is a copy of
  std::vector<model::Node> snapshot_nodes_;
  std::shared_ptr<const Nodes> view_nodes_;  // what view_generation_ was given for
  std::vector<model::NodePool> view_node_pools_;
  uint64_t view_generation_ = 0;
};

template <typename Read>
const Result<model::PodScheduling>& StepMemo::TaskPod(const store::WorkflowRecord& wf, size_t t,
                                                      bool changed, Read&& read) {
  if (changed) {
    scratch_ = read();
    return scratch_;
  }
  std::vector<Pod>& pods = pods_[wf.id];
  if (pods.size() < wf.tasks.size()) pods.resize(wf.tasks.size());
  Pod& pod = pods[t];
  const store::TaskRecord& task = wf.tasks[t];
  if (pod.version != wf.version || pod.status != task.status || pod.node != task.node) {
    pod.read = read();
    pod.version = wf.version;
    pod.status = task.status;
    pod.node = task.node;
  }
  return pod.read;
}

}  // namespace gpupool::controller
