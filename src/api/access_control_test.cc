#include "api/access_control.h"

#include <gtest/gtest.h>

#include "common/clock.h"
#include "store/store.h"

namespace gpupool::api {
namespace access_control_test {

// A role that may list pools, written straight into the store (as another server would).
Status PutRole(store::Store& store, std::optional<int64_t> expected = std::nullopt) {
  store::ConfigWrite write{.op = store::ConfigWrite::Op::kPut,
                           .kind = "ROLE",
                           .name = "lister",
                           .body = nlohmann::ordered_json::parse(R"({"policies": [{"actions": [
                               {"base": "http", "path": "/api/pool", "method": "get"}]}]})"),
                           .expected_revision = expected};
  return store.WriteConfigs({write}, store::Actor{"test", "test"}).status();
}

Status DeleteRole(store::Store& store) {
  store::ConfigWrite write{.op = store::ConfigWrite::Op::kDelete, .kind = "ROLE", .name = "lister"};
  return store.WriteConfigs({write}, store::Actor{"test", "test"}).status();
}

TEST(AccessControlTest, SeesOtherWritersAfterMaxAgeAndOwnWritesAtOnce) {
  auto opened = store::OpenStore(":memory:");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  store::Store& store = **opened;
  FakeClock clock(1'000'000);
  AccessControl access(store, clock, /*max_age_ms=*/1000);
  Identity alice{"alice", {"lister"}};
  auto allowed = [&] { return access.Check(alice, "GET", "/api/pool", std::nullopt).ok(); };

  EXPECT_FALSE(allowed());  // no such role yet
  ASSERT_TRUE(PutRole(store).ok());
  EXPECT_FALSE(allowed());  // written by "another server": cached until max_age passes
  clock.Advance(999);
  EXPECT_FALSE(allowed());
  clock.Advance(1);
  EXPECT_TRUE(allowed());  // the generation changed: reloaded

  ASSERT_TRUE(DeleteRole(store).ok());
  access.Invalidate();  // a write through this server: seen by the next call
  EXPECT_FALSE(allowed());

  // Unchanged generation: the cached set stays in use (and stays correct).
  clock.Advance(5000);
  EXPECT_FALSE(allowed());
  ASSERT_TRUE(PutRole(store, 0).ok());
  clock.Advance(1000);
  EXPECT_TRUE(allowed());
}

}  // namespace access_control_test
}  // namespace gpupool::api
