#include "model/k8s.h"

#include <gtest/gtest.h>

namespace gpupool::model {
namespace k8s_test {

using nlohmann::ordered_json;

std::string Requests(const ResourceList& list) {
  std::string out;
  for (const auto& [name, q] : list) {
    if (!out.empty()) out += " ";
    out += name + "=" + q.ToString();
  }
  return out;
}

TEST(PodRequestsTest, ComputesAsKubeScheduler) {
  struct Case {
    std::string name;
    std::string pod;
    std::string requests;
  };
  const Case cases[] = {
      {"no spec", R"({"metadata": {"name": "p"}})", ""},
      {"one container",
       R"({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "500m",
           "memory": "1Gi"}}}]}})",
       "cpu=500m memory=1Gi"},
      {"containers sum",
       R"({"spec": {"containers": [
           {"name": "a", "resources": {"requests": {"cpu": "500m", "nvidia.com/gpu": 1}}},
           {"name": "b", "resources": {"requests": {"cpu": "1.5", "memory": "512Mi"}}}]}})",
       "cpu=2 memory=512Mi nvidia.com/gpu=1"},
      {"limits stand in for missing requests",
       R"({"spec": {"containers": [{"name": "a", "resources": {
           "requests": {"cpu": "250m"},
           "limits": {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": "4"}}}]}})",
       "cpu=250m memory=2Gi nvidia.com/gpu=4"},
      {"limits only",
       R"({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": 1}}}]}})",
       "cpu=1"},
      {"init container larger than containers",
       R"({"spec": {
           "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "4", "memory": "1Gi"}}}],
           "containers": [{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "4Gi"}}}]}})",
       "cpu=4 memory=4Gi"},
      {"init containers are a max, not a sum",
       R"({"spec": {
           "initContainers": [
             {"name": "i1", "resources": {"requests": {"cpu": "2"}}},
             {"name": "i2", "resources": {"requests": {"cpu": "3"}}}],
           "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}})",
       "cpu=3"},
      {"overhead is added",
       R"({"spec": {"overhead": {"cpu": "250m", "memory": "120Mi"},
           "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
           "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}})",
       "cpu=2250m memory=120Mi"},
      {"sidecar adds to containers",
       R"({"spec": {
           "initContainers": [{"name": "s", "restartPolicy": "Always",
                               "resources": {"requests": {"cpu": "500m"}}}],
           "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}})",
       "cpu=1500m"},
      {"init container after a sidecar needs the sidecar too",
       R"({"spec": {
           "initContainers": [
             {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
             {"name": "i", "resources": {"requests": {"cpu": "3"}}}],
           "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}})",
       "cpu=4"},
      {"init container before a sidecar does not",
       R"({"spec": {
           "initContainers": [
             {"name": "i", "resources": {"requests": {"cpu": "3"}}},
             {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}],
           "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}]}})",
       "cpu=3"},
      {"sidecars accumulate",
       R"({"spec": {
           "initContainers": [
             {"name": "s1", "restartPolicy": "Always", "resources": {"requests": {"memory": "1Gi"}}},
             {"name": "s2", "restartPolicy": "Always", "resources": {"requests": {"memory": "1Gi"}}},
             {"name": "i", "resources": {"requests": {"memory": "1Gi"}}}],
           "containers": [{"name": "a", "resources": {"requests": {"memory": "512Mi"}}}]}})",
       "memory=3Gi"},
      {"container without resources", R"({"spec": {"containers": [{"name": "a"}]}})", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto requests = PodRequestsFromJson(ordered_json::parse(c.pod));
    ASSERT_TRUE(requests.ok()) << requests.status().ToString();
    EXPECT_EQ(Requests(*requests), c.requests);
  }
}

TEST(PodSchedulingTest, ReadsSchedulingFields) {
  auto pod = PodSchedulingFromJson(ordered_json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "train-0", "namespace": "team-a",
                 "labels": {"gpupool.io/queue": "team-a"},
                 "annotations": {"gpupool.io/gpu-fraction": "0.5"}},
    "spec": {
      "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100"},
      "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
          {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]},
          {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
          {"weight": 10, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}]}},
      "tolerations": [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"operator": "Exists"},
        {"key": "spot", "value": "true", "effect": "NoExecute", "tolerationSeconds": 120}],
      "nodeName": "n1",
      "priorityClassName": "high",
      "priority": 125,
      "containers": [{"name": "main", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 8}}}],
      "unknownField": {"kept": true}
    }
  })"));
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->name, "train-0");
  EXPECT_EQ(pod->namespace_, "team-a");
  EXPECT_EQ(pod->labels.at("gpupool.io/queue"), "team-a");
  EXPECT_EQ(pod->annotations.at("gpupool.io/gpu-fraction"), "0.5");
  EXPECT_EQ(pod->node_selector.at("nvidia.com/gpu.product"), "NVIDIA-A100");
  ASSERT_TRUE(pod->affinity.required.has_value());
  ASSERT_EQ(pod->affinity.required->size(), 2u);
  EXPECT_EQ((*pod->affinity.required)[0].match_expressions[0].op, SelectorOperator::kIn);
  EXPECT_EQ((*pod->affinity.required)[0].match_expressions[0].values,
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ((*pod->affinity.required)[1].match_fields[0].key, "metadata.name");
  ASSERT_EQ(pod->affinity.preferred.size(), 1u);
  EXPECT_EQ(pod->affinity.preferred[0].weight, 10);
  ASSERT_EQ(pod->tolerations.size(), 3u);
  EXPECT_EQ(pod->tolerations[0].op, TolerationOperator::kExists);
  EXPECT_EQ(pod->tolerations[0].effect, TaintEffect::kNoSchedule);
  EXPECT_TRUE(pod->tolerations[1].key.empty());
  EXPECT_FALSE(pod->tolerations[1].effect.has_value());
  EXPECT_EQ(pod->tolerations[2].op, TolerationOperator::kEqual);
  EXPECT_EQ(pod->tolerations[2].toleration_seconds, 120);
  EXPECT_EQ(pod->node_name, "n1");
  EXPECT_EQ(pod->priority_class_name, "high");
  EXPECT_EQ(pod->priority, 125);
  EXPECT_EQ(pod->requests.at("nvidia.com/gpu").Value(), 8);

  auto defaults = PodSchedulingFromJson(ordered_json::parse(R"({"spec": {}})"));
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->namespace_, "default");
  EXPECT_FALSE(defaults->affinity.required.has_value());
  EXPECT_FALSE(defaults->priority.has_value());
}

TEST(PodSchedulingTest, RejectsWrongTypesWithFieldPaths) {
  struct Case {
    std::string pod;
    std::string message;
  };
  const Case cases[] = {
      {R"({"spec": {"nodeSelector": {"a": 1}}})",
       "spec.nodeSelector.a: expected a string, got number"},
      {R"({"spec": {"nodeSelector": ["a"]}})", "spec.nodeSelector: expected an object of strings"},
      {R"({"spec": {"tolerations": {"key": "a"}}})",
       "spec.tolerations: expected a list, got object"},
      {R"({"spec": {"tolerations": [{"key": "a", "effect": "NoSchedul"}]}})",
       "spec.tolerations[0].effect: expected one of NoSchedule, PreferNoSchedule, NoExecute, got "
       "\"NoSchedul\" (did you mean \"NoSchedule\"?)"},
      {R"({"spec": {"tolerations": [{"key": "a", "operator": "Exist"}]}})",
       "spec.tolerations[0].operator: expected Equal or Exists, got \"Exist\" (did you mean "
       "\"Exists\"?)"},
      {R"({"spec": {"tolerations": [{"key": "a", "valeu": "b"}]}})",
       "spec.tolerations[0].valeu: unknown field (did you mean \"value\"?)"},
      {R"({"spec": {"tolerations": [{"key": "a", "tolerationSeconds": "60"}]}})",
       "spec.tolerations[0].tolerationSeconds: expected an integer, got string"},
      {R"({"spec": {"containers": [{"resources": {"requests": {"cpu": "1.2.3"}}}]}})",
       "spec.containers[0].resources.requests.cpu: invalid quantity \"1.2.3\""},
      {R"({"spec": {"initContainers": [{}, {"resources": {"limits": {"memory": "1gi"}}}]}})",
       "spec.initContainers[1].resources.limits.memory: invalid quantity \"1gi\""},
      {R"({"spec": {"initContainers": [{"restartPolicy": "Never"}]}})",
       "spec.initContainers[0].restartPolicy: only \"Always\" is allowed"},
      {R"({"spec": {"overhead": {"cpu": []}}})", "spec.overhead.cpu: expected a quantity"},
      {R"({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
           {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "in"}]}]}}}}})",
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
       "nodeSelectorTerms[0].matchExpressions[0].operator: expected one of In, NotIn, Exists, "
       "DoesNotExist, Gt, Lt, got \"in\" (did you mean \"In\"?)"},
      {R"({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
           {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]}]}}}}})",
       "nodeSelectorTerms[0].matchExpressions[0].values[0]: expected a string, got number"},
      {R"({"spec": {"priority": "high"}})", "spec.priority: expected an integer, got string"},
      {R"({"spec": {"priority": 3000000000}})", "spec.priority: 3000000000 is out of range"},
      {R"({"metadata": {"name": 5}})", "metadata.name: expected a string, got number"},
      {R"({"spec": []})", "spec: expected an object, got array"},
      {R"([])", "pod: expected an object, got array"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pod);
    auto pod = PodSchedulingFromJson(ordered_json::parse(c.pod));
    ASSERT_FALSE(pod.ok());
    EXPECT_EQ(pod.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(pod.status().message().find(c.message), std::string::npos) << pod.status().message();
  }
}

TEST(NodeTest, ReadsAndWritesNodes) {
  ordered_json json = ordered_json::parse(R"({
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
      "name": "gpu-1",
      "labels": {"nvidia.com/gpu.product": "NVIDIA-A100", "zone": "a"},
      "annotations": {"note": "x"},
      "resourceVersion": "42"
    },
    "spec": {
      "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule",
                  "timeAdded": "2024-01-01T00:00:00Z"}],
      "podCIDR": "10.0.0.0/24"
    },
    "status": {
      "capacity": {"cpu": "64", "memory": "528157148Ki", "nvidia.com/gpu": "8", "pods": "110"},
      "allocatable": {"cpu": "63500m", "memory": "527000000Ki", "nvidia.com/gpu": "8", "pods": "110"},
      "nodeInfo": {"kubeletVersion": "v1.29.0"}
    }
  })");
  auto node = NodeFromJson(json);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->name, "gpu-1");
  EXPECT_EQ(node->labels.at("zone"), "a");
  EXPECT_EQ(node->annotations.at("note"), "x");
  ASSERT_EQ(node->taints.size(), 1u);
  EXPECT_EQ(node->taints[0].ToString(), "nvidia.com/gpu=true:NoSchedule");
  EXPECT_EQ(node->capacity.at("cpu").MilliValue(), 64000);
  EXPECT_EQ(node->allocatable.at("cpu").MilliValue(), 63500);
  EXPECT_EQ(node->allocatable.at("memory").Value(), int64_t{527000000} * 1024);
  EXPECT_FALSE(node->unschedulable);

  // Unchanged: printed back exactly (unknown fields, raw quantity strings, timeAdded).
  EXPECT_EQ(NodeToJson(*node), json);

  // Changed typed fields are written over the raw object, keeping everything else.
  node->labels["zone"] = "b";
  node->taints.clear();
  node->unschedulable = true;
  node->allocatable["cpu"] = *Quantity::Parse("60");
  ordered_json out = NodeToJson(*node);
  EXPECT_EQ(out["metadata"]["labels"]["zone"], "b");
  EXPECT_EQ(out["metadata"]["resourceVersion"], "42");
  EXPECT_FALSE(out["spec"].contains("taints"));
  EXPECT_EQ(out["spec"]["unschedulable"], true);
  EXPECT_EQ(out["spec"]["podCIDR"], "10.0.0.0/24");
  EXPECT_EQ(out["status"]["allocatable"]["cpu"], "60");
  EXPECT_EQ(out["status"]["allocatable"]["memory"], "527000000Ki");
  EXPECT_EQ(out["status"]["nodeInfo"]["kubeletVersion"], "v1.29.0");
  auto again = NodeFromJson(out);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->unschedulable);
  EXPECT_TRUE(again->taints.empty());

  // A Node built in code gets apiVersion/kind/metadata/status.
  Node built;
  built.name = "n";
  built.taints.push_back({"a", "", TaintEffect::kNoExecute});
  built.allocatable["cpu"] = Quantity::FromUnits(4);
  ordered_json built_json = NodeToJson(built);
  EXPECT_EQ(
      built_json.dump(),
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"spec":{"taints":[{"key":"a","effect":"NoExecute"}]},"status":{"allocatable":{"cpu":"4"}}})");
}

TEST(NodeTest, AllocatableDefaultsToCapacity) {
  auto node = NodeFromJson(
      ordered_json::parse(R"({"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "8"}}})"));
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(node->allocatable.at("cpu").MilliValue(), 8000);
}

TEST(NodeTest, RejectsBadNodes) {
  struct Case {
    std::string json;
    std::string message;
  };
  const Case cases[] = {
      {R"({"kind": "Pod", "metadata": {"name": "n"}})", "kind: expected Node, got \"Pod\""},
      {R"({"metadata": {}})", "metadata.name: required"},
      {R"({"spec": {}})", "metadata.name: required"},
      {R"({"metadata": {"name": "n", "labels": {"a": true}}})",
       "node \"n\": metadata.labels.a: expected a string, got boolean"},
      {R"({"metadata": {"name": "n"}, "spec": {"taints": [{"key": "a", "effect": "Never"}]}})",
       "node \"n\": spec.taints[0].effect: expected one of NoSchedule"},
      {R"({"metadata": {"name": "n"}, "spec": {"taints": [{"key": "a"}]}})",
       "spec.taints[0].effect: required"},
      {R"({"metadata": {"name": "n"}, "spec": {"taints": [{"effect": "NoSchedule"}]}})",
       "spec.taints[0].key: required"},
      {R"({"metadata": {"name": "n"}, "spec": {"unschedulable": "yes"}})",
       "spec.unschedulable: expected true or false, got string"},
      {R"({"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "x"}}})",
       "node \"n\": status.allocatable.cpu: invalid quantity \"x\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    auto node = NodeFromJson(ordered_json::parse(c.json));
    ASSERT_FALSE(node.ok());
    EXPECT_NE(node.status().message().find(c.message), std::string::npos)
        << node.status().message();
  }
}

TEST(TaintTest, ParsesKubectlSyntax) {
  struct Case {
    std::string text;
    bool ok;
    Taint taint;
  };
  const Case cases[] = {
      {"nvidia.com/gpu=true:NoSchedule",
       true,
       {"nvidia.com/gpu", "true", TaintEffect::kNoSchedule}},
      {"spot:NoExecute", true, {"spot", "", TaintEffect::kNoExecute}},
      {"a=b:PreferNoSchedule", true, {"a", "b", TaintEffect::kPreferNoSchedule}},
      {"a=b", false, {}},
      {"=b:NoSchedule", false, {}},
      {"a=b:Sometimes", false, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto taint = ParseTaintSpec(c.text);
    ASSERT_EQ(taint.ok(), c.ok) << taint.status().ToString();
    if (c.ok) {
      EXPECT_EQ(*taint, c.taint);
      EXPECT_EQ(taint->ToString(), c.text);
    }
  }
}

TEST(CodecTest, TolerationAndAffinityRoundTrip) {
  const char* tolerations[] = {
      R"({"key":"a","operator":"Equal","value":"b","effect":"NoSchedule"})",
      R"({"operator":"Exists"})",
      R"({"key":"spot","operator":"Exists","effect":"NoExecute","tolerationSeconds":120})",
  };
  for (const char* text : tolerations) {
    SCOPED_TRACE(text);
    auto t = TolerationFromJson(ordered_json::parse(text), "t");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(TolerationToJson(*t).dump(), text);
  }
  const char* affinity =
      R"({"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Gt","values":["3"]}],"matchFields":[{"key":"metadata.name","operator":"NotIn","values":["n"]}]}]},"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":5,"preference":{"matchExpressions":[{"key":"b","operator":"Exists"}]}}]})";
  auto parsed = NodeAffinityFromJson(ordered_json::parse(affinity), "a");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(NodeAffinityToJson(*parsed).dump(), affinity);
}

}  // namespace k8s_test
}  // namespace gpupool::model
