#pragma once
// A service::Service as `gpupool` offline and the server use it, on a SQLite store that holds
// the built-in configs and two nodes (one CPU, one tainted A100 node). Targets open one per
// input, from a copy of a database written once per process, so that what an input does never
// depends on the inputs run before it (a crash replays from its file alone). One fixture at a
// time: opening one replaces the previous one's database.

#include <memory>

#include "common/clock.h"
#include "service/service.h"
#include "store/store.h"

namespace gpupool::fuzz {

class ServiceFixture {
 public:
  // Aborts when the store cannot be opened (a broken build, not an input's fault).
  static std::unique_ptr<ServiceFixture> Open();

  service::Service& service() { return *service_; }
  store::Store& store() { return *store_; }
  const Clock& clock() const { return clock_; }
  // `root` with role osmo-admin, as the CLI runs offline.
  const service::Caller& admin() const { return admin_; }

 private:
  ServiceFixture() = default;

  FakeClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<service::Service> service_;
  const service::Caller admin_{"root", {"osmo-admin"}, "cli", std::nullopt};
};

}  // namespace gpupool::fuzz
