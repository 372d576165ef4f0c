#pragma once
// KubernetesBackend: today's Backend interface on a real cluster, through its API server
// (kube/client.h). A thin adapter: it runs what the scheduling loop decides and reports how it
// ended; the event-based backend contract that replaces this interface will carry the rest
// (docs/KUBERNETES.md, "What the adapter needs from the backend contract").
// The scheduling loop never waits on the API server (a rate-limited client can take seconds for
// a burst of launches, and a step longer than the leader lease loses it): Launch and Kill check
// what they can at once and leave the requests to the client's thread.
//   ListNodes  the cluster's nodes, from a node informer (list + watch), as gpupool places on
//              them (kube::NodeAsScheduled): each node's allocatable less what the bound pods
//              the store does not count take (other schedulers', DaemonSets', gpupool's pods
//              being deleted; from a pod informer on every pod), and not-ready nodes tainted.
//              The server's node sync reads them again every period.
//   Launch     refuses a node the cluster does not have (the task fails at launch); then, in the
//              background, creates the task's pod in its namespace (TaskLaunch::namespace_, else
//              KubernetesOptions::namespace_, default "gpupool"), named from the attempt key,
//              with spec.schedulerName "gpupool", restartPolicy Never, the gpupool.io labels of
//              the submission, app.kubernetes.io/managed-by=gpupool and the attempt in annotation
//              gpupool.io/attempt, and binds it to the loop's node through pods/binding. An
//              existing pod of the attempt is adopted; a binding refused because the pod is
//              already on that node counts as done. A task adopted after a restart
//              (TaskLaunch::adopt) whose pod is gone is not started again: it ends lost. Any
//              other failure (bound elsewhere, deleted, refused) ends the task with exit code -1
//              and the API server's answer as the reason: a task never runs twice.
//   Kill       deletes the pod in the background (UID precondition, its own grace period); a
//              launch still in flight deletes what it created.
//   ReportUnschedulable  a task or a pod handed in that the scheduler leaves pending: its pod
//              (created first for a task, unbound: OSMO's way) gets PodScheduled=False,
//              reason Unschedulable, with the scheduler's message, and a FailedScheduling Event
//              counted as kube-scheduler's recorder counts it (unschedulable_writer.h).
//   HandedInPods  pods others created with spec.schedulerName gpupool (KAI's way; a
//              Deployment's, a Job's, kubectl's), from the pod informer, as kube::PendingFromApi
//              reads them (queue from gpupool.io/queue, else "default"; gangs from gpupool.io/gang
//              scoped to the namespace, and gpupool.io/gang-min): pending ones (with the feature
//              gpupool does not evaluate, when they ask one), and bound ones, which hold their
//              node and may be victims (Evict). Their node's capacity is not reduced for them
//              (ListNodes): the scheduler counts them as pods.
//   BindPods   binds pods handed in through pods/binding (their UIDs in the bodies), a gang in
//              one command: refused whole when one of them is no longer pending here or a node
//              is unknown; sent, each pod counts as bound on its node until the informer shows
//              it (no double booking in between); a binding the API server refuses (409: bound
//              meanwhile, 404: deleted) puts the pod back to what the informer says (a 409
//              because an earlier request of ours bound it to that very node counts as done).
//              The API has no transaction over a gang's bindings and no unbind: a member
//              refused after others were accepted leaves those bound (they keep their nodes and
//              count towards the gang's gang-min), and the refusal is said, not dropped: a
//              FailedScheduling Event "Binding rejected: ..." on the refused pod, a Warning
//              Event GangPartlyBound on each member bound, a line in the server's log. The
//              members still pending are placed by the next cycles (kube_backend_handed_in.cc).
//   Evict      a victim of reclaim or preemption, a task's pod or a pod handed in (its UID as
//              the scheduler saw it): the DisruptionTarget=True condition
//              (PreemptionByScheduler) by a status patch, then POST pods/NAME/eviction (policy/v1,
//              the pod's UID as precondition), in the background (kInFlight). The task holds
//              its node until the informer shows the pod gone, then Poll reports it evicted (a
//              pod handed in is then no longer in HandedInPods: Kubernetes does not requeue a
//              pod; a Job's or ReplicaSet's controller makes a new one, handed in anew). A
//              429 (a PodDisruptionBudget allows no disruption now) or any other refusal leaves
//              the pod running: its DisruptionTarget goes back to False and RefusedEvictions
//              reports the API server's reason. A NoExecute eviction is not voluntary: the pod
//              is deleted (DeletionByTaintManager), as Kubernetes' taint manager does.
//   DisruptionBudgets  the cluster's policy/v1 PodDisruptionBudgets (an informer: list + watch),
//              each with its status as the cluster's disruption controller wrote it
//              (disruptionsAllowed, currentHealthy, desiredHealthy, expectedPods; a budget whose
//              status is missing or older than its spec allows none, as the eviction subresource
//              then refuses) and the bound pods gpupool may evict that its selector picks in its
//              namespace (no selector: none; `{}`: all), matched against the pods' own labels
//              (kube_backend_budgets.cc).
//   ReadLog    a task attempt's output is its pod's log: GET pods/NAME/log (the container named
//              by annotation kubectl.kubernetes.io/default-container, else the first), with
//              limitBytes = offset + max_bytes + 1 read from the start (kube_backend_logs.cc).
//   Started    launches whose pod is created and bound to its node (the pod exists on the
//              cluster: a leader killed before that launches the task again, and the create's
//              409 AlreadyExists adopts a pod made meanwhile);
//   Poll       gpupool's pods that ended (those with the attempt annotation): Succeeded ->
//              exit 0, Failed -> the container's exit code and reason (kube::ObservePod:
//              OOMKilled, Error, Evicted, ...), a pod deleted by someone else -> exit code -1,
//              "lost".
//
// Thread contract: Launch, Kill, Poll, Evict and RefusedEvictions from the scheduling loop's
// thread; ListNodes, RunningCount and ReadLog (which waits for the API server) from any thread
// but the client's; the informers' and requests' callbacks run on the client's thread.

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "backend/backend.h"
#include "backend/kubernetes/unschedulable_writer.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "kube/kubeconfig.h"
#include "kube/writes.h"
#include "model/quantity.h"

namespace gpupool::backend {

struct KubernetesOptions {
  kube::KubeconfigFlags kubeconfig;
  kube::ClientOptions client;  // QPS and burst: client-go's 5 and 10 unless raised
  std::string namespace_ = "gpupool";
  std::chrono::milliseconds sync_timeout{30000};  // for the first lists at start
  // A pod left pending with the same message gets its FailedScheduling Event counted again after
  // this long (kube-scheduler retries an unschedulable pod at least every five minutes).
  std::chrono::milliseconds event_repeat{60000};
};

// The exit code Poll reports for a pod that went without one (deleted by someone else, or
// failed without a container exit code, e.g. evicted by the kubelet).
inline constexpr int kLostExitCode = -1;

class KubernetesBackend final : public Backend {
 public:
  // Connects (kube::ResolveRestConfig), lists the nodes and gpupool's pods, and starts watching.
  static Result<std::unique_ptr<KubernetesBackend>> Open(KubernetesOptions options,
                                                         const kube::Environment& env);
  ~KubernetesBackend() override;

  std::string_view Kind() const override { return "kubernetes"; }
  Result<std::vector<nlohmann::ordered_json>> ListNodes() const override;
  std::optional<std::string> NodesVersion() const override;
  Status Launch(const TaskLaunch& launch) override;
  Status Kill(std::string_view key) override;
  std::vector<TaskExit> Poll(int64_t now_ms) override;
  // Pods are created and bound on the client's thread, after Launch returns.
  bool ReportsStarts() const override { return true; }
  std::vector<std::string> Started() override;
  size_t RunningCount() const override;
  void ReportUnschedulable(const Unschedulable& report) override;
  std::vector<std::shared_ptr<const HandedInPod>> HandedInPods() const override;
  Status BindPods(const std::vector<PodBinding>& gang) override;
  EvictionStart Evict(const TaskEviction& eviction) override;
  std::vector<RefusedEviction> RefusedEvictions() override;
  std::vector<ClusterDisruptionBudget> DisruptionBudgets() const override;
  Result<LogChunk> ReadLog(std::string_view key, int64_t offset, int64_t max_bytes) const override;
  Result<int32_t> ReadReplicas(const model::ScaleTarget& target) override;
  Status SetReplicas(const model::ScaleTarget& target, int32_t replicas,
                     const std::vector<std::string>& remove_nodes) override;

 private:
  // An eviction of the task's pod: asked (the condition or the eviction in flight), then
  // accepted (the pod is going; any end of it is the eviction's).
  enum class Eviction { kNone, kAsked, kAccepted };
  struct Task {
    kube::ObjectRef pod;  // uid "" until the pod is created or found
    std::string node;
    bool placed = false;  // created (or found) and bound
    Eviction eviction = Eviction::kNone;
    uint64_t eviction_id = 0;  // which Evict the answers belong to
  };
  // The pod of a task attempt as the informer shows it (for ReadLog).
  struct AttemptPod {
    kube::ObjectRef ref;
    std::string container;  // whose log is the task's output
    bool started = false;   // bound, and no longer Pending: its containers ran
  };
  struct LaunchOp;
  struct EvictionOp;

  KubernetesBackend(KubernetesOptions options, std::unique_ptr<kube::Client> client);
  // `before`: the pod as the informer held it before this update, or null.
  void OnPod(const kube::ObjectPtr& pod, bool deleted, const kube::ObjectPtr& before = nullptr);
  void CountOther(const nlohmann::ordered_json& pod, bool ours, bool deleted);
  // kube_backend_handed_in.cc
  void OnHandedIn(const nlohmann::ordered_json& pod, bool deleted,
                  const nlohmann::ordered_json* before);
  std::shared_ptr<const HandedInPod> BoundAsRead(const kube::ObjectRef& ref,
                                                 const nlohmann::ordered_json& pod,
                                                 const nlohmann::ordered_json& before) const;
  void TrackAttemptPod(const std::string& key, const nlohmann::ordered_json& pod, bool deleted);
  // A change of the pod of a task being evicted: true when the eviction accounts for it (the pod
  // is going: its end is reported as evicted once it is gone), so OnPod has nothing more to do.
  bool EvictionSeen(const std::string& key, const nlohmann::ordered_json& pod, bool deleted);
  // The background steps of a launch (on the client's thread).
  void Create(const std::shared_ptr<LaunchOp>& op);
  void Adopt(const std::shared_ptr<LaunchOp>& op, bool created_elsewhere);
  void Bind(const std::shared_ptr<LaunchOp>& op);
  void Placed(const std::shared_ptr<LaunchOp>& op);
  void Failed(const std::shared_ptr<LaunchOp>& op, const std::string& reason);
  void DeletePod(const kube::ObjectRef& pod);
  // Eviction steps (kube_backend_evictions.cc), on the client's thread.
  void MarkDisruptionTarget(const std::shared_ptr<EvictionOp>& op);
  void SendEviction(const std::shared_ptr<EvictionOp>& op);
  EvictionStart EvictHandedIn(const TaskEviction& eviction);
  // The eviction state `op` belongs to (a task's or a pod's), nullptr when it is stale (the task
  // killed or ended, the pod gone, another eviction since). Under mu_.
  Eviction* EvictionStateOf(const EvictionOp& op);
  void EvictionAccepted(const EvictionOp& op);
  void EvictionRefused(const EvictionOp& op, const std::string& reason);
  // Bindings of pods handed in (kube_backend_handed_in.cc), on the client's thread.
  void BindingRefused(const std::vector<PodBinding>& gang, size_t member, const std::string& why);
  void RecordEvent(const kube::ObjectRef& pod, const std::string& reason,
                   const std::string& message);

  const KubernetesOptions options_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<kube::Informer> nodes_;
  std::unique_ptr<kube::Informer> pods_;
  std::unique_ptr<kube::Informer> budgets_;  // policy/v1 PodDisruptionBudgets
  std::unique_ptr<UnschedulableWriter> unschedulable_;

  mutable std::mutex mu_;
  std::map<std::string, Task, std::less<>> running_;    // launched, not yet reported, by key
  std::map<std::string, TaskExit, std::less<>> ended_;  // seen ending, by key
  std::set<std::string, std::less<>> killed_;           // deleted by Kill: not reported
  std::vector<std::string> started_;  // launches placed (created and bound), for Started
  // Bound pods the store does not count (other schedulers', DaemonSets', gpupool's being
  // deleted), by UID: what each takes from its node.
  struct OtherPod {
    std::string node;
    model::ResourceList taken;
  };
  std::map<std::string, OtherPod, std::less<>> others_;
  int64_t others_version_ = 0;  // bumped whenever others_ changes (NodesVersion)
  // Pods handed in (spec.schedulerName gpupool, not a task's), pending or bound, by UID, each
  // with the order in which the informer first showed it (HandedInPods lists them in it); and
  // the bindings sent for them that the informer has not shown yet (UID -> node). Hashed: at
  // 20,000 pods a tree's lookups by 36-character UID missed the cache at each level (4 % of
  // gpupool's CPU per bind).
  struct HandedInEntry {
    uint64_t arrival = 0;
    std::shared_ptr<const HandedInPod> pod;
    // While a binding sent for it is not shown (binding_): the pod on that node, made from `pod`
    // once per binding (SyncSent), so that each step gets the same object (the loop keeps the
    // scheduler's reading of an unchanged object, controller::HandedInMemo) and no copy; the
    // binding shown, it becomes `pod` (BoundAsRead).
    std::shared_ptr<const HandedInPod> sent;
  };
  std::unordered_map<std::string, HandedInEntry> handed_in_;
  uint64_t next_arrival_ = 0;
  std::map<std::string, std::string, std::less<>> binding_;
  // HandedInEntry::sent in line with binding_ and the entry's pod, for `uid`. Under mu_.
  void SyncSent(const std::string& uid);
  // Evictions the cluster refused, not yet reported; the pods of task attempts, by key.
  std::vector<RefusedEviction> refused_;
  uint64_t next_eviction_id_ = 1;
  // Evictions of pods handed in, by UID (the informer forgets them with the pod).
  struct PodEviction {
    Eviction state = Eviction::kNone;
    uint64_t id = 0;
  };
  std::map<std::string, PodEviction, std::less<>> pod_evictions_;
  std::map<std::string, AttemptPod, std::less<>> attempt_pods_;
  kube::EventRecorder events_;  // the client's thread only: Events beside FailedScheduling
};

// OpenBackend's "kubernetes" (the process's environment for the in-cluster configuration).
Result<std::unique_ptr<Backend>> OpenKubernetesBackend(const KubernetesFlags& flags);

// The pod name of a task attempt: its parts as a DNS label, and a hash of the key so that two
// keys never share a name (at most 63 characters).
std::string PodNameForAttempt(std::string_view key);

// The pod gpupool creates for a task: `pod` as the submission rendered it, made gpupool's.
nlohmann::ordered_json PodForTask(const nlohmann::ordered_json& pod, std::string_view key,
                                  const std::string& namespace_);

}  // namespace gpupool::backend
