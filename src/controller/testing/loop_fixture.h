#pragma once
// What the scheduling loop's tests with a backend of their own share: the simulated cluster as
// the base of that backend, and the loop over an in-memory store with the built-in configs.

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "backend/sim/sim_backend.h"
#include "controller/scheduling_loop.h"
#include "service/service.h"
#include "store/store.h"

namespace gpupool::controller::testing {

// The simulated cluster behind a backend a test writes: every call goes to a SimBackend; the
// test's subclass overrides the calls it records or decides itself, and names its Kind.
class SimBackendBase : public backend::Backend {
 public:
  // The pods handed in as a test holds them (by value, to change them in place), shared as
  // Backend::HandedInPods gives them.
  static std::vector<std::shared_ptr<const backend::HandedInPod>> Shared(
      const std::vector<backend::HandedInPod>& pods) {
    std::vector<std::shared_ptr<const backend::HandedInPod>> shared;
    for (const auto& pod : pods)
      shared.push_back(std::make_shared<const backend::HandedInPod>(pod));
    return shared;
  }

  explicit SimBackendBase(std::vector<nlohmann::ordered_json> nodes) : sim_(std::move(nodes)) {}

  Result<std::vector<nlohmann::ordered_json>> ListNodes() const override {
    return sim_.ListNodes();
  }
  Status Launch(const backend::TaskLaunch& launch) override { return sim_.Launch(launch); }
  Status Kill(std::string_view key) override { return sim_.Kill(key); }
  std::vector<backend::TaskExit> Poll(int64_t now_ms) override { return sim_.Poll(now_ms); }
  size_t RunningCount() const override { return sim_.RunningCount(); }
  void SetKnownNodes(const std::vector<std::string>& names) override { sim_.SetKnownNodes(names); }

 protected:
  backend::SimBackend sim_;
};

// The scheduling loop (holder "a") over an in-memory store with the built-in configs
// (config::BuiltinConfigs(): pool "default" among them), its nodes in the store and in a
// `TestBackend` constructed from them. A test's SetUp calls Start.
template <typename TestBackend>
class LoopFixture : public ::testing::Test {
 protected:
  void Start(const std::vector<nlohmann::ordered_json>& nodes, LoopOptions options = {}) {
    store::StoreOptions store_options;
    store_options.clock = &clock_;
    auto store = store::OpenStore(":memory:", store_options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    service_ = std::make_unique<service::Service>(*store_, clock_);
    ASSERT_TRUE(service_->EnsureBuiltins().ok());
    std::vector<store::NodeRecord> records;
    for (const auto& node : nodes) records.push_back({node["metadata"]["name"], node});
    ASSERT_TRUE(store_->UpsertNodes(records, true).ok());
    backend_ = std::make_unique<TestBackend>(nodes);
    options.holder = "a";
    loop_ = std::make_unique<SchedulingLoop>(*store_, *backend_, clock_, registry_, options);
  }

  // Submits a workflow spec to pool "default" as alice (osmo-admin); its id, "" on failure.
  std::string SubmitSpec(const std::string& spec_text) {
    service::SubmitRequest request;
    request.pool = "default";
    request.spec_text = spec_text;
    request.file_name = "wf.yaml";
    auto result = service_->SubmitWorkflow({"alice", {"osmo-admin"}, "test"}, request);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? result->workflow_id : "";
  }

  // The workflow's last task (attempt) as stored; {} when there is none.
  store::TaskRecord Task(const std::string& id) {
    auto wf = store_->GetWorkflow(id);
    EXPECT_TRUE(wf.ok());
    return wf.ok() && !wf->tasks.empty() ? wf->tasks.back() : store::TaskRecord{};
  }

  // One step of the loop, which must succeed.
  void Step() {
    auto stats = loop_->Step();
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  }

  FakeClock clock_;
  metrics::Registry registry_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<service::Service> service_;
  std::unique_ptr<TestBackend> backend_;
  std::unique_ptr<SchedulingLoop> loop_;
};

}  // namespace gpupool::controller::testing
