#include "controller/task_lifecycle.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpupool::controller {
namespace task_lifecycle_test {

// A pending task's message: the cycle's reason, with why it was evicted kept while it waits.
TEST(PendingMessageTest, KeepsWhyARequeuedTaskWasEvicted) {
  struct Case {
    const char* what;
    std::string current;
    std::string want;
  };
  const std::string reason = "0/1 nodes are available: 1 Insufficient cpu.";
  const std::vector<Case> cases = {
      {"never evicted", "", reason},
      {"an older reason", "0/1 nodes are available: 1 Too many pods.", reason},
      {"evicted last step", "evicted (reclaim): reclaimed by queue a for pod p",
       reason + "; earlier: evicted (reclaim): reclaimed by queue a for pod p"},
      {"kept by an earlier cycle",
       "0/1 nodes are available: 1 Too many pods.; earlier: evicted (preempt): for q",
       reason + "; earlier: evicted (preempt): for q"},
      {"unchanged", reason + "; earlier: evicted by the cluster",
       reason + "; earlier: evicted by the cluster"},
      {"a message that only mentions an eviction", "pod was not evicted (yet)", reason},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PendingMessage(reason, c.current), c.want) << c.what;
  }
}

}  // namespace task_lifecycle_test
}  // namespace gpupool::controller
