#include "replay/trace.h"

#include <gtest/gtest.h>

namespace gpupool::replay {
namespace trace_test {

TEST(TraceTest, OpenbPodCsv) {
  const std::string csv =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n"
      "p0,12000,16384,1,1000,,LS,Running,10,110,20\n"
      "p1,6000,12288,1,460,V100M16|V100M32,BE,Running,5,50,5\n"
      "p2,88000,327680,8,1000,,Burstable,Succeeded,7,100,\n"
      "p3,4000,8192,0,0,,BE,Pending,30,40,\n";
  Result<Trace> t = ParseTrace(csv, "pods.csv");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->format, "openb");
  ASSERT_EQ(t->jobs.size(), 4u);
  // By submit time.
  EXPECT_EQ(t->jobs[0].name, "p1");
  EXPECT_EQ(t->jobs[0].gpu_milli, 460);
  EXPECT_EQ(t->jobs[0].gpus, 0);
  EXPECT_EQ(t->jobs[0].gpu_products,
            (std::vector<std::string>{"NVIDIA-V100M16", "NVIDIA-V100M32"}));
  EXPECT_EQ(t->jobs[0].labels.at("qos"), "BE");
  EXPECT_EQ(t->jobs[1].name, "p2");
  EXPECT_EQ(t->jobs[1].gpus, 8);
  EXPECT_EQ(t->jobs[1].duration_ms, 93'000);  // never scheduled: its whole life
  EXPECT_EQ(t->jobs[2].name, "p0");
  EXPECT_EQ(t->jobs[2].submit_ms, 10'000);
  EXPECT_EQ(t->jobs[2].duration_ms, 90'000);  // deletion - scheduled
  EXPECT_EQ(t->jobs[2].requests.at("cpu").MilliValue(), 12000);
  EXPECT_EQ(t->jobs[2].requests.at("memory").Value(), int64_t{16384} << 20);
  EXPECT_EQ(t->jobs[3].gpus, 0);
  EXPECT_EQ(t->end_ms, 100'000);  // p0: submitted at 10, runs 90
}

TEST(TraceTest, DlrmCsv) {
  const std::string csv =
      "instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,rdma_request,"
      "rdma_limit,memory_request,memory_limit,disk_request,disk_limit,max_instance_per_node,"
      "creation_time,scheduled_time,deletion_time\n"
      "i0,HN,app_0,12,12,1,1,25,25,120.0,120.0,640.0,800.0,8,,,\n"
      "i1,CN,app_1,64,64,0,0,1,1,320.0,320.0,100.0,100.0,-1,475.5,480,1000\n";
  Result<Trace> t = ParseTrace(csv, "dlrm.csv");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->format, "dlrm");
  ASSERT_EQ(t->jobs.size(), 2u);
  const TraceJob& hn = t->jobs[0];
  EXPECT_EQ(hn.name, "i0");
  EXPECT_EQ(hn.submit_ms, 0);
  EXPECT_FALSE(hn.duration_ms.has_value());
  EXPECT_EQ(hn.queue, "hn");
  EXPECT_EQ(hn.node_pools, "hn");
  EXPECT_EQ(hn.gpus, 1);
  EXPECT_EQ(hn.requests.at("alibaba.com/rdma").Value(), 25);
  EXPECT_EQ(hn.requests.at("ephemeral-storage").Value(), int64_t{640} << 30);
  EXPECT_EQ(hn.labels.at("app"), "app_0");
  const TraceJob& cn = t->jobs[1];
  EXPECT_EQ(cn.submit_ms, 475'500);
  EXPECT_EQ(cn.duration_ms, 520'000);
  EXPECT_EQ(cn.requests.at("cpu").MilliValue(), 64000);
}

TEST(TraceTest, GenericCsvAndJsonl) {
  const std::string csv =
      "name,submit,duration,queue,node_pool,cpu,memory,gpu,gpu_model,pods,gang_min,priority,"
      "queue_timeout,exec_timeout,resource.example.com/nic\n"
      "train,60,3600,rnd-1,a100|default,8,64Gi,2,NVIDIA-A100-SXM4-80GB,4,2,50,600,7200,1\n"
      "\"notebook, small\",0,,,,1,4Gi,0.25,,,,,,,\n";
  Result<Trace> t = ParseTrace(csv, "jobs.csv");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->format, "csv");
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].name, "notebook, small");
  EXPECT_EQ(t->jobs[0].gpu_milli, 250);
  EXPECT_FALSE(t->jobs[0].duration_ms.has_value());
  const TraceJob& train = t->jobs[1];
  EXPECT_EQ(train.submit_ms, 60'000);
  EXPECT_EQ(train.node_pools, "a100,default");
  EXPECT_EQ(train.gpus, 2);
  EXPECT_EQ(train.pods, 4);
  EXPECT_EQ(train.gang_min, 2);
  EXPECT_EQ(train.priority, 50);
  EXPECT_EQ(train.queue_timeout_ms, 600'000);
  EXPECT_EQ(train.exec_timeout_ms, 7'200'000);
  EXPECT_EQ(train.requests.at("example.com/nic").Value(), 1);

  const std::string jsonl =
      "# jobs\n"
      "{\"name\": \"train\", \"submit\": 60, \"duration\": 3600, \"gpu\": 2, \"pods\": 4, "
      "\"node_pool\": [\"a100\", \"default\"], \"resources\": {\"example.com/nic\": 1}, "
      "\"labels\": {\"team\": \"vision\"}}\n"
      "\n"
      "{\"submit\": 0.5, \"gpu\": 0.5, \"cpu\": \"500m\"}\n";
  Result<Trace> j = ParseTrace(jsonl, "jobs.jsonl");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ(j->format, "jsonl");
  ASSERT_EQ(j->jobs.size(), 2u);
  EXPECT_EQ(j->jobs[0].name, "job-4");
  EXPECT_EQ(j->jobs[0].submit_ms, 500);
  EXPECT_EQ(j->jobs[1].node_pools, "a100,default");
  EXPECT_EQ(j->jobs[1].labels.at("team"), "vision");
  EXPECT_EQ(j->jobs[1].requests.at("example.com/nic").Value(), 1);
}

TEST(TraceTest, ErrorsNameFileLineAndColumn) {
  struct Case {
    std::string name;
    std::string text;
    std::string format;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"unknown column", "name,submit,gpus\na,0,1\n", "",
       "t:1: unknown column \"gpus\" (did you mean \"gpu\"?)"},
      {"submit required", "name,gpu\na,1\n", "", "t:1: column submit: required"},
      {"bad number", "name,submit,gpu\na,0,x\n", "",
       "t:2: column gpu: expected a non-negative number, got \"x\""},
      {"bad fraction", "name,submit,gpu\na,0,1.5\n", "",
       "t:2: column gpu: expected a whole number of GPUs (up to 1024) or a fraction below 1, got "
       "\"1.5\""},
      {"bad quantity", "submit,memory\n0,lots\n", "",
       "t:2: column memory: expected a Kubernetes quantity such as 4, 500m or 16Gi, got \"lots\""},
      {"field count", "submit,gpu\n0,1,2\n", "", "t:2: expected 2 fields, got 3"},
      {"duplicate name", "name,submit\na,0\na,1\n", "", "t:3: job name \"a\" is used twice"},
      {"gang_min above pods", "submit,pods,gang_min\n0,2,3\n", "",
       "t:2: gang_min 3 is more than the job's 2 pods"},
      {"open quote", "name,submit\n\"a,0\n", "", "t:2: column 1: quote not closed"},
      {"jsonl unknown key", "{\"submit\": 0, \"gpus\": 1}\n", "",
       "t:1: unknown key \"gpus\" (did you mean \"gpu\"?)"},
      {"jsonl not an object", "[1]\n", "jsonl", "t:1: expected a JSON object, got array"},
      {"unknown format", "x\n", "parquet",
       "unknown trace format \"parquet\"; expected openb, dlrm, csv or jsonl"},
      {"dlrm role",
       "instance_sn,role,app_name,cpu_request,gpu_request,rdma_request,"
       "memory_request,disk_request,creation_time,scheduled_time,deletion_time\n"
       "i,XN,a,1,0,0,1,1,,,\n",
       "", "t:2: column role: expected CN or HN, got \"XN\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<Trace> t = ParseTrace(c.text, "t", c.format);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().message(), c.error);
  }
}

TEST(TraceTest, DataFilesParse) {
  for (const char* file : {"/data/alibaba-gpu-v2023-openb/openb_pod_list_default.csv",
                           "/data/alibaba-gpu-v2025-dlrm/disaggregated_DLRM_trace.csv"}) {
    SCOPED_TRACE(file);
    Result<Trace> t = LoadTrace(std::string(GPUPOOL_SOURCE_DIR) + file);
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->jobs.size(), t->format == "openb" ? 8152u : 23871u);
  }
}

}  // namespace trace_test
}  // namespace gpupool::replay
