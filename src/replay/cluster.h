#pragma once
// ReplayCluster: the cluster as the replay engine holds it between cycles (module-internal): the
// scheduler's snapshot (nodes, queues, node pools, and the pods of jobs that have arrived and not
// left, bound or pending), which job each pod belongs to, and the measurements taken from it.
//
// Pods stay in arrival order (the scheduler's age order for pods without a creation time, so an
// evicted pod keeps its place). Removing a job's pods only marks them; the snapshot is compacted
// the next time it is read, so a burst of completions costs one pass. Pod ids
// (ClusterSnapshot::pod_ids, so that the scheduler takes unchanged pods over from the last
// cycle): the pod's serial, the next one when it is added, in the high 32 bits, and how many
// times it was bound or unbound in the low 32 (a pod changes only by its binding, and cannot be
// rebound 2^32 times: each takes a cycle). The ids grow along the pods, so a pod is found by the
// position of its serial.
//
// Time: the engine's simulated milliseconds. The scheduler reads Unix milliseconds (0 means "not
// known"), so the snapshot's now_ms and bound_at_ms are shifted by kSimulationEpochMs.
//
// Thread contract: one thread.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "autoscaler/autoscaler.h"
#include "replay/metrics.h"
#include "replay/trace.h"
#include "scheduler/scheduler.h"

namespace gpupool::replay {

// 2026-01-01T00:00:00Z: simulated time 0 as the scheduler sees it.
inline constexpr int64_t kSimulationEpochMs = 1767225600000;

struct PoolMeasure {
  int64_t capacity_milli = 0;  // GPUs of the pool's nodes
  int64_t allocated_milli = 0;
  double fragmentation_milli = 0;
};

struct ClusterMeasure {
  std::map<std::string, PoolMeasure> node_pools;
  int64_t pending_gpu_milli = 0;
  std::map<std::string, int64_t> queue_allocated_milli;
  std::map<std::string, int> machine_pool_nodes;
};

// The pods of a job: one named after the job, or a gang `<job>-0` ... `<job>-<n-1>`.
std::vector<model::PodScheduling> PodsOfJob(const TraceJob& job);

class ReplayCluster {
 public:
  // `initial`: the scenario's nodes, queues, node pools and pods (bound or pending; they never
  // leave). The typical workload for the fragmentation measure comes from the trace's pods.
  ReplayCluster(const scheduler::ClusterSnapshot& initial, const Trace& trace);

  // The snapshot for a cycle (compacted first).
  const scheduler::ClusterSnapshot& snapshot();
  void SetNow(int64_t now_ms) { snapshot_.now_ms = kSimulationEpochMs + now_ms; }

  void AddJobPods(int job, const TraceJob& trace_job);
  void RemoveJobPods(int job);
  // The job of a pod bound or unbound by a cycle (-1 for scenario pods or unknown names).
  int Bind(const std::string& pod, const std::string& node);
  int Unbind(const std::string& pod);
  int JobOfPod(const std::string& pod) const;
  int pending_pods() const { return pending_pods_; }

  bool HasNoExecuteTaint();  // kept until the nodes change
  const model::Node* FindNode(const std::string& name) const;
  void UpsertNode(model::Node node);
  void RemoveNode(const std::string& name);
  // Hourly price of the machine-pool nodes, by machine pool (catalog prices by capacity type).
  // Kept until the nodes change (time advances far more often than nodes come and go); the
  // catalog must be the same on every call.
  const std::map<std::string, int64_t>& HourlyMicrosByMachinePool(
      const autoscaler::Catalog& catalog);

  std::vector<std::string> NodePoolNames() const;  // "default" and the scenario's, by name
  std::vector<std::string> QueueNames() const;     // "default" and the scenario's, by name

  ClusterMeasure Measure();

 private:
  struct PodInfo {
    int job = -1;
    int whole = 0;         // GPUs
    int32_t fraction = 0;  // milli-GPUs of one device
    int64_t cpu_milli = 0;
    int queue = 0;  // index into queue_names_
    bool removed = false;
    int64_t GpuMilli() const { return fraction > 0 ? fraction : int64_t{whole} * 1000; }
  };
  struct NodeInfo {
    int pool = 0;  // index into pool_names_
    int devices = 0;
    int64_t cpu_milli = 0;
    std::string machine_pool;  // "" when not a machine-pool node
  };

  void AddPod(model::PodScheduling pod, int job);
  int PositionOf(const std::string& pod) const;  // in snapshot_.pods, -1 when removed or unknown
  void Compact();
  void IndexNodes();
  PodInfo InfoOf(const model::PodScheduling& pod) const;

  scheduler::ClusterSnapshot snapshot_;
  std::vector<PodInfo> info_;                          // parallel to snapshot_.pods
  std::unordered_map<std::string, uint64_t> serials_;  // pod name -> serial, while not removed
  uint64_t next_serial_ = 1;
  std::vector<std::vector<std::string>> job_pods_;  // by job: pod names
  bool compact_needed_ = false;
  int pending_pods_ = 0;
  std::vector<std::string> pool_names_;
  std::vector<std::string> queue_names_;
  std::vector<NodeInfo> nodes_;
  std::unordered_map<std::string, int> node_index_;
  bool nodes_stale_ = true;
  std::optional<std::map<std::string, int64_t>> hourly_;  // nullopt: the nodes changed
  std::optional<bool> no_execute_;                        // nullopt: the nodes changed
  std::vector<TaskShape> shapes_;
};

}  // namespace gpupool::replay
