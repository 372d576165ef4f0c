#include "slurm/cluster.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "slurm/fake_slurmrestd.h"

namespace gpupool::slurm {
namespace cluster_test {

using Json = nlohmann::ordered_json;
using testing::FakeSlurmRest;

Json Pod(int gpus) {
  Json pod = Json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
      "spec": {"containers": [{"name": "c", "command": ["sleep", "1"],
      "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}]}})");
  if (gpus > 0) pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = gpus;
  return pod;
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // An empty cluster: the captured nodes, none of the captured jobs.
    Reset(std::make_shared<FakeSlurmRest::State>());
    auto release = cluster_->Connect();
    ASSERT_TRUE(release.ok()) << release.status().message();
    EXPECT_EQ(*release, "22.05.8");
  }

  // A new SlurmCluster (a restarted gpupool) on the same fake slurmrestd.
  void Reset(std::shared_ptr<FakeSlurmRest::State> state) {
    state_ = std::move(state);
    ClientOptions client_options;
    client_options.user = "nobody";
    client_options.token = TokenSource::Fixed("t");
    client_options.max_attempts = 2;
    client_options.sleep = [](std::chrono::milliseconds) {};
    auto client = std::make_shared<RestClient>(*ParseEndpoint("http://127.0.0.1:6820"),
                                               std::make_unique<FakeSlurmRest>(state_),
                                               std::move(client_options));
    ClusterOptions options = options_;
    options.submit.output_dir = "/jobs";
    cluster_ = std::make_unique<SlurmCluster>(client, options);
  }

  // A gpupool whose bursts go behind a gate, on the same fake slurmrestd.
  void ResetWithGates() {
    options_.arrays = true;
    options_.gate_bursts = true;
    Reset(state_);
    ASSERT_TRUE(cluster_->Connect().ok());
  }

  // The requests since `from` that are not job listings, in order.
  std::vector<std::string> Commands(size_t from = 0) const {
    std::vector<std::string> out;
    for (size_t i = from; i < state_->requests.size(); ++i) {
      if (!state_->requests[i].starts_with("GET ")) out.push_back(state_->requests[i]);
    }
    return out;
  }

  std::vector<TaskEvent> Poll() {
    auto events = cluster_->Poll();
    EXPECT_TRUE(events.ok()) << events.status().message();
    return events.ok() ? *events : std::vector<TaskEvent>{};
  }

  int64_t JobOfAnyState(const std::string& name) {
    for (const auto& [id, job] : state_->jobs) {
      if (job["name"] == name) return id;
    }
    return 0;
  }

  int64_t JobOf(const std::string& name) {
    for (const auto& [id, job] : state_->jobs) {
      if (job["name"] == name && job["job_state"] != "CANCELLED") return id;
    }
    return 0;
  }

  ClusterOptions options_;
  std::shared_ptr<FakeSlurmRest::State> state_;
  std::unique_ptr<SlurmCluster> cluster_;
};

TEST_F(ClusterTest, RunSubmitsOnceAndReportsStartAndEndOnce) {
  TaskRun run{"wf/g/a/0", "gpu0004", Pod(2), 600};
  ASSERT_TRUE(cluster_->Run(run, false).ok());
  ASSERT_TRUE(cluster_->Run(run, false).ok());  // idempotent
  ASSERT_EQ(state_->submissions.size(), 1u);
  const Json& job = state_->submissions[0]["job"];
  EXPECT_EQ(job["name"], "wf/g/a/0");
  EXPECT_EQ(job["nodelist"], "gpu0004");
  EXPECT_EQ(job["comment"], "gpupool");
  EXPECT_EQ(job["gpus_per_node"], "a100:2");
  EXPECT_EQ(job["partition"], "gpu");
  EXPECT_EQ(cluster_->Tracked(), 1u);

  EXPECT_TRUE(Poll().empty());  // pending
  int64_t id = JobOf("wf/g/a/0");
  state_->SetState(id, "RUNNING", 0, "gpu0004");
  auto events = Poll();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, TaskEvent::Kind::kStarted);
  EXPECT_EQ(events[0].key, "wf/g/a/0");
  EXPECT_EQ(events[0].node, "gpu0004");
  EXPECT_EQ(events[0].time_ms, state_->now * 1000);
  EXPECT_TRUE(Poll().empty());

  state_->SetState(id, "FAILED", 3 << 8);
  events = Poll();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, TaskEvent::Kind::kEnded);
  EXPECT_EQ(events[0].exit_code, 3);
  EXPECT_FALSE(events[0].lost);
  EXPECT_EQ(events[0].time_ms, state_->now * 1000);
  EXPECT_TRUE(Poll().empty());
  EXPECT_EQ(cluster_->Tracked(), 0u);
}

TEST_F(ClusterTest, AnUnchangedClusterIsAskedIncrementally) {
  ASSERT_TRUE(cluster_->Run({"wf/g/a/0", "gpu0004", Pod(1), 600}, false).ok());
  Poll();
  size_t before = state_->requests.size();
  Poll();
  ASSERT_EQ(state_->requests.size(), before + 1);
  EXPECT_NE(state_->requests.back().find("/jobs?update_time="), std::string::npos)
      << state_->requests.back();
  // An idle gpupool (nothing tracked) asks nothing.
  int64_t id = JobOf("wf/g/a/0");
  state_->SetState(id, "RUNNING", 0, "gpu0004");
  state_->SetState(id, "COMPLETED");
  Poll();
  before = state_->requests.size();
  EXPECT_TRUE(Poll().empty());
  EXPECT_EQ(state_->requests.size(), before);
}

TEST_F(ClusterTest, RestartedGpupoolFindsItsJobsInsteadOfSubmittingTwice) {
  ASSERT_TRUE(cluster_->Run({"wf/g/a/0", "gpu0004", Pod(1), 600}, false).ok());
  ASSERT_TRUE(cluster_->Run({"wf/g/b/0", "gpu0004", Pod(1), 600}, false).ok());
  int64_t b = JobOf("wf/g/b/0");
  state_->SetState(b, "RUNNING", 0, "gpu0004");
  state_->SetState(b, "COMPLETED");

  Reset(state_);  // gpupool restarts
  ASSERT_TRUE(cluster_->Connect().ok());
  // a was SCHEDULED (launched again), b was RUNNING (adopted), c is new.
  ASSERT_TRUE(cluster_->Run({"wf/g/a/0", "gpu0004", Pod(1), 600}, false).ok());
  ASSERT_TRUE(cluster_->Run({"wf/g/b/0", "gpu0004", Pod(1), 600}, true).ok());
  ASSERT_TRUE(cluster_->Run({"wf/g/c/0", "gpu0004", Pod(1), 600}, false).ok());
  EXPECT_EQ(state_->submissions.size(), 3u);  // a, b before; c now
  auto events = Poll();
  ASSERT_EQ(events.size(), 2u);  // b started and ended
  EXPECT_EQ(events[0].key, "wf/g/b/0");
  EXPECT_EQ(events[1].kind, TaskEvent::Kind::kEnded);
  EXPECT_EQ(events[1].exit_code, 0);
}

TEST_F(ClusterTest, AnAdoptedTaskWithoutAJobIsLost) {
  ASSERT_TRUE(cluster_->Run({"wf/g/gone/0", "gpu0004", Pod(1), 600}, true).ok());
  EXPECT_TRUE(state_->submissions.empty());
  auto events = Poll();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, TaskEvent::Kind::kEnded);
  EXPECT_TRUE(events[0].lost);
  EXPECT_NE(events[0].reason.find("no Slurm job named wf/g/gone/0"), std::string::npos);
}

TEST_F(ClusterTest, StopCancelsAndAStoppedKeyRunsAnew) {
  ASSERT_TRUE(cluster_->Run({"wf/g/a/0", "gpu0004", Pod(1), 600}, false).ok());
  int64_t first = JobOf("wf/g/a/0");
  state_->SetState(first, "RUNNING", 0, "gpu0004");
  ASSERT_TRUE(cluster_->Stop("wf/g/a/0").ok());
  EXPECT_EQ(state_->jobs.at(first)["job_state"], "CANCELLED");
  EXPECT_EQ(cluster_->Tracked(), 0u);
  EXPECT_TRUE(cluster_->Stop("wf/g/unknown/0").ok());
  // Evicted, then placed again with the same attempt key: a new job.
  ASSERT_TRUE(cluster_->Run({"wf/g/a/0", "gpu0003", Pod(1), 600}, false).ok());
  EXPECT_EQ(state_->submissions.size(), 2u);
  EXPECT_NE(JobOf("wf/g/a/0"), first);
  EXPECT_TRUE(Poll().empty());
}

TEST_F(ClusterTest, SubmissionsWaitForAnUnreachableSlurm) {
  state_->down = true;
  ASSERT_TRUE(cluster_->Run({"wf/g/a/0", "gpu0004", Pod(1), 600}, false).ok());
  EXPECT_EQ(cluster_->Tracked(), 1u);
  EXPECT_EQ(cluster_->Poll().status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(state_->submissions.empty());
  state_->down = false;
  EXPECT_TRUE(Poll().empty());
  ASSERT_EQ(state_->submissions.size(), 1u);
  EXPECT_TRUE(Poll().empty());
  EXPECT_EQ(state_->submissions.size(), 1u);
}

int Count(const std::vector<std::string>& requests, const std::string& part) {
  int n = 0;
  for (const auto& request : requests) n += request.find(part) != std::string::npos;
  return n;
}

TEST_F(ClusterTest, RunAllListsJobsOnceForABurstAndStillAdopts) {
  // A job an earlier gpupool submitted for b: found in the one listing, not submitted again.
  state_->AddJob(Json{{"name", "wf/g/b/0"},
                      {"comment", "gpupool"},
                      {"job_state", "RUNNING"},
                      {"exit_code", 0},
                      {"nodes", "gpu0004"},
                      {"start_time", state_->now}});
  state_->requests.clear();
  std::vector<SlurmCluster::RunRequest> runs = {{{"wf/g/a/0", "gpu0004", Pod(1), 600}},
                                                {{"wf/g/b/0", "gpu0004", Pod(1), 600}},
                                                {{"wf/g/c/0", "gpu0003", Pod(1), 600}},
                                                {{"wf/g/a/0", "gpu0004", Pod(1), 600}},
                                                {{"wf/g/d/0", "nosuchnode", Pod(1), 600}}};
  std::vector<Status> statuses = cluster_->RunAll(runs);
  ASSERT_EQ(statuses.size(), 5u);
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(statuses[i].ok()) << i << statuses[i].message();
  EXPECT_EQ(statuses[4].code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Count(state_->requests, "GET /slurm/v0.0.38/jobs"), 1);
  ASSERT_EQ(state_->submissions.size(), 2u);  // a and c; b adopted, a once
  EXPECT_EQ(state_->submissions[0]["job"]["name"], "wf/g/a/0");
  EXPECT_EQ(state_->submissions[1]["job"]["name"], "wf/g/c/0");
  EXPECT_EQ(cluster_->Tracked(), 3u);
  // Run for one task still lists before it submits.
  state_->requests.clear();
  ASSERT_TRUE(cluster_->Run({"wf/g/e/0", "gpu0004", Pod(1), 600}, false).ok());
  EXPECT_EQ(Count(state_->requests, "GET /slurm/v0.0.38/jobs"), 1);
}

TEST_F(ClusterTest, ABurstStopsSubmittingWhenSlurmStopsAnswering) {
  state_->down_after_submits = 1;
  std::vector<SlurmCluster::RunRequest> runs = {{{"wf/g/a/0", "gpu0004", Pod(1), 600}},
                                                {{"wf/g/b/0", "gpu0004", Pod(1), 600}},
                                                {{"wf/g/c/0", "gpu0004", Pod(1), 600}}};
  for (const Status& status : cluster_->RunAll(runs)) EXPECT_TRUE(status.ok()) << status.message();
  // b's submission failed (tried twice: the client's attempts); c was not tried.
  EXPECT_EQ(state_->refused, 2);
  EXPECT_EQ(state_->submissions.size(), 1u);
  EXPECT_EQ(cluster_->Tracked(), 3u);
  state_->down = false;
  state_->down_after_submits = 0;
  EXPECT_TRUE(Poll().empty());  // b and c submitted now, each once
  ASSERT_EQ(state_->submissions.size(), 3u);
  EXPECT_EQ(state_->submissions[1]["job"]["name"], "wf/g/b/0");
  EXPECT_EQ(state_->submissions[2]["job"]["name"], "wf/g/c/0");
  EXPECT_TRUE(Poll().empty());
  EXPECT_EQ(state_->submissions.size(), 3u);
}

TEST_F(ClusterTest, ABurstIsSubmittedOverSeveralConnectionsEachJobOnce) {
  auto client = [&] {
    ClientOptions options;
    options.user = "nobody";
    options.token = TokenSource::Fixed("t");
    return std::make_shared<RestClient>(*ParseEndpoint("http://127.0.0.1:6820"),
                                        std::make_unique<FakeSlurmRest>(state_), options);
  };
  cluster_ = std::make_unique<SlurmCluster>(client(), ClusterOptions{},
                                            std::vector{client(), client(), client()});
  ASSERT_TRUE(cluster_->Connect().ok());
  std::vector<SlurmCluster::RunRequest> runs;
  for (int i = 0; i < 40; ++i) {
    runs.push_back(
        {{"wf/g/t" + std::to_string(i) + "/0", i % 2 ? "gpu0003" : "gpu0004", Pod(1), 600}});
  }
  runs.push_back({{"wf/g/bad/0", "nosuchnode", Pod(1), 600}});
  std::vector<Status> statuses = cluster_->RunAll(runs);
  for (int i = 0; i < 40; ++i) EXPECT_TRUE(statuses[i].ok()) << statuses[i].message();
  EXPECT_EQ(statuses[40].code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(state_->submissions.size(), 40u);
  std::set<std::string> names;
  for (const auto& submission : state_->submissions) names.insert(submission["job"]["name"]);
  EXPECT_EQ(names.size(), 40u);
  EXPECT_EQ(cluster_->Tracked(), 40u);
  // Each task holds its own job: every start is reported under the key the job was named after.
  for (auto& [id, job] : state_->jobs)
    state_->SetState(id, "RUNNING", 0, job["requested_node"].get<std::string>());
  auto events = Poll();
  ASSERT_EQ(events.size(), 40u);
  for (const auto& event : events) {
    EXPECT_EQ(event.kind, TaskEvent::Kind::kStarted);
    EXPECT_EQ(state_->jobs.at(event.job_id)["name"], event.key);
  }
  EXPECT_EQ(state_->submissions.size(), 40u);
}

// A burst's tasks on one node as one array: each element maps back to its task, starts and
// ends on its own, is cancelled alone, and a restarted gpupool adopts the elements by the
// array's comment.
TEST_F(ClusterTest, ABurstOnOneNodeRunsAsOneArrayOfItsTasks) {
  ClientOptions client_options;
  client_options.user = "nobody";
  client_options.token = TokenSource::Fixed("t");
  ClusterOptions options;
  options.submit.output_dir = "/jobs";
  options.arrays = true;
  auto make = [&] {
    return std::make_unique<SlurmCluster>(
        std::make_shared<RestClient>(*ParseEndpoint("http://127.0.0.1:6820"),
                                     std::make_unique<FakeSlurmRest>(state_), client_options),
        options);
  };
  cluster_ = make();
  ASSERT_TRUE(cluster_->Connect().ok());
  Json two_cpus = Pod(1);
  two_cpus["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3";
  std::vector<SlurmCluster::RunRequest> runs = {{{"wf/g/a/0", "gpu0004", Pod(1), 600}},
                                                {{"wf/g/b/0", "gpu0004", Pod(1), 600}},
                                                {{"wf/g/c/0", "gpu0003", Pod(1), 600}},
                                                {{"wf/g/d/0", "gpu0004", two_cpus, 600}},
                                                {{"wf/g/e/0", "gpu0004", Pod(1), 600}}};
  for (const Status& status : cluster_->RunAll(runs)) EXPECT_TRUE(status.ok()) << status.message();
  // a, b, e as one array; c (another node) and d (other cpus) as single jobs.
  ASSERT_EQ(state_->submissions.size(), 3u);
  const Json& array = state_->submissions[0]["job"];
  EXPECT_EQ(array["array"], "0-2");
  EXPECT_EQ(array["comment"], "gpupool array:wf/g/a/0 wf/g/b/0 wf/g/e/0");
  EXPECT_EQ(state_->submissions[1]["job"]["name"], "wf/g/c/0");
  EXPECT_FALSE(state_->submissions[1]["job"].contains("array"));
  EXPECT_EQ(state_->submissions[2]["job"]["name"], "wf/g/d/0");
  EXPECT_EQ(state_->jobs.size(), 5u);  // 3 elements, 2 jobs

  // Element 1 (b) starts and fails alone; the others stay pending.
  int64_t array_id = 1;
  state_->SetState(array_id + 1, "RUNNING", 0, "gpu0004");
  state_->SetState(array_id + 1, "FAILED", 3 << 8);
  auto events = Poll();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].key, "wf/g/b/0");
  EXPECT_EQ(events[0].kind, TaskEvent::Kind::kStarted);
  EXPECT_EQ(events[1].key, "wf/g/b/0");
  EXPECT_EQ(events[1].kind, TaskEvent::Kind::kEnded);
  EXPECT_EQ(events[1].exit_code, 3);

  // Stopping e cancels element 2 alone.
  state_->requests.clear();
  ASSERT_TRUE(cluster_->Stop("wf/g/e/0").ok());
  EXPECT_EQ(state_->requests, std::vector<std::string>{"DELETE /slurm/v0.0.38/job/1_2"});
  EXPECT_EQ(state_->jobs.at(array_id + 2)["job_state"], "CANCELLED");
  EXPECT_EQ(state_->jobs.at(array_id)["job_state"], "PENDING");

  // A restarted gpupool adopts a from the array's comment, even while a's element is still
  // in the record of the array's pending elements (no array_task_id yet), and submits nothing.
  state_->jobs.at(array_id).erase("array_task_id");
  state_->jobs.at(array_id)["array_task_string"] = "0";
  cluster_ = make();
  ASSERT_TRUE(cluster_->Connect().ok());
  ASSERT_TRUE(cluster_->Run({"wf/g/a/0", "gpu0004", Pod(1), 600}, true).ok());
  ASSERT_TRUE(cluster_->Run({"wf/g/c/0", "gpu0003", Pod(1), 600}, true).ok());
  EXPECT_TRUE(Poll().empty());
  state_->jobs.at(array_id)["array_task_id"] = 0;
  state_->SetState(array_id, "RUNNING", 0, "gpu0004");
  state_->SetState(array_id, "COMPLETED", 0);
  events = Poll();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].key, "wf/g/a/0");
  EXPECT_EQ(events[1].kind, TaskEvent::Kind::kEnded);
  EXPECT_EQ(events[1].exit_code, 0);
  EXPECT_EQ(state_->submissions.size(), 3u);
  EXPECT_EQ(cluster_->Tracked(), 1u);  // c
}

TEST_F(ClusterTest, PollListsNoSoonerThanTheLastListingsCostAllows) {
  state_->requests.clear();
  ClusterOptions options;
  options.listing_pace = 1e6;  // a listing of the fake takes microseconds: seconds of pause
  ClientOptions client_options;
  client_options.user = "nobody";
  client_options.token = TokenSource::Fixed("t");
  cluster_ = std::make_unique<SlurmCluster>(
      std::make_shared<RestClient>(*ParseEndpoint("http://127.0.0.1:6820"),
                                   std::make_unique<FakeSlurmRest>(state_), client_options),
      options);
  ASSERT_TRUE(cluster_->Connect().ok());
  ASSERT_TRUE(cluster_->Run({"wf/g/a/0", "gpu0004", Pod(1), 600}, false).ok());
  state_->SetState(JobOf("wf/g/a/0"), "RUNNING", 0, "gpu0004");
  size_t before = state_->requests.size();
  EXPECT_TRUE(Poll().empty());  // not asked: the start is reported by a later poll
  EXPECT_EQ(state_->requests.size(), before);
}

TEST_F(ClusterTest, RefusedTasksFailRun) {
  Status unknown = cluster_->Run({"wf/g/a/0", "nosuchnode", Pod(1), 600}, false);
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("Slurm has no node \"nosuchnode\""), std::string::npos);
  Json no_command = Pod(0);
  no_command["spec"]["containers"][0].erase("command");
  Status refused = cluster_->Run({"wf/g/b/0", "gpu0004", no_command, 600}, false);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cluster_->Tracked(), 0u);
}

TEST_F(ClusterTest, AJobThatVanishesIsLost) {
  ASSERT_TRUE(cluster_->Run({"wf/g/a/0", "gpu0004", Pod(1), 600}, false).ok());
  int64_t id = JobOf("wf/g/a/0");
  state_->SetState(id, "RUNNING", 0, "gpu0004");
  ASSERT_EQ(Poll().size(), 1u);
  // slurmctld restarted without its state: the job is gone, newer ones exist.
  state_->jobs.erase(id);
  state_->AddJob(Json{{"name", "other"}, {"job_state", "PENDING"}});
  EXPECT_TRUE(Poll().empty());  // noticed
  auto events = Poll();         // reported
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].lost);
  EXPECT_NE(events[0].reason.find("is gone from slurmctld"), std::string::npos);
}

TEST_F(ClusterTest, NodesCountForeignJobsAsUsed) {
  // The captured node gpu0001 runs a foreign job (4 CPUs, 8000 MiB, 3 GPUs) and gpupool's
  // wf2/g/train/0 (2 CPUs, 4096 MiB, 1 GPU). Here gpupool's job is in the listing too.
  state_->AddJob(Json{{"name", "wf2/g/train/0"},
                      {"comment", "gpupool"},
                      {"job_state", "RUNNING"},
                      {"nodes", "gpu0001"},
                      {"cpus", 2},
                      {"memory_per_node", 4096},
                      {"gres_detail", {"gpu:a100:1(IDX:3)"}},
                      {"start_time", state_->now}});
  auto nodes = cluster_->Nodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  ASSERT_EQ(nodes->size(), 4u);
  const Json& n1 = (*nodes)[0];
  EXPECT_EQ(n1["metadata"]["name"], "gpu0001");
  EXPECT_EQ(n1["status"]["allocatable"]["nvidia.com/gpu"], "5");
  EXPECT_EQ(n1["status"]["allocatable"]["cpu"], "60");
  EXPECT_EQ(n1["metadata"]["annotations"]["slurm.gpupool.io/foreign-usage"],
            "cpu=4,memory=8000Mi,gpu=3");
  EXPECT_EQ((*nodes)[3]["spec"]["unschedulable"], true);
}

// Several jobs go to Slurm behind one gate: each depends on it, and it is cancelled once all are
// in, so Slurm starts none before the last is submitted. The gate is a job free to run (its end,
// unlike a pending job's cancel, makes slurmctld schedule at once), small and time-limited. A
// single job needs no gate.
TEST_F(ClusterTest, ABurstWaitsBehindAGateThatOpensOnceAllOfItIsIn) {
  ResetWithGates();
  const size_t before = state_->requests.size();
  std::vector<SlurmCluster::RunRequest> runs = {{{"wf/g/a/0", "gpu0004", Pod(1), 600}},
                                                {{"wf/g/b/0", "gpu0004", Pod(1), 600}},
                                                {{"wf/h/c/0", "gpu0003", Pod(1), 600}}};
  for (const Status& status : cluster_->RunAll(runs)) EXPECT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(state_->submissions.size(), 3u);  // the gate, the array of a and b, c
  const Json& gate = state_->submissions[0]["job"];
  EXPECT_EQ(gate["name"], "gpupool-gate");
  EXPECT_EQ(gate["comment"], "gpupool gate");
  EXPECT_FALSE(gate.contains("hold"));
  EXPECT_FALSE(gate.contains("nodelist"));
  EXPECT_FALSE(gate.contains("dependency"));
  EXPECT_EQ(gate["cpus_per_task"], 1);
  EXPECT_EQ(gate["memory_per_node"], 64);
  EXPECT_EQ(gate["time_limit"], 1);
  EXPECT_EQ(state_->submissions[0]["script"], "#!/bin/sh\nexec sleep 120\n");
  const int64_t gate_id = 1;
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(state_->submissions[i]["job"]["dependency"], "afterany:1") << i;
    EXPECT_FALSE(state_->submissions[i]["job"].contains("hold")) << i;
  }
  EXPECT_EQ(state_->submissions[1]["job"]["array"], "0-1");
  const std::vector<std::string> expected = {
      "POST /slurm/v0.0.38/job/submit", "POST /slurm/v0.0.38/job/submit",
      "POST /slurm/v0.0.38/job/submit", "DELETE /slurm/v0.0.38/job/1"};
  EXPECT_EQ(Commands(before), expected);
  EXPECT_EQ(state_->jobs.at(gate_id)["job_state"], "CANCELLED");
  EXPECT_EQ(cluster_->Tracked(), 3u);  // the gate is not a task
  EXPECT_TRUE(Poll().empty());

  // One job alone is submitted free.
  ASSERT_TRUE(cluster_->Run({"wf/i/d/0", "gpu0003", Pod(1), 600}, false).ok());
  ASSERT_EQ(state_->submissions.size(), 4u);
  EXPECT_FALSE(state_->submissions[3]["job"].contains("dependency"));
  EXPECT_FALSE(state_->submissions[3]["job"].contains("hold"));
}

// Launches that arrive while a burst is submitted join it behind its gate, before the gate
// opens, in a few rounds at most; their statuses follow the first requests'. A gang among the
// late ones that does not reach Slurm whole is cancelled with the burst's.
TEST_F(ClusterTest, LaunchesArrivingDuringABurstJoinItBehindItsGate) {
  ResetWithGates();
  const size_t before = state_->requests.size();
  std::vector<SlurmCluster::RunRequest> runs = {{{"wf/g/a/0", "gpu0004", Pod(1), 600}},
                                                {{"wf/h/b/0", "gpu0003", Pod(1), 600}}};
  int asked = 0;
  auto more = [&] {
    ++asked;
    std::vector<SlurmCluster::RunRequest> late;
    if (asked == 1) {
      // Seen by the first round: submitted before the gate opens.
      EXPECT_EQ(state_->jobs.at(1)["job_state"], "PENDING");
      late.push_back({{"wf/i/c/0", "gpu0003", Pod(1), 600}});
      late.push_back({{"wf/j/d/0", "gpu0002", Pod(1), 600}});
    } else {
      late.push_back({{"wf/k/e/0", "gpu0002", Pod(1), 600}});  // a stream: every round
    }
    return late;
  };
  std::vector<Status> statuses = cluster_->RunAll(runs, more);
  EXPECT_EQ(asked, static_cast<int>(SlurmCluster::kMaxBurstRounds) - 1);
  ASSERT_EQ(statuses.size(), 2u + 2u + (SlurmCluster::kMaxBurstRounds - 2));
  for (const Status& status : statuses) EXPECT_TRUE(status.ok()) << status.message();
  // The gate, a, b, then c and d, then e (once: the same key again is the same task).
  ASSERT_EQ(state_->submissions.size(), 6u);
  for (size_t i = 1; i < state_->submissions.size(); ++i) {
    EXPECT_EQ(state_->submissions[i]["job"]["dependency"], "afterany:1") << i;
  }
  std::vector<std::string> commands = Commands(before);
  ASSERT_FALSE(commands.empty());
  EXPECT_EQ(commands.back(), "DELETE /slurm/v0.0.38/job/1") << "the gate opens last";
  EXPECT_EQ(std::count(commands.begin(), commands.end(), "DELETE /slurm/v0.0.38/job/1"), 1);
  EXPECT_EQ(cluster_->Tracked(), 5u);
}

// After a burst behind a gate, Poll leaves slurmctld alone for the configured pause (its
// scheduler is starting the burst), then lists again.
TEST_F(ClusterTest, PollListsNoJobsRightAfterABurst) {
  options_.pause_listing_after_burst = std::chrono::hours(1);
  ResetWithGates();
  std::vector<SlurmCluster::RunRequest> runs = {{{"wf/g/a/0", "gpu0004", Pod(1), 600}},
                                                {{"wf/h/b/0", "gpu0003", Pod(1), 600}}};
  for (const Status& status : cluster_->RunAll(runs)) EXPECT_TRUE(status.ok()) << status.message();
  state_->SetState(JobOf("wf/g/a/0"), "RUNNING", 0, "gpu0004");
  const size_t before = state_->requests.size();
  EXPECT_TRUE(Poll().empty());
  EXPECT_EQ(state_->requests.size(), before);  // not even a listing

  options_.pause_listing_after_burst = std::chrono::milliseconds(0);
  Reset(state_);  // a gpupool without the pause adopts the two and sees a's start
  ASSERT_TRUE(cluster_->Connect().ok());
  ASSERT_TRUE(cluster_->Run(runs[0].run, true).ok());
  auto events = Poll();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, TaskEvent::Kind::kStarted);
}

// A gang (a group's tasks) starts whole or not at all: when Slurm refuses one member, the
// members already submitted are cancelled before the gate opens, and all fail with the reason.
// Other gangs of the burst start.
TEST_F(ClusterTest, AGangWithAMemberSlurmRefusesStartsNoneOfIt) {
  ResetWithGates();
  state_->refuse.insert("wf/g/b/0");
  Json three_cpus = Pod(1);
  three_cpus["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3";
  std::vector<SlurmCluster::RunRequest> runs = {{{"wf/g/a/0", "gpu0004", Pod(1), 600}},
                                                {{"wf/g/b/0", "gpu0003", Pod(1), 600}},
                                                {{"wf/h/c/0", "gpu0004", three_cpus, 600}}};
  const size_t before = state_->requests.size();
  std::vector<Status> statuses = cluster_->RunAll(runs);
  EXPECT_EQ(statuses[0].code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(statuses[0].message().find("wf/g starts whole or not at all, and member wf/g/b/0"),
            std::string::npos)
      << statuses[0].message();
  EXPECT_FALSE(statuses[1].ok());
  EXPECT_TRUE(statuses[2].ok()) << statuses[2].message();
  EXPECT_EQ(state_->jobs.at(JobOfAnyState("wf/g/a/0"))["job_state"], "CANCELLED");
  EXPECT_EQ(state_->jobs.at(JobOf("wf/h/c/0"))["job_state"], "PENDING");
  // a's job is cancelled before the gate (job 1) opens.
  std::vector<std::string> commands = Commands(before);
  ASSERT_GE(commands.size(), 2u);
  EXPECT_EQ(commands[commands.size() - 2],
            "DELETE /slurm/v0.0.38/job/" + std::to_string(JobOfAnyState("wf/g/a/0")));
  EXPECT_EQ(commands.back(), "DELETE /slurm/v0.0.38/job/1");
  EXPECT_EQ(cluster_->Tracked(), 1u);  // c
}

// A gpupool that stopped between submitting a burst and opening its gate left the burst waiting
// on it, pending (a held gate of an older gpupool, or one Slurm could not start) or running: the
// next one opens it at its first Poll.
class LeftGateTest : public ClusterTest, public ::testing::WithParamInterface<const char*> {};

INSTANTIATE_TEST_SUITE_P(States, LeftGateTest, ::testing::Values("PENDING", "RUNNING"));

TEST_P(LeftGateTest, AGateLeftShutByAnEarlierGpupoolIsOpened) {
  const int64_t gate = state_->AddJob(
      Json{{"name", "gpupool-gate"}, {"comment", "gpupool gate"}, {"job_state", GetParam()}});
  const int64_t foreign = state_->AddJob(
      Json{{"name", "gpupool-gate"}, {"comment", "someone else's gate"}, {"job_state", "PENDING"}});
  // Held for less than stale_gate_after: maybe another replica's burst under way; left alone.
  options_.stale_gate_after = std::chrono::hours(1);
  ResetWithGates();
  size_t before = state_->requests.size();
  EXPECT_TRUE(Poll().empty());
  EXPECT_TRUE(Commands(before).empty());
  EXPECT_EQ(state_->jobs.at(gate)["job_state"], GetParam());

  options_.stale_gate_after = std::chrono::milliseconds(0);
  ResetWithGates();
  before = state_->requests.size();
  EXPECT_TRUE(Poll().empty());
  EXPECT_EQ(Commands(before),
            std::vector<std::string>{"DELETE /slurm/v0.0.38/job/" + std::to_string(gate)});
  EXPECT_EQ(state_->jobs.at(gate)["job_state"], "CANCELLED");
  EXPECT_EQ(state_->jobs.at(foreign)["job_state"], "PENDING");
  EXPECT_TRUE(Poll().empty());  // opened once
  EXPECT_EQ(Commands(before).size(), 1u);
}

}  // namespace cluster_test
}  // namespace gpupool::slurm
