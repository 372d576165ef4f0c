#pragma once
// A batch/v1 Job (seed 004's `batch-job` and `ml-training`) run as a workflow: what
// `gpupool apply -f` does with one. A Job goes through the same pipeline as a workflow file (the
// pool's access, platforms, validations, templates, quotas), so an administrator's rules hold
// whatever spelling the work arrives in.
//
// The mapping (docs/DESIGN.md §3, "Jobs"):
//   metadata.name                 the workflow's name (its id is "<name>-<sequence>")
//   metadata.labels               gpupool.io/pool (else the caller's default pool),
//                                 gpupool.io/queue (a project), gpupool.io/platform
//   metadata.annotations          gpupool.io/node-pools: "a100-80,default" (a preference list)
//   spec.completions              that many tasks, named "0".."N-1" (pods "<id>-<index>");
//                                 unset: 1 (a work-queue Job, parallelism > 1 without
//                                 completions, is refused: its pods share an outside queue)
//   spec.parallelism              workflow.parallelism: at most that many tasks at once
//   spec.backoffLimit             workflow.backoff_limit: failed pods retried up to it in all
//   spec.completionMode Indexed   each pod gets JOB_COMPLETION_INDEX
//   spec.template.metadata        labels on every pod (with batch.kubernetes.io/job-name);
//                                 annotations gpupool.io/sim-duration-seconds and
//                                 gpupool.io/sim-exit-code set the simulated run
//   spec.template.spec            one container: image, command, args, env, resources
//                                 (requests, else limits: cpu, memory, ephemeral-storage,
//                                 nvidia.com/gpu; absent ones take the platform's defaults, as a
//                                 task's do), securityContext.privileged, lifecycle;
//                                 nodeSelector, tolerations, affinity,
//                                 terminationGracePeriodSeconds, hostNetwork; priorityClassName
//                                 high | normal | low (the workflow's priority)
// Anything else a Job can say is refused with its field path and why (volumes are the platform's
// to allow, activeDeadlineSeconds and the failure policies are not carried), never dropped
// silently; ttlSecondsAfterFinished and selector are accepted and have no effect (gpupool keeps
// every run as a workflow and makes the pods itself).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "submit/workflow.h"

namespace gpupool::submit {

inline constexpr char kPoolLabel[] = "gpupool.io/pool";
inline constexpr char kQueueLabel[] = "gpupool.io/queue";
inline constexpr char kPlatformLabel[] = "gpupool.io/platform";
inline constexpr char kNodePoolsAnnotation[] = "gpupool.io/node-pools";
// A Job's completions are tasks stored with their pods (~2 KB each): a 5,000-completion Job is a
// 10 MB workflow, about what a workflow file at the body limit makes.
inline constexpr int64_t kMaxJobCompletions = 5000;

struct JobSubmission {
  std::string pool;  // from the label; "" = the caller's default pool
  WorkflowSpec workflow;
  // "job/<namespace>/<name>/<hash of the manifest>": applying the same Job again finds the
  // workflow it started (kubectl's "unchanged"); a changed Job of the same name starts a new run.
  std::string idempotency_key;
};

// The workflow a Job manifest runs as. Errors are InvalidArgument and name the field path from
// the manifest's root ("spec.template.spec.volumes: ...").
Result<JobSubmission> WorkflowFromJob(const nlohmann::ordered_json& manifest);

}  // namespace gpupool::submit
