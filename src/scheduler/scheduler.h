#pragma once
// The gpupool scheduler: one cycle over a cluster snapshot, pure (no I/O, no clock, no
// randomness): the same snapshot and options always give the same decisions.
//
// A cycle (DESIGN section 4, KAI-Scheduler style):
//   0. Evict bound pods whose node has a NoExecute taint they do not tolerate (a gang that
//      drops below its gang-min goes whole). A pod that tolerates all of its node's NoExecute
//      taints but some only for tolerationSeconds (Kubernetes' taint manager: for each taint the
//      pod's first toleration that tolerates it; the smallest tolerationSeconds wins) has a
//      deadline: per taint, tolerationSeconds after the later of the taint's timeAdded (the
//      node's spec.taints[].timeAdded) and the pod's binding (ClusterSnapshot::bound_at_ms),
//      or after ClusterSnapshot::now_ms when neither is known; the earliest over the taints.
//      tolerationSeconds <= 0 means now (as Kubernetes). A pod whose deadline is at or before
//      now_ms (or immediate) is evicted (reason NoExecute, same gang rule); the others are
//      reported in CycleResult::no_execute_deadlines. Without now_ms, nothing positive expires.
//   1. Fair share per node pool and per resource (gpu, cpu, memory) over the queue tree
//      (fair_share.h). Demand of a queue in a node pool = its bound pods there + its pending pods
//      that list it in gpupool.io/node-pool (first choice or fallback: a pending pod asks in
//      each of its node pools, so a queue earns, and may reclaim, its deserved quota in a
//      fallback pool too).
//   2. Allocate: jobs (a single pod, or a gang: pods sharing label gpupool.io/gang in one queue,
//      all or nothing, at least gpupool.io/gang-min of them counting those already running) are
//      taken queue by queue, hierarchically as KAI does: the first top-level queue (department)
//      by rank, then the first of its children by rank, down to a leaf queue (project). Rank:
//      at or below its fair share first, then whose next job stays within its deserved quota (in
//      one of the job's node pools), then higher queue priority, then the smaller dominant
//      allocated/fairShare, then name (a department's allocation includes its projects'); inside
//      a queue by pod priority (desc), then age: metadata.creationTimestamp, older first; pods
//      without one after those with one; ties and the rest in snapshot order (a gang is as old
//      as its oldest pending pod). Each job tries its node pools
//      in order (gpupool.io/node-pool, comma list; none = "default"), checking quota (limit of the
//      queue and its parent; non-preemptible jobs, priority >= 100, only within deserved), then
//      places every pod (filters and scores below).
//   3. Reclaim, for jobs still pending whose queue stays within its fair share with the job:
//      evicts preemptible pods (priority < 100) of other queues that are above their fair share,
//      never taking a queue below its deserved quota; compared at every level below the queue
//      the two share (sibling projects; or teams, then their projects; or departments, then
//      their teams and projects): each of the victim's queues there must be above its fair
//      share and stay at or above its deserved quota, each of the reclaimer's must stay within
//      its fair share with the pod. Fewest victims first (then lowest priority, then node
//      order). A victim that belongs to a gang takes its whole gang with it: every member
//      running or placed earlier in the cycle must be evictable, and the deserved check adds up
//      what the gang holds in each node pool it runs in.
//   4. Preempt: inside one queue, a job evicts strictly lower-priority preemptible pods (for a
//      gang victim: all of its running members and those placed earlier in the cycle).
//   Evicted pods are reported in `evictions` and again as pending (requeued) in `unschedulable`;
//   they are not placed again in the same cycle. A gang member placed earlier in the cycle whose
//   gang is evicted never ran: it is left out of `bindings` (not evicted) and stays pending.
//   PodDisruptionBudgets (ClusterSnapshot::disruption_budgets, model/disruption_budget.h) bound
//   steps 3 and 4: a candidate victim whose eviction (with its gang, on top of the evictions
//   already decided in the cycle) would leave a budget short is passed over; it is reported in
//   `blocked_evictions`, and when the pending pod stays pending its reason says which pod the
//   budget kept ("; PodDisruptionBudget kept: pod web-1 on node n2 (PodDisruptionBudget web
//   ...)"). NoExecute evictions (step 0) are not voluntary and ignore budgets, as in Kubernetes.
//
// Placement of one pod, kube-scheduler semantics: filters in order NodeUnschedulable,
// TaintToleration (NoSchedule/NoExecute), NodeAffinity (nodeSelector + required affinity, via
// model/match.h), resource fit (every resource in the pod's effective requests, `pods`, and GPU
// devices: a whole-GPU pod needs that many free devices; a `gpupool.io/gpu-fraction` pod needs
// one device with that much left). Like kube-scheduler, once `percentage_of_nodes_to_score` of a
// node pool's nodes have been found feasible the search stops (rotating start). Scores (higher
// wins, ties to the node that sorts first by name): 2 x resource score of the policy (FGD, GPU
// packing or best fit) + PreferNoSchedule (fewer untolerated, 0..100) + preferred node affinity
// (0..100) + topology proximity to the gang's pods placed so far (pool topology_keys, 0..100).
// An unplaced pod gets a Kubernetes-style reason ("0/12 nodes are available: 8 node(s) had
// untolerated taint {nvidia.com/gpu: true}, 4 Insufficient nvidia.com/gpu.") or a quota reason,
// and an outcome (PlacementOutcome): unschedulable (it may fit later) or infeasible (it never
// will as things are).
//
// Code: cycle.h lists the files of a cycle's parts (setup, accounting state, queue order, node
// search, scorers, reasons, reclaim, NoExecute).
//
// Thread contract: a Scheduler is used by one thread at a time; RunCycle keeps no state between
// calls except the options.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/disruption_budget.h"
#include "model/k8s.h"
#include "model/node_pool.h"
#include "model/queue.h"

namespace gpupool::scheduler {

// Labels and annotations the scheduler reads from pods.
inline constexpr char kQueueLabel[] = "gpupool.io/queue";
inline constexpr char kNodePoolLabel[] = "gpupool.io/node-pool";
inline constexpr char kGangLabel[] = "gpupool.io/gang";
inline constexpr char kGangMinLabel[] = "gpupool.io/gang-min";
inline constexpr char kGpuFractionAnnotation[] = "gpupool.io/gpu-fraction";
inline constexpr char kGpuResource[] = "nvidia.com/gpu";
// Queue of pods without gpupool.io/queue; created implicitly (no quota) when not configured.
inline constexpr char kDefaultQueue[] = "default";
// Pods at or above this priority are not preemptible (and only use deserved quota).
inline constexpr int32_t kNonPreemptiblePriority = 100;

// The value of a gpupool.io/gang-min label: a whole number from 1 up, in digits (as a label value
// writes it), at most 2^63-1. A gang-min above the gang's size means the whole gang. Otherwise
// InvalidArgument: "expected a positive integer, got \"x\"".
Result<int64_t> ParseGangMin(std::string_view text);

enum class PlacementPolicy {
  kFgd,         // fragmentation gradient descent (Weng et al., ATC'23): least fragmentation growth
  kGpuPacking,  // fill partly used GPUs and GPU nodes first; CPU pods avoid GPU nodes
  kBestFit,     // least free cpu/memory/gpu left on the node (weighted by capacity)
  // The FGD paper's baselines, for comparisons (gpupool replay --protocol fgd):
  kRandom,      // a feasible node drawn at random
  kDotProduct,  // least dot product of the pod's cpu and GPUs with the node's free ones
};
std::string_view PlacementPolicyName(PlacementPolicy policy);
// fgd|gpu-packing|best-fit|random|dot-product
Result<PlacementPolicy> ParsePlacementPolicy(std::string_view name);

struct SchedulerOptions {
  PlacementPolicy policy = PlacementPolicy::kFgd;
  // kube-scheduler percentageOfNodesToScore: 0 = adaptive (50 - nodes/125 percent, at least 5%,
  // at least 100 nodes); 100 = look at every node.
  int percentage_of_nodes_to_score = 0;
  bool enable_reclaim = true;
  bool enable_preempt = true;
  // FGD: how many of the most popular GPU demands make the "typical workload"
  // (scorers/fragmentation.h).
  int fgd_task_types = 8;
  // Benchmarks only: time every allocation decision (a job) into CycleResult. Never changes a
  // decision.
  bool record_decision_latency = false;
};
Status Validate(const SchedulerOptions& options);

// Everything a cycle looks at. Pods with spec.nodeName are bound (they use capacity and quota);
// the others are pending. Age: a pod's metadata.creationTimestamp (PodScheduling::
// creation_timestamp); pods without one are younger, and among them (and for equal times) the
// order in `pods` is the arrival order (earlier = older).
struct ClusterSnapshot {
  std::vector<model::Node> nodes;
  std::vector<model::PodScheduling> pods;
  std::vector<model::Queue> queues;
  std::vector<model::NodePool> node_pools;
  // Time of the cycle, Unix milliseconds; 0 = not known (then only tolerationSeconds <= 0
  // evicts). Used for NoExecute deadlines only: the decisions do not depend on it otherwise.
  int64_t now_ms = 0;
  // When each bound pod was bound, Unix milliseconds, by PodKey; absent = not known.
  std::map<std::string, int64_t> bound_at_ms;
  // policy/v1 PodDisruptionBudgets: reclaim and preemption never evict a pod (with its gang) when
  // that would leave a budget selecting it with fewer healthy pods than it needs.
  std::vector<model::PodDisruptionBudget> disruption_budgets;
  // Seed 003's over-quota switch as ApplyClusterSettings left it (cluster_settings.h): false when
  // the queues' limits were capped at their deserved quota, so that the pending messages name
  // the switch rather than a limit nobody wrote.
  bool over_quota = true;
  // Which version of `nodes` and `node_pools` this is, for a ViewCache: a caller that keeps one
  // changes it whenever either changes (a node added, removed, relabelled, tainted, cordoned or
  // resized). 0 = not tracked: the view is built afresh.
  uint64_t nodes_generation = 0;
  // For a ViewCache too: an id per pod, parallel to `pods`, or empty (not tracked). A pod keeps
  // its id for as long as it stays the same, spec.nodeName included, and a changed, bound or
  // unbound or new pod gets an id never used before (0 = not tracked). A pod whose id the last
  // cycle on the same view saw is not resolved again (queue, node pools, requests, signature,
  // node): a replay's cycles see thousands of bound pods that did not change. Fastest when the
  // ids grow along `pods` (as a caller that appends arriving pods gives them); any order decides
  // the same.
  std::vector<uint64_t> pod_ids;
};

enum class EvictionReason { kReclaim, kPreempt, kNoExecute };
std::string_view EvictionReasonName(EvictionReason reason);  // reclaim | preempt | NoExecute

struct Binding {
  std::string pod;  // "name", or "namespace/name" outside namespace default
  std::string node;
  std::string node_pool;
  std::string queue;
  int gpu_device = -1;  // for a gpu-fraction pod: the shared device index, else -1

  bool operator==(const Binding&) const = default;
};

struct Eviction {
  std::string pod;
  std::string node;
  EvictionReason reason = EvictionReason::kReclaim;
  std::string message;  // e.g. "reclaimed by queue rnd-1 for pod train-3"

  bool operator==(const Eviction&) const = default;
};

// A running pod that reclaim or preemption would have evicted, passed over because a
// PodDisruptionBudget forbids it. JSON (scenario.h): {"pod", "node", "forPod", "message"}.
struct BlockedEviction {
  std::string pod;
  std::string node;
  std::string for_pod;  // the pending pod that needed the room
  std::string message;  // "PodDisruptionBudget web (minAvailable 2) allows 0 more disruptions: ..."

  bool operator==(const BlockedEviction&) const = default;
};

// A bound pod that tolerates its node's NoExecute taints only for a while (tolerationSeconds):
// it may stay until `deadline_ms`, then it is evicted (reason NoExecute).
// JSON (scenario.h): {"pod", "node", "taint": "key=value:NoExecute", "tolerationSeconds",
// "deadline": RFC 3339 UTC or null when no time is known}.
struct NoExecuteDeadline {
  std::string pod;
  std::string node;
  std::string taint;  // the taint whose toleration ends first, "key=value:NoExecute"
  int64_t toleration_seconds = 0;
  std::optional<int64_t> deadline_ms;  // Unix ms; nullopt: no timeAdded, binding time or now

  bool operator==(const NoExecuteDeadline&) const = default;
};

// What became of a pod in a cycle, for backends and the autoscaler: whether waiting can help.
//   kPlaced         bound in this cycle (CycleResult::bindings).
//   kUnschedulable  left pending, but it may fit later: once capacity or quota is freed (pods
//                   end or are evicted), or with more nodes like those of its node pools.
//   kInfeasible     left pending, and no waiting helps: on none of its node pools could a node
//                   host it even empty (as the nodes are: labels, taints, cordons, allocatable),
//                   or its request alone is beyond a limit of its queue (or, non-preemptible,
//                   beyond the queue's deserved quota), or the pod is malformed (unknown queue or
//                   node pool, bad annotation, ...); a gang whose pods that could fit are fewer
//                   than gang-min still needs is infeasible as a whole. A node of another shape
//                   (an autoscaler's new machine), a changed node or queue, or a fixed pod may
//                   help.
enum class PlacementOutcome { kPlaced, kUnschedulable, kInfeasible };
std::string_view PlacementOutcomeName(PlacementOutcome outcome);  // placed|unschedulable|infeasible

struct PendingPod {
  std::string pod;
  std::string reason;
  PlacementOutcome outcome = PlacementOutcome::kUnschedulable;  // never kPlaced

  bool operator==(const PendingPod&) const = default;
};

// Quota view of one queue in one node pool. gpu and cpu in milli-units, memory in bytes.
struct ResourceShare {
  int64_t deserved = 0;  // model::kUnlimited = unlimited
  int64_t fair_share = 0;
  int64_t allocated = 0;  // after this cycle's decisions
  int64_t limit = model::kUnlimited;
  // What the fair share was computed from (views explain it with fair_share.h's trace): the
  // queue's own demand (bound pods there plus pending pods that list the node pool) and its
  // resolved over-quota weight.
  int64_t demand = 0;
  int64_t over_quota_weight = 1;

  bool operator==(const ResourceShare&) const = default;
};
struct QueueShare {
  std::string queue;
  std::string node_pool;
  std::array<ResourceShare, model::kNumQuotaResources> resources;  // gpu, cpu, memory

  bool operator==(const QueueShare&) const = default;
};

// What a node pool holds of each resource (gpu and cpu in milli-units, memory in bytes): the sum of
// its nodes' allocatable, the capacity its fair shares divide.
struct NodePoolCapacity {
  std::string node_pool;
  std::array<int64_t, model::kNumQuotaResources> capacity{};

  bool operator==(const NodePoolCapacity&) const = default;
};

struct CycleResult {
  std::vector<Binding> bindings;          // in decision order
  std::vector<PendingPod> unschedulable;  // pending pods left unplaced (incl. requeued), by name
  std::vector<Eviction> evictions;        // in decision order
  std::vector<BlockedEviction> blocked_evictions;       // in decision order, each pair once
  std::vector<QueueShare> fair_share;                   // by queue name, then node pool name
  std::vector<NodePoolCapacity> node_pools;             // "default" first, then by name
  std::vector<NoExecuteDeadline> no_execute_deadlines;  // in snapshot order of the pods
  std::vector<int64_t> decision_latency_ns;             // with options.record_decision_latency

  bool operator==(const CycleResult&) const = default;
};

class ClusterView;
struct SetupMemo;

// What a cycle works on that the next cycle on the same nodes can take over: the node part of
// the view (while ClusterSnapshot::nodes_generation stays the same), the pods' setup and what
// binding left on each node (by ClusterSnapshot::pod_ids). A replay's cycles differ by a pod or
// two: rebuilding the view of 1,500 nodes was 78 % of each, then resolving ~8,000 unchanged bound
// pods 70 %, then binding them again 40 %.
// One caller at a time (not thread-safe). Decisions are the same with or without it.
class ViewCache {
 public:
  ViewCache();
  ~ViewCache();
  ViewCache(const ViewCache&) = delete;
  ViewCache& operator=(const ViewCache&) = delete;

  // The view for `snapshot`: the kept one, reset, when snapshot.nodes_generation is nonzero and
  // that of the last call; else built afresh (and kept).
  ClusterView& ViewFor(const ClusterSnapshot& snapshot);
  // What the setup keeps for the view ViewFor returned last (emptied when it is rebuilt).
  SetupMemo& memo() { return *memo_; }
  int64_t builds() const { return builds_; }  // how many times it was built (tests, benches)
  int64_t PodsTakenOver() const;              // by the setups since it was last built (tests)
  int64_t NodesTakenOver() const;  // nodes whose binding was taken over, likewise (tests)

 private:
  std::unique_ptr<ClusterView> view_;
  std::unique_ptr<SetupMemo> memo_;
  uint64_t generation_ = 0;
  int64_t builds_ = 0;
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerOptions options) : options_(options) {}

  // Decides one cycle. Never fails: bad pods (unknown queue, malformed gang-min) come back in
  // `unschedulable` with the reason. With `views`, the node part of the cycle's view is reused
  // while snapshot.nodes_generation stays the same, and the setup of pods whose
  // snapshot.pod_ids the last cycle saw.
  CycleResult RunCycle(const ClusterSnapshot& snapshot, ViewCache* views = nullptr) const;

  const SchedulerOptions& options() const { return options_; }

 private:
  const SchedulerOptions options_;
};

// The pod key used in results: name, or namespace/name outside namespace "default".
std::string PodKey(const model::PodScheduling& pod);

// The NoExecute verdict for a pod on a node (step 0 of a cycle; exposed for tests and callers
// that want the deadline without a cycle). Pointers point into `node.taints`.
struct NoExecuteVerdict {
  const model::Taint* untolerated = nullptr;  // a NoExecute taint no toleration tolerates
  bool bounded = false;    // some NoExecute taint is tolerated only for tolerationSeconds
  bool immediate = false;  // ... and one of them with tolerationSeconds <= 0
  const model::Taint* taint = nullptr;  // the taint whose toleration ends first
  int64_t toleration_seconds = 0;
  std::optional<int64_t> deadline_ms;  // Unix ms, when a time is known and not immediate
};
NoExecuteVerdict NoExecuteDeadlineOf(const model::PodScheduling& pod, const model::Node& node,
                                     std::optional<int64_t> bound_at_ms, int64_t now_ms);

// Unix milliseconds of an RFC 3339 time ("2026-11-22T01:02:03Z", fractional seconds and a
// +hh:mm / -hh:mm offset allowed); nullopt when malformed.
std::optional<int64_t> ParseTimestampMillis(std::string_view text);

// Priority: spec.priority if set, else priorityClassName high 125, normal 100, low 50, none 0.
Result<int32_t> PodPriority(const model::PodScheduling& pod);

}  // namespace gpupool::scheduler
