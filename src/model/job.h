#pragma once
// batch/v1 Job (seed 004's `batch-job` and `ml-training` examples): a pod template run until
// `completions` pods have succeeded, at most `parallelism` at a time, the Job failing once
// `backoffLimit` pods have failed (Kubernetes' Job controller).
//
// Manifest: {apiVersion: batch/v1, kind: Job, metadata: {name, namespace, labels, annotations,
//            creationTimestamp}, spec: {parallelism, completions, backoffLimit, template:
//            {metadata: {labels, annotations}, spec: <PodSpec>}, completionMode,
//            activeDeadlineSeconds, ttlSecondsAfterFinished, suspend}}
// Defaults as Kubernetes: parallelism 1; completions unset = work-queue mode (parallelism pods
// until one succeeds, then no new ones); backoffLimit 6. parallelism 0 runs nothing. The
// template's restartPolicy may be Never or OnFailure; absent reads as Never (Kubernetes would
// default it to Always and refuse the Job; seed 004's examples leave it out), Always is refused.
//
// Expansion (JobPods): the pods a Job has running or waiting at once (JobPodsToStart), each the
// template with name "<job>-<index>", the Job's namespace and
// creationTimestamp, and the labels Kubernetes adds (batch.kubernetes.io/job-name, job-name,
// batch.kubernetes.io/job-completion-index).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace gpupool::model {

inline constexpr char kJobNameLabel[] = "batch.kubernetes.io/job-name";
inline constexpr char kLegacyJobNameLabel[] = "job-name";
inline constexpr char kJobCompletionIndexLabel[] = "batch.kubernetes.io/job-completion-index";

struct Job {
  std::string name;
  // NOLINTNEXTLINE(readability-identifier-naming): `namespace` is a keyword.
  std::string namespace_ = "default";
  std::string creation_timestamp;  // "" = absent
  int64_t parallelism = 1;
  std::optional<int64_t> completions;  // nullopt: work-queue mode (done at the first success)
  int64_t backoff_limit = 6;
  nlohmann::ordered_json pod_template;  // {metadata: {labels, annotations}, spec}
};

// Decodes a batch/v1 Job manifest. Errors name the field path from the manifest's root
// ("spec.parallelism: must be greater than or equal to 0, got -1"); the template is checked as a
// pod (model::PodSchedulingFromJson), its errors under spec.template.
Result<Job> JobFromManifest(const nlohmann::ordered_json& manifest);

// The Job's pods with indexes [first, first + count), as v1 Pod objects (pending: no nodeName).
std::vector<nlohmann::ordered_json> JobPods(const Job& job, int64_t first, int64_t count);

// How many more pods the Job starts when `succeeded` have succeeded and `active` are running or
// waiting: min(parallelism, completions - succeeded) - active (work-queue mode: parallelism -
// active until one succeeded, then none), at least 0.
int64_t JobPodsToStart(const Job& job, int64_t succeeded, int64_t active);

}  // namespace gpupool::model
