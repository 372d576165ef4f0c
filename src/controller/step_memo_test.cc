#include "controller/step_memo.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpupool::controller {
namespace step_memo_test {

store::WorkflowRecord Workflow(const std::string& id, int64_t version) {
  store::WorkflowRecord wf;
  wf.id = id;
  wf.version = version;
  store::TaskRecord task;
  task.name = "train";
  task.status = "PENDING";
  wf.tasks = {task, task};
  wf.tasks[1].name = "eval";
  return wf;
}

// Workflow(id, 0) as submitted to pool "default" by alice, with JSON of several kinds.
store::WorkflowRecord Submitted(const std::string& id) {
  store::WorkflowRecord wf = Workflow(id, 0);
  wf.name = "wf";
  wf.pool = "default";
  wf.user = "alice";
  wf.status = "PENDING";
  wf.submitted_ms = 1234;
  wf.spec = nlohmann::ordered_json::parse(R"({"workflow": {"name": "wf", "z": 1, "a": [2.5]}})");
  wf.tasks[0].group = "g";
  wf.tasks[0].status_changed_ms = 1234;
  wf.tasks[0].pod = nlohmann::ordered_json::parse(R"({"spec": {"priority": 5, "b": null}})");
  return wf;
}

// Counts the reads TaskPod asked for; each read names the pod after the count.
struct CountingRead {
  int* reads;
  Result<model::PodScheduling> operator()() const {
    model::PodScheduling pod;
    pod.name = "read-" + std::to_string(++*reads);
    return pod;
  }
};

TEST(StepMemoTest, KeepsTheLoadedWorkflowsAndForgetsTheOthers) {
  StepMemo memo;
  memo.KeepWorkflows({Workflow("a", 1), Workflow("b", 1)});
  ASSERT_EQ(memo.Known()->size(), 2u);
  memo.KeepWorkflows({Workflow("b", 3), Workflow("c", 1)});
  const auto& known = *memo.Known();
  EXPECT_EQ(known.size(), 2u);
  EXPECT_FALSE(known.contains("a"));  // finished: no longer loaded
  EXPECT_EQ(known.at("b").version, 3);
  memo.Clear();
  EXPECT_TRUE(memo.Known()->empty());
}

// Every field of a workflow and its tasks, the JSON as text: equal records give equal strings.
std::string Fields(const store::WorkflowRecord& wf) {
  std::string out = wf.id + "|" + wf.name + "|" + wf.pool + "|" + wf.user + "|" + wf.status + "|" +
                    std::to_string(wf.submitted_ms) + "|" + wf.spec.dump() + "|" +
                    std::to_string(wf.version) + "|" + wf.idempotency_key;
  for (const auto& t : wf.tasks) {
    out += "\n" + t.workflow_id + "|" + t.group + "|" + t.name + "|" + t.status + "|" + t.node +
           "|" + t.pod.dump() + "|" + std::to_string(t.retry) + "|" +
           std::to_string(t.status_changed_ms) + "|" + std::to_string(t.started_ms) + "|" +
           std::to_string(t.finished_ms) + "|" + std::to_string(t.exit_code) + "|" + t.message;
  }
  return out;
}

// A workflow the step wrote is held as the store now holds it: the next listing copies it from
// the memo, and the copy is what parsing the stored rows gives.
TEST(StepMemoTest, HoldsAWrittenWorkflowAsTheStoreReadsItBack) {
  auto store = store::OpenStore(":memory:");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->CreateWorkflow(Submitted("wf-1")).ok());

  StepMemo memo;
  store::WorkflowFilter filter;
  filter.unfinished_only = true;
  filter.known = memo.Known();
  auto loaded = (*store)->ListWorkflows(filter);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->size(), 1u);
  memo.KeepWorkflows(*loaded);

  // The step's changes: a task placed, another attempt added (no workflow id yet), the status.
  store::WorkflowRecord step = (*loaded)[0];
  step.tasks[0].status = "SCHEDULED";
  step.tasks[0].node = "n1";
  step.tasks[0].pod["spec"]["nodeName"] = "n1";
  store::TaskRecord retry = step.tasks[1];
  retry.workflow_id.clear();
  retry.retry = 1;
  retry.message = "retried";
  step.tasks.push_back(retry);
  step.status = "RUNNING";
  ASSERT_TRUE((*store)->UpdateWorkflow(step).ok());
  memo.KeepWritten(step);

  auto copied = (*store)->ListWorkflows(filter);  // the memo's record, at the stored version
  filter.known = nullptr;
  auto parsed = (*store)->ListWorkflows(filter);
  ASSERT_TRUE(copied.ok() && parsed.ok());
  ASSERT_EQ(memo.Known()->at("wf-1").version, (*parsed)[0].version);
  EXPECT_EQ(Fields((*copied)[0]), Fields((*parsed)[0]));
  EXPECT_EQ(Fields(memo.Known()->at("wf-1")), Fields((*parsed)[0]));
}

// A workflow the server just stored is held as the store returned it (SchedulingLoop::Submitted):
// the first listing copies it, and the copy is what parsing the stored rows gives.
TEST(StepMemoTest, HoldsACreatedWorkflowAsTheStoreReadsItBack) {
  auto store = store::OpenStore(":memory:");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  store::WorkflowRecord wf = Submitted("wf-2");
  wf.idempotency_key = "k";
  store::AuditRecord audit;
  audit.user = "alice";
  audit.action = "submit";
  auto created = (*store)->CreateWorkflowWithAudit(wf, audit);
  ASSERT_TRUE(created.ok()) << created.status().ToString();

  StepMemo memo;
  memo.KeepCreated(*created);
  store::WorkflowFilter filter;
  filter.unfinished_only = true;
  filter.known = memo.Known();
  auto copied = (*store)->ListWorkflows(filter);
  filter.known = nullptr;
  auto parsed = (*store)->ListWorkflows(filter);
  ASSERT_TRUE(copied.ok() && parsed.ok());
  ASSERT_EQ(parsed->size(), 1u);
  // Held at the stored version, so the listing took the copy; and the copy is the stored record.
  EXPECT_EQ(memo.Known()->at("wf-2").version, (*parsed)[0].version);
  EXPECT_EQ(Fields((*copied)[0]), Fields((*parsed)[0]));

  // A record held already (loaded, then written by a step) is not replaced by an older one.
  store::WorkflowRecord newer = (*parsed)[0];
  newer.status = "RUNNING";
  ASSERT_TRUE((*store)->UpdateWorkflow(newer).ok());
  memo.KeepWorkflows(*parsed);
  memo.KeepWritten(newer);
  memo.KeepCreated(*created);
  EXPECT_EQ(memo.Known()->at("wf-2").status, "RUNNING");
  EXPECT_EQ(memo.Known()->at("wf-2").version, 2);
}

TEST(StepMemoTest, ReadsATaskPodOncePerVersionStatusAndNode) {
  StepMemo memo;
  int reads = 0;
  store::WorkflowRecord wf = Workflow("a", 1);
  memo.KeepWorkflows({wf});
  EXPECT_EQ(memo.TaskPod(wf, 0, false, CountingRead{&reads})->name, "read-1");
  EXPECT_EQ(memo.TaskPod(wf, 0, false, CountingRead{&reads})->name, "read-1");  // kept
  EXPECT_EQ(memo.TaskPod(wf, 1, false, CountingRead{&reads})->name, "read-2");  // its own
  wf.tasks[0].status = "SCHEDULED";
  wf.tasks[0].node = "n1";
  EXPECT_EQ(memo.TaskPod(wf, 0, false, CountingRead{&reads})->name, "read-3");
  wf.version = 2;
  EXPECT_EQ(memo.TaskPod(wf, 0, false, CountingRead{&reads})->name, "read-4");
  EXPECT_EQ(memo.TaskPod(wf, 0, false, CountingRead{&reads})->name, "read-4");
  // Changed by the step: read each time and not kept.
  EXPECT_EQ(memo.TaskPod(wf, 0, true, CountingRead{&reads})->name, "read-5");
  EXPECT_EQ(memo.TaskPod(wf, 0, false, CountingRead{&reads})->name, "read-4");
  // A workflow no longer loaded takes its pods along.
  memo.KeepWorkflows({});
  EXPECT_EQ(memo.TaskPod(wf, 0, false, CountingRead{&reads})->name, "read-6");
}

TEST(StepMemoTest, KeepsAPodTheSchedulerCannotRead) {
  StepMemo memo;
  store::WorkflowRecord wf = Workflow("a", 1);
  int reads = 0;
  auto bad = [&]() -> Result<model::PodScheduling> {
    ++reads;
    return InvalidArgumentError("spec.containers: expected an array");
  };
  EXPECT_FALSE(memo.TaskPod(wf, 0, false, bad).ok());
  EXPECT_EQ(memo.TaskPod(wf, 0, false, bad).status().message(),
            "spec.containers: expected an array");
  EXPECT_EQ(reads, 1);
}

// The nodes are listed again only after a node write, and a node the scheduler cannot read is
// kept as a record (the backend knows it) but not read.
TEST(StepMemoTest, ListsTheNodesAgainOnlyAfterANodeWrite) {
  store::StoreOptions options;
  auto opened = store::OpenStore(":memory:", options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  store::Store& store = **opened;
  auto node = [](const std::string& name) {
    return store::NodeRecord{name, nlohmann::ordered_json{{"metadata", {{"name", name}}}}};
  };
  ASSERT_TRUE(store.UpsertNodes({node("n1")}, true).ok());
  StepMemo memo;
  auto first = memo.LoadNodes(store);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ((*first)->records.size(), 1u);
  ASSERT_EQ((*first)->read.size(), 1u);
  EXPECT_EQ((*first)->read[0].name, "n1");
  EXPECT_EQ(memo.LoadNodes(store)->get(), first->get());  // nothing written: the same
  store::NodeRecord unreadable{"n2", nlohmann::ordered_json{{"metadata", "not an object"}}};
  ASSERT_TRUE(store.UpsertNodes({unreadable}, false).ok());
  auto second = memo.LoadNodes(store);
  ASSERT_TRUE(second.ok());
  EXPECT_NE(second->get(), first->get());
  EXPECT_EQ((*second)->records.size(), 2u);
  EXPECT_EQ((*second)->read.size(), 1u);
}

std::shared_ptr<const StepMemo::Nodes> NodesNamed(std::vector<std::string> names) {
  auto nodes = std::make_shared<StepMemo::Nodes>();
  for (auto& name : names) {
    model::Node node;
    node.name = std::move(name);
    nodes->read.push_back(std::move(node));
  }
  return nodes;
}

// A step's snapshot copy goes back to the memo and comes out again, buffer and all, while the
// nodes read are the same object; other nodes get a copy of their own.
TEST(StepMemoTest, HandsTheSnapshotsNodeCopyBackWhileTheNodesAreTheSame) {
  StepMemo memo;
  auto nodes = NodesNamed({"a", "b"});
  std::vector<model::Node> copy = memo.SnapshotNodes(nodes);
  ASSERT_EQ(copy.size(), 2u);
  EXPECT_EQ(copy[1].name, "b");
  EXPECT_NE(copy.data(), nodes->read.data());
  const model::Node* buffer = copy.data();
  memo.KeepSnapshotNodes(nodes, std::move(copy));
  std::vector<model::Node> again = memo.SnapshotNodes(nodes);
  EXPECT_EQ(again.data(), buffer);  // taken back, not copied
  memo.KeepSnapshotNodes(nodes, std::move(again));
  auto other = NodesNamed({"c"});
  std::vector<model::Node> fresh = memo.SnapshotNodes(other);
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0].name, "c");
  // The kept copy was of other nodes: the next step on `nodes` copies afresh.
  memo.KeepSnapshotNodes(other, std::move(fresh));
  std::vector<model::Node> copied = memo.SnapshotNodes(nodes);
  ASSERT_EQ(copied.size(), 2u);
  EXPECT_EQ(copied[0].name, "a");
  memo.Clear();
  EXPECT_EQ(memo.SnapshotNodes(other).size(), 1u);
}

// The view's generation moves with the nodes read, the node pools, and a lost lead; never 0.
TEST(StepMemoTest, GivesANewNodesGenerationWhenTheNodesOrTheNodePoolsChange) {
  StepMemo memo;
  auto nodes = NodesNamed({"a"});
  model::NodePool gpu{"gpu", "pool", "gpu", "", {}};
  const uint64_t first = memo.NodesGeneration(nodes, {gpu});
  EXPECT_NE(first, 0u);
  EXPECT_EQ(memo.NodesGeneration(nodes, {gpu}), first);
  model::NodePool relabelled = gpu;
  relabelled.label_value = "a100";
  const uint64_t pools_changed = memo.NodesGeneration(nodes, {relabelled});
  EXPECT_NE(pools_changed, first);
  const uint64_t nodes_changed = memo.NodesGeneration(NodesNamed({"a"}), {relabelled});
  EXPECT_NE(nodes_changed, pools_changed);
  memo.Clear();
  EXPECT_NE(memo.NodesGeneration(nodes, {gpu}), first);
}

}  // namespace step_memo_test
}  // namespace gpupool::controller
