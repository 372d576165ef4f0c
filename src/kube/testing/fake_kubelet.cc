#include "kube/testing/fake_kubelet.h"

#include <charconv>

#include "common/clock.h"

namespace gpupool::kube::fake {
namespace {

const Json& Annotations(const Json& pod) {
  static const Json kEmpty = Json::object();
  const Json& annotations = Field(Field(pod, "metadata"), "annotations");
  return annotations.is_object() ? annotations : kEmpty;
}

std::optional<int64_t> IntAnnotation(const Json& pod, const char* key) {
  const Json& annotations = Annotations(pod);
  if (!annotations.contains(key) || !annotations[key].is_string()) return std::nullopt;
  const std::string text = annotations[key].get<std::string>();
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string StringAnnotation(const Json& pod, const char* key) {
  const Json& annotations = Annotations(pod);
  return annotations.contains(key) && annotations[key].is_string()
             ? annotations[key].get<std::string>()
             : "";
}

std::string Phase(const Json& pod) {
  const Json& status = Field(pod, "status");
  return status.is_object() ? status.value("phase", "") : "";
}

Json Condition(const char* type, bool status, const std::string& now,
               const std::string& reason = "") {
  Json condition = {{"type", type},
                    {"status", status ? "True" : "False"},
                    {"lastProbeTime", nullptr},
                    {"lastTransitionTime", now}};
  if (!reason.empty()) condition["reason"] = reason;
  return condition;
}

// Replaces (or adds) the pod condition of the same type.
void SetCondition(Json& status, Json condition) {
  Json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = Json::array();
  for (Json& existing : conditions) {
    if (existing.value("type", "") == condition["type"].get<std::string>()) {
      existing = std::move(condition);
      return;
    }
  }
  conditions.push_back(std::move(condition));
}

// One status per container in spec.containers, each in `state`.
Json ContainerStatuses(const Json& pod, const Json& state, bool ready) {
  Json statuses = Json::array();
  const Json& containers = Field(Field(pod, "spec"), "containers");
  if (!containers.is_array()) return statuses;
  const Json& uid_field = Field(Field(pod, "metadata"), "uid");
  const std::string uid = uid_field.is_string() ? uid_field.get<std::string>() : "";
  for (const Json& container : containers) {
    std::string name = container.value("name", "main");
    statuses.push_back({{"name", name},
                        {"image", container.value("image", "")},
                        {"imageID", ""},
                        {"containerID", "fake://" + uid + "/" + name},
                        {"ready", ready},
                        {"started", state.contains("running")},
                        {"restartCount", 0},
                        {"state", state}});
  }
  return statuses;
}

}  // namespace

void PodLogs::Append(const std::string& pod, const std::string& line) {
  std::lock_guard lock(mu_);
  Log& log = logs_[pod];
  log.lines.push_back(line + "\n");
  for (const auto& weak : log.followers) {
    if (auto follower = weak.lock()) follower->Push(line + "\n");
  }
}

std::string PodLogs::Text(const std::string& pod) const {
  std::lock_guard lock(mu_);
  auto it = logs_.find(pod);
  std::string text;
  if (it != logs_.end()) {
    for (const auto& line : it->second.lines) text += line;
  }
  return text;
}

std::shared_ptr<LineQueue> PodLogs::Follow(const std::string& pod, std::function<void()> wake) {
  auto follower = std::make_shared<LineQueue>(std::move(wake), 1 << 20);
  std::lock_guard lock(mu_);
  Log& log = logs_[pod];
  for (const auto& line : log.lines) follower->Push(line);
  if (log.finished) {
    follower->Close();
  } else {
    log.followers.push_back(follower);
  }
  return follower;
}

void PodLogs::Finish(const std::string& pod) {
  std::lock_guard lock(mu_);
  Log& log = logs_[pod];
  log.finished = true;
  for (const auto& weak : log.followers) {
    if (auto follower = weak.lock()) follower->Close();
  }
  log.followers.clear();
}

Kubelet::Kubelet(ObjectStore& store, PodLogs& logs, boost::asio::io_context& io,
                 KubeletOptions options, std::function<int64_t()> now_ms)
    : store_(store),
      logs_(logs),
      io_(io),
      options_(options),
      now_ms_(std::move(now_ms)),
      pods_(ResourceId("pods")),
      nodes_(ResourceId("nodes")) {}

void Kubelet::Start() {
  store_.AddObserver([this](const Change& change) { OnChange(change); });
}

void Kubelet::After(int64_t ms, const std::string& uid, std::function<void()> fn) {
  auto timer = std::make_shared<boost::asio::steady_timer>(io_);
  timer->expires_after(std::chrono::milliseconds(ms));
  {
    std::lock_guard lock(mu_);
    Run& run = runs_[uid];
    if (run.timer) run.timer->cancel();
    run.timer = timer;
  }
  timer->async_wait([timer, fn = std::move(fn)](const boost::system::error_code& ec) {
    if (!ec) fn();
  });
}

// Called with the store's lock held: only bookkeeping and timers here.
void Kubelet::OnChange(const Change& change) {
  if (change.resource != pods_) return;
  const Json& pod = *change.object.object;
  const std::string uid = pod["metadata"].value("uid", "");
  if (change.type == EventType::kDeleted) {
    std::lock_guard lock(mu_);
    auto it = runs_.find(uid);
    if (it != runs_.end()) {
      if (it->second.timer) it->second.timer->cancel();
      runs_.erase(it);
    }
    return;
  }
  if (!options_.simulate) return;
  const Json& spec = pod["spec"];
  if (!spec.is_object() || spec.value("nodeName", "").empty() || Phase(pod) != "Pending" ||
      pod["metadata"].contains("deletionTimestamp")) {
    return;
  }
  {
    std::lock_guard lock(mu_);
    if (runs_.contains(uid)) return;
    runs_[uid];
  }
  After(options_.start_ms, uid,
        [this, ns = pod["metadata"].value("namespace", ""),
         name = pod["metadata"].value("name", ""), uid] { StartPod(ns, name, uid); });
}

void Kubelet::StartPod(const std::string& namespace_, const std::string& name,
                       const std::string& uid) {
  auto pod = store_.Get(pods_, namespace_, name);
  if (!pod.ok() || (*pod->object)["metadata"].value("uid", "") != uid) return;
  const Json& object = *pod->object;
  const std::string node = object["spec"].value("nodeName", "");
  if (!store_.Get(nodes_, "", node).ok()) return;  // no such node: no kubelet runs it
  const std::string now = FormatTimestamp(now_ms_());
  const std::string waiting = StringAnnotation(object, "fake.gpupool.io/waiting-reason");
  auto updated = store_.Update(pods_, namespace_, name, [&](Json& p) {
    if (p["metadata"].value("uid", "") != uid || Phase(p) != "Pending") {
      return AbortedError("changed");
    }
    Json& status = p["status"];
    status["startTime"] = now;
    status["hostIP"] = "10.0.0.1";
    SetCondition(status, Condition("Initialized", true, now));
    if (!waiting.empty()) {
      Json state = {{"waiting",
                     {{"reason", waiting},
                      {"message", "Back-off pulling image: " + waiting + " (fake kubelet)"}}}};
      status["containerStatuses"] = ContainerStatuses(p, state, false);
      SetCondition(status, Condition("ContainersReady", false, now, "ContainersNotReady"));
      SetCondition(status, Condition("Ready", false, now, "ContainersNotReady"));
      return OkStatus();
    }
    status["phase"] = "Running";
    status["podIP"] = "10.244.0.1";
    status["containerStatuses"] = ContainerStatuses(p, {{"running", {{"startedAt", now}}}}, true);
    SetCondition(status, Condition("ContainersReady", true, now));
    SetCondition(status, Condition("Ready", true, now));
    // A pod's log is its own, not its name's; its first line is there once it shows Running.
    logs_.Append(uid, "fake kubelet: started on node " + node);
    return OkStatus();
  });
  if (!updated.ok() || !waiting.empty()) return;
  {
    std::lock_guard lock(mu_);
    runs_[uid].running = true;
  }
  int64_t run_ms = options_.run_ms;
  if (auto seconds = IntAnnotation(object, "gpupool.io/sim-duration-seconds")) {
    run_ms = *seconds * 1000;
  }
  if (auto ms = IntAnnotation(object, "fake.gpupool.io/run-ms")) run_ms = *ms;
  int exit_code = static_cast<int>(
      IntAnnotation(object, "fake.gpupool.io/exit-code")
          .value_or(IntAnnotation(object, "gpupool.io/sim-exit-code").value_or(0)));
  std::string reason = StringAnnotation(object, "fake.gpupool.io/reason");
  After(std::max<int64_t>(run_ms, 0), uid, [this, namespace_, name, uid, exit_code, reason] {
    EndPod(namespace_, name, uid, exit_code, reason);
  });
}

void Kubelet::EndPod(const std::string& namespace_, const std::string& name, const std::string& uid,
                     int exit_code, const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    Run& run = runs_[uid];
    if (run.ended) return;
    run.ended = true;
  }
  const std::string now = FormatTimestamp(now_ms_());
  std::string why = !reason.empty() ? reason : exit_code == 0 ? "Completed" : "Error";
  auto updated = store_.Update(pods_, namespace_, name, [&](Json& p) {
    if (p["metadata"].value("uid", "") != uid) return AbortedError("changed");
    std::string phase = Phase(p);
    if (phase == "Succeeded" || phase == "Failed") return AbortedError("ended");
    Json& status = p["status"];
    std::string started = status.value("startTime", now);
    Json state = {{"terminated",
                   {{"exitCode", exit_code},
                    {"reason", why},
                    {"startedAt", started},
                    {"finishedAt", now},
                    {"containerID", "fake://" + uid}}}};
    status["containerStatuses"] = ContainerStatuses(p, state, false);
    status["phase"] = exit_code == 0 ? "Succeeded" : "Failed";
    SetCondition(status, Condition("ContainersReady", false, now, "PodCompleted"));
    SetCondition(status, Condition("Ready", false, now, "PodCompleted"));
    // Written before the status shows the end, as a container writes before it exits.
    logs_.Append(uid,
                 "fake kubelet: exited with code " + std::to_string(exit_code) + " (" + why + ")");
    return OkStatus();
  });
  (void)updated;
  logs_.Finish(uid);  // a pod's log is its own, not its name's
}

void Kubelet::Terminate(const std::string& namespace_, const std::string& name,
                        const std::string& uid, int64_t grace_seconds) {
  int64_t delay_ms = grace_seconds * 1000;
  if (options_.simulate) {
    auto pod = store_.Get(pods_, namespace_, name);
    bool ignores =
        pod.ok() && StringAnnotation(*pod->object, "fake.gpupool.io/ignore-sigterm") == "true";
    if (!ignores) delay_ms = 0;
  }
  After(delay_ms, uid, [this, namespace_, name, uid] {
    if (options_.simulate) EndPod(namespace_, name, uid, 143, "Error");
    (void)store_.Remove(pods_, namespace_, name, uid);
  });
}

}  // namespace gpupool::kube::fake
