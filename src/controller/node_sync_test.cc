#include "controller/node_sync.h"

#include <gtest/gtest.h>

#include "store/store.h"

namespace gpupool::controller {
namespace node_sync_test {

using Json = nlohmann::ordered_json;

// A backend whose nodes a test changes between syncs.
class ChangingBackend final : public backend::Backend {
 public:
  std::string_view Kind() const override { return "test"; }
  Result<std::vector<Json>> ListNodes() const override {
    ++lists;
    if (!error.ok()) return error;
    return nodes;
  }
  Status Launch(const backend::TaskLaunch&) override { return OkStatus(); }
  Status Kill(std::string_view) override { return OkStatus(); }
  std::vector<backend::TaskExit> Poll(int64_t) override { return {}; }
  size_t RunningCount() const override { return 0; }
  std::optional<std::string> NodesVersion() const override { return version; }

  std::vector<Json> nodes;
  Status error;
  std::optional<std::string> version;  // none: list every time
  mutable int lists = 0;
};

Json MakeNode(const std::string& name, bool unschedulable) {
  Json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}};
  if (unschedulable) node["spec"]["unschedulable"] = true;
  return node;
}

TEST(NodeSyncTest, WritesOnlyNodesThatChanged) {
  store::StoreOptions options;
  auto store = store::OpenStore(":memory:", options);
  ASSERT_TRUE(store.ok()) << store.status().message();
  ChangingBackend backend;
  backend.nodes = {MakeNode("a", false), MakeNode("b", false)};
  NodeSync sync(backend, **store, std::chrono::seconds(60));

  auto first = sync.SyncOnce();
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(*first, 2u);
  auto again = sync.SyncOnce();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0u);

  backend.nodes[1] = MakeNode("b", true);  // drained in the cluster
  auto changed = sync.SyncOnce();
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(*changed, 1u);
  auto stored = (*store)->ListNodes();
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 2u);
  EXPECT_EQ((*stored)[1].name, "b");
  EXPECT_EQ((*stored)[1].object["spec"]["unschedulable"], true);

  backend.error = UnavailableError("slurmrestd down");
  EXPECT_EQ(sync.SyncOnce().status().code(), StatusCode::kUnavailable);
  EXPECT_EQ((*store)->ListNodes()->size(), 2u);  // nothing removed
}

// With a version from the backend, a period whose version did not move lists nothing; one that
// moved lists and writes what changed; a failed sync is tried again at the same version.
TEST(NodeSyncTest, ListsOnlyWhenTheBackendsNodesVersionMoved) {
  store::StoreOptions options;
  auto store = store::OpenStore(":memory:", options);
  ASSERT_TRUE(store.ok()) << store.status().message();
  ChangingBackend backend;
  backend.nodes = {MakeNode("a", false)};
  backend.version = "1";
  NodeSync sync(backend, **store, std::chrono::seconds(60));
  ASSERT_EQ(*sync.SyncOnce(), 1u);
  EXPECT_EQ(backend.lists, 1);
  backend.nodes[0] = MakeNode("a", true);  // changed, but the version says nothing moved
  ASSERT_EQ(*sync.SyncOnce(), 0u);
  EXPECT_EQ(backend.lists, 1);
  backend.version = "2";
  backend.error = UnavailableError("API server down");
  EXPECT_FALSE(sync.SyncOnce().ok());
  backend.error = OkStatus();
  ASSERT_EQ(*sync.SyncOnce(), 1u);  // the same version as the failed sync: listed again
  EXPECT_EQ(backend.lists, 3);
  EXPECT_EQ((*store)->ListNodes()->at(0).object["spec"]["unschedulable"], true);
}

}  // namespace node_sync_test
}  // namespace gpupool::controller
