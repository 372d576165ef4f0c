#include "cli/logs.h"

#include <vector>

#include "client/client.h"

namespace gpupool::cli {
namespace {

using Json = nlohmann::ordered_json;

struct Followed {
  std::string task;  // as the route takes it: NAME, or GROUP/NAME when the name repeats
  int64_t offset = 0;
  bool complete = false;
};

// The workflow's tasks, named so the route finds each one.
Result<std::vector<Followed>> TasksOf(client::Client& client, const std::string& workflow) {
  ASSIGN_OR_RETURN(Json view, client.QueryWorkflow(workflow));
  std::vector<Followed> out;
  const Json& tasks = view["tasks"];
  for (const Json& task : tasks) {
    const std::string name = task.value("name", "");
    int same = 0;
    for (const Json& other : tasks) same += other.value("name", "") == name ? 1 : 0;
    out.push_back({same > 1 ? task.value("group", "") + "/" + name : name});
  }
  if (out.empty()) return NotFoundError("workflow " + workflow + " has no tasks");
  return out;
}

}  // namespace

Status PrintWorkflowLogs(client::Client& client, const LogsOptions& options, std::ostream& out,
                         const std::function<void(int64_t ms)>& wait) {
  std::vector<Followed> tasks;
  if (!options.task.empty()) {
    tasks.push_back({options.task});
  } else {
    ASSIGN_OR_RETURN(tasks, TasksOf(client, options.workflow));
  }
  const bool headers = tasks.size() > 1;
  const Followed* printed = nullptr;  // whose output was written last
  for (;;) {
    bool progressed = false;
    for (Followed& task : tasks) {
      // Everything this task has written so far, chunk by chunk.
      while (!task.complete) {
        ASSIGN_OR_RETURN(Json chunk,
                         client.TaskLog(options.workflow, task.task, options.retry, task.offset));
        const std::string text = chunk.value("text", "");
        const int64_t next = chunk.value("next_offset", task.offset);
        const bool moved = next > task.offset;
        task.offset = next;
        task.complete = chunk.value("complete", false);
        if (!text.empty()) {
          if (headers && printed != &task) {
            out << (printed == nullptr ? "" : "\n") << "==> " << task.task << " <==\n";
          }
          printed = &task;
          out << text;
          out.flush();
        }
        progressed |= moved;
        if (!moved || next >= chunk.value("size", int64_t{0})) break;
      }
    }
    if (!options.follow) return OkStatus();
    bool all_complete = true;
    for (const Followed& task : tasks) all_complete &= task.complete;
    if (all_complete) return OkStatus();
    if (!progressed) wait(options.poll_ms);
  }
}

}  // namespace gpupool::cli
