#include "server/metrics.h"

#include <gtest/gtest.h>

#include "server/status_to_http.h"

namespace gpupool::server {
namespace {

TEST(MetricsTest, RendersPrometheusTextFormat) {
  Registry registry;
  Counter* requests =
      registry.AddCounter("gpupool_http_requests_total", "HTTP requests.", {"route", "code"});
  Gauge* pending = registry.AddGauge("gpupool_pending_pods", "Pending pods.");
  Histogram* latency =
      registry.AddHistogram("gpupool_http_request_seconds", "Latency.", {"route"}, {0.01, 0.1});
  requests->Increment({"/api/workflow/{id}", "200"});
  requests->Increment({"/api/workflow/{id}", "200"});
  requests->Increment({"/api/pool", "403"});
  pending->Set({}, 7);
  latency->Observe({"/api/pool"}, 0.005);
  latency->Observe({"/api/pool"}, 0.05);
  latency->Observe({"/api/pool"}, 3);
  std::string text = registry.Render();
  EXPECT_EQ(text,
            "# HELP gpupool_http_requests_total HTTP requests.\n"
            "# TYPE gpupool_http_requests_total counter\n"
            "gpupool_http_requests_total{route=\"/api/pool\",code=\"403\"} 1\n"
            "gpupool_http_requests_total{route=\"/api/workflow/{id}\",code=\"200\"} 2\n"
            "# HELP gpupool_pending_pods Pending pods.\n"
            "# TYPE gpupool_pending_pods gauge\n"
            "gpupool_pending_pods 7\n"
            "# HELP gpupool_http_request_seconds Latency.\n"
            "# TYPE gpupool_http_request_seconds histogram\n"
            "gpupool_http_request_seconds_bucket{route=\"/api/pool\",le=\"0.01\"} 1\n"
            "gpupool_http_request_seconds_bucket{route=\"/api/pool\",le=\"0.1\"} 2\n"
            "gpupool_http_request_seconds_bucket{route=\"/api/pool\",le=\"+Inf\"} 3\n"
            "gpupool_http_request_seconds_sum{route=\"/api/pool\"} 3.055\n"
            "gpupool_http_request_seconds_count{route=\"/api/pool\"} 3\n");
}

TEST(MetricsTest, GaugeReplaceAllDropsVanishedSeries) {
  Registry registry;
  Gauge* share = registry.AddGauge("gpupool_fair_share", "Fair share.", {"queue"});
  share->Set({"a"}, 1);
  share->ReplaceAll({{{"b"}, 2.5}});
  EXPECT_EQ(share->Value({"a"}), 0);
  EXPECT_EQ(share->Value({"b"}), 2.5);
  EXPECT_EQ(registry.Render().find("queue=\"a\""), std::string::npos);
}

TEST(MetricsTest, EscapesLabelValues) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(StatusToHttpTest, MapsEveryCode) {
  struct Case {
    StatusCode code;
    int http;
  };
  std::vector<Case> cases = {
      {StatusCode::kOk, 200},
      {StatusCode::kInvalidArgument, 400},
      {StatusCode::kUnauthenticated, 401},
      {StatusCode::kPermissionDenied, 403},
      {StatusCode::kNotFound, 404},
      {StatusCode::kAlreadyExists, 409},
      {StatusCode::kAborted, 409},
      {StatusCode::kFailedPrecondition, 409},
      {StatusCode::kUnavailable, 503},
      {StatusCode::kInternal, 500},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(StatusCodeName(c.code)));
    EXPECT_EQ(HttpStatusFor(c.code), c.http);
  }
  auto body = ErrorBody(NotFoundError("pool \"x\" not found"));
  EXPECT_EQ(body["message"], "pool \"x\" not found");
  EXPECT_EQ(body["error_code"], 404);
  EXPECT_EQ(body["code"], "NOT_FOUND");
}

}  // namespace
}  // namespace gpupool::server
