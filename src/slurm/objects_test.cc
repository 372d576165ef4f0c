#include "slurm/objects.h"

#include <gtest/gtest.h>

#include "slurm/test_util.h"

namespace gpupool::slurm {
namespace objects_test {

using Json = nlohmann::ordered_json;
using testing::ReadTestJson;

TEST(ObjectsTest, ParsesCapturedNodes) {
  auto nodes = ParseNodes(ReadTestJson("nodes.json"));
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  ASSERT_EQ(nodes->size(), 4u);
  const SlurmNode& n1 = (*nodes)[0];
  EXPECT_EQ(n1.name, "gpu0001");
  EXPECT_EQ(n1.state, "mixed");
  EXPECT_TRUE(n1.flags.empty());
  EXPECT_EQ(n1.cpus, 64);
  EXPECT_EQ(n1.real_memory_mb, 512000);
  EXPECT_EQ(n1.gres, "gpu:a100:8");
  EXPECT_EQ(n1.gres_used, "gpu:a100:4(IDX:0-3)");
  EXPECT_EQ(n1.alloc_cpus, 6);
  EXPECT_EQ(n1.alloc_memory_mb, 12096);
  EXPECT_EQ(n1.features, (std::vector<std::string>{"ib", "nvlink"}));
  EXPECT_EQ(n1.partitions, (std::vector<std::string>{"gpu"}));
  EXPECT_EQ((*nodes)[1].state, "down");
  EXPECT_EQ((*nodes)[1].reason, "node lost");
  EXPECT_EQ((*nodes)[3].state, "idle");
  EXPECT_EQ((*nodes)[3].flags, (std::vector<std::string>{"DRAIN"}));
  EXPECT_EQ((*nodes)[3].reason, "maintenance window");
}

TEST(ObjectsTest, ParsesCapturedPartitions) {
  auto partitions = ParsePartitions(ReadTestJson("partitions.json"));
  ASSERT_TRUE(partitions.ok()) << partitions.status().message();
  ASSERT_EQ(partitions->size(), 1u);
  EXPECT_EQ((*partitions)[0].name, "gpu");
  EXPECT_EQ((*partitions)[0].state, "UP");
  EXPECT_EQ((*partitions)[0].nodes, "gpu[0001-0004]");
  EXPECT_TRUE((*partitions)[0].is_default);
}

TEST(ObjectsTest, ParsesCapturedJobs) {
  auto jobs = ParseJobs(ReadTestJson("jobs.json"));
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 10u);
  struct Want {
    int64_t id;
    const char* name;
    const char* state;
    int64_t exit_code;
    const char* nodes;
  };
  const Want wants[] = {
      {1, "wf1/g/done/0", "COMPLETED", 0, "gpu0002"},
      {2, "wf1/g/fail/0", "FAILED", 768, "gpu0002"},
      {3, "wf1/g/cancel/0", "CANCELLED", 15, "gpu0002"},
      {4, "wf1/g/timeout/0", "TIMEOUT", 15, "gpu0004"},
      {5, "wf1/g/nodefail/0", "CANCELLED", 0, ""},
      {6, "foreign", "RUNNING", 0, "gpu0001"},
      {7, "wf1/g/pending/0", "CANCELLED", 0, ""},
      {8, "wf1/g/nodefail/1", "NODE_FAIL", 15, "gpu0002"},
      {9, "wf2/g/train/0", "RUNNING", 0, "gpu0001"},
      {10, "wf2/g/big/0", "PENDING", 0, ""},
  };
  for (size_t i = 0; i < std::size(wants); ++i) {
    SCOPED_TRACE(wants[i].name);
    const SlurmJob& job = (*jobs)[i];
    EXPECT_EQ(job.job_id, wants[i].id);
    EXPECT_EQ(job.name, wants[i].name);
    EXPECT_EQ(job.state, wants[i].state);
    EXPECT_EQ(job.exit_code, wants[i].exit_code);
    EXPECT_EQ(job.nodes, wants[i].nodes);
  }
  const SlurmJob& train = (*jobs)[8];
  EXPECT_EQ(train.comment, "gpupool");
  EXPECT_EQ(train.cpus, 2);
  EXPECT_EQ(train.memory_per_node_mb, 4096);
  EXPECT_EQ(train.gres_detail, (std::vector<std::string>{"gpu:a100:1(IDX:3)"}));
  EXPECT_EQ(train.standard_output, "/tmp/slt1/jobs/train.out");
  EXPECT_EQ((*jobs)[9].state_reason, "Resources");
}

TEST(ObjectsTest, TypeErrorsNameTheFieldPath) {
  struct Case {
    const char* what;
    Json response;
    const char* error;
  };
  const Case cases[] = {
      {"nodes not a list", Json{{"nodes", "x"}}, "nodes: expected a list, got \"x\""},
      {"node not an object", Json{{"nodes", {1}}}, "nodes[0]: expected an object, got number"},
      {"cpus as a string", Json{{"nodes", {{{"name", "a"}, {"cpus", "64"}}}}},
       "nodes[0].cpus: expected an integer, got \"64\""},
      {"flags with a number", Json{{"nodes", {{{"name", "a"}, {"state_flags", {"DRAIN", 3}}}}}},
       "nodes[0].state_flags[1]: expected a string, got number"},
      {"node without a name", Json{{"nodes", {{{"cpus", 1}}}}}, "nodes[0].name: missing"},
      {"job id as a string", Json{{"jobs", {{{"job_id", "7"}}}}},
       "jobs[0].job_id: expected an integer, got \"7\""},
      {"job without an id", Json{{"jobs", {{{"name", "x"}}}}}, "jobs[0].job_id: missing"},
      {"partition flags not a list", Json{{"partitions", {{{"name", "p"}, {"flags", "default"}}}}},
       "partitions[0].flags: expected a list of strings, got \"default\""},
      {"response not an object", Json::array(), "response: expected an object"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Status status;
    if (c.response.is_object() && c.response.contains("jobs")) {
      status = ParseJobs(c.response).status();
    } else if (c.response.is_object() && c.response.contains("partitions")) {
      status = ParsePartitions(c.response).status();
    } else {
      status = ParseNodes(c.response).status();
    }
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find(c.error), std::string::npos) << status.message();
  }
}

TEST(ObjectsTest, NullsAndMissingFieldsAreDefaults) {
  auto nodes = ParseNodes(Json{{"nodes", {{{"name", "a"}, {"cpus", nullptr}, {"gres", nullptr}}}}});
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  EXPECT_EQ((*nodes)[0].cpus, 0);
  EXPECT_EQ((*nodes)[0].gres, "");
  auto none = ParseJobs(Json{{"jobs", nullptr}});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(ObjectsTest, SubmissionWritesOnlyWhatIsSet) {
  JobSubmission s;
  s.name = "wf/g/t/0";
  s.comment = "gpupool";
  s.partition = "gpu";
  s.nodelist = "gpu0002";
  s.cpus_per_task = 2;
  s.memory_per_node_mb = 4096;
  s.gpus_per_node = "a100:1";
  s.time_limit_minutes = 11;
  s.working_directory = "/jobs";
  s.standard_output = "/jobs/wf.g.t.0.out";
  s.environment = {{"PATH", "/bin"}, {"FOO", "bar"}};
  s.script = "#!/bin/sh\nexec true\n";
  Json expected = Json::parse(R"({
    "script": "#!/bin/sh\nexec true\n",
    "job": {"name": "wf/g/t/0", "comment": "gpupool", "partition": "gpu", "nodelist": "gpu0002",
            "cpus_per_task": 2, "memory_per_node": 4096, "gpus_per_node": "a100:1",
            "time_limit": 11, "no_requeue": true, "current_working_directory": "/jobs",
            "standard_output": "/jobs/wf.g.t.0.out", "environment": {"FOO": "bar", "PATH": "/bin"}}
  })");
  EXPECT_EQ(SubmissionToJson(s), expected);

  JobSubmission minimal;
  minimal.name = "x";
  Json job = SubmissionToJson(minimal)["job"];
  EXPECT_FALSE(job.contains("time_limit"));
  EXPECT_FALSE(job.contains("gpus_per_node"));
  EXPECT_FALSE(job.contains("memory_per_node"));
  EXPECT_FALSE(job.contains("nodelist"));
  EXPECT_TRUE(job["environment"].is_object());
}

TEST(ObjectsTest, ResponseErrorsAndRelease) {
  EXPECT_EQ(ResponseErrors(ReadTestJson("submit_unknown_key.json")),
            "Unknown key \"tres_per_node\" (hsearch_r); Failure during parsing");
  EXPECT_EQ(ResponseErrors(ReadTestJson("delete_unknown_job.json")),
            "unable to kill JobId=999 with signal 9: Invalid job id specified (slurm_kill_job)");
  EXPECT_EQ(ResponseErrors(ReadTestJson("ping.json")), "");
  EXPECT_EQ(SlurmRelease(ReadTestJson("ping.json")), "22.05.8");
  EXPECT_EQ(SlurmRelease(Json::object()), "");
}

}  // namespace objects_test
}  // namespace gpupool::slurm
