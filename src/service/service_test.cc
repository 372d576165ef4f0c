#include "service/service.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <random>

#include "common/clock.h"
#include "store/store.h"

namespace gpupool::service {
namespace service_test {

constexpr char kNodes[] = R"(apiVersion: v1
kind: NodeList
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status:
    allocatable: {cpu: "64", memory: 512Gi, ephemeral-storage: 2Ti, pods: "110"}
)";

constexpr char kMoreNodes[] = R"(apiVersion: v1
kind: Node
metadata: {name: n2}
status:
  allocatable: {cpu: "8", memory: 64Gi, ephemeral-storage: 1Ti, pods: "110"}
)";

constexpr char kWorkflow[] = R"(workflow:
  name: wf
  resources:
    default: {cpu: 1, memory: 1Gi, storage: 1Gi}
  tasks:
  - {name: t, image: busybox}
)";

// Two stores on one SQLite file stand for two processes (a server and a CLI): the Service's
// caches (configs, nodes, workflows) must see the other's writes at the next call.
class ServiceCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpupool_service_test_" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir_);
    std::string url = "sqlite:" + (dir_ / "db.sqlite").string();
    auto a = store::OpenStore(url, {.clock = &clock_});
    auto b = store::OpenStore(url, {.clock = &clock_});
    ASSERT_TRUE(a.ok() && b.ok());
    server_store_ = std::move(*a);
    cli_store_ = std::move(*b);
    server_ = std::make_unique<Service>(*server_store_, clock_);
    cli_ = std::make_unique<Service>(*cli_store_, clock_);
    ASSERT_TRUE(server_->EnsureBuiltins().ok());
  }
  void TearDown() override {
    server_.reset();
    cli_.reset();
    server_store_.reset();
    cli_store_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  FakeClock clock_;
  Caller admin_{"root", {"osmo-admin"}, "test"};
  std::filesystem::path dir_;
  std::unique_ptr<store::Store> server_store_, cli_store_;
  std::unique_ptr<Service> server_, cli_;
};

TEST_F(ServiceCacheTest, SeesNodesWorkflowsAndConfigsWrittenByAnotherStore) {
  ASSERT_TRUE(cli_->ImportNodes(admin_, kNodes, "nodes.yaml").ok());
  auto resources = server_->ListResources(admin_, {});
  ASSERT_TRUE(resources.ok()) << resources.status().ToString();
  ASSERT_EQ(resources->size(), 1u);  // loaded and cached
  ASSERT_TRUE(cli_->ImportNodes(admin_, kMoreNodes, "more.yaml").ok());
  resources = server_->ListResources(admin_, {});
  ASSERT_TRUE(resources.ok());
  EXPECT_EQ(resources->size(), 2u);  // the node generation moved: reloaded

  SubmitRequest submit{.pool = "default", .spec_text = kWorkflow, .file_name = "wf.yaml"};
  auto submitted = server_->SubmitWorkflow(admin_, submit);
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  auto view = server_->QueryWorkflow(admin_, submitted->workflow_id);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->status, "PENDING");
  auto text = server_->QueryWorkflowJson(admin_, submitted->workflow_id);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(**text, ToJson(*view).dump() + "\n");
  // Canceled through the other store: the cached copy is stale by version, so it is re-read.
  ASSERT_TRUE(cli_->CancelWorkflow(admin_, submitted->workflow_id).ok());
  view = server_->QueryWorkflow(admin_, submitted->workflow_id);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->status, "CANCELED");
  text = server_->QueryWorkflowJson(admin_, submitted->workflow_id);
  ASSERT_TRUE(text.ok());
  EXPECT_NE((*text)->find("CANCELED"), std::string::npos);
  EXPECT_EQ(server_->QueryWorkflow(admin_, "nope-1").status().code(), StatusCode::kNotFound);

  // Another user's workflow: the service checks access itself unless the HTTP layer did for the
  // workflow's pool.
  Caller stranger{"eve", {}, "test"};
  EXPECT_EQ(server_->QueryWorkflow(stranger, submitted->workflow_id).status().code(),
            StatusCode::kPermissionDenied);
  Caller checked = stranger;
  checked.access_checked_pool = "some-other-pool";
  EXPECT_EQ(server_->QueryWorkflow(checked, submitted->workflow_id).status().code(),
            StatusCode::kPermissionDenied);
  checked.access_checked_pool = "default";
  EXPECT_TRUE(server_->QueryWorkflow(checked, submitted->workflow_id).ok());

  // A pool deleted through the other store is gone for the next submission.
  auto deleted = cli_->DeleteConfig(admin_, {.kind = "POOL", .name = "default", .force = true});
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_EQ(server_->SubmitWorkflow(admin_, submit).status().code(), StatusCode::kNotFound);
}

// The asynchronous paths (those of the HTTP server) see the other store's writes as well: a
// submission planned on cached configs and nodes is planned again when its write finds that they
// changed, and a read checks the workflow's version.
TEST_F(ServiceCacheTest, AsyncSubmissionsAndReadsSeeWritesOfAnotherStore) {
  auto submit_async = [&](const SubmitRequest& request) {
    std::promise<Result<SubmitResult>> promise;
    server_->SubmitWorkflowAsync(admin_, request,
                                 [&](Result<SubmitResult> r) { promise.set_value(std::move(r)); });
    return promise.get_future().get();
  };
  auto read_async = [&](const std::string& id) {
    std::promise<Result<std::shared_ptr<const std::string>>> promise;
    server_->QueryWorkflowJsonAsync(admin_, id, [&](auto r) { promise.set_value(std::move(r)); });
    return promise.get_future().get();
  };
  ASSERT_TRUE(cli_->ImportNodes(admin_, kNodes, "nodes.yaml").ok());
  SubmitRequest submit{.pool = "default", .spec_text = kWorkflow, .file_name = "wf.yaml"};
  auto first = submit_async(submit);
  ASSERT_TRUE(first.ok()) << first.status().ToString();  // configs and nodes now cached

  // Nodes changed through the other store: planned again, stored once.
  ASSERT_TRUE(cli_->ImportNodes(admin_, kMoreNodes, "more.yaml").ok());
  auto second = submit_async(submit);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  auto listed = cli_->ListWorkflows(admin_, {});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 2u);

  auto text = read_async(second->workflow_id);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE((*text)->find("PENDING"), std::string::npos);
  ASSERT_TRUE(cli_->CancelWorkflow(admin_, second->workflow_id).ok());
  text = read_async(second->workflow_id);
  ASSERT_TRUE(text.ok());
  EXPECT_NE((*text)->find("CANCELED"), std::string::npos);
  EXPECT_EQ(read_async("nope-1").status().code(), StatusCode::kNotFound);

  // The pool deleted through the other store: the cached plan's write is refused, and the plan
  // on fresh configs finds no pool.
  ASSERT_TRUE(cli_->DeleteConfig(admin_, {.kind = "POOL", .name = "default", .force = true}).ok());
  EXPECT_EQ(submit_async(submit).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(cli_->ListWorkflows(admin_, {})->size(), 2u);
}

// The nodes a platform's node rules see are remembered per configs and nodes; nodes added
// through the other store are seen by the next submission, on either path.
// The listener the scheduling loop hangs on (SchedulingLoop::Nudge) hears each workflow newly
// stored, once: not a replay of an idempotency key, nor a refused submission.
TEST_F(ServiceCacheTest, TheSubmittedListenerHearsEachNewWorkflowOnce) {
  int heard = 0;
  server_->SetSubmittedListener([&heard](const auto&) { ++heard; });
  ASSERT_TRUE(server_->ImportNodes(admin_, kNodes, "nodes.yaml").ok());
  SubmitRequest submit{.pool = "default", .spec_text = kWorkflow, .file_name = "wf.yaml"};
  submit.idempotency_key = "k1";
  auto first = server_->SubmitWorkflow(admin_, submit);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto replay = server_->SubmitWorkflow(admin_, submit);
  ASSERT_TRUE(replay.ok());
  EXPECT_TRUE(replay->existing);
  EXPECT_EQ(heard, 1);
  submit.idempotency_key = "k2";
  ASSERT_TRUE(server_->SubmitWorkflow(admin_, submit).ok());
  EXPECT_EQ(heard, 2);
  submit.pool = "no-such-pool";
  EXPECT_FALSE(server_->SubmitWorkflow(admin_, submit).ok());
  EXPECT_EQ(heard, 2);
}

TEST_F(ServiceCacheTest, NodeRulesSeeNodesAddedThroughAnotherStore) {
  constexpr char kBig[] = R"(workflow:
  name: big
  resources:
    default: {cpu: 32, memory: 1Gi, storage: 1Gi}
  tasks:
  - {name: t, image: busybox}
)";
  SubmitRequest submit{.pool = "default", .spec_text = kBig, .file_name = "big.yaml"};
  ASSERT_TRUE(cli_->ImportNodes(admin_, kMoreNodes, "more.yaml").ok());  // 8 CPUs only
  auto refused = server_->SubmitWorkflow(admin_, submit);
  ASSERT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("validation failed"), std::string::npos)
      << refused.status().ToString();
  std::promise<Result<SubmitResult>> first;
  server_->SubmitWorkflowAsync(admin_, submit,
                               [&](Result<SubmitResult> r) { first.set_value(std::move(r)); });
  EXPECT_EQ(first.get_future().get().status().code(), StatusCode::kInvalidArgument);

  ASSERT_TRUE(cli_->ImportNodes(admin_, kNodes, "nodes.yaml").ok());  // adds 64 CPUs
  std::promise<Result<SubmitResult>> second;
  server_->SubmitWorkflowAsync(admin_, submit,
                               [&](Result<SubmitResult> r) { second.set_value(std::move(r)); });
  auto accepted = second.get_future().get();
  EXPECT_TRUE(accepted.ok()) << accepted.status().ToString();
  EXPECT_TRUE(server_->SubmitWorkflow(admin_, submit).ok());
}

TEST_F(ServiceCacheTest, MachinePoolsAreCheckedAtWriteTime) {
  auto put = [&](const std::string& body) {
    UpdateConfigRequest request;
    request.kind = "MACHINE_POOL";
    request.name = "gpu-spot";
    request.body = nlohmann::ordered_json::parse(body);
    request.file_name = "pool.json";
    return server_->UpdateConfig(admin_, request);
  };
  // Strict fields, with the field path and a suggestion.
  auto typo = put(R"({"instance_type": "g4dn.xlarge", "max_replica": 3})");
  ASSERT_EQ(typo.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(typo.status().message().find("pool.json: "), std::string::npos)
      << typo.status().message();
  EXPECT_NE(typo.status().message().find("max_replicas"), std::string::npos)
      << typo.status().message();
  // The server's check (its instance catalog) refuses an unknown instance type.
  MachinePoolSupport support;
  support.check = [](const model::MachinePool& pool) -> Status {
    if (pool.instance_type == "g4dn.xlarge") return OkStatus();
    return InvalidArgumentError(pool.name + ".instance_type: \"" + pool.instance_type +
                                "\" is not in the instance catalog");
  };
  server_->SetMachinePoolSupport(support);
  auto unknown = put(R"({"instance_type": "g4dn.xlarg", "max_replicas": 3})");
  ASSERT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("gpu-spot.instance_type"), std::string::npos)
      << unknown.status().message();
  auto stored = server_store_->ListConfigs("MACHINE_POOL");
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE(stored->empty());  // nothing half-written
  auto ok = put(R"({"instance_type": "g4dn.xlarge", "capacity_type": "spot", "max_replicas": 3})");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  stored = server_store_->ListConfigs("MACHINE_POOL");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->size(), 1u);
}

// What is stored is bounded as the parsers bound what they read: a body nested deeper than
// kMaxNestingDepth (once a pod template 20,000 deep was stored, and every later `config show` and
// dry run crashed) is refused at save time, by whatever way it comes, and nothing is written.
TEST_F(ServiceCacheTest, BodiesNestedTooDeepAreRefusedAtSaveTime) {
  auto deep = [](int depth) {
    nlohmann::ordered_json value = 1;
    for (int i = 0; i < depth; ++i) value = nlohmann::ordered_json{{"a", std::move(value)}};
    return value;
  };
  auto history = server_->History({});
  ASSERT_TRUE(history.ok());
  const size_t revisions = history->size();

  UpdateConfigRequest update;
  update.kind = "POD_TEMPLATE";
  update.body = nlohmann::ordered_json{{"t", {{"spec", deep(20000)}}}};
  auto written = server_->UpdateConfig(admin_, update);
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(written.status().message(), "t: nested deeper than 512 levels of arrays and objects");

  PatchConfigRequest patch;
  patch.kind = "POOL";
  patch.name = "default";
  patch.patch = nlohmann::ordered_json{{"description", deep(20000)}};
  auto patched = server_->PatchConfig(admin_, patch);
  ASSERT_FALSE(patched.ok());
  EXPECT_EQ(patched.status().message(),
            "merge patch of POOL \"default\": description: nested deeper than 512 levels of "
            "arrays and objects");

  // At the bound a body is stored (and shown) as any other.
  update.body = nlohmann::ordered_json{{"t", {{"spec", {{"x", deep(509)}}}}}};
  auto at_bound = server_->UpdateConfig(admin_, update);
  EXPECT_TRUE(at_bound.ok()) << at_bound.status().ToString();
  history = server_->History({});
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(history->size(), revisions + 1);
  EXPECT_TRUE(server_->ShowConfig("POD_TEMPLATE", "t").ok());
}

// A node of `memory: 3Ei` (3.5e18 bytes, beyond int64 milli-units) is accepted and counted in
// bytes; three of them hold more than int64 counts, and the totals stop at its end.
TEST_F(ServiceCacheTest, NodesCoverKubernetesQuantityRange) {
  std::string nodes = "apiVersion: v1\nkind: NodeList\nitems:\n";
  for (int i = 0; i < 3; ++i) {
    nodes += "- apiVersion: v1\n  kind: Node\n  metadata: {name: big-" + std::to_string(i) +
             "}\n  status:\n    allocatable: {cpu: \"64\", memory: 3Ei, ephemeral-storage: 7Ei, "
             "nvidia.com/gpu: \"8\"}\n";
  }
  auto imported = server_->ImportNodes(admin_, nodes, "nodes.yaml");
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  auto rows = server_->ListResources(admin_, {});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[0].memory_capacity, int64_t{3} << 60);
  nlohmann::ordered_json row = ToJson((*rows)[0]);
  EXPECT_EQ(row["memory"]["capacity"], "3Ei");
  EXPECT_EQ(row["storage"]["capacity"], "7Ei");
  auto pools = server_->ListPools(admin_);
  ASSERT_TRUE(pools.ok()) << pools.status().ToString();
}

// A submission's access to its pool is decided once, by the service, for the server and the
// offline CLI alike (submit::Submit does not check it): deny by default, before the workflow is
// read and before a workflow id is taken.
TEST_F(ServiceCacheTest, SubmissionAccessIsTheServicesDecision) {
  ASSERT_TRUE(cli_->ImportNodes(admin_, kNodes, "nodes.yaml").ok());
  ASSERT_TRUE(server_->SetPoolRole(admin_, "osmo-team", "").ok());  // pools named team*
  auto default_pool = server_->ShowConfig("POOL", "default", std::nullopt);
  ASSERT_TRUE(default_pool.ok());
  UpdateConfigRequest team_pool{.kind = "POOL", .name = "team-a", .body = default_pool->body};
  ASSERT_TRUE(server_->UpdateConfig(admin_, team_pool).ok());
  const std::string denied_default =
      "access denied: user \"tina\" with roles osmo-team may not submit to pool \"default\": "
      "POST /api/pool/default/workflow is not allowed for roles osmo-team, osmo-default";
  struct Case {
    std::string name;
    Caller caller;
    std::string pool;
    bool dry_run;
    std::string spec;
    StatusCode code;
    std::string message;  // for a refusal
  };
  const Caller tina{"tina", {"osmo-team"}, "test"};
  const std::vector<Case> cases = {
      {"no role for the pool", tina, "default", false, kWorkflow, StatusCode::kPermissionDenied,
       denied_default},
      {"dry run too", tina, "default", true, kWorkflow, StatusCode::kPermissionDenied,
       denied_default},
      {"refused before the workflow is read", tina, "default", false, "not: [a workflow",
       StatusCode::kPermissionDenied, denied_default},
      {"no roles at all",
       {"eve", {}, "test"},
       "team-a",
       false,
       kWorkflow,
       StatusCode::kPermissionDenied,
       "access denied: user \"eve\" with roles (none) may not submit to pool \"team-a\""},
      {"a path the rules refuse", tina, "x%25y", false, kWorkflow, StatusCode::kInvalidArgument,
       "access denied: user \"tina\""},
      {"the pool's role", tina, "team-a", true, kWorkflow, StatusCode::kOk, ""},
      {"osmo-admin", admin_, "default", true, kWorkflow, StatusCode::kOk, ""},
  };
  auto submit_async = [&](const Caller& caller, const SubmitRequest& request) {
    std::promise<Result<SubmitResult>> promise;
    server_->SubmitWorkflowAsync(caller, request,
                                 [&](Result<SubmitResult> r) { promise.set_value(std::move(r)); });
    return promise.get_future().get();
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    SubmitRequest request{
        .pool = c.pool, .spec_text = c.spec, .file_name = "wf.yaml", .dry_run = c.dry_run};
    // The CLI's path (synchronous) and the server's (asynchronous) answer alike.
    for (const Result<SubmitResult>& result :
         {server_->SubmitWorkflow(c.caller, request), submit_async(c.caller, request)}) {
      EXPECT_EQ(result.status().code(), c.code) << result.status().ToString();
      if (!c.message.empty()) {
        EXPECT_NE(result.status().message().find(c.message), std::string::npos)
            << result.status().message();
      }
    }
  }
  // Nothing was stored and no workflow id was taken by the refusals.
  SubmitRequest request{.pool = "team-a", .spec_text = kWorkflow, .file_name = "wf.yaml"};
  auto submitted = server_->SubmitWorkflow(tina, request);
  ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
  EXPECT_EQ(submitted->workflow_id, "wf-1");
}

// A pool's action_permissions.cancel (OSMO) restricts who, besides the submitter, may cancel,
// on top of the roles (which must still allow it); osmo-admin bypasses it.
TEST_F(ServiceCacheTest, CancelFollowsThePoolsActionPermissions) {
  ASSERT_TRUE(cli_->ImportNodes(admin_, kNodes, "nodes.yaml").ok());
  auto put = [&](const std::string& kind, const std::string& name, nlohmann::ordered_json body) {
    UpdateConfigRequest request;
    request.kind = kind;
    request.name = name;
    request.body = std::move(body);
    auto written = server_->UpdateConfig(admin_, request);
    ASSERT_TRUE(written.ok()) << written.status().ToString();
  };
  // `canceller` may cancel in any pool but submit to none; `member` may do anything in `team`.
  put("ROLE", "canceller",
      {{"policies", {{{"actions", {"workflow:Cancel"}}, {"resources", {"pool/*"}}}}}});
  put("ROLE", "member",
      {{"policies", {{{"actions", {"workflow:*"}}, {"resources", {"pool/team"}}}}}});
  auto default_pool = server_->ShowConfig("POOL", "default", std::nullopt);
  ASSERT_TRUE(default_pool.ok());
  struct Case {
    std::string permission;  // "" = no action_permissions
    std::vector<std::string> roles;
    bool allowed;
  };
  const std::vector<Case> cases = {
      {"", {"canceller"}, true},         {"", {"member"}, true},
      {"PUBLIC", {"canceller"}, true},   {"PUBLIC", {"member"}, true},
      {"POOL", {"canceller"}, false},    {"POOL", {"member"}, true},
      {"PRIVATE", {"canceller"}, false}, {"PRIVATE", {"member"}, false},
      {"PRIVATE", {"osmo-admin"}, true}, {"PUBLIC", {"osmo-user"}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.permission + " " + c.roles[0]);
    nlohmann::ordered_json body = default_pool->body;
    if (!c.permission.empty()) body["action_permissions"] = {{"cancel", c.permission}};
    put("POOL", "team", body);
    SubmitRequest submit{.pool = "team", .spec_text = kWorkflow, .file_name = "wf.yaml"};
    auto submitted = server_->SubmitWorkflow(admin_, submit);
    ASSERT_TRUE(submitted.ok()) << submitted.status().ToString();
    Caller other{"bob", c.roles, "test"};
    auto canceled = server_->CancelWorkflow(other, submitted->workflow_id);
    EXPECT_EQ(canceled.ok(), c.allowed) << canceled.status().ToString();
    if (!canceled.ok()) {
      EXPECT_EQ(canceled.status().code(), StatusCode::kPermissionDenied);
      if (c.permission == "PRIVATE") {
        EXPECT_NE(canceled.status().message().find("only the submitter (root)"), std::string::npos)
            << canceled.status().message();
      }
      // The submitter always may.
      EXPECT_TRUE(server_->CancelWorkflow(admin_, submitted->workflow_id).ok());
    }
  }
}

TEST(MergePatchTest, Rfc7396) {
  using Json = nlohmann::ordered_json;
  struct Case {
    std::string target, patch, want;
  };
  // RFC 7396 appendix A, plus key order.
  std::vector<Case> cases = {
      {R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
      {R"({"a":"b"})", R"({"a":null})", R"({})"},
      {R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
      {R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
      {R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})", R"({"a":{"b":"d"}})"},
      {R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
      {R"(["a","b"])", R"(["c","d"])", R"(["c","d"])"},
      {R"({"a":"b"})", R"(["c"])", R"(["c"])"},
      {R"({"a":"foo"})", "null", "null"},
      {R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})"},
      {R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})"},
      {R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})"},
      {R"({"z":1,"a":2,"m":3})", R"({"a":9,"n":4})", R"({"z":1,"a":9,"m":3,"n":4})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.target + " + " + c.patch);
    EXPECT_EQ(MergePatch(Json::parse(c.target), Json::parse(c.patch)).dump(), c.want);
  }
}

}  // namespace service_test
}  // namespace gpupool::service
