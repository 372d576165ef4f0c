#include "backend/kubernetes/kube_backend.h"

#include <cstdio>

#include "common/strings.h"
#include "kube/api.h"
#include "kube/pod_status.h"
#include "kube/translate.h"

namespace gpupool::backend {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kManagedByLabel[] = "app.kubernetes.io/managed-by";
constexpr char kManagedBy[] = "gpupool";

// Lowercase alphanumerics and '-', no '-' at either end.
std::string DnsLabelPart(std::string_view text) {
  std::string out;
  for (char c : text) {
    char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool alnum = (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9');
    if (alnum) {
      out += lower;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string Fnv1a(std::string_view text) {
  uint64_t hash = 1469598103934665603ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%08llx", static_cast<unsigned long long>(hash >> 32));
  return buffer;
}

std::string Annotation(const Json& pod, const char* key) {
  auto metadata = pod.find("metadata");
  if (metadata == pod.end() || !metadata->is_object()) return "";
  auto annotations = metadata->find("annotations");
  if (annotations == metadata->end() || !annotations->is_object()) return "";
  auto it = annotations->find(key);
  return it != annotations->end() && it->is_string() ? it->get<std::string>() : "";
}

std::string NodeName(const Json& pod) {
  auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return "";
  return spec->value("nodeName", "");
}

}  // namespace

std::string PodNameForAttempt(std::string_view key) {
  std::string readable = DnsLabelPart(key);
  const std::string hash = Fnv1a(key);
  constexpr size_t kMax = 63;
  if (readable.size() + 1 + hash.size() > kMax) readable.resize(kMax - 1 - hash.size());
  while (!readable.empty() && readable.back() == '-') readable.pop_back();
  return readable.empty() ? "task-" + hash : readable + "-" + hash;
}

Json PodForTask(const Json& pod, std::string_view key, const std::string& namespace_) {
  Json out = pod.is_object() ? pod : Json::object();
  out["apiVersion"] = "v1";
  out["kind"] = "Pod";
  out.erase("status");
  if (!out["metadata"].is_object()) out["metadata"] = Json::object();
  if (!out["spec"].is_object()) out["spec"] = Json::object();
  Json& metadata = out["metadata"];
  for (const char* field : {"uid", "resourceVersion", "creationTimestamp", "generateName"}) {
    metadata.erase(field);
  }
  metadata["name"] = PodNameForAttempt(key);
  metadata["namespace"] = namespace_;
  if (!metadata["labels"].is_object()) metadata["labels"] = Json::object();
  metadata["labels"][kManagedByLabel] = kManagedBy;
  if (!metadata["annotations"].is_object()) metadata["annotations"] = Json::object();
  metadata["annotations"][kube::kAttemptAnnotation] = std::string(key);
  Json& spec = out["spec"];
  spec["schedulerName"] = kube::kSchedulerName;
  spec["restartPolicy"] = "Never";  // a retry is a new attempt, and a new pod
  spec.erase("nodeName");           // placed by a binding, as a scheduler does
  return out;
}

KubernetesBackend::KubernetesBackend(KubernetesOptions options,
                                     std::unique_ptr<kube::Client> client)
    : options_(std::move(options)), client_(std::move(client)) {}

KubernetesBackend::~KubernetesBackend() {
  if (pods_) pods_->Stop();
  if (nodes_) nodes_->Stop();
}

Result<std::unique_ptr<KubernetesBackend>> KubernetesBackend::Open(KubernetesOptions options,
                                                                   const kube::Environment& env) {
  ASSIGN_OR_RETURN(kube::RestConfig config, kube::ResolveRestConfig(options.kubeconfig, env));
  ASSIGN_OR_RETURN(auto client, kube::Client::Create(config, options.client));
  std::unique_ptr<KubernetesBackend> backend(
      new KubernetesBackend(std::move(options), std::move(client)));
  KubernetesBackend* self = backend.get();
  backend->nodes_ = std::make_unique<kube::Informer>(
      *self->client_, kube::InformerOptions{.path = "/api/v1/nodes"});
  kube::InformerOptions pods;
  pods.path = "/api/v1/pods";
  pods.label_selector = std::string(kManagedByLabel) + "=" + kManagedBy;
  backend->pods_ = std::make_unique<kube::Informer>(
      *self->client_, pods,
      kube::InformerHandlers{
          .on_add = [self](const kube::ObjectPtr& pod) { self->OnPod(pod, false); },
          .on_update = [self](const kube::ObjectPtr&,
                              const kube::ObjectPtr& pod) { self->OnPod(pod, false); },
          .on_delete = [self](const kube::ObjectPtr& pod) { self->OnPod(pod, true); }});
  backend->nodes_->Start();
  backend->pods_->Start();
  for (kube::Informer* informer : {backend->nodes_.get(), backend->pods_.get()}) {
    if (!informer->WaitForSync(backend->options_.sync_timeout)) {
      return UnavailableError("kubernetes backend: no answer from " + config.server + " (" +
                              config.source + "): " + informer->Stats().last_error);
    }
  }
  return backend;
}

Result<std::unique_ptr<Backend>> OpenKubernetesBackend(const KubernetesFlags& flags) {
  KubernetesOptions options;
  options.kubeconfig = {flags.kubeconfig, flags.context};
  options.client.qps = flags.qps;
  options.client.burst = flags.burst;
  options.namespace_ = flags.namespace_;
  ASSIGN_OR_RETURN(auto backend,
                   KubernetesBackend::Open(std::move(options), kube::Environment::Process()));
  return std::unique_ptr<Backend>(std::move(backend));
}

Result<std::vector<Json>> KubernetesBackend::ListNodes() const {
  std::vector<Json> nodes;
  for (const auto& node : nodes_->List()) nodes.push_back(*node);
  return nodes;
}

// On the client's thread: records how gpupool's pods end.
void KubernetesBackend::OnPod(const kube::ObjectPtr& pod, bool deleted) {
  std::string key = Annotation(*pod, kube::kAttemptAnnotation);
  if (key.empty()) return;
  kube::TaskObservation seen = kube::ObservePod(*pod);
  bool finished =
      seen.phase == kube::TaskPhase::kSucceeded || seen.phase == kube::TaskPhase::kFailed;
  if (!finished && !deleted) return;
  std::lock_guard lock(mu_);
  if (ended_.contains(key) || killed_.contains(key)) return;
  TaskExit exit;
  exit.key = key;
  exit.exit_code = finished ? seen.exit_code : kLostExitCode;
  exit.finished_ms = seen.finished_ms;
  ended_[key] = exit;
}

Result<kube::ObjectRef> KubernetesBackend::CreateOrAdopt(const TaskLaunch& launch,
                                                         const std::string& ns) {
  Json pod = PodForTask(launch.pod, launch.key, ns);
  const std::string collection = "/api/v1/namespaces/" + ns + "/pods";
  auto created = kube::CreateObject(*client_, collection, pod);
  if (created.ok()) return kube::RefOf(*created);
  if (created.status().code() != StatusCode::kAlreadyExists) return created.status();
  // This attempt's pod exists (a retry, or a restarted leader): adopt it if it is ours.
  kube::ObjectRef ref{ns, pod["metadata"]["name"].get<std::string>(), ""};
  ASSIGN_OR_RETURN(kube::Response existing, client_->Call({"GET", kube::PodPath(ref)}));
  if (!existing.ok()) return kube::ApiError(existing, "get " + ns + "/" + ref.name);
  Json object = existing.Json();
  if (Annotation(object, kube::kAttemptAnnotation) != launch.key) {
    return FailedPreconditionError("pod " + ns + "/" + ref.name +
                                   " exists and belongs to another task");
  }
  return kube::RefOf(object);
}

Status KubernetesBackend::BindOrConfirm(const kube::ObjectRef& pod, const std::string& node) {
  Status bound = kube::BindPod(*client_, pod, node);
  if (bound.ok() || bound.code() != StatusCode::kAborted) return bound;
  // Refused: fine if an earlier binding of ours put it on this node, else the task must not run.
  ASSIGN_OR_RETURN(kube::Response current, client_->Call({"GET", kube::PodPath(pod)}));
  if (current.ok() && NodeName(current.Json()) == node) return OkStatus();
  return bound;
}

Status KubernetesBackend::Launch(const TaskLaunch& launch) {
  {
    std::lock_guard lock(mu_);
    auto it = running_.find(launch.key);
    if (it != running_.end() && it->second.node == launch.node) return OkStatus();
  }
  const std::string ns = launch.namespace_.empty() ? options_.namespace_ : launch.namespace_;
  auto pod = CreateOrAdopt(launch, ns);
  if (!pod.ok()) return pod.status().WithContext("kubernetes backend: task " + launch.key);
  Status bound = BindOrConfirm(*pod, launch.node);
  if (!bound.ok()) return bound.WithContext("kubernetes backend: task " + launch.key);
  std::lock_guard lock(mu_);
  running_[launch.key] = {*pod, launch.node};
  killed_.erase(launch.key);
  return OkStatus();
}

Status KubernetesBackend::Kill(std::string_view key) {
  Task task;
  {
    std::lock_guard lock(mu_);
    auto it = running_.find(key);
    if (it == running_.end()) return OkStatus();
    task = it->second;
    running_.erase(it);
    killed_.emplace(key);
    ended_.erase(std::string(key));
  }
  Status deleted = kube::DeletePod(*client_, task.pod, std::nullopt);
  if (deleted.code() == StatusCode::kNotFound) return OkStatus();
  return deleted;
}

std::vector<TaskExit> KubernetesBackend::Poll(int64_t now_ms) {
  std::vector<TaskExit> exits;
  std::lock_guard lock(mu_);
  for (auto it = ended_.begin(); it != ended_.end();) {
    if (!running_.contains(it->first)) {  // not launched (or adopted) by this process yet
      ++it;
      continue;
    }
    TaskExit exit = it->second;
    if (exit.finished_ms == 0) exit.finished_ms = now_ms;
    running_.erase(it->first);
    exits.push_back(std::move(exit));
    it = ended_.erase(it);
  }
  std::stable_sort(exits.begin(), exits.end(), [](const TaskExit& a, const TaskExit& b) {
    return a.finished_ms < b.finished_ms;
  });
  return exits;
}

size_t KubernetesBackend::RunningCount() const {
  std::lock_guard lock(mu_);
  return running_.size();
}

}  // namespace gpupool::backend
