#include "controller/task_lifecycle.h"

#include <cctype>
#include <charconv>
#include <limits>

#include "common/json_text.h"
#include "config/kinds.h"
#include "model/duration.h"

namespace gpupool::controller {

using Json = nlohmann::ordered_json;

// The task's entry in the stored spec (the `workflow:` document, or an object holding it).
const Json* FindTaskSpec(const Json& spec, const std::string& group, const std::string& task) {
  const Json* doc = &spec;
  if (doc->is_object() && doc->contains("workflow") && (*doc)["workflow"].is_object()) {
    doc = &(*doc)["workflow"];
  }
  if (!doc->is_object()) return nullptr;
  auto find_in = [&](const Json& tasks) -> const Json* {
    if (!tasks.is_array()) return nullptr;
    for (const auto& t : tasks) {
      if (t.is_object() && t.value("name", "") == task) return &t;
    }
    return nullptr;
  };
  if (doc->contains("groups") && (*doc)["groups"].is_array()) {
    for (const auto& g : (*doc)["groups"]) {
      if (g.is_object() && g.value("name", "") == group && g.contains("tasks")) {
        if (const Json* t = find_in(g["tasks"])) return t;
      }
    }
  }
  if (doc->contains("tasks")) return find_in((*doc)["tasks"]);
  return nullptr;
}

namespace {

std::optional<int64_t> DurationMs(const Json* value) {
  if (value == nullptr || value->is_null()) return std::nullopt;
  if (value->is_number_integer()) return value->get<int64_t>() * 1000;
  if (value->is_number()) return static_cast<int64_t>(value->get<double>() * 1000);
  if (value->is_string()) {
    auto seconds = model::ParseDurationSeconds(value->get<std::string>());
    if (seconds.ok()) return *seconds * 1000;
  }
  return std::nullopt;
}

}  // namespace

namespace {

const Json* Field(const Json* object, const char* name) {
  if (object == nullptr || !object->is_object()) return nullptr;
  auto it = object->find(name);
  return it == object->end() ? nullptr : &*it;
}

}  // namespace

RunPolicy PolicyFor(const store::WorkflowRecord& workflow, const config::ConfigSet& configs) {
  RunPolicy policy;
  // The service stores the effective timeouts (workflow value, else the pool default) at the top.
  if (const Json* v = Field(&workflow.spec, "queue_timeout_seconds"); v && v->is_number_integer()) {
    policy.queue_timeout_ms = v->get<int64_t>() * 1000;
  }
  if (const Json* v = Field(&workflow.spec, "exec_timeout_seconds"); v && v->is_number_integer()) {
    policy.exec_timeout_ms = v->get<int64_t>() * 1000;
  }
  const Json* doc = &workflow.spec;
  if (const Json* inner = Field(doc, "workflow"); inner != nullptr) doc = inner;
  const Json* timeout = Field(doc, "timeout");
  if (!policy.queue_timeout_ms)
    policy.queue_timeout_ms = DurationMs(Field(timeout, "queue_timeout"));
  if (!policy.exec_timeout_ms) policy.exec_timeout_ms = DurationMs(Field(timeout, "exec_timeout"));
  if (const config::Pool* pool = configs.FindPool(workflow.pool); pool != nullptr) {
    if (!policy.queue_timeout_ms) {
      policy.queue_timeout_ms = config::EffectiveSeconds(pool->default_queue_timeout) * 1000;
    }
    if (!policy.exec_timeout_ms) {
      policy.exec_timeout_ms = config::EffectiveSeconds(pool->default_exec_timeout) * 1000;
    }
    policy.pool_exit_actions = pool->default_exit_actions;
  }
  return policy;
}

// COMPLETE | FAIL | RESCHEDULE for an exit code.
std::string ExitActionFor(const Json* task_spec, const RunPolicy& policy, int exit_code) {
  if (const Json* actions = Field(task_spec, "exitActions"); actions && actions->is_object()) {
    std::vector<config::ExitAction> task_actions;
    for (const auto& [action, codes] : actions->items()) {
      if (!codes.is_string() && !codes.is_number_integer()) continue;
      std::string text = codes.is_string() ? codes.get<std::string>() : DumpJson(codes);
      auto ranges = config::ParseExitCodes(text);
      if (!ranges.ok()) continue;
      std::string upper;
      for (char c : action) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      task_actions.push_back({upper, text, *ranges});
    }
    if (auto match = config::MatchExitAction(task_actions, exit_code)) return *match;
  }
  if (auto match = config::MatchExitAction(policy.pool_exit_actions, exit_code)) return *match;
  return exit_code == 0 ? "COMPLETE" : "FAIL";
}

void SetStatus(store::TaskRecord& task, TaskStatus status, int64_t now_ms,
               metrics::Counter* counter) {
  counter->Increment({task.status, std::string(ToString(status))});
  task.status = ToString(status);
  task.status_changed_ms = now_ms;
}

// A workflow's status from its tasks' latest attempts.
model::WorkflowStatus DeriveWorkflowStatus(const std::vector<store::TaskRecord>& tasks) {
  using model::WorkflowStatus;
  bool all_done = true, any_running = false, any_scheduled = false, any_canceled = false;
  std::optional<TaskStatus> failure;
  for (const auto& task : tasks) {
    std::optional<TaskStatus> status = model::FindTaskStatus(task.status);
    if (status == TaskStatus::kRescheduled) continue;
    if (status && model::IsFailure(*status) && !failure) failure = status;
    if (status == TaskStatus::kCanceled) any_canceled = true;
    if (!status || !model::IsTerminal(*status)) all_done = false;
    if (status == TaskStatus::kRunning) any_running = true;
    if (status == TaskStatus::kScheduled) any_scheduled = true;
  }
  if (failure) return model::WorkflowFailure(*failure);
  if (all_done) return any_canceled ? WorkflowStatus::kCanceled : WorkflowStatus::kCompleted;
  if (any_running) return WorkflowStatus::kRunning;
  if (any_scheduled) return WorkflowStatus::kScheduled;
  return WorkflowStatus::kPending;
}

namespace {

// A JSON string holding a whole decimal integer in int64's range ("30", "-1"), else nothing.
// Parses the stored string in place: strtoll over a copy (`get<std::string>().c_str()`) left its
// end pointer in a destroyed temporary, so the check after it read freed memory.
std::optional<int64_t> WholeInteger(const Json* value) {
  if (value == nullptr || !value->is_string()) return std::nullopt;
  const std::string& text = value->get_ref<const std::string&>();
  const char* last = text.data() + text.size();
  int64_t parsed = 0;
  auto [end, error] = std::from_chars(text.data(), last, parsed);
  if (text.empty() || error != std::errc() || end != last) return std::nullopt;
  return parsed;
}

}  // namespace

// The namespace of a pool's pods on a Kubernetes backend: its BACKEND config's k8s_namespace
// ("" = the backend's default).
std::string PodNamespace(const config::ConfigSet& configs, const std::string& pool_name) {
  const config::Pool* pool = configs.FindPool(pool_name);
  const config::Backend* backend = pool ? configs.FindBackend(pool->backend) : nullptr;
  return backend ? backend->k8s_namespace : "";
}

// The simulated run of a task: pod annotations gpupool.io/sim-duration-seconds and
// gpupool.io/sim-exit-code (written by the service), else the task's sim_duration / sim_exit_code
// in the stored spec, else the default duration and exit code 0.
// Backends that run tasks for real get the pod, the exec timeout and whether the task is adopted
// from an earlier leader (`adopt`: find it, never start it again); a Kubernetes backend, the
// namespace of the pool's pods.
backend::TaskLaunch LaunchFor(std::string key, const store::TaskRecord& task, const Json* spec,
                              int64_t start_ms, int64_t default_duration_ms,
                              const RunPolicy& policy, bool adopt, std::string pod_namespace) {
  backend::TaskLaunch launch;
  launch.key = std::move(key);
  launch.node = task.node;
  launch.start_ms = start_ms;
  launch.pod = task.pod;
  launch.exec_timeout_ms = policy.exec_timeout_ms;
  launch.adopt = adopt;
  launch.namespace_ = std::move(pod_namespace);
  launch.duration_ms = DurationMs(Field(spec, "sim_duration")).value_or(default_duration_ms);
  launch.exit_code = 0;
  if (const Json* code = Field(spec, "sim_exit_code"); code && code->is_number_integer()) {
    launch.exit_code = code->get<int>();
  }
  const Json* annotations = Field(Field(&task.pod, "metadata"), "annotations");
  std::optional<int64_t> seconds =
      WholeInteger(Field(annotations, "gpupool.io/sim-duration-seconds"));
  if (seconds && *seconds >= 0 && *seconds <= std::numeric_limits<int64_t>::max() / 1000) {
    launch.duration_ms = *seconds * 1000;
  }
  std::optional<int64_t> code = WholeInteger(Field(annotations, "gpupool.io/sim-exit-code"));
  if (code && *code >= std::numeric_limits<int>::min() &&
      *code <= std::numeric_limits<int>::max()) {
    launch.exit_code = static_cast<int>(*code);
  }
  return launch;
}

std::string SnapshotPodName(const std::string& workflow_id, size_t index) {
  return workflow_id + "." + std::to_string(index);
}

std::string PendingMessage(const std::string& reason, const std::string& current) {
  static constexpr std::string_view kEvicted = "evicted ";
  static constexpr std::string_view kEarlier = "; earlier: ";
  std::string_view eviction;
  if (current.starts_with(kEvicted)) {
    eviction = current;
  } else if (auto at = current.find(std::string(kEarlier) + std::string(kEvicted));
             at != std::string::npos) {
    eviction = std::string_view(current).substr(at + kEarlier.size());
  }
  if (eviction.empty()) return reason;
  return reason + std::string(kEarlier) + std::string(eviction);
}

std::string TaskKey(const std::string& workflow_id, const store::TaskRecord& task) {
  return workflow_id + "/" + task.group + "/" + task.name + "/" + std::to_string(task.retry);
}

}  // namespace gpupool::controller
