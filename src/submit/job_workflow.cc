#include "submit/job_workflow.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include "codec/field_path.h"
#include "codec/json_reader.h"
#include "common/strings.h"
#include "model/job.h"

namespace gpupool::submit {
namespace {

using codec::FieldPath;
using codec::JsonTypeName;
using Json = nlohmann::ordered_json;

// A field a Job may have that gpupool does not carry, and what to do instead.
struct NotCarried {
  const char* field;
  const char* why;
};

Status RefuseNotCarried(const Json& object, std::string_view path,
                        const std::vector<NotCarried>& fields) {
  for (const NotCarried& field : fields) {
    auto it = object.find(field.field);
    if (it == object.end() || it->is_null()) continue;
    return InvalidArgumentError(FieldPath(path, field.field) + ": not carried when a Job runs " +
                                "as a workflow: " + field.why);
  }
  return OkStatus();
}

const Json& Member(const Json& object, const char* key) {
  static const Json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// metadata.labels[key] / annotations[key] as a string ("" when absent).
Result<std::string> StringEntry(const Json& map, std::string_view path, const char* key) {
  const Json& value = Member(map, key);
  if (value.is_null()) return std::string();
  if (!value.is_string()) {
    return InvalidArgumentError(FieldPath(path, key) + ": expected a string, got " +
                                JsonTypeName(value));
  }
  return value.get<std::string>();
}

// FNV-1a over the manifest's text: stable across runs and builds (std::hash is neither).
std::string ManifestHash(const Json& manifest) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : manifest.dump()) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

Status CheckJobSpec(const Json& spec, const model::Job& job) {
  RETURN_IF_ERROR(RefuseNotCarried(
      spec, "spec",
      {{"activeDeadlineSeconds", "each pod is limited by the pool's exec timeout instead"},
       {"backoffLimitPerIndex", "use spec.backoffLimit (failures counted for the whole Job)"},
       {"maxFailedIndexes", "use spec.backoffLimit (failures counted for the whole Job)"},
       {"podFailurePolicy", "a failed pod counts against spec.backoffLimit whatever its cause"},
       {"podReplacementPolicy", "a pod is replaced once it has ended"}}));
  if (const Json& suspend = Member(spec, "suspend"); suspend.is_boolean() && suspend.get<bool>()) {
    return InvalidArgumentError(
        "spec.suspend: a suspended Job starts no pod; gpupool apply runs a Job at once (leave "
        "suspend out or false)");
  }
  if (const Json& mode = Member(spec, "completionMode");
      !mode.is_null() && mode != "NonIndexed" && mode != "Indexed") {
    return InvalidArgumentError("spec.completionMode: expected NonIndexed or Indexed, got " +
                                mode.dump());
  }
  if (job.parallelism == 0) {
    return InvalidArgumentError(
        "spec.parallelism: 0 starts no pod (a paused Job); gpupool apply runs a Job at once");
  }
  if (!job.completions && job.parallelism > 1) {
    return InvalidArgumentError(
        "spec.completions: required when spec.parallelism is above 1: a work-queue Job's pods "
        "take their work from a queue of their own, and gpupool runs a Job as a number of "
        "completions");
  }
  if (job.completions && *job.completions == 0) {
    return InvalidArgumentError("spec.completions: 0 runs no pod; expected at least 1");
  }
  if (job.completions && *job.completions > kMaxJobCompletions) {
    return InvalidArgumentError("spec.completions: " + std::to_string(*job.completions) +
                                " is above the " + std::to_string(kMaxJobCompletions) +
                                " a Job may ask (each completion is a stored task with its pod)");
  }
  return OkStatus();
}

// The pod-level fields of the template (spec.template.spec): refused, carried into the task's
// pod_fields, or read into the workflow (priority).
Status ReadPodSpec(const Json& pod_spec, TaskSpec& task, Priority& priority) {
  const std::string path = "spec.template.spec";
  RETURN_IF_ERROR(RefuseNotCarried(
      pod_spec, path,
      {{"volumes", "mounts are the pool platform's to allow: submit a workflow with mounts"},
       {"initContainers", "a workflow task runs one container"},
       {"serviceAccountName", "the pods run with the pool's service account"},
       {"nodeName", "gpupool chooses the node"}}));
  RETURN_IF_ERROR(codec::CheckKnownFields(
      pod_spec, path,
      {"containers", "restartPolicy", "nodeSelector", "tolerations", "affinity",
       "terminationGracePeriodSeconds", "priorityClassName", "hostNetwork", "schedulerName",
       "volumes", "initContainers", "serviceAccountName", "nodeName"}));
  Json fields = Json::object();
  for (const char* key :
       {"nodeSelector", "tolerations", "affinity", "terminationGracePeriodSeconds"}) {
    if (const Json& value = Member(pod_spec, key); !value.is_null()) fields[key] = value;
  }
  if (!fields.empty()) task.pod_fields["spec"] = std::move(fields);
  if (const Json& host = Member(pod_spec, "hostNetwork"); host.is_boolean()) {
    task.host_network = host.get<bool>();
  }
  const Json& class_name = Member(pod_spec, "priorityClassName");
  if (class_name.is_null()) return OkStatus();
  const std::string name = class_name.is_string() ? ToLower(class_name.get<std::string>()) : "";
  if (name == "high") {
    priority = Priority::kHigh;
  } else if (name == "normal") {
    priority = Priority::kNormal;
  } else if (name == "low") {
    priority = Priority::kLow;
  } else {
    return InvalidArgumentError(path + ".priorityClassName: expected high, normal or low (the " +
                                "workflow priorities HIGH, NORMAL, LOW), got " + class_name.dump() +
                                DidYouMean(name, {"high", "normal", "low"}));
  }
  return OkStatus();
}

// requests, else limits, of one resource; null when neither has it.
Json Request(const Json& resources, const char* name) {
  const Json& request = Member(Member(resources, "requests"), name);
  return request.is_null() ? Member(Member(resources, "limits"), name) : request;
}

Status ReadResources(const Json& resources, const std::string& path, ResourceSpec& spec) {
  if (resources.is_null()) return OkStatus();
  RETURN_IF_ERROR(codec::CheckKnownFields(resources, path, {"requests", "limits"}));
  for (const char* part : {"requests", "limits"}) {
    const Json& list = Member(resources, part);
    if (list.is_null()) continue;
    RETURN_IF_ERROR(codec::CheckKnownFields(
        list, FieldPath(path, part), {"cpu", "memory", "ephemeral-storage", "nvidia.com/gpu"}));
  }
  spec.cpu = Request(resources, "cpu");
  spec.memory = Request(resources, "memory");
  spec.storage = Request(resources, "ephemeral-storage");
  spec.gpu = Request(resources, "nvidia.com/gpu");
  return OkStatus();
}

// The template's one container: the task's image, command, args, env and resources.
Status ReadContainer(const Json& pod_spec, TaskSpec& task, ResourceSpec& resource) {
  const Json& containers = Member(pod_spec, "containers");
  const std::string list_path = "spec.template.spec.containers";
  if (!containers.is_array() || containers.size() != 1) {
    return InvalidArgumentError(
        list_path + ": expected one container (a workflow task runs " + "one), got " +
        (containers.is_array() ? std::to_string(containers.size()) : JsonTypeName(containers)));
  }
  const Json& c = containers[0];
  const std::string path = codec::IndexPath(list_path, 0);
  RETURN_IF_ERROR(RefuseNotCarried(
      c, path,
      {{"volumeMounts", "mounts are the pool platform's to allow: submit a workflow with mounts"},
       {"ports", "a task's ports are its platform template's"}}));
  RETURN_IF_ERROR(codec::CheckKnownFields(
      c, path,
      {"name", "image", "command", "args", "env", "resources", "securityContext", "lifecycle",
       "imagePullPolicy", "workingDir", "volumeMounts", "ports"}));
  if (!Member(c, "workingDir").is_null()) {
    return InvalidArgumentError(FieldPath(path, "workingDir") +
                                ": not carried when a Job runs as a workflow: set it in the "
                                "command (cd DIR && ...)");
  }
  const Json& image = Member(c, "image");
  if (!image.is_string() || image.get<std::string>().empty()) {
    return InvalidArgumentError(FieldPath(path, "image") + ": required string");
  }
  task.image = image.get<std::string>();
  for (const char* key : {"command", "args"}) {
    const Json& list = Member(c, key);
    if (list.is_null()) continue;
    const bool strings =
        list.is_array() &&
        std::all_of(list.begin(), list.end(), [](const Json& item) { return item.is_string(); });
    if (!strings) {
      return InvalidArgumentError(FieldPath(path, key) + ": expected a list of strings");
    }
    (std::string_view(key) == "command" ? task.command : task.args) =
        list.get<std::vector<std::string>>();
  }
  if (const Json& env = Member(c, "env"); !env.is_null()) task.env = env;
  if (const Json& security = Member(c, "securityContext"); !security.is_null()) {
    RETURN_IF_ERROR(
        codec::CheckKnownFields(security, FieldPath(path, "securityContext"), {"privileged"}));
    task.privileged = Member(security, "privileged") == true;
  }
  if (const Json& lifecycle = Member(c, "lifecycle"); !lifecycle.is_null()) {
    task.pod_fields["container"] = Json{{"lifecycle", lifecycle}};
  }
  return ReadResources(Member(c, "resources"), FieldPath(path, "resources"), resource);
}

// The template's annotations that set the simulated run.
Status ReadSimulatedRun(const Json& annotations, TaskSpec& task) {
  const std::string path = "spec.template.metadata.annotations";
  ASSIGN_OR_RETURN(std::string seconds,
                   StringEntry(annotations, path, "gpupool.io/sim-duration-seconds"));
  ASSIGN_OR_RETURN(std::string code, StringEntry(annotations, path, "gpupool.io/sim-exit-code"));
  auto whole = [](const std::string& text) -> std::optional<int64_t> {
    if (text.empty() || text.size() > 9) return std::nullopt;
    if (!std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) {
      return std::nullopt;
    }
    return std::stoll(text);
  };
  if (!seconds.empty()) {
    task.sim_duration_seconds = whole(seconds);
    if (!task.sim_duration_seconds) {
      return InvalidArgumentError(FieldPath(path, "gpupool.io/sim-duration-seconds") +
                                  ": expected whole seconds, got \"" + seconds + "\"");
    }
  }
  if (!code.empty()) {
    std::optional<int64_t> value = whole(code);
    if (!value || *value > 255) {
      return InvalidArgumentError(FieldPath(path, "gpupool.io/sim-exit-code") +
                                  ": expected an exit code from 0 to 255, got \"" + code + "\"");
    }
    task.sim_exit_code = static_cast<int>(*value);
  }
  return OkStatus();
}

// The Job's labels and annotations that choose pool, queue, platform and node pools.
Status ReadPlacement(const Json& metadata, JobSubmission& out, ResourceSpec& resource) {
  const Json& labels = Member(metadata, "labels");
  const Json& annotations = Member(metadata, "annotations");
  ASSIGN_OR_RETURN(out.pool, StringEntry(labels, "metadata.labels", kPoolLabel));
  ASSIGN_OR_RETURN(out.workflow.queue, StringEntry(labels, "metadata.labels", kQueueLabel));
  out.workflow.queue_origin = FieldPath("metadata.labels", kQueueLabel);
  ASSIGN_OR_RETURN(resource.platform, StringEntry(labels, "metadata.labels", kPlatformLabel));
  ASSIGN_OR_RETURN(std::string node_pools,
                   StringEntry(annotations, "metadata.annotations", kNodePoolsAnnotation));
  if (!node_pools.empty()) {
    auto parsed = ParseNodePoolList(node_pools);
    if (!parsed.ok()) {
      return parsed.status().WithContext(FieldPath("metadata.annotations", kNodePoolsAnnotation));
    }
    out.workflow.node_pools = std::move(*parsed);
  }
  return OkStatus();
}

// The stored `workflow:` document: what the Job became, in the workflow file's own spelling.
Json WorkflowDocument(const WorkflowSpec& workflow, const ResourceSpec& resource,
                      const TaskSpec& task) {
  Json doc = Json::object();
  doc["name"] = workflow.name;
  doc["priority"] = std::string(PriorityName(workflow.priority));
  if (workflow.parallelism) doc["parallelism"] = *workflow.parallelism;
  if (workflow.backoff_limit) doc["backoff_limit"] = *workflow.backoff_limit;
  if (!workflow.queue.empty()) doc["queue"] = workflow.queue;
  if (!workflow.node_pools.empty()) doc["node_pools"] = workflow.node_pools;
  Json res = Json::object();
  for (const auto& [key, value] : {std::pair<const char*, const Json*>{"cpu", &resource.cpu},
                                   {"gpu", &resource.gpu},
                                   {"memory", &resource.memory},
                                   {"storage", &resource.storage}}) {
    if (!value->is_null()) res[key] = *value;
  }
  if (!resource.platform.empty()) res["platform"] = resource.platform;
  doc["resources"] = Json{{"default", std::move(res)}};
  Json tasks = Json::array();
  for (const GroupSpec& group : workflow.groups) {
    Json t = {{"name", group.tasks[0].name}, {"image", task.image}};
    if (!task.command.empty()) t["command"] = task.command;
    if (!task.args.empty()) t["args"] = task.args;
    if (!group.tasks[0].env.empty()) t["env"] = group.tasks[0].env;
    tasks.push_back(std::move(t));
  }
  doc["tasks"] = std::move(tasks);
  doc["labels"] = workflow.labels;
  return doc;
}

}  // namespace

Result<JobSubmission> WorkflowFromJob(const Json& manifest) {
  ASSIGN_OR_RETURN(model::Job job, model::JobFromManifest(manifest));
  const Json& spec = Member(manifest, "spec");
  RETURN_IF_ERROR(CheckJobSpec(spec, job));
  if (job.namespace_ != "default") {
    return InvalidArgumentError("metadata.namespace: expected \"default\" (the namespace of the " +
                                std::string("server's tasks), got \"") + job.namespace_ + "\"");
  }
  JobSubmission out;
  WorkflowSpec& workflow = out.workflow;
  workflow.name = job.name;
  workflow.backoff_limit = job.backoff_limit;
  const int64_t completions = job.completions.value_or(1);
  if (job.parallelism < completions) workflow.parallelism = job.parallelism;

  ResourceSpec resource;
  resource.name = "default";
  RETURN_IF_ERROR(ReadPlacement(Member(manifest, "metadata"), out, resource));
  TaskSpec task;
  const Json& pod_spec = Member(job.pod_template, "spec");
  RETURN_IF_ERROR(ReadPodSpec(pod_spec, task, workflow.priority));
  RETURN_IF_ERROR(ReadContainer(pod_spec, task, resource));
  const Json& template_metadata = Member(job.pod_template, "metadata");
  RETURN_IF_ERROR(ReadSimulatedRun(Member(template_metadata, "annotations"), task));
  if (const Json& labels = Member(template_metadata, "labels"); labels.is_object()) {
    workflow.labels = labels;
  }
  workflow.labels[model::kJobNameLabel] = job.name;
  workflow.labels[model::kLegacyJobNameLabel] = job.name;
  workflow.resources.push_back(resource);

  const bool indexed = Member(spec, "completionMode") == "Indexed";
  for (int64_t i = 0; i < completions; ++i) {
    TaskSpec each = task;
    each.name = std::to_string(i);
    if (indexed) {
      if (!each.env.is_array()) each.env = Json::array();
      each.env.push_back(Json{{"name", "JOB_COMPLETION_INDEX"}, {"value", each.name}});
    }
    GroupSpec group;
    group.name = each.name + "-group";
    group.tasks.push_back(std::move(each));
    workflow.groups.push_back(std::move(group));
  }
  workflow.document = WorkflowDocument(workflow, resource, task);
  out.idempotency_key = "job/" + job.namespace_ + "/" + job.name + "/" + ManifestHash(manifest);
  return out;
}

}  // namespace gpupool::submit
