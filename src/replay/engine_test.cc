#include "replay/engine.h"

#include <gtest/gtest.h>

#include "replay/output.h"

namespace gpupool::replay {
namespace engine_test {

// A node of `gpus` GPUs, 32 cpus, 256Gi, in node pool `pool` ("" = default).
std::string NodeYaml(const std::string& name, int gpus, const std::string& pool = "") {
  std::string labels = "{kubernetes.io/hostname: " + name;
  if (!pool.empty()) labels += ", node-pool: " + pool;
  labels += "}";
  return "apiVersion: v1\nkind: Node\nmetadata: {name: " + name + ", labels: " + labels +
         "}\nstatus: {allocatable: {cpu: \"32\", memory: 256Gi, pods: \"110\"" +
         (gpus > 0 ? ", nvidia.com/gpu: \"" + std::to_string(gpus) + "\"" : "") + "}}\n---\n";
}

scheduler::Scenario MakeScenario(const std::string& yaml) {
  scheduler::Scenario s;
  Status status = scheduler::AddScenarioText(yaml, "scenario.yaml", s);
  EXPECT_TRUE(status.ok()) << status.message();
  return s;
}

Trace MakeTrace(const std::string& csv) {
  Result<Trace> t = ParseTrace(csv, "trace.csv", "csv");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : Trace{};
}

PolicyRun MustRun(const scheduler::Scenario& scenario, const Trace& trace,
                  ReplayOptions options = {}) {
  ReplayInput input{&scenario, &trace, &autoscaler::Catalog::Builtin()};
  Result<PolicyRun> run = Run(input, options);
  EXPECT_TRUE(run.ok()) << run.status().message();
  return run.ok() ? std::move(run).value() : PolicyRun{};
}

const JobRecord& Job(const PolicyRun& run, const std::string& name) {
  for (const JobRecord& j : run.jobs) {
    if (j.name == name) return j;
  }
  ADD_FAILURE() << "no job " << name;
  static JobRecord none;
  return none;
}

// What one job should end as.
struct Expect {
  std::string job;
  JobOutcome outcome;
  std::optional<int64_t> start_s;
  std::optional<int64_t> end_s;
  int preemptions = 0;
  int reclaims = 0;
  int interruptions = 0;
};

struct Case {
  std::string name;
  std::string scenario;
  std::string trace;
  ReplayOptions options;
  std::vector<Expect> expect;
};

std::optional<int64_t> Ms(std::optional<int64_t> seconds) {
  if (!seconds) return std::nullopt;
  return *seconds * 1000;
}

ReplayOptions Opt(std::function<void(ReplayOptions&)> f) {
  ReplayOptions o;
  f(o);
  return o;
}

TEST(EngineTest, JobsOverTime) {
  const std::string one_gpu = NodeYaml("n1", 1);
  const std::string queues = R"(apiVersion: gpupool.io/v1
kind: Queue
metadata: {name: a}
spec: {resources: {default: {gpu: {deserved: 1}}}}
---
apiVersion: gpupool.io/v1
kind: Queue
metadata: {name: b}
spec: {resources: {default: {gpu: {deserved: 1}}}}
---
)";
  const std::vector<Case> cases = {
      {"a job waits for the GPU the one before it frees",
       one_gpu,
       "name,submit,duration,gpu\nfirst,0,100,1\nsecond,5,100,1\n",
       {},
       {{"first", JobOutcome::kCompleted, 0, 100}, {"second", JobOutcome::kCompleted, 100, 200}}},
      {"arrivals wait for the next cycle on the period",
       one_gpu,
       "name,submit,duration,gpu\nlate,3,10,1\n",
       Opt([](ReplayOptions& o) { o.cycle_period_ms = 30'000; }),
       {{"late", JobOutcome::kCompleted, 30, 40}}},
      {"a job that never fits times out in the queue",
       one_gpu,
       "name,submit,duration,gpu,queue_timeout\nbig,0,10,2,50\n",
       {},
       {{"big", JobOutcome::kQueueTimeout, std::nullopt, 50}}},
      {"the replay's queue timeout applies to jobs without one",
       one_gpu,
       "name,submit,duration,gpu\nholder,0,1000,1\nwaiter,0,10,1\n",
       Opt([](ReplayOptions& o) { o.queue_timeout_ms = 60'000; }),
       {{"holder", JobOutcome::kCompleted, 0, 1000},
        {"waiter", JobOutcome::kQueueTimeout, std::nullopt, 60}}},
      {"a job running past its exec timeout is stopped",
       one_gpu,
       "name,submit,duration,gpu,exec_timeout\nlong,0,500,1,120\nnext,0,10,1,\n",
       {},
       {{"long", JobOutcome::kExecTimeout, 0, 120}, {"next", JobOutcome::kCompleted, 120, 130}}},
      {"a job without a duration runs to the end",
       one_gpu,
       "name,submit,duration,gpu\nforever,0,,1\nshort,0,50,0.5\n",
       {},
       {{"forever", JobOutcome::kRunning, 0, std::nullopt},
        {"short", JobOutcome::kPending, std::nullopt, std::nullopt}}},
      {"a gang starts only when all its pods fit",
       NodeYaml("n1", 1) + NodeYaml("n2", 1),
       "name,submit,duration,gpu,pods\nsolo,0,100,1,1\ngang,1,50,1,2\n",
       {},
       {{"solo", JobOutcome::kCompleted, 0, 100}, {"gang", JobOutcome::kCompleted, 100, 150}}},
      {"a higher-priority job of the queue preempts, the victim restarts from scratch",
       one_gpu,
       "name,submit,duration,gpu,priority\nlow,0,100,1,10\nhigh,20,50,1,50\n",
       {},
       {{"low", JobOutcome::kCompleted, 0, 170, 1}, {"high", JobOutcome::kCompleted, 20, 70}}},
      {"a queue within its deserved quota reclaims from one above it",
       queues + NodeYaml("n1", 1) + NodeYaml("n2", 1),
       "name,submit,duration,gpu,queue\na1,0,100,1,a\na2,0,100,1,a\nb1,30,10,1,b\n",
       {},
       {{"b1", JobOutcome::kCompleted, 30, 40}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const scheduler::Scenario scenario = MakeScenario(c.scenario);
    const Trace trace = MakeTrace(c.trace);
    const PolicyRun run = MustRun(scenario, trace, c.options);
    for (const Expect& e : c.expect) {
      SCOPED_TRACE(e.job);
      const JobRecord& j = Job(run, e.job);
      EXPECT_EQ(JobOutcomeName(j.outcome), JobOutcomeName(e.outcome));
      EXPECT_EQ(j.start_ms, Ms(e.start_s));
      EXPECT_EQ(j.end_ms, Ms(e.end_s));
      EXPECT_EQ(j.preemptions, e.preemptions);
      EXPECT_EQ(j.interruptions, e.interruptions);
    }
  }
}

TEST(EngineTest, ReclaimIsCountedOnTheVictim) {
  const std::string scenario_yaml = R"(apiVersion: gpupool.io/v1
kind: Queue
metadata: {name: a}
spec: {resources: {default: {gpu: {deserved: 1}}}}
---
apiVersion: gpupool.io/v1
kind: Queue
metadata: {name: b}
spec: {resources: {default: {gpu: {deserved: 1}}}}
---
)" + NodeYaml("n1", 1) + NodeYaml("n2", 1);
  const PolicyRun run =
      MustRun(MakeScenario(scenario_yaml),
              MakeTrace("name,submit,duration,gpu,queue\na1,0,100,1,a\na2,0,100,1,a\n"
                        "b1,30,10,1,b\n"));
  EXPECT_EQ(Job(run, "a1").reclaims + Job(run, "a2").reclaims, 1);
  EXPECT_EQ(run.summary.reclaims, 1);
  EXPECT_EQ(run.summary.preemptions, 0);
}

TEST(EngineTest, SeriesFollowTheCluster) {
  ReplayOptions o;
  o.sample_period_ms = 50'000;
  const PolicyRun run = MustRun(MakeScenario(NodeYaml("n1", 4)),
                                MakeTrace("name,submit,duration,gpu\na,0,100,2\nb,0,200,1\n"), o);
  ASSERT_EQ(run.series.t_ms, (std::vector<int64_t>{0, 50'000, 100'000, 150'000, 200'000}));
  const PoolSeries& pool = run.series.node_pools.at("default");
  // A sample at t shows the cluster after everything that happened at t.
  EXPECT_EQ(pool.allocated_gpus, (std::vector<double>{3, 3, 1, 1, 0}));
  EXPECT_EQ(pool.capacity_gpus, (std::vector<double>{4, 4, 4, 4, 4}));
  EXPECT_EQ(run.series.running_jobs, (std::vector<int>{2, 2, 1, 1, 0}));
  EXPECT_EQ(run.series.queues.at("default").allocated_gpus, pool.allocated_gpus);
  EXPECT_EQ(run.summary.completed, 2);
  EXPECT_EQ(run.summary.end_ms, 200'000);
}

const std::string kMachinePool = R"(apiVersion: gpupool.io/v1
kind: MachinePool
metadata: {name: gpus}
spec:
  instance_type: g5.xlarge
  capacity_type: CAPACITY
  min_replicas: 0
  max_replicas: 2
  taints: []
---
)";

std::string Pool(const std::string& capacity) {
  std::string yaml = kMachinePool;
  yaml.replace(yaml.find("CAPACITY"), 8, capacity);
  return yaml;
}

TEST(EngineTest, MachinePoolScalesUpAfterTheDelayAndDownWhenEmpty) {
  ReplayOptions o;
  o.provision_delay_ms = 60'000;
  o.scale_down_after_ms = 600'000;
  const PolicyRun run = MustRun(MakeScenario(Pool("on_demand")),
                                MakeTrace("name,submit,duration,gpu\njob,0,3600,1\n"), o);
  const JobRecord& job = Job(run, "job");
  // Launched at the first tick (0) and ready 60 s later, at the reconciliation that follows that
  // tick's cycle: the pod lands at the next tick, a period later (as in the server's loop).
  EXPECT_EQ(job.start_ms, 70'000);
  EXPECT_EQ(job.end_ms, 3'670'000);
  ASSERT_FALSE(run.node_events.empty());
  EXPECT_EQ(run.node_events.front().what, "launched (pending pods)");
  EXPECT_EQ(run.node_events.back().what, "removed: empty for 10m");
  // Empty from 3670 s (marked at that tick), removed 600 s later: 4270 s at 1.006 USD/h.
  EXPECT_EQ(run.node_events.back().t_ms, 4'270'000);
  EXPECT_NEAR(run.summary.machine_pool_cost_usd, 1.006 * 4270.0 / 3600.0, 1e-9);
  EXPECT_EQ(run.summary.machine_pool_nodes_peak, 1);
}

TEST(EngineTest, SpotInterruptionEvictsAndReplaces) {
  ReplayOptions o;
  o.interruptions = {{"gpus-1", 600'000}, {"no-such-node", 700'000}};
  const PolicyRun run =
      MustRun(MakeScenario(Pool("spot")), MakeTrace("name,submit,duration,gpu\njob,0,3600,1\n"), o);
  const JobRecord& job = Job(run, "job");
  EXPECT_EQ(job.interruptions, 1);
  EXPECT_EQ(run.summary.interruptions, 1);
  EXPECT_EQ(job.outcome, JobOutcome::kCompleted);
  // The notice at 600 s launches a replacement (ready at 660 s). The deadline's reconciliation
  // (720 s) taints the node NoExecute, the next tick's cycle (730 s) evicts the pod, and the one
  // after (740 s) places it on the replacement, where it runs its whole hour again.
  EXPECT_EQ(job.start_ms, 70'000);
  ASSERT_TRUE(job.end_ms.has_value());
  EXPECT_EQ(*job.end_ms, 740'000 + 3'600'000);
  bool skipped = false;
  for (const NodeEventRecord& e : run.node_events) {
    skipped |= e.node == "no-such-node" && e.what.find("skipped") != std::string::npos;
  }
  EXPECT_TRUE(skipped);
}

TEST(EngineTest, SameInputsAndSeedGiveTheSameResult) {
  ReplayOptions o;
  o.spot_interruptions_per_node_hour = 0.5;
  o.seed = 7;
  const scheduler::Scenario scenario = MakeScenario(Pool("spot") + NodeYaml("n1", 2));
  std::string csv = "name,submit,duration,gpu,pods\n";
  for (int i = 0; i < 40; ++i) {
    csv += "j" + std::to_string(i) + "," + std::to_string(i * 97 % 3000) + "," +
           std::to_string(600 + i * 31 % 2000) + "," + (i % 3 == 0 ? "0.5" : "1") + "," +
           (i % 7 == 0 ? "2" : "1") + "\n";
  }
  const Trace trace = MakeTrace(csv);
  RunInputs inputs;
  inputs.options = o;
  const std::string first = ResultsToJson(inputs, {MustRun(scenario, trace, o)}).dump();
  const std::string second = ResultsToJson(inputs, {MustRun(scenario, trace, o)}).dump();
  EXPECT_EQ(first, second);
  o.seed = 8;
  const std::string other = ResultsToJson(inputs, {MustRun(scenario, trace, o)}).dump();
  EXPECT_NE(first, other) << "the seed should move the interruptions";
}

TEST(EngineTest, CheckInputNamesTheTraceLine) {
  const scheduler::Scenario scenario = MakeScenario(NodeYaml("n1", 1));
  const Trace trace = MakeTrace("name,submit,queue\nx,0,reserch\n");
  ReplayInput input{&scenario, &trace, &autoscaler::Catalog::Builtin()};
  Status s = CheckInput(input);
  EXPECT_EQ(s.message(), "trace.csv:2: job x: queue \"reserch\" is not in the scenario");
}

}  // namespace engine_test
}  // namespace gpupool::replay
