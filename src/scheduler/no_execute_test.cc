// NoExecute taints tolerated for a bounded time (tolerationSeconds): deadlines, expiry, and the
// RFC 3339 parser behind the taints' timeAdded and pods' status.startTime.

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "common/clock.h"
#include "scheduler/scenario.h"
#include "scheduler/scheduler.h"
#include "scheduler/test_util.h"

namespace gpupool::scheduler {
namespace no_execute_test {

using testing::Json;
using testing::NodeBuilder;
using testing::PodBuilder;

int64_t T(const std::string& text) {
  std::optional<int64_t> ms = ParseTimestampMillis(text);
  EXPECT_TRUE(ms.has_value()) << text;
  return ms.value_or(0);
}

Json Tol(const std::string& key, std::optional<int64_t> seconds) {
  Json t = {{"key", key}, {"operator", "Exists"}, {"effect", "NoExecute"}};
  if (seconds) t["tolerationSeconds"] = *seconds;
  return t;
}

// Over 80 lines only by its table of cases, one per row.
TEST(NoExecuteTest, DeadlinesTable) {
  const std::string kNow = "2026-01-01T00:10:00Z";
  struct Case {
    std::string name;
    NodeBuilder node;
    PodBuilder pod;
    std::optional<std::string> bound_at;
    std::string now;  // "" = not given
    bool evicted;
    std::string message_part;  // of the eviction message, when evicted
    // When not evicted: the reported deadline ("" = no entry, "null" = entry without a time).
    std::string deadline;
    std::string taint;  // of the entry
  };
  const Case cases[] = {
      {"no tolerationSeconds: tolerated forever",
       NodeBuilder("n").TaintAddedAt("a", "", "NoExecute", "2026-01-01T00:00:00Z"),
       PodBuilder("p").On("n").Toleration(Tol("a", std::nullopt)), std::nullopt, kNow, false, "",
       "", ""},
      {"tolerationSeconds 0: evicted at once", NodeBuilder("n").Taint("a", "", "NoExecute"),
       PodBuilder("p").On("n").Toleration(Tol("a", 0)), std::nullopt, kNow, true,
       "tolerationSeconds <= 0", "", ""},
      {"negative tolerationSeconds: evicted at once, even without a clock",
       NodeBuilder("n").Taint("a", "", "NoExecute"),
       PodBuilder("p").On("n").Toleration(Tol("a", -5)), std::nullopt, "", true,
       "tolerates for -5 s", "", ""},
      {"positive, timeAdded long ago: expired",
       NodeBuilder("n").TaintAddedAt("a", "x", "NoExecute", "2026-01-01T00:00:00Z"),
       PodBuilder("p").On("n").Toleration(Tol("a", 300)), std::nullopt, kNow, true,
       "until 2026-01-01T00:05:00Z", "", ""},
      {"positive, timeAdded recent: deadline",
       NodeBuilder("n").TaintAddedAt("a", "x", "NoExecute", "2026-01-01T00:00:00Z"),
       PodBuilder("p").On("n").Toleration(Tol("a", 3600)), std::nullopt, kNow, false, "",
       "2026-01-01T01:00:00Z", "a=x:NoExecute"},
      {"positive, no timeAdded, no binding time: from now",
       NodeBuilder("n").Taint("a", "", "NoExecute"),
       PodBuilder("p").On("n").Toleration(Tol("a", 300)), std::nullopt, kNow, false, "",
       "2026-01-01T00:15:00Z", "a:NoExecute"},
      {"positive, no timeAdded, bound long ago: expired",
       NodeBuilder("n").Taint("a", "", "NoExecute"),
       PodBuilder("p").On("n").Toleration(Tol("a", 300)), "2026-01-01T00:00:00Z", kNow, true,
       "until 2026-01-01T00:05:00Z", "", ""},
      {"bound after the taint appeared: from the binding",
       NodeBuilder("n").TaintAddedAt("a", "", "NoExecute", "2026-01-01T00:00:00Z"),
       PodBuilder("p").On("n").Toleration(Tol("a", 300)), "2026-01-01T00:08:00Z", kNow, false, "",
       "2026-01-01T00:13:00Z", "a:NoExecute"},
      {"several taints: the earliest deadline wins",
       NodeBuilder("n")
           .TaintAddedAt("a", "", "NoExecute", "2026-01-01T00:00:00Z")
           .TaintAddedAt("b", "", "NoExecute", "2026-01-01T00:09:00Z"),
       PodBuilder("p").On("n").Toleration(Tol("a", 3600)).Toleration(Tol("b", 120)), std::nullopt,
       kNow, false, "", "2026-01-01T00:11:00Z", "b:NoExecute"},
      {"several taints: one forever, one bounded",
       NodeBuilder("n").Taint("a", "", "NoExecute").Taint("b", "", "NoExecute"),
       PodBuilder("p").On("n").Toleration(Tol("a", std::nullopt)).Toleration(Tol("b", 60)),
       std::nullopt, kNow, false, "", "2026-01-01T00:11:00Z", "b:NoExecute"},
      {"several taints: one with 0 evicts",
       NodeBuilder("n").Taint("a", "", "NoExecute").Taint("b", "", "NoExecute"),
       PodBuilder("p").On("n").Toleration(Tol("a", 3600)).Toleration(Tol("b", 0)), std::nullopt,
       kNow, true, "taint {b: }", "", ""},
      {"first tolerating toleration counts (bounded first)",
       NodeBuilder("n").Taint("a", "", "NoExecute"),
       PodBuilder("p").On("n").Toleration(Tol("a", 60)).Toleration({{"operator", "Exists"}}),
       std::nullopt, kNow, false, "", "2026-01-01T00:11:00Z", "a:NoExecute"},
      {"first tolerating toleration counts (forever first)",
       NodeBuilder("n").Taint("a", "", "NoExecute"),
       PodBuilder("p").On("n").Toleration({{"operator", "Exists"}}).Toleration(Tol("a", 60)),
       std::nullopt, kNow, false, "", "", ""},
      {"untolerated NoExecute taint: evicted", NodeBuilder("n").Taint("a", "", "NoExecute"),
       PodBuilder("p").On("n").Toleration(Tol("other", 60)), std::nullopt, kNow, true,
       "does not tolerate", "", ""},
      {"no clock: a passed deadline is reported, not enforced",
       NodeBuilder("n").TaintAddedAt("a", "", "NoExecute", "2020-01-01T00:00:00Z"),
       PodBuilder("p").On("n").Toleration(Tol("a", 60)), std::nullopt, "", false, "",
       "2020-01-01T00:01:00Z", "a:NoExecute"},
      {"no clock and no times: deadline unknown", NodeBuilder("n").Taint("a", "", "NoExecute"),
       PodBuilder("p").On("n").Toleration(Tol("a", 60)), std::nullopt, "", false, "", "null",
       "a:NoExecute"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterSnapshot s;
    s.nodes = {c.node.Build()};
    s.pods = {c.pod.Build()};
    if (!c.now.empty()) s.now_ms = T(c.now);
    if (c.bound_at) s.bound_at_ms["p"] = T(*c.bound_at);
    CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
    if (c.evicted) {
      ASSERT_EQ(r.evictions.size(), 1u);
      EXPECT_EQ(r.evictions[0].pod, "p");
      EXPECT_EQ(r.evictions[0].reason, EvictionReason::kNoExecute);
      EXPECT_NE(r.evictions[0].message.find(c.message_part), std::string::npos)
          << r.evictions[0].message;
      EXPECT_TRUE(r.no_execute_deadlines.empty());
      // Requeued as pending, not placed again in the same cycle.
      const PendingPod* pending = testing::FindPending(r, "p");
      ASSERT_NE(pending, nullptr);
      EXPECT_NE(pending->reason.find("requeued after eviction (NoExecute)"), std::string::npos);
      continue;
    }
    EXPECT_TRUE(r.evictions.empty());
    EXPECT_TRUE(r.unschedulable.empty());
    if (c.deadline.empty()) {
      EXPECT_TRUE(r.no_execute_deadlines.empty());
      continue;
    }
    ASSERT_EQ(r.no_execute_deadlines.size(), 1u);
    const NoExecuteDeadline& d = r.no_execute_deadlines[0];
    EXPECT_EQ(d.pod, "p");
    EXPECT_EQ(d.node, "n");
    EXPECT_EQ(d.taint, c.taint);
    if (c.deadline == "null") {
      EXPECT_FALSE(d.deadline_ms.has_value());
    } else {
      ASSERT_TRUE(d.deadline_ms.has_value());
      EXPECT_EQ(FormatTimestamp(*d.deadline_ms), c.deadline);
    }
  }
}

TEST(NoExecuteTest, ExpiredGangMemberTakesItsGang) {
  ClusterSnapshot s;
  s.nodes = {
      NodeBuilder("tainted").TaintAddedAt("a", "", "NoExecute", "2026-01-01T00:00:00Z").Build(),
      NodeBuilder("clean").Build()};
  s.pods = {PodBuilder("g-0").On("tainted").Gang("g").Toleration(Tol("a", 60)).Build(),
            PodBuilder("g-1").On("clean").Gang("g").Build()};
  s.now_ms = T("2026-01-01T00:10:00Z");
  CycleResult r = Scheduler(SchedulerOptions{}).RunCycle(s);
  ASSERT_EQ(r.evictions.size(), 2u);
  EXPECT_EQ(r.evictions[0].pod, "g-0");
  EXPECT_EQ(r.evictions[1].pod, "g-1");
  EXPECT_NE(r.evictions[1].message.find("fell below gang-min"), std::string::npos);
  EXPECT_TRUE(r.no_execute_deadlines.empty());
}

TEST(NoExecuteTest, ScenarioJsonAndStartTime) {
  Scenario scenario;
  ASSERT_TRUE(AddScenarioText(R"(
apiVersion: v1
kind: Node
metadata: {name: n}
spec:
  taints: [{key: maintenance, effect: NoExecute, timeAdded: "2026-01-01T00:00:00Z"}]
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: stays}
spec:
  nodeName: n
  containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]
  tolerations: [{key: maintenance, operator: Exists, effect: NoExecute, tolerationSeconds: 3600}]
status: {startTime: "2026-01-01T00:30:00Z"}
---
apiVersion: v1
kind: Pod
metadata: {name: goes}
spec:
  nodeName: n
  containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]
  tolerations: [{key: maintenance, operator: Exists, effect: NoExecute, tolerationSeconds: 60}]
)",
                              "scenario.yaml", scenario)
                  .ok());
  EXPECT_EQ(scenario.snapshot.bound_at_ms.at("stays"), T("2026-01-01T00:30:00Z"));
  scenario.snapshot.now_ms = T("2026-01-01T00:45:00Z");
  Json out = ScheduleResultToJson(Schedule(scenario, SchedulerOptions{}));
  ASSERT_EQ(out["evictions"].size(), 1u);
  EXPECT_EQ(out["evictions"][0]["pod"], "goes");
  EXPECT_EQ(out["evictions"][0]["reason"], "NoExecute");
  ASSERT_TRUE(out.contains("noExecuteDeadlines"));
  ASSERT_EQ(out["noExecuteDeadlines"].size(), 1u);
  EXPECT_EQ(out["noExecuteDeadlines"][0], Json({{"pod", "stays"},
                                                {"node", "n"},
                                                {"taint", "maintenance:NoExecute"},
                                                {"tolerationSeconds", 3600},
                                                {"deadline", "2026-01-01T01:30:00Z"}}));
  const std::string table = ScheduleResultToTable(Schedule(scenario, SchedulerOptions{}));
  EXPECT_NE(table.find("NOEXECUTE DEADLINES (1)"), std::string::npos) << table;

  Scenario bad;
  Status status = AddScenarioText(R"(
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {nodeName: n, containers: [{name: c, image: i}]}
status: {startTime: yesterday}
)",
                                  "bad.yaml", bad);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("status.startTime"), std::string::npos) << status.message();
}

TEST(NoExecuteTest, ParseTimestampMillis) {
  struct Case {
    std::string text;
    std::optional<int64_t> want;
  };
  const Case cases[] = {
      {"1970-01-01T00:00:00Z", 0},
      {"1970-01-02T00:00:01Z", 86'401'000},
      {"2000-03-01T00:00:00Z", 951'868'800'000},
      {"2026-11-22T01:02:03.5Z", 1'795'309'323'500},
      {"2026-11-22T01:02:03.123456Z", 1'795'309'323'123},
      {"2026-11-22T02:02:03+01:00", 1'795'309'323'000},
      {"2026-11-21T23:02:03-02:00", 1'795'309'323'000},
      {"2026-11-22 01:02:03Z", std::nullopt},
      {"2026-13-01T00:00:00Z", std::nullopt},
      {"2026-11-22T01:02:03", std::nullopt},
      {"2026-11-22T01:02:03.Z", std::nullopt},
      {"yesterday", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(ParseTimestampMillis(c.text), c.want);
  }
  // Round trip with the project's formatter.
  EXPECT_EQ(FormatTimestamp(*ParseTimestampMillis("2026-11-22T01:02:03Z")), "2026-11-22T01:02:03Z");
}

}  // namespace no_execute_test
}  // namespace gpupool::scheduler
