// The store contract: configs (writes, revisions, history, rollback), audit and leases.
// The fixture and the backends: store_contract_fixture.h.

#include "store/store_contract_fixture.h"

namespace gpupool::store::contract_test {
namespace store_contract_configs_test {

// ---- Configs ----

TYPED_TEST(StoreContractTest, PutGetListKeepsKeyOrderAndSorts) {
  ordered_json body = ordered_json::parse(R"({"zeta": 1, "alpha": {"y": [3, 1], "b": null}})");
  EXPECT_EQ(this->Put("POOL", "b_pool", body), 1);
  EXPECT_EQ(this->Put("POOL", "a_pool", {{"x", 1}}), 1);
  EXPECT_EQ(this->Put("POD_TEMPLATE", "Zed", {{"spec", {}}}), 1);

  auto got = this->store().GetConfig("POOL", "b_pool");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->body.dump(), body.dump());  // same text: key order survived
  EXPECT_EQ(got->revision, 1);
  EXPECT_EQ(got->updated_by, "alice");
  EXPECT_EQ(got->updated_at_ms, 1'700'000'000'000);

  auto all = this->store().ListConfigs(std::nullopt);
  ASSERT_TRUE(all.ok());
  EXPECT_THAT(Names(*all), ElementsAre("POD_TEMPLATE/Zed", "POOL/a_pool", "POOL/b_pool"));
  auto pools = this->store().ListConfigs("POOL");
  ASSERT_TRUE(pools.ok());
  EXPECT_THAT(Names(*pools), ElementsAre("POOL/a_pool", "POOL/b_pool"));

  auto missing = this->store().GetConfig("POOL", "nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TYPED_TEST(StoreContractTest, RevisionsCountPerConfig) {
  EXPECT_EQ(this->Put("POOL", "a", {{"v", 1}}), 1);
  EXPECT_EQ(this->Put("POOL", "a", {{"v", 2}}), 2);
  EXPECT_EQ(this->Put("POOL", "b", {{"v", 1}}), 1);
  EXPECT_EQ(this->Put("ROLE", "a", {{"v", 1}}), 1);  // same name, other kind
  EXPECT_EQ(this->Put("POOL", "a", {{"v", 3}}), 3);
  auto got = this->store().GetConfig("POOL", "a");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->revision, 3);
  EXPECT_EQ(got->body["v"], 3);
}

TYPED_TEST(StoreContractTest, BatchIsAtomic) {
  this->Put("POOL", "existing", {{"v", 1}});
  struct Case {
    std::string name;
    ConfigWrite bad;
    StatusCode code;
  };
  const std::vector<Case> cases = {
      {"stale expected revision",
       {.op = ConfigWrite::Op::kPut,
        .kind = "POOL",
        .name = "existing",
        .body = {{"v", 9}},
        .expected_revision = 7},
       StatusCode::kAborted},
      {"must not exist but does",
       {.op = ConfigWrite::Op::kPut,
        .kind = "POOL",
        .name = "existing",
        .body = {{"v", 9}},
        .expected_revision = 0},
       StatusCode::kAborted},
      {"delete of a missing config",
       {.op = ConfigWrite::Op::kDelete, .kind = "POOL", .name = "ghost"},
       StatusCode::kNotFound},
      {"empty name",
       {.op = ConfigWrite::Op::kPut, .kind = "POOL", .body = {{"v", 1}}},
       StatusCode::kInvalidArgument},
      {"null body",
       {.op = ConfigWrite::Op::kPut, .kind = "POOL", .name = "n"},
       StatusCode::kInvalidArgument},
      {"failed check",
       {.op = ConfigWrite::Op::kCheck, .kind = "POD_TEMPLATE", .name = "t", .expected_revision = 1},
       StatusCode::kAborted},
      {"check without expected revision",
       {.op = ConfigWrite::Op::kCheck, .kind = "POOL", .name = "existing"},
       StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<ConfigWrite> batch = {
        {.op = ConfigWrite::Op::kPut, .kind = "POOL", .name = "new1", .body = {{"v", 1}}},
        {.op = ConfigWrite::Op::kPut, .kind = "POOL", .name = "existing", .body = {{"v", 2}}},
        c.bad,
        {.op = ConfigWrite::Op::kPut, .kind = "POOL", .name = "new2", .body = {{"v", 1}}},
    };
    auto result = this->store().WriteConfigs(batch, this->actor_);
    EXPECT_EQ(result.status().code(), c.code) << result.status().ToString();

    auto all = this->store().ListConfigs(std::nullopt);
    ASSERT_TRUE(all.ok());
    EXPECT_THAT(Names(*all), ElementsAre("POOL/existing"));
    auto existing = this->store().GetConfig("POOL", "existing");
    ASSERT_TRUE(existing.ok());
    EXPECT_EQ(existing->revision, 1);
    EXPECT_EQ(existing->body["v"], 1);
    auto history = this->store().History(std::nullopt, std::nullopt, 0);
    ASSERT_TRUE(history.ok());
    EXPECT_THAT(Revisions(*history), ElementsAre("POOL/existing@1:update"));
  }
  // Failed batches consumed no revision numbers.
  EXPECT_EQ(this->Put("POOL", "existing", {{"v", 2}}), 2);
  EXPECT_EQ(this->Put("POOL", "new1", {{"v", 1}}), 1);
}

TYPED_TEST(StoreContractTest, BatchAppliesInOrderAndReturnsEachRevision) {
  this->Put("POOL", "a", {{"v", 1}});
  std::vector<ConfigWrite> batch = {
      {.op = ConfigWrite::Op::kPut,
       .kind = "POOL",
       .name = "a",
       .body = {{"v", 2}},
       .expected_revision = 1},
      {.op = ConfigWrite::Op::kPut,
       .kind = "POOL",
       .name = "a",
       .body = {{"v", 3}},
       .expected_revision = 2},  // sees the write before it
      {.op = ConfigWrite::Op::kPut,
       .kind = "ROLE",
       .name = "r",
       .body = {{"v", 1}},
       .expected_revision = 0},
  };
  auto result = this->store().WriteConfigs(batch, this->actor_);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_THAT(*result, ElementsAre(2, 3, 1));
}

TYPED_TEST(StoreContractTest, CheckAssertsWithoutWriting) {
  this->Put("POD_TEMPLATE", "t", {{"v", 1}});
  this->Put("POD_TEMPLATE", "t", {{"v", 2}});
  std::vector<ConfigWrite> batch = {
      {.op = ConfigWrite::Op::kCheck, .kind = "POD_TEMPLATE", .name = "t", .expected_revision = 2},
      {.op = ConfigWrite::Op::kCheck,
       .kind = "POD_TEMPLATE",
       .name = "absent",
       .expected_revision = 0},
      {.op = ConfigWrite::Op::kPut, .kind = "POOL", .name = "p", .body = {{"uses", "t"}}},
  };
  auto result = this->store().WriteConfigs(batch, this->actor_);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_THAT(*result, ElementsAre(2, 0, 1));
  auto history = this->store().History(std::nullopt, std::nullopt, 0);
  ASSERT_TRUE(history.ok());
  EXPECT_THAT(Revisions(*history),
              ElementsAre("POOL/p@1:update", "POD_TEMPLATE/t@2:update", "POD_TEMPLATE/t@1:update"));
  EXPECT_EQ(this->store().GetConfig("POD_TEMPLATE", "absent").status().code(),
            StatusCode::kNotFound);

  // The template changed after the snapshot: the dependent write is refused.
  this->Put("POD_TEMPLATE", "t", {{"v", 3}});
  ConfigWrite again = batch[2];
  again.body = nlohmann::ordered_json{{"uses", "t"}, {"again", true}};
  const std::vector<ConfigWrite> stale = {batch[0], batch[1], again};
  EXPECT_EQ(this->store().WriteConfigs(stale, this->actor_).status().code(), StatusCode::kAborted);
  EXPECT_EQ(this->store().GetConfig("POOL", "p")->revision, 1);
}

TYPED_TEST(StoreContractTest, ConfigGenerationCountsCommittedChanges) {
  auto g0 = this->store().ConfigGeneration();
  ASSERT_TRUE(g0.ok()) << g0.status().ToString();
  auto other = this->Open();  // a second connection sees the same counter
  ASSERT_NE(other, nullptr);
  struct Case {
    std::string name;
    std::vector<ConfigWrite> batch;
    bool ok;
    int64_t delta;
  };
  const std::vector<Case> cases = {
      {"one put", {{.kind = "POOL", .name = "a", .body = {{"v", 1}}}}, true, 1},
      {"a batch of three counts once",
       {{.kind = "POOL", .name = "b", .body = {{"v", 1}}},
        {.kind = "POOL", .name = "c", .body = {{"v", 1}}},
        {.kind = "POOL", .name = "a", .body = {{"v", 2}}}},
       true,
       1},
      {"failed batch",
       {{.kind = "POOL", .name = "a", .body = {{"v", 3}}, .expected_revision = 1}},
       false,
       0},
      {"checks only",
       {{.op = ConfigWrite::Op::kCheck, .kind = "POOL", .name = "a", .expected_revision = 2}},
       true,
       0},
      {"delete", {{.op = ConfigWrite::Op::kDelete, .kind = "POOL", .name = "c"}}, true, 1},
  };
  int64_t expected = *g0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(this->store().WriteConfigs(c.batch, this->actor_).ok(), c.ok);
    expected += c.delta;
    EXPECT_EQ(*this->store().ConfigGeneration(), expected);
    EXPECT_EQ(*other->ConfigGeneration(), expected);
  }
}

TYPED_TEST(StoreContractTest, OptimisticLock) {
  struct Case {
    std::string name;
    std::optional<int64_t> expected;
    StatusCode code;
    int64_t revision_after;
  };
  // Applied in order against one config.
  const std::vector<Case> cases = {
      {"create with must-not-exist", 0, StatusCode::kOk, 1},
      {"create again with must-not-exist", 0, StatusCode::kAborted, 1},
      {"matching revision", 1, StatusCode::kOk, 2},
      {"stale revision", 1, StatusCode::kAborted, 2},
      {"future revision", 5, StatusCode::kAborted, 2},
      {"no lock: last writer wins", std::nullopt, StatusCode::kOk, 3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ConfigWrite write{.op = ConfigWrite::Op::kPut,
                      .kind = "POOL",
                      .name = "p",
                      .body = {{"case", c.name}},
                      .expected_revision = c.expected};
    auto result = this->store().WriteConfigs({write}, this->actor_);
    EXPECT_EQ(result.status().code(), c.code) << result.status().ToString();
    auto got = this->store().GetConfig("POOL", "p");
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->revision, c.revision_after);
  }
  ConfigWrite stale_delete{
      .op = ConfigWrite::Op::kDelete, .kind = "POOL", .name = "p", .expected_revision = 2};
  EXPECT_EQ(this->store().WriteConfigs({stale_delete}, this->actor_).status().code(),
            StatusCode::kAborted);
}

TYPED_TEST(StoreContractTest, HistoryNewestFirstWithFilters) {
  this->Put("POOL", "a", {{"v", 1}});
  this->clock_.Advance(1000);
  this->Put("ROLE", "r", {{"v", 1}});
  this->Put("POOL", "b", {{"v", 1}});
  this->Put("POOL", "a", {{"v", 2}});
  ConfigWrite rollback{.op = ConfigWrite::Op::kPut,
                       .kind = "POOL",
                       .name = "a",
                       .body = {{"v", 1}},
                       .action = "rollback",
                       .description = "back to revision 1"};
  ASSERT_TRUE(this->store().WriteConfigs({rollback}, Actor{"bob", "10.0.0.7"}).ok());

  auto all = this->store().History(std::nullopt, std::nullopt, 0);
  ASSERT_TRUE(all.ok());
  EXPECT_THAT(Revisions(*all),
              ElementsAre("POOL/a@3:rollback", "POOL/a@2:update", "POOL/b@1:update",
                          "ROLE/r@1:update", "POOL/a@1:update"));
  EXPECT_EQ(all->at(0).author, "bob");
  EXPECT_EQ(all->at(0).source, "10.0.0.7");
  EXPECT_EQ(all->at(0).description, "back to revision 1");
  EXPECT_EQ(all->at(0).body, ordered_json({{"v", 1}}));
  EXPECT_EQ(all->at(0).created_at_ms, 1'700'000'001'000);
  EXPECT_EQ(all->back().created_at_ms, 1'700'000'000'000);

  auto limited = this->store().History(std::nullopt, std::nullopt, 2);
  ASSERT_TRUE(limited.ok());
  EXPECT_THAT(Revisions(*limited), ElementsAre("POOL/a@3:rollback", "POOL/a@2:update"));
  auto pools = this->store().History("POOL", std::nullopt, 0);
  ASSERT_TRUE(pools.ok());
  EXPECT_EQ(pools->size(), 4u);
  auto one = this->store().History("POOL", "b", 0);
  ASSERT_TRUE(one.ok());
  EXPECT_THAT(Revisions(*one), ElementsAre("POOL/b@1:update"));

  auto second = this->store().GetRevision("POOL", "a", 2);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->body, ordered_json({{"v", 2}}));
  EXPECT_EQ(second->author, "alice");
  EXPECT_EQ(this->store().GetRevision("POOL", "a", 9).status().code(), StatusCode::kNotFound);
}

TYPED_TEST(StoreContractTest, DeleteKeepsHistoryAndRevisionsContinue) {
  this->Put("POD_TEMPLATE", "t", {{"v", 1}});
  this->Put("POD_TEMPLATE", "t", {{"v", 2}});
  ConfigWrite del{
      .op = ConfigWrite::Op::kDelete, .kind = "POD_TEMPLATE", .name = "t", .expected_revision = 2};
  auto deleted = this->store().WriteConfigs({del}, this->actor_);
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_THAT(*deleted, ElementsAre(3));
  EXPECT_EQ(this->store().GetConfig("POD_TEMPLATE", "t").status().code(), StatusCode::kNotFound);
  auto listed = this->store().ListConfigs(std::nullopt);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());

  auto history = this->store().History("POD_TEMPLATE", "t", 0);
  ASSERT_TRUE(history.ok());
  EXPECT_THAT(Revisions(*history), ElementsAre("POD_TEMPLATE/t@3:delete", "POD_TEMPLATE/t@2:update",
                                               "POD_TEMPLATE/t@1:update"));
  EXPECT_TRUE(history->at(0).body.is_null());
  auto first = this->store().GetRevision("POD_TEMPLATE", "t", 1);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->body, ordered_json({{"v", 1}}));

  // Re-create: "must not exist" holds again, and numbering continues.
  EXPECT_EQ(this->Put("POD_TEMPLATE", "t", {{"v", 4}}, 0), 4);
  EXPECT_EQ(this->store().WriteConfigs({del}, this->actor_).status().code(), StatusCode::kAborted);
}

// ---- Audit ----

TYPED_TEST(StoreContractTest, AuditNewestFirst) {
  Store& s = this->store();
  ASSERT_TRUE(s.AppendAudit({.at_ms = 5,
                             .user = "a",
                             .source = "cli",
                             .action = "config update",
                             .target = "POOL/x",
                             .detail = "rev 1"})
                  .ok());
  ASSERT_TRUE(s.AppendAudit({.user = "b", .action = "workflow submit", .target = "wf-1"}).ok());
  auto all = s.ListAudit(0);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ(all->at(0).user, "b");
  EXPECT_EQ(all->at(0).at_ms, 1'700'000'000'000);  // filled from the store's clock
  EXPECT_EQ(all->at(1).action, "config update");
  EXPECT_EQ(all->at(1).target, "POOL/x");
  EXPECT_EQ(all->at(1).detail, "rev 1");
  EXPECT_EQ(all->at(1).at_ms, 5);
  auto one = s.ListAudit(1);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(one->at(0).user, "b");
}

// ---- Leases ----

TYPED_TEST(StoreContractTest, LeaseAcquireRenewExpireSteal) {
  Store& s = this->store();
  struct Step {
    std::string name;
    std::string holder;
    int64_t now;
    bool acquired;
  };
  const std::vector<Step> steps = {
      {"free lease is acquired", "A", 0, true},  // A until 10
      {"live lease is not stolen", "B", 5, false},
      {"holder renews", "A", 8, true},  // A until 18
      {"renewal extended it", "B", 15, false},
      {"expired lease is stolen", "B", 18, true},  // B until 28
      {"old holder lost it", "A", 19, false},
  };
  for (const Step& step : steps) {
    SCOPED_TRACE(step.name);
    auto got = s.TryAcquireLease("leader", step.holder, step.now, 10);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, step.acquired);
  }
  EXPECT_EQ(*s.TryAcquireLease("other", "A", 19, 10), true);  // leases are independent

  ASSERT_TRUE(s.ReleaseLease("leader", "A").ok());  // not the holder: no effect
  EXPECT_EQ(*s.TryAcquireLease("leader", "A", 20, 10), false);
  ASSERT_TRUE(s.ReleaseLease("leader", "B").ok());
  EXPECT_EQ(*s.TryAcquireLease("leader", "A", 20, 10), true);
  EXPECT_EQ(s.TryAcquireLease("leader", "A", 20, 0).status().code(), StatusCode::kInvalidArgument);
}

TYPED_TEST(StoreContractTest, LeaseWithoutATimeRunsOnTheDatabaseClock) {
  // Servers pass no time: the expiry is reckoned on the database's clock (PostgreSQL's own; a
  // SQLite file is on one machine, whose clock is the store's), never on a contender's.
  Store& s = this->store();
  constexpr int64_t kTtl = 600;
  ASSERT_TRUE(*s.TryAcquireLease("leader", "A", std::nullopt, kTtl));
  EXPECT_FALSE(*this->Open()->TryAcquireLease("leader", "B", std::nullopt, kTtl));
  // B's clock runs two hours ahead.
  this->clock_.Advance(2 * 3600 * 1000);
  const bool database_clock = std::is_same_v<TypeParam, PostgresBackend>;
  EXPECT_EQ(*this->Open()->TryAcquireLease("leader", "B", std::nullopt, kTtl), !database_clock)
      << "a contender's clock decided the expiry";
  if (!database_clock) return;
  // The lease expires once the database's clock has passed it; then B takes it over.
  ASSERT_TRUE(*s.TryAcquireLease("leader", "A", std::nullopt, kTtl));  // renewed
  std::this_thread::sleep_for(std::chrono::milliseconds(kTtl + 200));
  EXPECT_TRUE(*this->Open()->TryAcquireLease("leader", "B", std::nullopt, kTtl));
  EXPECT_FALSE(*s.TryAcquireLease("leader", "A", std::nullopt, kTtl));
}

}  // namespace store_contract_configs_test
}  // namespace gpupool::store::contract_test
