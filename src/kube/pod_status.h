#pragma once
// What a pod's status says about the task it runs (pure):
//   phase Pending                  kPending; a container waiting with ErrImagePull,
//                                  ImagePullBackOff, InvalidImageName, CreateContainerConfigError
//                                  or CreateContainerError is `stuck` (it will not start by
//                                  itself), with that reason and the kubelet's message;
//   phase Running (or Unknown)     kRunning;
//   phase Succeeded                kSucceeded, exit code 0;
//   phase Failed                   kFailed: the exit code and reason of the first container (init
//                                  containers first, then the others, in status order) that
//                                  terminated with a non-zero code (OOMKilled: 137, "OOMKilled");
//                                  without one (the pod was evicted, or its deadline passed),
//                                  exit code kNoExitCode and status.reason (Evicted,
//                                  DeadlineExceeded, ...).
// finished_ms is the latest container finishedAt (0 when none).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace gpupool::kube {

// A failed pod whose containers report no exit code.
inline constexpr int kNoExitCode = -1;

enum class TaskPhase { kPending, kRunning, kSucceeded, kFailed };

struct TaskObservation {
  TaskPhase phase = TaskPhase::kPending;
  int exit_code = 0;
  std::string reason;
  std::string message;
  bool stuck = false;
  int64_t finished_ms = 0;
};

TaskObservation ObservePod(const nlohmann::ordered_json& pod);

}  // namespace gpupool::kube
