#include "service/views.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>

#include "model/k8s.h"
#include "scheduler/scheduler.h"
#include "store/store.h"

namespace gpupool::service {
namespace views_test {

using Json = nlohmann::ordered_json;

model::PodScheduling Pod(const std::string& name, const std::string& queue, const char* priority,
                         const std::string& created, const std::string& gang = "") {
  Json pod = {{"metadata", {{"name", name}, {"labels", {{"gpupool.io/queue", queue}}}}},
              {"spec",
               {{"priorityClassName", priority},
                {"containers",
                 {{{"name", "c"},
                   {"resources", {{"requests", {{"nvidia.com/gpu", "1"}, {"cpu", "1"}}}}}}}}}}};
  if (!created.empty()) pod["metadata"]["creationTimestamp"] = created;
  if (!gang.empty()) pod["metadata"]["labels"]["gpupool.io/gang"] = gang;
  auto parsed = model::PodSchedulingFromJson(pod);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  return *parsed;
}

TEST(RankPendingPods, PriorityThenAgeGangsAsOneJobPerQueue) {
  std::vector<model::PodScheduling> pods = {
      Pod("a", "q1", "normal", "2026-01-01T00:00:03Z"),
      Pod("b", "q1", "high", "2026-01-01T00:00:05Z"),
      Pod("c", "q1", "normal", "2026-01-01T00:00:01Z"),
      Pod("g1", "q1", "normal", "2026-01-01T00:00:04Z", "gang"),
      Pod("g2", "q1", "normal", "2026-01-01T00:00:02Z", "gang"),
      Pod("x", "q2", "low", ""),
      Pod("bound", "q1", "high", "2026-01-01T00:00:00Z"),
  };
  auto positions = RankPendingPods(pods, {"a", "b", "c", "g1", "g2", "x"});
  struct Case {
    std::string pod, queue;
    int position, length;
  };
  const std::vector<Case> cases = {
      {"b", "q1", 1, 4},   // high first
      {"c", "q1", 2, 4},   // then the oldest
      {"g1", "q1", 3, 4},  // a gang is as old as its oldest pod (00:02)
      {"g2", "q1", 3, 4}, {"a", "q1", 4, 4}, {"x", "q2", 1, 1},
  };
  EXPECT_EQ(positions.size(), cases.size());
  EXPECT_FALSE(positions.contains("bound"));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pod);
    ASSERT_TRUE(positions.contains(c.pod));
    EXPECT_EQ(positions[c.pod].queue, c.queue);
    EXPECT_EQ(positions[c.pod].position, c.position);
    EXPECT_EQ(positions[c.pod].length, c.length);
  }
}

// The positions are the order in which the scheduler itself places a queue's jobs: on a node with
// room for one pod, each cycle binds the job at position 1.
TEST(RankPendingPods, MatchesTheSchedulersOrder) {
  auto node = model::NodeFromJson(Json::parse(R"({"metadata": {"name": "n1"},
      "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "110",
                                 "nvidia.com/gpu": "1"}}})"));
  ASSERT_TRUE(node.ok());
  scheduler::ClusterSnapshot snapshot;
  snapshot.nodes = {*node};
  snapshot.pods = {Pod("p1", "q", "normal", "2026-01-01T00:00:03Z"),
                   Pod("p2", "q", "high", "2026-01-01T00:00:09Z"),
                   Pod("p3", "q", "normal", "2026-01-01T00:00:01Z"),
                   Pod("p4", "q", "low", "2026-01-01T00:00:00Z"), Pod("p5", "q", "normal", "")};
  model::Queue queue;
  queue.name = "q";
  queue.resources["default"][model::QuotaResource::kGpu].deserved_milli = model::kUnlimited;
  snapshot.queues = {queue};
  scheduler::Scheduler scheduler({});
  std::vector<std::string> scheduled;
  while (!snapshot.pods.empty()) {
    std::set<std::string> pending;
    for (const auto& pod : snapshot.pods) pending.insert(scheduler::PodKey(pod));
    auto positions = RankPendingPods(snapshot.pods, pending);
    auto cycle = scheduler.RunCycle(snapshot);
    ASSERT_EQ(cycle.bindings.size(), 1u);
    EXPECT_EQ(positions[cycle.bindings[0].pod].position, 1) << cycle.bindings[0].pod;
    scheduled.push_back(cycle.bindings[0].pod);
    std::erase_if(snapshot.pods, [&](const auto& p) { return p.name == cycle.bindings[0].pod; });
  }
  EXPECT_EQ(scheduled, (std::vector<std::string>{"p2", "p3", "p1", "p5", "p4"}));
}

constexpr char kNodes[] = R"(apiVersion: v1
kind: NodeList
items:
- metadata: {name: a100-1, labels: {node-pool: a100, nvidia.com/gpu.product: A100}}
  status: {allocatable: {cpu: "64", memory: 512Gi, ephemeral-storage: 2Ti, pods: "110", nvidia.com/gpu: "8"}}
- metadata: {name: a100-2, labels: {node-pool: a100, nvidia.com/gpu.product: A100}}
  status: {allocatable: {cpu: "64", memory: 512Gi, ephemeral-storage: 2Ti, pods: "110", nvidia.com/gpu: "8"}}
- metadata: {name: cpu-1, labels: {kind: cpu}}
  spec: {unschedulable: true}
  status: {allocatable: {cpu: "16", memory: 64Gi, ephemeral-storage: 1Ti, pods: "110"}}
)";

class ViewsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = store::OpenStore(":memory:", {.clock = &clock_});
    ASSERT_TRUE(opened.ok());
    store_ = std::move(*opened);
    service_ = std::make_unique<Service>(*store_, clock_);
    ASSERT_TRUE(service_->EnsureBuiltins().ok());
    ASSERT_TRUE(service_->ImportNodes(admin_, kNodes, "nodes.yaml").ok());
    UpdateConfigRequest node_pool;
    node_pool.kind = "NODE_POOL";
    node_pool.name = "a100";
    node_pool.body = {{"label_key", "node-pool"}, {"label_value", "a100"}};
    ASSERT_TRUE(service_->UpdateConfig(admin_, node_pool).ok());
    // Requests build the views themselves: what a test wrote is what the next view shows.
    views_ = std::make_unique<Views>(*service_, *store_, clock_,
                                     ViewOptions{.background_refresh = false});
  }

  std::string Submit(const std::string& user, int gpus = 0) {
    SubmitRequest submit;
    submit.pool = "default";
    submit.file_name = "wf.yaml";
    submit.spec_text =
        "workflow:\n  name: wf\n  resources:\n    default: {cpu: 1, memory: 1Gi, "
        "storage: 1Gi" +
        std::string(gpus ? ", gpu: " + std::to_string(gpus) : "") +
        "}\n  tasks:\n  - {name: t, image: busybox}\n";
    auto submitted = service_->SubmitWorkflow({user, {"osmo-admin"}, "test"}, submit);
    EXPECT_TRUE(submitted.ok()) << submitted.status().ToString();
    clock_.Advance(1000);
    return submitted.ok() ? submitted->workflow_id : "";
  }

  FakeClock clock_;
  Caller admin_{"root", {"osmo-admin"}, "test"};
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<Views> views_;
};

TEST_F(ViewsTest, NodesFilterBySelectorAndPage) {
  struct Case {
    std::string selector;
    std::optional<std::string> node_pool;
    std::vector<std::string> names;
  };
  const std::vector<Case> cases = {
      {"", std::nullopt, {"a100-1", "a100-2", "cpu-1"}},
      {"node-pool=a100", std::nullopt, {"a100-1", "a100-2"}},
      {"!node-pool", std::nullopt, {"cpu-1"}},
      {"", "default", {"cpu-1"}},
      {"kind in (cpu, gpu)", "a100", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.selector);
    NodePageRequest request;
    request.selector = c.selector;
    request.node_pool = c.node_pool;
    auto page = views_->Nodes(admin_, request);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    std::vector<std::string> names;
    for (const auto& item : (*page)["items"]) names.push_back(item["name"]);
    EXPECT_EQ(names, c.names);
    EXPECT_EQ((*page)["total"], c.names.size());
  }
  // Two pages of two and one; the token continues where the first ended.
  NodePageRequest first;
  first.limit = 2;
  auto one = views_->Nodes(admin_, first);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ((*one)["items"].size(), 2u);
  ASSERT_TRUE((*one)["continue"].is_string());
  NodePageRequest second = first;
  second.continue_token = (*one)["continue"];
  auto two = views_->Nodes(admin_, second);
  ASSERT_TRUE(two.ok());
  ASSERT_EQ((*two)["items"].size(), 1u);
  EXPECT_EQ((*two)["items"][0]["name"], "cpu-1");
  EXPECT_EQ((*two)["items"][0]["cordoned"], true);
  EXPECT_TRUE((*two)["continue"].is_null());

  NodePageRequest bad;
  bad.selector = "a in b";
  EXPECT_EQ(views_->Nodes(admin_, bad).status().code(), StatusCode::kInvalidArgument);
  bad = {};
  bad.continue_token = "zz";
  EXPECT_EQ(views_->Nodes(admin_, bad).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ViewsTest, WorkflowPagesNewestFirstWithFilters) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(Submit(i % 2 ? "bob" : "alice"));
  WorkflowPageRequest request;
  request.limit = 2;
  std::vector<std::string> seen;
  for (int page = 0; page < 5; ++page) {
    auto listed = views_->Workflows(admin_, request);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    for (const auto& item : (*listed)["items"]) seen.push_back(item["id"]);
    if ((*listed)["continue"].is_null()) break;
    request.continue_token = (*listed)["continue"];
  }
  EXPECT_EQ(seen, (std::vector<std::string>{ids[4], ids[3], ids[2], ids[1], ids[0]}));

  WorkflowPageRequest bobs;
  bobs.user = "bob";
  auto listed = views_->Workflows(admin_, bobs);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ((*listed)["items"].size(), 2u);
  EXPECT_EQ((*listed)["items"][0]["id"], ids[3]);
  EXPECT_EQ((*listed)["items"][0]["queue"], "default");

  WorkflowPageRequest other_queue;
  other_queue.queue = "nope";
  EXPECT_TRUE((*views_->Workflows(admin_, other_queue))["items"].empty());

  // A user without a role for the pool sees only its own workflows.
  Caller carol{"carol", {}, "test"};
  auto mine = views_->Workflows(carol, {});
  ASSERT_TRUE(mine.ok());
  EXPECT_TRUE((*mine)["items"].empty());
}

TEST_F(ViewsTest, PublishedStateFeedsOverviewQueuesAndPositions) {
  const std::string id = Submit("alice", 1);
  auto workflow = store_->GetWorkflow(id);
  ASSERT_TRUE(workflow.ok());
  auto insight = std::make_shared<SchedulerInsight>();
  scheduler::QueueShare share;
  share.queue = "default";
  share.node_pool = "a100";
  share.resources[0] = {.deserved = 4000,
                        .fair_share = 6000,
                        .allocated = 5000,
                        .limit = model::kUnlimited,
                        .demand = 8000,
                        .over_quota_weight = 1};
  insight->shares = {share};
  insight->node_pools = {{"default", {0, 16000, 64LL << 30}}, {"a100", {16000, 128000, 1LL << 40}}};
  model::Queue queue;
  queue.name = "default";
  insight->queues = {queue};
  insight->positions[PositionKey(id, 0)] = {"default", 2, 3};
  auto state = std::make_shared<LiveState>();
  state->at_ms = clock_.NowMillis();
  state->workflows = {*workflow};
  state->insight = insight;
  views_->Publish(state);

  auto overview = views_->Overview(admin_);
  ASSERT_TRUE(overview.ok()) << overview.status().ToString();
  EXPECT_EQ((*overview)["leader"], true);
  EXPECT_EQ((*overview)["totals"]["nodes"], 3);
  EXPECT_EQ((*overview)["totals"]["gpu_capacity"], 16000);
  EXPECT_EQ((*overview)["totals"]["pending_tasks"], 1);
  EXPECT_EQ((*overview)["totals"]["pending_gpus"], 1000);
  EXPECT_EQ((*overview)["history"]["samples"].size(), 1u);

  auto listed = views_->Workflows(admin_, {});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ((*listed)["items"][0]["tasks"][0]["queue_position"], 2);
  EXPECT_EQ((*listed)["items"][0]["tasks"][0]["queue_length"], 3);

  auto queues = views_->Queues(admin_, "gpu");
  ASSERT_TRUE(queues.ok()) << queues.status().ToString();
  ASSERT_EQ((*queues)["rows"].size(), 1u);
  const Json& row = (*queues)["rows"][0];
  EXPECT_EQ(row["allocated"], 5000);
  EXPECT_DOUBLE_EQ(row["ratio"].get<double>(), 1.25);
  EXPECT_EQ(row["borrowing"], true);
  // The pending task may use every node pool its platform's nodes are in (a100 here), and the
  // queue holds less than its fair share there.
  EXPECT_EQ(row["starved"], true);

  // 16 GPUs, one queue deserving 4 and asking 8: the explanation re-runs the water-filling and
  // finds 8, not the 6 this made-up insight claims, and says so.
  auto explained = views_->Queue(admin_, "default", "a100", "gpu");
  ASSERT_TRUE(explained.ok()) << explained.status().ToString();
  const Json& explanation = (*explained)["explanation"];
  ASSERT_TRUE(explanation.is_object());
  EXPECT_EQ(explanation["fair_share"], 8000);
  EXPECT_EQ(explanation["matches_scheduler"], false);
  EXPECT_EQ(explanation["levels"][0]["members"][0]["deserved_pass"], 4000);
  EXPECT_EQ(explanation["levels"][0]["members"][0]["over_quota"], 4000);
  EXPECT_EQ(views_->Queue(admin_, "nope", "", "gpu").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(views_->Queues(admin_, "disk").status().code(), StatusCode::kInvalidArgument);
}

// The loop's state as the views take it: every unfinished workflow of the store, with `changes`
// applied (what the loop saw that the store no longer says, or not yet).
std::shared_ptr<LiveState> StateOf(store::Store& store, int64_t at_ms,
                                   const std::map<std::string, std::string>& status_changes = {}) {
  auto workflows = store.ListWorkflows({.unfinished_only = true, .limit = 0});
  EXPECT_TRUE(workflows.ok());
  auto state = std::make_shared<LiveState>();
  state->at_ms = at_ms;
  state->workflows = *workflows;
  for (auto& workflow : state->workflows) {
    auto it = status_changes.find(workflow.id);
    if (it != status_changes.end()) workflow.status = it->second;
  }
  state->insight = std::make_shared<SchedulerInsight>();
  return state;
}

void Finish(store::Store& store, const std::string& id) {
  auto workflow = store.GetWorkflow(id);
  ASSERT_TRUE(workflow.ok());
  workflow->status = "COMPLETED";
  for (auto& task : workflow->tasks) task.status = "COMPLETED";
  ASSERT_TRUE(store.UpdateWorkflow(*workflow).ok());
}

TEST_F(ViewsTest, WorkflowPagesMergeTheLoopsStateWithFinishedWorkflows) {
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(Submit(i % 2 ? "bob" : "alice"));
  Finish(*store_, ids[0]);
  Finish(*store_, ids[2]);
  // The loop's last state: 1, 3, 4 and 5 unfinished, 5 running there (the store still says
  // PENDING). 4 finished after that state: the store's record is the one shown, once.
  views_->Publish(StateOf(*store_, clock_.NowMillis(), {{ids[5], "RUNNING"}}));
  Finish(*store_, ids[4]);

  auto page_through = [&](WorkflowPageRequest request) {
    std::vector<std::string> seen;
    for (int page = 0; page < 10; ++page) {
      auto listed = views_->Workflows(admin_, request);
      EXPECT_TRUE(listed.ok()) << listed.status().ToString();
      if (!listed.ok()) break;
      for (const auto& item : (*listed)["items"]) {
        seen.push_back(item["id"].get<std::string>() + " " + item["status"].get<std::string>());
      }
      if ((*listed)["continue"].is_null()) break;
      request.continue_token = (*listed)["continue"];
    }
    return seen;
  };
  struct Case {
    const char* name;
    WorkflowPageRequest request;
    std::vector<std::string> seen;
  };
  const auto id = [&](int i, const char* status) { return ids[i] + " " + status; };
  const std::vector<Case> cases = {
      {"all, two by two",
       {.limit = 2},
       {id(5, "RUNNING"), id(4, "COMPLETED"), id(3, "PENDING"), id(2, "COMPLETED"),
        id(1, "PENDING"), id(0, "COMPLETED")}},
      {"one by one",
       {.limit = 1},
       {id(5, "RUNNING"), id(4, "COMPLETED"), id(3, "PENDING"), id(2, "COMPLETED"),
        id(1, "PENDING"), id(0, "COMPLETED")}},
      {"finished: from the store",
       {.status = "COMPLETED"},
       {id(4, "COMPLETED"), id(2, "COMPLETED"), id(0, "COMPLETED")}},
      // An unfinished status is answered from the loop's last state alone (no store read): 4,
      // finished since, is still pending there until the next state.
      {"pending: from the state",
       {.status = "PENDING"},
       {id(4, "PENDING"), id(3, "PENDING"), id(1, "PENDING")}},
      {"a user",
       {.user = "bob", .limit = 2},
       {id(5, "RUNNING"), id(3, "PENDING"), id(1, "PENDING")}},
      {"a user whose workflows all finished",
       {.user = "alice"},
       {id(4, "COMPLETED"), id(2, "COMPLETED"), id(0, "COMPLETED")}},
      {"another pool", {.pool = "nope"}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(page_through(c.request), c.seen);
  }
}

TEST_F(ViewsTest, TheRefresherBuildsAtStartAndAfterEachPublish) {
  Views views(*service_, *store_, clock_, ViewOptions{});
  // The first request waits for the context the refresher builds at start-up.
  auto first = views.Overview(admin_);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ((*first)["leader"], false);
  // Publish only hands the state over; the views show it once the refresher has built them.
  Submit("alice", 1);
  views.Publish(StateOf(*store_, clock_.NowMillis()));
  Json overview;
  for (int i = 0; i < 500; ++i) {
    auto now = views.Overview(admin_);
    ASSERT_TRUE(now.ok());
    overview = *now;
    if (overview["leader"] == true) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(overview["leader"], true);
  EXPECT_EQ(overview["totals"]["pending_tasks"], 1);
  EXPECT_EQ(overview["history"]["samples"].size(), 1u);
}

// While nobody reads the views, the states the loop publishes are not built (but for a history
// sample that is due); the first read after the quiet spell waits for the newest one, so it
// shows what the loop published last.
TEST_F(ViewsTest, StatesPublishedWhileNobodyReadsAreBuiltAtTheNextRead) {
  Views views(*service_, *store_, clock_, ViewOptions{.history_interval_ms = 60'000});
  // The overview once it shows `pending` tasks and `samples` history samples (the refresher
  // builds in the background; the sample is recorded right after the build).
  auto shown = [&](int pending, size_t samples) {
    for (int i = 0; i < 500; ++i) {
      auto now = views.Overview(admin_);
      if (!now.ok()) return Json(now.status().ToString());
      if ((*now)["leader"] == true && (*now)["totals"]["pending_tasks"] == pending &&
          (*now)["history"]["samples"].size() == samples) {
        return *now;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return Json("not shown");
  };
  Submit("alice", 1);
  views.Publish(StateOf(*store_, clock_.NowMillis()));
  EXPECT_TRUE(shown(1, 1).is_object());
  const uint64_t built = views.ContextsBuilt();

  // Quiet: no read for longer than idle_after_ms; the loop publishes on.
  clock_.Advance(ViewOptions{}.idle_after_ms);
  Submit("bob", 1);
  views.Publish(StateOf(*store_, clock_.NowMillis()));
  Submit("carol", 1);
  views.Publish(StateOf(*store_, clock_.NowMillis()));
  EXPECT_EQ(views.ContextsBuilt(), built) << "built while nobody reads";
  auto overview = views.Overview(admin_);  // one read, no retry: the newest state
  ASSERT_TRUE(overview.ok()) << overview.status().ToString();
  EXPECT_EQ((*overview)["totals"]["pending_tasks"], 3);

  // A history sample that is due is recorded whether or not anyone reads.
  clock_.Advance(ViewOptions{}.idle_after_ms + 60'000);
  views.Publish(StateOf(*store_, clock_.NowMillis()));
  EXPECT_TRUE(shown(3, 2).is_object());
}

TEST_F(ViewsTest, PoolsCountSharedNodesOnce) {
  auto pools = views_->Pools(admin_);
  ASSERT_TRUE(pools.ok()) << pools.status().ToString();
  ASSERT_EQ((*pools)["pools"].size(), 1u);
  EXPECT_EQ((*pools)["pools"][0]["name"], "default");
  EXPECT_EQ((*pools)["totals"]["nodes"], (*pools)["pools"][0]["nodes"]);
  // A pool the caller may not use is neither listed nor shown.
  Caller carol{"carol", {}, "test"};
  EXPECT_EQ(views_->Pool(carol, "default").status().code(), StatusCode::kNotFound);
  auto pool = views_->Pool(admin_, "default");
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ((*pool)["platforms"][0]["name"], "default");
}

}  // namespace views_test
}  // namespace gpupool::service
