// The Kubernetes backend at scale (tests/kube/scale_scenario.h): 1,000 nodes and 10,000 pods
// handed to gpupool through the fake API server, every one bound once, checked pod by pod. The
// figures are printed, never asserted (bench/kube_schedule_bench.cc measures them at 5,000 nodes).

#include <gtest/gtest.h>

#include <cstdio>

#include "scale_scenario.h"

namespace gpupool::kube_e2e {
namespace kube_scale_e2e_test {

TEST(KubernetesScaleTest, TenThousandPodsOnAThousandNodesAreBoundOnceWithinEveryNodesLimits) {
  ScaleOptions options;
  options.nodes = 1000;
  options.pods = 10000;
  options.bound = std::chrono::seconds(180);
  // No client-side rate limit: the test is about what is bound, not about pacing.
  options.serve_flags = {"--kube-qps", "-1"};
  auto report = RunScaleScenario(options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  std::printf("%d pods bound on %d nodes in %.1f s; creation -> binding p50 %.0f ms, p99 %.0f ms\n",
              report->bound, report->nodes, report->seconds, report->p50_ms, report->p99_ms);
  EXPECT_EQ(report->bound, options.pods) << report->serve_log;
  EXPECT_EQ(report->bindings_asked, report->bound) << "a pod was bound twice, or a binding refused";
  for (const std::string& violation : report->violations) ADD_FAILURE() << violation;
}

// Two servers on one store; the leader is killed (SIGKILL) with a third of the pods bound. The
// other takes the lease over and binds the rest from the cluster's state: every pod bound, no
// node over-committed. A binding the dead leader had asked for may be asked again and refused
// (409): that is counted, never a pod bound twice (the API server binds a pod once).
TEST(KubernetesScaleTest, KillingTheLeaderMidStreamLosesNoPodAndOverCommitsNoNode) {
  ScaleOptions options;
  options.nodes = 200;
  options.pods = 2000;  // ten per node, as above: they all fit
  options.bound = std::chrono::seconds(120);
  options.rate = 1000;  // a stream, so that the kill lands in its middle
  options.failover = true;
  options.serve_flags = {"--kube-qps", "-1", "--lease-ttl", "2s"};
  auto report = RunScaleScenario(options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  std::printf("leader killed with %d of %d pods bound; all bound in %.1f s; bindings asked %lld\n",
              report->bound_at_kill, report->created, report->seconds,
              static_cast<long long>(report->bindings_asked));
  EXPECT_TRUE(report->leader_killed);
  EXPECT_GE(report->bound_at_kill, options.pods / 3);
  EXPECT_LT(report->bound_at_kill, options.pods) << "the kill came after the stream";
  EXPECT_EQ(report->bound, options.pods) << report->serve_log;
  EXPECT_GE(report->bindings_asked, report->bound);
  for (const std::string& violation : report->violations) ADD_FAILURE() << violation;
}

// The checks can fail: a node over-committed, a taint not tolerated, a selector not matched, a
// pod unbound, each said.
TEST(KubernetesScaleTest, TheChecksNameWhatIsWrong) {
  using Json = nlohmann::ordered_json;
  auto object = [](const char* text) { return std::make_shared<const Json>(Json::parse(text)); };
  std::vector<kube::ObjectPtr> nodes = {
      object(R"({"metadata": {"name": "n1", "labels": {"role": "agent"}},
                 "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]},
                 "status": {"allocatable": {"cpu": "1", "pods": "10"}}})")};
  auto pod = [&](const std::string& name, const std::string& cpu, const std::string& extra) {
    return object(
        ("{\"metadata\": {\"name\": \"" + name + "\"}, \"spec\": {\"nodeName\": \"n1\", " + extra +
         "\"containers\": [{\"name\": \"c\", \"resources\": {\"requests\": " + "{\"cpu\": \"" +
         cpu + "\"}}}]}}")
            .c_str());
  };
  const std::string tolerates = R"("tolerations": [{"key": "gpu", "operator": "Exists"}], )";
  std::vector<kube::ObjectPtr> pods = {
      pod("fits", "500m", tolerates), pod("too-much", "600m", tolerates),
      pod("untolerated", "0", ""),
      pod("elsewhere", "0", tolerates + R"("nodeSelector": {"role": "gpu"}, )"),
      object(R"({"metadata": {"name": "pending"}, "spec": {"containers": [{"name": "c"}]}})")};
  const std::vector<std::string> violations = CheckPlacement(pods, nodes);
  const std::string all = testing::PrintToString(violations);
  EXPECT_EQ(violations.size(), 4u) << all;
  for (const char* said : {"n1: cpu over-committed: 1100m of 1", "untolerated: on n1 despite",
                           "elsewhere: on n1, which its nodeSelector", "pending: not bound"}) {
    EXPECT_NE(all.find(said), std::string::npos) << said << " in " << all;
  }
}

}  // namespace kube_scale_e2e_test
}  // namespace gpupool::kube_e2e
