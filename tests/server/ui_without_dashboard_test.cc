// The page a gpupool built with -DGPUPOOL_WITH_WEB=OFF serves at / (docs/DESIGN.md §6.1): the
// server's UI routes over the asset table cmake/embed_assets.cmake writes without a dashboard.
//
// Why this way: configuring and building a second tree with the option OFF would compile every
// module again (minutes on CI's two cores). Instead tests/server.cmake runs the same embed script
// the OFF build runs (a CMake script, milliseconds) and compiles its output into this executable.
// The executable's own objects define webui::Assets() and webui::BuiltWithDashboard(), so the
// linker never takes the member of libgpupool_webui.a (the dashboard of this build) that defines
// them: ui_routes.cc here serves exactly what it serves in an OFF build. The first test checks
// that this took (it fails if the dashboard's table was linked instead).
#include <gtest/gtest.h>
#include <httplib.h>

#include <string>
#include <thread>
#include <vector>

#include "api/http_server.h"
#include "api/ui_routes.h"
#include "webui/assets.h"

namespace gpupool::api {
namespace ui_without_dashboard_test {

using Json = nlohmann::ordered_json;

// The UI routes alone on loopback, port 0.
class UiServer {
 public:
  explicit UiServer(const UiOptions& ui) {
    Router router;
    AddUiRoutes(router, ui);
    auto allow = [](const Identity&, const RouteRequest&, const std::optional<std::string>&) {
      return OkStatus();
    };
    // Every UI route is public: no authenticator, so a route needing one would fail the test.
    http_ = std::make_unique<HttpServer>(std::move(router), nullptr, allow, AuditHook(), registry_,
                                         ServerOptions{.threads = 1, .io_threads = 1});
    auto port = http_->Bind("127.0.0.1", 0);
    if (!port.ok()) throw std::runtime_error(port.status().ToString());
    port_ = *port;
    thread_ = std::thread([this] { http_->Serve(); });
    for (int i = 0; i < 200 && !http_->IsRunning(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~UiServer() {
    http_->Stop();
    thread_.join();
  }
  httplib::Client Client() const { return httplib::Client("127.0.0.1", port_); }

 private:
  metrics::Registry registry_;
  std::unique_ptr<HttpServer> http_;
  std::thread thread_;
  int port_ = 0;
};

UiOptions Dev() {
  UiOptions ui;
  ui.auth = "dev";
  return ui;
}

TEST(UiWithoutDashboard, TheTableHoldsOnlyThePageSayingSo) {
  EXPECT_FALSE(webui::BuiltWithDashboard());
  ASSERT_EQ(webui::Assets().size(), 1u);
  EXPECT_EQ(webui::Assets()[0].path, "/index.html");
}

// The page itself: the whole document (its length comes from the script, so an escaping slip
// in the generated literal shows as a cut or overlong body), what it says and how it is served.
TEST(UiWithoutDashboard, EveryUiRouteServesThePageSayingTheDashboardIsAbsent) {
  UiServer server(Dev());
  auto client = server.Client();
  for (const char* path :
       {"/", "/pools", "/pools/default", "/queues/rnd-1", "/workflows", "/workflows/wf-1", "/nodes",
        "/machine-pools", "/configs", "/login", "/callback", "/index.html"}) {
    SCOPED_TRACE(path);
    auto page = client.Get(path);
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200);
    EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
    EXPECT_EQ(page->get_header_value("Cache-Control"), "no-cache");
    EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");
    const std::string csp = page->get_header_value("Content-Security-Policy");
    EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
    const std::string& body = page->body;
    EXPECT_TRUE(body.starts_with("<!doctype html>\n")) << body;
    EXPECT_TRUE(body.ends_with("</body></html>\n")) << body;
    for (const char* says : {"built without the dashboard", "GPUPOOL_WITH_WEB=OFF",
                             "served under /api", "-DGPUPOOL_WITH_WEB=ON"}) {
      EXPECT_NE(body.find(says), std::string::npos) << says << " not in " << body;
    }
    // Nothing of the application: no script to load, no element for Vue to mount on.
    EXPECT_EQ(body.find("<script"), std::string::npos) << body;
    EXPECT_EQ(body.find("id=\"app\""), std::string::npos) << body;
  }
}

TEST(UiWithoutDashboard, EtagAnswers304AndBundleFilesAreAbsent) {
  UiServer server(Dev());
  auto client = server.Client();
  auto page = client.Get("/");
  ASSERT_TRUE(page);
  const std::string etag = page->get_header_value("ETag");
  ASSERT_EQ(etag, webui::Assets()[0].etag);
  auto again = client.Get("/pools", {{"If-None-Match", etag}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_TRUE(again->body.empty());

  struct Case {
    const char* path;
    int status;
  };
  // What a dashboard build has and this one has not; and what neither has.
  for (const Case& c : std::vector<Case>{{"/assets/index.js", 404},
                                         {"/favicon.svg", 404},
                                         {"/pools/a/b", 404},
                                         {"/api/views/overview", 404}}) {
    SCOPED_TRACE(c.path);
    auto reply = client.Get(c.path);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, c.status);
  }
}

// The UI's public config says there is no dashboard, whatever the auth mode.
TEST(UiWithoutDashboard, UiConfigSaysThereIsNoDashboard) {
  struct Case {
    const char* auth;
    const char* issuer;
  };
  for (const Case& c : std::vector<Case>{{"dev", ""}, {"oidc", "https://login.example.com/r"}}) {
    SCOPED_TRACE(c.auth);
    UiOptions ui;
    ui.auth = c.auth;
    ui.issuer = c.issuer;
    UiServer server(ui);
    auto config = server.Client().Get("/api/ui/config");
    ASSERT_TRUE(config);
    EXPECT_EQ(config->status, 200);
    const Json json = Json::parse(config->body);
    EXPECT_EQ(json["auth"], c.auth);
    EXPECT_EQ(json["dashboard"], false);
  }
}

}  // namespace ui_without_dashboard_test
}  // namespace gpupool::api
