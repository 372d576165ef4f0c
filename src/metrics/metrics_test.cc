#include "metrics/metrics.h"

#include <gtest/gtest.h>

namespace gpupool::metrics {
namespace metrics_test {

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

}  // namespace metrics_test
}  // namespace gpupool::metrics
