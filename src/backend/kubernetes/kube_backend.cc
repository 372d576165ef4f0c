#include "backend/kubernetes/kube_backend.h"

#include <cstdio>
#include <initializer_list>
#include <optional>
#include <string_view>

#include "common/json_text.h"
#include "common/strings.h"
#include "kube/api.h"
#include "kube/json_read.h"
#include "kube/pod_status.h"
#include "kube/translate.h"
#include "model/quantity.h"

namespace gpupool::backend {
namespace {

using Json = nlohmann::ordered_json;
using kube::At;

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

bool IsString(const Json& value, std::string_view text) {
  return value.is_string() && value.get_ref<const std::string&>() == text;
}

std::string Annotation(const Json& pod, const char* key) {
  auto metadata = pod.find("metadata");
  if (metadata == pod.end() || !metadata->is_object()) return "";
  auto annotations = metadata->find("annotations");
  if (annotations == metadata->end() || !annotations->is_object()) return "";
  auto it = annotations->find(key);
  return it != annotations->end() && it->is_string() ? it->get<std::string>() : "";
}

// The container whose log is a task's output: kubectl's default container, else the first.
std::string OutputContainer(const Json& pod) {
  std::string named = Annotation(pod, "kubectl.kubernetes.io/default-container");
  if (!named.empty()) return named;
  const Json& containers = At(pod, {"spec", "containers"});
  return containers.is_array() && !containers.empty() && containers[0].is_object()
             ? containers[0].value("name", "")
             : "";
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
    : options_(std::move(options)),
      client_(std::move(client)),
      unschedulable_(std::make_unique<UnschedulableWriter>(*client_, options_.event_repeat)) {}

KubernetesBackend::~KubernetesBackend() {
  if (budgets_) budgets_->Stop();
  if (pods_) pods_->Stop();
  if (nodes_) nodes_->Stop();
  // The client's thread goes first, while what its callbacks use (the maps, the writer) lives.
  budgets_.reset();
  pods_.reset();
  nodes_.reset();
  client_.reset();
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
  // Every pod, not only gpupool's: the others bound to a node use its capacity.
  kube::InformerOptions pods;
  pods.path = "/api/v1/pods";
  backend->pods_ = std::make_unique<kube::Informer>(
      *self->client_, pods,
      kube::InformerHandlers{
          .on_add = [self](const kube::ObjectPtr& pod) { self->OnPod(pod, false); },
          .on_update = [self](const kube::ObjectPtr& before,
                              const kube::ObjectPtr& pod) { self->OnPod(pod, false, before); },
          .on_delete = [self](const kube::ObjectPtr& pod) { self->OnPod(pod, true); }});
  backend->budgets_ = std::make_unique<kube::Informer>(
      *self->client_, kube::InformerOptions{.path = "/apis/policy/v1/poddisruptionbudgets"});
  backend->nodes_->Start();
  backend->pods_->Start();
  backend->budgets_->Start();
  for (kube::Informer* informer :
       {backend->nodes_.get(), backend->pods_.get(), backend->budgets_.get()}) {
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
  options.event_repeat = std::chrono::milliseconds(flags.event_repeat_ms);
  ASSIGN_OR_RETURN(auto backend,
                   KubernetesBackend::Open(std::move(options), kube::Environment::Process()));
  return std::unique_ptr<Backend>(std::move(backend));
}

Result<std::vector<Json>> KubernetesBackend::ListNodes() const {
  std::map<std::string, model::ResourceList, std::less<>> taken;
  {
    std::lock_guard lock(mu_);
    for (const auto& [uid, other] : others_) model::AddResources(taken[other.node], other.taken);
  }
  static const model::ResourceList kNothing;
  std::vector<Json> nodes;
  for (const auto& node : nodes_->List()) {
    auto it = taken.find(kube::RefOf(*node).name);
    nodes.push_back(kube::NodeAsScheduled(*node, it == taken.end() ? kNothing : it->second));
  }
  return nodes;
}

// On the client's thread: what a pod the store does not know takes from its node. gpupool's own
// pods are its tasks' (the store counts them), until they are being deleted: a terminating pod
// holds its node until it is gone, and its task no longer does.
void KubernetesBackend::CountOther(const Json& pod, bool ours, bool deleted) {
  const std::string uid = kube::RefOf(pod).uid;
  bool holds = !deleted && kube::ClassifyPod(pod) == kube::PodKind::kBound &&
               (!ours || At(pod, {"metadata", "deletionTimestamp"}).is_string());
  std::optional<model::ResourceList> taken;
  if (holds) {
    auto requests = kube::TakenByPod(pod);
    // A pod whose requests do not parse was admitted by the API server; count its slot at least.
    taken =
        requests.ok() ? *requests : model::ResourceList{{"pods", model::Quantity::FromUnits(1)}};
  }
  std::lock_guard lock(mu_);
  if (taken) {
    OtherPod other{kube::PodNodeName(pod), std::move(*taken)};
    auto it = others_.find(uid);
    if (it != others_.end() && it->second.node == other.node && it->second.taken == other.taken) {
      return;
    }
    others_[uid] = std::move(other);
    ++others_version_;
  } else if (others_.erase(uid) > 0) {
    ++others_version_;
  }
}

std::optional<std::string> KubernetesBackend::NodesVersion() const {
  const kube::InformerStats nodes = nodes_->Stats();
  std::lock_guard lock(mu_);
  return std::to_string(nodes.lists) + "/" + std::to_string(nodes.events) + "/" +
         std::to_string(others_version_);
}

// On the client's thread: the pod of each task attempt, for ReadLog.
void KubernetesBackend::TrackAttemptPod(const std::string& key, const Json& pod, bool deleted) {
  const kube::ObjectRef ref = kube::RefOf(pod);
  std::lock_guard lock(mu_);
  auto it = attempt_pods_.find(key);
  if (deleted) {
    if (it != attempt_pods_.end() && it->second.ref.uid == ref.uid) attempt_pods_.erase(it);
    return;
  }
  const bool pending = IsString(At(pod, {"status", "phase"}), "Pending");
  attempt_pods_[key] = {ref, OutputContainer(pod), !kube::PodNodeName(pod).empty() && !pending};
}

// On the client's thread: records how gpupool's pods end.
void KubernetesBackend::OnPod(const kube::ObjectPtr& pod, bool deleted,
                              const kube::ObjectPtr& before) {
  std::string key = Annotation(*pod, kube::kAttemptAnnotation);
  if (key.empty() && IsString(At(*pod, {"spec", "schedulerName"}), kube::kSchedulerName)) {
    return OnHandedIn(*pod, deleted, before.get());  // gpupool's to schedule, not a task's
  }
  CountOther(*pod, !key.empty(), deleted);
  if (key.empty()) return;
  TrackAttemptPod(key, *pod, deleted);
  if (EvictionSeen(key, *pod, deleted)) return;
  if (deleted && kube::PodNodeName(*pod).empty()) {
    // A pending task's pod, deleted before it was bound: made again when next reported. (A
    // launch in flight hears of it from its binding.)
    std::lock_guard lock(mu_);
    if (!running_.contains(key)) {
      unschedulable_->PodGone(key);
      return;
    }
  }
  kube::TaskObservation seen = kube::ObservePod(*pod);
  bool finished =
      seen.phase == kube::TaskPhase::kSucceeded || seen.phase == kube::TaskPhase::kFailed;
  if (!finished && !deleted) return;
  std::lock_guard lock(mu_);
  if (ended_.contains(key) || killed_.contains(key)) return;
  TaskExit exit;
  exit.key = key;
  exit.exit_code = finished ? seen.exit_code : kLostExitCode;
  exit.reason = finished ? seen.reason : "lost: its pod was deleted";
  exit.finished_ms = seen.finished_ms;
  ended_[key] = exit;
}

// One launch in flight.
struct KubernetesBackend::LaunchOp {
  TaskLaunch launch;
  Json pod;  // what to create
  kube::ObjectRef ref;
};

Status KubernetesBackend::Launch(const TaskLaunch& launch) {
  if (nodes_->Get(launch.node) == nullptr) {
    unschedulable_->Forget(launch.key, /*delete_pod=*/true);  // the task fails: its pod goes
    return InvalidArgumentError("kubernetes backend: the cluster has no node \"" + launch.node +
                                "\" for task " + launch.key);
  }
  auto op = std::make_shared<LaunchOp>();
  op->launch = launch;
  const std::string ns = launch.namespace_.empty() ? options_.namespace_ : launch.namespace_;
  op->pod = PodForTask(launch.pod, launch.key, ns);
  op->ref = {ns, op->pod["metadata"]["name"].get<std::string>(), ""};
  unschedulable_->Forget(launch.key, /*delete_pod=*/false);  // the launch binds its pod
  {
    std::lock_guard lock(mu_);
    auto it = running_.find(launch.key);
    if (it != running_.end() && it->second.node == launch.node) return OkStatus();
    running_[launch.key] = {op->ref, launch.node, false};
    killed_.erase(launch.key);  // an end seen before an adoption stays in ended_ for Poll
  }
  if (launch.adopt) {
    client_->Post([this, op] { Adopt(op, /*created_elsewhere=*/false); });
  } else {
    client_->Post([this, op] { Create(op); });
  }
  return OkStatus();
}

void KubernetesBackend::Create(const std::shared_ptr<LaunchOp>& op) {
  const std::string collection = "/api/v1/namespaces/" + op->ref.namespace_ + "/pods";
  client_->Send({"POST", collection, DumpJson(op->pod)},
                [this, op](Result<kube::Response> created) {
                  if (!created.ok()) return Failed(op, created.status().message());
                  if (created->ok()) {
                    op->ref = kube::RefOf(created->Json());
                    return Bind(op);
                  }
                  Status error = kube::ApiError(*created, "create pod " + op->ref.name);
                  // This attempt's pod exists (a retried launch, a restarted leader): adopt it if
                  // it is ours.
                  if (error.code() == StatusCode::kAlreadyExists)
                    return Adopt(op, /*created_elsewhere=*/true);
                  Failed(op, error.message());
                });
}

// Finds the attempt's pod: bound to our node already, or to be bound; gone = lost.
void KubernetesBackend::Adopt(const std::shared_ptr<LaunchOp>& op, bool created_elsewhere) {
  client_->Send({"GET", kube::PodPath(op->ref)},
                [this, op, created_elsewhere](Result<kube::Response> got) {
                  if (!got.ok()) return Failed(op, got.status().message());
                  if (got->status == 404) {
                    return Failed(op, created_elsewhere ? "its pod was deleted before it was bound"
                                                        : "lost: its pod is gone");
                  }
                  if (!got->ok())
                    return Failed(op, kube::ApiError(*got, "get " + op->ref.name).message());
                  Json pod = got->Json();
                  if (Annotation(pod, kube::kAttemptAnnotation) != op->launch.key) {
                    return Failed(op, "pod " + op->ref.namespace_ + "/" + op->ref.name +
                                          " exists and belongs to another task");
                  }
                  op->ref = kube::RefOf(pod);
                  std::string node = kube::PodNodeName(pod);
                  if (node.empty()) return Bind(op);
                  if (node == op->launch.node) return Placed(op);
                  Failed(op, "its pod is bound to " + node + ", not " + op->launch.node);
                });
}

void KubernetesBackend::Bind(const std::shared_ptr<LaunchOp>& op) {
  client_->Send(
      {"POST", kube::PodPath(op->ref, "binding"), kube::BindingText(op->ref, op->launch.node)},
      [this, op](Result<kube::Response> bound) {
        if (!bound.ok()) return Failed(op, bound.status().message());
        if (bound->ok()) return Placed(op);
        // Refused: fine if an earlier binding of ours put it on this node.
        if (bound->status == 409) return Adopt(op, /*created_elsewhere=*/true);
        Failed(op, kube::ApiError(*bound, "bind " + op->ref.name).message());
      });
}

void KubernetesBackend::Placed(const std::shared_ptr<LaunchOp>& op) {
  bool killed;
  {
    std::lock_guard lock(mu_);
    killed = killed_.contains(op->launch.key);
    auto it = running_.find(op->launch.key);
    if (!killed && it != running_.end()) {
      it->second.pod = op->ref;
      it->second.placed = true;
      if (!op->launch.adopt) started_.push_back(op->launch.key);
    }
  }
  if (killed) DeletePod(op->ref);  // canceled while we placed it
}

void KubernetesBackend::Failed(const std::shared_ptr<LaunchOp>& op, const std::string& reason) {
  bool killed;
  {
    std::lock_guard lock(mu_);
    const std::string& key = op->launch.key;
    killed = killed_.contains(key);
    if (!killed && !ended_.contains(key)) {
      ended_[key] = {key, kLostExitCode, 0, "kubernetes: " + reason};
    }
  }
  if (killed && !op->ref.uid.empty()) DeletePod(op->ref);  // created before the cancel
}

void KubernetesBackend::DeletePod(const kube::ObjectRef& pod) {
  client_->Send(
      {"DELETE", kube::PodPath(pod), DumpJson(kube::DeleteOptionsBody(pod, std::nullopt))},
      [](const Result<kube::Response>&) {
        // Gone already (404) is what we wanted; anything else the informer will show.
      });
}

Status KubernetesBackend::Kill(std::string_view key) {
  Task task;
  {
    std::lock_guard lock(mu_);
    auto it = running_.find(key);
    if (it == running_.end()) {
      // Never launched: the pod made while it was pending goes.
      unschedulable_->Forget(std::string(key), /*delete_pod=*/true);
      return OkStatus();
    }
    task = it->second;
    running_.erase(it);
    killed_.emplace(key);
    ended_.erase(std::string(key));
    std::erase(started_, key);
  }
  // A launch still in flight deletes its pod when it is placed (Placed).
  if (task.placed) DeletePod(task.pod);
  return OkStatus();
}

std::vector<std::string> KubernetesBackend::Started() {
  std::lock_guard lock(mu_);
  std::vector<std::string> started;
  started.swap(started_);
  return started;
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

void KubernetesBackend::ReportUnschedulable(const Unschedulable& report) {
  if (report.task_key.empty()) {
    const PodRef& pod = report.pod;
    unschedulable_->Report("pod:" + pod.namespace_ + "/" + pod.name,
                           {pod.namespace_, pod.name, pod.uid}, nullptr, report.message);
    return;
  }
  const std::string ns = report.namespace_.empty() ? options_.namespace_ : report.namespace_;
  static const Json kNoPod;
  const Json& rendered = report.task_pod != nullptr ? *report.task_pod : kNoPod;
  unschedulable_->Report(
      report.task_key, {ns, PodNameForAttempt(report.task_key), ""},
      [&] { return PodForTask(rendered, report.task_key, ns); }, report.message);
}

size_t KubernetesBackend::RunningCount() const {
  std::lock_guard lock(mu_);
  return running_.size();
}

}  // namespace gpupool::backend
