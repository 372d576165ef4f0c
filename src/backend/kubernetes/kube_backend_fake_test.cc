// KubernetesBackend against the fake API server (a child process on a free loopback port, with
// its simulated kubelets, authorizing every request by deploy/kubernetes/clusterrole.yaml): a
// task's output read from its pod's log by byte offsets, evictions through the Eviction API
// under a PodDisruptionBudget, and a gang whose last binding is refused. The backend is driven
// directly, as the scheduling loop drives it; waits are bounded polls for states.

#include <gtest/gtest.h>

#include <thread>

#include "backend/kubernetes/kube_backend.h"
#include "kube/client.h"
#include "kube/testing/fake_process.h"

namespace gpupool::backend {
namespace kube_backend_fake_test {

using Json = nlohmann::ordered_json;

// Polls `condition` until it holds or 30 s pass (a bound for a stuck test, not an expectation).
template <typename Condition>
bool Eventually(Condition condition) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

Json Condition(const Json& pod, const std::string& type) {
  if (!pod.is_object()) return Json::object();
  for (const Json& c : pod.value("/status/conditions"_json_pointer, Json::array())) {
    if (c.value("type", "") == type) return c;
  }
  return Json::object();
}

class KubeBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kube::fake::FakeProcessOptions options;
    options.binary = GPUPOOL_FAKE_APISERVER;
    options.cert_script = std::string(GPUPOOL_SOURCE_DIR) + "/src/kube/testing/make-test-certs.sh";
    options.args = {"--nodes",
                    std::string(GPUPOOL_SOURCE_DIR) + "/data/edgexr-k8s-node-json",
                    "--kubelet",
                    "--kubelet-run-ms",
                    "200",
                    "--kubelet-start-ms",
                    kubelet_start_ms_,
                    "--rbac",
                    std::string(GPUPOOL_SOURCE_DIR) + "/deploy/kubernetes/clusterrole.yaml"};
    auto fake = kube::fake::FakeApiServerProcess::Start(options);
    ASSERT_TRUE(fake.ok()) << fake.status().message();
    fake_ = std::move(*fake);
    auto client = kube::Client::Create(fake_->Config(), {.qps = -1});
    ASSERT_TRUE(client.ok());
    kube_ = std::move(*client);
    auto kubeconfig = fake_->WriteKubeconfig(/*client_certificate=*/false);
    ASSERT_TRUE(kubeconfig.ok());
    kubeconfig_ = *kubeconfig;
    OpenBackend();
  }

  // A backend (again: a restarted server's) on the fake.
  void OpenBackend() {
    backend_.reset();
    KubernetesOptions backend_options;
    backend_options.kubeconfig = {kubeconfig_, ""};
    backend_options.client.qps = -1;
    kube::Environment env;
    env.getenv = [](const std::string&) { return std::string(); };
    auto backend = KubernetesBackend::Open(backend_options, env);
    ASSERT_TRUE(backend.ok()) << backend.status().message();
    backend_ = std::move(*backend);
  }

  // Waits (bounded) until Started has reported `key`.
  bool WaitStarted(const std::string& key) {
    return Eventually([&] {
      for (const auto& started : backend_->Started()) {
        if (started == key) return true;
      }
      return false;
    });
  }

  // Nothing the backend asked for was refused by the deployment's ClusterRole.
  void TearDown() override {
    if (!kube_) return;
    backend_.reset();
    EXPECT_EQ(Fake("GET", "stats")["denied"], Json::object());
  }

  Json Fake(const std::string& method, const std::string& hook, const Json& body = nullptr) {
    auto res = kube_->Call({method, "/_fake/" + hook, body.is_null() ? "" : body.dump()});
    EXPECT_TRUE(res.ok() && res->ok()) << (res.ok() ? res->body : res.status().message());
    return res.ok() ? res->Json() : Json();
  }

  Json GetPod(const std::string& ns, const std::string& name) {
    auto res = kube_->Call({"GET", "/api/v1/namespaces/" + ns + "/pods/" + name});
    return res.ok() && res->ok() ? res->Json() : Json::object();  // {}: no such pod
  }

  // Launches task `key` on `node` with `annotations` for the fake kubelet; returns its pod name.
  std::string LaunchTask(const std::string& key, const std::string& node, const Json& annotations,
                         const Json& labels = Json::object()) {
    TaskLaunch launch;
    launch.key = key;
    launch.node = node;
    launch.pod = {{"metadata", {{"labels", labels}, {"annotations", annotations}}},
                  {"spec",
                   {{"containers",
                     {{{"name", "main"}, {"image", "busybox"}},
                      {{"name", "sidecar"}, {"image", "busybox"}}}}}}};
    EXPECT_TRUE(backend_->Launch(launch).ok());
    return PodNameForAttempt(key);
  }

  // The exit Poll reports for `key` (bounded wait).
  std::optional<TaskExit> WaitExit(const std::string& key) {
    std::optional<TaskExit> found;
    Eventually([&] {
      for (auto& exit : backend_->Poll(0)) {
        if (exit.key == key) found = exit;
      }
      return found.has_value();
    });
    return found;
  }

  std::string kubelet_start_ms_ = "0";  // bound -> Running
  std::string kubeconfig_;
  std::unique_ptr<kube::fake::FakeApiServerProcess> fake_;
  std::unique_ptr<kube::Client> kube_;
  std::unique_ptr<KubernetesBackend> backend_;
};

// Started reports a launch once its pod exists bound to its node; a restarted server that
// launches the same attempt again (it was SCHEDULED in the store) finds that pod (the create's
// 409) and reports it started, with no second pod.
TEST_F(KubeBackendTest, StartedReportsALaunchOnceItsPodIsBound) {
  ASSERT_TRUE(backend_->ReportsStarts());
  const std::string key = "wf/g/a/0";
  const std::string name = LaunchTask(key, "nori", {{"fake.gpupool.io/run-ms", "60000"}});
  ASSERT_TRUE(WaitStarted(key));
  Json pod = GetPod("gpupool", name);
  EXPECT_EQ(pod.value("/spec/nodeName"_json_pointer, ""), "nori");
  const std::string uid = pod.value("/metadata/uid"_json_pointer, "");

  OpenBackend();
  LaunchTask(key, "nori", {{"fake.gpupool.io/run-ms", "60000"}});
  ASSERT_TRUE(WaitStarted(key));
  EXPECT_EQ(GetPod("gpupool", name).value("/metadata/uid"_json_pointer, ""), uid);
  EXPECT_TRUE(backend_->Poll(0).empty());
}

// A task's output is its pod's log (its first container's, of two), read by byte offsets: each
// chunk is the bytes at its offset, and `size` is how much is known to exist.
TEST_F(KubeBackendTest, ReadLogReadsThePodsLogByByteOffsets) {
  const std::string key = "wf/g/a/0";
  const std::string name = LaunchTask(key, "nori", {{"fake.gpupool.io/run-ms", "100"}});
  EXPECT_EQ(backend_->ReadLog("wf/g/unknown/0", 0, 100).status().code(), StatusCode::kNotFound);
  auto exit = WaitExit(key);
  ASSERT_TRUE(exit.has_value());
  ASSERT_EQ(exit->exit_code, 0);
  const std::string full =
      "fake kubelet: started on node nori\nfake kubelet: exited with code 0 (Completed)\n";
  const auto size = static_cast<int64_t>(full.size());
  struct Case {
    int64_t offset;
    int64_t max;
    std::string data;
    int64_t size;  // at least this much exists
  };
  std::vector<Case> cases = {
      {0, 1 << 20, full, size},
      {0, 5, full.substr(0, 5), 6},  // one byte more was asked: more follows
      {10, 7, full.substr(10, 7), 18},
      {size - 3, 100, full.substr(full.size() - 3), size},
      {size, 10, "", size},
      {size + 5, 10, "", size},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.offset) + "+" + std::to_string(c.max));
    auto chunk = backend_->ReadLog(key, c.offset, c.max);
    ASSERT_TRUE(chunk.ok()) << chunk.status().message();
    EXPECT_EQ(chunk->offset, c.offset);
    EXPECT_EQ(chunk->data, c.data);
    EXPECT_EQ(chunk->size, c.size);
  }
  EXPECT_GE(Fake("GET", "stats")["requests"].value("get pods/log", 0), 6);

  // A pod whose containers never start has written nothing.
  const std::string stuck = "wf/g/stuck/0";
  const std::string stuck_name =
      LaunchTask(stuck, "nori", {{"fake.gpupool.io/waiting-reason", "ErrImagePull"}});
  ASSERT_TRUE(Eventually([&] {
    Json pod = GetPod("gpupool", stuck_name);
    return pod.value("/status/containerStatuses/0/state/waiting/reason"_json_pointer, "") ==
           "ErrImagePull";
  }));
  EXPECT_EQ(backend_->ReadLog(stuck, 0, 100).status().code(), StatusCode::kNotFound);

  // Its pod deleted, a task's log goes with it.
  ASSERT_TRUE(kube_
                  ->Call({"DELETE", "/api/v1/namespaces/gpupool/pods/" + name,
                          R"({"gracePeriodSeconds":0})"})
                  .ok());
  ASSERT_TRUE(Eventually(
      [&] { return backend_->ReadLog(key, 0, 100).status().code() == StatusCode::kNotFound; }));
}

// Reclaim and preemption go through the Eviction API: the DisruptionTarget condition first,
// then the eviction with the pod's UID. A PodDisruptionBudget's 429 leaves the pod running,
// reported as refused with the budget's message, its DisruptionTarget back to False; once the
// budget allows it, the eviction goes through and Poll reports the task evicted when its pod is
// gone.
TEST_F(KubeBackendTest, EvictionsGoThroughTheEvictionApiAndItsBudgets) {
  const std::string key = "wf/g/web/0";
  const std::string name =
      LaunchTask(key, "nori", {{"fake.gpupool.io/run-ms", "3600000"}}, {{"app", "web"}});
  ASSERT_TRUE(
      Eventually([&] { return Condition(GetPod("gpupool", name), "Ready")["status"] == "True"; }));
  Json pdb = {{"apiVersion", "policy/v1"},
              {"kind", "PodDisruptionBudget"},
              {"metadata", {{"name", "web"}, {"namespace", "gpupool"}}},
              {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "web"}}}}}}}};
  Fake("POST", "admin",
       {{"method", "POST"},
        {"path", "/apis/policy/v1/namespaces/gpupool/poddisruptionbudgets"},
        {"body", pdb}});

  const TaskEviction eviction{key, "preempt", "preempted by pod w2.0", true};
  // The backend evicts a pod once its watch has seen it bound (uid and node); until then Evict
  // answers kStopped and does nothing, so asking again is safe. On a loaded machine the watch
  // event can come after the pod reads Ready through the API.
  ASSERT_TRUE(Eventually([&] { return backend_->Evict(eviction) == EvictionStart::kInFlight; }));
  std::vector<RefusedEviction> refused;
  ASSERT_TRUE(Eventually([&] {
    refused = backend_->RefusedEvictions();
    return !refused.empty();
  }));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].key, key);
  EXPECT_EQ(refused[0].reason,
            "blocked by a PodDisruptionBudget: The disruption budget web needs 1 healthy pods and "
            "has 1 currently");
  Json pod;
  ASSERT_TRUE(Eventually([&] {
    pod = GetPod("gpupool", name);
    return Condition(pod, "DisruptionTarget")["status"] == "False";
  })) << pod.dump(2);
  EXPECT_EQ(pod["status"]["phase"], "Running");
  EXPECT_FALSE(pod["metadata"].contains("deletionTimestamp"));
  EXPECT_NE(Condition(pod, "DisruptionTarget")["message"].get<std::string>().find("refused"),
            std::string::npos);
  EXPECT_TRUE(backend_->Poll(0).empty()) << "still running";

  Fake("POST", "admin",
       {{"method", "DELETE"},
        {"path", "/apis/policy/v1/namespaces/gpupool/poddisruptionbudgets/web"}});
  ASSERT_EQ(backend_->Evict(eviction), EvictionStart::kInFlight);
  auto exit = WaitExit(key);
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->evicted);
  EXPECT_TRUE(GetPod("gpupool", name).empty()) << "gone before it is reported";
  EXPECT_TRUE(backend_->RefusedEvictions().empty());
  Json requests = Fake("GET", "stats")["requests"];
  EXPECT_EQ(requests["create pods/eviction"], 2) << requests.dump();
  EXPECT_EQ(requests["patch pods/status"], 3) << "marked twice, cleared once: " << requests.dump();

  // A task that is not running: nothing to ask the cluster.
  EXPECT_EQ(backend_->Evict({"wf/g/none/0", "reclaim", "", true}), EvictionStart::kStopped);
}

// A pod handed in, bound, under a PodDisruptionBudget: the budget shows in DisruptionBudgets with
// the fake disruption controller's counts and the pod it selects (so the scheduler can pass it
// over); evicted anyway, the eviction is refused (429) and reported, the pod marked
// DisruptionTarget and unmarked. Once the budget is gone, the eviction goes through and the pod
// is gone: no longer handed in (nothing requeues a bare pod).
TEST_F(KubeBackendTest, APodHandedInIsEvictedThroughTheEvictionApiAndItsBudgets) {
  Json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "web-0"},
        {"labels", {{"app", "web"}}},
        {"annotations", {{"fake.gpupool.io/run-ms", "3600000"}}}}},
      {"spec",
       {{"schedulerName", "gpupool"}, {"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  auto created = kube_->Call({"POST", "/api/v1/namespaces/team/pods", pod.dump()});
  ASSERT_TRUE(created.ok() && created->ok()) << (created.ok() ? created->body : "");
  PodRef ref;
  ASSERT_TRUE(Eventually([&] {
    for (const auto& in : backend_->HandedInPods()) ref = in->ref;
    return !ref.uid.empty();
  }));
  ASSERT_TRUE(backend_->BindPods({{ref, "nori"}}).ok());
  ASSERT_TRUE(
      Eventually([&] { return Condition(GetPod("team", "web-0"), "Ready")["status"] == "True"; }));
  Json pdb = {{"apiVersion", "policy/v1"},
              {"kind", "PodDisruptionBudget"},
              {"metadata", {{"name", "web"}, {"namespace", "team"}}},
              {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "web"}}}}}}}};
  Fake("POST", "admin",
       {{"method", "POST"},
        {"path", "/apis/policy/v1/namespaces/team/poddisruptionbudgets"},
        {"body", pdb}});
  std::vector<ClusterDisruptionBudget> budgets;
  ASSERT_TRUE(Eventually([&] {
    budgets = backend_->DisruptionBudgets();
    return budgets.size() == 1 && budgets[0].current_healthy == 1;
  }));
  EXPECT_EQ(budgets[0].namespace_, "team");
  EXPECT_EQ(budgets[0].name, "web");
  EXPECT_EQ(budgets[0].rule, "minAvailable 1");
  EXPECT_EQ(budgets[0].disruptions_allowed, 0);
  EXPECT_EQ(budgets[0].desired_healthy, 1);
  EXPECT_EQ(budgets[0].expected_pods, 1);
  EXPECT_EQ(budgets[0].selects, std::vector<std::string>{HandedInKey(ref)});

  TaskEviction eviction;
  eviction.key = HandedInKey(ref);
  eviction.reason = "reclaim";
  eviction.message = "reclaimed by queue owner for pod team/claim";
  eviction.pod = ref;
  ASSERT_EQ(backend_->Evict(eviction), EvictionStart::kInFlight);
  std::vector<RefusedEviction> refused;
  ASSERT_TRUE(Eventually([&] {
    refused = backend_->RefusedEvictions();
    return !refused.empty();
  }));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].key, eviction.key);
  EXPECT_EQ(refused[0].reason,
            "blocked by a PodDisruptionBudget: The disruption budget web needs 1 healthy pods and "
            "has 1 currently");
  Json seen;
  ASSERT_TRUE(Eventually([&] {
    seen = GetPod("team", "web-0");
    return Condition(seen, "DisruptionTarget")["status"] == "False";
  })) << seen.dump(2);
  EXPECT_EQ(seen["status"]["phase"], "Running");

  Fake(
      "POST", "admin",
      {{"method", "DELETE"}, {"path", "/apis/policy/v1/namespaces/team/poddisruptionbudgets/web"}});
  ASSERT_TRUE(Eventually([&] { return backend_->DisruptionBudgets().empty(); }));
  ASSERT_EQ(backend_->Evict(eviction), EvictionStart::kInFlight);
  ASSERT_TRUE(Eventually(
      [&] { return GetPod("team", "web-0").empty() && backend_->HandedInPods().empty(); }));
  EXPECT_TRUE(backend_->RefusedEvictions().empty());
  Json requests = Fake("GET", "stats")["requests"];
  EXPECT_EQ(requests["create pods/eviction"], 2) << requests.dump();
  // Gone: nothing holds a room, nothing to ask.
  EXPECT_EQ(backend_->Evict(eviction), EvictionStart::kStopped);
}

// A gang's bindings are separate requests: one refused after the others went through is not
// dropped silently. The others stay bound (Kubernetes cannot unbind, and pods gpupool does not
// own are not deleted to undo it), the refused pod gets a FailedScheduling Event "Binding
// rejected", each bound member an Event GangPartlyBound, and the refused pod, pending again, is
// bound by a later command.
TEST_F(KubeBackendTest, AGangMemberRefusedAfterTheOthersIsSaidAndBoundLater) {
  const std::vector<std::string> names = {"trio-0", "trio-1", "trio-2"};
  const std::vector<std::string> nodes = {"aks-agentpool-30520393-vmss000000",
                                          "aks-agentpool-30520393-vmss000001",
                                          "aks-agentpool-30520393-vmss000002"};
  for (const std::string& name : names) {
    Json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", name},
          {"labels", {{"gpupool.io/gang", "trio"}, {"gpupool.io/gang-min", "3"}}},
          {"annotations", {{"fake.gpupool.io/run-ms", "3600000"}}}}},
        {"spec",
         {{"schedulerName", "gpupool"}, {"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
    auto created = kube_->Call({"POST", "/api/v1/namespaces/team/pods", pod.dump()});
    ASSERT_TRUE(created.ok() && created->ok()) << (created.ok() ? created->body : "");
  }
  std::vector<PodBinding> gang;
  ASSERT_TRUE(Eventually([&] {
    gang.clear();
    for (const auto& pod : backend_->HandedInPods()) {
      if (pod->pod.node_name.empty()) gang.push_back({pod->ref, ""});
    }
    return gang.size() == 3;
  }));
  std::sort(gang.begin(), gang.end(),
            [](const PodBinding& a, const PodBinding& b) { return a.pod.name < b.pod.name; });
  for (size_t i = 0; i < gang.size(); ++i) gang[i].node = nodes[i];
  // The API server refuses trio-2's binding (as when the pod was bound or deleted in between).
  Fake(
      "POST", "fail",
      {{"method", "POST"}, {"path", "/api/v1/namespaces/team/pods/trio-2/binding"}, {"code", 409}});
  ASSERT_TRUE(backend_->BindPods(gang).ok());

  auto events = [&](const std::string& pod, const std::string& reason) {
    Json out = Json::array();
    const Json listed = Fake("GET", "events");
    for (const Json& event : listed["items"]) {
      if (event.value("/involvedObject/name"_json_pointer, "") == pod &&
          event.value("reason", "") == reason)
        out.push_back(event);
    }
    return out;
  };
  ASSERT_TRUE(Eventually([&] { return !events("trio-2", "FailedScheduling").empty(); }));
  const Json rejected = events("trio-2", "FailedScheduling")[0];
  EXPECT_EQ(rejected["type"], "Warning");
  EXPECT_EQ(rejected["message"].get<std::string>().rfind("Binding rejected: 409", 0), 0u)
      << rejected.dump(2);
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(names[i]);
    ASSERT_TRUE(Eventually([&] { return !events(names[i], "GangPartlyBound").empty(); }));
    const std::string message = events(names[i], "GangPartlyBound")[0]["message"];
    EXPECT_NE(message.find("team/trio-2"), std::string::npos) << message;
    EXPECT_EQ(GetPod("team", names[i]).value("/spec/nodeName"_json_pointer, ""), nodes[i]);
  }
  EXPECT_FALSE(GetPod("team", "trio-2")["spec"].contains("nodeName"));

  // Pending again as far as the backend knows: the next command binds it.
  std::vector<PodBinding> rest;
  ASSERT_TRUE(Eventually([&] {
    rest.clear();
    for (const auto& pod : backend_->HandedInPods()) {
      if (pod->pod.node_name.empty()) rest.push_back({pod->ref, nodes[2]});
    }
    return rest.size() == 1 && rest[0].pod.name == "trio-2";
  }));
  ASSERT_TRUE(backend_->BindPods(rest).ok());
  ASSERT_TRUE(Eventually([&] {
    return GetPod("team", "trio-2").value("/spec/nodeName"_json_pointer, "") == nodes[2];
  }));
}

// Pods bound stay as bound (their kubelets start them after 10 minutes): nothing but the
// binding changes them.
class KubeBackendBoundPodsTest : public KubeBackendTest {
 protected:
  KubeBackendBoundPodsTest() { kubelet_start_ms_ = "600000"; }
};

// A pod handed in and bound by gpupool is, once the informer shows it bound, the very object
// HandedInPods gave while its binding was in flight: the scheduling loop, which tells pods apart
// by object, keeps what it made of it.
TEST_F(KubeBackendBoundPodsTest, APodShownBoundIsTheObjectMadeAtItsBinding) {
  const std::string node = "aks-agentpool-30520393-vmss000000";
  auto create = [&](const std::string& name) {
    Json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", name}, {"labels", {{"app", "solo"}}}}},
        {"spec",
         {{"schedulerName", "gpupool"}, {"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
    auto created = kube_->Call({"POST", "/api/v1/namespaces/team/pods", pod.dump()});
    ASSERT_TRUE(created.ok() && created->ok()) << (created.ok() ? created->body : "");
  };
  auto handed_in = [&](const std::string& name) {
    std::shared_ptr<const HandedInPod> found;
    for (const auto& pod : backend_->HandedInPods()) {
      if (pod->ref.name == name) found = pod;
    }
    return found;
  };
  create("solo");
  ASSERT_TRUE(Eventually([&] { return handed_in("solo") != nullptr; }));
  const PodRef ref = handed_in("solo")->ref;
  ASSERT_TRUE(backend_->BindPods({{ref, node}}).ok());
  const std::shared_ptr<const HandedInPod> sent = handed_in("solo");
  ASSERT_NE(sent, nullptr);
  EXPECT_EQ(sent->pod.node_name, node);
  ASSERT_TRUE(Eventually(
      [&] { return GetPod("team", "solo").value("/spec/nodeName"_json_pointer, "") == node; }));
  // Watch events come in the order of the changes: once the backend has a pod created after the
  // binding, it has seen the binding.
  create("after");
  ASSERT_TRUE(Eventually([&] { return handed_in("after") != nullptr; }));
  const std::shared_ptr<const HandedInPod> bound = handed_in("solo");
  ASSERT_NE(bound, nullptr);
  EXPECT_EQ(bound.get(), sent.get());
  EXPECT_EQ(bound->pod.node_name, node);
  EXPECT_EQ(bound->pod.labels.at("app"), "solo");
  EXPECT_TRUE(bound->unsupported.empty());
}

}  // namespace kube_backend_fake_test
}  // namespace gpupool::backend
