#include "replay/protocol.h"

#include <gtest/gtest.h>

#include <set>

#include "scheduler/scenario.h"

namespace gpupool::replay {
namespace protocol_test {

std::vector<model::Node> Nodes(int count, int gpus) {
  std::string yaml;
  for (int i = 0; i < count; ++i) {
    const std::string name = "node-" + std::to_string(i);
    yaml += "apiVersion: v1\nkind: Node\nmetadata: {name: " + name +
            ", labels: {kubernetes.io/hostname: " + name +
            "}}\nstatus: {allocatable: {cpu: \"64\", memory: 256Gi, pods: \"110\", "
            "nvidia.com/gpu: \"" +
            std::to_string(gpus) + "\"}}\n---\n";
  }
  scheduler::Scenario s;
  Status status = scheduler::AddScenarioText(yaml, "nodes.yaml", s);
  EXPECT_TRUE(status.ok()) << status.message();
  return s.snapshot.nodes;
}

Trace MakeTrace(const std::string& csv) {
  Result<Trace> t = ParseTrace(csv, "trace.csv", "csv");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : Trace{};
}

ProtocolOptions Options(std::vector<int> at, double load = 200, int seeds = 3) {
  ProtocolOptions o;
  o.policies = {scheduler::PlacementPolicy::kFgd, scheduler::PlacementPolicy::kGpuPacking,
                scheduler::PlacementPolicy::kBestFit};
  o.load_percent = load;
  o.seeds = seeds;
  o.report_at = std::move(at);
  return o;
}

int64_t Sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

TEST(ProtocolArrivals, EveryTracePodOnceThenDrawsUpToTheLoad) {
  // 4 pods of 1 GPU on 8 GPUs: the trace is 50 %; 150 % is 12 GPUs, so 8 drawn pods.
  const Trace trace = MakeTrace("name,submit,gpu\na,0,1\nb,0,1\nc,0,1\nd,0,1\n");
  const Arrivals arrivals = ProtocolArrivals(trace, 8000, 150, 7);
  ASSERT_EQ(arrivals.pods.size(), 12u);
  ASSERT_EQ(arrivals.gpu_milli.size(), 12u);
  std::set<std::string> first;
  for (int i = 0; i < 4; ++i) first.insert(arrivals.pods[i].name);
  EXPECT_EQ(first, (std::set<std::string>{"a", "b", "c", "d"}));
  for (size_t i = 4; i < arrivals.pods.size(); ++i) {
    EXPECT_NE(arrivals.pods[i].name.find("-tuned-" + std::to_string(i - 4)), std::string::npos)
        << arrivals.pods[i].name;
  }
  EXPECT_EQ(Sum(arrivals.gpu_milli), 12000);
}

TEST(ProtocolArrivals, TheSeedDecidesTheOrderAndTheFileOrderDoesNot) {
  std::string csv = "name,submit,gpu\n", reversed = "name,submit,gpu\n";
  std::vector<std::string> rows;
  for (int i = 0; i < 40; ++i) rows.push_back("p" + std::to_string(i) + ",0,0.5\n");
  for (const std::string& r : rows) csv += r;
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) reversed += *it;
  auto names = [](const Arrivals& a) {
    std::vector<std::string> n;
    for (const auto& p : a.pods) n.push_back(p.name);
    return n;
  };
  const Trace trace = MakeTrace(csv);
  const auto seed1 = names(ProtocolArrivals(trace, 40000, 100, 1));
  EXPECT_EQ(seed1, names(ProtocolArrivals(trace, 40000, 100, 1)));
  EXPECT_EQ(seed1, names(ProtocolArrivals(MakeTrace(reversed), 40000, 100, 1)));
  EXPECT_NE(seed1, names(ProtocolArrivals(trace, 40000, 100, 2)));
}

TEST(ProtocolArrivals, BelowTheTraceNothingIsDrawnAndNothingIsRemoved) {
  const Trace trace = MakeTrace("name,submit,gpu\na,0,1\nb,0,1\nc,0,1\n");
  EXPECT_EQ(ProtocolArrivals(trace, 8000, 10, 1).pods.size(), 3u);
}

// Where every policy fills the cluster exactly: whole-GPU pods on 2 nodes of 4 GPUs.
TEST(RunProtocol, WholeGpuPodsFillTheClusterAndThenFail) {
  const Trace trace = MakeTrace("name,submit,gpu\na,0,1\nb,0,1\nc,0,1\nd,0,1\n");
  // 8 GPUs, load 200 %: 16 arrivals of 1 GPU, 8 placed.
  struct Case {
    int at;
    double allocated;
  } cases[] = {{13, 12.5}, {25, 25}, {50, 50}, {100, 100}, {150, 100}, {200, 100}};
  std::vector<int> at;
  for (const Case& c : cases) at.push_back(c.at);
  Result<ProtocolResult> r = RunProtocol(Nodes(2, 4), trace, Options(at));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->nodes, 2);
  EXPECT_EQ(r->gpu_capacity_milli, 8000);
  EXPECT_DOUBLE_EQ(r->trace_gpu_percent, 50);
  ASSERT_EQ(r->runs.size(), 3u);
  for (const ProtocolRun& run : r->runs) {
    SCOPED_TRACE(run.policy);
    EXPECT_EQ(run.pods_arrived, (std::vector<int64_t>{16, 16, 16}));
    EXPECT_EQ(run.pods_placed, (std::vector<int64_t>{8, 8, 8}));
    ASSERT_EQ(run.points.size(), std::size(cases));
    for (size_t i = 0; i < std::size(cases); ++i) {
      SCOPED_TRACE(cases[i].at);
      EXPECT_EQ(run.points[i].arrived_percent, cases[i].at);
      EXPECT_DOUBLE_EQ(run.points[i].allocated_percent, cases[i].allocated);
      EXPECT_EQ(run.points[i].per_seed.size(), 3u);
      EXPECT_NEAR(run.points[i].unallocated_gpus, 8 * (1 - cases[i].allocated / 100), 1e-9);
    }
    ASSERT_EQ(run.curve.size(), 201u);
    ASSERT_TRUE(run.curve[100].has_value());
    EXPECT_DOUBLE_EQ(*run.curve[100], 100);
    EXPECT_FALSE(run.curve[0].has_value());  // the first arrival is 12.5 %
    EXPECT_FALSE(run.curve[10].has_value());
  }
}

// Fractions: 0.6 and 0.5 GPU pods on one 2-GPU node. The trace's three pods (80 %) fit in any
// order; the drawn ones after them only where the policy left room, never past the devices.
TEST(RunProtocol, FractionsNeverAllocateMoreThanTheDevices) {
  const Trace trace = MakeTrace("name,submit,gpu\na,0,0.6\nb,0,0.5\nc,0,0.5\n");
  Result<ProtocolResult> r = RunProtocol(Nodes(1, 2), trace, Options({80}, 300, 5));
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const ProtocolRun& run : r->runs) {
    SCOPED_TRACE(run.policy);
    EXPECT_DOUBLE_EQ(run.points[0].allocated_percent, 80);
    for (const auto& v : run.curve) {
      if (v) {
        EXPECT_LE(*v, 100);
      }
    }
    for (size_t s = 0; s < run.pods_placed.size(); ++s) {
      EXPECT_GE(run.pods_placed[s], 3);
      EXPECT_LE(run.pods_placed[s], 4);  // four pods of at least 0.5 fill both devices
    }
  }
}

TEST(RunProtocol, BadInputIsAClearError) {
  struct Case {
    std::string name;
    std::string csv;
    std::vector<model::Node> nodes;
    ProtocolOptions options;
    std::string error;
  };
  ProtocolOptions no_policy = Options({100});
  no_policy.policies.clear();
  ProtocolOptions outside = Options({250});
  ProtocolOptions no_seeds = Options({100});
  no_seeds.seeds = 0;
  const Case cases[] = {
      {"gang", "name,submit,gpu,pods\ng,0,1,2\n", Nodes(1, 8), Options({100}),
       "trace.csv:2: job g has 2 pods; the FGD protocol places single pods"},
      {"no gpus", "name,submit,gpu\na,0,1\n", Nodes(1, 0), Options({100}),
       "the FGD protocol needs nodes with GPUs"},
      {"empty", "name,submit,gpu\n", Nodes(1, 8), Options({100}), "trace.csv: no pods to place"},
      {"no policy", "name,submit,gpu\na,0,1\n", Nodes(1, 8), no_policy,
       "--policy: expected at least one policy"},
      {"at past load", "name,submit,gpu\na,0,1\n", Nodes(1, 8), outside,
       "--at: 250 is outside 0 .. the --load percentage"},
      {"no seeds", "name,submit,gpu\na,0,1\n", Nodes(1, 8), no_seeds,
       "--seeds: expected 1 to 1000"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<ProtocolResult> r = RunProtocol(c.nodes, MakeTrace(c.csv), c.options);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(), c.error);
  }
}

TEST(ProtocolOutput, TableAndJsonCarryThePapersFigures) {
  const Trace trace = MakeTrace("name,submit,gpu\na,0,1\nb,0,1\nc,0,1\nd,0,1\n");
  Result<ProtocolResult> r = RunProtocol(Nodes(2, 4), trace, Options({98, 130}, 130, 1));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string table = ProtocolToTable(*r);
  EXPECT_NE(table.find("95.39 %"), std::string::npos) << table;  // FGD at 130 %
  EXPECT_NE(table.find("93.08 %"), std::string::npos) << table;  // BestFit at 130 %
  const nlohmann::ordered_json json = ProtocolToJson(*r);
  EXPECT_EQ(json["protocol"], "fgd");
  EXPECT_EQ(json["runs"].size(), 3u);
  EXPECT_EQ(json["runs"][0]["points"][1]["arrivedPercent"], 130);
  EXPECT_EQ(json["paper"].size(), PaperResults().size());
}

}  // namespace protocol_test
}  // namespace gpupool::replay
