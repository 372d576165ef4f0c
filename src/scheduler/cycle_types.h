#pragma once
// The records the parts of a scheduling cycle share (module-internal: only src/scheduler/
// includes this header). Everything is indexed by position: a pod by its index in
// ClusterSnapshot::pods, a queue by its rank in name order, nodes and node pools as ClusterView
// numbers them, a job by its index in the cycle's job list, a gang by first appearance in the
// snapshot. The setup (cycle_setup.h) fills the fields of a PodState above "Placement"; after
// it, CycleState (cycle_state.h) alone changes the fields below, and the rest only reads them.
//
// Quota amounts (QuotaVector) are in the quota units of model::QuotaResource order: gpu in
// milli-GPUs, cpu in millicores, memory in bytes.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/k8s.h"
#include "model/queue.h"
#include "scheduler/scheduler.h"

namespace gpupool::scheduler {

inline constexpr int kQ = model::kNumQuotaResources;
inline constexpr int kGpuQ = 0;
inline constexpr int kCpuQ = 1;
inline constexpr int kMemQ = 2;

using QuotaVector = std::array<int64_t, kQ>;

struct PodState {
  const model::PodScheduling* pod = nullptr;
  std::string key;
  int queue = -1;
  int32_t priority = 0;
  bool preemptible = true;
  int arrival = 0;                    // age rank among all pods, 0 = oldest
  std::optional<int64_t> created_ms;  // metadata.creationTimestamp
  // Node pools in preference order (gpupool.io/node-pool; none: the default pool); views
  // CycleSetup::pool_lists or a constant.
  std::span<const int> pools;
  int gang = -1;
  int signature = -1;                        // ClusterView::Signature
  int shape = -1;                            // equal requests (resources and GPUs) share a shape
  std::vector<std::pair<int, int64_t>> req;  // nonzero (dim, amount), by dim
  int64_t cpu_req = 0, mem_req = 0;          // the cpu and memory amounts of req (0 if absent)
  int gpu_whole = 0;
  int32_t gpu_fraction = 0;  // milli, 0 < f < 1000
  QuotaVector quota{};
  std::string error;      // set when the pod cannot be considered at all
  int binding_node = -1;  // the node of spec.nodeName; -1 when unbound or not in the snapshot

  // Placement (CycleState). A pod taken over from the last cycle has these reset as a new
  // PodState has them (cycle_setup.cc, TakeOver): a field added here is reset there too.
  int node = -1;
  std::vector<int> devices;
  bool bound_initially = false;  // bound before the cycle, to a node of the snapshot
  bool evicted = false;
  bool placed_now = false;  // placed in this cycle (and not withdrawn)
  int placed_pool = -1;
  EvictionReason evict_reason = EvictionReason::kReclaim;
  std::string evict_message;
  int last_node = -1;  // node before an eviction, for rollback
  std::string reason;  // why it is still pending
};

struct QueueState {
  std::string name;
  const model::Queue* config = nullptr;  // nullptr for the implicit default queue
  int parent = -1;
  int64_t priority = 0;
  bool has_children = false;
};

// A unit of allocation: a single pending pod, or the pending pods of a gang (all or nothing,
// at least `need` of them).
struct Job {
  std::vector<int> pods;  // pending pods, in order
  int queue = -1;
  int gang = -1;
  std::string gang_name;
  int need = 1;  // pods that must be placed for success
  int gang_min = 0;
  int32_t priority = 0;
  int arrival = 0;             // of its oldest pending pod
  QuotaVector quota{};         // sum over the job's pending pods
  std::span<const int> pools;  // the node pools its pods list (those of its first pod)
};

// Gangs: pods sharing gpupool.io/gang in one queue and namespace.
struct Gangs {
  std::vector<std::vector<int>> members;  // all pods of each gang (bound and pending)
  std::vector<int> min;                   // gang-min of each gang
};

// A quota amount as users write it: "4" GPUs, "500m" cpu, "64Gi" memory.
std::string FormatQuota(int r, int64_t amount);

}  // namespace gpupool::scheduler
