// Pods handed in as victims, end to end against the fake API server: an owner queue reclaims its
// quota from a queue that runs over it through pods handed in (a gang evicted whole, each pod
// marked DisruptionTarget and then evicted through the Eviction API, gone afterwards: Kubernetes
// does not requeue a pod), and the cluster's PodDisruptionBudgets seen before a victim is chosen
// (another victim taken, or none and the pending pod names the budget). Waits are bounded polls
// for states; nothing is timed.

#include "kube_e2e_fixture.h"

namespace gpupool::kube_e2e {
namespace kube_victims_e2e_test {

class HandedInVictimsTest : public KubernetesBackendTest {
 protected:
  // Queue "owner" deserves two of the cluster's three GPUs, "borrower" none; a pod of "owner"
  // already takes the GPU of node nori, so that the T4 node's two are the ones contended.
  void ApplyQueues() {
    const std::string queues =
        "apiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: owner}\nspec:\n  resources:\n"
        "    default:\n      gpu: {deserved: 2}\n---\n"
        "apiVersion: gpupool.io/v1\nkind: Queue\nmetadata: {name: borrower}\nspec: {}\n";
    auto res = http_->Post("/api/apply", queues, "application/yaml");
    ASSERT_TRUE(res && res->status == 200) << (res ? res->body : "no answer");
    CreateGpuPod("filler", "owner", {}, false, "nori");
    WaitRunning("filler");
  }

  // A one-GPU pod of `queue` handed in, with `labels`; `slow_stop`: it ignores SIGTERM for a
  // grace period of 3 s (so that what happens while it terminates can be seen).
  void CreateGpuPod(const std::string& name, const std::string& queue, Json labels = {},
                    bool slow_stop = false, const std::string& only_on = "") {
    if (!labels.is_object()) labels = Json::object();
    labels["gpupool.io/queue"] = queue;
    Json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", name},
                  {"labels", labels},
                  {"annotations",
                   {{"fake.gpupool.io/run-ms", "3600000"},
                    {"fake.gpupool.io/ignore-sigterm", slow_stop ? "true" : "false"}}}}},
                {"spec",
                 {{"schedulerName", "gpupool"},
                  {"terminationGracePeriodSeconds", 3},
                  {"containers",
                   {{{"name", "c"},
                     {"image", "busybox"},
                     {"resources", {{"requests", {{"nvidia.com/gpu", "1"}, {"cpu", "1"}}}}}}}}}}};
    if (!only_on.empty()) pod["spec"]["nodeSelector"] = {{"kubernetes.io/hostname", only_on}};
    auto created = kube_->Call({"POST", "/api/v1/namespaces/team/pods", pod.dump()});
    ASSERT_TRUE(created.ok() && created->ok()) << (created.ok() ? created->body : "");
  }

  // The pod once it is bound and Ready.
  void WaitRunning(const std::string& name) {
    Json pod;
    ASSERT_TRUE(Eventually([&] {
      pod = GetPod("team", name);
      return Condition(pod, "Ready").value("status", "") == "True";
    })) << pod.dump(2)
        << serve_->Log();
  }

  void WaitGone(const std::string& name) {
    ASSERT_TRUE(Eventually([&] { return GetPod("team", name).is_null(); }))
        << GetPod("team", name).dump(2) << serve_->Log();
  }

  std::string NodeOf(const std::string& name) {
    return GetPod("team", name).value("/spec/nodeName"_json_pointer, "");
  }
};

// Two pods of a gang of queue "borrower" hold the T4 node's GPUs; a pod of "owner", which deserves
// one, reclaims: the gang goes whole (both members evicted, each marked DisruptionTarget first),
// and the owner's pod is bound once they are gone, not before.
TEST_F(HandedInVictimsTest, AnOwnerReclaimsFromAGangHandedInOverItsQuota) {
  ApplyQueues();
  const Json gang = {{"gpupool.io/gang", "lend"}, {"gpupool.io/gang-min", "2"}};
  for (const char* name : {"lend-0", "lend-1"}) CreateGpuPod(name, "borrower", gang, true);
  WaitRunning("lend-0");
  WaitRunning("lend-1");

  CreateGpuPod("claim", "owner");
  Json victim;
  ASSERT_TRUE(Eventually([&] {
    victim = GetPod("team", "lend-0");
    return victim.value("/metadata/deletionTimestamp"_json_pointer, Json()).is_string();
  })) << victim.dump(2)
      << serve_->Log();
  const Json marked = Condition(victim, "DisruptionTarget");
  EXPECT_EQ(marked.value("status", ""), "True") << victim.dump(2);
  EXPECT_EQ(marked.value("reason", ""), "PreemptionByScheduler");
  EXPECT_NE(marked.value("message", "").find("reclaim"), std::string::npos) << marked.dump();
  EXPECT_EQ(NodeOf("claim"), "") << "bound into room a terminating pod still uses";

  WaitGone("lend-0");
  WaitGone("lend-1");
  ASSERT_TRUE(Eventually([&] { return !NodeOf("claim").empty(); })) << serve_->Log();
  EXPECT_EQ(NodeOf("claim"), "qa-mig-worker-gpu-1");
  Json requests = FakeRequests();
  EXPECT_EQ(requests["create pods/eviction"], 2) << requests.dump();
  // filler, lend-0, lend-1, claim: gpupool makes nothing again for the pods evicted.
  EXPECT_EQ(requests["create pods"], 4);
}

// A PodDisruptionBudget is seen before a victim is chosen: while budgets cover both borrowed
// pods, none is evicted and the owner's pod waits naming the budget; once only one is covered,
// the other is the victim, and no eviction is ever refused.
TEST_F(HandedInVictimsTest, BudgetsAreSeenBeforeAVictimIsChosen) {
  ApplyQueues();
  CreateGpuPod("keep", "borrower", {{"app", "keep"}});
  CreateGpuPod("spare", "borrower", {{"app", "spare"}});
  WaitRunning("keep");
  WaitRunning("spare");
  auto budget = [](const std::string& name, const Json& selector) {
    return Json{{"apiVersion", "policy/v1"},
                {"kind", "PodDisruptionBudget"},
                {"metadata", {{"name", name}, {"namespace", "team"}}},
                {"spec", {{"minAvailable", 1}, {"selector", selector}}}};
  };
  const std::string budgets = "/apis/policy/v1/namespaces/team/poddisruptionbudgets";
  AsAdmin("POST", budgets, budget("keep", {{"matchLabels", {{"app", "keep"}}}}));
  AsAdmin("POST", budgets, budget("spare", {{"matchLabels", {{"app", "spare"}}}}));

  CreateGpuPod("claim", "owner");
  Json claim = WaitUnschedulable("team", "claim");
  ASSERT_TRUE(Eventually([&] {
    claim = GetPod("team", "claim");
    return Condition(claim, "PodScheduled").value("message", "").find("PodDisruptionBudget") !=
           std::string::npos;
  })) << claim.dump(2)
      << serve_->Log();
  const std::string message = Condition(claim, "PodScheduled")["message"];
  EXPECT_NE(message.find("PodDisruptionBudget team/"), std::string::npos) << message;
  EXPECT_EQ(FakeRequests()["create pods/eviction"], Json()) << "no eviction asked";

  AsAdmin("DELETE", budgets + "/spare");
  WaitGone("spare");
  ASSERT_TRUE(Eventually([&] { return !NodeOf("claim").empty(); })) << serve_->Log();
  EXPECT_EQ(NodeOf("claim"), "qa-mig-worker-gpu-1");
  EXPECT_EQ(NodeOf("keep"), "qa-mig-worker-gpu-1") << "the budget kept it";
  EXPECT_EQ(FakeRequests()["create pods/eviction"], 1);
}

}  // namespace kube_victims_e2e_test
}  // namespace gpupool::kube_e2e
