// gpupool on a Kubernetes API server, end to end: the fake API server (with its simulated
// kubelets, seeded with real node objects from data/) and the real `gpupool-serve --backend
// kubernetes`, both child processes on free loopback ports. A workflow submitted to gpupool
// becomes pods gpupool creates in the pool's namespace with schedulerName gpupool and the
// gpupool.io labels, binds through pods/binding, and the kubelets run; the workflow ends as its
// pods end (exit codes included). Waits are bounded polls for states; nothing is timed.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include "kube/client.h"
#include "kube/testing/fake_process.h"
#include "model/json_io.h"
#include "scheduler/scheduler.h"

extern char** environ;

namespace gpupool {
namespace {

using Json = nlohmann::ordered_json;
constexpr char kAdmin[] = "Bearer dev:kube-e2e:osmo-admin";

template <typename Condition>
bool Eventually(Condition condition, std::chrono::seconds bound = std::chrono::seconds(90)) {
  auto deadline = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return condition();
}

// `gpupool-serve` as a child process; its port from the line it prints once listening.
class ServeProcess {
 public:
  ServeProcess(const std::string& dir, std::vector<std::string> args) : log_(dir + "/serve.log") {
    args.insert(args.begin(), GPUPOOL_SERVE_BINARY);
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    Eventually(
        [&] {
          auto text = model::ReadFile(log_);
          std::smatch match;
          if (text.ok() && std::regex_search(*text, match, listening)) port_ = std::stoi(match[1]);
          return port_ > 0 || waitpid(pid_, nullptr, WNOHANG) == pid_;
        },
        std::chrono::seconds(60));
  }
  ~ServeProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }
  std::string Log() const { return model::ReadFile(log_).value(); }
  void Kill9() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

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
    serve_args_ = {"serve",
                   "--listen",
                   "127.0.0.1:0",
                   "--db",
                   "sqlite:" + fake_->dir() + "/gpupool.db",
                   "--auth",
                   "dev",
                   "--backend",
                   "kubernetes",
                   "--kubeconfig",
                   *kubeconfig,
                   "--interval",
                   "50ms",
                   "--lease-ttl",
                   "2s",
                   "--kube-qps",
                   "200",
                   "--kube-burst",
                   "400",
                   "--node-sync",
                   "100ms"};
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

  std::unique_ptr<kube::fake::FakeApiServerProcess> fake_;
  Json provoked_denials_ = Json::object();  // refusals a test asked for
  std::unique_ptr<kube::Client> kube_;
  std::vector<std::string> serve_args_;
  std::unique_ptr<ServeProcess> serve_;
  std::unique_ptr<httplib::Client> http_;
};

TEST_F(KubernetesBackendTest, AWorkflowBecomesPodsGpupoolCreatesBindsAndSeesEnd) {
  std::string id = Submit(R"(workflow:
  name: train
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi}
  groups:
  - name: g
    tasks:
    - {name: a, image: busybox, sim_duration: 1s}
    - {name: b, image: busybox, sim_duration: 1s}
)");
  ASSERT_FALSE(id.empty());
  Json workflow = WaitFor(id, {"COMPLETED", "FAILED", "CANCELED"});
  EXPECT_EQ(workflow["status"], "COMPLETED");
  std::map<std::string, std::string> task_nodes;
  for (const Json& task : workflow["tasks"]) {
    EXPECT_EQ(task["status"], "COMPLETED");
    EXPECT_EQ(task["exit_code"], 0);
    task_nodes[task["name"].get<std::string>()] = task["node"].get<std::string>();
  }
  ASSERT_EQ(task_nodes.size(), 2u);

  Json pods = Pods();
  ASSERT_EQ(pods.size(), 2u);
  for (const Json& pod : pods) {
    const Json& labels = pod["metadata"]["labels"];
    EXPECT_EQ(pod["spec"]["schedulerName"], "gpupool");
    EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
    EXPECT_EQ(labels["app.kubernetes.io/managed-by"], "gpupool");
    EXPECT_EQ(labels["gpupool.io/workflow"], id);
    EXPECT_EQ(labels[scheduler::kQueueLabel], "default");
    EXPECT_TRUE(labels.contains(scheduler::kGangLabel));
    std::string task = labels["gpupool.io/task"].get<std::string>();
    EXPECT_EQ(pod["spec"]["nodeName"], task_nodes[task]) << "bound where gpupool decided";
    EXPECT_EQ(pod["metadata"]["annotations"]["gpupool.io/attempt"], id + "/g/" + task + "/0");
    EXPECT_EQ(pod["status"]["phase"], "Succeeded");
    EXPECT_EQ(pod["status"]["conditions"][0]["type"], "PodScheduled");
  }
  // Bound through the binding subresource, once per pod.
  Json requests = FakeRequests();
  EXPECT_EQ(requests["create pods/binding"], 2);
  EXPECT_EQ(requests["create pods"], 2);

  // The role is enforced: what it does not grant is refused as kube-apiserver refuses it.
  auto patched = kube_->Call({"PATCH", "/api/v1/nodes/nori", R"({"spec":{"unschedulable":true}})",
                              "application/merge-patch+json"});
  ASSERT_TRUE(patched.ok());
  EXPECT_EQ(patched->status, 403);
  EXPECT_NE(patched->body.find(R"(cannot patch resource \"nodes\")"), std::string::npos)
      << patched->body;
  provoked_denials_ = {{"patch nodes", 1}};
}

TEST_F(KubernetesBackendTest, APodsExitCodeFailsItsTask) {
  std::string id = Submit(R"(workflow:
  name: broken
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi}
  tasks:
  - {name: t, image: busybox, sim_duration: 1s, sim_exit_code: 3}
)");
  ASSERT_FALSE(id.empty());
  Json workflow = WaitFor(id, {"COMPLETED", "FAILED", "CANCELED"});
  EXPECT_EQ(workflow["status"], "FAILED");
  EXPECT_EQ(workflow["tasks"][0]["exit_code"], 3);
  Json pods = Pods();
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0]["status"]["phase"], "Failed");
  EXPECT_EQ(pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 3);
}

TEST_F(KubernetesBackendTest, CancelDeletesThePod) {
  std::string id = Submit(R"(workflow:
  name: long
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi}
  tasks:
  - {name: t, image: busybox, sim_duration: 1h}
)");
  ASSERT_FALSE(id.empty());
  WaitFor(id, {"RUNNING"});
  ASSERT_TRUE(Eventually([&] {
    Json pods = Pods();
    return pods.size() == 1 && pods[0]["status"]["phase"] == "Running";
  }));
  auto canceled = http_->Post("/api/workflow/" + id + "/cancel", "", "application/json");
  ASSERT_TRUE(canceled && canceled->status == 200) << (canceled ? canceled->body : "");
  WaitFor(id, {"CANCELED"});
  EXPECT_TRUE(Eventually([&] { return Pods().empty(); })) << Pods().dump(2);
}

// Pods gpupool did not create use their nodes: while another scheduler's pods hold every GPU, a
// GPU task waits with the scheduler's reason; when one node's GPU is given back, it runs there.
TEST_F(KubernetesBackendTest, OtherSchedulersPodsUseTheirNodesCapacity) {
  auto listed = kube_->Call({"GET", "/api/v1/nodes"});
  ASSERT_TRUE(listed.ok() && listed->ok());
  std::map<std::string, std::string> gpu_pods;  // node -> the other pod holding its GPUs
  const Json nodes = listed->Json();
  for (const Json& node : nodes["items"]) {
    const Json& allocatable = node["status"]["allocatable"];
    std::string gpus = allocatable.value("nvidia.com/gpu", "0");
    if (gpus == "0") continue;
    std::string name = node["metadata"]["name"].get<std::string>();
    Json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", "holder-" + std::to_string(gpu_pods.size())},
          {"annotations", {{"fake.gpupool.io/run-ms", "3600000"}}}}},
        {"spec",
         {{"nodeName", name},  // placed as a DaemonSet's pods are, or by another scheduler
          {"containers",
           {{{"name", "c"},
             {"image", "busybox"},
             {"resources", {{"requests", {{"nvidia.com/gpu", gpus}, {"cpu", "100m"}}}}}}}}}}};
    auto created = kube_->Call({"POST", "/api/v1/namespaces/others/pods", pod.dump()});
    ASSERT_TRUE(created.ok() && created->ok()) << (created.ok() ? created->body : "");
    gpu_pods[name] = pod["metadata"]["name"].get<std::string>();
  }
  ASSERT_GE(gpu_pods.size(), 2u) << "the T4 node and nori have GPUs";

  // gpupool's nodes show what the others take.
  auto gpupool_gpus = [&](const std::string& node) -> std::string {
    auto res = http_->Get("/api/nodes");
    if (!res || res->status != 200) return "";
    const Json list = Json::parse(res->body);
    for (const Json& item : list["items"]) {
      if (item["metadata"]["name"] == node) {
        return item["status"]["allocatable"].value("nvidia.com/gpu", "");
      }
    }
    return "";
  };
  for (const auto& entry : gpu_pods) {
    const std::string& node = entry.first;  // clang 14 cannot capture a structured binding
    EXPECT_TRUE(Eventually([&] { return gpupool_gpus(node) == "0"; })) << node;
  }

  std::string id = Submit(R"(workflow:
  name: gpu
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi, gpu: 1}
  tasks:
  - {name: t, image: busybox, sim_duration: 1s}
)");
  ASSERT_FALSE(id.empty());
  Json workflow;
  ASSERT_TRUE(Eventually([&] {
    auto res = http_->Get("/api/workflow/" + id);
    if (!res || res->status != 200) return false;
    workflow = Json::parse(res->body);
    return workflow["tasks"][0].value("message", "").find("nvidia.com/gpu") != std::string::npos;
  })) << workflow.dump(2);
  EXPECT_EQ(workflow["tasks"][0]["status"], "PENDING") << workflow.dump(2);
  EXPECT_TRUE(Pods().empty()) << "nothing created for a task that does not fit";

  // nori's GPU is given back: the task runs there.
  ASSERT_TRUE(gpu_pods.contains("nori"));
  auto deleted = kube_->Call({"DELETE", "/api/v1/namespaces/others/pods/" + gpu_pods["nori"],
                              R"({"gracePeriodSeconds": 0})"});
  ASSERT_TRUE(deleted.ok() && deleted->ok());
  Json done = WaitFor(id, {"COMPLETED", "FAILED", "CANCELED"});
  EXPECT_EQ(done["status"], "COMPLETED") << done.dump(2);
  EXPECT_EQ(done["tasks"][0]["node"], "nori");
}

// kill -9 of gpupool while its task runs: the restarted server re-adopts the pod from the
// cluster (one pod, one binding) and sees the task end; a pod deleted while gpupool was down
// ends its task lost rather than starting it again.
TEST_F(KubernetesBackendTest, ARestartedServerAdoptsWhatRunsAndNeverStartsItTwice) {
  const std::string spec = R"(workflow:
  name: NAME
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi}
  tasks:
  - {name: t, image: busybox, sim_duration: DURATION}
)";
  auto workflow = [&](const std::string& name, const std::string& duration) {
    return std::regex_replace(std::regex_replace(spec, std::regex("NAME"), name),
                              std::regex("DURATION"), duration);
  };
  std::string kept = Submit(workflow("kept", "4s"));
  std::string lost = Submit(workflow("lost", "1h"));
  ASSERT_FALSE(kept.empty() || lost.empty());
  WaitFor(kept, {"RUNNING"});
  WaitFor(lost, {"RUNNING"});
  ASSERT_TRUE(Eventually([&] { return Pods().size() == 2; }));
  serve_->Kill9();
  std::string lost_pod;
  for (const Json& pod : Pods()) {
    if (pod["metadata"]["labels"]["gpupool.io/workflow"] == lost) {
      lost_pod = pod["metadata"]["name"].get<std::string>();
    }
  }
  ASSERT_FALSE(lost_pod.empty());
  auto deleted = kube_->Call(
      {"DELETE", "/api/v1/namespaces/gpupool/pods/" + lost_pod, R"({"gracePeriodSeconds": 0})"});
  ASSERT_TRUE(deleted.ok() && deleted->ok());
  StartServe();

  Json done = WaitFor(kept, {"COMPLETED", "FAILED", "CANCELED"});
  EXPECT_EQ(done["status"], "COMPLETED") << done.dump(2);
  Json gone = WaitFor(lost, {"COMPLETED", "FAILED", "CANCELED"});
  EXPECT_EQ(gone["status"], "FAILED");
  EXPECT_NE(gone["tasks"][0]["message"].get<std::string>().find("lost"), std::string::npos)
      << gone.dump(2);
  Json requests = FakeRequests();
  EXPECT_EQ(requests["create pods"], 2);  // nothing created again
  EXPECT_EQ(requests["create pods/binding"], 2);
  EXPECT_EQ(Pods().size(), 1u);
}

}  // namespace
}  // namespace gpupool
