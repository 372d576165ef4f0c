// The scheduling loop with a backend whose launches reach the cluster after Launch returns
// (Backend::ReportsStarts, as Slurm's worker and Kubernetes' client do): a launched task stays
// SCHEDULED until the backend says it is on the cluster, so a task RUNNING in the store always
// exists there. A leader that restarts in between launches it again (idempotent by its key)
// instead of adopting what was never started; an exit or a cancel before the start still apply.

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "controller/testing/cpu_node.h"
#include "controller/testing/loop_fixture.h"

namespace gpupool::controller {
namespace scheduling_loop_started_test {

using testing::CpuNode;

// The simulated cluster, whose launches the test says are on the cluster (Started) or refused.
class StartingBackend final : public testing::SimBackendBase {
 public:
  using SimBackendBase::SimBackendBase;

  std::string_view Kind() const override { return "starting"; }
  bool ReportsStarts() const override { return true; }
  std::vector<std::string> Started() override { return std::exchange(started_, {}); }
  Status Launch(const backend::TaskLaunch& launch) override {
    if (on_launch) on_launch(launch);
    if (!refuse_launches.empty()) return InvalidArgumentError(refuse_launches);
    launches.push_back(launch);
    return sim_.Launch(launch);
  }
  // Asked for by the step between its load and its writes: where a test acts as a concurrent
  // writer would.
  std::vector<std::shared_ptr<const backend::HandedInPod>> HandedInPods() const override {
    if (during_step) during_step();
    return {};
  }
  Status Kill(std::string_view key) override {
    kills.emplace_back(key);
    return sim_.Kill(key);
  }
  std::vector<backend::TaskExit> Poll(int64_t now_ms) override {
    std::vector<backend::TaskExit> exits = sim_.Poll(now_ms);
    exits.insert(exits.end(), refused_.begin(), refused_.end());
    refused_.clear();
    return exits;
  }

  void Start(const std::string& key) { started_.push_back(key); }
  void Refuse(const std::string& key, const std::string& why) {
    (void)sim_.Kill(key);
    refused_.push_back({key, 1, 0, why});
  }

  std::vector<backend::TaskLaunch> launches;
  std::vector<std::string> kills;
  std::function<void(const backend::TaskLaunch&)> on_launch;
  std::function<void()> during_step;
  std::string refuse_launches;  // Launch's error when set

 private:
  std::vector<std::string> started_;
  std::vector<backend::TaskExit> refused_;
};

class StartedLoopTest : public testing::LoopFixture<StartingBackend> {
 protected:
  void SetUp() override { Start({CpuNode("n1", "8")}); }

  std::string Submit(const std::string& name) {
    return SubmitSpec("workflow:\n  name: " + name +
                      "\n  resources:\n    default: {cpu: 1, memory: 1Gi, storage: 1Gi}\n"
                      "  tasks:\n  - {name: a, image: busybox, sim_duration: 1h}\n");
  }

  void Step() {
    LoopFixture::Step();
    clock_.Advance(200);
  }

  // Submitted, placed, then launched: SCHEDULED on n1, its key launched once.
  std::string Launched(const std::string& name) {
    std::string id = Submit(name);
    Step();  // placed
    Step();  // launched
    EXPECT_EQ(Task(id).status, "SCHEDULED");
    EXPECT_EQ(Task(id).node, "n1");
    return id;
  }
};

TEST_F(StartedLoopTest, ALaunchedTaskIsRunningOnlyOnceTheClusterHasIt) {
  std::string id = Launched("w");
  ASSERT_EQ(backend_->launches.size(), 1u);
  const std::string key = id + "/a-group/a/0";
  EXPECT_EQ(backend_->launches[0].key, key);
  EXPECT_FALSE(backend_->launches[0].adopt);
  Step();
  Step();
  EXPECT_EQ(Task(id).status, "SCHEDULED");
  EXPECT_EQ(backend_->launches.size(), 1u) << "launched once, not at every step";
  EXPECT_TRUE(backend_->kills.empty());
  const int64_t started_at = clock_.NowMillis();
  backend_->Start(key);
  Step();
  EXPECT_EQ(Task(id).status, "RUNNING");
  EXPECT_EQ(Task(id).started_ms, started_at);
  auto wf = store_->GetWorkflow(id);
  ASSERT_TRUE(wf.ok());
  EXPECT_EQ(wf->status, "RUNNING");
}

TEST_F(StartedLoopTest, ATaskIsLaunchedInTheStepThatPlacedItOnceItsPlacementIsWritten) {
  std::string id = Submit("w");
  std::vector<std::string> stored_at_launch;
  backend_->on_launch = [&](const backend::TaskLaunch&) {
    stored_at_launch.push_back(Task(id).status);
  };
  Step();
  ASSERT_EQ(backend_->launches.size(), 1u);
  EXPECT_EQ(backend_->launches[0].node, "n1");
  EXPECT_EQ(stored_at_launch, std::vector<std::string>{"SCHEDULED"})
      << "the placement is in the store before anything exists on the cluster";
  Step();
  EXPECT_EQ(backend_->launches.size(), 1u) << "not launched again by the next step";
  EXPECT_EQ(Task(id).status, "SCHEDULED");
}

TEST_F(StartedLoopTest, ALaunchRefusedRightAfterItsPlacementFailsTheTaskAtTheNextStep) {
  backend_->refuse_launches = "no command to run";
  std::string id = Submit("w");
  Step();
  EXPECT_EQ(Task(id).status, "SCHEDULED");
  Step();
  store::TaskRecord task = Task(id);
  EXPECT_EQ(task.status, "FAILED");
  EXPECT_NE(task.message.find("no command to run"), std::string::npos) << task.message;
}

TEST_F(StartedLoopTest, APlacementWhoseWriteLostToACancelIsNeverLaunched) {
  std::string id = Submit("w");
  bool cancel = true;
  backend_->during_step = [&] {
    if (!std::exchange(cancel, false)) return;
    EXPECT_TRUE(service_->CancelWorkflow({"alice", {"osmo-admin"}, "test"}, id).ok());
  };
  Step();
  Step();
  EXPECT_TRUE(backend_->launches.empty());
  EXPECT_EQ(Task(id).status, "CANCELED");
}

TEST_F(StartedLoopTest, ALeaderRestartedBeforeTheStartLaunchesAgainAndNeverAdopts) {
  std::string running = Launched("running");
  backend_->Start(running + "/a-group/a/0");
  Step();
  ASSERT_EQ(Task(running).status, "RUNNING");
  std::string waiting = Launched("waiting");

  // The server dies and starts again: a new loop and backend over the same store.
  loop_.reset();
  backend_ = std::make_unique<StartingBackend>(std::vector{CpuNode("n1", "8")});
  LoopOptions options;
  options.holder = "a";
  loop_ = std::make_unique<SchedulingLoop>(*store_, *backend_, clock_, registry_, options);
  Step();
  std::map<std::string, bool> adopted;  // key -> adopt
  for (const auto& launch : backend_->launches) adopted[launch.key] = launch.adopt;
  EXPECT_EQ(adopted, (std::map<std::string, bool>{{running + "/a-group/a/0", true},
                                                  {waiting + "/a-group/a/0", false}}));
  EXPECT_EQ(Task(waiting).status, "SCHEDULED");
  backend_->Start(waiting + "/a-group/a/0");
  Step();
  EXPECT_EQ(Task(waiting).status, "RUNNING");
}

TEST_F(StartedLoopTest, ALaunchRefusedBeforeItStartedFailsTheTaskWithTheReason) {
  std::string id = Launched("w");
  backend_->Refuse(id + "/a-group/a/0", "refused by Slurm: Requested node config is not available");
  Step();
  store::TaskRecord task = Task(id);
  EXPECT_EQ(task.status, "FAILED");
  EXPECT_EQ(task.exit_code, 1);
  EXPECT_NE(task.message.find("Requested node config is not available"), std::string::npos)
      << task.message;
}

TEST_F(StartedLoopTest, ACancelBeforeTheStartKillsTheLaunchAndIgnoresALateStart) {
  std::string id = Launched("w");
  const std::string key = id + "/a-group/a/0";
  ASSERT_TRUE(service_->CancelWorkflow({"alice", {"osmo-admin"}, "test"}, id).ok());
  Step();
  EXPECT_EQ(backend_->kills, std::vector<std::string>{key});
  backend_->Start(key);  // reported by a worker that had not seen the kill
  Step();
  EXPECT_EQ(Task(id).status, "CANCELED");
}

}  // namespace scheduling_loop_started_test
}  // namespace gpupool::controller
