// The client and its informers against the fake API server (a child process on a free loopback
// port): pagination, bookmarks, a watch cut mid-stream, 410 Gone, an API server restart, 429
// with Retry-After, the rate limit, conflicting bindings, evictions under a PodDisruptionBudget,
// a followed log, and the ways of authenticating. Waits are for events, bounded (Eventually); no
// test asserts how long anything took, except that a Retry-After was waited out.

#include "kube/client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "kube/api.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "kube/testing/fake_process.h"
#include "model/input_file.h"

namespace gpupool::kube {
namespace client_test {

using Json = nlohmann::ordered_json;
using std::chrono::milliseconds;

constexpr char kPods[] = "/api/v1/namespaces/gpupool/pods";

// Polls `condition` until it holds or 30 s pass (a bound for a stuck test, not an expectation).
template <typename Condition>
bool Eventually(Condition condition) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return condition();
}

Json Pod(const std::string& name, Json labels = Json::object(), Json annotations = Json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", labels}, {"annotations", annotations}}},
          {"spec", {{"containers", Json::array({{{"name", "main"}, {"image", "busybox"}}})}}}};
}

class ClientTest : public ::testing::Test {
 protected:
  void Start(std::vector<std::string> args = {}) {
    fake::FakeProcessOptions options;
    options.binary = GPUPOOL_FAKE_APISERVER;
    options.cert_script = std::string(GPUPOOL_SOURCE_DIR) + "/src/kube/testing/make-test-certs.sh";
    options.args = {"--nodes", std::string(GPUPOOL_SOURCE_DIR) + "/data/edgexr-k8s-node-json"};
    options.args.insert(options.args.end(), args.begin(), args.end());
    auto process = fake::FakeApiServerProcess::Start(options);
    ASSERT_TRUE(process.ok()) << process.status().message();
    process_ = std::move(*process);
    client_ = MakeClient({.qps = -1});
  }

  std::unique_ptr<Client> MakeClient(ClientOptions options, RestConfig config = {}) {
    if (config.server.empty()) config = process_->Config();
    auto client = Client::Create(config, options);
    EXPECT_TRUE(client.ok()) << client.status().message();
    return client.ok() ? std::move(*client) : nullptr;
  }

  Json Admin(const std::string& method, const std::string& path, const Json& body = nullptr) {
    auto response = client_->Call({method, "/_fake/" + path, body.is_null() ? "" : body.dump()});
    EXPECT_TRUE(response.ok()) << response.status().message();
    return response.ok() ? response->Json() : Json();
  }

  Json CreatePod(const Json& pod) {
    auto created = CreateObject(*client_, kPods, pod);
    EXPECT_TRUE(created.ok()) << created.status().message();
    return created.ok() ? *created : Json();
  }

  // Stops the informers before the client they use goes.
  void TearDown() override {
    for (auto& informer : informers_) informer->Stop();
  }

  Informer& Watch(InformerOptions options, InformerHandlers handlers = {}) {
    options.backoff = {milliseconds(50), milliseconds(500), 2.0, 1.0};
    informers_.push_back(std::make_unique<Informer>(*client_, options, std::move(handlers)));
    informers_.back()->Start();
    EXPECT_TRUE(informers_.back()->WaitForSync(std::chrono::seconds(30)));
    return *informers_.back();
  }

  std::unique_ptr<fake::FakeApiServerProcess> process_;
  std::unique_ptr<Client> client_;
  std::vector<std::unique_ptr<Informer>> informers_;
};

TEST_F(ClientTest, ListsInPages) {
  Start({"--node-count", "25"});
  auto page = client_->Call({"GET", "/api/v1/nodes?limit=10"});
  ASSERT_TRUE(page.ok()) << page.status().message();
  Json body = page->Json();
  EXPECT_EQ(body["items"].size(), 10u);
  EXPECT_EQ(body["metadata"]["remainingItemCount"], 15);
  std::set<std::string> names;
  for (const Json& node : body["items"]) names.insert(node["metadata"]["name"].get<std::string>());
  while (body["metadata"].contains("continue")) {
    std::string token = body["metadata"]["continue"].get<std::string>();
    auto next = client_->Call({"GET", "/api/v1/nodes?limit=10&continue=" + QueryEscape(token)});
    ASSERT_TRUE(next.ok() && next->ok());
    body = next->Json();
    for (const Json& node : body["items"]) {
      std::string name = node["metadata"]["name"].get<std::string>();
      EXPECT_GT(name, *names.rbegin());  // pages continue in key order
      names.insert(name);
    }
  }
  EXPECT_EQ(names.size(), 25u);

  Informer& nodes = Watch({.path = "/api/v1/nodes", .page_size = 10});
  EXPECT_EQ(nodes.List().size(), 25u);
  EXPECT_EQ(nodes.Stats().list_pages, 3);
  EXPECT_EQ(nodes.Stats().lists, 1);
}

TEST_F(ClientTest, AnExpiredContinueTokenIsGone) {
  Start({"--node-count", "5"});
  auto page = client_->Call({"GET", "/api/v1/nodes?limit=2"});
  ASSERT_TRUE(page.ok());
  std::string token = page->Json()["metadata"]["continue"].get<std::string>();
  CreatePod(Pod("moves-the-revision"));
  Admin("POST", "compact");
  auto next = client_->Call({"GET", "/api/v1/nodes?limit=2&continue=" + QueryEscape(token)});
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->status, 410);
  EXPECT_EQ(ApiError(*next, "list").code(), StatusCode::kFailedPrecondition);
}

TEST_F(ClientTest, BookmarksMoveTheResourceVersion) {
  Start();
  Informer& pods = Watch({.path = "/api/v1/pods", .label_selector = "app=mine"});
  CreatePod(Pod("other", {{"app", "other"}}));  // not seen: the version moves on the server only
  // Asked until one arrives: the watch may still be opening after the sync.
  int64_t revision = 0;
  ASSERT_TRUE(Eventually([&] {
    revision = Admin("POST", "bookmarks")["revision"].get<int64_t>();
    return pods.Stats().bookmarks >= 1;
  }));
  EXPECT_EQ(pods.LastResourceVersion(), std::to_string(revision));
  EXPECT_TRUE(pods.List().empty());
}

TEST_F(ClientTest, ACutWatchResumesFromTheLastVersion) {
  Start();
  std::atomic<int> added{0};
  Informer& pods = Watch({.path = "/api/v1/pods"}, {.on_add = [&](const ObjectPtr&) { ++added; }});
  CreatePod(Pod("a"));
  ASSERT_TRUE(Eventually([&] { return pods.Get("gpupool/a") != nullptr; }));
  EXPECT_GE(Admin("POST", "watches/cut")["closed"].get<int>(), 1);
  CreatePod(Pod("b"));  // while the watch is down, or just after it resumed
  ASSERT_TRUE(Eventually([&] { return pods.Get("gpupool/b") != nullptr; }));
  InformerStats stats = pods.Stats();
  EXPECT_GE(stats.resumed, 1);
  EXPECT_EQ(stats.lists, 1);  // resumed, not relisted
  EXPECT_EQ(stats.expired, 0);
  EXPECT_EQ(added.load(), 2);  // each pod once
}

TEST_F(ClientTest, GoneRelistsThenWatchesFromTheNewList) {
  for (bool as_http_410 : {false, true}) {
    SCOPED_TRACE(as_http_410 ? "410 on the request" : "ERROR event with a 410 Status");
    Start();
    Admin("POST", "config", {{"expiredWatchAs410", as_http_410}});
    std::atomic<int> deleted{0};
    // Bookmarks off: the informer's version only moves with the pods it selects.
    Informer& pods =
        Watch({.path = "/api/v1/pods", .label_selector = "app=mine", .bookmarks = false},
              {.on_delete = [&](const ObjectPtr&) { ++deleted; }});
    CreatePod(Pod("kept", {{"app", "mine"}}));
    CreatePod(Pod("gone", {{"app", "mine"}}));
    ASSERT_TRUE(Eventually([&] { return pods.List().size() == 2; }));
    CreatePod(Pod("unseen", {{"app", "other"}}));  // a later revision the informer never sees
    Admin("POST", "compact");                      // ... so its version is now too old
    Admin("POST", "watches/cut");
    ASSERT_TRUE(Eventually([&] { return pods.Stats().lists == 2; }))
        << "watches " << pods.Stats().watches << ", expired " << pods.Stats().expired
        << ", failures " << pods.Stats().failures << " (" << pods.Stats().last_error
        << "), resumed " << pods.Stats().resumed << ", requests "
        << Admin("GET", "stats")["requests"].dump();
    EXPECT_EQ(pods.Stats().expired, 1);
    CreatePod(Pod("after", {{"app", "mine"}}));  // and the new watch carries on
    ASSERT_TRUE(Eventually([&] { return pods.Get("gpupool/after") != nullptr; }));
    EXPECT_EQ(pods.List().size(), 3u);
    EXPECT_EQ(deleted.load(), 0);

    // A list replaces the cache: what went while the informer was away is deleted.
    pods.Stop();
    auto removed = client_->Call({"DELETE", std::string(kPods) + "/gone"});
    ASSERT_TRUE(removed.ok() && removed->ok());
    pods.Start();
    ASSERT_TRUE(Eventually([&] { return deleted.load() == 1; }));
    EXPECT_EQ(pods.Stats().lists, 3);
    EXPECT_EQ(pods.Get("gpupool/gone"), nullptr);
    EXPECT_NE(pods.Get("gpupool/kept"), nullptr);
    TearDown();
    informers_.clear();
  }
}

TEST_F(ClientTest, ReconnectsAfterTheApiServerRestarts) {
  Start();
  Informer& pods = Watch({.path = "/api/v1/pods"});
  CreatePod(Pod("before"));
  ASSERT_TRUE(Eventually([&] { return pods.Get("gpupool/before") != nullptr; }));
  ASSERT_TRUE(process_->Restart(milliseconds(300)).ok());
  // The pooled connection died with the old process: the request is sent again on a new one.
  CreatePod(Pod("after"));
  ASSERT_TRUE(Eventually([&] { return pods.Get("gpupool/after") != nullptr; }));
  EXPECT_NE(pods.Get("gpupool/before"), nullptr);  // the state survived the restart
  EXPECT_GE(pods.Stats().resumed, 1);
  EXPECT_GE(client_->Stats().stale_retries, 1);
}

TEST_F(ClientTest, HonoursRetryAfter) {
  Start();
  Admin("POST", "throttle", {{"count", 1}, {"retryAfterSeconds", 1}});
  auto nodes = client_->Call({"GET", "/api/v1/nodes"});
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(nodes->status, 200);  // the 429 was retried
  EXPECT_EQ(client_->Stats().retried_after, 1);
  Json stats = Admin("GET", "stats");
  EXPECT_EQ(stats["throttled"], 1);
  ASSERT_EQ(stats["retryGapsMs"].size(), 1u);
  EXPECT_GE(stats["retryGapsMs"][0].get<int64_t>(), 1000);  // not before Retry-After

  // After max_retries, the 429 itself is the answer.
  auto impatient = MakeClient({.qps = -1, .max_retries = 0});
  Admin("POST", "throttle", {{"count", 1}, {"retryAfterSeconds", 1}});
  auto refused = impatient->Call({"GET", "/api/v1/nodes"});
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->status, 429);
  EXPECT_EQ(ApiError(*refused, "list").code(), StatusCode::kUnavailable);
}

TEST_F(ClientTest, RateLimitsRequests) {
  Start();
  auto limited = MakeClient({.qps = 2, .burst = 1});
  std::atomic<int> answered{0};
  for (int i = 0; i < 5; ++i) {
    limited->Send({"GET", "/version"}, [&](Result<Response> r) { answered += r.ok() ? 1 : 0; });
  }
  ASSERT_TRUE(Eventually([&] { return answered.load() == 5; }));
  EXPECT_EQ(limited->Stats().rate_limited, 4);  // one token of burst, the rest waited
}

TEST_F(ClientTest, BindsOncePerPod) {
  Start();
  Json pod = CreatePod(Pod("p"));
  ObjectRef ref = RefOf(pod);
  EXPECT_TRUE(BindPod(*client_, ref, "nori").ok());
  Status again = BindPod(*client_, ref, "aks-agentpool-30520393-vmss000000");
  EXPECT_EQ(again.code(), StatusCode::kAborted);
  EXPECT_NE(again.message().find("already assigned to node \"nori\""), std::string::npos)
      << again.message();

  // A pod deleted and created again under the same name is another pod: 409, not a binding.
  Json other = CreatePod(Pod("q"));
  ASSERT_TRUE(client_->Call({"DELETE", std::string(kPods) + "/q"}).ok());
  CreatePod(Pod("q"));
  EXPECT_EQ(BindPod(*client_, RefOf(other), "nori").code(), StatusCode::kAborted);
  ASSERT_TRUE(client_->Call({"DELETE", std::string(kPods) + "/q"}).ok());
  EXPECT_EQ(BindPod(*client_, RefOf(other), "nori").code(), StatusCode::kNotFound);
}

TEST_F(ClientTest, EvictionAnswersThePodDisruptionBudget) {
  Start({"--kubelet"});
  Json pod = Pod("serving", {{"app", "web"}}, {{"fake.gpupool.io/run-ms", "600000"}});
  pod["spec"]["nodeName"] = "nori";
  ObjectRef ref = RefOf(CreatePod(pod));
  Json pdb = {{"metadata", {{"name", "web"}}},
              {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"app", "web"}}}}}}}};
  ASSERT_TRUE(
      CreateObject(*client_, "/apis/policy/v1/namespaces/gpupool/poddisruptionbudgets", pdb).ok());
  ASSERT_TRUE(Eventually([&] {
    auto got = client_->Call({"GET", PodPath(ref)});
    return got.ok() && got->Json()["status"]["phase"] == "Running";
  }));
  auto blocked = EvictPod(*client_, ref, std::nullopt);
  ASSERT_TRUE(blocked.ok()) << blocked.status().message();
  EXPECT_EQ(blocked->outcome, EvictionOutcome::kBlockedByBudget);
  EXPECT_EQ(blocked->message, "The disruption budget web needs 1 healthy pods and has 1 currently");

  auto wrong_uid = EvictPod(*client_, {ref.namespace_, ref.name, "not-this-pod"}, std::nullopt);
  ASSERT_TRUE(wrong_uid.ok());
  EXPECT_EQ(wrong_uid->outcome, EvictionOutcome::kConflict);

  ASSERT_TRUE(client_
                  ->Call({"DELETE",
                          "/apis/policy/v1/namespaces/gpupool/"
                          "poddisruptionbudgets/web"})
                  .ok());
  auto evicted = EvictPod(*client_, ref, 0);
  ASSERT_TRUE(evicted.ok());
  EXPECT_EQ(evicted->outcome, EvictionOutcome::kEvicted);
  auto gone = EvictPod(*client_, ref, 0);
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->outcome, EvictionOutcome::kGone);
}

TEST_F(ClientTest, UnschedulablePodsSayWhyOnce) {
  Start();
  Json pod = CreatePod(Pod("waiting"));
  ObjectRef ref = RefOf(pod);
  const std::string why = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.";
  auto patched = PatchStatus(*client_, ref, UnschedulablePatch(why, "2026-01-01T00:00:00Z"));
  ASSERT_TRUE(patched.ok()) << patched.status().message();
  EXPECT_EQ((*patched)["status"]["conditions"][0]["reason"], "Unschedulable");
  EXPECT_EQ((*patched)["status"]["phase"], "Pending");  // the rest of the status is kept

  EventRecorder recorder;
  for (int i = 0; i < 3; ++i) {
    EventWrite write =
        recorder.Record(pod, "Warning", "FailedScheduling", why, 1767225600000 + i * 1000);
    auto written = write.kind == EventWrite::Kind::kCreate
                       ? client_->Call({"POST", write.path, write.body.dump()})
                       : client_->Call({"PATCH", write.path, write.body.dump(),
                                        "application/strategic-merge-patch+json"});
    ASSERT_TRUE(written.ok() && written->ok()) << (written.ok() ? written->body : "");
  }
  auto events = client_->Call(
      {"GET", "/api/v1/namespaces/gpupool/events?fieldSelector=" +
                  QueryEscape("involvedObject.name=waiting,reason=FailedScheduling")});
  ASSERT_TRUE(events.ok());
  Json items = events->Json()["items"];
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0]["count"], 3);
  EXPECT_EQ(items[0]["lastTimestamp"], "2026-01-01T00:00:02Z");
}

TEST_F(ClientTest, ScalesMachineSetsAndGuardsLeases) {
  Start();
  const std::string sets =
      "/apis/machine.openshift.io/v1beta1/namespaces/openshift-machine-api/"
      "machinesets";
  Json set = {{"metadata", {{"name", "gpu-a"}}},
              {"spec", {{"replicas", 1}, {"selector", {{"matchLabels", {{"pool", "gpu-a"}}}}}}}};
  ASSERT_TRUE(CreateObject(*client_, sets, set).ok());
  auto scaled = client_->Call({"PATCH", sets + "/gpu-a/scale", R"({"spec":{"replicas":3}})",
                               "application/merge-patch+json"});
  ASSERT_TRUE(scaled.ok() && scaled->ok()) << (scaled.ok() ? scaled->body : "");
  Json scale = scaled->Json();
  EXPECT_EQ(scale["kind"], "Scale");
  EXPECT_EQ(scale["spec"]["replicas"], 3);
  EXPECT_EQ(scale["status"]["selector"], "pool=gpu-a");
  auto read = client_->Call({"GET", sets + "/gpu-a"});
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->Json()["spec"]["replicas"], 3);
  auto negative = client_->Call({"PUT", sets + "/gpu-a/scale", R"({"spec":{"replicas":-1}})"});
  ASSERT_TRUE(negative.ok());
  EXPECT_EQ(negative->status, 422);

  // A Lease is taken by create and renewed by update with its resourceVersion: a stale renewal
  // (another holder got there first) is a 409.
  const std::string leases = "/apis/coordination.k8s.io/v1/namespaces/gpupool/leases";
  Json lease = {{"metadata", {{"name", "scheduler"}}},
                {"spec", {{"holderIdentity", "a"}, {"leaseDurationSeconds", 15}}}};
  auto created = CreateObject(*client_, leases, lease);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(CreateObject(*client_, leases, lease).status().code(), StatusCode::kAlreadyExists);
  Json renew = *created;
  renew["spec"]["holderIdentity"] = "b";
  auto taken = client_->Call({"PUT", leases + "/scheduler", renew.dump()});
  ASSERT_TRUE(taken.ok() && taken->ok());
  renew["spec"]["holderIdentity"] = "a";  // a's renewal, with the version it read before
  auto stale = client_->Call({"PUT", leases + "/scheduler", renew.dump()});
  ASSERT_TRUE(stale.ok());
  EXPECT_EQ(ApiError(*stale, "renew").code(), StatusCode::kAborted);
  EXPECT_EQ(client_->Call({"GET", leases + "/scheduler"})->Json()["spec"]["holderIdentity"], "b");
}

TEST_F(ClientTest, FollowsALogToTheEnd) {
  Start({"--kubelet", "--kubelet-run-ms", "200"});
  Json pod = Pod("job", {}, {{"fake.gpupool.io/exit-code", "3"}});
  pod["spec"]["nodeName"] = "nori";
  ObjectRef ref = RefOf(CreatePod(pod));
  std::string log;
  std::atomic<bool> ended{false};
  Status end_status;
  std::mutex mu;
  auto stream = client_->Open({"GET", PodPath(ref, "log") + "?follow=true"},
                              {.on_data =
                                   [&](std::string_view data) {
                                     std::lock_guard lock(mu);
                                     log.append(data);
                                   },
                               .on_end =
                                   [&](const Status& status) {
                                     std::lock_guard lock(mu);
                                     end_status = status;
                                     ended = true;
                                   }},
                              std::chrono::seconds(60));
  ASSERT_TRUE(Eventually([&] { return ended.load(); }));
  std::lock_guard lock(mu);
  EXPECT_TRUE(end_status.ok()) << end_status.message();
  EXPECT_EQ(log, "fake kubelet: started on node nori\nfake kubelet: exited with code 3 (Error)\n");
}

TEST_F(ClientTest, AuthenticatesByTokenFileOrClientCertificate) {
  Start();
  for (bool certificate : {false, true}) {
    SCOPED_TRACE(certificate ? "client certificate" : "tokenFile");
    auto file = process_->WriteKubeconfig(certificate);
    ASSERT_TRUE(file.ok());
    auto config = ResolveRestConfig({*file, ""}, Environment::Process());
    ASSERT_TRUE(config.ok()) << config.status().message();
    auto client = MakeClient({}, *config);
    auto nodes = client->Call({"GET", "/api/v1/nodes"});
    ASSERT_TRUE(nodes.ok()) << nodes.status().message();
    EXPECT_EQ(nodes->status, 200);
  }
  RestConfig wrong_token = process_->Config();
  wrong_token.token = "not-the-token";
  auto refused = MakeClient({}, wrong_token)->Call({"GET", "/api/v1/nodes"});
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(ApiError(*refused, "list").code(), StatusCode::kUnauthenticated);

  RestConfig wrong_ca = process_->Config();
  // A certificate that did not sign the server's.
  wrong_ca.ca_pem = model::ReadFile(process_->dir() + "/client.crt").value();
  auto untrusted = MakeClient({}, wrong_ca)->Call({"GET", "/api/v1/nodes"});
  ASSERT_FALSE(untrusted.ok());
  EXPECT_NE(untrusted.status().message().find("TLS handshake"), std::string::npos)
      << untrusted.status().message();
}

TEST(KeepFieldsDecoderTest, KeepsTheTypeTheNamesAndTheFieldsAskedForOutsideArrays) {
  const EventDecoder decode = KeepFieldsDecoder({"spec.nodeName", "status.phase"});
  const Json event = decode(
      R"({"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"p","namespace":"ns",)"
      R"("resourceVersion":"7","labels":{"name":"x"}},"spec":{"containers":[{"name":"c",)"
      R"("nodeName":"no"}],"nodeName":"n1"},"status":{"phase":"Running","conditions":[]}}})");
  EXPECT_EQ(event,
            Json::parse(R"({"type":"MODIFIED","object":{"metadata":{"name":"p",)"
                        R"("namespace":"ns","resourceVersion":"7"},"spec":{"nodeName":"n1"},)"
                        R"("status":{"phase":"Running"}}})"));
  const Json error = decode(R"({"type":"ERROR","object":{"kind":"Status","code":410}})");
  EXPECT_EQ(error, Json::parse(R"({"type":"ERROR","object":{"code":410}})"));
  EXPECT_TRUE(decode(R"({"type":"ADDED","object":)").is_discarded());
}

}  // namespace client_test
}  // namespace gpupool::kube
