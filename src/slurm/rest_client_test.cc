#include "slurm/rest_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "slurm/fake_slurmrestd.h"

namespace gpupool::slurm {
namespace rest_client_test {

using Json = nlohmann::ordered_json;
using testing::ReadTestFile;
using testing::ReadTestJson;
using testing::ScriptedTransport;

struct Harness {
  std::shared_ptr<ScriptedTransport::Shared> shared = std::make_shared<ScriptedTransport::Shared>();
  std::vector<std::chrono::milliseconds> waits;
  std::unique_ptr<RestClient> client;

  explicit Harness(std::string endpoint = "http://127.0.0.1:6820",
                   TokenSource token = TokenSource::Fixed("tok")) {
    ClientOptions options;
    options.user = "nobody";
    options.token = std::move(token);
    options.max_attempts = 3;
    options.first_backoff = std::chrono::milliseconds(100);
    options.sleep = [this](std::chrono::milliseconds wait) { waits.push_back(wait); };
    client = std::make_unique<RestClient>(
        *ParseEndpoint(endpoint), std::make_unique<ScriptedTransport>(shared), std::move(options));
  }
  void Push(HttpOutcome outcome) { shared->script.push_back(std::move(outcome)); }
};

TEST(RestClientTest, ParseEndpoint) {
  struct Case {
    const char* text;
    const char* canonical;  // "" = error
    const char* error;
  };
  const Case cases[] = {
      {"http://127.0.0.1:6820", "http://127.0.0.1:6820", ""},
      {"http://slurm.example:6820/", "http://slurm.example:6820", ""},
      {"http://[::1]:6820", "http://[::1]:6820", ""},
      {"unix:/run/slurmrestd.sock", "unix:/run/slurmrestd.sock", ""},
      {"unix:relative.sock", "", "the socket path must be absolute"},
      {"https://h:6820", "", "https is not supported"},
      {"http://h", "", "no port"},
      {"http://h:0", "", "bad port \"0\""},
      {"http://h:70000", "", "bad port"},
      {"http://::1:6820", "", "IPv6 address must be in brackets"},
      {"http://h:6820/slurm", "", "a path after HOST:PORT"},
      {"ftp://h:1", "", "unknown scheme"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto endpoint = ParseEndpoint(c.text);
    if (std::string(c.canonical).empty()) {
      ASSERT_FALSE(endpoint.ok());
      EXPECT_NE(endpoint.status().message().find(c.error), std::string::npos)
          << endpoint.status().message();
      EXPECT_NE(endpoint.status().message().find("expected http://HOST:PORT or unix:/PATH"),
                std::string::npos);
    } else {
      ASSERT_TRUE(endpoint.ok()) << endpoint.status().message();
      EXPECT_EQ(endpoint->ToString(), c.canonical);
    }
  }
}

TEST(RestClientTest, SendsJwtHeadersOverTcp) {
  Harness h;
  h.Push(ScriptedTransport::Answer(200, ReadTestFile("partitions.json")));
  auto partitions = h.client->GetPartitions();
  ASSERT_TRUE(partitions.ok()) << partitions.status().message();
  ASSERT_EQ(h.shared->requests.size(), 1u);
  const HttpRequest& request = h.shared->requests[0];
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.target, "/slurm/v0.0.38/partitions");
  EXPECT_EQ(request.headers.at("X-SLURM-USER-NAME"), "nobody");
  EXPECT_EQ(request.headers.at("X-SLURM-USER-TOKEN"), "tok");
}

TEST(RestClientTest, UnixSocketNeedsNoToken) {
  Harness h("unix:/run/x.sock", TokenSource());
  h.Push(ScriptedTransport::Answer(200, ReadTestFile("nodes.json")));
  auto nodes = h.client->GetNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  EXPECT_EQ((*nodes)->size(), 4u);
  EXPECT_TRUE(h.shared->requests[0].headers.empty());

  Harness tcp("http://127.0.0.1:1", TokenSource());
  auto refused = tcp.client->GetNodes();
  EXPECT_EQ(refused.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(refused.status().message().find("needs a JWT"), std::string::npos);
  EXPECT_TRUE(tcp.shared->requests.empty());
}

TEST(RestClientTest, IncrementalJobListing) {
  Harness h;
  h.Push(ScriptedTransport::Answer(304, ""));
  h.Push(ScriptedTransport::Answer(200, ReadTestFile("jobs.json")));
  auto unchanged = h.client->GetJobs(1795624553);
  ASSERT_TRUE(unchanged.ok()) << unchanged.status().message();
  EXPECT_FALSE(unchanged->has_value());
  EXPECT_EQ(h.shared->requests[0].target, "/slurm/v0.0.38/jobs?update_time=1795624553");
  auto all = h.client->GetJobs();
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_TRUE(all->has_value());
  EXPECT_EQ((*all)->size(), 10u);
  EXPECT_EQ(h.shared->requests[1].target, "/slurm/v0.0.38/jobs");
}

TEST(RestClientTest, RetriesOutagesWithBackoffAndGivesUp) {
  Harness h;
  h.Push(ScriptedTransport::Refused());
  h.Push(ScriptedTransport::Answer(503, ""));
  h.Push(ScriptedTransport::Answer(200, ReadTestFile("partitions.json")));
  auto partitions = h.client->GetPartitions();
  ASSERT_TRUE(partitions.ok()) << partitions.status().message();
  EXPECT_EQ(h.shared->requests.size(), 3u);
  EXPECT_EQ(h.waits, (std::vector<std::chrono::milliseconds>{std::chrono::milliseconds(100),
                                                             std::chrono::milliseconds(200)}));

  Harness down;
  for (int i = 0; i < 3; ++i) down.Push(ScriptedTransport::Refused());
  auto failed = down.client->GetNodes();
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.status().message().find("gave up after 3 attempts"), std::string::npos)
      << failed.status().message();
  EXPECT_EQ(down.shared->requests.size(), 3u);
}

TEST(RestClientTest, ControllerOutageIsRetriedOtherErrorsAreNot) {
  // slurmrestd's answer when slurmctld is down: HTTP 500 with a communication error (1000s).
  const std::string outage = R"json({"errors": [{"error_number": 1001,
      "error": "Unable to contact slurm controller (connect failure)"}]})json";
  Harness h;
  h.Push(ScriptedTransport::Answer(500, outage));
  h.Push(ScriptedTransport::Answer(200, ReadTestFile("partitions.json")));
  auto partitions = h.client->GetPartitions();
  ASSERT_TRUE(partitions.ok()) << partitions.status().message();
  EXPECT_EQ((*partitions)->size(), 1u);
  EXPECT_EQ(h.shared->requests.size(), 2u);
  // slurmrestd 22.05's answer to a listing while slurmctld is down.
  const std::string unspecified =
      R"json({"errors": [{"description": "Failed while looking for jobs",
      "error_number": -1, "error": "Unspecified error", "source": "slurm_load_jobs"}]})json";
  Harness down;
  for (int i = 0; i < 3; ++i) down.Push(ScriptedTransport::Answer(500, unspecified));
  auto jobs = down.client->GetJobs();
  EXPECT_EQ(jobs.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(jobs.status().message().find("Failed while looking for jobs"), std::string::npos);
  EXPECT_EQ(down.shared->requests.size(), 3u);
  Harness rejected;
  rejected.Push(ScriptedTransport::Answer(500, ReadTestFile("submit_unknown_key.json")));
  auto submitted = rejected.client->SubmitJob(JobSubmission{.name = "x"});
  EXPECT_EQ(submitted.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(submitted.status().message().find("Unknown key \"tres_per_node\""), std::string::npos)
      << submitted.status().message();
  EXPECT_EQ(rejected.shared->requests.size(), 1u);
}

TEST(RestClientTest, SubmissionIsNotRetriedOnceSent) {
  Harness h;
  h.Push(ScriptedTransport::LostAfterSending());
  auto lost = h.client->SubmitJob(JobSubmission{.name = "wf/g/t/0"});
  EXPECT_EQ(lost.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(lost.status().message().find("may have reached slurmctld; not retried"),
            std::string::npos);
  EXPECT_EQ(h.shared->requests.size(), 1u);

  // Refused before sending: safe to retry.
  Harness retried;
  retried.Push(ScriptedTransport::Refused());
  retried.Push(ScriptedTransport::Answer(200, ReadTestFile("submit.json")));
  auto id = retried.client->SubmitJob(JobSubmission{.name = "wf/g/t/0"});
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_EQ(*id, 9);
  EXPECT_EQ(retried.shared->requests.size(), 2u);
  Json body = Json::parse(retried.shared->requests[1].body);
  EXPECT_EQ(body["job"]["name"], "wf/g/t/0");
  EXPECT_EQ(body["job"]["no_requeue"], true);
}

TEST(RestClientTest, UnauthorizedNamesTheUser) {
  Harness h;
  h.Push(ScriptedTransport::Answer(401, ""));
  auto nodes = h.client->GetNodes();
  EXPECT_EQ(nodes.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(nodes.status().message().find("scontrol token username=nobody"), std::string::npos)
      << nodes.status().message();
  EXPECT_EQ(h.shared->requests.size(), 1u);
}

TEST(RestClientTest, UnknownJobs) {
  Harness h;
  h.Push(ScriptedTransport::Answer(500, ReadTestFile("delete_unknown_job.json")));
  h.Push(ScriptedTransport::Answer(500, ReadTestFile("delete_unknown_job.json")));
  h.Push(ScriptedTransport::Answer(200, ReadTestFile("job_running.json")));
  EXPECT_TRUE(h.client->CancelJob(999).ok());  // nothing left to cancel
  auto missing = h.client->GetJob(999);
  ASSERT_TRUE(missing.ok()) << missing.status().message();
  EXPECT_FALSE(missing->has_value());
  auto running = h.client->GetJob(9);
  ASSERT_TRUE(running.ok()) << running.status().message();
  ASSERT_TRUE(running->has_value());
  EXPECT_EQ((*running)->name, "wf2/g/train/0");
  EXPECT_EQ(h.shared->requests[0].method, "DELETE");
  EXPECT_EQ(h.shared->requests[0].target, "/slurm/v0.0.38/job/999");
}

TEST(RestClientTest, CheckVersion) {
  Harness ok;
  ok.Push(ScriptedTransport::Answer(200, ReadTestFile("openapi_paths.json")));
  ok.Push(ScriptedTransport::Answer(200, ReadTestFile("ping.json")));
  auto release = ok.client->CheckVersion();
  ASSERT_TRUE(release.ok()) << release.status().message();
  EXPECT_EQ(*release, "22.05.8");
  EXPECT_EQ(ok.shared->requests[0].target, "/openapi");
  EXPECT_EQ(ok.shared->requests[1].target, "/slurm/v0.0.38/ping");

  // A newer slurmrestd: /openapi is gone, /openapi/v3 lists only newer versions.
  Json newer = {{"paths",
                 {{"/slurm/v0.0.40/jobs", Json::object()},
                  {"/slurm/v0.0.41/jobs", Json::object()},
                  {"/slurmdb/v0.0.41/jobs", Json::object()}}}};
  Harness old;
  old.Push(ScriptedTransport::Answer(404, "{}"));
  old.Push(ScriptedTransport::Answer(200, newer.dump()));
  auto refused = old.client->CheckVersion();
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("offers OpenAPI v0.0.40, v0.0.41; gpupool speaks "
                                            "v0.0.38 (Slurm 22.05)"),
            std::string::npos)
      << refused.status().message();
  EXPECT_EQ(old.shared->requests[1].target, "/openapi/v3");
}

TEST(RestClientTest, OfferedVersions) {
  EXPECT_EQ(OfferedVersions(ReadTestJson("openapi_paths.json")),
            (std::vector<std::string>{"v0.0.36", "v0.0.37", "v0.0.38"}));
  EXPECT_TRUE(OfferedVersions(Json::object()).empty());
}

TEST(RestClientTest, TokenFileIsReadAndReReadWhenItChanges) {
  auto dir = std::filesystem::temp_directory_path() /
             ("gpupool_slurm_token_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "jwt").string();
  std::ofstream(path) << "SLURM_JWT=first\n";
  TokenSource source = TokenSource::File(path);
  EXPECT_EQ(source.Describe(), "file " + path);
  auto first = source.Token();
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(*first, "first");
  std::ofstream(path) << "second";
  // A different modification time than the first write (file systems with coarse timestamps).
  std::filesystem::last_write_time(
      path, std::filesystem::last_write_time(path) + std::chrono::seconds(2));
  auto second = source.Token();
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(*second, "second");
  std::ofstream(path) << "two words";
  std::filesystem::last_write_time(
      path, std::filesystem::last_write_time(path) + std::chrono::seconds(2));
  EXPECT_EQ(source.Token().status().code(), StatusCode::kInvalidArgument);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(source.Token().status().code(), StatusCode::kNotFound);
  EXPECT_EQ(TokenSource::Fixed("x").Describe(), "$SLURM_JWT");
}

}  // namespace rest_client_test
}  // namespace gpupool::slurm
