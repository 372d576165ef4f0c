#include "replay/report.h"

#include <gtest/gtest.h>

namespace gpupool::replay {
namespace report_test {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HtmlEscape, EscapesWhatHtmlGivesMeaningTo) {
  const std::pair<std::string, std::string> cases[] = {
      {"plain", "plain"},
      {"a<b>c", "a&lt;b&gt;c"},
      {"\"q\" & 'r'", "&quot;q&quot; &amp; &#39;r&#39;"},
      {"", ""},
  };
  for (const auto& [in, out] : cases) EXPECT_EQ(HtmlEscape(in), out) << in;
}

PolicyRun RunOf(const std::string& policy, std::vector<double> allocated) {
  PolicyRun run;
  run.policy = policy;
  PoolSeries& pool = run.series.node_pools["default"];
  for (size_t i = 0; i < allocated.size(); ++i) {
    run.series.t_ms.push_back(static_cast<int64_t>(i) * 3'600'000);
    pool.capacity_gpus.push_back(8);
    pool.allocated_gpus.push_back(allocated[i]);
    pool.fragmentation_gpus.push_back(0.5);
    run.series.pending_gpus.push_back(0);
    run.series.pending_jobs.push_back(static_cast<int>(i));
    run.series.running_jobs.push_back(1);
  }
  return run;
}

TEST(HtmlReport, OneLinePerPolicyAndChartAndNothingFetched) {
  RunInputs inputs;
  inputs.trace_file = "jobs<1>.csv";
  inputs.scenario_files = {"cluster.yaml"};
  inputs.policies = {"fgd", "best-fit"};
  const std::vector<PolicyRun> runs = {RunOf("fgd", {0, 4, 8}), RunOf("best-fit", {0, 2, 4})};
  const std::string html = HtmlReport(inputs, runs);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(Count(html, "<polyline"), 5u * runs.size());  // five charts
  EXPECT_EQ(Count(html, "<title>fgd</title>"), 5u);
  EXPECT_NE(html.find("jobs&lt;1&gt;.csv"), std::string::npos);
  EXPECT_EQ(html.find("jobs<1>"), std::string::npos);
  // Self-contained: no scripts, links or external sources.
  for (const char* external : {"<script", "<link", "src=", "http://", "https://", "@import"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
  // fgd reaches 100 % at the last sample: the top of the allocation chart (y = 28).
  EXPECT_NE(html.find(",28.0 \"><title>fgd</title>"), std::string::npos);
}

}  // namespace report_test
}  // namespace gpupool::replay
