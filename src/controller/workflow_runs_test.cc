#include "controller/workflow_runs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backend/sim/sim_backend.h"
#include "controller/scheduling_loop.h"
#include "controller/testing/cpu_node.h"
#include "service/service.h"

namespace gpupool::controller {
namespace workflow_runs_test {

using Json = nlohmann::ordered_json;
using ::testing::HasSubstr;

store::WorkflowRecord WithTasks(const std::vector<std::string>& statuses, Json doc) {
  store::WorkflowRecord wf;
  wf.spec = Json{{"workflow", std::move(doc)}};
  for (size_t i = 0; i < statuses.size(); ++i) {
    store::TaskRecord task;
    task.name = std::to_string(i);
    task.status = statuses[i];
    task.exit_code = statuses[i] == "RESCHEDULED" ? 1 : 0;
    wf.tasks.push_back(task);
  }
  return wf;
}

std::vector<std::string> Statuses(const store::WorkflowRecord& wf) {
  std::vector<std::string> out;
  for (const auto& task : wf.tasks) out.push_back(task.status);
  return out;
}

TEST(WorkflowRunsTest, WaitingTasksTakeFreedPlacesInOrder) {
  struct Case {
    const char* what;
    Json doc;
    std::vector<std::string> before;
    std::vector<std::string> after;
  };
  const std::vector<Case> cases = {
      {"places free",
       {{"parallelism", 2}},
       {"COMPLETED", "RUNNING", "WAITING", "WAITING"},
       {"COMPLETED", "RUNNING", "PENDING", "WAITING"}},
      {"full",
       {{"parallelism", 2}},
       {"RUNNING", "PENDING", "WAITING"},
       {"RUNNING", "PENDING", "WAITING"}},
      {"a retry holds a place",
       {{"parallelism", 2}},
       {"RESCHEDULED", "PENDING", "RUNNING", "WAITING"},
       {"RESCHEDULED", "PENDING", "RUNNING", "WAITING"}},
      {"scheduled counts",
       {{"parallelism", 1}},
       {"SCHEDULED", "WAITING"},
       {"SCHEDULED", "WAITING"}},
      {"no parallelism lets all in",
       Json::object(),
       {"WAITING", "WAITING"},
       {"PENDING", "PENDING"}},
      {"failed and canceled free places",
       {{"parallelism", 2}},
       {"FAILED", "CANCELED", "WAITING", "WAITING", "WAITING"},
       {"FAILED", "CANCELED", "PENDING", "PENDING", "WAITING"}},
  };
  for (const Case& c : cases) {
    store::WorkflowRecord wf = WithTasks(c.before, c.doc);
    AdmitWaitingTasks(wf, RunLimitsOf(wf), 5'000, nullptr);
    EXPECT_EQ(Statuses(wf), c.after) << c.what;
    for (size_t i = 0; i < wf.tasks.size(); ++i) {
      if (c.before[i] == "WAITING" && c.after[i] == "PENDING") {
        EXPECT_EQ(wf.tasks[i].status_changed_ms, 5'000) << c.what;  // queue time starts now
      }
    }
  }
}

TEST(WorkflowRunsTest, BackoffCountsTheWorkflowsFailedAttempts) {
  struct Case {
    const char* what;
    Json doc;
    std::vector<std::string> tasks;
    bool retry;
    const char* words;
  };
  const std::vector<Case> cases = {
      {"no limit", Json::object(), {"RUNNING"}, false, ""},
      {"limit 0 fails at once",
       {{"backoff_limit", 0}},
       {"RUNNING"},
       false,
       "backoff limit 0 reached (1 failure)"},
      {"first of 2",
       {{"backoff_limit", 2}},
       {"RUNNING"},
       true,
       "retried (failure 1 of backoff limit 2)"},
      {"across tasks",
       {{"backoff_limit", 2}},
       {"RESCHEDULED", "RUNNING", "RUNNING"},
       true,
       "retried (failure 2 of backoff limit 2)"},
      {"third of 2",
       {{"backoff_limit", 2}},
       {"RESCHEDULED", "RESCHEDULED", "RUNNING"},
       false,
       "backoff limit 2 reached (3 failures)"},
  };
  for (const Case& c : cases) {
    store::WorkflowRecord wf = WithTasks(c.tasks, c.doc);
    BackoffDecision decision = DecideBackoff(wf, RunLimitsOf(wf));
    EXPECT_EQ(decision.retry, c.retry) << c.what;
    EXPECT_EQ(decision.words, c.words) << c.what;
  }
}

// A Job applied to the service runs in the scheduling loop on the simulated cluster: at most
// `parallelism` pods at once, failed pods retried up to backoffLimit, then the workflow fails.
class JobRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.clock = &clock_;
    auto store = store::OpenStore(":memory:", options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    service_ = std::make_unique<service::Service>(*store_, clock_);
    ASSERT_TRUE(service_->EnsureBuiltins().ok());
    // Room for four 1-cpu tasks (each also carries the built-in 1-cpu default_ctrl sidecar).
    nodes_ = {testing::CpuNode("n1", "8")};
    ASSERT_TRUE(store_->UpsertNodes({{"n1", nodes_[0]}}, true).ok());
    backend_ = std::make_unique<backend::SimBackend>(nodes_);
    LoopOptions loop_options;
    loop_options.holder = "a";
    loop_options.machine_pools = false;
    loop_ = std::make_unique<SchedulingLoop>(*store_, *backend_, clock_, registry_, loop_options);
  }

  // A Job of `completions` 1-cpu pods running 10 s each with `exit_code`.
  std::string JobText(int completions, int parallelism, int backoff_limit, int exit_code) {
    return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: sweep}\nspec:\n  completions: " +
           std::to_string(completions) + "\n  parallelism: " + std::to_string(parallelism) +
           "\n  backoffLimit: " + std::to_string(backoff_limit) +
           "\n  template:\n    metadata:\n      annotations:\n"
           "        gpupool.io/sim-duration-seconds: \"10\"\n"
           "        gpupool.io/sim-exit-code: \"" +
           std::to_string(exit_code) +
           "\"\n    spec:\n      containers:\n      - name: c\n        image: busybox\n"
           "        resources: {requests: {cpu: 1, memory: 1Gi}}\n";
  }

  Result<service::ApplyResult> Apply(const std::string& text) {
    service::ApplyRequest request;
    request.files.push_back({"job.yaml", text});
    return service_->Apply({"alice", {"osmo-admin"}, "test"}, request);
  }

  store::WorkflowRecord Get(const std::string& id) {
    auto wf = store_->GetWorkflow(id);
    EXPECT_TRUE(wf.ok()) << wf.status().ToString();
    return wf.ok() ? *wf : store::WorkflowRecord{};
  }

  int Count(const store::WorkflowRecord& wf, const std::string& status) {
    int n = 0;
    for (const auto& task : wf.tasks) n += task.status == status ? 1 : 0;
    return n;
  }

  void Step() { ASSERT_TRUE(loop_->Step().ok()); }

  FakeClock clock_;
  metrics::Registry registry_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<service::Service> service_;
  std::vector<Json> nodes_;
  std::unique_ptr<backend::SimBackend> backend_;
  std::unique_ptr<SchedulingLoop> loop_;
};

TEST_F(JobRunTest, ParallelismHoldsPodsBackUntilOthersEnd) {
  auto applied = Apply(JobText(5, 2, 6, 0));
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  ASSERT_EQ(applied->jobs.size(), 1u);
  const service::AppliedJob& job = applied->jobs[0];
  EXPECT_EQ(job.name, "sweep");
  EXPECT_EQ(job.pool, "default");  // the caller's default pool
  EXPECT_EQ(job.task_count, 5);
  EXPECT_FALSE(job.unchanged);
  store::WorkflowRecord wf = Get(job.workflow_id);
  EXPECT_EQ(Count(wf, "PENDING"), 2);
  EXPECT_EQ(Count(wf, "WAITING"), 3);

  int most_active = 0;
  for (int step = 0; step < 40 && Get(job.workflow_id).status != "COMPLETED"; ++step) {
    Step();
    wf = Get(job.workflow_id);
    most_active =
        std::max(most_active, Count(wf, "PENDING") + Count(wf, "SCHEDULED") + Count(wf, "RUNNING"));
    clock_.Advance(5'000);
  }
  EXPECT_EQ(wf.status, "COMPLETED");
  EXPECT_EQ(Count(wf, "COMPLETED"), 5);
  EXPECT_EQ(most_active, 2);  // the node had room for four

  // Applied again: the same workflow, not a second run.
  auto again = Apply(JobText(5, 2, 6, 0));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->jobs[0].unchanged);
  EXPECT_EQ(again->jobs[0].workflow_id, job.workflow_id);
}

TEST_F(JobRunTest, FailedPodsAreRetriedUpToTheBackoffLimit) {
  auto applied = Apply(JobText(1, 1, 2, 3));
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  const std::string id = applied->jobs[0].workflow_id;
  for (int step = 0; step < 40 && Get(id).status.rfind("FAILED", 0) != 0; ++step) {
    Step();
    clock_.Advance(5'000);
  }
  store::WorkflowRecord wf = Get(id);
  EXPECT_EQ(wf.status, "FAILED");
  ASSERT_EQ(wf.tasks.size(), 3u);  // the first attempt and two retries
  EXPECT_EQ(wf.tasks[0].status, "RESCHEDULED");
  EXPECT_THAT(wf.tasks[0].message, HasSubstr("retried (failure 1 of backoff limit 2)"));
  EXPECT_EQ(wf.tasks[1].status, "RESCHEDULED");
  EXPECT_EQ(wf.tasks[2].status, "FAILED");
  EXPECT_EQ(wf.tasks[2].exit_code, 3);
  EXPECT_THAT(wf.tasks[2].message, HasSubstr("backoff limit 2 reached (3 failures)"));
}

TEST_F(JobRunTest, ABadJobWritesNothing) {
  // A Queue and a good Job before a Job the manifest check refuses: nothing is written.
  const std::string text = std::string(
                               "apiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: q}\n"
                               "spec: {resources: {gpu: {quota: 1}}}\n---\n") +
                           JobText(1, 1, 0, 0) + "---\n" +
                           "apiVersion: batch/v1\nkind: Job\nmetadata: {name: bad}\nspec:\n"
                           "  template:\n    spec:\n      volumes: [{name: v}]\n"
                           "      containers: [{name: c, image: x}]\n";
  auto applied = Apply(text);
  ASSERT_FALSE(applied.ok());
  EXPECT_THAT(applied.status().message(),
              HasSubstr("job.yaml:30:7: Job bad: spec.template.spec.volumes: not carried"));
  EXPECT_FALSE(service_->ShowConfig("QUEUE", "q", std::nullopt).ok());
  store::WorkflowFilter all;
  auto workflows = store_->ListWorkflows(all);
  ASSERT_TRUE(workflows.ok());
  EXPECT_TRUE(workflows->empty());
}

TEST_F(JobRunTest, APipelineRefusalStopsEveryJob) {
  // The second Job names a pool that does not exist: the first is not submitted either.
  const std::string text = JobText(1, 1, 0, 0) + "---\n" +
                           "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: other\n"
                           "  labels: {gpupool.io/pool: nowhere}\nspec:\n  template:\n"
                           "    spec:\n      containers: [{name: c, image: x}]\n";
  auto applied = Apply(text);
  ASSERT_FALSE(applied.ok());
  EXPECT_THAT(applied.status().message(), HasSubstr("Job other: "));
  EXPECT_THAT(applied.status().message(), HasSubstr("nowhere"));
  store::WorkflowFilter all;
  auto workflows = store_->ListWorkflows(all);
  ASSERT_TRUE(workflows.ok());
  EXPECT_TRUE(workflows->empty());
}

}  // namespace workflow_runs_test
}  // namespace gpupool::controller
