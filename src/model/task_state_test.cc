#include "model/task_state.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpupool::model {
namespace task_state_test {

// The stored and API spelling of every status: rows and JSON written before stay readable.
TEST(TaskStateTest, TaskStatusesRoundTripWithTheirWireSpelling) {
  struct Case {
    TaskStatus status;
    std::string text;
  };
  const std::vector<Case> cases = {
      {TaskStatus::kWaiting, "WAITING"},
      {TaskStatus::kPending, "PENDING"},
      {TaskStatus::kScheduled, "SCHEDULED"},
      {TaskStatus::kRunning, "RUNNING"},
      {TaskStatus::kCompleted, "COMPLETED"},
      {TaskStatus::kFailed, "FAILED"},
      {TaskStatus::kFailedQueueTimeout, "FAILED_QUEUE_TIMEOUT"},
      {TaskStatus::kFailedExecTimeout, "FAILED_EXEC_TIMEOUT"},
      {TaskStatus::kCanceled, "CANCELED"},
      {TaskStatus::kRescheduled, "RESCHEDULED"},
  };
  ASSERT_EQ(cases.size(), AllTaskStatuses().size());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(ToString(c.status), c.text);
    auto parsed = ParseTaskStatus(c.text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(*parsed, c.status);
    EXPECT_TRUE(c.text == c.status);
  }
}

TEST(TaskStateTest, WorkflowStatusesRoundTripWithTheirWireSpelling) {
  struct Case {
    WorkflowStatus status;
    std::string text;
  };
  const std::vector<Case> cases = {
      {WorkflowStatus::kPending, "PENDING"},
      {WorkflowStatus::kScheduled, "SCHEDULED"},
      {WorkflowStatus::kRunning, "RUNNING"},
      {WorkflowStatus::kCompleted, "COMPLETED"},
      {WorkflowStatus::kFailed, "FAILED"},
      {WorkflowStatus::kFailedQueueTimeout, "FAILED_QUEUE_TIMEOUT"},
      {WorkflowStatus::kFailedExecTimeout, "FAILED_EXEC_TIMEOUT"},
      {WorkflowStatus::kCanceled, "CANCELED"},
  };
  ASSERT_EQ(cases.size(), AllWorkflowStatuses().size());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(ToString(c.status), c.text);
    auto parsed = ParseWorkflowStatus(c.text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    EXPECT_EQ(*parsed, c.status);
  }
}

TEST(TaskStateTest, UnknownStatusesAreRefused) {
  struct Case {
    std::string name;
    std::string text;
    bool workflow;  // parse as a workflow status, else as a task status
    std::string message;
  };
  const std::vector<Case> cases = {
      {"lower case", "running", false,
       "unknown task status \"running\" (did you mean \"RUNNING\"?)"},
      {"empty", "", false, "unknown task status \"\""},
      {"British spelling", "CANCELLED", false, "(did you mean \"CANCELED\"?)"},
      {"another failure reason", "FAILED_CANCELED", false, "unknown task status"},
      {"OSMO's INITIALIZING", "INITIALIZING", false, "expected one of WAITING, PENDING"},
      {"a workflow never waits", "WAITING", true, "unknown workflow status \"WAITING\""},
      {"nor is rescheduled", "RESCHEDULED", true, "unknown workflow status \"RESCHEDULED\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Status status =
        c.workflow ? ParseWorkflowStatus(c.text).status() : ParseTaskStatus(c.text).status();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find(c.message), std::string::npos) << status.message();
    EXPECT_EQ(
        c.workflow ? FindWorkflowStatus(c.text).has_value() : FindTaskStatus(c.text).has_value(),
        false);
  }
}

TEST(TaskStateTest, Predicates) {
  struct Case {
    TaskStatus status;
    bool terminal, failure, bound, holds_place;
  };
  const std::vector<Case> cases = {
      {TaskStatus::kWaiting, false, false, false, false},
      {TaskStatus::kPending, false, false, false, true},
      {TaskStatus::kScheduled, false, false, true, true},
      {TaskStatus::kRunning, false, false, true, true},
      {TaskStatus::kCompleted, true, false, false, false},
      {TaskStatus::kFailed, true, true, false, false},
      {TaskStatus::kFailedQueueTimeout, true, true, false, false},
      {TaskStatus::kFailedExecTimeout, true, true, false, false},
      {TaskStatus::kCanceled, true, false, false, false},
      {TaskStatus::kRescheduled, true, false, false, false},
  };
  ASSERT_EQ(cases.size(), AllTaskStatuses().size());
  for (const Case& c : cases) {
    const std::string_view text = ToString(c.status);
    SCOPED_TRACE(text);
    EXPECT_EQ(IsTerminal(c.status), c.terminal);
    EXPECT_EQ(IsTerminalTaskText(text), c.terminal);
    EXPECT_EQ(IsFailure(c.status), c.failure);
    EXPECT_EQ(IsFailureText(text), c.failure);
    EXPECT_EQ(IsBound(c.status), c.bound);
    EXPECT_EQ(IsBoundTaskText(text), c.bound);
    EXPECT_EQ(HoldsPlace(c.status), c.holds_place);
    EXPECT_EQ(HoldsPlaceText(text), c.holds_place);
    if (c.failure) {
      EXPECT_EQ(ToString(WorkflowFailure(c.status)), text);
    }
  }
  for (std::string_view unknown : {"", "running", "INITIALIZING"}) {
    SCOPED_TRACE(unknown);
    EXPECT_FALSE(IsTerminalTaskText(unknown));
    EXPECT_FALSE(IsBoundTaskText(unknown));
    EXPECT_FALSE(HoldsPlaceText(unknown));
    EXPECT_FALSE(IsFailureText(unknown));
  }
}

TEST(TaskStateTest, FinishedWorkflowTexts) {
  struct Case {
    std::string text;
    bool finished;
  };
  const std::vector<Case> cases = {
      {"PENDING", false},   {"SCHEDULED", false},          {"RUNNING", false},
      {"WAITING", false},   {"COMPLETED", true},           {"FAILED", true},
      {"CANCELED", true},   {"FAILED_EXEC_TIMEOUT", true}, {"FAILED_QUEUE_TIMEOUT", true},
      {"CANCELLED", true},  {"FAILED_CANCELED", true},     {"", false},
      {"completed", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(IsFinishedWorkflowText(c.text), c.finished);
  }
  for (WorkflowStatus status : AllWorkflowStatuses()) {
    SCOPED_TRACE(ToString(status));
    EXPECT_EQ(IsFinishedWorkflowText(ToString(status)), IsTerminal(status));
  }
}

}  // namespace task_state_test
}  // namespace gpupool::model
