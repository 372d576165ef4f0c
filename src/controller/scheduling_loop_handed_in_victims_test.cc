// Bound pods handed in as victims of reclaim and preemption, the loop's side: chosen by the
// scheduler's rules as tasks are (over-quota, priority, a gang whole, never below deserved),
// evicted through Backend::Evict with nothing to requeue, the room they leave taken once they are
// gone; a refusal leaves them running and no victim for a while; the cluster's
// PodDisruptionBudgets (Backend::DisruptionBudgets) steer the choice before any eviction is asked.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>

#include "controller/testing/cpu_node.h"
#include "controller/testing/loop_fixture.h"

namespace gpupool::controller {
namespace scheduling_loop_handed_in_victims_test {

using testing::CpuNode;

// The simulated cluster with pods handed in, whose evictions the test carries out or refuses.
class VictimBackend final : public testing::SimBackendBase {
 public:
  using SimBackendBase::SimBackendBase;

  std::string_view Kind() const override { return "victims"; }
  std::vector<std::shared_ptr<const backend::HandedInPod>> HandedInPods() const override {
    return Shared(handed_in);
  }
  Status BindPods(const std::vector<backend::PodBinding>& gang) override {
    for (const auto& binding : gang) {
      for (auto& pod : handed_in) {
        if (pod.ref.uid == binding.pod.uid) pod.pod.node_name = binding.node;
      }
    }
    return OkStatus();
  }
  backend::EvictionStart Evict(const backend::TaskEviction& eviction) override {
    asked.push_back(eviction);
    return backend::EvictionStart::kInFlight;
  }
  std::vector<backend::RefusedEviction> RefusedEvictions() override {
    return std::exchange(refused, {});
  }
  std::vector<backend::ClusterDisruptionBudget> DisruptionBudgets() const override {
    return budgets;
  }

  // The cluster carried out the evictions asked: those pods are gone.
  void EvictAsked() {
    std::set<std::string> gone;
    for (const auto& eviction : asked) gone.insert(eviction.pod.uid);
    std::erase_if(handed_in, [&](const auto& pod) { return gone.contains(pod.ref.uid); });
  }
  std::string NodeOf(const std::string& name) const {
    for (const auto& pod : handed_in) {
      if (pod.ref.name == name) return pod.pod.node_name;
    }
    return "";
  }

  std::vector<backend::HandedInPod> handed_in;
  std::vector<backend::TaskEviction> asked;
  std::vector<backend::RefusedEviction> refused;
  std::vector<backend::ClusterDisruptionBudget> budgets;
};

// A 4-cpu pod of `queue` handed in, bound to `node` ("" = pending).
backend::HandedInPod Pod(const std::string& name, const std::string& queue, const std::string& node,
                         int32_t priority = 0, const std::string& gang = "") {
  backend::HandedInPod pod;
  pod.ref = {"team", name, "uid-" + name};
  pod.pod.name = name;
  pod.pod.namespace_ = "team";
  pod.pod.labels = {{scheduler::kQueueLabel, queue}};
  if (!gang.empty()) {
    pod.pod.labels[scheduler::kGangLabel] = "team/" + gang;
    pod.pod.labels[scheduler::kGangMinLabel] = "2";
  }
  pod.pod.priority = priority;
  pod.pod.node_name = node;
  pod.pod.requests = {{"cpu", model::Quantity::FromUnits(4)}};
  return pod;
}

class HandedInVictimsTest : public testing::LoopFixture<VictimBackend> {
 protected:
  // Two 4-cpu nodes; queue "owner" deserves 4 cpu, "borrower" `borrower_deserved`.
  void StartWithQueues(int borrower_deserved) {
    loop_.reset();  // a case before: the loop goes before the store it uses
    LoopOptions loop;
    loop.refused_eviction_backoff_ms = 30'000;
    Start({CpuNode("n1", "4"), CpuNode("n2", "4")}, loop);
    auto queue = [](int cpu) {
      return nlohmann::ordered_json{{"resources", {{"default", {{"cpu", {{"deserved", cpu}}}}}}}};
    };
    std::vector<store::ConfigWrite> writes(2);
    writes[0] = {store::ConfigWrite::Op::kPut, "QUEUE", "owner", queue(4)};
    writes[1] = {store::ConfigWrite::Op::kPut, "QUEUE", "borrower", queue(borrower_deserved)};
    ASSERT_TRUE(store_->WriteConfigs(writes, {"alice", "test"}).ok());
  }

  void Step() {
    LoopFixture::Step();
    clock_.Advance(200);
  }

  std::vector<std::string> AskedNames() const {
    std::vector<std::string> names;
    for (const auto& eviction : backend_->asked) names.push_back(eviction.pod.name);
    std::sort(names.begin(), names.end());
    return names;
  }
};

// Who the cycle evicts among bound pods handed in, and whether the pod that needed the room is
// bound once they are gone.
TEST_F(HandedInVictimsTest, BoundPodsHandedInAreVictimsByTheSchedulersRules) {
  struct Case {
    std::string name;
    int borrower_deserved;
    std::vector<backend::HandedInPod> pods;  // bound ones, then the pending one ("claim")
    std::vector<std::string> victims;        // evictions asked, by pod name
    std::string reason;                      // of every eviction asked
  };
  const std::vector<Case> cases = {
      {"an owner reclaims from a pod over its queue's quota",
       0,
       {Pod("b1", "borrower", "n1"), Pod("b2", "borrower", "n2"), Pod("claim", "owner", "")},
       {"b1"},
       "reclaim"},
      {"a gang is a victim whole",
       0,
       {Pod("g1", "borrower", "n1", 0, "g"), Pod("g2", "borrower", "n2", 0, "g"),
        Pod("claim", "owner", "")},
       {"g1", "g2"},
       "reclaim"},
      {"never below deserved: the gang would leave its queue under it",
       4,
       {Pod("g1", "borrower", "n1", 0, "g"), Pod("g2", "borrower", "n2", 0, "g"),
        Pod("claim", "owner", "")},
       {},
       ""},
      {"a lower priority of the same queue is preempted",
       0,
       {Pod("low", "owner", "n1", 10), Pod("also-low", "owner", "n2", 10),
        Pod("claim", "owner", "", 50)},
       {"low"},
       "preempt"},
      {"an equal priority is not preempted",
       0,
       {Pod("p1", "owner", "n1", 50), Pod("p2", "owner", "n2", 50), Pod("claim", "owner", "", 50)},
       {},
       ""},
      {"a non-preemptible pod is no victim",
       0,
       {Pod("b1", "borrower", "n1", 100), Pod("b2", "borrower", "n2", 100),
        Pod("claim", "owner", "")},
       {},
       ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    StartWithQueues(c.borrower_deserved);
    backend_->handed_in = c.pods;
    Step();
    EXPECT_EQ(AskedNames(), c.victims);
    std::set<std::string> freed;
    for (const auto& eviction : backend_->asked) {
      EXPECT_EQ(eviction.reason, c.reason);
      EXPECT_TRUE(eviction.voluntary);
      EXPECT_EQ(eviction.key, backend::HandedInKey(eviction.pod));
      EXPECT_EQ(eviction.pod.uid, "uid-" + eviction.pod.name);
      freed.insert(backend_->NodeOf(eviction.pod.name));
    }
    // Asked, not done: nothing is bound into the room, and no victim is asked twice.
    Step();
    EXPECT_EQ(backend_->NodeOf("claim"), "");
    EXPECT_EQ(AskedNames(), c.victims);
    backend_->EvictAsked();
    Step();
    if (c.victims.empty()) {
      EXPECT_EQ(backend_->NodeOf("claim"), "");
    } else {
      EXPECT_TRUE(freed.contains(backend_->NodeOf("claim"))) << backend_->NodeOf("claim");
    }
  }
}

// Refused (a PodDisruptionBudget's 429): the pod runs on, is no victim for the backoff, and the
// pod that needed the room waits; after the backoff it is asked again.
TEST_F(HandedInVictimsTest, ARefusedEvictionLeavesThePodRunningAndNoVictimForAWhile) {
  StartWithQueues(0);
  backend_->handed_in = {Pod("b1", "borrower", "n1"), Pod("b2", "borrower", "n2"),
                         Pod("claim", "owner", "")};
  Step();
  ASSERT_EQ(AskedNames(), std::vector<std::string>{"b1"});
  backend_->refused.push_back({backend_->asked[0].key,
                               "blocked by a PodDisruptionBudget: The disruption budget b needs 1 "
                               "healthy pods and has 1 currently"});
  Step();
  // b1 is protected now: the next cycle takes b2 instead.
  Step();
  EXPECT_EQ(AskedNames(), (std::vector<std::string>{"b1", "b2"}));
  backend_->refused.push_back({backend_->asked[1].key, "blocked by a PodDisruptionBudget"});
  for (int step = 0; step < 5; ++step) Step();
  EXPECT_EQ(backend_->asked.size(), 2u) << "no victim again during the backoff";
  EXPECT_EQ(backend_->NodeOf("b1"), "n1");
  EXPECT_EQ(backend_->NodeOf("claim"), "");
  clock_.Advance(30'000);
  Step();
  EXPECT_EQ(backend_->asked.size(), 3u);
}

}  // namespace scheduling_loop_handed_in_victims_test
}  // namespace gpupool::controller
