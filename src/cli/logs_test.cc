// `gpupool workflow logs` (cli/logs.h) against a fake of the server's log routes on loopback:
// what it prints (headers, chunks, attempts), how it follows (each piece once, a wait only when
// nothing moved, the end once every task has ended), its errors, and the command line around it.
#include "cli/logs.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "api/http_server.h"
#include "cli/app.h"
#include "client/client.h"

namespace gpupool::cli {
namespace logs_test {

using Json = nlohmann::ordered_json;

// One task as the fake server holds it: what each attempt wrote so far (by retry; the last is
// the latest) and whether the latest attempt has ended.
struct FakeTask {
  std::string group;
  std::string name;
  std::vector<std::string> attempts;
  bool ended = false;
};

struct FakeWorkflow {
  std::vector<FakeTask> tasks;
  std::optional<Status> logs_error;  // every log request answers this (e.g. no output kept)
};

// What happens on the server while the command waits between two polls.
struct Step {
  std::string task;  // GROUP/NAME
  std::string append;
  bool end = false;
  std::optional<Status> fail;  // later log requests answer this
};

// GET /api/workflow/{id} and GET /api/workflow/{id}/logs as api/log_routes.h describes them,
// over workflows held in memory, answering at most `chunk_bytes` per chunk. Records every log
// request as "task=T retry=R offset=O", and every wait as "wait".
class FakeLogServer {
 public:
  FakeLogServer(std::map<std::string, FakeWorkflow> workflows, std::vector<Step> steps,
                int64_t chunk_bytes)
      : workflows_(std::move(workflows)), steps_(std::move(steps)), chunk_bytes_(chunk_bytes) {
    const api::RouteOptions open{.requires_auth = false};
    api::Router router;
    router.Add(
        "GET", "/api/workflow/{id}",
        [this](const api::RouteRequest& r) { return Workflow(r.Param("id")); }, open);
    router.Add(
        "GET", "/api/workflow/{id}/logs", [this](const api::RouteRequest& r) { return Chunk(r); },
        open);
    http_ = std::make_unique<api::HttpServer>(std::move(router), nullptr, api::AccessChecker(),
                                              api::AuditHook(), registry_,
                                              api::ServerOptions{.threads = 1, .io_threads = 1});
    auto port = http_->Bind("127.0.0.1", 0);
    if (!port.ok()) throw std::runtime_error(port.status().ToString());
    url_ = "http://127.0.0.1:" + std::to_string(*port);
    thread_ = std::thread([this] { http_->Serve(); });
    for (int i = 0; i < 200 && !http_->IsRunning(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~FakeLogServer() {
    http_->Stop();
    thread_.join();
  }
  const std::string& Url() const { return url_; }

  // The time between two polls: the next step happens. Past the last step, log requests fail,
  // so that a command that would poll for ever returns (and the test fails) instead.
  void Advance() {
    std::lock_guard lock(mu_);
    if (next_step_ == steps_.size()) {
      fail_ = InternalError("polled again after the last change");
      return;
    }
    requests_.push_back("wait");
    const Step& step = steps_[next_step_++];
    if (step.fail) fail_ = step.fail;
    for (auto& [id, workflow] : workflows_) {
      for (FakeTask& task : workflow.tasks) {
        if (task.group + "/" + task.name != step.task) continue;
        task.attempts.back() += step.append;
        task.ended |= step.end;
      }
    }
  }
  std::vector<std::string> Requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  Result<api::Reply> Workflow(const std::string& id) {
    std::lock_guard lock(mu_);
    auto it = workflows_.find(id);
    if (it == workflows_.end()) return NotFoundError("workflow " + id + " not found");
    Json tasks = Json::array();
    for (const FakeTask& task : it->second.tasks) {
      tasks.push_back({{"group", task.group}, {"name", task.name}});
    }
    return api::Reply::Json({{"id", id}, {"tasks", tasks}});
  }

  Result<api::Reply> Chunk(const api::RouteRequest& r) {
    std::lock_guard lock(mu_);
    const std::string name = r.Query("task").value_or("");
    const std::string retry = r.Query("retry").value_or("");
    const int64_t offset = std::stoll(r.Query("offset").value_or("0"));
    requests_.push_back("task=" + name + " retry=" + retry + " offset=" + std::to_string(offset));
    if (fail_) return *fail_;
    auto it = workflows_.find(r.Param("id"));
    if (it == workflows_.end()) return NotFoundError("workflow " + r.Param("id") + " not found");
    if (it->second.logs_error) return *it->second.logs_error;
    const FakeTask* task = nullptr;
    for (const FakeTask& t : it->second.tasks) {
      if (name == t.name || name == t.group + "/" + t.name ||
          (name.empty() && it->second.tasks.size() == 1)) {
        task = &t;
      }
    }
    if (task == nullptr) return NotFoundError("no task \"" + name + "\" in " + r.Param("id"));
    const size_t attempt = retry.empty() ? task->attempts.size() - 1 : std::stoul(retry);
    if (attempt >= task->attempts.size()) return NotFoundError("no attempt " + retry);
    const std::string& output = task->attempts[attempt];
    const std::string text = offset < static_cast<int64_t>(output.size())
                                 ? output.substr(offset, chunk_bytes_)
                                 : std::string();
    const int64_t next = offset + static_cast<int64_t>(text.size());
    const int64_t size = static_cast<int64_t>(output.size());
    const bool ended = attempt + 1 < task->attempts.size() || task->ended;
    return api::Reply::Json({{"offset", offset},
                             {"next_offset", next},
                             {"size", size},
                             {"complete", ended && next >= size},
                             {"text", text}});
  }

  mutable std::mutex mu_;
  std::map<std::string, FakeWorkflow> workflows_;
  std::vector<Step> steps_;
  size_t next_step_ = 0;
  std::optional<Status> fail_;
  std::vector<std::string> requests_;
  const int64_t chunk_bytes_;
  metrics::Registry registry_;
  std::unique_ptr<api::HttpServer> http_;
  std::thread thread_;
  std::string url_;
};

struct Printed {
  Status status;
  std::string out;
  std::vector<int64_t> waits;  // the poll interval of each wait
};

// PrintWorkflowLogs with a `wait` that lets the fake's next step happen instead of sleeping.
Printed Print(FakeLogServer& fake, const LogsOptions& options) {
  client::Client client(fake.Url(), "");
  std::ostringstream out;
  Printed printed;
  printed.status = PrintWorkflowLogs(client, options, out, [&](int64_t ms) {
    printed.waits.push_back(ms);
    fake.Advance();
  });
  printed.out = out.str();
  return printed;
}

LogsOptions LogsFor(std::string task = "", std::optional<int> retry = {}, bool follow = false) {
  LogsOptions options;
  options.workflow = "wf-1";
  options.task = std::move(task);
  options.retry = retry;
  options.follow = follow;
  options.poll_ms = 250;
  return options;
}

FakeTask Running(std::string group, std::string name, std::string output) {
  return {std::move(group), std::move(name), {std::move(output)}, false};
}
FakeTask Ended(std::string group, std::string name, std::string output) {
  return {std::move(group), std::move(name), {std::move(output)}, true};
}

TEST(PrintWorkflowLogs, PrintsWhatTheTasksHaveWritten) {
  struct Case {
    const char* name;
    std::vector<FakeTask> tasks;
    LogsOptions options;
    int64_t chunk_bytes;
    std::string out;
    std::vector<std::string> requests;
  };
  const FakeTask retried{"train", "main", {"first\n", "second\n"}, true};
  const std::vector<Case> cases = {
      {"a task named: its output as written, no header",
       {Ended("train", "main", "epoch 1\nepoch 2\n"), Ended("eval", "score", "0.9\n")},
       LogsFor("main"),
       64,
       "epoch 1\nepoch 2\n",
       {"task=main retry= offset=0"}},
      {"the workflow's only task, none named: no header",
       {Ended("train", "main", "epoch 1\n")},
       LogsFor(),
       64,
       "epoch 1\n",
       {"task=main retry= offset=0"}},
      {"every task: each under its header, a blank line between",
       {Ended("train", "main", "a\n"), Ended("eval", "score", "b\n")},
       LogsFor(),
       64,
       "==> main <==\na\n\n==> score <==\nb\n",
       {"task=main retry= offset=0", "task=score retry= offset=0"}},
      {"a name in two groups: asked for and headed GROUP/NAME",
       {Ended("train", "side", "x\n"), Ended("eval", "side", "y\n"), Ended("eval", "m", "z\n")},
       LogsFor(),
       64,
       "==> train/side <==\nx\n\n==> eval/side <==\ny\n\n==> m <==\nz\n",
       {"task=train/side retry= offset=0", "task=eval/side retry= offset=0",
        "task=m retry= offset=0"}},
      {"longer than a chunk: read chunk by chunk, printed once",
       {Ended("train", "main", "0123456789\n")},
       LogsFor(),
       4,
       "0123456789\n",
       {"task=main retry= offset=0", "task=main retry= offset=4", "task=main retry= offset=8"}},
      {"a task that has written nothing: no header for it",
       {Ended("train", "main", "a\n"), Running("eval", "later", "")},
       LogsFor(),
       64,
       "==> main <==\na\n",
       {"task=main retry= offset=0", "task=later retry= offset=0"}},
      {"without --follow: what there is now, though the task runs on",
       {Running("train", "main", "so far\n")},
       LogsFor(),
       64,
       "so far\n",
       {"task=main retry= offset=0"}},
      {"without --retry: the latest attempt",
       {retried},
       LogsFor(),
       64,
       "second\n",
       {"task=main retry= offset=0"}},
      {"--retry 0: the first attempt",
       {retried},
       LogsFor("main", 0),
       64,
       "first\n",
       {"task=main retry=0 offset=0"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    FakeLogServer fake({{"wf-1", {c.tasks}}}, {}, c.chunk_bytes);
    Printed printed = Print(fake, c.options);
    ASSERT_TRUE(printed.status.ok()) << printed.status.ToString();
    EXPECT_EQ(printed.out, c.out);
    EXPECT_EQ(fake.Requests(), c.requests);
    EXPECT_TRUE(printed.waits.empty());
  }
}

TEST(PrintWorkflowLogs, FollowsUntilEveryTaskHasEndedWaitingOnlyWhenNothingMoved) {
  struct Case {
    const char* name;
    std::vector<FakeTask> tasks;
    std::vector<Step> steps;  // one per wait
    int64_t chunk_bytes;
    std::string out;
  };
  const std::vector<Case> cases = {
      {"one task: each piece once, in order",
       {Running("train", "main", "a\n")},
       {{"train/main", "b\n"}, {"train/main", "c\n", true}},
       64,
       "a\nb\nc\n"},
      {"a task not started yet, then writing, then ended",
       {Running("train", "main", "")},
       {{"train/main", ""}, {"train/main", "up\n"}, {"train/main", "", true}},
       64,
       "up\n"},
      {"two tasks taking turns: the header again at each switch",
       {Running("train", "a", "1\n"), Running("train", "b", "")},
       {{"train/b", "x\n"}, {"train/a", "2\n", true}, {"train/b", "", true}},
       64,
       "==> a <==\n1\n\n==> b <==\nx\n\n==> a <==\n2\n"},
      {"everything has ended already: no wait",
       {Ended("train", "main", "done\n")},
       {},
       64,
       "done\n"},
      {"more than a chunk arrived during a wait: all of it before the next wait",
       {Running("train", "main", "")},
       {{"train/main", "0123456789\n", true}},
       4,
       "0123456789\n"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    FakeLogServer fake({{"wf-1", {c.tasks}}}, c.steps, c.chunk_bytes);
    Printed printed = Print(fake, LogsFor("", {}, /*follow=*/true));
    ASSERT_TRUE(printed.status.ok()) << printed.status.ToString();
    EXPECT_EQ(printed.out, c.out);
    // One wait per step: each step's output is read before the next wait, and the command ends
    // as soon as the last step has ended every task.
    EXPECT_EQ(printed.waits, std::vector<int64_t>(c.steps.size(), 250));
  }
}

// A poll that read something is followed by another at once (more may have come meanwhile); only
// a poll that found nothing new waits.
TEST(PrintWorkflowLogs, FollowingAsksAgainAtOnceAfterOutputAndWaitsAfterNothing) {
  FakeLogServer fake({{"wf-1", {{Running("train", "main", "a\n")}}}},
                     {{"train/main", "b\n"}, {"train/main", "", true}}, 64);
  Printed printed = Print(fake, LogsFor("main", {}, /*follow=*/true));
  ASSERT_TRUE(printed.status.ok()) << printed.status.ToString();
  EXPECT_EQ(printed.out, "a\nb\n");
  EXPECT_EQ(fake.Requests(), (std::vector<std::string>{
                                 "task=main retry= offset=0", "task=main retry= offset=2", "wait",
                                 "task=main retry= offset=2", "task=main retry= offset=4", "wait",
                                 "task=main retry= offset=4"}));
}

TEST(PrintWorkflowLogs, ErrorsComeBackWithWhatWasPrintedBeforeThem) {
  struct Case {
    const char* name;
    std::string workflow;
    LogsOptions options;
    std::vector<Step> steps;
    StatusCode code;
    std::string message;
    std::string out;
  };
  const std::vector<Case> cases = {
      {"an unknown workflow",
       "wf-gone",
       LogsFor(),
       {},
       StatusCode::kNotFound,
       "workflow wf-gone not found",
       ""},
      {"a workflow without tasks",
       "wf-empty",
       LogsFor(),
       {},
       StatusCode::kNotFound,
       "workflow wf-empty has no tasks",
       ""},
      {"an unknown task",
       "wf-1",
       LogsFor("nope"),
       {},
       StatusCode::kNotFound,
       "no task \"nope\" in wf-1",
       ""},
      {"an attempt that never was",
       "wf-1",
       LogsFor("main", 3),
       {},
       StatusCode::kNotFound,
       "no attempt 3",
       ""},
      {"a backend that keeps no output (409)",
       "wf-sim",
       LogsFor(),
       {},
       StatusCode::kFailedPrecondition,
       "the simulated cluster keeps no task output",
       ""},
      {"the server fails while the command follows",
       "wf-1",
       LogsFor("", {}, /*follow=*/true),
       {{"train/main", "lost\n", false, UnavailableError("shutting down")}},
       StatusCode::kUnavailable,
       "shutting down",
       "a\n"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    LogsOptions options = c.options;
    options.workflow = c.workflow;
    FakeLogServer fake({{"wf-1", {{Running("train", "main", "a\n")}}},
                        {"wf-empty", {}},
                        {"wf-sim",
                         {{Ended("train", "main", "")},
                          FailedPreconditionError("the simulated cluster keeps no task output")}}},
                       c.steps, 64);
    Printed printed = Print(fake, options);
    EXPECT_EQ(printed.status.code(), c.code) << printed.status.ToString();
    EXPECT_EQ(printed.status.message(), c.message);
    EXPECT_EQ(printed.out, c.out);
  }
}

// Nothing listens on the port (bound, never listening: connections are refused).
TEST(PrintWorkflowLogs, NoServerIsUnavailableNamingItsUrl) {
  const int socket_fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(socket_fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::bind(socket_fd, reinterpret_cast<sockaddr*>(&address), length), 0);
  ASSERT_EQ(::getsockname(socket_fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  client::Client client(url, "");
  std::ostringstream out;
  Status status = PrintWorkflowLogs(client, LogsFor(), out, [](int64_t) {});
  ::close(socket_fd);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_NE(status.message().find(url), std::string::npos) << status.message();
  EXPECT_EQ(out.str(), "");
}

// `gpupool [--server URL] workflow logs ...` run in process, its stdout and stderr captured.
struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

CliRun RunGpupool(std::vector<std::string> args) {
  args.insert(args.begin(), "gpupool");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  std::ostringstream out, err;
  std::streambuf* cout = std::cout.rdbuf(out.rdbuf());
  std::streambuf* cerr = std::cerr.rdbuf(err.rdbuf());
  CliRun run;
  run.code = RunCli(static_cast<int>(argv.size()), argv.data());
  std::cout.rdbuf(cout);
  std::cerr.rdbuf(cerr);
  run.out = out.str();
  run.err = err.str();
  return run;
}

TEST(WorkflowLogsCommand, FlagsOutputAndExitCodes) {
  ::unsetenv("GPUPOOL_TOKEN");
  FakeLogServer fake({{"wf-1",
                       {{FakeTask{"train", "main", {"first\n", "second\n"}, true},
                         Ended("eval", "score", "b\n")}}}},
                     {}, 64);
  const std::string& url = fake.Url();
  struct Case {
    const char* name;
    std::vector<std::string> args;
    int code;
    std::string out;
    std::string err;  // the start of stderr
  };
  const std::vector<Case> cases = {
      {"without --server: a usage error saying where the output is",
       {"workflow", "logs", "wf-1"},
       2,
       "",
       "error: workflow logs reads task output from the backend that ran the task: pass --server "
       "URL of a gpupool server\n"},
      {"a task by name", {"--server", url, "workflow", "logs", "wf-1", "main"}, 0, "second\n", ""},
      {"every task, followed to their end",
       {"--server", url, "workflow", "logs", "wf-1", "-f"},
       0,
       "==> main <==\nsecond\n\n==> score <==\nb\n",
       ""},
      {"--retry 0",
       {"--server", url, "workflow", "logs", "wf-1", "main", "--retry", "0"},
       0,
       "first\n",
       ""},
      {"a negative --retry is refused, not read as the latest",
       {"--server", url, "workflow", "logs", "wf-1", "main", "--retry", "-1"},
       2,
       "",
       "--retry: Value -1 not in range"},
      {"an unknown workflow: the server's message, exit 1",
       {"--server", url, "workflow", "logs", "wf-gone"},
       1,
       "",
       "error: workflow wf-gone not found\n"},
      {"no workflow named", {"--server", url, "workflow", "logs"}, 2, "", "WORKFLOW is required"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CliRun run = RunGpupool(c.args);
    EXPECT_EQ(run.code, c.code) << run.err;
    EXPECT_EQ(run.out, c.out);
    EXPECT_TRUE(run.err.starts_with(c.err)) << run.err;
  }
}

}  // namespace logs_test
}  // namespace gpupool::cli
