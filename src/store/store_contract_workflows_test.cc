// The store contract: nodes and workflows (records, filters, CAS, transactions observed).
// The fixture and the backends: store_contract_fixture.h.

#include "store/store_contract_fixture.h"

namespace gpupool::store::contract_test {
namespace store_contract_workflows_test {

// ---- Nodes ----
TYPED_TEST(StoreContractTest, NodesUpsertReplaceDelete) {
  Store& s = this->store();
  ASSERT_TRUE(
      s.UpsertNodes({{"n2", NodeObject("n2", 8)}, {"n1", NodeObject("n1", 8)}}, false).ok());
  ASSERT_TRUE(
      s.UpsertNodes({{"n3", NodeObject("n3", 4)}, {"n1", NodeObject("n1", 2)}}, false).ok());
  auto nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n1", "n2", "n3"));
  EXPECT_EQ(nodes->at(0).object, NodeObject("n1", 2));  // upsert replaced n1

  ASSERT_TRUE(s.UpsertNodes({{"n4", NodeObject("n4", 1)}, {"n2", NodeObject("n2", 1)}}, true).ok());
  nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n2", "n4"));
  EXPECT_EQ(nodes->at(0).object, NodeObject("n2", 1));

  ASSERT_TRUE(s.DeleteNodes({"n4", "never-existed"}).ok());
  nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n2"));

  // A bad node fails the whole call.
  EXPECT_EQ(s.UpsertNodes({{"n9", NodeObject("n9", 1)}, {"", NodeObject("", 1)}}, true).code(),
            StatusCode::kInvalidArgument);
  nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n2"));
}

TYPED_TEST(StoreContractTest, ConfigsNodesAndAuditCommitTogetherOrNotAtAll) {
  Store& s = this->store();
  ASSERT_TRUE(s.UpsertNodes({{"n1", NodeObject("n1", 8)}}, false).ok());
  const int64_t revision = this->Put("POOL", "p", ordered_json{{"backend", "b"}});
  auto before = s.GetGenerations();
  ASSERT_TRUE(before.ok());
  ConfigWrite put{.op = ConfigWrite::Op::kPut,
                  .kind = "POOL",
                  .name = "p",
                  .body = ordered_json{{"backend", "c"}}};
  Store::WriteAlso also{.nodes = {{"n2", NodeObject("n2", 4)}, {"n1", NodeObject("n1", 2)}},
                        .audit = {{.user = "alice", .action = "apply", .target = "p"},
                                  {.at_ms = 7, .user = "alice", .action = "node import"}}};
  struct Case {
    std::string name;
    std::optional<int64_t> expected;  // of the pool write
    Store::WriteAlso also;
    StatusCode code;
  };
  const std::vector<Case> cases = {
      // Each fails after or before the configs were checked: nothing of the call stays.
      {"a stale revision", revision + 1, also, StatusCode::kAborted},
      {"a node without a name", revision,
       Store::WriteAlso{.nodes = {{"n3", NodeObject("n3", 1)}, {"", NodeObject("", 1)}},
                        .audit = also.audit},
       StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    put.expected_revision = c.expected;
    auto failed = s.WriteConfigs({put}, this->actor_, c.also);
    EXPECT_EQ(failed.status().code(), c.code) << failed.status().ToString();
    auto config = s.GetConfig("POOL", "p");
    ASSERT_TRUE(config.ok());
    EXPECT_EQ(config->revision, revision);
    auto nodes = s.ListNodes();
    ASSERT_TRUE(nodes.ok());
    EXPECT_THAT(NodeNames(*nodes), ElementsAre("n1"));
    EXPECT_EQ(nodes->at(0).object, NodeObject("n1", 8));
    auto audit = s.ListAudit(0);
    ASSERT_TRUE(audit.ok());
    EXPECT_TRUE(audit->empty());
    auto generations = s.GetGenerations();
    ASSERT_TRUE(generations.ok());
    EXPECT_EQ(generations->configs, before->configs);
    EXPECT_EQ(generations->nodes, before->nodes);
  }

  put.expected_revision = revision;
  auto written = s.WriteConfigs({put}, this->actor_, also);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_THAT(*written, ElementsAre(revision + 1));
  auto nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n1", "n2"));
  EXPECT_EQ(nodes->at(0).object, NodeObject("n1", 2));
  auto audit = s.ListAudit(0);
  ASSERT_TRUE(audit.ok());
  ASSERT_EQ(audit->size(), 2u);
  std::set<std::pair<std::string, int64_t>> records;
  for (const AuditRecord& r : *audit) records.insert({r.action, r.at_ms});
  EXPECT_THAT(records, ::testing::UnorderedElementsAre(
                           std::pair<std::string, int64_t>{"apply", 1'700'000'000'000},
                           std::pair<std::string, int64_t>{"node import", 7}));
  auto generations = s.GetGenerations();
  ASSERT_TRUE(generations.ok());
  EXPECT_GT(generations->nodes, before->nodes);
  EXPECT_GT(generations->configs, before->configs);

  // Nodes alone (no config write), replacing all of them.
  ASSERT_TRUE(s.WriteConfigs({}, this->actor_,
                             Store::WriteAlso{.nodes = {{"n5", NodeObject("n5", 1)}},
                                              .replace_all_nodes = true})
                  .ok());
  nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n5"));
}

TYPED_TEST(StoreContractTest, ChangeNodesIfUnchangedIsACompareAndSet) {
  Store& s = this->store();
  ASSERT_TRUE(
      s.UpsertNodes({{"n1", NodeObject("n1", 8)}, {"n2", NodeObject("n2", 8)}}, false).ok());
  auto g0 = s.GetGenerations();
  ASSERT_TRUE(g0.ok());
  // As read: insert n3, change n1, delete n2, all in one transaction.
  ASSERT_TRUE(s.ChangeNodesIfUnchanged({{"n3", std::nullopt, NodeObject("n3", 1)},
                                        {"n1", NodeObject("n1", 8), NodeObject("n1", 4)},
                                        {"n2", NodeObject("n2", 8), std::nullopt}})
                  .ok());
  auto nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n1", "n3"));
  EXPECT_EQ(nodes->at(0).object, NodeObject("n1", 4));
  EXPECT_GT(s.GetGenerations()->nodes, g0->nodes);

  // Another process changed n1 since: nothing of the batch is written, not even the insert.
  ASSERT_TRUE(this->Open()->UpsertNodes({{"n1", NodeObject("n1", 2)}}, false).ok());
  Status stale = s.ChangeNodesIfUnchanged(
      {{"n5", std::nullopt, NodeObject("n5", 1)}, {"n1", NodeObject("n1", 4), std::nullopt}});
  EXPECT_EQ(stale.code(), StatusCode::kAborted) << stale.ToString();
  EXPECT_NE(stale.message().find("\"n1\""), std::string::npos) << stale.message();
  nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n1", "n3"));
  EXPECT_EQ(nodes->at(0).object, NodeObject("n1", 2));
  // An insert of a node that exists, and a change of one that is gone, are stale too.
  EXPECT_EQ(s.ChangeNodesIfUnchanged({{"n3", std::nullopt, NodeObject("n3", 9)}}).code(),
            StatusCode::kAborted);
  EXPECT_EQ(s.ChangeNodesIfUnchanged({{"n2", NodeObject("n2", 8), NodeObject("n2", 1)}}).code(),
            StatusCode::kAborted);
}

TYPED_TEST(StoreContractTest, FencedNodeChangesCommitOnlyForTheLeaseHolder) {
  Store& s = this->store();
  const Store::LeaseFence a{"scheduler", "A"};
  const Store::LeaseFence b{"scheduler", "B"};
  // No one holds the lease yet: fenced off.
  EXPECT_EQ(s.ChangeNodesIfUnchanged({{"n1", std::nullopt, NodeObject("n1", 1)}}, &a).code(),
            StatusCode::kFailedPrecondition);
  ASSERT_TRUE(*s.TryAcquireLease("scheduler", "A", 1'000, 10'000));
  ASSERT_TRUE(s.ChangeNodesIfUnchanged({{"n1", std::nullopt, NodeObject("n1", 1)}}, &a).ok());
  // A stalled A loses the lease to B: A's next launch writes nothing, B's commits.
  ASSERT_TRUE(*this->Open()->TryAcquireLease("scheduler", "B", 20'000, 10'000));
  Status fenced = s.ChangeNodesIfUnchanged({{"n2", std::nullopt, NodeObject("n2", 1)}}, &a);
  EXPECT_EQ(fenced.code(), StatusCode::kFailedPrecondition) << fenced.ToString();
  ASSERT_TRUE(s.ChangeNodesIfUnchanged({{"n3", std::nullopt, NodeObject("n3", 1)}}, &b).ok());
  auto nodes = s.ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_THAT(NodeNames(*nodes), ElementsAre("n1", "n3"));
}

// ---- Workflows ----
// Collects what a store reports of its transactions (StoreOptions::observe).
class TransactionLog {
 public:
  TransactionObserver Observer() {
    return [this](const TransactionObservation& seen) {
      std::lock_guard lock(mu_);
      seen_.push_back(seen);
    };
  }
  std::vector<TransactionObservation> TakeAll() {
    std::lock_guard lock(mu_);
    return std::exchange(seen_, {});
  }

 private:
  std::mutex mu_;
  std::vector<TransactionObservation> seen_;
};

TYPED_TEST(StoreContractTest, ObserverSeesEveryTransactionWithItsOutcome) {
  using Kind = TransactionObservation::Kind;
  TransactionLog log;
  auto opened = OpenStore(this->backend_.Url(),
                          StoreOptions{.clock = &this->clock_, .observe = log.Observer()});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Store& s = **opened;
  log.TakeAll();  // the migrations' transactions

  ConfigWrite put{.op = ConfigWrite::Op::kPut, .kind = "POOL", .name = "p", .body = {{"a", 1}}};
  ASSERT_TRUE(s.WriteConfigs({put}, this->actor_).ok());
  put.expected_revision = 7;  // a revision conflict: refused, rolled back
  ASSERT_EQ(s.WriteConfigs({put}, this->actor_).status().code(), StatusCode::kAborted);
  ASSERT_TRUE(s.GetConfig("POOL", "p").ok());
  auto seen = log.TakeAll();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].kind, Kind::kWrite);
  EXPECT_TRUE(seen[0].ok);
  EXPECT_EQ(seen[0].batched_writes, 0u);
  EXPECT_EQ(seen[0].queued_seconds, 0);
  EXPECT_EQ(seen[1].kind, Kind::kWrite);
  EXPECT_FALSE(seen[1].ok);
  EXPECT_EQ(seen[2].kind, Kind::kRead);
  EXPECT_TRUE(seen[2].ok);
  for (const auto& one : seen) EXPECT_GE(one.seconds, 0);

  // Creates go through the group commit: while inserts are blocked, the first create's batch
  // waits and the others queue, so they commit together in the next batch.
  constexpr int kCreates = 6;
  {
    auto block = this->backend_.BlockWorkflowInserts();
    std::latch started(kCreates);
    std::vector<std::thread> threads;
    for (int i = 0; i < kCreates; ++i) {
      threads.emplace_back([&, i] {
        started.count_down();
        EXPECT_TRUE(
            s.CreateWorkflow(MakeWorkflow("obs-" + std::to_string(i), "p", "u", "PENDING", 1))
                .ok());
      });
    }
    started.wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    block.reset();
    for (auto& thread : threads) thread.join();
  }
  size_t batched = 0;
  TransactionObservation largest;
  for (const auto& one : log.TakeAll()) {
    if (one.batched_writes == 0) continue;
    EXPECT_EQ(one.kind, Kind::kWrite);
    EXPECT_TRUE(one.ok);
    batched += one.batched_writes;
    if (one.batched_writes > largest.batched_writes) largest = one;
  }
  EXPECT_EQ(batched, static_cast<size_t>(kCreates));
  EXPECT_GT(largest.batched_writes, 1u);
  EXPECT_GT(largest.queued_seconds, 0);  // its writes queued behind the blocked commit
}

TYPED_TEST(StoreContractTest, WorkflowCreateGetList) {
  Store& s = this->store();
  auto created = s.CreateWorkflow(MakeWorkflow("wf-2", "p1", "alice", "PENDING", 200));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->version, 1);
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-1", "p1", "bob", "RUNNING", 100)).ok());
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-3", "p2", "alice", "COMPLETED", 300)).ok());
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-4", "p2", "bob", "FAILED_EXEC_TIMEOUT", 300)).ok());

  auto got = s.GetWorkflow("wf-2");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->pool, "p1");
  EXPECT_EQ(got->user, "alice");
  EXPECT_EQ(got->version, 1);
  EXPECT_EQ(got->spec.dump(), MakeWorkflow("wf-2", "p1", "alice", "PENDING", 200).spec.dump());
  ASSERT_EQ(got->tasks.size(), 2u);
  EXPECT_EQ(got->tasks[0].name, "train");
  EXPECT_EQ(got->tasks[1].name, "eval");
  EXPECT_EQ(got->tasks[1].retry, 1);
  EXPECT_EQ(got->tasks[0].workflow_id, "wf-2");
  EXPECT_EQ(got->tasks[0].pod.dump(), R"({"kind":"Pod","metadata":{"name":"train"},"zz":1})");
  EXPECT_EQ(s.GetWorkflow("nope").status().code(), StatusCode::kNotFound);

  struct Case {
    std::string name;
    WorkflowFilter filter;
    std::vector<std::string> ids;
  };
  const std::vector<Case> cases = {
      {"all, oldest first, ties by id", {}, {"wf-1", "wf-2", "wf-3", "wf-4"}},
      {"pool", {.pool = "p2"}, {"wf-3", "wf-4"}},
      {"user", {.user = "alice"}, {"wf-2", "wf-3"}},
      {"status", {.status = "RUNNING"}, {"wf-1"}},
      {"unfinished", {.unfinished_only = true}, {"wf-1", "wf-2"}},
      {"finished", {.finished_only = true}, {"wf-3", "wf-4"}},
      {"finished, newest first",
       {.finished_only = true, .limit = 1, .newest_first = true},
       {"wf-4"}},
      {"pool and user", {.pool = "p2", .user = "bob"}, {"wf-4"}},
      {"limit", {.limit = 2}, {"wf-1", "wf-2"}},
      {"no match", {.pool = "p9"}, {}},
      {"newest first", {.newest_first = true}, {"wf-4", "wf-3", "wf-2", "wf-1"}},
      {"page after a position, newest first",
       {.limit = 2, .newest_first = true, .after = WorkflowFilter::Position{300, "wf-3"}},
       {"wf-2", "wf-1"}},
      {"page after a position, oldest first",
       {.limit = 1, .after = WorkflowFilter::Position{100, "wf-1"}},
       {"wf-2"}},
      {"page with a filter",
       {.user = "alice", .newest_first = true, .after = WorkflowFilter::Position{300, "wf-3"}},
       {"wf-2"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto listed = s.ListWorkflows(c.filter);
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    std::vector<std::string> ids;
    for (const auto& w : *listed) {
      ids.push_back(w.id);
      EXPECT_EQ(w.tasks.size(), 2u) << w.id;
    }
    EXPECT_EQ(ids, c.ids);
  }
}

TYPED_TEST(StoreContractTest, ManyTasksKeepTheirOrder) {
  WorkflowRecord w = MakeWorkflow("wf-big", "p", "u", "PENDING", 1);
  w.tasks.clear();
  for (int i = 0; i < 150; ++i) {
    TaskRecord t;
    t.group = "g" + std::to_string(i % 7);
    t.name = "task-" + std::to_string(149 - i);  // not in name order
    t.status = "PENDING";
    t.pod = {{"kind", "Pod"}, {"i", i}};
    t.exit_code = -i;
    w.tasks.push_back(t);
  }
  ASSERT_TRUE(this->store().CreateWorkflow(w).ok());
  auto got = this->store().GetWorkflow("wf-big");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->tasks.size(), 150u);
  for (int i = 0; i < 150; ++i) {
    EXPECT_EQ(got->tasks[i].name, w.tasks[i].name);
    EXPECT_EQ(got->tasks[i].group, w.tasks[i].group);
    EXPECT_EQ(got->tasks[i].pod, w.tasks[i].pod);
    EXPECT_EQ(got->tasks[i].exit_code, -i);
  }
  auto listed = this->store().ListWorkflows({});
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->at(0).tasks.size(), 150u);
  EXPECT_EQ(listed->at(0).tasks.back().name, "task-0");
}

TYPED_TEST(StoreContractTest, WorkflowCompareAndSet) {
  Store& s = this->store();
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-1", "p", "u", "PENDING", 1)).ok());
  auto w = s.GetWorkflow("wf-1");
  ASSERT_TRUE(w.ok());

  WorkflowRecord update = *w;
  update.status = "RUNNING";
  update.tasks.resize(1);
  update.tasks[0].status = "RUNNING";
  update.tasks[0].node = "n1";
  update.tasks[0].started_ms = 42;
  ASSERT_TRUE(s.UpdateWorkflow(update).ok());

  auto after = s.GetWorkflow("wf-1");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->version, 2);
  EXPECT_EQ(after->status, "RUNNING");
  ASSERT_EQ(after->tasks.size(), 1u);  // the task list was rewritten
  EXPECT_EQ(after->tasks[0].node, "n1");
  EXPECT_EQ(after->tasks[0].started_ms, 42);

  // The first copy is stale now.
  WorkflowRecord stale = *w;
  stale.status = "CANCELED";
  EXPECT_EQ(s.UpdateWorkflow(stale).code(), StatusCode::kAborted);
  EXPECT_EQ(s.GetWorkflow("wf-1")->status, "RUNNING");

  update.version = 2;
  update.status = "COMPLETED";
  ASSERT_TRUE(s.UpdateWorkflow(update).ok());
  auto unfinished = s.ListWorkflows({.unfinished_only = true});
  ASSERT_TRUE(unfinished.ok());
  EXPECT_TRUE(unfinished->empty());

  WorkflowRecord missing = update;
  missing.id = "wf-404";
  EXPECT_EQ(s.UpdateWorkflow(missing).code(), StatusCode::kNotFound);
}

// ListWorkflows with `known` copies a held record whose version is the stored one, and reads a
// workflow written since (or not held) from the store, its tasks once.
TYPED_TEST(StoreContractTest, ListWorkflowsReusesKnownRecordsAtTheirVersion) {
  Store& s = this->store();
  for (const char* id : {"wf-1", "wf-2", "wf-3"}) {
    ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow(id, "p", "u", "PENDING", 1)).ok());
  }
  auto first = s.ListWorkflows({});
  ASSERT_TRUE(first.ok());
  std::unordered_map<std::string, WorkflowRecord> known;
  for (const auto& w : *first) known.emplace(w.id, w);
  // A mark only a copy of the held record carries: the store never wrote it.
  known.at("wf-1").name = "held";
  known.at("wf-2").name = "held";
  WorkflowRecord update = *s.GetWorkflow("wf-2");
  update.tasks[0].node = "n1";
  ASSERT_TRUE(s.UpdateWorkflow(update).ok());  // version 2: the held copy is stale

  auto again = s.ListWorkflows({.known = &known});
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 3u);
  EXPECT_EQ(again->at(0).name, "held");
  EXPECT_EQ(again->at(1).name, first->at(1).name);
  EXPECT_EQ(again->at(1).version, 2);
  EXPECT_EQ(again->at(2).name, first->at(2).name);  // not held: read
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(again->at(i).tasks.size(), first->at(i).tasks.size()) << i;
  }
  EXPECT_EQ(again->at(1).tasks[0].node, "n1");
}

// A workflow update and its audit record commit together: a stale update appends no record.
TYPED_TEST(StoreContractTest, WorkflowUpdateWithAuditIsOneTransaction) {
  Store& s = this->store();
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-1", "p", "u", "PENDING", 1)).ok());
  auto w = s.GetWorkflow("wf-1");
  ASSERT_TRUE(w.ok());
  AuditRecord audit;
  audit.user = "alice";
  audit.source = "127.0.0.1";
  audit.action = "workflow cancel";
  audit.target = "wf-1";

  WorkflowRecord canceled = *w;
  canceled.status = "CANCELED";
  ASSERT_TRUE(s.UpdateWorkflowWithAudit(canceled, audit).ok());
  EXPECT_EQ(s.GetWorkflow("wf-1")->status, "CANCELED");
  auto log = s.ListAudit(10);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->size(), 1u);
  EXPECT_EQ(log->at(0).action, "workflow cancel");
  EXPECT_EQ(log->at(0).user, "alice");
  EXPECT_NE(log->at(0).at_ms, 0);

  // `canceled` is stale by one now: refused, and no second record.
  EXPECT_EQ(s.UpdateWorkflowWithAudit(canceled, audit).code(), StatusCode::kAborted);
  EXPECT_EQ(s.ListAudit(10)->size(), 1u);
  WorkflowRecord missing = canceled;
  missing.id = "wf-404";
  EXPECT_EQ(s.UpdateWorkflowWithAudit(missing, audit).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ListAudit(10)->size(), 1u);
}

TYPED_TEST(StoreContractTest, LeaderWritesAreFencedByTheLease) {
  Store& s = this->store();
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-1", "p", "u", "PENDING", 1)).ok());
  ASSERT_TRUE(*s.TryAcquireLease("scheduler", "A", 0, 10));
  auto w = s.GetWorkflow("wf-1");
  ASSERT_TRUE(w.ok());
  WorkflowRecord bind = *w;
  bind.status = "RUNNING";
  ASSERT_TRUE(s.UpdateWorkflowAsLeader(bind, {"scheduler", "A"}).ok());
  EXPECT_EQ(s.GetWorkflow("wf-1")->version, 2);

  // A stalls past its lease; B takes it from another process. A's next write is refused and
  // leaves the workflow as it was; B's goes through.
  ASSERT_TRUE(*this->Open()->TryAcquireLease("scheduler", "B", 20, 10));
  bind.version = 2;
  bind.status = "COMPLETED";
  Status fenced = s.UpdateWorkflowAsLeader(bind, {"scheduler", "A"});
  EXPECT_EQ(fenced.code(), StatusCode::kFailedPrecondition) << fenced.ToString();
  EXPECT_EQ(s.GetWorkflow("wf-1")->status, "RUNNING");
  EXPECT_EQ(s.GetWorkflow("wf-1")->version, 2);
  ASSERT_TRUE(s.UpdateWorkflowAsLeader(bind, {"scheduler", "B"}).ok());
  EXPECT_EQ(s.GetWorkflow("wf-1")->status, "COMPLETED");
  // A lease nobody holds fences everyone off.
  bind.version = 3;
  EXPECT_EQ(s.UpdateWorkflowAsLeader(bind, {"no-such-lease", "B"}).code(),
            StatusCode::kFailedPrecondition);
}

TYPED_TEST(StoreContractTest, WorkflowIdempotencyKey) {
  Store& s = this->store();
  WorkflowRecord first = MakeWorkflow("wf-1", "p", "u", "PENDING", 1);
  first.idempotency_key = "req-123";
  ASSERT_TRUE(s.CreateWorkflow(first).ok());

  WorkflowRecord retry = MakeWorkflow("wf-2", "p", "u", "PENDING", 2);
  retry.idempotency_key = "req-123";
  auto again = s.CreateWorkflow(retry);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->id, "wf-1");
  EXPECT_EQ(again->idempotency_key, "req-123");
  EXPECT_EQ(s.GetWorkflow("wf-2").status().code(), StatusCode::kNotFound);

  WorkflowRecord same_id = MakeWorkflow("wf-1", "p", "u", "PENDING", 3);
  EXPECT_EQ(s.CreateWorkflow(same_id).status().code(), StatusCode::kAlreadyExists);
  same_id.idempotency_key = "req-456";  // new key, taken id
  EXPECT_EQ(s.CreateWorkflow(same_id).status().code(), StatusCode::kAlreadyExists);

  // Workflows without a key never collide on it.
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-3", "p", "u", "PENDING", 4)).ok());
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-4", "p", "u", "PENDING", 5)).ok());
  EXPECT_EQ(s.ListWorkflows({})->size(), 3u);
}

TYPED_TEST(StoreContractTest, GetWorkflowIfChangedComparesVersions) {
  Store& s = this->store();
  EXPECT_EQ(s.GetWorkflowIfChanged("nope", 0).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("wf-1", "p", "u", "PENDING", 1)).ok());
  auto fresh = s.GetWorkflowIfChanged("wf-1", 0);  // no cached copy yet
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  ASSERT_TRUE(fresh->has_value());
  EXPECT_EQ((*fresh)->version, 1);
  EXPECT_EQ((*fresh)->tasks.size(), 2u);
  auto same = s.GetWorkflowIfChanged("wf-1", 1);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->has_value());
  WorkflowRecord next = **fresh;
  next.status = "RUNNING";
  ASSERT_TRUE(this->Open()->UpdateWorkflow(next).ok());  // by another store
  auto changed = s.GetWorkflowIfChanged("wf-1", 1);
  ASSERT_TRUE(changed.ok());
  ASSERT_TRUE(changed->has_value());
  EXPECT_EQ((*changed)->version, 2);
  EXPECT_EQ((*changed)->status, "RUNNING");
}

TYPED_TEST(StoreContractTest, NodeGenerationGrowsWithNodeWrites) {
  Store& s = this->store();
  auto g0 = s.GetGenerations();
  ASSERT_TRUE(g0.ok()) << g0.status().ToString();
  ASSERT_TRUE(s.UpsertNodes({{"n1", NodeObject("n1", 8)}}, false).ok());
  auto g1 = s.GetGenerations();
  ASSERT_TRUE(g1.ok());
  EXPECT_GT(g1->nodes, g0->nodes);
  EXPECT_EQ(g1->configs, g0->configs);
  auto other = this->Open();
  ASSERT_TRUE(other->DeleteNodes({"n1"}).ok());
  auto g2 = s.GetGenerations();
  ASSERT_TRUE(g2.ok());
  EXPECT_GT(g2->nodes, g1->nodes);
  this->Put("POOL", "a", {{"v", 1}});
  auto g3 = s.GetGenerations();
  ASSERT_TRUE(g3.ok());
  EXPECT_EQ(g3->nodes, g2->nodes);
  EXPECT_GT(g3->configs, g2->configs);
  EXPECT_EQ(g3->configs, *s.ConfigGeneration());
}

TYPED_TEST(StoreContractTest, Sequences) {
  Store& s = this->store();
  EXPECT_EQ(*s.NextSequence("workflow"), 1);
  EXPECT_EQ(*s.NextSequence("workflow"), 2);
  EXPECT_EQ(*s.NextSequence("other"), 1);
  EXPECT_EQ(*s.NextSequence("workflow"), 3);
}

}  // namespace store_contract_workflows_test
}  // namespace gpupool::store::contract_test
