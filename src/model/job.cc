#include "model/job.h"

#include <algorithm>

#include "codec/field_path.h"
#include "codec/json_reader.h"
#include "common/strings.h"
#include "model/k8s.h"

namespace gpupool::model {
namespace {

using codec::FieldPath;
using codec::JsonTypeName;
using Json = nlohmann::ordered_json;

// An optional integer field of `spec`, >= 0 (and <= 2^31 - 1, an int32 in Kubernetes).
Result<std::optional<int64_t>> Count(const Json& spec, const char* key) {
  auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return std::optional<int64_t>();
  const std::string path = FieldPath("spec", key);
  if (!it->is_number_integer()) {
    return InvalidArgumentError(path + ": expected an integer, got " + JsonTypeName(*it));
  }
  if (it->is_number_unsigned() ? it->get<uint64_t>() > 2147483647u
                               : it->get<int64_t>() > 2147483647) {
    return InvalidArgumentError(path + ": " + it->dump() + " is out of range");
  }
  if (!it->is_number_unsigned() && it->get<int64_t>() < 0) {
    return InvalidArgumentError(path + ": must be greater than or equal to 0, got " + it->dump());
  }
  return std::optional<int64_t>(it->get<int64_t>());
}

// The template as a Pod named `name` (labels merged: the template's, then the Job's own).
Json PodOf(const Job& job, const std::string& name, std::optional<int64_t> index) {
  Json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", Json::object()}};
  const Json& tmeta = job.pod_template.value("metadata", Json::object());
  Json& metadata = pod["metadata"];
  metadata["name"] = name;
  metadata["namespace"] = job.namespace_;
  if (!job.creation_timestamp.empty()) metadata["creationTimestamp"] = job.creation_timestamp;
  Json labels = tmeta.is_object() && tmeta.contains("labels") && tmeta["labels"].is_object()
                    ? tmeta["labels"]
                    : Json::object();
  labels[kJobNameLabel] = job.name;
  labels[kLegacyJobNameLabel] = job.name;
  if (index) labels[kJobCompletionIndexLabel] = std::to_string(*index);
  metadata["labels"] = std::move(labels);
  if (tmeta.is_object() && tmeta.contains("annotations")) {
    metadata["annotations"] = tmeta["annotations"];
  }
  pod["spec"] = job.pod_template.value("spec", Json::object());
  return pod;
}

Status CheckTemplate(const Job& job) {
  const Json& t = job.pod_template;
  if (!t.is_object()) {
    return InvalidArgumentError("spec.template: expected an object, got " + JsonTypeName(t));
  }
  RETURN_IF_ERROR(codec::CheckKnownFields(t, "spec.template", {"metadata", "spec"}));
  if (!t.contains("spec") || !t["spec"].is_object()) {
    return InvalidArgumentError("spec.template.spec: required object");
  }
  if (t.contains("metadata")) {
    if (!t["metadata"].is_object()) {
      return InvalidArgumentError("spec.template.metadata: expected an object, got " +
                                  JsonTypeName(t["metadata"]));
    }
    RETURN_IF_ERROR(codec::CheckKnownFields(t["metadata"], "spec.template.metadata",
                                            {"name", "namespace", "labels", "annotations"}));
  }
  auto restart = t["spec"].find("restartPolicy");
  if (restart != t["spec"].end() && *restart != "Never" && *restart != "OnFailure") {
    return InvalidArgumentError(
        "spec.template.spec.restartPolicy: a Job's pods end: expected "
        "Never or OnFailure, got " +
        restart->dump());
  }
  const Json pod = PodOf(job, job.name + "-0", 0);
  Result<PodScheduling> parsed = PodSchedulingFromJson(pod);
  if (parsed.ok()) return OkStatus();
  // The pod decoder's paths ("spec.containers[0].resources") are the template's.
  const Status status = parsed.status();  // by value: message() must not outlive it
  if (status.message().starts_with("spec.") || status.message().starts_with("metadata.")) {
    return Status(status.code(), "spec.template." + status.message());
  }
  return status.WithContext("spec.template");
}

}  // namespace

Result<Job> JobFromManifest(const Json& manifest) {
  ASSIGN_OR_RETURN(const Json metadata, ManifestMetadata(manifest, "batch/v1"));
  Job job;
  job.name = metadata["name"].get<std::string>();
  for (const char* key : {"namespace", "creationTimestamp"}) {
    auto it = metadata.find(key);
    if (it == metadata.end() || it->is_null()) continue;
    if (!it->is_string()) {
      return InvalidArgumentError(FieldPath("metadata", key) + ": expected a string, got " +
                                  JsonTypeName(*it));
    }
    std::string value = it->get<std::string>();
    if (value.empty()) continue;
    (std::string_view(key) == "namespace" ? job.namespace_ : job.creation_timestamp) = value;
  }
  const Json spec = manifest.value("spec", Json());
  if (!spec.is_object()) return InvalidArgumentError("spec: required object");
  RETURN_IF_ERROR(codec::CheckKnownFields(
      spec, "spec",
      {"parallelism", "completions", "backoffLimit", "template", "completionMode",
       "activeDeadlineSeconds", "ttlSecondsAfterFinished", "suspend", "selector", "manualSelector",
       "backoffLimitPerIndex", "maxFailedIndexes", "podFailurePolicy", "podReplacementPolicy"}));
  ASSIGN_OR_RETURN(std::optional<int64_t> parallelism, Count(spec, "parallelism"));
  ASSIGN_OR_RETURN(job.completions, Count(spec, "completions"));
  ASSIGN_OR_RETURN(std::optional<int64_t> backoff, Count(spec, "backoffLimit"));
  job.parallelism = parallelism.value_or(1);
  job.backoff_limit = backoff.value_or(6);
  if (!spec.contains("template")) return InvalidArgumentError("spec.template: required");
  job.pod_template = spec["template"];
  RETURN_IF_ERROR(CheckTemplate(job));
  return job;
}

std::vector<Json> JobPods(const Job& job, int64_t first, int64_t count) {
  std::vector<Json> pods;
  for (int64_t i = first; i < first + count; ++i) {
    pods.push_back(PodOf(job, job.name + "-" + std::to_string(i), i));
  }
  return pods;
}

int64_t JobPodsToStart(const Job& job, int64_t succeeded, int64_t active) {
  int64_t want = 0;
  if (job.completions) {
    want = std::min(job.parallelism, std::max<int64_t>(0, *job.completions - succeeded));
  } else {
    want = succeeded > 0 ? 0 : job.parallelism;
  }
  return std::max<int64_t>(0, want - active);
}

}  // namespace gpupool::model
