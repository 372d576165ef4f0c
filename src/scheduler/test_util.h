#pragma once
// Builders for scheduler tests: Kubernetes objects written as JSON and decoded by the model
// codecs, so tests exercise the same path as scenario files.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/k8s.h"
#include "model/node_pool.h"
#include "model/queue.h"
#include "scheduler/scheduler.h"

namespace gpupool::scheduler::testing {

using Json = nlohmann::ordered_json;

class NodeBuilder {
 public:
  // A copy of one node built once: the tests build nodes by the thousand (invariant_test.cc),
  // and constructing the object from nested initializer lists anew each time, unoptimised as
  // tests are compiled, took most of their time.
  explicit NodeBuilder(const std::string& name) : json_(Base()) {
    json_["metadata"]["name"] = name;
    json_["metadata"]["labels"]["kubernetes.io/hostname"] = name;
  }
  NodeBuilder& Cpu(const std::string& q) { return Alloc("cpu", q); }
  NodeBuilder& Memory(const std::string& q) { return Alloc("memory", q); }
  NodeBuilder& Gpus(int n) { return Alloc("nvidia.com/gpu", std::to_string(n)); }
  NodeBuilder& Alloc(const std::string& resource, const std::string& q) {
    json_["status"]["allocatable"][resource] = q;
    return *this;
  }
  NodeBuilder& Label(const std::string& k, const std::string& v) {
    json_["metadata"]["labels"][k] = v;
    return *this;
  }
  NodeBuilder& Taint(const std::string& key, const std::string& value, const std::string& effect) {
    Json t = {{"key", key}, {"effect", effect}};
    if (!value.empty()) t["value"] = value;
    json_["spec"]["taints"].push_back(t);
    return *this;
  }
  NodeBuilder& TaintAddedAt(const std::string& key, const std::string& value,
                            const std::string& effect, const std::string& time_added) {
    Taint(key, value, effect);
    json_["spec"]["taints"].back()["timeAdded"] = time_added;
    return *this;
  }
  NodeBuilder& Unschedulable() {
    json_["spec"]["unschedulable"] = true;
    return *this;
  }
  const Json& json() const { return json_; }
  model::Node Build() const {
    Result<model::Node> node = model::NodeFromJson(json_);
    EXPECT_TRUE(node.ok()) << node.status().ToString();
    return node.ok() ? *node : model::Node{};
  }

 private:
  static const Json& Base() {
    static const Json kBase = {
        {"apiVersion", "v1"},
        {"kind", "Node"},
        {"metadata", {{"name", ""}, {"labels", {{"kubernetes.io/hostname", ""}}}}},
        {"spec", Json::object()},
        {"status", {{"allocatable", {{"cpu", "32"}, {"memory", "256Gi"}, {"pods", "110"}}}}}};
    return kBase;
  }

  Json json_;
};

class PodBuilder {
 public:
  // A copy of one pod built once, as NodeBuilder's.
  explicit PodBuilder(const std::string& name) : json_(Base()) { json_["metadata"]["name"] = name; }
  Json& Requests() { return json_["spec"]["containers"][0]["resources"]["requests"]; }
  PodBuilder& Request(const std::string& resource, const std::string& q) {
    Requests()[resource] = q;
    return *this;
  }
  PodBuilder& Cpu(const std::string& q) { return Request("cpu", q); }
  PodBuilder& Memory(const std::string& q) { return Request("memory", q); }
  PodBuilder& Gpus(int n) {
    json_["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = n;
    return Request("nvidia.com/gpu", std::to_string(n));
  }
  PodBuilder& Label(const std::string& k, const std::string& v) {
    json_["metadata"]["labels"][k] = v;
    return *this;
  }
  PodBuilder& Annotation(const std::string& k, const std::string& v) {
    json_["metadata"]["annotations"][k] = v;
    return *this;
  }
  PodBuilder& Created(const std::string& rfc3339) {
    json_["metadata"]["creationTimestamp"] = rfc3339;
    return *this;
  }
  PodBuilder& Queue(const std::string& q) { return Label(kQueueLabel, q); }
  PodBuilder& NodePools(const std::string& pools) { return Label(kNodePoolLabel, pools); }
  PodBuilder& Gang(const std::string& name, int min = 0) {
    Label(kGangLabel, name);
    if (min > 0) Label(kGangMinLabel, std::to_string(min));
    return *this;
  }
  PodBuilder& Fraction(const std::string& f) { return Annotation(kGpuFractionAnnotation, f); }
  PodBuilder& Priority(int p) {
    json_["spec"]["priority"] = p;
    return *this;
  }
  PodBuilder& PriorityClass(const std::string& c) {
    json_["spec"]["priorityClassName"] = c;
    return *this;
  }
  PodBuilder& On(const std::string& node) {
    json_["spec"]["nodeName"] = node;
    return *this;
  }
  PodBuilder& Toleration(const Json& t) {
    json_["spec"]["tolerations"].push_back(t);
    return *this;
  }
  PodBuilder& Selector(const std::string& k, const std::string& v) {
    json_["spec"]["nodeSelector"][k] = v;
    return *this;
  }
  PodBuilder& NodeAffinity(const Json& a) {
    json_["spec"]["affinity"]["nodeAffinity"] = a;
    return *this;
  }
  Json& json() { return json_; }
  model::PodScheduling Build() const {
    Result<model::PodScheduling> pod = model::PodSchedulingFromJson(json_);
    EXPECT_TRUE(pod.ok()) << pod.status().ToString();
    return pod.ok() ? *pod : model::PodScheduling{};
  }

 private:
  static const Json& Base() {
    static const Json kBase = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", ""}}},
        {"spec",
         {{"containers",
           Json::array({{{"name", "main"},
                         {"image", "busybox"},
                         {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}}}})}}}};
    return kBase;
  }

  Json json_;
};

inline model::NodePool MakeNodePool(const std::string& name,
                                    std::vector<std::string> topology = {}) {
  model::NodePool pool;
  pool.name = name;
  pool.label_key = "node-pool";
  pool.label_value = name;
  pool.topology_keys = std::move(topology);
  return pool;
}

// GPU quota of a queue in node pools: {pool, deserved, limit, weight} in whole GPUs.
struct GpuQuota {
  std::string pool;
  double deserved = 0;
  double limit = -1;
  int64_t weight = 1;
};

inline model::Queue MakeQueue(const std::string& name, const std::string& parent,
                              const std::vector<GpuQuota>& quotas, int64_t priority = 0) {
  model::Queue queue;
  queue.name = name;
  queue.parent = parent;
  queue.priority = priority;
  for (const GpuQuota& q : quotas) {
    model::ResourceQuota& r = queue.resources[q.pool][model::QuotaResource::kGpu];
    r.deserved_milli = q.deserved < 0 ? model::kUnlimited : static_cast<int64_t>(q.deserved * 1000);
    r.limit_milli = q.limit < 0 ? model::kUnlimited : static_cast<int64_t>(q.limit * 1000);
    r.over_quota_weight = q.weight;
  }
  return queue;
}

inline const Binding* FindBinding(const CycleResult& result, const std::string& pod) {
  for (const Binding& b : result.bindings) {
    if (b.pod == pod) return &b;
  }
  return nullptr;
}

inline const PendingPod* FindPending(const CycleResult& result, const std::string& pod) {
  for (const PendingPod& p : result.unschedulable) {
    if (p.pod == pod) return &p;
  }
  return nullptr;
}

inline const QueueShare* FindShare(const CycleResult& result, const std::string& queue,
                                   const std::string& pool) {
  for (const QueueShare& s : result.fair_share) {
    if (s.queue == queue && s.node_pool == pool) return &s;
  }
  return nullptr;
}

}  // namespace gpupool::scheduler::testing
