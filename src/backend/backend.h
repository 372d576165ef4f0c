#pragma once
// Backend: one cluster that runs work. The server's scheduling loop decides where a task goes;
// the backend runs it there and reports when it ends. Implementations: sim/ (simulated nodes),
// slurm/ (a Slurm cluster through slurmrestd), kubernetes/ (a cluster's API server).
//
// The contract between the loop and a backend, as commands in and events out:
//   in   Launch      run task T on node N (its rendered pod, namespace, timeout; adopt = find it,
//                    never start it twice);
//        Kill        stop task T, or drop what a backend made for it while it was pending;
//        ReportUnschedulable  task T or handed-in pod P stays pending, and why (the scheduler's
//                    message): a backend that can show it on the cluster does (Kubernetes: the
//                    pod's PodScheduled=False condition and a FailedScheduling Event), writing
//                    only what changed; the loop calls it every cycle for every pod it leaves
//                    pending, and Kill for a reported task that ends without being launched;
//        BindPods    place pods handed in by others (not tasks) on nodes, a gang all together;
//        Evict       task T, or a bound pod P handed in, is a victim of reclaim, preemption or (a
//                    task only) a NoExecute taint: stopped at once (sim, Slurm: the loop Kills
//                    it), or asked of the cluster (Kubernetes' Eviction API), which may take the
//                    pod's grace period or refuse (429: a PodDisruptionBudget);
//   out  Started     tasks launched that are on the cluster now (backends whose Launch returns
//                    before that: ReportsStarts);
//        Poll        tasks that ended (exit code, reason), or that an eviction asked of the
//                    cluster stopped (TaskExit::evicted: requeue, not exit actions);
//        RefusedEvictions  evictions the cluster refused: the task keeps running;
//        ListNodes   the cluster's nodes;
//        HandedInPods  pods others created for gpupool to place (pending) or that it placed
//                    (bound), with no workflow in the store; a victim among them is evicted once
//                    it is no longer listed;
//        DisruptionBudgets  the cluster's PodDisruptionBudgets, as its disruption controller
//                    counts them, and the pods each selects, so that the scheduler picks victims
//                    a budget allows.
// The defaults of ReportUnschedulable, BindPods and HandedInPods are for backends where all work
// comes as workflows and nothing shows a reason (sim, Slurm).
//
// Thread contract: a Backend is used by one thread at a time (the scheduling loop); ListNodes and
// ReadLog may be called from any thread.

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/k8s.h"
#include "model/scale_target.h"

namespace gpupool::backend {

// One task to start on a node. `key` identifies the attempt ("<workflow>/<group>/<task>/<retry>")
// and makes Launch idempotent, so a restarted leader can re-adopt tasks that were running.
struct TaskLaunch {
  std::string key;
  std::string node;
  int64_t start_ms = 0;     // when the task started (the store's record, not "now")
  int64_t duration_ms = 0;  // simulated run time (workflow field `sim_duration`)
  int exit_code = 0;        // simulated exit code (workflow field `sim_exit_code`)
  // For backends that run tasks for real: the task's rendered Pod, its exec timeout, and whether
  // the task was already running under an earlier leader (find it; never start it again).
  nlohmann::ordered_json pod;
  std::optional<int64_t> exec_timeout_ms;
  bool adopt = false;
  // Kubernetes: the namespace of the pool's pods, from its BACKEND config's k8s_namespace ("" =
  // the backend's default).
  std::string namespace_;
};

struct TaskExit {
  std::string key;
  int exit_code = 0;
  int64_t finished_ms = 0;
  std::string reason;  // why it ended, when the backend knows more than the exit code ("" = none)
  // Ended by an eviction Evict started (EvictionStart::kInFlight): its pod is gone and its room
  // free; the loop requeues the task rather than apply its exit actions.
  bool evicted = false;
};

// A pod gpupool did not create for a task (Kubernetes: a pod with spec.schedulerName gpupool,
// created by anyone).
struct PodRef {
  std::string namespace_;
  std::string name;
  std::string uid;
};

// Where the contract speaks of task keys (TaskEviction, RefusedEviction), a pod handed in is
// "pod:NAMESPACE/NAME/UID": a pod made again under the same name is another.
std::string HandedInKey(const PodRef& pod);

// A running task, or a bound pod handed in, that the scheduler evicts (Backend::Evict).
struct TaskEviction {
  std::string key;      // the task attempt's, or HandedInKey(pod)
  std::string reason;   // scheduler::EvictionReasonName: "reclaim", "preempt", "NoExecute"
  std::string message;  // the scheduler's, e.g. "reclaimed by queue rnd-1 for pod train-3"
  // Reclaim and preemption are voluntary disruptions: a PodDisruptionBudget may refuse them. A
  // NoExecute taint's eviction is not (Kubernetes' taint manager deletes the pod).
  bool voluntary = true;
  PodRef pod;  // a pod handed in (uid set); empty for a task
};

enum class EvictionStart {
  kStopped,   // nothing to wait for: the loop stops the task (Kill) and its room is free now
  kInFlight,  // asked of the cluster: the task runs until Poll reports it evicted
              // (TaskExit::evicted) or RefusedEvictions reports the refusal
};

// An eviction the cluster refused; the task keeps running.
struct RefusedEviction {
  std::string key;
  std::string reason;  // e.g. "The disruption budget web needs 2 healthy pods and has 2 currently"
};

// Why a task, or a pod handed in, stays pending (Backend::ReportUnschedulable).
struct Unschedulable {
  std::string task_key;  // a task attempt's key; "" for a pod handed in
  // The task's rendered pod and its pool's namespace, for a backend that must first create the
  // pod to say why on it. Valid during the call only.
  const nlohmann::ordered_json* task_pod = nullptr;
  std::string namespace_;
  PodRef pod;  // the pod handed in (task_key "")
  std::string message;
};

// A pod handed in by others, as the scheduler reads it: pending (pod.node_name empty) or bound
// (it holds its node, and may be a victim of reclaim or preemption as a task is). `unsupported`
// names what a pending pod asks that gpupool does not evaluate (it must stay pending with that
// message, never be placed as if the constraint were absent).
struct HandedInPod {
  PodRef ref;
  model::PodScheduling pod;
  std::string unsupported;
};

// A policy/v1 PodDisruptionBudget of the cluster (Backend::DisruptionBudgets): its rule, what
// its status says (the disruption controller counts every pod it selects, gpupool's or not),
// and the pods it selects that gpupool may evict: tasks by attempt key, pods handed in by
// HandedInKey.
struct ClusterDisruptionBudget {
  std::string namespace_;
  std::string name;
  std::string rule;                 // "minAvailable 2", "maxUnavailable 25%"
  int64_t disruptions_allowed = 0;  // status.disruptionsAllowed
  int64_t current_healthy = 0;      // status.currentHealthy
  int64_t desired_healthy = 0;      // status.desiredHealthy
  int64_t expected_pods = 0;        // status.expectedPods
  std::vector<std::string> selects;
};

// One pod handed in, to bind to a node.
struct PodBinding {
  PodRef pod;
  std::string node;
};

// A piece of one task attempt's output (Backend::ReadLog): `data` is bytes [offset, offset +
// data.size()) of the output as written so far, which is `size` bytes long.
struct LogChunk {
  int64_t offset = 0;
  int64_t size = 0;
  std::string data;
};

// How to reach a Kubernetes API server (`gpupool serve --kubeconfig --context --kube-qps
// --kube-burst --kube-namespace`).
struct KubernetesFlags {
  std::string kubeconfig;  // "" = in-cluster, else $KUBECONFIG, else ~/.kube/config
  std::string context;
  double qps = 5;  // client-go's defaults
  int burst = 10;
  std::string namespace_ = "gpupool";  // for pools whose BACKEND config names none
  int64_t event_repeat_ms = 60000;     // a pending pod's FailedScheduling Event counted again
};

// Options of backends that talk to a real cluster (`gpupool serve --slurm-*`, `--kube*`).
struct BackendOptions {
  std::string slurm_jwt_file;    // token when $SLURM_JWT is unset
  std::string slurm_user;        // "" = the OS user
  std::string slurm_output_dir;  // where each task's job writes its output ("" = /tmp)
  std::string slurm_partition;   // "" = each node's default
  KubernetesFlags kubernetes;
  // Labels every node of the cluster carries (Slurm; `gpupool serve --backend config:NAME` sets
  // gpupool.io/backend=NAME, so the pools naming that BACKEND, and only those, run there).
  std::map<std::string, std::string> node_labels;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "sim", "slurm", "kubernetes".
  virtual std::string_view Kind() const = 0;

  // The cluster's nodes as Kubernetes v1 Node objects.
  virtual Result<std::vector<nlohmann::ordered_json>> ListNodes() const = 0;

  // Starts (or re-adopts, when the key is already running) a task. kInvalidArgument for an unknown
  // node.
  virtual Status Launch(const TaskLaunch& launch) = 0;

  // Stops a running task; unknown keys are ignored (it may have ended already).
  virtual Status Kill(std::string_view key) = 0;

  // Tasks that ended at or before now_ms, each reported exactly once, ordered by end time.
  virtual std::vector<TaskExit> Poll(int64_t now_ms) = 0;

  // Tasks started and not yet reported by Poll.
  virtual size_t RunningCount() const = 0;

  // The scheduling loop has made this step's Launch calls. A backend that sends launches to the
  // cluster in batches (Slurm: one job array per node) takes the step's launches together from
  // here, before the step writes them to the store. Default: nothing (each Launch acts at once).
  virtual void LaunchesDone() {}

  // Said by the scheduling loop at each step: whether its next step follows at once and may
  // launch more (this step placed tasks: the rest of a burst of submissions may be placed next).
  // True comes before the step's launches, false after its LaunchesDone, so a step's own launches
  // always find the batch open. A backend that sends a step's launches as one batch (Slurm: a
  // burst behind one gate) may keep the batch open for the next step's, for a bounded time;
  // false releases it. Default: nothing to keep open.
  virtual void MoreLaunchesMayFollow(bool may) { (void)may; }

  // Whether Launch returns before the task is on the cluster (Slurm: its job submitted by a
  // worker; Kubernetes: its pod created and bound by the client thread). Such a backend says
  // through Started when it is, and the loop keeps the task SCHEDULED until then, so that a task
  // RUNNING in the store always exists on the cluster: a leader that dies in between launches
  // it again (idempotent by the key: the job or pod is found) instead of adopting a task that
  // was never started. false (the default): on the cluster when Launch returns.
  virtual bool ReportsStarts() const { return false; }

  // Tasks launched (not adopted) that are on the cluster now, since the last call, each once. A
  // launch the cluster refused is not here: Poll reports it ended. Kill forgets a key not yet
  // reported.
  virtual std::vector<std::string> Started() { return {}; }

  // A token that changes whenever ListNodes' answer may have changed (a node event, a change in
  // what other pods take); the node sync lists only when it moved. nullopt: not known, so the
  // sync lists every period. At 5,000 nodes, listing them unchanged every period was half of an
  // idle server's CPU.
  virtual std::optional<std::string> NodesVersion() const { return std::nullopt; }

  // The nodes the control plane knows now (the store's: imported over the API, or launched by a
  // machine pool), given by the scheduling loop every step. A real cluster reports its own nodes
  // and ignores this; the simulated cluster runs tasks on its file's nodes and these.
  virtual void SetKnownNodes(const std::vector<std::string>& names) { (void)names; }

  // Shows on the cluster why a task or a pod handed in stays pending. Called every cycle for
  // every such pod: a backend writes only when the message changed (and may repeat it now and
  // then, as a scheduler's Events repeat). Default: nothing to show.
  virtual void ReportUnschedulable(const Unschedulable& report) { (void)report; }

  // Pods handed in by others: pending ones for the scheduler to place, and those it placed that
  // still hold their node. Default: none (all work comes as workflows). Shared, not copied: the
  // loop asks every step, and the bound ones, which are most of them, rarely change (copying
  // 20,000 of them took a fifteenth of gpupool's CPU per bind in the Kubernetes benchmark).
  virtual std::vector<std::shared_ptr<const HandedInPod>> HandedInPods() const { return {}; }

  // Binds pods handed in, all or none: kFailedPrecondition when one of them is no longer there
  // to bind (deleted, bound by someone else, another UID) or a node is unknown, and then none is
  // bound. Default: kFailedPrecondition (no pods are handed in).
  virtual Status BindPods(const std::vector<PodBinding>& gang);

  // Evicts a running task, or a bound pod handed in (TaskEviction::pod), for the scheduler.
  // kStopped: the loop stops a task now as any other (Kill), and takes its room as free. kInFlight:
  // the backend asked the cluster, which may take time (the pod's grace period) or refuse (a
  // PodDisruptionBudget): the task holds its node until Poll reports it with TaskExit::evicted, or
  // RefusedEvictions reports the refusal (it then keeps running). A Kill meanwhile cancels the
  // eviction (neither is reported). A pod handed in has no exit to report: once evicted it is no
  // longer in HandedInPods (Kubernetes does not requeue a pod; a Job's or ReplicaSet's controller
  // makes a new one, handed in anew). Default: kStopped, doing nothing (the loop's Kill stops a
  // task).
  virtual EvictionStart Evict(const TaskEviction& eviction) {
    (void)eviction;
    return EvictionStart::kStopped;
  }

  // Evictions started with kInFlight that the cluster refused since the last call, each once.
  virtual std::vector<RefusedEviction> RefusedEvictions() { return {}; }

  // The cluster's PodDisruptionBudgets that select a task's pod or a pod handed in. Default:
  // none (gpupool's POD_DISRUPTION_BUDGET configs are the only budgets).
  virtual std::vector<ClusterDisruptionBudget> DisruptionBudgets() const { return {}; }

  // Up to `max_bytes` of the output of attempt `key` (stdout and stderr as the task wrote them)
  // from byte `offset`. kNotFound when the attempt has written nothing (yet); an offset past the
  // end gives an empty chunk. A backend that keeps no output (the simulated cluster runs no
  // processes) answers kFailedPrecondition saying so. May be called from any thread.
  virtual Result<LogChunk> ReadLog(std::string_view key, int64_t offset, int64_t max_bytes) const;

  // Machine pools whose nodes the cluster makes (a MACHINE_POOL's scale_target: a MachineSet or a
  // MachineDeployment, model/scale_target.h). ReadReplicas answers the target's spec.replicas;
  // SetReplicas first marks the Machine of each of `remove_nodes` for deletion (so that the
  // cluster's machine controller removes those and not others), then sets spec.replicas, both
  // through the API (the scale subresource). kFailedPrecondition when a node to remove does not
  // name its Machine (nothing is changed then). Default: kFailedPrecondition (a simulated cluster's
  // machine pools are simulated by the scheduling loop itself; Slurm has no machine pools).
  virtual Result<int32_t> ReadReplicas(const model::ScaleTarget& target);
  virtual Status SetReplicas(const model::ScaleTarget& target, int32_t replicas,
                             const std::vector<std::string>& remove_nodes);
};

// Opens a backend from its command-line spec: "sim:CLUSTER_FILE" (a file or a directory of
// JSON/YAML Node manifests), "slurm:http://HOST:PORT" / "slurm:unix:PATH" (slurmrestd; see
// backend/slurm/slurm_backend.h), or "kubernetes" (backend/kubernetes/kube_backend.h).
Result<std::unique_ptr<Backend>> OpenBackend(std::string_view spec,
                                             const BackendOptions& options = {});

}  // namespace gpupool::backend
