// The scheduling loop's side of the backend contract beyond launching tasks: why pods stay
// pending (Backend::ReportUnschedulable) and pods handed in by others (HandedInPods, BindPods),
// against a recording backend over the simulated cluster.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "controller/testing/cpu_node.h"
#include "controller/testing/loop_fixture.h"

namespace gpupool::controller {
namespace scheduling_loop_handed_in_test {

using testing::CpuNode;

// The simulated cluster, plus what a cluster with an API server does: it records what it is
// told about pending pods, and has pods handed in that it binds when asked.
class RecordingBackend final : public testing::SimBackendBase {
 public:
  using SimBackendBase::SimBackendBase;

  std::string_view Kind() const override { return "recording"; }

  void ReportUnschedulable(const backend::Unschedulable& report) override {
    reports.push_back(report);
    reports.back().task_pod = nullptr;  // valid during the call only
  }
  std::vector<std::shared_ptr<const backend::HandedInPod>> HandedInPods() const override {
    return objects.empty() ? Shared(handed_in) : objects;
  }
  Status BindPods(const std::vector<backend::PodBinding>& gang) override {
    bind_calls.push_back(gang);
    for (const auto& binding : gang) {
      for (auto& pod : handed_in) {
        if (pod.ref.uid == binding.pod.uid) pod.pod.node_name = binding.node;
      }
    }
    return OkStatus();
  }
  Status Kill(std::string_view key) override {
    killed.emplace_back(key);
    return sim_.Kill(key);
  }

  std::vector<backend::Unschedulable> reports;
  std::vector<backend::HandedInPod> handed_in;
  // When set, handed in as these objects (the same from step to step, as the Kubernetes backend
  // hands in a pod that did not change) instead of copies of `handed_in`.
  std::vector<std::shared_ptr<const backend::HandedInPod>> objects;
  std::vector<std::vector<backend::PodBinding>> bind_calls;
  std::vector<std::string> killed;
};

backend::HandedInPod HandedIn(const std::string& name, const std::string& cpu,
                              model::Labels labels = {}, std::string unsupported = "") {
  backend::HandedInPod pod;
  pod.ref = {"team", name, "uid-" + name};
  pod.pod.name = name;
  pod.pod.namespace_ = "team";
  pod.pod.labels = std::move(labels);
  pod.pod.labels.emplace(scheduler::kQueueLabel, "default");
  pod.pod.requests = {{"cpu", model::Quantity::FromUnits(std::stoi(cpu))}};
  pod.unsupported = std::move(unsupported);
  return pod;
}

class HandedInTest : public testing::LoopFixture<RecordingBackend> {
 protected:
  void SetUp() override { Start({CpuNode("n1", "4"), CpuNode("n2", "4")}); }

  std::string Submit(const std::string& cpu) {
    return SubmitSpec("workflow:\n  name: w\n  resources:\n    default: {cpu: " + cpu +
                      ", memory: 1Gi, storage: 1Gi}\n  tasks:\n  - {name: a, image: busybox, "
                      "sim_duration: 1h}\n");
  }
};

// A task that fits nowhere is reported every cycle with the scheduler's reason (the backend
// writes only what changed); canceled, it is Kill'ed so that what the backend made for it goes.
TEST_F(HandedInTest, AnUnplaceableTaskIsReportedEveryCycleAndKilledWhenCanceled) {
  std::string id = Submit("4");  // with the 1-cpu sidecar: 5 cpu, on 4-cpu nodes
  Step();
  Step();
  ASSERT_EQ(backend_->reports.size(), 2u);
  const std::string key = id + "/a-group/a/0";
  for (const auto& report : backend_->reports) {
    EXPECT_EQ(report.task_key, key);
    EXPECT_NE(report.message.find("nodes are available"), std::string::npos) << report.message;
  }
  auto stored = store_->GetWorkflow(id);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->tasks[0].message, backend_->reports.back().message);
  EXPECT_TRUE(backend_->killed.empty());

  ASSERT_TRUE(service_->CancelWorkflow({"alice", {"osmo-admin"}, "test"}, id).ok());
  Step();
  EXPECT_EQ(backend_->killed, std::vector<std::string>{key});
  backend_->killed.clear();
  Step();
  EXPECT_TRUE(backend_->killed.empty()) << "killed once";
}

// Pods handed in join the cycle beside the tasks: one that fits is bound through BindPods; a
// gang is bound in one command or not at all; one gpupool cannot evaluate is reported with its
// message and never bound; bound ones use their node's room.
TEST_F(HandedInTest, PodsHandedInAreBoundAGangTogetherOrNotAtAll) {
  struct Case {
    std::string name;
    std::vector<backend::HandedInPod> pods;
    std::vector<size_t> bind_call_sizes;  // one BindPods per gang (or single pod)
    std::vector<std::string> reported;    // pods said to wait, by name
  };
  const model::Labels trio = {{scheduler::kGangLabel, "team/trio"},
                              {scheduler::kGangMinLabel, "3"}};
  const model::Labels pair = {{scheduler::kGangLabel, "team/pair"},
                              {scheduler::kGangMinLabel, "2"}};
  std::vector<Case> cases = {
      {"one pod fits", {HandedIn("p", "1")}, {1}, {}},
      {"a gang of two fits: one command",
       {HandedIn("a", "3", pair), HandedIn("b", "3", pair)},
       {2},
       {}},
      // Two 4-cpu nodes, three pods of 3 cpu: only two fit, so none is bound.
      {"a gang of three where two fit",
       {HandedIn("x", "3", trio), HandedIn("y", "3", trio), HandedIn("z", "3", trio)},
       {},
       {"x", "y", "z"}},
      // Two of a gang of three exist yet (pods handed in arrive one by one): they wait.
      {"a gang whose pods are not all there yet",
       {HandedIn("u", "1", trio), HandedIn("v", "1", trio)},
       {},
       {"u", "v"}},
      {"unsupported",
       {HandedIn("near", "1", {}, "gpupool does not evaluate required inter-pod affinity")},
       {},
       {"near"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    backend_->handed_in = c.pods;
    backend_->bind_calls.clear();
    backend_->reports.clear();
    Step();
    std::vector<size_t> sizes;
    for (const auto& call : backend_->bind_calls) sizes.push_back(call.size());
    EXPECT_EQ(sizes, c.bind_call_sizes);
    std::vector<std::string> reported;
    for (const auto& report : backend_->reports) {
      EXPECT_TRUE(report.task_key.empty());
      EXPECT_FALSE(report.message.empty());
      reported.push_back(report.pod.name);
    }
    std::sort(reported.begin(), reported.end());
    EXPECT_EQ(reported, c.reported);
    for (const auto& report : backend_->reports) {
      if (report.pod.name == "near") {
        EXPECT_NE(report.message.find("inter-pod affinity"), std::string::npos);
      }
    }
    // Bound now (the backend shows them bound): never bound again.
    backend_->bind_calls.clear();
    Step();
    EXPECT_TRUE(backend_->bind_calls.empty());
  }
}

// A pod handed in and bound holds its node's room: a task that needs it waits (the pods are
// non-preemptible here, so that the task cannot make room by preempting them:
// scheduling_loop_handed_in_victims_test.cc has them as victims).
TEST_F(HandedInTest, ABoundPodHandedInUsesItsNode) {
  auto big = [](const std::string& name, const std::string& node) {
    backend::HandedInPod pod = HandedIn(name, "4");
    pod.pod.node_name = node;
    pod.pod.priority = scheduler::kNonPreemptiblePriority;
    return pod;
  };
  backend_->handed_in = {big("on-n1", "n1"), big("on-n2", "n2")};
  std::string id = Submit("1");
  Step();
  auto stored = store_->GetWorkflow(id);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->tasks[0].status, "PENDING");
  EXPECT_NE(stored->tasks[0].message.find("Insufficient cpu"), std::string::npos)
      << stored->tasks[0].message;
  backend_->handed_in.pop_back();  // the pod on n2 is gone
  Step();
  stored = store_->GetWorkflow(id);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->tasks[0].status, "SCHEDULED");
  EXPECT_EQ(stored->tasks[0].node, "n2");
}

// Pods handed in as the same objects from step to step are taken over by the scheduler
// (ClusterSnapshot::pod_ids); pods that changed are read again, so the cycle decides from what
// they are now: n1's pod shrank and n2's grew, so the task fits on n1 only (on the pods as they
// were, n2 only).
TEST_F(HandedInTest, PodsHandedInThatChangedAreReadAgain) {
  auto bound = [](const std::string& name, const std::string& cpu, const std::string& node) {
    backend::HandedInPod pod = HandedIn(name, cpu);
    pod.pod.node_name = node;
    pod.pod.priority = scheduler::kNonPreemptiblePriority;
    return std::make_shared<const backend::HandedInPod>(std::move(pod));
  };
  backend_->objects = {bound("a", "3", "n1"), bound("b", "1", "n2")};
  Step();
  Step();
  backend_->objects = {bound("a", "1", "n1"), bound("b", "4", "n2")};
  std::string id = Submit("1");  // with the 1-cpu sidecar: 2 cpu
  Step();
  auto stored = store_->GetWorkflow(id);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->tasks[0].status, "SCHEDULED");
  EXPECT_EQ(stored->tasks[0].node, "n1");
}

// The ids the pods handed in take in the snapshot: one id names one content. An id is kept
// while the backend hands in the same object, raised or not as before, under the same cluster
// settings; a changed pod (a new object), a raised priority and new settings take ids never
// used before; ids grow along the backend's order; the tasks' pods are not tracked (0); the
// pods no longer handed in are forgotten.
TEST(HandedInMemoTest, AnIdNamesOneContentAndIdsGrowAlongTheOrder) {
  auto object = [](const std::string& name, const std::string& node) {
    backend::HandedInPod pod = HandedIn(name, "1");
    pod.pod.node_name = node;
    return std::make_shared<const backend::HandedInPod>(std::move(pod));
  };
  HandedInMemo memo;
  std::set<std::string> raised;  // HandedInKey of the pods entering non-preemptible
  auto protect = [&](const std::string& key) { return raised.contains(key); };
  int epoch = 0;  // the settings' version
  // id -> (object, raised, settings) it was given for.
  std::map<uint64_t, std::tuple<const void*, bool, int>> named;
  auto step = [&](const HandedInPods& pods, const scheduler::ClusterSettings& settings) {
    scheduler::ClusterSnapshot snapshot;
    snapshot.pods.push_back(model::PodScheduling{});  // a task's pod, before them
    snapshot.pods.back().name = "w.0";
    memo.BeginStep(settings);
    (void)AddHandedInPods(pods, {{"w.0", {0, 0}}}, protect, memo, snapshot);
    EXPECT_EQ(snapshot.pod_ids.size(), snapshot.pods.size());
    EXPECT_EQ(snapshot.pod_ids.size(), pods.size() + 1);
    if (snapshot.pod_ids.empty()) return snapshot.pod_ids;
    EXPECT_EQ(snapshot.pod_ids[0], 0u);
    for (size_t i = 1; i < snapshot.pod_ids.size(); ++i) {
      const uint64_t id = snapshot.pod_ids[i];
      EXPECT_GT(id, snapshot.pod_ids[i - 1]) << "at " << i;
      const auto& pod = *pods[i - 1];
      const bool up = snapshot.pods[i].priority == scheduler::kNonPreemptiblePriority;
      EXPECT_EQ(up, raised.contains(backend::HandedInKey(pod.ref)));
      auto it = named.try_emplace(id, &pod, up, epoch).first;
      EXPECT_EQ(it->second, std::make_tuple(static_cast<const void*>(&pod), up, epoch))
          << "id " << id << " named another pod, priority or settings";
    }
    return snapshot.pod_ids;
  };
  scheduler::ClusterSettings settings;
  auto a = object("a", "");
  auto b = object("b", "n1");
  auto c = object("c", "");
  const std::vector<uint64_t> first = step({a, b}, settings);
  EXPECT_EQ(step({a, b}, settings), first) << "the same objects keep their ids";
  auto b2 = object("b", "n2");  // b changed (bound elsewhere): a new object, the same pod
  const std::vector<uint64_t> changed = step({a, b2, c}, settings);
  EXPECT_EQ(changed[1], first[1]);
  EXPECT_NE(changed[2], first[2]);
  raised.insert(backend::HandedInKey(b2->ref));
  const std::vector<uint64_t> up = step({a, b2, c}, settings);
  EXPECT_EQ(up[1], changed[1]);
  EXPECT_NE(up[2], changed[2]);
  EXPECT_EQ(up[3], changed[3]);
  raised.clear();
  EXPECT_NE(step({a, b2, c}, settings)[2], up[2]);
  settings.node_pools = false;
  ++epoch;
  const std::vector<uint64_t> renewed = step({a, b2, c}, settings);
  for (size_t i = 1; i < renewed.size(); ++i) EXPECT_GT(renewed[i], up.back());
  EXPECT_EQ(step({a, b2, c}, settings), renewed);
  step({c}, settings);
  EXPECT_EQ(memo.size(), 1u) << "a and b forgotten";
  auto a_again = object("a", "");  // handed in again: a new object
  const std::vector<uint64_t> back = step({c, a_again}, settings);
  EXPECT_EQ(back[1], renewed[3]);
  EXPECT_GT(back[2], renewed.back());
}

}  // namespace scheduling_loop_handed_in_test
}  // namespace gpupool::controller
