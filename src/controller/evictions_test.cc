#include "controller/evictions.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gpupool::controller {
namespace evictions_test {

model::PodScheduling Pending(const std::string& name, const std::string& gang = "") {
  model::PodScheduling pod;
  pod.name = name;
  if (!gang.empty()) pod.labels[scheduler::kGangLabel] = gang;
  return pod;
}

std::vector<std::string> Names(const std::vector<scheduler::Binding>& bindings) {
  std::vector<std::string> names;
  for (const auto& b : bindings) names.push_back(b.pod);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> Names(const scheduler::ClusterSnapshot& snapshot) {
  std::vector<std::string> names;
  for (const auto& p : snapshot.pods) names.push_back(p.name);
  std::sort(names.begin(), names.end());
  return names;
}

// The pods a cycle put on a node being freed wait, with the rest of their gangs; the others are
// bound as the cycle decided.
TEST(EvictionsInFlightTest, HoldsWhatTheCyclePutOnANodeBeingFreedWithItsGangs) {
  struct Case {
    std::string name;
    std::vector<std::pair<std::string, std::string>> asked;  // victim, node
    std::vector<std::string> held;
  };
  const std::vector<Case> cases = {
      {"nothing asked", {}, {}},
      {"one node", {{"v1", "n1"}}, {"a1", "a2", "solo"}},  // a2 is on n2, with its gang
      {"a node with only a lone pod", {{"v3", "n3"}}, {"other"}},
      {"two nodes", {{"v1", "n1"}, {"v3", "n3"}}, {"a1", "a2", "other", "solo"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    scheduler::ClusterSnapshot snapshot;
    snapshot.pods = {Pending("a1", "g"), Pending("a2", "g"), Pending("solo"), Pending("other"),
                     Pending("free")};
    scheduler::CycleResult cycle;
    cycle.bindings = {{"a1", "n1"}, {"a2", "n2"}, {"solo", "n1"}, {"other", "n3"}, {"free", "n4"}};
    EvictionsInFlight evictions(30'000);
    for (const auto& [victim, node] : c.asked) evictions.Asked(victim, node, "evicted");
    EXPECT_EQ(Names(evictions.HoldBindings(cycle, snapshot)), c.held);
    EXPECT_EQ(cycle.bindings.size() + c.held.size(), 5u);
    for (const auto& b : cycle.bindings) {
      EXPECT_EQ(std::count(c.held.begin(), c.held.end(), b.pod), 0) << b.pod;
    }
    // Left out of the next cycles, while their victims are in flight.
    evictions.Prune({"v1", "v3"}, 0);
    scheduler::ClusterSnapshot next = snapshot;
    next.pod_ids = {1, 2, 3, 4, 5};  // parallel to the pods: they stay so
    evictions.LeaveOutHeld(next);
    EXPECT_EQ(next.pods.size() + c.held.size(), 5u);
    ASSERT_EQ(next.pod_ids.size(), next.pods.size());
    for (size_t i = 0; i < next.pods.size(); ++i) {
      const auto at = std::find_if(snapshot.pods.begin(), snapshot.pods.end(),
                                   [&](const auto& p) { return p.name == next.pods[i].name; });
      EXPECT_EQ(next.pod_ids[i], static_cast<uint64_t>(at - snapshot.pods.begin()) + 1);
    }
  }
}

TEST(EvictionsInFlightTest, EvictedReleasesWhatWaitedAndRefusedSparesTheVictim) {
  EvictionsInFlight evictions(30'000);
  scheduler::ClusterSnapshot snapshot;
  snapshot.pods = {Pending("p"), Pending("q")};
  scheduler::CycleResult cycle;
  cycle.bindings = {{"p", "n1"}, {"q", "n2"}};
  evictions.Asked("v1", "n1", "evicted (preempt): for p");
  evictions.Asked("v2", "n2", "evicted (preempt): for q");
  EXPECT_EQ(Names(evictions.HoldBindings(cycle, snapshot)), (std::vector<std::string>{"p", "q"}));
  EXPECT_TRUE(evictions.Protected("v1", 0));
  EXPECT_TRUE(evictions.Protected("v2", 0));

  // v1 evicted: p goes back to the cycles; q still waits for v2.
  EXPECT_EQ(evictions.Evicted("v1"), "evicted (preempt): for p");
  EXPECT_EQ(evictions.Evicted("v1"), std::nullopt) << "reported once";
  evictions.Prune({"v2"}, 1'000);
  scheduler::ClusterSnapshot next = snapshot;
  evictions.LeaveOutHeld(next);
  EXPECT_EQ(Names(next), (std::vector<std::string>{"p"}));
  EXPECT_FALSE(evictions.Protected("v1", 1'000));

  // v2 refused: it runs on, spared for the backoff; q goes back to the cycles.
  std::string message =
      evictions.Refused({"v2", "blocked by a PodDisruptionBudget: budget b"}, 2'000);
  EXPECT_NE(message.find("budget b"), std::string::npos) << message;
  EXPECT_NE(message.find("30 s"), std::string::npos) << message;
  evictions.Prune({"v2"}, 2'000);
  next = snapshot;
  evictions.LeaveOutHeld(next);
  EXPECT_EQ(Names(next), (std::vector<std::string>{"p", "q"}));
  EXPECT_TRUE(evictions.Protected("v2", 31'999));
  EXPECT_FALSE(evictions.Protected("v2", 32'000));
  EXPECT_EQ(evictions.InFlightCount(), 0u);

  // A victim that stops running (canceled) is forgotten, and what waited for it released.
  cycle.bindings = {{"q", "n2"}};
  evictions.Asked("v3", "n2", "evicted");
  EXPECT_EQ(Names(evictions.HoldBindings(cycle, snapshot)), (std::vector<std::string>{"q"}));
  evictions.Prune({}, 3'000);
  next = snapshot;
  evictions.LeaveOutHeld(next);
  EXPECT_EQ(Names(next), (std::vector<std::string>{"p", "q"}));
  EXPECT_FALSE(evictions.Protected("v3", 3'000));
}

}  // namespace evictions_test
}  // namespace gpupool::controller
