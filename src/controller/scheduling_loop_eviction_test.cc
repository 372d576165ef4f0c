// The scheduling loop with a backend whose cluster decides evictions (Backend::Evict answers
// kInFlight, as Kubernetes' Eviction API does): the victim keeps its node until the backend
// reports it evicted or refused, the pod it was evicted for waits meanwhile (no second victim,
// nothing bound into room still in use), and a refusal leaves the victim running and saying so.

#include <gtest/gtest.h>

#include <utility>

#include "controller/testing/cpu_node.h"
#include "controller/testing/loop_fixture.h"

namespace gpupool::controller {
namespace scheduling_loop_eviction_test {

using testing::CpuNode;

// The simulated cluster, whose evictions the test carries out or refuses.
class EvictingBackend final : public testing::SimBackendBase {
 public:
  using SimBackendBase::SimBackendBase;

  std::string_view Kind() const override { return "evicting"; }
  std::vector<backend::TaskExit> Poll(int64_t now_ms) override {
    std::vector<backend::TaskExit> exits = sim_.Poll(now_ms);
    exits.insert(exits.end(), evicted_.begin(), evicted_.end());
    evicted_.clear();
    return exits;
  }

  backend::EvictionStart Evict(const backend::TaskEviction& eviction) override {
    asked.push_back(eviction);
    return backend::EvictionStart::kInFlight;
  }
  std::vector<backend::RefusedEviction> RefusedEvictions() override {
    return std::exchange(refused_, {});
  }

  // The cluster evicted the task (its pod is gone).
  void Evicted(const std::string& key) {
    (void)sim_.Kill(key);
    backend::TaskExit exit;
    exit.key = key;
    exit.exit_code = -1;
    exit.evicted = true;
    evicted_.push_back(exit);
  }
  void Refuse(const std::string& key, const std::string& why) { refused_.push_back({key, why}); }

  std::vector<backend::TaskEviction> asked;

 private:
  std::vector<backend::TaskExit> evicted_;
  std::vector<backend::RefusedEviction> refused_;
};

class EvictionLoopTest : public testing::LoopFixture<EvictingBackend> {
 protected:
  void SetUp() override {
    LoopOptions loop;
    loop.refused_eviction_backoff_ms = 30'000;
    Start({CpuNode("n1", "4")}, loop);
  }

  // A 3-cpu task (4 with the built-in 1-cpu sidecar): one fills n1.
  std::string Submit(const std::string& name, const std::string& priority) {
    return SubmitSpec("workflow:\n  name: " + name + "\n  priority: " + priority +
                      "\n  resources:\n    default: {cpu: 3, memory: 1Gi, storage: 1Gi}\n"
                      "  tasks:\n  - {name: a, image: busybox, sim_duration: 1h}\n");
  }

  // One step of the loop, then 200 ms.
  void Step() {
    LoopFixture::Step();
    clock_.Advance(200);
  }

  // A LOW task runs on n1; a NORMAL one of the same queue needs n1: preemption picks the first.
  void StartPreemption() {
    low_ = Submit("low", "LOW");
    Step();
    Step();
    ASSERT_EQ(Task(low_).status, "RUNNING");
    high_ = Submit("high", "NORMAL");
    Step();
    ASSERT_EQ(backend_->asked.size(), 1u);
    EXPECT_EQ(backend_->asked[0].key, low_ + "/a-group/a/0");
    EXPECT_EQ(backend_->asked[0].reason, "preempt");
    EXPECT_TRUE(backend_->asked[0].voluntary);
  }

  std::string low_, high_;
};

TEST_F(EvictionLoopTest, TheVictimHoldsItsNodeUntilTheClusterHasEvictedIt) {
  StartPreemption();
  // Asked, not done: the victim runs on, the pod it is evicted for waits.
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE(step);
    store::TaskRecord low = Task(low_);
    EXPECT_EQ(low.status, "RUNNING");
    EXPECT_EQ(low.node, "n1");
    EXPECT_EQ(low.message.rfind("being evicted (preempt)", 0), 0u) << low.message;
    store::TaskRecord high = Task(high_);
    EXPECT_EQ(high.status, "PENDING");
    EXPECT_NE(high.message.find("once the pods evicted there have left"), std::string::npos)
        << high.message;
    Step();
    EXPECT_EQ(backend_->asked.size(), 1u) << "no second eviction while the first is in flight";
  }

  backend_->Evicted(low_ + "/a-group/a/0");
  Step();
  store::TaskRecord low = Task(low_);
  EXPECT_EQ(low.status, "PENDING");
  EXPECT_EQ(low.retry, 0) << "requeued, not a new attempt";
  EXPECT_EQ(low.message.rfind("evicted (preempt)", 0), 0u) << low.message;
  // The room is free now: the pod the eviction was for takes it in the same step.
  store::TaskRecord high = Task(high_);
  EXPECT_EQ(high.status, "SCHEDULED");
  EXPECT_EQ(high.node, "n1");
  Step();
  EXPECT_EQ(Task(high_).status, "RUNNING");
  EXPECT_EQ(Task(low_).status, "PENDING");
  EXPECT_EQ(backend_->asked.size(), 1u);
  // Later cycles say why it waits, and still why it was evicted.
  Step();
  low = Task(low_);
  EXPECT_NE(low.message.find("Insufficient cpu"), std::string::npos) << low.message;
  EXPECT_NE(low.message.find("; earlier: evicted (preempt)"), std::string::npos) << low.message;
}

TEST_F(EvictionLoopTest, ARefusedEvictionLeavesTheVictimRunningAndSaysWhy) {
  StartPreemption();
  Step();
  backend_->Refuse(low_ + "/a-group/a/0",
                   "blocked by a PodDisruptionBudget: The disruption budget low needs 1 healthy "
                   "pods and has 1 currently");
  Step();
  store::TaskRecord low = Task(low_);
  EXPECT_EQ(low.status, "RUNNING");
  EXPECT_EQ(low.node, "n1");
  EXPECT_NE(low.message.find("refused its eviction"), std::string::npos) << low.message;
  EXPECT_NE(low.message.find("The disruption budget low needs 1 healthy pods"), std::string::npos)
      << low.message;
  // No victim again for the backoff: the other waits with the scheduler's reason.
  for (int step = 0; step < 5; ++step) Step();
  EXPECT_EQ(backend_->asked.size(), 1u);
  store::TaskRecord high = Task(high_);
  EXPECT_EQ(high.status, "PENDING");
  EXPECT_NE(high.message.find("Insufficient cpu"), std::string::npos) << high.message;
  // After it, the eviction is asked again (the budget may allow it now).
  clock_.Advance(30'000);
  Step();
  ASSERT_EQ(backend_->asked.size(), 2u);
  EXPECT_EQ(backend_->asked[1].key, low_ + "/a-group/a/0");
}

TEST_F(EvictionLoopTest, AVictimCanceledWhileBeingEvictedFreesThePodItWasEvictedFor) {
  StartPreemption();
  ASSERT_TRUE(service_->CancelWorkflow({"alice", {"osmo-admin"}, "test"}, low_).ok());
  Step();  // the cancel is applied and the task Kill'ed: its eviction is forgotten
  Step();  // the pod it was evicted for enters the cycle again, and the room is free
  EXPECT_EQ(Task(low_).status, "CANCELED");
  store::TaskRecord high = Task(high_);
  EXPECT_EQ(high.status == "SCHEDULED" || high.status == "RUNNING", true) << high.status;
  EXPECT_EQ(high.node, "n1");
}

}  // namespace scheduling_loop_eviction_test
}  // namespace gpupool::controller
