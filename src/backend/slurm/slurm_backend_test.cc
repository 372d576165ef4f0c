#include "backend/slurm/slurm_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <thread>

#include "slurm/fake_slurmrestd.h"

namespace gpupool::backend {
namespace slurm_backend_test {

using Json = nlohmann::ordered_json;
using slurm::testing::FakeSlurmRest;

Json Pod(bool with_command = true) {
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
      "spec": {"containers": [{"name": "c", "command": ["true"],
      "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": 1}}}]}})");
  if (!with_command) pod["spec"]["containers"][0].erase("command");
  return pod;
}

class SlurmBackendTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(/*gate_bursts=*/false); }

  void Open(bool gate_bursts) {
    backend_.reset();
    state_ = std::make_shared<FakeSlurmRest::State>();
    slurm::ClientOptions client_options;
    client_options.user = "nobody";
    client_options.token = slurm::TokenSource::Fixed("t");
    client_options.sleep = [](std::chrono::milliseconds) {};
    auto client = std::make_shared<slurm::RestClient>(
        *slurm::ParseEndpoint("http://127.0.0.1:6820"), std::make_unique<FakeSlurmRest>(state_),
        std::move(client_options));
    slurm::ClusterOptions options;
    options.submit.output_dir = "/jobs";
    options.gate_bursts = gate_bursts;
    auto cluster = std::make_unique<slurm::SlurmCluster>(client, options);
    ASSERT_TRUE(cluster->Connect().ok());
    backend_ = std::make_unique<SlurmBackend>(std::move(cluster));
  }

  // The worker runs on its own thread: wait (bounded) until `done` holds.
  template <typename Predicate>
  bool WaitFor(Predicate done) {
    for (int i = 0; i < 500; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  int64_t JobOf(const std::string& name) {
    std::lock_guard lock(state_->mu);
    for (const auto& [id, job] : state_->jobs) {
      if (job["name"] == name) return id;
    }
    return 0;
  }

  std::shared_ptr<FakeSlurmRest::State> state_;
  std::unique_ptr<SlurmBackend> backend_;
};

TEST_F(SlurmBackendTest, LaunchSubmitsAndPollReportsTheExitOnce) {
  TaskLaunch launch{"wf/g/a/0", "gpu0004"};
  launch.pod = Pod();
  ASSERT_TRUE(backend_->Launch(launch).ok());
  ASSERT_TRUE(backend_->Launch(launch).ok());  // idempotent
  backend_->LaunchesDone();
  EXPECT_EQ(backend_->RunningCount(), 1u);
  ASSERT_TRUE(WaitFor([&] { return JobOf("wf/g/a/0") != 0; }));
  int64_t id = JobOf("wf/g/a/0");
  {
    std::lock_guard lock(state_->mu);
    state_->SetState(id, "RUNNING", 0, "gpu0004");
    state_->SetState(id, "FAILED", 2 << 8);
  }
  std::vector<TaskExit> exits;
  ASSERT_TRUE(WaitFor([&] {
    auto polled = backend_->Poll(1);
    exits.insert(exits.end(), polled.begin(), polled.end());
    return !exits.empty();
  }));
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].key, "wf/g/a/0");
  EXPECT_EQ(exits[0].exit_code, 2);
  EXPECT_EQ(exits[0].reason, "FAILED");
  EXPECT_EQ(backend_->RunningCount(), 0u);
  EXPECT_EQ(state_->submissions.size(), 1u);
}

TEST_F(SlurmBackendTest, ABurstOfLaunchesAndAKillAmongThemEachReachSlurmOnce) {
  // A step's launches, a kill among them and the killed task launched again (evicted and placed
  // anew): every task gets one job, the killed one's first job is cancelled before its second.
  for (int i = 0; i < 30; ++i) {
    TaskLaunch launch{"wf/g/t" + std::to_string(i) + "/0", i % 2 ? "gpu0003" : "gpu0004"};
    launch.pod = Pod();
    ASSERT_TRUE(backend_->Launch(launch).ok());
  }
  ASSERT_TRUE(backend_->Kill("wf/g/t7/0").ok());  // takes the launches before it along
  TaskLaunch again{"wf/g/t7/0", "gpu0003"};
  again.pod = Pod();
  ASSERT_TRUE(backend_->Launch(again).ok());
  backend_->LaunchesDone();
  EXPECT_EQ(backend_->RunningCount(), 30u);
  auto live_jobs = [&] {
    std::lock_guard lock(state_->mu);
    std::map<std::string, int> live;
    for (const auto& [id, job] : state_->jobs) {
      if (job["job_state"] != "CANCELLED") ++live[job["name"].get<std::string>()];
    }
    return live;
  };
  ASSERT_TRUE(WaitFor([&] { return live_jobs().size() == 30u; }));
  for (const auto& [name, count] : live_jobs()) EXPECT_EQ(count, 1) << name;
  std::lock_guard lock(state_->mu);
  EXPECT_LE(state_->submissions.size(), 31u);  // t7 twice at most: once before its kill
}

// While the loop says its next step may launch more (it placed tasks and follows at once), a
// burst under way keeps its gate shut for them: a stream placed over two steps reaches Slurm as
// one burst behind one gate, not as a second burst after the first has opened.
TEST_F(SlurmBackendTest, ABurstKeepsItsGateShutForTheNextStepWhileMoreMayFollow) {
  Open(/*gate_bursts=*/true);
  auto launch = [&](const std::string& key, const std::string& node) {
    TaskLaunch task{key, node};
    task.pod = Pod();
    ASSERT_TRUE(backend_->Launch(task).ok());
  };
  launch("wf/g/a/0", "gpu0003");
  launch("wf/g/b/0", "gpu0004");
  backend_->MoreLaunchesMayFollow(true);
  backend_->LaunchesDone();
  ASSERT_TRUE(WaitFor([&] { return JobOf("wf/g/a/0") != 0 && JobOf("wf/g/b/0") != 0; }));
  const int64_t gate = JobOf("gpupool-gate");
  ASSERT_NE(gate, 0);
  launch("wf/h/c/0", "gpu0003");  // the next step's
  backend_->MoreLaunchesMayFollow(false);
  // Time for a worker woken by the flag to act before the step's launches are done: they must
  // still join the burst.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  backend_->LaunchesDone();
  ASSERT_TRUE(WaitFor([&] { return JobOf("wf/h/c/0") != 0; }));
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard lock(state_->mu);
    return state_->jobs.at(gate)["job_state"] == "CANCELLED";
  }));
  std::lock_guard lock(state_->mu);
  int gates = 0;
  for (const Json& submission : state_->submissions) {
    if (submission["job"]["name"] == "gpupool-gate") {
      ++gates;
    } else {
      EXPECT_EQ(submission["job"].value("dependency", ""), "afterany:" + std::to_string(gate))
          << submission["job"]["name"];
    }
  }
  EXPECT_EQ(gates, 1);
  const auto& requests = state_->requests;
  const auto cancel = std::find(requests.begin(), requests.end(),
                                "DELETE /slurm/v0.0.38/job/" + std::to_string(gate));
  const auto last_submit =
      std::find(requests.rbegin(), requests.rend(), "POST /slurm/v0.0.38/job/submit");
  ASSERT_NE(cancel, requests.end());
  EXPECT_GT(cancel - requests.begin(), requests.rend() - last_submit - 1)
      << "the gate opens after the next step's launch is in";
}

// Started says a launch is on the cluster only once its job exists: not while Slurm cannot be
// reached, nor for an adoption, nor for a key killed before its job was acknowledged.
TEST_F(SlurmBackendTest, StartedReportsALaunchOnceItsJobExists) {
  EXPECT_TRUE(backend_->ReportsStarts());
  {
    std::lock_guard lock(state_->mu);
    state_->down = true;
  }
  TaskLaunch launch{"wf/g/a/0", "gpu0004"};
  launch.pod = Pod();
  ASSERT_TRUE(backend_->Launch(launch).ok());
  TaskLaunch killed{"wf/g/k/0", "gpu0004"};
  killed.pod = Pod();
  ASSERT_TRUE(backend_->Launch(killed).ok());
  TaskLaunch adopted{"wf/g/old/0", "gpu0003"};
  adopted.pod = Pod();
  adopted.adopt = true;
  ASSERT_TRUE(backend_->Launch(adopted).ok());
  backend_->LaunchesDone();
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard lock(state_->mu);
    return state_->refused > 0;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a worker round or two
  EXPECT_TRUE(backend_->Started().empty()) << "no job exists while slurmctld is down";
  ASSERT_TRUE(backend_->Kill("wf/g/k/0").ok());
  {
    std::lock_guard lock(state_->mu);
    state_->down = false;
  }
  std::vector<std::string> started;
  ASSERT_TRUE(WaitFor([&] {
    auto more = backend_->Started();
    started.insert(started.end(), more.begin(), more.end());
    return JobOf("wf/g/a/0") != 0 && !started.empty();
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto more = backend_->Started();
  started.insert(started.end(), more.begin(), more.end());
  EXPECT_EQ(started, std::vector<std::string>{"wf/g/a/0"});
}

TEST_F(SlurmBackendTest, WhatSlurmCannotRunFailsAtLaunch) {
  TaskLaunch launch{"wf/g/a/0", "gpu0004"};
  launch.pod = Pod(/*with_command=*/false);
  Status status = backend_->Launch(launch);
  backend_->LaunchesDone();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("no command or args"), std::string::npos);
  EXPECT_EQ(backend_->RunningCount(), 0u);
}

TEST_F(SlurmBackendTest, KillCancelsAndReportsNoExit) {
  TaskLaunch launch{"wf/g/a/0", "gpu0004"};
  launch.pod = Pod();
  ASSERT_TRUE(backend_->Launch(launch).ok());
  backend_->LaunchesDone();
  ASSERT_TRUE(WaitFor([&] { return JobOf("wf/g/a/0") != 0; }));
  ASSERT_TRUE(backend_->Kill("wf/g/a/0").ok());
  EXPECT_EQ(backend_->RunningCount(), 0u);
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard lock(state_->mu);
    return state_->cancels == 1;
  }));
  EXPECT_TRUE(backend_->Poll(1).empty());
}

TEST_F(SlurmBackendTest, AnAdoptedTaskWithoutAJobEndsLost) {
  TaskLaunch launch{"wf/g/gone/0", "gpu0004"};
  launch.pod = Pod();
  launch.adopt = true;
  ASSERT_TRUE(backend_->Launch(launch).ok());
  backend_->LaunchesDone();
  std::vector<TaskExit> exits;
  ASSERT_TRUE(WaitFor([&] {
    exits = backend_->Poll(42);
    return !exits.empty();
  }));
  EXPECT_EQ(exits[0].finished_ms, 42);
  EXPECT_EQ(exits[0].reason.rfind("lost: no Slurm job named wf/g/gone/0", 0), 0u)
      << exits[0].reason;
  EXPECT_TRUE(state_->submissions.empty());
}

}  // namespace slurm_backend_test
}  // namespace gpupool::backend
