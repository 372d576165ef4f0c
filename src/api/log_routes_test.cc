#include "api/log_routes.h"

#include <gtest/gtest.h>

#include <map>

#include "backend/sim/sim_backend.h"

namespace gpupool::api {
namespace log_routes_test {

using Json = nlohmann::ordered_json;

// Output by attempt key, as a backend that ran the tasks would have it.
class OutputBackend final : public backend::Backend {
 public:
  std::map<std::string, std::string, std::less<>> output;
  std::string_view Kind() const override { return "test"; }
  Result<std::vector<Json>> ListNodes() const override { return std::vector<Json>{}; }
  Status Launch(const backend::TaskLaunch&) override { return OkStatus(); }
  Status Kill(std::string_view) override { return OkStatus(); }
  std::vector<backend::TaskExit> Poll(int64_t) override { return {}; }
  size_t RunningCount() const override { return 0; }
  Result<backend::LogChunk> ReadLog(std::string_view key, int64_t offset,
                                    int64_t max_bytes) const override {
    auto it = output.find(key);
    if (it == output.end()) return NotFoundError("no output");
    backend::LogChunk chunk;
    chunk.offset = offset;
    chunk.size = static_cast<int64_t>(it->second.size());
    if (offset < chunk.size) chunk.data = it->second.substr(offset, max_bytes);
    return chunk;
  }
};

store::TaskRecord Task(std::string group, std::string name, std::string status, int retry = 0) {
  store::TaskRecord task;
  task.group = std::move(group);
  task.name = std::move(name);
  task.status = std::move(status);
  task.retry = retry;
  return task;
}

store::WorkflowRecord Workflow() {
  store::WorkflowRecord workflow;
  workflow.id = "wf-1";
  workflow.tasks = {Task("train", "main", "RUNNING"), Task("train", "side", "COMPLETED"),
                    Task("eval", "side", "FAILED", 1), Task("eval", "late", "PENDING")};
  return workflow;
}

OutputBackend Outputs() {
  OutputBackend backend;
  backend.output["wf-1/train/main/0"] = "epoch 1\nepoch 2\n";
  backend.output["wf-1/train/side/0"] = "done\n";
  backend.output["wf-1/eval/side/0"] = "first attempt\n";
  backend.output["wf-1/eval/side/1"] = "second attempt \xE2\x9C\x93\n";  // ends with U+2713
  return backend;
}

TEST(ReadTaskLog, ChunksOfTheAttemptsOutput) {
  const OutputBackend backend = Outputs();
  struct Case {
    const char* name;
    LogRequest request;
    std::string text;
    int64_t next_offset;
    bool complete;
    int retry;
  };
  const std::vector<Case> cases = {
      {"a running task: everything so far, not complete",
       {"main", {}, 0, 1024},
       "epoch 1\nepoch 2\n",
       16,
       false,
       0},
      {"from an offset", {"main", {}, 8, 1024}, "epoch 2\n", 16, false, 0},
      {"at the end of a running task: empty, not complete",
       {"main", {}, 16, 1024},
       "",
       16,
       false,
       0},
      {"a limit cuts the chunk", {"main", {}, 0, 5}, "epoch", 5, false, 0},
      {"an ended task read to its end is complete",
       {"train/side", {}, 0, 1024},
       "done\n",
       5,
       true,
       0},
      {"an ended task not yet read to its end is not", {"train/side", {}, 0, 2}, "do", 2, false, 0},
      {"the latest attempt by default",
       {"eval/side", {}, 0, 1024},
       "second attempt \u2713\n",
       19,
       true,
       1},
      {"an earlier attempt has ended", {"eval/side", 0, 0, 1024}, "first attempt\n", 14, true, 0},
      {"a sequence the limit would cut waits for the next chunk",
       {"eval/side", 1, 0, 16},
       "second attempt ",
       15,
       false,
       1},
      {"a pending task has no output yet", {"late", {}, 0, 1024}, "", 0, false, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto chunk = ReadTaskLog(Workflow(), c.request, &backend);
    ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
    EXPECT_EQ((*chunk)["text"], c.text);
    EXPECT_EQ((*chunk)["offset"], c.request.offset);
    EXPECT_EQ((*chunk)["next_offset"], c.next_offset);
    EXPECT_EQ((*chunk)["complete"], c.complete);
    EXPECT_EQ((*chunk)["retry"], c.retry);
  }
}

TEST(ReadTaskLog, RefusesWhatItCannotAnswer) {
  const OutputBackend backend = Outputs();
  const backend::SimBackend sim({});
  struct Case {
    const char* name;
    LogRequest request;
    const backend::Backend* backend;
    StatusCode code;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"no task named in a workflow of several",
       {"", {}, 0, 1024},
       &backend,
       StatusCode::kInvalidArgument,
       "has 4 tasks: name one with ?task= (main, side, side, late)"},
      {"a name in two groups",
       {"side", {}, 0, 1024},
       &backend,
       StatusCode::kInvalidArgument,
       "name it GROUP/NAME"},
      {"an unknown task",
       {"nope", {}, 0, 1024},
       &backend,
       StatusCode::kNotFound,
       "no task \"nope\""},
      {"an attempt that never was",
       {"main", 3, 0, 1024},
       &backend,
       StatusCode::kNotFound,
       "attempts 0 to 0, not 3"},
      {"a negative offset",
       {"main", {}, -1, 1024},
       &backend,
       StatusCode::kInvalidArgument,
       "offset"},
      {"a limit too large",
       {"main", {}, 0, kMaxLogChunkBytes + 1},
       &backend,
       StatusCode::kInvalidArgument,
       "limit"},
      {"no backend",
       {"main", {}, 0, 1024},
       nullptr,
       StatusCode::kFailedPrecondition,
       "runs no backend"},
      {"the simulated cluster keeps no output",
       {"main", {}, 0, 1024},
       &sim,
       StatusCode::kFailedPrecondition,
       "the sim backend keeps no task output"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto chunk = ReadTaskLog(Workflow(), c.request, c.backend);
    ASSERT_FALSE(chunk.ok());
    EXPECT_EQ(chunk.status().code(), c.code);
    EXPECT_NE(chunk.status().message().find(c.message), std::string::npos)
        << chunk.status().message();
  }
}

TEST(ReadTaskLog, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  OutputBackend backend;
  backend.output["wf-1/train/side/0"] = "bad \xFF byte\n";
  auto chunk = ReadTaskLog(Workflow(), {"train/side", {}, 0, 1024}, &backend);
  ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
  EXPECT_EQ((*chunk)["text"], "bad \uFFFD byte\n");
  EXPECT_EQ((*chunk)["next_offset"], 11);  // the 11 bytes read, not the text's length
  EXPECT_EQ((*chunk)["complete"], true);
}

TEST(ReadTaskLog, OneTaskNeedsNoName) {
  OutputBackend backend;
  backend.output["wf-2/g/only/0"] = "hello\n";
  store::WorkflowRecord workflow;
  workflow.id = "wf-2";
  workflow.tasks = {Task("g", "only", "RUNNING")};
  auto chunk = ReadTaskLog(workflow, {}, &backend);
  ASSERT_TRUE(chunk.ok()) << chunk.status().ToString();
  EXPECT_EQ((*chunk)["task"], "only");
  EXPECT_EQ((*chunk)["text"], "hello\n");
}

}  // namespace log_routes_test
}  // namespace gpupool::api
