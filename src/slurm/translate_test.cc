#include "slurm/translate.h"

#include <gtest/gtest.h>

#include "model/k8s.h"
#include "slurm/test_util.h"

namespace gpupool::slurm {
namespace translate_test {

using Json = nlohmann::ordered_json;
using testing::ReadTestJson;

std::vector<SlurmNode> CapturedNodes(const char* file = "nodes.json") {
  auto nodes = ParseNodes(ReadTestJson(file));
  EXPECT_TRUE(nodes.ok()) << nodes.status().message();
  return nodes.ok() ? *nodes : std::vector<SlurmNode>{};
}

std::vector<SlurmJob> CapturedJobs() {
  auto jobs = ParseJobs(ReadTestJson("jobs.json"));
  EXPECT_TRUE(jobs.ok()) << jobs.status().message();
  return jobs.ok() ? *jobs : std::vector<SlurmJob>{};
}

TEST(TranslateTest, ParseGpuGres) {
  struct Case {
    const char* gres;
    int64_t count;
    std::string single_type;
    size_t types;
  };
  const Case cases[] = {
      {"gpu:a100:8(S:0-1)", 8, "a100", 1},
      {"gpu:a100:8", 8, "a100", 1},
      {"gpu:8", 8, "", 0},
      {"gpu", 1, "", 0},
      {"gpu:a100:4,gpu:v100:4", 8, "", 2},
      {"gpu:a100:3(IDX:0-2)", 3, "a100", 1},
      {"gpu:a100:0(IDX:N/A)", 0, "", 0},
      {"gpu:h100:4(S:0),mps:400(S:0)", 4, "h100", 1},
      {"mps:400", 0, "", 0},
      {"gpu:2k", 2048, "", 0},
      {"(null)", 0, "", 0},
      {"", 0, "", 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.gres);
    auto gres = ParseGpuGres(c.gres);
    ASSERT_TRUE(gres.ok()) << gres.status().message();
    EXPECT_EQ(gres->count, c.count);
    EXPECT_EQ(gres->SingleType(), c.single_type);
    EXPECT_EQ(gres->types.size(), c.types);
  }
  auto bad = ParseGpuGres("gpu:a100:many");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("bad count \"many\""), std::string::npos);
}

TEST(TranslateTest, UnavailableState) {
  struct Case {
    const char* state;
    std::vector<std::string> flags;
    std::vector<std::string> partitions;
    const char* want;
  };
  const Case cases[] = {
      {"idle", {}, {"gpu"}, ""},
      {"mixed", {}, {"gpu"}, ""},
      {"allocated", {}, {"gpu"}, ""},
      {"down", {}, {"gpu"}, "down"},
      {"idle", {"DRAIN"}, {"gpu"}, "drain"},
      {"mixed", {"DRAIN"}, {"gpu"}, "drain"},
      {"mixed", {"MAINTENANCE", "RESERVED"}, {"gpu"}, "maint"},
      {"idle", {"RESERVED"}, {"gpu"}, "reserved"},
      {"idle", {"NOT_RESPONDING"}, {"gpu"}, "not-responding"},
      {"idle", {"POWERED_DOWN"}, {"gpu"}, "powered-down"},
      {"idle", {"FAIL"}, {"gpu"}, "fail"},
      {"future", {}, {"gpu"}, "future"},
      {"unknown", {}, {"gpu"}, "unknown"},
      {"idle", {"COMPLETING"}, {"gpu"}, ""},
      {"idle", {}, {"closed"}, "partition-closed"},
      {"idle", {}, {"closed", "gpu"}, ""},
  };
  NodeOptions options;
  options.closed_partitions = {"closed"};
  for (const Case& c : cases) {
    SlurmNode node;
    node.state = c.state;
    node.flags = c.flags;
    node.partitions = c.partitions;
    SCOPED_TRACE(std::string(c.state) + " " + (c.flags.empty() ? "" : c.flags[0]));
    EXPECT_EQ(UnavailableState(node, options), c.want);
  }
}

int64_t Amount(const model::ResourceList& list, const char* name) {
  auto it = list.find(name);
  return it == list.end() ? -1 : it->second.Value();
}

TEST(TranslateTest, CapturedNodesAsKubernetesNodes) {
  std::vector<SlurmNode> nodes = CapturedNodes();
  ASSERT_EQ(nodes.size(), 4u);
  // gpupool's running job wf2/g/train/0 holds 2 CPUs, 4096 MiB and 1 GPU on gpu0001; the
  // foreign job 6 holds the rest of the node's allocation (4 CPUs, 8000 MiB, 3 GPUs).
  NodeUsage own;
  for (const SlurmJob& job : CapturedJobs()) {
    if (job.comment == "gpupool" && job.state == "RUNNING") own.Add(JobUsage(job));
  }
  EXPECT_EQ(own.cpus, 2);
  EXPECT_EQ(own.memory_mb, 4096);
  EXPECT_EQ(own.gpus, 1);

  struct Want {
    const char* name;
    NodeUsage own;
    bool unschedulable;
    const char* taint_value;
    const char* reason;
    int64_t cpu, memory_mi, gpu;
    const char* foreign;
  };
  const Want wants[] = {
      {"gpu0001", own, false, "", "", 60, 504000, 5, "cpu=4,memory=8000Mi,gpu=3"},
      {"gpu0002", {}, true, "down", "node lost", 64, 512000, 8, ""},
      {"gpu0003", {}, true, "down", "fan failure", 64, 512000, 8, ""},
      {"gpu0004", {}, true, "drain", "maintenance window", 64, 512000, 8, ""},
  };
  NodeOptions options;
  options.gpu_products = {{"a100", "NVIDIA-A100-SXM4-80GB"}};
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Want& want = wants[i];
    SCOPED_TRACE(want.name);
    auto json = NodeFromSlurm(nodes[i], want.own, options);
    ASSERT_TRUE(json.ok()) << json.status().message();
    auto node = model::NodeFromJson(*json);
    ASSERT_TRUE(node.ok()) << node.status().message();
    EXPECT_EQ(node->name, want.name);
    EXPECT_EQ(node->labels.at("kubernetes.io/hostname"), want.name);
    EXPECT_EQ(node->labels.at("gpupool.io/source"), "slurm");
    EXPECT_EQ(node->labels.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-80GB");
    EXPECT_EQ(node->labels.at("nvidia.com/gpu.count"), "8");
    EXPECT_EQ(node->labels.at("feature.slurm.gpupool.io/ib"), "true");
    EXPECT_EQ(node->labels.at("feature.slurm.gpupool.io/nvlink"), "true");
    EXPECT_EQ(node->labels.at("partition.slurm.gpupool.io/gpu"), "true");
    EXPECT_EQ(Amount(node->capacity, "cpu"), 64);
    EXPECT_EQ(Amount(node->capacity, "memory"), 512000LL << 20);
    EXPECT_EQ(Amount(node->capacity, "nvidia.com/gpu"), 8);
    EXPECT_EQ(Amount(node->capacity, "pods"), 64);
    EXPECT_EQ(Amount(node->capacity, "ephemeral-storage"), -1);  // TmpDisk=0 in the capture
    EXPECT_EQ(Amount(node->allocatable, "cpu"), want.cpu);
    EXPECT_EQ(Amount(node->allocatable, "memory"), want.memory_mi << 20);
    EXPECT_EQ(Amount(node->allocatable, "nvidia.com/gpu"), want.gpu);
    auto foreign = node->annotations.find("slurm.gpupool.io/foreign-usage");
    EXPECT_EQ(foreign == node->annotations.end() ? "" : foreign->second, want.foreign);
    EXPECT_EQ(node->unschedulable, want.unschedulable);
    const Json& condition = (*json)["status"]["conditions"][0];
    EXPECT_EQ(condition["type"], "Ready");
    if (want.unschedulable) {
      ASSERT_EQ(node->taints.size(), 1u);
      EXPECT_EQ(node->taints[0].key, "slurm.gpupool.io/unavailable");
      EXPECT_EQ(node->taints[0].value, want.taint_value);
      EXPECT_EQ(node->taints[0].effect, model::TaintEffect::kNoSchedule);
      EXPECT_EQ(condition["status"], "False");
      EXPECT_NE(condition["message"].get<std::string>().find(want.reason), std::string::npos);
      EXPECT_EQ(node->annotations.at("slurm.gpupool.io/reason"), want.reason);
    } else {
      EXPECT_TRUE(node->taints.empty());
      EXPECT_EQ(condition["status"], "True");
    }
  }
}

TEST(TranslateTest, MaintenanceReservationMakesTheNodeUnschedulable) {
  std::vector<SlurmNode> nodes = CapturedNodes("nodes_maint.json");
  ASSERT_FALSE(nodes.empty());
  ASSERT_EQ(nodes[0].name, "gpu0001");
  auto json = NodeFromSlurm(nodes[0], {}, {});
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ((*json)["spec"]["unschedulable"], true);
  EXPECT_EQ((*json)["spec"]["taints"][0]["value"], "maint");
  EXPECT_EQ((*json)["metadata"]["labels"]["nvidia.com/gpu.product"], "a100");  // no mapping
  // Only the foreign job ran then: all of the allocation is someone else's.
  EXPECT_EQ((*json)["metadata"]["annotations"]["slurm.gpupool.io/foreign-usage"],
            "cpu=4,memory=8000Mi,gpu=3");
}

TEST(TranslateTest, LabelNamesAreSanitised) {
  SlurmNode node;
  node.name = "n1";
  node.state = "idle";
  node.cpus = 4;
  node.real_memory_mb = 1024;
  node.temporary_disk_mb = 2048;
  node.features = {"cpu=epyc", "-edge-", std::string(70, 'x')};
  node.partitions = {"batch"};
  auto json = NodeFromSlurm(node, {}, {});
  ASSERT_TRUE(json.ok()) << json.status().message();
  const Json& labels = (*json)["metadata"]["labels"];
  EXPECT_TRUE(labels.contains("feature.slurm.gpupool.io/cpu-epyc"));
  EXPECT_TRUE(labels.contains("feature.slurm.gpupool.io/edge"));
  EXPECT_TRUE(labels.contains("feature.slurm.gpupool.io/" + std::string(63, 'x')));
  EXPECT_FALSE(labels.contains("nvidia.com/gpu.product"));
  EXPECT_FALSE((*json)["status"]["capacity"].contains("nvidia.com/gpu"));
  EXPECT_EQ((*json)["status"]["capacity"]["ephemeral-storage"], "2Gi");
}

Json TaskPod(Json container) {
  Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}}}};
  pod["spec"]["containers"] = Json::array({std::move(container)});
  return pod;
}

TEST(TranslateTest, SubmissionForTask) {
  std::vector<SlurmNode> nodes = CapturedNodes();
  auto partitions = ParsePartitions(ReadTestJson("partitions.json"));
  ASSERT_TRUE(partitions.ok());
  SubmitOptions options;
  options.output_dir = "/var/gpupool/out/";
  options.comment = "gpupool";
  TaskRun task;
  task.key = "train-1/g/worker/0";
  task.node = "gpu0001";
  task.exec_timeout_seconds = 3600;
  task.pod = TaskPod(Json::parse(R"({
    "name": "worker", "image": "ubuntu:24.04",
    "command": ["bash", "-c"], "args": ["echo $SLURMD_NODENAME it's > out"],
    "env": [{"name": "FOO", "value": "bar"}, {"name": "EMPTY"}],
    "resources": {"requests": {"cpu": "1500m", "memory": "3Gi", "nvidia.com/gpu": 2,
                               "ephemeral-storage": "10Gi"},
                  "limits": {"cpu": "1500m", "memory": "3Gi", "nvidia.com/gpu": 2}}})"));
  auto s = SubmissionForTask(task, nodes[0], *partitions, options);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->name, "train-1/g/worker/0");
  EXPECT_EQ(s->comment, "gpupool");
  EXPECT_EQ(s->nodelist, "gpu0001");
  EXPECT_EQ(s->partition, "gpu");  // the default partition, which holds the node
  EXPECT_EQ(s->cpus_per_task, 2);  // 1.5 rounded up
  EXPECT_EQ(s->memory_per_node_mb, 3072);
  EXPECT_EQ(s->temporary_disk_per_node_mb, 10240);
  EXPECT_EQ(s->gpus_per_node, "a100:2");
  EXPECT_EQ(s->time_limit_minutes, 61);
  EXPECT_EQ(s->working_directory, "/var/gpupool/out/");
  EXPECT_EQ(s->standard_output, "/var/gpupool/out/train-1.g.worker.0.out");
  EXPECT_EQ(s->environment.at("FOO"), "bar");
  EXPECT_EQ(s->environment.at("EMPTY"), "");
  EXPECT_EQ(s->environment.at("GPUPOOL_TASK_KEY"), "train-1/g/worker/0");
  EXPECT_NE(s->environment.at("PATH").find("/usr/bin"), std::string::npos);
  EXPECT_EQ(s->script, "#!/bin/sh\nexec bash -c 'echo $SLURMD_NODENAME it'\\''s > out'\n");
}

TEST(TranslateTest, SubmissionDefaultsAndRefusals) {
  std::vector<SlurmNode> nodes = CapturedNodes();
  SubmitOptions options;
  options.output_dir = "/out";
  options.partition = "batch";  // forced
  struct Case {
    const char* what;
    Json container;
    const char* error;  // "" = accepted
  };
  const Case cases[] = {
      {"no resources", Json::parse(R"({"name": "c", "command": ["true"]})"), ""},
      {"no command", Json::parse(R"({"name": "c", "image": "busybox"})"),
       "no command or args (Slurm runs no container image"},
      {"env from a field", Json::parse(R"({"name": "c", "command": ["true"],
        "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]})"),
       "spec.containers[0].env[0] (POD): valueFrom cannot be resolved on Slurm"},
      {"command not strings", Json::parse(R"({"name": "c", "command": ["true", 3]})"),
       "spec.containers[0].command[1]: expected a string"},
      {"bad quantity", Json::parse(R"({"name": "c", "command": ["true"],
        "resources": {"requests": {"cpu": "lots"}}})"),
       "cpu"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    TaskRun task{"wf/g/t/0", "gpu0002", TaskPod(c.container), std::nullopt};
    auto s = SubmissionForTask(task, nodes[1], {}, options);
    if (std::string(c.error).empty()) {
      ASSERT_TRUE(s.ok()) << s.status().message();
      EXPECT_EQ(s->partition, "batch");
      EXPECT_EQ(s->cpus_per_task, 1);
      EXPECT_EQ(s->memory_per_node_mb, 0);
      EXPECT_EQ(s->gpus_per_node, "");
      EXPECT_FALSE(s->time_limit_minutes.has_value());
      EXPECT_EQ(s->script, "#!/bin/sh\nexec true\n");
    } else {
      EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(s.status().message().find(c.error), std::string::npos) << s.status().message();
      EXPECT_NE(s.status().message().find("task wf/g/t/0"), std::string::npos);
    }
  }
}

TEST(TranslateTest, UntypedGpusAreRequestedWithoutAType) {
  SlurmNode node;
  node.name = "n1";
  node.gres = "gpu:4";
  node.partitions = {"p1", "p2"};
  TaskRun task{"wf/g/t/0", "n1", TaskPod(Json::parse(R"({"command": ["nvidia-smi"],
      "resources": {"limits": {"nvidia.com/gpu": 1}}})")),
               30};
  auto s = SubmissionForTask(task, node, {}, {"", "/out", "gpupool"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->gpus_per_node, "1");
  EXPECT_EQ(s->partition, "p1");  // no default partition among the node's: its first
  EXPECT_EQ(s->time_limit_minutes, 2);
}

TEST(TranslateTest, DecodeWaitStatus) {
  struct Case {
    int64_t status;
    int exit_code;
  };
  const Case cases[] = {{0, 0}, {768, 3}, {256, 1}, {15, 143}, {9, 137}, {0x8b, 139}, {-1, 1}};
  for (const Case& c : cases) EXPECT_EQ(DecodeWaitStatus(c.status), c.exit_code) << c.status;
}

TEST(TranslateTest, CapturedJobOutcomes) {
  struct Want {
    const char* name;
    JobPhase phase;
    int exit_code;
    bool lost;
    const char* reason;
  };
  const Want wants[] = {
      {"wf1/g/done/0", JobPhase::kEnded, 0, false, ""},
      {"wf1/g/fail/0", JobPhase::kEnded, 3, false, "FAILED (NonZeroExitCode)"},
      {"wf1/g/cancel/0", JobPhase::kEnded, 143, false, "CANCELLED: the job was cancelled"},
      {"wf1/g/timeout/0", JobPhase::kEnded, 143, false, "TIMEOUT: the job ran past"},
      {"wf1/g/nodefail/0", JobPhase::kEnded, 143, false, "CANCELLED"},  // cancelled while pending
      {"foreign", JobPhase::kRunning, 0, false, ""},
      {"wf1/g/pending/0", JobPhase::kEnded, 143, false, "(ReqNodeNotAvail)"},
      {"wf1/g/nodefail/1", JobPhase::kEnded, 143, true, "NODE_FAIL: the job's node failed"},
      {"wf2/g/train/0", JobPhase::kRunning, 0, false, ""},
      {"wf2/g/big/0", JobPhase::kPending, 0, false, ""},
  };
  std::vector<SlurmJob> jobs = CapturedJobs();
  ASSERT_EQ(jobs.size(), std::size(wants));
  for (size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE(wants[i].name);
    JobOutcome outcome = OutcomeOf(jobs[i]);
    EXPECT_EQ(outcome.phase, wants[i].phase);
    EXPECT_EQ(outcome.exit_code, wants[i].exit_code);
    EXPECT_EQ(outcome.lost, wants[i].lost);
    EXPECT_NE(outcome.reason.find(wants[i].reason), std::string::npos) << outcome.reason;
  }
}

// States the test cluster cannot produce (no preemption, no memory enforcement, no power
// saving): the captured completed job with its state and wait status replaced.
TEST(TranslateTest, OtherJobStates) {
  struct Case {
    const char* state;
    int64_t wait_status;
    JobPhase phase;
    int exit_code;
    bool lost;
  };
  const Case cases[] = {
      {"PREEMPTED", 15, JobPhase::kEnded, 143, true},
      {"OUT_OF_MEMORY", 0, JobPhase::kEnded, 137, false},
      {"OUT_OF_MEMORY", 9, JobPhase::kEnded, 137, false},
      {"BOOT_FAIL", 0, JobPhase::kEnded, 1, true},
      {"DEADLINE", 0, JobPhase::kEnded, 143, false},
      {"FAILED", 0, JobPhase::kEnded, 1, false},
      {"FAILED", 2 << 8, JobPhase::kEnded, 2, false},
      {"COMPLETED", 0, JobPhase::kEnded, 0, false},
      {"CONFIGURING", 0, JobPhase::kPending, 0, false},
      {"REQUEUED", 0, JobPhase::kPending, 0, false},
      {"COMPLETING", 0, JobPhase::kRunning, 0, false},
      {"SUSPENDED", 0, JobPhase::kRunning, 0, false},
      {"SOMETHING_NEW", 0, JobPhase::kPending, 0, false},
  };
  SlurmJob job = CapturedJobs().front();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.state);
    job.state = c.state;
    job.exit_code = c.wait_status;
    JobOutcome outcome = OutcomeOf(job);
    EXPECT_EQ(outcome.phase, c.phase);
    EXPECT_EQ(outcome.exit_code, c.exit_code);
    EXPECT_EQ(outcome.lost, c.lost);
    if (std::string(c.state) == "SOMETHING_NEW") {
      EXPECT_EQ(outcome.reason, "unknown Slurm job state SOMETHING_NEW");
    }
  }
}

JobSubmission Element(std::string key, std::string node, int64_t cpus = 1,
                      std::string gpus = "a100:1") {
  JobSubmission s;
  s.name = std::move(key);
  s.comment = "gpupool";
  s.partition = "gpu";
  s.nodelist = std::move(node);
  s.cpus_per_task = cpus;
  s.memory_per_node_mb = 4096;
  s.gpus_per_node = std::move(gpus);
  s.time_limit_minutes = 11;
  s.working_directory = "/jobs";
  s.standard_output = OutputPath("/jobs", s.name);
  s.environment = {{"PATH", "/bin"}, {"GPUPOOL_TASK_KEY", s.name}};
  s.script = "#!/bin/sh\nexec sleep 1\n";
  return s;
}

TEST(TranslateTest, GroupForArrays) {
  auto with = [](JobSubmission s, auto change) {
    change(s);
    return s;
  };
  const std::string long_key(300, 'k');
  struct Case {
    const char* name;
    std::vector<JobSubmission> submissions;
    std::vector<std::vector<size_t>> groups;
  };
  const std::vector<Case> cases = {
      {"one task: a single job", {Element("w/g/a/0", "n1")}, {{0}}},
      {"same node and request: one array, in order",
       {Element("w/g/a/0", "n1"), Element("w/g/b/0", "n1"), Element("w/g/c/0", "n1")},
       {{0, 1, 2}}},
      {"per node, interleaved",
       {Element("w/g/a/0", "n1"), Element("w/g/b/0", "n2"), Element("w/g/c/0", "n1"),
        Element("w/g/d/0", "n2")},
       {{0, 2}, {1, 3}}},
      {"cpus differ", {Element("w/g/a/0", "n1", 1), Element("w/g/b/0", "n1", 2)}, {{0}, {1}}},
      {"GPUs differ",
       {Element("w/g/a/0", "n1", 1, "a100:1"), Element("w/g/b/0", "n1", 1, "a100:2"),
        Element("w/g/c/0", "n1", 1, "")},
       {{0}, {1}, {2}}},
      {"memory, tmp disk, time limit, partition differ",
       {Element("w/g/a/0", "n1"),
        with(Element("w/g/b/0", "n1"), [](auto& s) { s.memory_per_node_mb = 1; }),
        with(Element("w/g/c/0", "n1"), [](auto& s) { s.temporary_disk_per_node_mb = 5; }),
        with(Element("w/g/d/0", "n1"), [](auto& s) { s.time_limit_minutes.reset(); }),
        with(Element("w/g/e/0", "n1"), [](auto& s) { s.partition = "debug"; })},
       {{0}, {1}, {2}, {3}, {4}}},
      {"an env name no shell can export stays a single job",
       {Element("w/g/a/0", "n1"),
        with(Element("w/g/b/0", "n1"), [](auto& s) { s.environment["my.var"] = "x"; }),
        Element("w/g/c/0", "n1")},
       {{0, 2}, {1}}},
      {"a key with a space stays a single job",
       {Element("w/g/a/0", "n1"), Element("w/g/b c/0", "n1")},
       {{0}, {1}}},
      {"the comment's 1,024 characters split the array",
       {Element(long_key + "1", "n1"), Element(long_key + "2", "n1"), Element(long_key + "3", "n1"),
        Element(long_key + "4", "n1")},
       {{0, 1, 2}, {3}}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(GroupForArrays(c.submissions), c.groups) << c.name;
  }
}

TEST(TranslateTest, ArraySubmissionDispatchesEachElementToItsTask) {
  JobSubmission a = Element("w/g/a/0", "n1");
  a.environment["MODE"] = "it's";
  JobSubmission b = Element("w/g/b/1", "n1");
  b.script = "#!/bin/sh\nexec python3 -c 'print(1)'\n";
  JobSubmission s = ArraySubmission({&a, &b});
  EXPECT_EQ(s.array, "0-1");
  EXPECT_EQ(s.name, "w/g/a/0 +1");
  EXPECT_EQ(s.comment, "gpupool array:w/g/a/0 w/g/b/1");
  EXPECT_EQ(s.nodelist, "n1");
  EXPECT_EQ(s.gpus_per_node, "a100:1");
  EXPECT_EQ(s.cpus_per_task, 1);
  EXPECT_EQ(s.time_limit_minutes, 11);
  EXPECT_EQ(s.standard_output, "/jobs/gpupool-array.%A_%a.out");
  EXPECT_EQ(s.environment.size(), 1u);
  EXPECT_EQ(s.script,
            "#!/bin/sh\n"
            "# gpupool: one task per array element, chosen by $SLURM_ARRAY_TASK_ID\n"
            "case \"$SLURM_ARRAY_TASK_ID\" in\n"
            "0)\n"
            "  exec >/jobs/w.g.a.0.out 2>&1\n"
            "  export GPUPOOL_TASK_KEY=w/g/a/0\n"
            "  export MODE='it'\\''s'\n"
            "  export PATH=/bin\n"
            "  exec sleep 1\n"
            "  ;;\n"
            "1)\n"
            "  exec >/jobs/w.g.b.1.out 2>&1\n"
            "  export GPUPOOL_TASK_KEY=w/g/b/1\n"
            "  export PATH=/bin\n"
            "  exec python3 -c 'print(1)'\n"
            "  ;;\n"
            "esac\n"
            "echo \"gpupool: no task for array element $SLURM_ARRAY_TASK_ID\" >&2\n"
            "exit 1\n");
  EXPECT_EQ(SubmissionToJson(s)["job"]["array"], "0-1");
}

TEST(TranslateTest, ArrayKeys) {
  struct Case {
    const char* job_comment;
    std::optional<std::vector<std::string>> keys;
  };
  const Case cases[] = {
      {"gpupool array:w/g/a/0 w/g/b/0", std::vector<std::string>{"w/g/a/0", "w/g/b/0"}},
      {"gpupool array:w/g/a/0", std::vector<std::string>{"w/g/a/0"}},
      {"gpupool", std::nullopt},
      {"gpupool-other array:w/g/a/0", std::nullopt},
      {"someone array:w/g/a/0", std::nullopt},
      {"", std::nullopt},
  };
  for (const Case& c : cases)
    EXPECT_EQ(ArrayKeys(c.job_comment, "gpupool"), c.keys) << c.job_comment;
}

TEST(TranslateTest, ParseArrayIndexes) {
  struct Case {
    const char* text;
    std::vector<int64_t> indexes;
  };
  const Case cases[] = {
      {"", {}},
      {"3", {3}},
      {"0-3", {0, 1, 2, 3}},
      {"1-2,5", {1, 2, 5}},
      {"0-7%2", {0, 1, 2, 3, 4, 5, 6, 7}},
      {"0-6:3", {0, 3, 6}},
  };
  for (const Case& c : cases) {
    auto indexes = ParseArrayIndexes(c.text);
    ASSERT_TRUE(indexes.ok()) << c.text << indexes.status().message();
    EXPECT_EQ(*indexes, c.indexes) << c.text;
  }
  for (const char* bad : {"x", "1-", "-3", "1-y"}) {
    EXPECT_FALSE(ParseArrayIndexes(bad).ok()) << bad;
  }
}

TEST(TranslateTest, ParsedArrayElements) {
  Json response = Json::parse(R"({"jobs": [
      {"job_id": 101, "array_job_id": 100, "array_task_id": 1, "array_task_string": ""},
      {"job_id": 100, "array_job_id": 100, "array_task_id": null, "array_task_string": "2-3"},
      {"job_id": 7, "array_job_id": 0, "array_task_id": null}]})");
  auto jobs = ParseJobs(response);
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  EXPECT_EQ((*jobs)[0].array_job_id, 100);
  EXPECT_EQ((*jobs)[0].array_task_id, 1);
  EXPECT_FALSE((*jobs)[1].array_task_id.has_value());
  EXPECT_EQ((*jobs)[1].array_task_string, "2-3");
  EXPECT_EQ((*jobs)[2].array_job_id, 0);
}

}  // namespace translate_test
}  // namespace gpupool::slurm
