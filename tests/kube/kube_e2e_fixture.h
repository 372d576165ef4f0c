#pragma once
// The end-to-end fixture of gpupool on a Kubernetes API server: the fake API server (with its
// simulated kubelets, seeded with real node objects from data/, authorizing by the deployment's
// ClusterRole) and the real `gpupool-serve --backend kubernetes`, both child processes on free
// loopback ports; helpers to submit, read pods and conditions, and wait (bounded polls).

#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "kube/client.h"
#include "kube/testing/fake_process.h"
#include "model/input_file.h"
#include "scheduler/scheduler.h"
#include "serve_process.h"

namespace gpupool::kube_e2e {

using Json = nlohmann::ordered_json;
constexpr char kAdmin[] = "Bearer dev:kube-e2e:osmo-admin";

class KubernetesBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kube::fake::FakeProcessOptions options;
    options.binary = GPUPOOL_FAKE_APISERVER;
    options.cert_script = std::string(GPUPOOL_SOURCE_DIR) + "/src/kube/testing/make-test-certs.sh";
    std::string data = std::string(GPUPOOL_SOURCE_DIR) + "/data/";
    // Real node objects: two GPU nodes (the samples' other files are the same A100 node in other
    // MIG layouts) and the four of edgexr.
    const std::string samples = data + "runai-fake-gpu-operator-samples/nodes/";
    options.args = {"--nodes", samples + "t4x2_fraction_1_workload.yaml", "--nodes",
                    samples + "a100-40gb_mig_7g-40gb.yaml", "--nodes",
                    data + "edgexr-k8s-node-json", "--kubelet", "--kubelet-run-ms", "300",
                    // Every request answered as the deployment's ClusterRole allows it.
                    "--rbac",
                    std::string(GPUPOOL_SOURCE_DIR) + "/deploy/kubernetes/clusterrole.yaml"};
    auto fake = kube::fake::FakeApiServerProcess::Start(options);
    ASSERT_TRUE(fake.ok()) << fake.status().message();
    fake_ = std::move(*fake);
    auto kubeconfig = fake_->WriteKubeconfig(/*client_certificate=*/false);
    ASSERT_TRUE(kubeconfig.ok());
    auto client = kube::Client::Create(fake_->Config(), {.qps = -1});
    ASSERT_TRUE(client.ok());
    kube_ = std::move(*client);
    serve_args_ = {"serve", "--listen", "127.0.0.1:0", "--db",
                   "sqlite:" + fake_->dir() + "/gpupool.db", "--auth", "dev", "--backend",
                   "kubernetes", "--kubeconfig", *kubeconfig, "--interval", "50ms", "--lease-ttl",
                   "2s", "--kube-qps", "200", "--kube-burst", "400", "--node-sync", "100ms",
                   // A pod left pending gets its FailedScheduling Event counted again this often.
                   "--kube-event-repeat", "200ms",
                   // A victim whose eviction a PodDisruptionBudget refused is asked again after.
                   "--eviction-backoff", "1s"};
    StartServe();
  }

  // Nothing the backend asked for was refused by the deployment's ClusterRole.
  void TearDown() override {
    if (!kube_) return;
    auto stats = kube_->Call({"GET", "/_fake/stats"});
    ASSERT_TRUE(stats.ok() && stats->ok());
    EXPECT_EQ(stats->Json()["denied"], provoked_denials_)
        << "requests deploy/kubernetes/clusterrole.yaml does not grant";
    EXPECT_FALSE(stats->Json()["requests"].empty());
  }

  void StartServe() {
    serve_.reset();
    serve_ = std::make_unique<ServeProcess>(fake_->dir(), serve_args_);
    ASSERT_GT(serve_->port(), 0) << serve_->Log();
    http_ = std::make_unique<httplib::Client>("127.0.0.1", serve_->port());
    http_->set_default_headers({{"Authorization", kAdmin}});
    http_->set_read_timeout(30);
  }

  Json FakeRequests() {
    auto stats = kube_->Call({"GET", "/_fake/stats"});
    EXPECT_TRUE(stats.ok());
    return stats.ok() ? stats->Json()["requests"] : Json();
  }

  std::string Submit(const std::string& yaml) {
    auto res = http_->Post("/api/pool/default/workflow", yaml, "application/yaml");
    EXPECT_TRUE(res && res->status == 200) << (res ? res->body : "no answer") << serve_->Log();
    return res && res->status == 200 ? Json::parse(res->body)["workflow_id"].get<std::string>()
                                     : "";
  }

  // The workflow once its status is one of `ends`.
  Json WaitFor(const std::string& id, const std::set<std::string>& ends) {
    Json workflow;
    bool ended = Eventually([&] {
      auto res = http_->Get("/api/workflow/" + id);
      if (!res || res->status != 200) return false;
      workflow = Json::parse(res->body);
      return ends.contains(workflow["status"].get<std::string>());
    });
    EXPECT_TRUE(ended) << workflow.dump(2) << "\n" << serve_->Log();
    return workflow;
  }

  Json Pods() {
    auto res = kube_->Call({"GET", "/api/v1/namespaces/gpupool/pods"});
    EXPECT_TRUE(res.ok() && res->ok());
    return res.ok() ? res->Json()["items"] : Json::array();
  }

  // The pod's condition of `type` ({} when it has none).
  static Json Condition(const Json& pod, const std::string& type) {
    if (!pod.is_object()) return Json::object();
    const Json conditions = pod.value("/status/conditions"_json_pointer, Json::array());
    for (const Json& condition : conditions) {
      if (condition.is_object() && condition.value("type", "") == type) return condition;
    }
    return Json::object();
  }

  // The Events about pod `name` with `reason` (the test hook reads them: the role does not).
  Json EventsAbout(const std::string& name, const std::string& reason) {
    auto res = kube_->Call({"GET", "/_fake/events"});
    EXPECT_TRUE(res.ok() && res->ok());
    Json out = Json::array();
    if (!res.ok() || !res->ok()) return out;
    const Json listed = res->Json();
    for (const Json& event : listed["items"]) {
      if (event.value("/involvedObject/name"_json_pointer, "") == name &&
          event.value("reason", "") == reason)
        out.push_back(event);
    }
    return out;
  }

  // Creates a pod in namespace `ns` as anyone would (kubectl, a Job), handed to gpupool by
  // spec.schedulerName.
  Json CreateHandedInPod(const std::string& ns, const std::string& name, const Json& requests,
                         const Json& labels = Json::object(), const Json& spec_extra = {}) {
    Json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", name},
          {"labels", labels},
          {"annotations", {{"fake.gpupool.io/run-ms", "3600000"}}}}},
        {"spec",
         {{"schedulerName", "gpupool"},
          {"containers",
           {{{"name", "c"}, {"image", "busybox"}, {"resources", {{"requests", requests}}}}}}}}};
    if (spec_extra.is_object()) pod["spec"].update(spec_extra);
    auto created = kube_->Call({"POST", "/api/v1/namespaces/" + ns + "/pods", pod.dump()});
    EXPECT_TRUE(created.ok() && created->ok()) << (created.ok() ? created->body : "");
    return created.ok() && created->ok() ? created->Json() : Json();
  }

  // An API request as the cluster's administrator (outside the role under test).
  void AsAdmin(const std::string& method, const std::string& path, const Json& body = nullptr) {
    Json request = {{"method", method}, {"path", path}};
    if (!body.is_null()) request["body"] = body;
    auto res = kube_->Call({"POST", "/_fake/admin", request.dump()});
    ASSERT_TRUE(res.ok() && res->ok()) << (res.ok() ? res->body : res.status().message());
  }

  // The workflow's first task once `pred` holds for it.
  Json WaitTask(const std::string& id, const std::function<bool(const Json&)>& pred) {
    Json workflow;
    bool held = Eventually([&] {
      auto res = http_->Get("/api/workflow/" + id);
      if (!res || res->status != 200) return false;
      workflow = Json::parse(res->body);
      return pred(workflow["tasks"][0]);
    });
    EXPECT_TRUE(held) << workflow.dump(2) << "\n" << serve_->Log();
    return held ? workflow["tasks"][0] : Json();
  }

  Json GetPod(const std::string& ns, const std::string& name) {
    auto res = kube_->Call({"GET", "/api/v1/namespaces/" + ns + "/pods/" + name});
    return res.ok() && res->ok() ? res->Json() : Json();
  }

  // The pod once it carries PodScheduled=False (gpupool said why), else null.
  Json WaitUnschedulable(const std::string& ns, const std::string& name) {
    Json pod;
    bool said = Eventually([&] {
      pod = GetPod(ns, name);
      return Condition(pod, "PodScheduled").value("reason", "") == "Unschedulable";
    });
    EXPECT_TRUE(said) << pod.dump(2) << serve_->Log();
    return said ? pod : Json();
  }

  std::unique_ptr<kube::fake::FakeApiServerProcess> fake_;
  Json provoked_denials_ = Json::object();  // refusals a test asked for
  std::unique_ptr<kube::Client> kube_;
  std::vector<std::string> serve_args_;
  std::unique_ptr<ServeProcess> serve_;
  std::unique_ptr<httplib::Client> http_;
};

}  // namespace gpupool::kube_e2e
