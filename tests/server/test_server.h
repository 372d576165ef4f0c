#pragma once
// One in-process gpupool server on a free loopback port for the REST API's end-to-end tests: the
// real stack (SQLite store, service, access control, HTTP server, the what-if of `gpupool
// serve`), with the built-in configs written.

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "api/access_control.h"
#include "api/api.h"
#include "api/http_server.h"
#include "api/what_if.h"
#include "client/client.h"
#include "metrics/store_metrics.h"
#include "service/service.h"
#include "store/store.h"

namespace gpupool::api {

namespace fs = std::filesystem;

// One in-process server on a free loopback port.
class TestServer {
 public:
  TestServer(std::unique_ptr<Authenticator> authenticator, const Clock& clock,
             size_t max_body_bytes = 64 * 1024)
      : authenticator_(std::move(authenticator)) {
    dir_ = fs::temp_directory_path() /
           ("gpupool_api_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(dir_);
    store::StoreOptions options;
    options.clock = &clock;
    options.observe = metrics::ObserveStoreTransactions(registry_);
    auto store = store::OpenStore("sqlite:" + (dir_ / "db").string(), options);
    if (!store.ok()) throw std::runtime_error(store.status().ToString());
    store_ = std::move(*store);
    service_ = std::make_unique<service::Service>(*store_, clock);
    Status builtins = service_->EnsureBuiltins();
    if (!builtins.ok()) throw std::runtime_error(builtins.ToString());
    access_ = std::make_unique<AccessControl>(*store_, clock, 0);
    ApiContext context;
    context.service = service_.get();
    context.store = store_.get();
    context.access = access_.get();
    context.registry = &registry_;
    context.clock = &clock;
    context.what_if =
        MakeWhatIf(scheduler::PlacementPolicy::kFgd, autoscaler::Catalog::Builtin(), clock);
    Router router;
    AddApiRoutes(router, context);
    ServerOptions server_options;
    server_options.max_body_bytes = max_body_bytes;
    server_options.threads = 8;
    http_ = std::make_unique<HttpServer>(std::move(router), authenticator_.get(),
                                         MakeAccessChecker(context), MakeAuditHook(context),
                                         registry_, server_options);
    port_ = *http_->Bind("127.0.0.1", 0);
    thread_ = std::thread([this] { http_->Serve(); });
    for (int i = 0; i < 200 && !http_->IsRunning(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~TestServer() {
    http_->Stop();
    thread_.join();
    fs::remove_all(dir_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  client::Client As(const std::string& token) const { return client::Client(url(), token); }
  store::Store& store() { return *store_; }
  // The SQLite file, for tests that write to it behind the store's back (rows an older
  // version may have left).
  std::string db_path() const { return (dir_ / "db").string(); }
  int port() const { return port_; }

 private:
  static inline int counter_ = 0;
  fs::path dir_;
  std::unique_ptr<Authenticator> authenticator_;
  metrics::Registry registry_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<service::Service> service_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<HttpServer> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace gpupool::api
