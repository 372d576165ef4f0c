#include "controller/scheduling_loop.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "backend/sim/sim_backend.h"
#include "controller/machine_pools.h"
#include "controller/testing/cpu_node.h"
#include "service/machine_pool_support.h"
#include "service/service.h"

namespace gpupool::controller {
namespace scheduling_loop_test {

using Json = nlohmann::ordered_json;

using testing::CpuNode;

std::string Workflow(const std::string& name, const std::string& cpu, const std::string& extra,
                     const std::string& task_extra) {
  return "workflow:\n  name: " + name + "\n" + extra + "  resources:\n    default: {cpu: " + cpu +
         ", memory: 1Gi, storage: 1Gi}\n"
         "  tasks:\n  - {name: a, image: busybox" +
         task_extra + "}\n";
}

class SchedulingLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.clock = &clock_;
    auto store = store::OpenStore(":memory:", options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    service_ = std::make_unique<service::Service>(*store_, clock_);
    ASSERT_TRUE(service_->EnsureBuiltins().ok());
    // Every task also carries the built-in default_ctrl sidecar (1 cpu): a 1-cpu task uses 2.
    nodes_ = {CpuNode("n1", "4")};
    std::vector<store::NodeRecord> records;
    for (const auto& node : nodes_) records.push_back({node["metadata"]["name"], node});
    ASSERT_TRUE(store_->UpsertNodes(records, true).ok());
    backend_ = std::make_unique<backend::SimBackend>(nodes_);
    loop_ = MakeLoop("a", *backend_);
  }

  std::unique_ptr<SchedulingLoop> MakeLoop(const std::string& holder, backend::Backend& backend) {
    LoopOptions options;
    options.holder = holder;
    options.lease_ttl_ms = 5000;
    options.max_retries = 1;
    return std::make_unique<SchedulingLoop>(*store_, backend, clock_, registry_, options);
  }

  std::string Submit(const std::string& text, const std::string& pool = "default") {
    service::SubmitRequest request;
    request.pool = pool;
    request.spec_text = text;
    request.file_name = "wf.yaml";
    auto result = service_->SubmitWorkflow({"alice", {"osmo-admin"}, "test"}, request);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? result->workflow_id : "";
  }

  store::WorkflowRecord Get(const std::string& id) {
    auto wf = store_->GetWorkflow(id);
    EXPECT_TRUE(wf.ok()) << wf.status().ToString();
    return wf.ok() ? *wf : store::WorkflowRecord{};
  }

  StepStats Step(SchedulingLoop& loop) {
    auto stats = loop.Step();
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    return stats.ok() ? *stats : StepStats{};
  }

  FakeClock clock_;
  metrics::Registry registry_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<service::Service> service_;
  std::vector<Json> nodes_;
  std::unique_ptr<backend::SimBackend> backend_;
  std::unique_ptr<SchedulingLoop> loop_;
};

TEST_F(SchedulingLoopTest, TaskRunsThroughEveryStateOnTheSimBackend) {
  std::string id = Submit(Workflow("ok", "1", "", ", sim_duration: 30s"));
  EXPECT_EQ(Get(id).tasks[0].status, "PENDING");
  EXPECT_EQ(Step(*loop_).bound, 1);
  EXPECT_EQ(Get(id).tasks[0].status, "SCHEDULED");
  EXPECT_EQ(Get(id).tasks[0].node, "n1");
  EXPECT_EQ(Step(*loop_).launched, 1);
  EXPECT_EQ(Get(id).tasks[0].status, "RUNNING");
  EXPECT_EQ(Get(id).status, "RUNNING");
  EXPECT_EQ(backend_->RunningCount(), 1u);
  clock_.Advance(29'000);
  Step(*loop_);
  EXPECT_EQ(Get(id).tasks[0].status, "RUNNING");
  clock_.Advance(1'000);
  EXPECT_EQ(Step(*loop_).finished, 1);
  store::WorkflowRecord wf = Get(id);
  EXPECT_EQ(wf.tasks[0].status, "COMPLETED");
  EXPECT_EQ(wf.tasks[0].exit_code, 0);
  EXPECT_EQ(wf.status, "COMPLETED");
  EXPECT_TRUE(loop_->IsLeader());
}

TEST_F(SchedulingLoopTest, APoolWithoutAQueueConfigGetsItsOwnQueue) {
  // Pods are labelled with their pool as queue; no QUEUE config names "team-a".
  store::ConfigWrite pool;
  pool.op = store::ConfigWrite::Op::kPut;
  pool.kind = "POOL";
  pool.name = "team-a";
  pool.body = Json::parse(R"({"backend": "default", "default_platform": "cpu",
      "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi",
                                   "USER_STORAGE": "1Gi"},
      "common_pod_template": ["default_user", "default_ctrl"],
      "resources": {"gpu": {"guarantee": 0, "maximum": 4, "weight": 1}},
      "platforms": {"cpu": {}}})");
  ASSERT_TRUE(store_->WriteConfigs({pool}, {"admin", "test"}).ok());
  std::string id = Submit(Workflow("team", "1", "", ", sim_duration: 30s"), "team-a");
  EXPECT_EQ(Step(*loop_).bound, 1);
  store::WorkflowRecord wf = Get(id);
  EXPECT_EQ(wf.tasks[0].status, "SCHEDULED") << wf.tasks[0].message;
  EXPECT_EQ(wf.tasks[0].node, "n1");
}

// A pool on backend gpu-cluster-01 (registered, no platforms): its pods use the unlabelled node
// and the node labelled for its backend, never one labelled for another backend; the default
// pool's pods keep off both labelled nodes.
TEST_F(SchedulingLoopTest, BackendLabelKeepsPodsOnTheirBackendsNodes) {
  Json train_node = CpuNode("n-train", "4"), dev_node = CpuNode("n-dev", "64");
  train_node["metadata"]["labels"]["gpupool.io/backend"] = "gpu-cluster-01";
  dev_node["metadata"]["labels"]["gpupool.io/backend"] = "dev-cluster-01";
  ASSERT_TRUE(store_->UpsertNodes({{"n-train", train_node}, {"n-dev", dev_node}}, false).ok());
  nodes_.push_back(train_node);
  nodes_.push_back(dev_node);
  backend_ = std::make_unique<backend::SimBackend>(nodes_);
  loop_ = MakeLoop("a", *backend_);
  service::UpdateConfigRequest backend;
  backend.kind = "BACKEND";
  backend.name = "gpu-cluster-01";
  backend.body = {{"description", "training cluster"}};
  auto registered = service_->UpdateConfig({"alice", {"osmo-admin"}, "test"}, backend);
  ASSERT_TRUE(registered.ok()) << registered.status().ToString();
  service::UpdateConfigRequest pool;
  pool.kind = "POOL";
  pool.name = "train";
  pool.body = Json::parse(R"({"backend": "gpu-cluster-01",
      "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi",
                                   "USER_STORAGE": "1Gi"},
      "common_pod_template": ["default_user", "default_ctrl"]})");
  auto written = service_->UpdateConfig({"alice", {"osmo-admin"}, "test"}, pool);
  ASSERT_TRUE(written.ok()) << written.status().ToString();

  std::vector<std::string> ids;  // each task needs 2 cpu: two fit on n1, two on n-train
  for (int i = 0; i < 5; ++i)
    ids.push_back(Submit(Workflow("t" + std::to_string(i), "1", "", ""), "train"));
  Step(*loop_);
  std::map<std::string, int> per_node;
  for (const std::string& id : ids) {
    store::WorkflowRecord wf = Get(id);
    if (wf.tasks[0].status == "PENDING") {
      ++per_node["(pending)"];
    } else {
      ++per_node[wf.tasks[0].node];
    }
  }
  EXPECT_EQ(per_node, (std::map<std::string, int>{{"(pending)", 1}, {"n1", 2}, {"n-train", 2}}));
  std::string other = Submit(Workflow("d", "1", "", ""));
  Step(*loop_);
  EXPECT_EQ(Get(other).tasks[0].status, "PENDING");
}

TEST_F(SchedulingLoopTest, ExitCodesAndExitActions) {
  struct Case {
    std::string name;
    std::string task_extra;
    std::vector<std::string> statuses;  // every attempt after three runs
    std::string workflow_status;
  };
  std::vector<Case> cases = {
      {"non-zero exit fails", ", sim_duration: 10s, sim_exit_code: 3", {"FAILED"}, "FAILED"},
      {"exit action COMPLETE",
       ", sim_duration: 10s, sim_exit_code: 3, exitActions: {COMPLETE: \"3\"}",
       {"COMPLETED"},
       "COMPLETED"},
      {"exit action FAIL on 0",
       ", sim_duration: 10s, exitActions: {FAIL: \"0\"}",
       {"FAILED"},
       "FAILED"},
      {"reschedule once then fail (max_retries 1)",
       ", sim_duration: 10s, sim_exit_code: 137, exitActions: {RESCHEDULE: \"137\"}",
       {"RESCHEDULED", "FAILED"},
       "FAILED"},
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string id = Submit(Workflow("x" + std::to_string(n++), "1", "", c.task_extra));
    for (int i = 0; i < 3; ++i) {
      Step(*loop_);  // bind
      Step(*loop_);  // launch
      clock_.Advance(10'000);
      Step(*loop_);  // exit
    }
    store::WorkflowRecord wf = Get(id);
    std::vector<std::string> statuses;
    for (const auto& task : wf.tasks) statuses.push_back(task.status);
    EXPECT_EQ(statuses, c.statuses);
    EXPECT_EQ(wf.status, c.workflow_status);
    if (c.statuses.size() == 2) {
      EXPECT_EQ(wf.tasks[1].retry, 1);
    }
  }
}

TEST_F(SchedulingLoopTest, PoolDefaultExitActionsApplyAfterTheTasksOwn) {
  service::PatchConfigRequest patch;
  patch.kind = "POOL";
  patch.name = "default";
  patch.patch = Json::parse(R"({"default_exit_actions": {"RESCHEDULE": "42", "COMPLETE": "7"}})");
  auto patched = service_->PatchConfig({"alice", {"osmo-admin"}, "test"}, patch);
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  struct Case {
    std::string name;
    std::string task_extra;
    std::vector<std::string> statuses;
  };
  std::vector<Case> cases = {
      {"pool RESCHEDULE on 42, once (max_retries 1)",
       ", sim_duration: 10s, sim_exit_code: 42",
       {"RESCHEDULED", "FAILED"}},
      {"pool COMPLETE on 7", ", sim_duration: 10s, sim_exit_code: 7", {"COMPLETED"}},
      {"the task's own FAIL on 7 wins over the pool's COMPLETE",
       ", sim_duration: 10s, sim_exit_code: 7, exitActions: {FAIL: \"7\"}",
       {"FAILED"}},
      {"no entry matches 3: FAILED", ", sim_duration: 10s, sim_exit_code: 3", {"FAILED"}},
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string id = Submit(Workflow("p" + std::to_string(n++), "1", "", c.task_extra));
    for (int i = 0; i < 3; ++i) {
      Step(*loop_);  // bind
      Step(*loop_);  // launch
      clock_.Advance(10'000);
      Step(*loop_);  // exit
    }
    std::vector<std::string> statuses;
    for (const auto& task : Get(id).tasks) statuses.push_back(task.status);
    EXPECT_EQ(statuses, c.statuses);
  }
}

TEST_F(SchedulingLoopTest, ExecAndQueueTimeouts) {
  // n1 has 4 cpus: the long task takes them all (3 + 1 for the sidecar), the second waits.
  std::string running =
      Submit(Workflow("long", "3", "  timeout: {exec_timeout: 60s}\n", ", sim_duration: 1h"));
  std::string queued =
      Submit(Workflow("queued", "3", "  timeout: {queue_timeout: 30s}\n", ", sim_duration: 10s"));
  Step(*loop_);
  Step(*loop_);
  EXPECT_EQ(Get(running).tasks[0].status, "RUNNING");
  EXPECT_EQ(Get(queued).tasks[0].status, "PENDING");
  EXPECT_NE(Get(queued).tasks[0].message.find("Insufficient cpu"), std::string::npos)
      << Get(queued).tasks[0].message;
  clock_.Advance(31'000);
  Step(*loop_);
  EXPECT_EQ(Get(queued).tasks[0].status, "FAILED_QUEUE_TIMEOUT");
  EXPECT_EQ(Get(queued).status, "FAILED_QUEUE_TIMEOUT");
  clock_.Advance(30'000);
  Step(*loop_);
  EXPECT_EQ(Get(running).tasks[0].status, "FAILED_EXEC_TIMEOUT");
  EXPECT_EQ(Get(running).status, "FAILED_EXEC_TIMEOUT");
  EXPECT_EQ(backend_->RunningCount(), 0u);
}

TEST_F(SchedulingLoopTest, CancelStopsTheBackendTask) {
  std::string id = Submit(Workflow("c", "1", "", ", sim_duration: 1h"));
  Step(*loop_);
  Step(*loop_);
  ASSERT_EQ(backend_->RunningCount(), 1u);
  auto canceled = service_->CancelWorkflow({"alice", {"osmo-admin"}, "test"}, id);
  ASSERT_TRUE(canceled.ok()) << canceled.status().ToString();
  Step(*loop_);
  EXPECT_EQ(backend_->RunningCount(), 0u);
  EXPECT_EQ(Get(id).status, "CANCELED");
}

// A workflow handed in as stored (the server's listener: SchedulingLoop::Submitted) is placed as
// one read back from the store would be; one changed by another writer after the hand-in (here
// canceled) is read as stored, not as handed in.
TEST_F(SchedulingLoopTest, AWorkflowHandedInAsStoredIsPlacedAsOneReadBack) {
  service_->SetSubmittedListener([this](std::shared_ptr<const store::WorkflowRecord> stored) {
    loop_->Submitted(std::move(stored));
  });
  std::string id = Submit(Workflow("handed", "1", "", ", sim_duration: 1h"));
  std::string canceled = Submit(Workflow("handed-canceled", "1", "", ", sim_duration: 1h"));
  ASSERT_TRUE(service_->CancelWorkflow({"alice", {"osmo-admin"}, "test"}, canceled).ok());
  EXPECT_EQ(Step(*loop_).bound, 1);
  EXPECT_EQ(Get(id).tasks[0].status, "SCHEDULED");
  EXPECT_EQ(Get(id).tasks[0].node, "n1");
  EXPECT_EQ(Get(canceled).status, "CANCELED");
  EXPECT_EQ(Get(canceled).tasks[0].node, "");
  EXPECT_EQ(Step(*loop_).launched, 1);
  EXPECT_EQ(Get(id).tasks[0].status, "RUNNING");
  EXPECT_EQ(backend_->RunningCount(), 1u);
}

// Placing and launching are two steps; the loop's thread runs the launching one at once
// rather than an interval later. With an hour's interval, the task is RUNNING within the
// test's patience only if the second step did not wait.
TEST_F(SchedulingLoopTest, TheLoopLaunchesAPlacementWithoutWaitingAnInterval) {
  std::string id = Submit(Workflow("prompt", "1", "", ", sim_duration: 1h"));
  LoopOptions options;
  options.holder = "b";
  options.interval_ms = 3'600'000;
  SchedulingLoop loop(*store_, *backend_, clock_, registry_, options);
  loop.Start();
  std::string status;
  for (int waited_ms = 0; waited_ms < 30'000; waited_ms += 10) {
    status = Get(id).tasks[0].status;
    if (status == "RUNNING") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  loop.Stop();
  EXPECT_EQ(status, "RUNNING");
  EXPECT_EQ(backend_->RunningCount(), 1u);
}

// A nudge (a workflow submitted) after a step that left nothing pending brings the next step
// forward; after one that left work pending, the interval paces the loop. An hour's interval:
// a task placed within the test's patience was placed by a nudged step.
TEST_F(SchedulingLoopTest, ANudgeBringsTheNextStepForwardOnlyWhenNothingWasPending) {
  LoopOptions options;
  options.holder = "b";
  options.interval_ms = 3'600'000;
  SchedulingLoop loop(*store_, *backend_, clock_, registry_, options);
  auto wait_for = [&](const std::function<bool()>& done) {
    for (int waited_ms = 0; waited_ms < 30'000 && !done(); waited_ms += 10) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done();
  };
  loop.Start();
  ASSERT_TRUE(wait_for([&] { return loop.IsLeader(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // its first step is over
  std::string id = Submit(Workflow("prompt", "1", "", ", sim_duration: 1h"));
  loop.Nudge();
  EXPECT_TRUE(wait_for([&] { return Get(id).tasks[0].status == "RUNNING"; }));

  // 2 cpus and the sidecar's 1: n1 has 2 of its 4 left.
  std::string big = Submit(Workflow("big", "2", "", ", sim_duration: 1h"));
  loop.Nudge();
  EXPECT_TRUE(wait_for([&] { return !Get(big).tasks[0].message.empty(); }));
  std::string small = Submit(Workflow("small", "1", "", ", sim_duration: 1h"));
  loop.Nudge();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(Get(small).tasks[0].status, "PENDING") << "a backlog: the interval paces the loop";
  loop.Stop();
}

TEST_F(SchedulingLoopTest, NeverOvercommitsANode) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i)
    ids.push_back(Submit(Workflow("w" + std::to_string(i), "1", "", ", sim_duration: 1h")));
  for (int i = 0; i < 4; ++i) Step(*loop_);
  int placed = 0;
  for (const auto& id : ids) {
    const auto wf = Get(id);
    if (wf.tasks[0].status == "RUNNING")
      ++placed;
    else
      EXPECT_EQ(wf.tasks[0].status, "PENDING");
  }
  EXPECT_EQ(placed, 2);  // 4 cpus, 2 cpus each (task + sidecar)
  // First come, first served.
  EXPECT_EQ(Get(ids[0]).tasks[0].status, "RUNNING");
  EXPECT_EQ(Get(ids[1]).tasks[0].status, "RUNNING");
}

TEST_F(SchedulingLoopTest, OneLeaderAndTakeoverAfterTheLeaseExpires) {
  backend::SimBackend other_backend(nodes_);
  auto other = MakeLoop("b", other_backend);
  std::string id = Submit(Workflow("l", "1", "", ", sim_duration: 20s"));
  EXPECT_TRUE(Step(*loop_).leader);
  EXPECT_FALSE(Step(*other).leader);
  Step(*loop_);
  ASSERT_EQ(Get(id).tasks[0].status, "RUNNING");
  int64_t started = Get(id).tasks[0].started_ms;
  // The leader dies (stops stepping). Within the TTL the other one must not take over.
  clock_.Advance(4'000);
  EXPECT_FALSE(Step(*other).leader);
  clock_.Advance(1'001);
  StepStats stats = Step(*other);
  EXPECT_TRUE(stats.leader);
  EXPECT_TRUE(other->IsLeader());
  EXPECT_EQ(other_backend.RunningCount(), 1u);  // re-adopted, not started again
  EXPECT_EQ(Get(id).tasks[0].started_ms, started);
  EXPECT_EQ(stats.bound, 0);
  clock_.Advance(15'000);  // 20 s after the original start
  Step(*other);
  EXPECT_EQ(Get(id).status, "COMPLETED");
  // The old leader comes back: it is no longer the leader.
  EXPECT_FALSE(Step(*loop_).leader);
}

TEST_F(SchedulingLoopTest, NoExecuteTolerationSecondsEvictsAtTheDeadline) {
  // The task tolerates a NoExecute taint for 60 s; n1 gets that taint after the submission.
  std::string id = Submit(Workflow("tol", "1", "", ", sim_duration: 1h"));
  store::WorkflowRecord wf = Get(id);
  wf.tasks[0].pod["spec"]["tolerations"] = Json::array({{{"key", "maintenance"},
                                                         {"operator", "Exists"},
                                                         {"effect", "NoExecute"},
                                                         {"tolerationSeconds", 60}}});
  ASSERT_TRUE(store_->UpdateWorkflow(wf).ok());
  Json node = CpuNode("n1", "4");
  node["spec"]["taints"] = Json::array({{{"key", "maintenance"},
                                         {"effect", "NoExecute"},
                                         {"timeAdded", FormatTimestamp(clock_.NowMillis())}}});
  ASSERT_TRUE(store_->UpsertNodes({{"n1", node}}, true).ok());
  // Bound 10 s after the taint appeared: the 60 s run from the binding.
  clock_.Advance(10'000);
  EXPECT_EQ(Step(*loop_).bound, 1);
  EXPECT_EQ(Step(*loop_).launched, 1);
  EXPECT_EQ(Get(id).tasks[0].status, "RUNNING");
  clock_.Advance(59'000);
  EXPECT_EQ(Step(*loop_).evicted, 0);
  EXPECT_EQ(Get(id).tasks[0].status, "RUNNING");
  clock_.Advance(1'000);
  EXPECT_EQ(Step(*loop_).evicted, 1);
  wf = Get(id);
  EXPECT_EQ(wf.tasks[0].status, "PENDING");
  EXPECT_NE(wf.tasks[0].message.find("eviction (NoExecute)"), std::string::npos)
      << wf.tasks[0].message;
  EXPECT_NE(wf.tasks[0].message.find("tolerationSeconds"), std::string::npos)
      << wf.tasks[0].message;
  // Bound again; the taint is removed and added back 20 s later: the 60 s run from the taint.
  EXPECT_EQ(Step(*loop_).bound, 1);
  EXPECT_EQ(Step(*loop_).launched, 1);
  ASSERT_TRUE(store_->UpsertNodes({{"n1", CpuNode("n1", "4")}}, true).ok());
  clock_.Advance(20'000);
  node["spec"]["taints"][0]["timeAdded"] = FormatTimestamp(clock_.NowMillis());
  ASSERT_TRUE(store_->UpsertNodes({{"n1", node}}, true).ok());
  clock_.Advance(59'000);
  EXPECT_EQ(Step(*loop_).evicted, 0);
  EXPECT_EQ(Get(id).tasks[0].status, "RUNNING");
  clock_.Advance(1'000);
  EXPECT_EQ(Step(*loop_).evicted, 1);
}

TEST_F(SchedulingLoopTest, MachinePoolLaunchesANodeForPendingWorkAndRemovesItWhenEmpty) {
  // n1 has 4 cpus; a 6-cpu task (7 with the sidecar) fits only an m5.2xlarge (8 cpus). The
  // submission passes node validation on the node the machine pool would add.
  service_->SetMachinePoolSupport(service::MachinePoolSupportFor(autoscaler::Catalog::Builtin()));
  service::UpdateConfigRequest pool;
  pool.kind = "MACHINE_POOL";
  pool.name = "extra";
  pool.body = Json::parse(
      R"({"instance_type": "m5.2xlarge", "capacity_type": "on_demand", "min_replicas": 0,
          "max_replicas": 2})");
  ASSERT_TRUE(service_->UpdateConfig({"alice", {"osmo-admin"}, "test"}, pool).ok());
  std::string id = Submit(Workflow("big", "6", "", ", sim_duration: 5m"));

  StepStats launch = Step(*loop_);
  EXPECT_EQ(launch.bound, 0);
  EXPECT_EQ(launch.nodes_launched, 1);
  auto nodes = store_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 2u);
  std::string launched = (*nodes)[0].name == "n1" ? (*nodes)[1].name : (*nodes)[0].name;
  // The node counts as capacity while it starts: a second step launches nothing more.
  EXPECT_EQ(Step(*loop_).nodes_launched, 0);
  EXPECT_EQ(Get(id).tasks[0].status, "PENDING");

  // Ready after the provisioning delay; the task binds there and runs on the sim backend.
  clock_.Advance(60'000);
  Step(*loop_);
  Step(*loop_);
  Step(*loop_);
  store::WorkflowRecord wf = Get(id);
  EXPECT_EQ(wf.tasks[0].status, "RUNNING");
  EXPECT_EQ(wf.tasks[0].node, launched);

  // Finished, then empty for the scale-down delay above min_replicas 0: removed.
  clock_.Advance(5 * 60'000);
  Step(*loop_);
  EXPECT_EQ(Get(id).tasks[0].status, "COMPLETED");
  Step(*loop_);
  clock_.Advance(10 * 60'000);
  int removed = 0;
  for (int i = 0; i < 3; ++i) removed += Step(*loop_).nodes_removed;
  EXPECT_EQ(removed, 1);
  nodes = store_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].name, "n1");
  auto audit = store_->ListAudit(100);
  ASSERT_TRUE(audit.ok());
  int autoscaler_records = 0;
  for (const auto& record : *audit) autoscaler_records += record.user == "autoscaler";
  EXPECT_GE(autoscaler_records, 3);  // launched, ready, removed
}

// The spot interruption as the server lives it, with short timings: a task on a spot machine-pool
// node gets the 2-minute notice; the replacement launches at the notice, the task is stopped and
// evicted no later than the deadline, runs again on the replacement, and the interrupted node goes.
// A short scale-down delay must not remove the replacement meanwhile, and the machine-pool step
// must never fail.
TEST_F(SchedulingLoopTest, SpotInterruptionWithShortTimingsMovesTheTaskBeforeTheDeadline) {
  service_->SetMachinePoolSupport(service::MachinePoolSupportFor(autoscaler::Catalog::Builtin()));
  service::UpdateConfigRequest pool;
  pool.kind = "MACHINE_POOL";
  pool.name = "spot";
  pool.body = Json::parse(
      R"({"instance_type": "m5.2xlarge", "capacity_type": "spot", "min_replicas": 0,
          "max_replicas": 3})");
  ASSERT_TRUE(service_->UpdateConfig({"alice", {"osmo-admin"}, "test"}, pool).ok());
  LoopOptions options;
  options.holder = "short";
  options.max_retries = 1;
  options.provision.provision_delay_ms = 1'000;
  options.provision.scale_down_after_ms = 1'000;
  auto loop = std::make_unique<SchedulingLoop>(*store_, *backend_, clock_, registry_, options);
  loop_.reset();
  std::string id = Submit(Workflow("big", "6", "", ", sim_duration: 1h"));

  auto step = [&] {
    StepStats stats = Step(*loop);
    EXPECT_EQ(stats.machine_pool_error, "") << "the machine-pool step failed";
    clock_.Advance(500);
    return stats;
  };
  for (int i = 0; i < 8 && Get(id).tasks[0].status != "RUNNING"; ++i) step();
  ASSERT_EQ(Get(id).tasks[0].status, "RUNNING");
  const std::string first_node = Get(id).tasks[0].node;
  ASSERT_NE(first_node, "n1");

  const int64_t notice_ms = clock_.NowMillis();
  ASSERT_TRUE(
      InterruptNode(*store_, autoscaler::Catalog::Builtin(), first_node, notice_ms, {"root", "t"})
          .ok());
  // Until the deadline (and a little after), step every half second.
  std::vector<std::string> seen;  // the task's node or status, each change once
  bool interrupted_node_gone = false;
  while (clock_.NowMillis() < notice_ms + 125'000) {
    step();
    store::WorkflowRecord wf = Get(id);
    const std::string where = wf.tasks[0].status + (wf.tasks[0].node.empty() ? "" : "@") +
                              (wf.tasks[0].node == first_node ? "interrupted"
                               : wf.tasks[0].node.empty()     ? ""
                                                              : "replacement");
    if (seen.empty() || seen.back() != where) seen.push_back(where);
    auto nodes = store_->ListNodes();
    ASSERT_TRUE(nodes.ok());
    interrupted_node_gone = std::none_of(nodes->begin(), nodes->end(),
                                         [&](const auto& n) { return n.name == first_node; });
    if (clock_.NowMillis() >= notice_ms + 120'000) {
      EXPECT_NE(wf.tasks[0].node, first_node) << "the deadline passed with the task still there";
    }
  }
  // Running on the interrupted node, then pending (evicted), then on the replacement.
  ASSERT_GE(seen.size(), 3u) << ::testing::PrintToString(seen);
  EXPECT_EQ(seen.front(), "RUNNING@interrupted") << ::testing::PrintToString(seen);
  EXPECT_EQ(seen.back(), "RUNNING@replacement") << ::testing::PrintToString(seen);
  EXPECT_TRUE(interrupted_node_gone);
}

TEST_F(SchedulingLoopTest, ExportsGauges) {
  Submit(Workflow("g", "1", "", ", sim_duration: 1h"));
  Submit(Workflow("h", "2", "", ", sim_duration: 1h"));
  Step(*loop_);
  std::string text = registry_.Render();
  EXPECT_NE(text.find("gpupool_scheduler_leader 1"), std::string::npos) << text;
  EXPECT_NE(text.find("gpupool_pending_pods 1"), std::string::npos) << text;
  EXPECT_NE(text.find("gpupool_running_pods 1"), std::string::npos) << text;
  EXPECT_NE(text.find("gpupool_queue_fair_share{queue=\"default\""), std::string::npos) << text;
  EXPECT_NE(text.find("gpupool_scheduling_cycle_seconds_count 1"), std::string::npos);

  // Another server takes the lease: this one stops exporting the leader's view.
  clock_.Advance(10'000);
  backend::SimBackend other_backend(nodes_);
  metrics::Registry other_registry;
  LoopOptions options;
  options.holder = "b";
  options.lease_ttl_ms = 5000;
  SchedulingLoop other(*store_, other_backend, clock_, other_registry, options);
  ASSERT_TRUE(other.Step().ok());
  EXPECT_FALSE(Step(*loop_).leader);
  text = registry_.Render();
  EXPECT_NE(text.find("gpupool_scheduler_leader 0"), std::string::npos) << text;
  EXPECT_EQ(text.find("gpupool_pending_pods 1"), std::string::npos) << text;
  EXPECT_EQ(text.find("gpupool_queue_fair_share{"), std::string::npos) << text;
  EXPECT_NE(other_registry.Render().find("gpupool_pending_pods"), std::string::npos);
}

}  // namespace scheduling_loop_test
}  // namespace gpupool::controller
