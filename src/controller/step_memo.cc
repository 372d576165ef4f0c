#include "controller/step_memo.h"

#include <string_view>
#include <unordered_set>

namespace gpupool::controller {
namespace {

// The part of a node object the scheduler reads besides model::Node's typed fields.
nlohmann::ordered_json SchedulingPart(const nlohmann::ordered_json& node) {
  const auto taints = nlohmann::ordered_json::json_pointer("/spec/taints");
  if (!node.is_object() || !node.contains(taints)) return nullptr;
  return {{"spec", {{"taints", node.at(taints)}}}};
}

}  // namespace

void StepMemo::KeepWorkflows(const std::vector<store::WorkflowRecord>& loaded) {
  std::unordered_set<std::string_view> ids;
  ids.reserve(loaded.size());
  for (const auto& wf : loaded) {
    ids.insert(wf.id);
    auto [it, inserted] = held_.try_emplace(wf.id);
    // A record copied from the memo by the store is already held at its version.
    if (inserted || it->second.version != wf.version) it->second = wf;
  }
  // `ids` views the loaded records' ids, which outlive this loop; erased entries are the memo's.
  std::erase_if(held_, [&](const auto& entry) { return !ids.contains(entry.first); });
  std::erase_if(pods_, [&](const auto& entry) { return !ids.contains(entry.first); });
}

void StepMemo::KeepCreated(const store::WorkflowRecord& created) {
  auto [it, inserted] = held_.try_emplace(created.id, created);
  if (!inserted) return;
  for (auto& task : it->second.tasks) task.workflow_id = created.id;  // as reads fill it
}

void StepMemo::KeepWritten(const store::WorkflowRecord& written) {
  auto it = held_.find(written.id);
  if (it == held_.end()) return;  // not loaded by this step: the next one reads it
  it->second = written;
  it->second.version = written.version + 1;
  // The store fills each task's workflow id on reads; a task the step added may lack it.
  for (auto& task : it->second.tasks) task.workflow_id = written.id;
}

Result<std::shared_ptr<const StepMemo::Nodes>> StepMemo::LoadNodes(store::Store& store) {
  // The generation first: nodes written after it make the next step list them again.
  ASSIGN_OR_RETURN(store::Store::Generations generations, store.GetGenerations());
  if (nodes_ != nullptr && generations.nodes == nodes_generation_) return nodes_;
  auto nodes = std::make_shared<Nodes>();
  ASSIGN_OR_RETURN(nodes->records, store.ListNodes());
  nodes->read.reserve(nodes->records.size());
  for (const auto& record : nodes->records) {
    auto node = model::NodeFromJson(record.object);
    if (!node.ok()) continue;
    // Each step copies these nodes, and the scheduler reads the typed fields and, of the object
    // as read, only spec.taints (their timeAdded, for NoExecute): keeping just that makes a copy
    // of 5,000 nodes several times cheaper. A machine-pool write puts the whole object back from
    // `records` (controller/machine_pools.cc).
    node->raw = SchedulingPart(node->raw);
    nodes->read.push_back(std::move(*node));
  }
  nodes_ = std::move(nodes);
  nodes_generation_ = generations.nodes;
  return nodes_;
}

std::vector<model::Node> StepMemo::SnapshotNodes(const std::shared_ptr<const Nodes>& nodes) {
  if (nodes != nullptr && nodes == snapshot_nodes_from_ &&
      snapshot_nodes_.size() == nodes->read.size()) {
    snapshot_nodes_from_.reset();
    return std::move(snapshot_nodes_);
  }
  return nodes == nullptr ? std::vector<model::Node>{} : nodes->read;
}

void StepMemo::KeepSnapshotNodes(const std::shared_ptr<const Nodes>& nodes,
                                 std::vector<model::Node> copy) {
  snapshot_nodes_from_ = nodes;
  snapshot_nodes_ = std::move(copy);
}

uint64_t StepMemo::NodesGeneration(const std::shared_ptr<const Nodes>& nodes,
                                   const std::vector<model::NodePool>& node_pools) {
  if (view_generation_ == 0 || nodes != view_nodes_ || node_pools != view_node_pools_) {
    ++view_generation_;
    view_nodes_ = nodes;
    view_node_pools_ = node_pools;
  }
  return view_generation_;
}

void StepMemo::Clear() {
  held_.clear();
  pods_.clear();
  nodes_.reset();
  nodes_generation_ = -1;
  snapshot_nodes_from_.reset();
  snapshot_nodes_.clear();
  view_nodes_.reset();
  view_node_pools_.clear();
  ++view_generation_;  // never 0 again: 0 would mean "not tracked"
}

}  // namespace gpupool::controller
