// The fake API server's machine controller (fake_machines.h), through its API as gpupool uses
// it: the scale subresource of an OpenShift MachineSet and of a Cluster API MachineDeployment,
// the Machines and Nodes that follow, and deletion by annotation. Waits are for events, bounded
// (Eventually); no test asserts how long anything took.

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <mutex>
#include <thread>

#include "kube/api.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "kube/testing/fake_process.h"

namespace gpupool::kube {
namespace fake_machines_test {

using Json = nlohmann::ordered_json;
using std::chrono::milliseconds;

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

// One flavour of machine pool, as its cluster's API spells it.
struct Flavour {
  std::string name;
  std::string sets;      // the sets' collection in the test's namespace
  std::string machines;  // the Machines' collection there
  std::string owner_label;
  std::string delete_annotation;
  Json annotations;                                           // the set's scale-from-zero capacity
  Json want_capacity;                                         // the Node's, from them
  std::function<Json(const std::string& machine)> want_link;  // the Node's link annotations
};

constexpr char kNamespace[] = "pools";

std::vector<Flavour> Flavours() {
  const std::string ns = kNamespace;
  return {
      {"OpenShift MachineSet",
       "/apis/machine.openshift.io/v1beta1/namespaces/" + ns + "/machinesets",
       "/apis/machine.openshift.io/v1beta1/namespaces/" + ns + "/machines",
       "machine.openshift.io/cluster-api-machineset",
       "machine.openshift.io/delete-machine",
       {{"machine.openshift.io/vCPU", "16"},
        {"machine.openshift.io/memoryMb", "65536"},
        {"machine.openshift.io/GPU", "2"}},
       {{"ephemeral-storage", "300Gi"},
        {"cpu", "16"},
        {"memory", "65536Mi"},
        {"nvidia.com/gpu", "2"},
        {"pods", "110"}},
       [ns](const std::string& machine) {
         return Json{{"machine.openshift.io/machine", ns + "/" + machine}};
       }},
      {"Cluster API MachineDeployment",
       "/apis/cluster.x-k8s.io/v1beta1/namespaces/" + ns + "/machinedeployments",
       "/apis/cluster.x-k8s.io/v1beta1/namespaces/" + ns + "/machines",
       "cluster.x-k8s.io/deployment-name",
       "cluster.x-k8s.io/delete-machine",
       {{"capacity.cluster-autoscaler.kubernetes.io/cpu", "16"},
        {"capacity.cluster-autoscaler.kubernetes.io/memory", "64Gi"},
        {"capacity.cluster-autoscaler.kubernetes.io/gpu-count", "2"}},
       {{"ephemeral-storage", "300Gi"},
        {"cpu", "16"},
        {"memory", "64Gi"},
        {"nvidia.com/gpu", "2"},
        {"pods", "110"}},
       [ns](const std::string& machine) {
         return Json{{"cluster.x-k8s.io/machine", machine},
                     {"cluster.x-k8s.io/cluster-namespace", ns}};
       }},
  };
}

const Json kTaints =
    Json::array({{{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}}});

Json SetOf(const Flavour& flavour, const std::string& name) {
  return {{"metadata", {{"name", name}, {"annotations", flavour.annotations}}},
          {"spec",
           {{"replicas", 0},
            {"selector", {{"matchLabels", {{flavour.owner_label, name}}}}},
            {"template",
             {{"metadata", {{"labels", {{flavour.owner_label, name}}}}},
              {"spec",
               {{"metadata", {{"labels", {{"gpupool.io/pool", name}, {"gpu", "a100"}}}}},
                {"taints", kTaints}}}}}}}};
}

class FakeMachinesTest : public ::testing::Test {
 protected:
  void Start(std::vector<std::string> args) {
    fake::FakeProcessOptions options;
    options.binary = GPUPOOL_FAKE_APISERVER;
    options.cert_script = std::string(GPUPOOL_SOURCE_DIR) + "/src/kube/testing/make-test-certs.sh";
    options.args = std::move(args);
    auto process = fake::FakeApiServerProcess::Start(options);
    ASSERT_TRUE(process.ok()) << process.status().message();
    process_ = std::move(*process);
    auto client = Client::Create(process_->Config(), {.qps = -1});
    ASSERT_TRUE(client.ok()) << client.status().message();
    client_ = std::move(*client);
  }

  void TearDown() override {
    for (auto& informer : informers_) informer->Stop();
  }

  // Names of the objects a watch of `path` (with a label selector) saw ADDED and DELETED, in
  // order.
  struct Seen {
    std::mutex mu;
    std::vector<std::string> added, deleted;
  };
  Seen& Watch(const std::string& path, const std::string& selector) {
    Seen& seen = *seen_.emplace_back(std::make_unique<Seen>());
    auto name = [](const ObjectPtr& o) { return (*o)["metadata"]["name"].get<std::string>(); };
    InformerHandlers handlers;
    handlers.on_add = [&seen, name](const ObjectPtr& o) {
      std::lock_guard lock(seen.mu);
      seen.added.push_back(name(o));
    };
    handlers.on_delete = [&seen, name](const ObjectPtr& o) {
      std::lock_guard lock(seen.mu);
      seen.deleted.push_back(name(o));
    };
    InformerOptions options{.path = path, .label_selector = selector};
    options.backoff = {milliseconds(50), milliseconds(500), 2.0, 1.0};
    informers_.push_back(std::make_unique<Informer>(*client_, options, std::move(handlers)));
    informers_.back()->Start();
    EXPECT_TRUE(informers_.back()->WaitForSync(std::chrono::seconds(30)));
    return seen;
  }

  Json Get(const std::string& path) {
    auto response = client_->Call({"GET", path});
    EXPECT_TRUE(response.ok()) << response.status().message();
    return response.ok() && response->ok() ? response->Json() : Json();
  }

  // The items of a list, by label selector.
  Json Items(const std::string& path, const std::string& selector) {
    Json list = Get(path + "?labelSelector=" + QueryEscape(selector));
    return list.contains("items") ? list["items"] : Json::array();
  }

  void Scale(const Flavour& flavour, const std::string& set, int replicas) {
    auto scaled = client_->Call({"PATCH", flavour.sets + "/" + set + "/scale",
                                 Json{{"spec", {{"replicas", replicas}}}}.dump(),
                                 "application/merge-patch+json"});
    ASSERT_TRUE(scaled.ok() && scaled->ok()) << (scaled.ok() ? scaled->body : "");
  }

  // Waits until the set has `replicas` Machines, each with a Ready Node, and its status says so.
  bool Settled(const Flavour& flavour, const std::string& set, int replicas) {
    return Eventually([&] {
      Json machines = Items(flavour.machines, flavour.owner_label + "=" + set);
      if (machines.size() != static_cast<size_t>(replicas)) return false;
      for (const Json& machine : machines) {
        if (machine["status"].value("phase", "") != "Running") return false;
      }
      Json status = Get(flavour.sets + "/" + set)["status"];
      return status.value("replicas", -1) == replicas &&
             status.value("readyReplicas", -1) == replicas;
    });
  }

  std::unique_ptr<fake::FakeApiServerProcess> process_;
  std::unique_ptr<Client> client_;
  std::vector<std::unique_ptr<Seen>> seen_;  // outlive the informers that fill them
  std::vector<std::unique_ptr<Informer>> informers_;
};

std::vector<std::string> Names(const Json& items) {
  std::vector<std::string> names;
  for (const Json& item : items) names.push_back(item["metadata"]["name"].get<std::string>());
  return names;
}

bool IsReady(const Json& node) {
  for (const Json& condition : node["status"]["conditions"]) {
    if (condition["type"] == "Ready") return condition["status"] == "True";
  }
  return false;
}

TEST_F(FakeMachinesTest, ScaleMakesMachinesAndNodesAndDeletesTheAnnotatedFirst) {
  Start({"--machine-provision-delay-ms", "200"});
  const std::vector<Flavour> flavours = Flavours();
  for (size_t i = 0; i < flavours.size(); ++i) {
    const Flavour& flavour = flavours[i];
    SCOPED_TRACE(flavour.name);
    const std::string set = "gpu-" + std::to_string(i);
    const std::string of_set = flavour.owner_label + "=" + set;
    Seen& nodes = Watch("/api/v1/nodes", "gpupool.io/pool=" + set);
    Seen& machines = Watch(flavour.machines, of_set);
    auto created = CreateObject(*client_, flavour.sets, SetOf(flavour, set));
    ASSERT_TRUE(created.ok()) << created.status().message();

    Scale(flavour, set, 2);
    ASSERT_TRUE(Settled(flavour, set, 2));
    for (const Json& machine : Items(flavour.machines, of_set)) {
      const std::string name = machine["metadata"]["name"].get<std::string>();
      SCOPED_TRACE(name);
      EXPECT_TRUE(name.starts_with(set + "-"));
      EXPECT_EQ(machine["metadata"]["ownerReferences"][0]["name"], set);
      EXPECT_EQ(machine["status"]["nodeRef"]["kind"], "Node");
      EXPECT_EQ(machine["status"]["nodeRef"]["name"], name);
      Json node = Get("/api/v1/nodes/" + name);
      const Json& labels = node["metadata"]["labels"];
      EXPECT_EQ(labels["gpupool.io/pool"], set);
      EXPECT_EQ(labels["gpu"], "a100");
      EXPECT_EQ(labels["kubernetes.io/hostname"], name);
      EXPECT_EQ(node["spec"]["taints"], kTaints);
      EXPECT_EQ(node["status"]["capacity"], flavour.want_capacity);
      EXPECT_EQ(node["status"]["allocatable"], flavour.want_capacity);
      EXPECT_TRUE(IsReady(node));
      const Json link = flavour.want_link(name);
      for (const auto& [key, value] : link.items()) {
        EXPECT_EQ(node["metadata"]["annotations"][key], value) << key;
      }
    }
    std::vector<std::string> order;  // the Machines as they were made
    {
      std::lock_guard lock(machines.mu);
      order = machines.added;
    }
    ASSERT_EQ(order.size(), 2u);
    const std::string older = order[0], newer = order[1];

    // 2 -> 1 with the older annotated for deletion: it goes with its Node, not the newer.
    Json annotate = {{"metadata", {{"annotations", {{flavour.delete_annotation, "true"}}}}}};
    auto annotated = client_->Call(
        {"PATCH", flavour.machines + "/" + older, annotate.dump(), "application/merge-patch+json"});
    ASSERT_TRUE(annotated.ok() && annotated->ok()) << (annotated.ok() ? annotated->body : "");
    Scale(flavour, set, 1);
    ASSERT_TRUE(Settled(flavour, set, 1));
    EXPECT_EQ(Names(Items(flavour.machines, of_set)), std::vector<std::string>{newer});
    EXPECT_EQ(client_->Call({"GET", "/api/v1/nodes/" + older})->status, 404);
    EXPECT_TRUE(IsReady(Get("/api/v1/nodes/" + newer)));

    // 1 -> 0 without annotation: the rest goes.
    Scale(flavour, set, 0);
    ASSERT_TRUE(Settled(flavour, set, 0));
    EXPECT_EQ(client_->Call({"GET", "/api/v1/nodes/" + newer})->status, 404);
    ASSERT_TRUE(Eventually([&] {
      std::lock_guard lock(nodes.mu);
      return nodes.deleted.size() == 2;
    }));
    std::lock_guard lock(nodes.mu);
    std::vector<std::string> added = nodes.added;
    std::sort(added.begin(), added.end());
    std::vector<std::string> made = order;
    std::sort(made.begin(), made.end());
    EXPECT_EQ(added, made);
    EXPECT_EQ(nodes.deleted, (std::vector<std::string>{older, newer}));
  }
}

TEST_F(FakeMachinesTest, TheNewestGoesFirstAndADeletedMachineTakesItsNodeAndPods) {
  Start({"--machine-provision-delay-ms", "0"});
  const std::vector<Flavour> flavours = Flavours();
  for (size_t i = 0; i < flavours.size(); ++i) {
    const Flavour& flavour = flavours[i];
    SCOPED_TRACE(flavour.name);
    const std::string set = "cpu-" + std::to_string(i);
    const std::string of_set = flavour.owner_label + "=" + set;
    ASSERT_TRUE(CreateObject(*client_, flavour.sets, SetOf(flavour, set)).ok());
    Scale(flavour, set, 1);
    ASSERT_TRUE(Settled(flavour, set, 1));
    const std::string first = Names(Items(flavour.machines, of_set)).at(0);
    Scale(flavour, set, 2);
    ASSERT_TRUE(Settled(flavour, set, 2));
    std::vector<std::string> both = Names(Items(flavour.machines, of_set));
    const std::string second = both.at(both[0] == first ? 1 : 0);

    Scale(flavour, set, 1);
    ASSERT_TRUE(Settled(flavour, set, 1));
    EXPECT_EQ(Names(Items(flavour.machines, of_set)), std::vector<std::string>{first});
    EXPECT_EQ(client_->Call({"GET", "/api/v1/nodes/" + second})->status, 404);

    // A pod on the first Machine's Node; a client deletes that Machine: its Node and the pod go
    // (as the pod garbage collector deletes them), and a new Machine takes its place.
    const std::string pods = std::string("/api/v1/namespaces/") + kNamespace + "/pods";
    Json pod = {{"metadata", {{"name", "on-" + first}}},
                {"spec",
                 {{"nodeName", first},
                  {"containers", Json::array({{{"name", "main"}, {"image", "busybox"}}})}}}};
    ASSERT_TRUE(CreateObject(*client_, pods, pod).ok());
    auto deleted = client_->Call({"DELETE", flavour.machines + "/" + first});
    ASSERT_TRUE(deleted.ok() && deleted->ok()) << (deleted.ok() ? deleted->body : "");
    EXPECT_TRUE(Eventually([&] {
      return client_->Call({"GET", "/api/v1/nodes/" + first})->status == 404;
    }));
    EXPECT_TRUE(Eventually([&] {
      return client_->Call({"GET", pods + "/on-" + first})->status == 404;
    }));
    ASSERT_TRUE(Settled(flavour, set, 1));
    std::vector<std::string> now = Names(Items(flavour.machines, of_set));
    ASSERT_EQ(now.size(), 1u);
    EXPECT_NE(now[0], first);
    EXPECT_TRUE(IsReady(Get("/api/v1/nodes/" + now[0])));
  }
}

TEST_F(FakeMachinesTest, ANegativeProvisionDelayIsRefused) {
  fake::FakeProcessOptions options;
  options.binary = GPUPOOL_FAKE_APISERVER;
  options.cert_script = std::string(GPUPOOL_SOURCE_DIR) + "/src/kube/testing/make-test-certs.sh";
  options.args = {"--machine-provision-delay-ms", "-1"};
  auto process = fake::FakeApiServerProcess::Start(options);
  ASSERT_FALSE(process.ok());
  EXPECT_NE(process.status().message().find("exited at start"), std::string::npos)
      << process.status().message();
}

}  // namespace fake_machines_test
}  // namespace gpupool::kube
