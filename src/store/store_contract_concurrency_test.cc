// The store contract: concurrency and durability (group commit, batches, crashes).
// The fixture and the backends: store_contract_fixture.h.

#include "store/store_contract_fixture.h"

namespace gpupool::store::contract_test {
namespace store_contract_concurrency_test {

// ---- Concurrency and durability ----

TYPED_TEST(StoreContractTest, ConcurrentReadModifyWriteLosesNoUpdate) {
  constexpr int kThreads = 4;
  constexpr int kIncrements = 15;
  this->Put("QUEUE", "counter", {{"n", 0}});
  // Half the threads share this->store(), half open their own connection.
  std::vector<std::unique_ptr<Store>> own;
  for (int t = 0; t < kThreads / 2; ++t) own.push_back(this->Open());
  std::atomic<int> conflicts = 0;
  std::atomic<int> failures = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    Store* s = t % 2 == 0 ? &this->store() : own[t / 2].get();
    threads.emplace_back([&, s, t] {
      for (int i = 0; i < kIncrements; ++i) {
        for (;;) {
          auto current = s->GetConfig("QUEUE", "counter");
          if (!current.ok()) {
            ++failures;
            return;
          }
          ordered_json body = current->body;
          body["n"] = body["n"].get<int>() + 1;
          std::this_thread::yield();  // widen the read-modify-write window
          ConfigWrite write{.op = ConfigWrite::Op::kPut,
                            .kind = "QUEUE",
                            .name = "counter",
                            .body = body,
                            .expected_revision = current->revision};
          auto written = s->WriteConfigs({write}, Actor{"t" + std::to_string(t), "test"});
          if (written.ok()) break;
          if (written.status().code() != StatusCode::kAborted) {
            ADD_FAILURE() << written.status().ToString();
            ++failures;
            return;
          }
          ++conflicts;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures, 0);
  auto final_state = this->store().GetConfig("QUEUE", "counter");
  ASSERT_TRUE(final_state.ok());
  EXPECT_EQ(final_state->body["n"], kThreads * kIncrements);
  EXPECT_EQ(final_state->revision, 1 + kThreads * kIncrements);
  auto history = this->store().History("QUEUE", "counter", 0);
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->size(), static_cast<size_t>(1 + kThreads * kIncrements));
}

TYPED_TEST(StoreContractTest, ConcurrentUnlockedWritesGetDistinctRevisions) {
  constexpr int kThreads = 4;
  constexpr int kWrites = 10;
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < kThreads; ++t) stores.push_back(this->Open());
  std::vector<std::vector<int64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        ConfigWrite write{.op = ConfigWrite::Op::kPut,
                          .kind = "POOL",
                          .name = "hot",
                          .body = {{"t", t}, {"i", i}}};
        auto written = stores[t]->WriteConfigs({write}, Actor{"t", "test"});
        ASSERT_TRUE(written.ok()) << written.status().ToString();
        seen[t].push_back(written->at(0));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<int64_t> all;
  for (const auto& v : seen) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  std::vector<int64_t> expected(kThreads * kWrites);
  std::iota(expected.begin(), expected.end(), 1);
  EXPECT_EQ(all, expected);  // 1..N, each once
}

TYPED_TEST(StoreContractTest, ConcurrentWorkflowUpdatesAndSequences) {
  constexpr int kThreads = 4;
  constexpr int kUpdates = 10;
  ASSERT_TRUE(this->store().CreateWorkflow(MakeWorkflow("wf-1", "p", "u", "RUNNING", 1)).ok());
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < kThreads; ++t) stores.push_back(this->Open());
  std::vector<std::vector<int64_t>> sequences(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Store& s = *stores[t];
      for (int i = 0; i < kUpdates; ++i) {
        for (;;) {
          auto w = s.GetWorkflow("wf-1");
          ASSERT_TRUE(w.ok()) << w.status().ToString();
          WorkflowRecord next = *w;
          next.tasks[0].retry += 1;  // the counter under test
          Status status = s.UpdateWorkflow(next);
          if (status.ok()) break;
          ASSERT_EQ(status.code(), StatusCode::kAborted) << status.ToString();
        }
        auto seq = s.NextSequence("wf");
        ASSERT_TRUE(seq.ok()) << seq.status().ToString();
        sequences[t].push_back(*seq);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  auto w = this->store().GetWorkflow("wf-1");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->tasks[0].retry, kThreads * kUpdates);
  EXPECT_EQ(w->version, 1 + kThreads * kUpdates);
  // Every value once only across the stores (blocks leave gaps), increasing per store.
  std::vector<int64_t> all;
  for (const auto& v : sequences) {
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
    all.insert(all.end(), v.begin(), v.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  EXPECT_EQ(all.size(), size_t{kThreads * kUpdates});
}

TYPED_TEST(StoreContractTest, SequenceValuesAreUniqueAcrossStoresAndRestarts) {
  constexpr int kStores = 2;
  constexpr int kThreadsPerStore = 3;
  constexpr int kValues = 300;  // per thread: several block reservations, some made ahead
  std::vector<std::unique_ptr<Store>> stores;
  for (int i = 0; i < kStores; ++i) stores.push_back(this->Open());
  std::vector<std::vector<int64_t>> values(kStores * kThreadsPerStore);
  std::vector<std::thread> threads;
  for (int t = 0; t < kStores * kThreadsPerStore; ++t) {
    threads.emplace_back([&, t] {
      Store& s = *stores[t % kStores];
      for (int i = 0; i < kValues; ++i) {
        auto value = s.NextSequence("workflow");
        ASSERT_TRUE(value.ok()) << value.status().ToString();
        values[t].push_back(*value);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<int64_t> all;
  for (const auto& v : values) {
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));  // one store hands out increasing values
    all.insert(all.end(), v.begin(), v.end());
  }
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), size_t{kStores * kThreadsPerStore * kValues});
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end())
      << "a value was handed out twice";
  EXPECT_GE(all.front(), 1);
  // A store opened after the others were closed continues above every value they reserved.
  int64_t highest = all.back();
  stores.clear();
  auto reopened = this->Open();
  ASSERT_NE(reopened, nullptr);
  auto next = reopened->NextSequence("workflow");
  ASSERT_TRUE(next.ok());
  EXPECT_GT(*next, highest);
}

TYPED_TEST(StoreContractTest, ConcurrentCreateWithOneIdempotencyKeyMakesOneWorkflow) {
  constexpr int kThreads = 4;
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < kThreads; ++t) stores.push_back(this->Open());
  std::vector<std::string> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      WorkflowRecord w = MakeWorkflow("wf-" + std::to_string(t), "p", "u", "PENDING", t);
      w.idempotency_key = "same-request";
      auto created = stores[t]->CreateWorkflow(w);
      ASSERT_TRUE(created.ok()) << created.status().ToString();
      ids[t] = created->id;
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(ids[t], ids[0]);
  auto listed = this->store().ListWorkflows({});
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->at(0).id, ids[0]);
}

TYPED_TEST(StoreContractTest, ConcurrentCreatesAreEachCommittedExactlyOnce) {
  // Many threads on one store: their creates and audit appends are group-committed.
  constexpr int kThreads = 16;
  constexpr int kPerThread = 20;
  Store& s = this->store();
  std::vector<std::thread> threads;
  std::atomic<int> failures = 0;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string id = "wf-" + std::to_string(t) + "-" + std::to_string(i);
        WorkflowRecord w = MakeWorkflow(id, "p", "u" + std::to_string(t), "PENDING", t * 100 + i);
        AuditRecord audit{0, "u" + std::to_string(t), "test", "workflow submit", id, "pool p"};
        auto created = i % 2 == 0 ? s.CreateWorkflowWithAudit(w, audit) : s.CreateWorkflow(w);
        if (!created.ok() || created->id != id || created->version != 1) ++failures;
        if (i % 2 == 1 && !s.AppendAudit(audit).ok()) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures, 0);
  auto listed = s.ListWorkflows({.limit = 0});
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), size_t{kThreads * kPerThread});
  std::set<std::string> ids;
  for (const WorkflowRecord& w : *listed) {
    ids.insert(w.id);
    EXPECT_EQ(w.tasks.size(), 2u) << w.id;
  }
  EXPECT_EQ(ids.size(), size_t{kThreads * kPerThread});
  auto audit = s.ListAudit(0);
  ASSERT_TRUE(audit.ok());
  EXPECT_EQ(audit->size(), size_t{kThreads * kPerThread});  // one record per create
  // A second store on the same database sees every acknowledged create (they are committed).
  auto other = this->Open();
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->ListWorkflows({.limit = 0})->size(), size_t{kThreads * kPerThread});
}

// Collects the outcomes of asynchronous creates: one slot per create, filled by its callback.
class AsyncOutcomes {
 public:
  explicit AsyncOutcomes(size_t n)
      : results_(n, Result<WorkflowRecord>(InternalError("not called"))), calls_(n, 0) {}
  Store::CreateDone For(size_t i) {
    return [this, i](Result<WorkflowRecord> result) {
      std::lock_guard lock(mu_);
      results_[i] = std::move(result);
      ++calls_[i];
      ++finished_;
      cv_.notify_all();
    };
  }
  void WaitAll() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return finished_ == results_.size(); });
  }
  const Result<WorkflowRecord>& operator[](size_t i) const { return results_[i]; }
  int Calls(size_t i) const { return calls_[i]; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Result<WorkflowRecord>> results_;
  std::vector<int> calls_;
  size_t finished_ = 0;
};

TYPED_TEST(StoreContractTest, AsyncCreatesReportEachOutcomeOnce) {
  Store& s = this->store();
  ASSERT_TRUE(s.CreateWorkflow(MakeWorkflow("taken-0", "p", "u", "DONE", 1)).ok());
  WorkflowRecord keyed = MakeWorkflow("keyed-0", "p", "u", "DONE", 2);
  keyed.idempotency_key = "key-0";
  ASSERT_TRUE(s.CreateWorkflow(keyed).ok());

  // Queued from one thread without waiting: new ids, a taken id, a known idempotency key under a
  // new id, and an empty id (refused before it is queued).
  constexpr size_t kNew = 40;
  std::vector<WorkflowRecord> writes;
  for (size_t i = 0; i < kNew; ++i) {
    writes.push_back(MakeWorkflow("async-" + std::to_string(i), "p", "u", "PENDING", 10));
  }
  writes.push_back(MakeWorkflow("taken-0", "p", "u", "PENDING", 11));
  WorkflowRecord again = MakeWorkflow("keyed-1", "p", "u", "PENDING", 12);
  again.idempotency_key = "key-0";
  writes.push_back(again);
  writes.push_back(MakeWorkflow("", "p", "u", "PENDING", 13));
  AsyncOutcomes outcomes(writes.size());
  for (size_t i = 0; i < writes.size(); ++i) {
    AuditRecord audit{0, "u", "test", "workflow submit", writes[i].id, ""};
    s.CreateWorkflowWithAuditAsync(writes[i], audit, std::nullopt, outcomes.For(i));
  }
  outcomes.WaitAll();

  for (size_t i = 0; i < writes.size(); ++i) EXPECT_EQ(outcomes.Calls(i), 1) << i;
  for (size_t i = 0; i < kNew; ++i) {
    ASSERT_TRUE(outcomes[i].ok()) << outcomes[i].status().ToString();
    EXPECT_EQ(outcomes[i]->id, writes[i].id);
    EXPECT_EQ(outcomes[i]->version, 1);
    ASSERT_EQ(outcomes[i]->tasks.size(), 2u);
    EXPECT_EQ(outcomes[i]->tasks[0].workflow_id, writes[i].id);
  }
  EXPECT_EQ(outcomes[kNew].status().code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(outcomes[kNew + 1].ok());
  EXPECT_EQ(outcomes[kNew + 1]->id, "keyed-0");  // the workflow stored under that key
  EXPECT_EQ(outcomes[kNew + 2].status().code(), StatusCode::kInvalidArgument);

  // Durable once reported: another store on the database sees them, with one audit record per
  // create that was not refused.
  auto other = this->Open();
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->ListWorkflows({.limit = 0})->size(), kNew + 2);
  EXPECT_EQ(other->ListAudit(0)->size(), kNew + 1);
  EXPECT_FALSE(other->GetWorkflow("keyed-1").ok());
}

TYPED_TEST(StoreContractTest, ClosingAStoreFinishesItsQueuedAsyncCreates) {
  constexpr size_t kWrites = 100;
  AsyncOutcomes outcomes(kWrites);
  {
    auto store = this->Open();
    ASSERT_NE(store, nullptr);
    for (size_t i = 0; i < kWrites; ++i) {
      WorkflowRecord w = MakeWorkflow("closing-" + std::to_string(i), "p", "u", "PENDING", 1);
      store->CreateWorkflowWithAuditAsync(w, AuditRecord{0, "u", "test", "submit", w.id, ""},
                                          std::nullopt, outcomes.For(i));
    }
  }  // closed at once: every queued write is written and reported before the store is gone
  for (size_t i = 0; i < kWrites; ++i) {
    EXPECT_EQ(outcomes.Calls(i), 1) << i;
    EXPECT_TRUE(outcomes[i].ok()) << i << ": " << outcomes[i].status().ToString();
  }
  EXPECT_EQ(this->store().ListWorkflows({.limit = 0})->size(), kWrites);
}

TYPED_TEST(StoreContractTest, AsyncVersionChecksAnswerLikeGetWorkflowIfChanged) {
  Store& s = this->store();
  // More distinct workflows than one statement checks (64), and several checks per workflow.
  constexpr int kWorkflows = 150;
  for (int i = 0; i < kWorkflows; ++i) {
    ASSERT_TRUE(
        s.CreateWorkflow(MakeWorkflow("v-" + std::to_string(i), "p", "u", "PENDING", i)).ok());
  }
  WorkflowRecord changed = *s.GetWorkflow("v-7");
  changed.status = "RUNNING";
  ASSERT_TRUE(s.UpdateWorkflow(changed).ok());  // now version 2

  struct Check {
    std::string id;
    int64_t known;
  };
  std::vector<Check> checks;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kWorkflows; ++i) checks.push_back({"v-" + std::to_string(i), 1});
  }
  checks.push_back({"v-7", 2});
  checks.push_back({"v-3", 0});  // nothing cached: the workflow comes back
  checks.push_back({"missing", 1});
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::optional<Result<std::optional<WorkflowRecord>>>> got(checks.size());
  std::vector<int> calls(checks.size(), 0);
  size_t answered = 0;
  for (size_t i = 0; i < checks.size(); ++i) {
    s.GetWorkflowIfChangedAsync(checks[i].id, checks[i].known,
                                [&, i](Result<std::optional<WorkflowRecord>> result) {
                                  std::lock_guard lock(mu);
                                  got[i].emplace(std::move(result));
                                  ++calls[i];
                                  ++answered;
                                  cv.notify_all();
                                });
  }
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return answered == checks.size(); });
  }
  for (size_t i = 0; i < checks.size(); ++i) {
    SCOPED_TRACE(checks[i].id + " known " + std::to_string(checks[i].known));
    EXPECT_EQ(calls[i], 1);
    const auto& result = *got[i];
    if (checks[i].id == "missing") {
      EXPECT_EQ(result.status().code(), StatusCode::kNotFound);
      continue;
    }
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    bool stale = (checks[i].id == "v-7" && checks[i].known == 1) || checks[i].known == 0;
    ASSERT_EQ(result->has_value(), stale);
    if (stale) {
      EXPECT_EQ((*result)->id, checks[i].id);
      EXPECT_EQ((*result)->tasks.size(), 2u);
      if (checks[i].id == "v-7") {
        EXPECT_EQ((*result)->version, 2);
        EXPECT_EQ((*result)->status, "RUNNING");
      }
    }
  }
}

TYPED_TEST(StoreContractTest, ClosingAStoreAnswersItsQueuedVersionChecks) {
  ASSERT_TRUE(this->store().CreateWorkflow(MakeWorkflow("c-1", "p", "u", "PENDING", 1)).ok());
  constexpr int kChecks = 200;
  std::atomic<int> unchanged = 0;
  std::atomic<int> calls = 0;
  {
    auto store = this->Open();
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < kChecks; ++i) {
      store->GetWorkflowIfChangedAsync("c-1", 1, [&](Result<std::optional<WorkflowRecord>> r) {
        ++calls;
        if (r.ok() && !r->has_value()) ++unchanged;
      });
    }
  }
  EXPECT_EQ(calls, kChecks);
  EXPECT_EQ(unchanged, kChecks);
}

TYPED_TEST(StoreContractTest, ACreatePlannedOnOldGenerationsIsRefused) {
  Store& s = this->store();
  auto planned = s.GetGenerations();
  ASSERT_TRUE(planned.ok());
  AuditRecord audit{0, "u", "test", "workflow submit", "", ""};
  ASSERT_TRUE(
      s.CreateWorkflowWithAudit(MakeWorkflow("g-1", "p", "u", "PENDING", 1), audit, *planned).ok());
  auto expect_stale = [&](const Result<WorkflowRecord>& result) {
    EXPECT_EQ(result.status().code(), StatusCode::kAborted);
    EXPECT_EQ(result.status().message(), Store::kStalePlan);
  };
  // A config write moves the config generation.
  this->Put("POOL", "p", ordered_json{{"backend", "default"}});
  expect_stale(
      s.CreateWorkflowWithAudit(MakeWorkflow("g-2", "p", "u", "PENDING", 2), audit, *planned));
  // So does a node write, also through the asynchronous path.
  auto after_config = s.GetGenerations();
  ASSERT_TRUE(after_config.ok());
  ASSERT_TRUE(this->Open()->UpsertNodes({{"n1", NodeObject("n1", 2)}}, false).ok());
  std::promise<Result<WorkflowRecord>> promise;
  s.CreateWorkflowWithAuditAsync(
      MakeWorkflow("g-3", "p", "u", "PENDING", 3), audit, *after_config,
      [&](Result<WorkflowRecord> r) { promise.set_value(std::move(r)); });
  expect_stale(promise.get_future().get());
  // Planned on the current ones: stored.
  auto now = s.GetGenerations();
  ASSERT_TRUE(now.ok());
  EXPECT_TRUE(
      s.CreateWorkflowWithAudit(MakeWorkflow("g-4", "p", "u", "PENDING", 4), audit, *now).ok());
  // The refused creates wrote nothing: no workflow, no audit record.
  EXPECT_FALSE(s.GetWorkflow("g-2").ok());
  EXPECT_FALSE(s.GetWorkflow("g-3").ok());
  EXPECT_EQ(s.ListWorkflows({.limit = 0})->size(), 2u);
  EXPECT_EQ(s.ListAudit(0)->size(), 2u);
}

TYPED_TEST(StoreContractTest, AFailingCreateInABatchFailsAlone) {
  constexpr int kThreads = 12;
  constexpr int kPerThread = 10;
  Store& s = this->store();
  for (int i = 0; i < kPerThread; ++i) {
    ASSERT_TRUE(
        s.CreateWorkflow(MakeWorkflow("taken-" + std::to_string(i), "p", "u", "DONE", i)).ok());
  }
  // Thread t % 3: 0 creates new workflows (must succeed), 1 creates taken ids (kAlreadyExists,
  // a refusal inside the batch), 2 creates workflows whose name is not valid UTF-8, which both
  // stores refuse (PostgreSQL with a statement error: the batch is rerun without it).
  std::vector<std::vector<Status>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string id = "wf-" + std::to_string(t) + "-" + std::to_string(i);
        if (t % 3 == 1) id = "taken-" + std::to_string(i);
        WorkflowRecord w = MakeWorkflow(id, "p", "u", "PENDING", i);
        if (t % 3 == 2) w.name = "bad\xff\xfename";
        AuditRecord audit{0, "u", "test", "workflow submit", id, ""};
        results[t].push_back(s.CreateWorkflowWithAudit(w, audit).status());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  int expected_rows = kPerThread;  // the taken ones
  int expected_audit = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (const Status& status : results[t]) {
      SCOPED_TRACE("thread " + std::to_string(t) + ": " + status.ToString());
      if (t % 3 == 0) {
        EXPECT_TRUE(status.ok());
      } else if (t % 3 == 1) {
        EXPECT_EQ(status.code(), StatusCode::kAlreadyExists);
      } else {
        EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
      }
      if (status.ok()) {
        ++expected_rows;
        ++expected_audit;
      }
    }
  }
  auto listed = s.ListWorkflows({.limit = 0});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), size_t(expected_rows));
  for (const WorkflowRecord& w : *listed) {
    if (w.id.starts_with("taken-")) {
      EXPECT_EQ(w.status, "DONE");  // untouched by the refused creates
    }
  }
  EXPECT_EQ(s.ListAudit(0)->size(), size_t(expected_audit));  // no record for a failed create
}

// One write of a batch submitted at once (BatchedCreatesKeepEachOutcome).
struct BatchWrite {
  enum class Expect {
    kInserted,         // stored as given
    kRefused,          // kAlreadyExists: the id is taken
    kExisting,         // the workflow `existing_id` (its idempotency key)
    kOneOfGroup,       // exactly one write of `group` is inserted, the others are refused
    kOneKeyOfGroup,    // every write of `group` (one key) gets the same one of their workflows
    kInvalidArgument,  // fails alone on both (text that is not UTF-8: both refuse it)
    kAuditOnly,        // AppendAudit, no create
  };
  WorkflowRecord workflow;
  Expect expect = Expect::kInserted;
  std::string existing_id;                                       // kExisting
  std::string group;                                             // kOneOfGroup, kOneKeyOfGroup
  Result<WorkflowRecord> result = InternalError("not written");  // an empty record: audit only
};

// The writes of one BatchedCreatesKeepEachOutcome round; ids start with `prefix`.
std::vector<BatchWrite> MixedBatch(const std::string& prefix, bool with_failures) {
  using Expect = BatchWrite::Expect;
  std::vector<BatchWrite> writes;
  auto add = [&](const std::string& id, Expect expect, const std::string& key = "",
                 const std::string& group = "") {
    BatchWrite write;
    write.workflow = MakeWorkflow(id, "p", "u", "PENDING", static_cast<int64_t>(writes.size()));
    write.workflow.idempotency_key = key;
    write.expect = expect;
    write.group = group;
    writes.push_back(std::move(write));
    return &writes.back();
  };
  // More new key-less creates than one multi-row INSERT holds (64), with 0 to 3 tasks each.
  for (int i = 0; i < 90; ++i) {
    BatchWrite* write = add(prefix + "new-" + std::to_string(i), Expect::kInserted);
    TaskRecord task = write->workflow.tasks[0];
    write->workflow.tasks.resize(i % 4, task);
    for (size_t t = 0; t < write->workflow.tasks.size(); ++t) {
      write->workflow.tasks[t].name = "t" + std::to_string(t);
    }
  }
  // More tasks than one multi-row INSERT of tasks holds (64), in order.
  BatchWrite* big = add(prefix + "big", Expect::kInserted);
  TaskRecord task = big->workflow.tasks[0];
  big->workflow.tasks.resize(100, task);
  for (size_t t = 0; t < big->workflow.tasks.size(); ++t) {
    big->workflow.tasks[t].name = "task-" + std::to_string(99 - t);
  }
  for (int i = 0; i < 3; ++i) add("taken-" + std::to_string(i), Expect::kRefused);
  add("taken-0", Expect::kRefused, prefix + "key-taken");  // a new key, a taken id
  for (int i = 0; i < 4; ++i) {
    // One of the two without tasks, so that their task rows cannot collide either (a write
    // wrongly taken as inserted shows in its outcome, not as a failing statement).
    std::string id = prefix + "twin-" + std::to_string(i);
    add(id, Expect::kOneOfGroup, "", id)->workflow.tasks.resize(i % 2 == 0 ? 0 : 2);
    add(id, Expect::kOneOfGroup, "", id)->workflow.tasks.resize(i % 2 == 0 ? 2 : 0);
  }
  for (int i = 0; i < 2; ++i) {  // one id, once without and once with a key
    std::string id = prefix + "mixed-" + std::to_string(i);
    add(id, Expect::kOneOfGroup, "", id);
    add(id, Expect::kOneOfGroup, id + "-key", id);
  }
  for (int i = 0; i < 10; ++i) {
    add(prefix + "keyed-" + std::to_string(i), Expect::kInserted,
        prefix + "key-" + std::to_string(i));
  }
  for (int i = 0; i < 3; ++i) {
    add(prefix + "retry-" + std::to_string(i), Expect::kExisting, "key-old")->existing_id =
        "keyed-old";
  }
  add(prefix + "shared-a", Expect::kOneKeyOfGroup, prefix + "key-shared", "shared");
  add(prefix + "shared-b", Expect::kOneKeyOfGroup, prefix + "key-shared", "shared");
  for (int i = 0; i < 4; ++i) add(prefix + "audit-" + std::to_string(i), Expect::kAuditOnly);
  if (with_failures) {
    add(prefix + "bad-name", Expect::kInvalidArgument)->workflow.name = "bad\xff\xfename";
    add(prefix + "bad-task", Expect::kInvalidArgument)->workflow.tasks[1].message = "bad\xff";
    add(prefix + "bad-pod", Expect::kInvalidArgument)->workflow.tasks[0].pod["x"] = "bad\xff";
    add(prefix + "after-bad", Expect::kInserted);
  }
  return writes;
}

// One write's outcome as its expectation says; the writes of a group are checked together
// (ExpectOneWinner), and what was inserted joins `stored`.
void ExpectOutcome(const BatchWrite& write, std::map<std::string, WorkflowRecord>& stored,
                   std::map<std::string, std::vector<const BatchWrite*>>& groups) {
  using Expect = BatchWrite::Expect;
  const std::string& id = write.workflow.id;
  switch (write.expect) {
    case Expect::kInserted:
      ASSERT_TRUE(write.result.ok());
      EXPECT_EQ(write.result->id, id);
      EXPECT_EQ(write.result->version, 1);
      stored.emplace(id, write.workflow);
      break;
    case Expect::kRefused:
      EXPECT_EQ(write.result.status().code(), StatusCode::kAlreadyExists);
      break;
    case Expect::kExisting:
      ASSERT_TRUE(write.result.ok());
      EXPECT_EQ(write.result->id, write.existing_id);
      EXPECT_EQ(write.result->submitted_ms, -1);
      break;
    case Expect::kOneOfGroup:
    case Expect::kOneKeyOfGroup:
      groups[write.group].push_back(&write);
      break;
    case Expect::kInvalidArgument:
      EXPECT_EQ(write.result.status().code(), StatusCode::kInvalidArgument);
      break;
    case Expect::kAuditOnly:
      EXPECT_TRUE(write.result.ok());
      break;
  }
}

// The writes of one id or one idempotency key in a batch: exactly one inserts, the others are
// refused (same id) or answered with the winner (same key).
void ExpectOneWinner(const std::vector<const BatchWrite*>& members, const BatchWrite** winner) {
  using Expect = BatchWrite::Expect;
  for (const BatchWrite* write : members) {
    if (write->expect == Expect::kOneOfGroup) {
      if (write->result.ok()) {
        EXPECT_EQ(*winner, nullptr) << "two writes of one id inserted";
        EXPECT_EQ(write->result->id, write->workflow.id);
        *winner = write;
      } else {
        EXPECT_EQ(write->result.status().code(), StatusCode::kAlreadyExists);
      }
    } else {
      ASSERT_TRUE(write->result.ok()) << write->result.status().ToString();
      if (write->result->id == write->workflow.id) {
        EXPECT_EQ(*winner, nullptr) << "two writes of one key inserted";
        *winner = write;
      }
    }
  }
  ASSERT_NE(*winner, nullptr);
  for (const BatchWrite* write : members) {
    if (write->result.ok()) {
      EXPECT_EQ(write->result->id, (*winner)->workflow.id);
    }
  }
}

// Every inserted workflow is stored once, as its winning write gave it, tasks in order.
void ExpectStoredOnce(Store& s, const std::map<std::string, WorkflowRecord>& stored) {
  auto listed = s.ListWorkflows({.limit = 0});
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), stored.size());
  for (const WorkflowRecord& got : *listed) {
    SCOPED_TRACE(got.id);
    auto it = stored.find(got.id);
    ASSERT_NE(it, stored.end());
    const WorkflowRecord& want = it->second;
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.submitted_ms, want.submitted_ms);
    EXPECT_EQ(got.idempotency_key, want.idempotency_key);
    EXPECT_EQ(got.version, 1);
    ASSERT_EQ(got.tasks.size(), want.tasks.size());
    for (size_t t = 0; t < want.tasks.size(); ++t) {
      EXPECT_EQ(got.tasks[t].name, want.tasks[t].name);
      EXPECT_EQ(got.tasks[t].message, want.tasks[t].message);
    }
  }
}

TYPED_TEST(StoreContractTest, BatchedCreatesKeepEachOutcome) {
  using Expect = BatchWrite::Expect;
  Store& s = this->store();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        s.CreateWorkflow(MakeWorkflow("taken-" + std::to_string(i), "p", "u", "DONE", -1)).ok());
  }
  WorkflowRecord keyed_old = MakeWorkflow("keyed-old", "p", "u", "DONE", -1);
  keyed_old.idempotency_key = "key-old";
  ASSERT_TRUE(s.CreateWorkflow(keyed_old).ok());

  std::map<std::string, WorkflowRecord> stored = {{"keyed-old", keyed_old}};
  for (int i = 0; i < 3; ++i) {
    stored.emplace("taken-" + std::to_string(i),
                   MakeWorkflow("taken-" + std::to_string(i), "p", "u", "DONE", -1));
  }
  size_t audit_records = 0;
  // Round 0: every write is valid, so the batch commits in multi-row statements. Round 1: some
  // writes fail, so the batch is rerun one statement per write to find them.
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string prefix = "r" + std::to_string(round) + "-";
    std::vector<BatchWrite> writes = MixedBatch(prefix, round == 1);
    {
      // While inserts are blocked, the first write's batch waits and every other write queues;
      // they are then written together (up to 256 in one batch).
      auto block = this->backend_.BlockWorkflowInserts();
      std::latch started(static_cast<ptrdiff_t>(writes.size()));
      std::vector<std::thread> threads;
      for (BatchWrite& write : writes) {
        threads.emplace_back([&] {
          AuditRecord audit{0, "u", "test", "workflow submit", write.workflow.id, ""};
          started.count_down();
          if (write.expect == Expect::kAuditOnly) {
            Status status = s.AppendAudit(audit);
            write.result = status.ok() ? Result<WorkflowRecord>(WorkflowRecord{}) : status;
          } else {
            write.result = s.CreateWorkflowWithAudit(write.workflow, audit);
          }
        });
      }
      started.wait();
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      block.reset();
      for (auto& thread : threads) thread.join();
    }

    std::map<std::string, std::vector<const BatchWrite*>> groups;
    for (const BatchWrite& write : writes) {
      const std::string& id = write.workflow.id;
      SCOPED_TRACE(id + ": " + write.result.status().ToString());
      if (write.result.ok()) ++audit_records;
      ExpectOutcome(write, stored, groups);
    }
    for (const auto& [group, members] : groups) {
      SCOPED_TRACE("group " + group);
      const BatchWrite* winner = nullptr;
      ExpectOneWinner(members, &winner);
      ASSERT_NE(winner, nullptr);
      stored.emplace(winner->workflow.id, winner->workflow);
    }
    ExpectStoredOnce(s, stored);
    // One audit record per successful write (an idempotent retry included), none for the rest.
    EXPECT_EQ(s.ListAudit(0)->size(), audit_records);
  }
}

TYPED_TEST(StoreContractTest, OneLeaseHolderAmongContenders) {
  constexpr int kThreads = 6;
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < kThreads; ++t) stores.push_back(this->Open());
  std::atomic<int> winners = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto got = stores[t]->TryAcquireLease("leader", "server-" + std::to_string(t), 1000, 5000);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      if (*got) ++winners;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(winners, 1);
}

TYPED_TEST(StoreContractTest, ReopenKeepsData) {
  this->Put("POOL", "a", {{"v", 1}});
  this->Put("POOL", "a", {{"v", 2}});
  ASSERT_TRUE(this->store().UpsertNodes({{"n1", NodeObject("n1", 8)}}, false).ok());
  ASSERT_TRUE(this->store().CreateWorkflow(MakeWorkflow("wf-1", "p", "u", "PENDING", 1)).ok());
  ASSERT_TRUE(*this->store().TryAcquireLease("leader", "A", 0, 100));
  ASSERT_EQ(*this->store().NextSequence("wf"), 1);
  this->store_.reset();

  this->store_ = this->Open();  // migrations find the schema current
  ASSERT_NE(this->store_, nullptr);
  Store& s = this->store();
  auto a = s.GetConfig("POOL", "a");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->revision, 2);
  EXPECT_EQ(a->body, ordered_json({{"v", 2}}));
  EXPECT_EQ(s.History("POOL", "a", 0)->size(), 2u);
  EXPECT_THAT(NodeNames(*s.ListNodes()), ElementsAre("n1"));
  EXPECT_EQ(s.GetWorkflow("wf-1")->tasks.size(), 2u);
  EXPECT_EQ(*s.TryAcquireLease("leader", "B", 50, 100), false);
  EXPECT_EQ(*s.NextSequence("wf"), 2);
  EXPECT_EQ(this->Put("POOL", "a", {{"v", 3}}), 3);
}

}  // namespace store_contract_concurrency_test
}  // namespace gpupool::store::contract_test
