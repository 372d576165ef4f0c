// The dashboard's HTTP side over loopback, in process: the UI's files (content types, ETags and
// 304s, caching, the Content-Security-Policy, the UI's routes answered with index.html), the
// public /api/ui/config, and the views' ETags and access control.
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <thread>

#include "api/access_control.h"
#include "api/api.h"
#include "api/auth.h"
#include "api/http_server.h"
#include "api/ui_routes.h"
#include "api/view_routes.h"
#include "service/service.h"
#include "service/views.h"
#include "store/store.h"
#include "webui/assets.h"

namespace gpupool::api {
namespace dashboard_routes_test {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

class DashboardServer {
 public:
  explicit DashboardServer(UiOptions ui) {
    dir_ = fs::temp_directory_path() / ("gpupool_dashboard_test_" + std::to_string(::getpid()) +
                                        "_" + std::to_string(counter_++));
    fs::create_directories(dir_);
    auto store = store::OpenStore("sqlite:" + (dir_ / "db").string(), {.clock = &clock_});
    if (!store.ok()) throw std::runtime_error(store.status().ToString());
    store_ = std::move(*store);
    service_ = std::make_unique<service::Service>(*store_, clock_);
    if (!service_->EnsureBuiltins().ok()) throw std::runtime_error("builtins");
    views_ = std::make_unique<service::Views>(*service_, *store_, clock_);
    access_ = std::make_unique<AccessControl>(*store_, clock_, 0);
    authenticator_ = MakeDevAuthenticator();
    ApiContext context;
    context.service = service_.get();
    context.store = store_.get();
    context.access = access_.get();
    context.registry = &registry_;
    context.clock = &clock_;
    Router router;
    AddApiRoutes(router, context);
    AddViewRoutes(router, *views_, [this](const std::string& id) -> std::optional<std::string> {
      auto pool = service_->WorkflowPool(id);
      return pool.ok() ? std::optional<std::string>(*pool) : std::nullopt;
    });
    AddUiRoutes(router, ui);
    http_ = std::make_unique<HttpServer>(std::move(router), authenticator_.get(),
                                         MakeAccessChecker(context), MakeAuditHook(context),
                                         registry_, ServerOptions{.threads = 4});
    port_ = *http_->Bind("127.0.0.1", 0);
    thread_ = std::thread([this] { http_->Serve(); });
    for (int i = 0; i < 200 && !http_->IsRunning(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~DashboardServer() {
    http_->Stop();
    thread_.join();
    fs::remove_all(dir_);
  }
  httplib::Client Client() const { return httplib::Client("127.0.0.1", port_); }

 private:
  static inline int counter_ = 0;
  SystemClock clock_;
  fs::path dir_;
  metrics::Registry registry_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<service::Service> service_;
  std::unique_ptr<service::Views> views_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<Authenticator> authenticator_;
  std::unique_ptr<HttpServer> http_;
  std::thread thread_;
  int port_ = 0;
};

UiOptions Dev() {
  UiOptions ui;
  ui.auth = "dev";
  return ui;
}

TEST(DashboardRoutes, IndexWithStrictPolicyEtagAndTheUisRoutes) {
  DashboardServer server(Dev());
  auto client = server.Client();
  auto index = client.Get("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(index->get_header_value("Cache-Control"), "no-cache");
  const std::string csp = index->get_header_value("Content-Security-Policy");
  EXPECT_NE(csp.find("script-src 'self';"), std::string::npos) << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe"), std::string::npos) << csp;
  const std::string etag = index->get_header_value("ETag");
  ASSERT_FALSE(etag.empty());

  auto again = client.Get("/", {{"If-None-Match", etag}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_TRUE(again->body.empty());

  // The UI's own routes are the same page; anything else is still a 404.
  for (const char* path : {"/pools", "/queues/rnd-1", "/workflows/wf-1", "/nodes", "/configs",
                           "/machine-pools", "/login", "/callback"}) {
    SCOPED_TRACE(path);
    auto page = client.Get(path);
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200);
    EXPECT_EQ(page->body, index->body);
  }
  auto missing = client.Get("/pools/a/b");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST(DashboardRoutes, EveryFileWithItsTypeAndCaching) {
  DashboardServer server(Dev());
  auto client = server.Client();
  ASSERT_FALSE(webui::Assets().empty());
  for (const webui::Asset& asset : webui::Assets()) {
    SCOPED_TRACE(std::string(asset.path));
    auto file = client.Get(std::string(asset.path));
    ASSERT_TRUE(file);
    EXPECT_EQ(file->status, 200);
    EXPECT_EQ(file->body, asset.body);
    EXPECT_EQ(file->get_header_value("Content-Type"), asset.content_type);
    EXPECT_EQ(file->get_header_value("ETag"), asset.etag);
    EXPECT_EQ(file->get_header_value("X-Content-Type-Options"), "nosniff");
    const bool hashed = asset.path.starts_with("/assets/");
    EXPECT_EQ(file->get_header_value("Cache-Control"),
              hashed ? "public, max-age=31536000, immutable" : "no-cache");
    if (asset.path.ends_with(".js")) {
      EXPECT_EQ(asset.content_type, "text/javascript; charset=utf-8");
    }
  }
}

TEST(DashboardRoutes, UiConfigIsPublicAndOidcOpensTheIssuerOnly) {
  {
    DashboardServer server(Dev());
    auto config = server.Client().Get("/api/ui/config");
    ASSERT_TRUE(config);
    EXPECT_EQ(config->status, 200);
    Json json = Json::parse(config->body);
    EXPECT_EQ(json["auth"], "dev");
    EXPECT_EQ(json["dashboard"], webui::BuiltWithDashboard());
    EXPECT_FALSE(json.contains("client_id"));
  }
  UiOptions oidc;
  oidc.auth = "oidc";
  oidc.issuer = "https://login.example.com/realms/gpu";
  oidc.client_id = "gpupool-ui";
  DashboardServer server(oidc);
  auto client = server.Client();
  Json json = Json::parse(client.Get("/api/ui/config")->body);
  EXPECT_EQ(json["issuer"], oidc.issuer);
  EXPECT_EQ(json["client_id"], "gpupool-ui");
  EXPECT_EQ(json["scopes"], "openid profile email");
  EXPECT_EQ(json["token"], "access_token");
  const std::string csp = client.Get("/")->get_header_value("Content-Security-Policy");
  EXPECT_NE(csp.find("connect-src 'self' https://login.example.com;"), std::string::npos) << csp;
}

TEST(DashboardRoutes, ViewsNeedATokenAndARoleAndAnswer304WhenUnchanged) {
  DashboardServer server(Dev());
  auto client = server.Client();
  auto anonymous = client.Get("/api/views/overview");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 401);

  // Without a role that lists pools, the overview is refused with the roles checked.
  auto nobody = client.Get("/api/views/overview", {{"Authorization", "Bearer dev:nobody:"}});
  ASSERT_TRUE(nobody);
  EXPECT_EQ(nobody->status, 403);
  EXPECT_NE(Json::parse(nobody->body)["message"].get<std::string>().find("osmo-default"),
            std::string::npos)
      << nobody->body;

  const httplib::Headers user = {{"Authorization", "Bearer dev:bob:osmo-user"}};
  for (const char* path :
       {"/api/views/overview", "/api/views/pools", "/api/views/queues", "/api/views/nodes",
        "/api/views/workflows", "/api/views/machine-pools", "/api/views/pools/default"}) {
    SCOPED_TRACE(path);
    auto first = client.Get(path, user);
    ASSERT_TRUE(first);
    EXPECT_EQ(first->status, 200) << first->body;
    const std::string etag = first->get_header_value("ETag");
    ASSERT_FALSE(etag.empty());
    httplib::Headers conditional = user;
    conditional.insert({"If-None-Match", etag});
    auto second = client.Get(path, conditional);
    ASSERT_TRUE(second);
    EXPECT_EQ(second->status, 304);
    EXPECT_TRUE(second->body.empty());
  }
  auto bad = client.Get("/api/views/nodes?selector=a%20in%20b", user);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  auto unknown = client.Get("/api/views/workflows/nope", user);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
}

}  // namespace dashboard_routes_test
}  // namespace gpupool::api
