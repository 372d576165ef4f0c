#include "kube/pod_status.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "kube/json_read.h"
#include "scheduler/scheduler.h"

namespace gpupool::kube {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::array<std::string_view, 5> kStuckReasons = {
    "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError",
    "CreateContainerError"};

// Init containers first, then the others.
std::vector<const Json*> ContainerStatuses(const Json& status) {
  std::vector<const Json*> out;
  for (const char* field : {"initContainerStatuses", "containerStatuses"}) {
    const Json& list = At(status, field);
    if (!list.is_array()) continue;
    for (const Json& s : list) out.push_back(&s);
  }
  return out;
}

}  // namespace

TaskObservation ObservePod(const Json& pod) {
  TaskObservation observation;
  const Json& status = At(pod, "status");
  const std::string phase = Text(At(status, "phase"));
  std::vector<const Json*> containers = ContainerStatuses(status);
  for (const Json* c : containers) {
    const Json& terminated = At(At(*c, "state"), "terminated");
    if (!terminated.is_object()) continue;
    auto finished = scheduler::ParseTimestampMillis(Text(At(terminated, "finishedAt")));
    if (finished) observation.finished_ms = std::max(observation.finished_ms, *finished);
  }
  if (phase == "Succeeded") {
    observation.phase = TaskPhase::kSucceeded;
    observation.reason = "Completed";
    return observation;
  }
  if (phase == "Failed") {
    observation.phase = TaskPhase::kFailed;
    for (const Json* c : containers) {
      const Json& terminated = At(At(*c, "state"), "terminated");
      const Json& code = At(terminated, "exitCode");
      if (!code.is_number_integer() || code.get<int>() == 0) continue;
      observation.exit_code = code.get<int>();
      observation.reason = Text(At(terminated, "reason"));
      observation.message = Text(At(terminated, "message"));
      return observation;
    }
    observation.exit_code = kNoExitCode;
    observation.reason = Text(At(status, "reason"));
    observation.message = Text(At(status, "message"));
    return observation;
  }
  observation.phase =
      phase == "Pending" || phase.empty() ? TaskPhase::kPending : TaskPhase::kRunning;
  for (const Json* c : containers) {
    const Json& waiting = At(At(*c, "state"), "waiting");
    std::string reason = Text(At(waiting, "reason"));
    if (std::find(kStuckReasons.begin(), kStuckReasons.end(), reason) != kStuckReasons.end()) {
      observation.stuck = true;
      observation.reason = reason;
      observation.message = Text(At(waiting, "message"));
      break;
    }
  }
  return observation;
}

}  // namespace gpupool::kube
