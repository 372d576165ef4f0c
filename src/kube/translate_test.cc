#include "kube/translate.h"

#include <gtest/gtest.h>

#include "common/json_text.h"
#include "kube/writes.h"
#include "model/input_file.h"

namespace gpupool::kube {
namespace translate_test {

using Json = nlohmann::ordered_json;

Json Parse(const std::string& text) { return Json::parse(text); }

TEST(NodeFromApiTest, ReadsTheRealNodesAndTaintsNodesThatAreNotReady) {
  // A real node object (data/edgexr-k8s-node-json): Ready, GPU labels, allocatable.
  auto text = model::ReadFile(std::string(GPUPOOL_SOURCE_DIR) +
                              "/data/edgexr-k8s-node-json/vgpu_a16_node_kubectl_get_nodes.json");
  ASSERT_TRUE(text.ok());
  Json list = Json::parse(*text);
  const Json& real = list.contains("items") ? list["items"][0] : list;
  auto node = NodeFromApi(real);
  ASSERT_TRUE(node.ok()) << node.status().message();
  EXPECT_FALSE(node->allocatable.empty());
  EXPECT_TRUE(node->taints.empty());

  struct Case {
    std::string name;
    std::string ready;  // "" = no Ready condition
    std::string taints;
    std::vector<std::string> want;
  };
  std::vector<Case> cases = {
      {"ready", "True", "[]", {}},
      {"not ready", "False", "[]", {"node.kubernetes.io/not-ready:NoSchedule"}},
      {"unknown", "Unknown", "[]", {"node.kubernetes.io/unreachable:NoSchedule"}},
      {"no condition", "", "[]", {"node.kubernetes.io/not-ready:NoSchedule"}},
      {"already tainted",
       "False",
       R"([{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}])",
       {"node.kubernetes.io/not-ready:NoExecute"}},
      {"tainted and ready",
       "True",
       R"([{"key": "gpu", "value": "true", "effect": "NoSchedule"}])",
       {"gpu=true:NoSchedule"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Json object = {{"kind", "Node"},
                   {"metadata", {{"name", "n"}}},
                   {"spec", {{"taints", Parse(c.taints)}}},
                   {"status", {{"allocatable", {{"cpu", "4"}}}}}};
    if (!c.ready.empty()) {
      object["status"]["conditions"] = {{{"type", "Ready"}, {"status", c.ready}}};
    }
    auto parsed = NodeFromApi(object);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    std::vector<std::string> taints;
    for (const auto& t : parsed->taints) taints.push_back(t.ToString());
    EXPECT_EQ(taints, c.want);
  }
}

TEST(NodeAsScheduledTest, OtherPodsRequestsLeaveTheRestAndAreNamed) {
  struct Case {
    std::string name;
    std::string status;  // the node's status
    model::ResourceList taken;
    std::string want_allocatable;  // "" = as it was
    std::string want_annotation;   // "" = none
  };
  auto q = [](const char* text) { return model::Quantity::Parse(text).value(); };
  std::vector<Case> cases = {
      {"nothing taken", R"({"allocatable": {"cpu": "4", "nvidia.com/gpu": "2"}})", {}, "", ""},
      {"a DaemonSet's cpu and a pod's gpu",
       R"({"allocatable": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "2", "pods": "110"}})",
       {{"cpu", q("250m")}, {"nvidia.com/gpu", q("2")}, {"pods", q("2")}},
       R"({"cpu": "3750m", "memory": "16Gi", "nvidia.com/gpu": "0", "pods": "108"})",
       R"({"cpu":"250m","nvidia.com/gpu":"2","pods":"2"})"},
      {"more taken than the node has: zero, never negative",
       R"({"allocatable": {"cpu": "1"}})",
       {{"cpu", q("3")}},
       R"({"cpu": "0"})",
       R"({"cpu":"3"})"},
      {"capacity when there is no allocatable",
       R"({"capacity": {"cpu": "8", "memory": "1Gi"}})",
       {{"memory", q("512Mi")}},
       R"({"cpu": "8", "memory": "512Mi"})",
       R"({"memory":"512Mi"})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Json status = Parse(c.status);
    status["conditions"] = {{{"type", "Ready"}, {"status", "True"}}};
    Json node = {{"kind", "Node"}, {"metadata", {{"name", "n"}}}, {"status", status}};
    const Json out = NodeAsScheduled(node, c.taken);
    Json want = c.want_allocatable.empty() ? status["allocatable"] : Parse(c.want_allocatable);
    EXPECT_EQ(out.at("status").at("allocatable"), want);
    const Json annotations = out.value("/metadata/annotations"_json_pointer, Json::object());
    if (c.want_annotation.empty()) {
      EXPECT_FALSE(annotations.contains(kTakenByOthersAnnotation));
    } else {
      EXPECT_EQ(annotations.value(kTakenByOthersAnnotation, Json()), c.want_annotation);
    }
    EXPECT_EQ(out.at("status").value("capacity", Json()), status.value("capacity", Json()))
        << "capacity unchanged";
    auto parsed = model::NodeFromJson(out);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    EXPECT_EQ(NodeAsScheduled(node, c.taken), out) << "the same object for the same input";
  }

  auto taken = TakenByPod(Parse(R"({"spec": {"containers": [
      {"name": "a", "resources": {"requests": {"cpu": "100m", "nvidia.com/gpu": "1"}}},
      {"name": "b", "resources": {"limits": {"cpu": "200m"}}}]}})"));
  ASSERT_TRUE(taken.ok()) << taken.status().message();
  EXPECT_EQ(model::ResourceListToJson(*taken),
            Parse(R"({"cpu": "300m", "nvidia.com/gpu": "1", "pods": "1"})"));
}

TEST(ClassifyPodTest, EveryPodHasOneRole) {
  struct Case {
    std::string name;
    std::string pod;
    PodKind want;
  };
  std::vector<Case> cases = {
      {"daemonset pod on a node", R"({"spec": {"nodeName": "n1"}, "status": {"phase": "Running"}})",
       PodKind::kBound},
      {"another scheduler's bound pod",
       R"({"spec": {"schedulerName": "kai", "nodeName": "n1"}, "status": {"phase": "Pending"}})",
       PodKind::kBound},
      {"terminating on its node",
       R"({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}})",
       PodKind::kBound},
      {"succeeded", R"({"spec": {"nodeName": "n1"}, "status": {"phase": "Succeeded"}})",
       PodKind::kFinished},
      {"failed", R"({"spec": {"nodeName": "n1"}, "status": {"phase": "Failed"}})",
       PodKind::kFinished},
      {"ours, pending", R"({"spec": {"schedulerName": "gpupool"}, "status": {"phase": "Pending"}})",
       PodKind::kPending},
      {"ours, gated",
       R"({"spec": {"schedulerName": "gpupool", "schedulingGates": [{"name": "kueue"}]}})",
       PodKind::kGated},
      {"kube-scheduler's", R"({"spec": {}, "status": {"phase": "Pending"}})",
       PodKind::kOtherScheduler},
      {"another scheduler's", R"({"spec": {"schedulerName": "volcano"}})",
       PodKind::kOtherScheduler},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(PodKindName(ClassifyPod(Parse(c.pod))), PodKindName(c.want));
  }
}

TEST(PendingFromApiTest, QueuesGangsPoolsAndFractions) {
  TranslateOptions options;
  options.namespace_queues = {{"team-a", "project-a"}};
  struct Case {
    std::string name;
    std::string pod;
    std::string queue;
    std::string gang;  // "" = none
  };
  std::vector<Case> cases = {
      {"queue label wins",
       R"({"metadata": {"name": "p", "namespace": "team-a", "labels": {"gpupool.io/queue": "q"}}})",
       "q", ""},
      {"namespace default", R"({"metadata": {"name": "p", "namespace": "team-a"}})", "project-a",
       ""},
      {"global default", R"({"metadata": {"name": "p", "namespace": "other"}})", "default", ""},
      {"gang scoped to its namespace",
       R"({"metadata": {"name": "p", "namespace": "team-a",
           "labels": {"gpupool.io/gang": "train", "gpupool.io/gang-min": "4"}}})",
       "project-a", "team-a/train"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Json pod = Parse(c.pod);
    pod["spec"] = {
        {"schedulerName", "gpupool"},
        {"containers",
         {{{"name", "main"}, {"resources", {{"requests", {{"nvidia.com/gpu", "1"}}}}}}}}};
    auto work = PendingFromApi(pod, options);
    ASSERT_TRUE(work.ok()) << work.status().message();
    EXPECT_EQ(work->pod.labels.at(scheduler::kQueueLabel), c.queue);
    auto gang = work->pod.labels.find(scheduler::kGangLabel);
    EXPECT_EQ(gang == work->pod.labels.end() ? "" : gang->second, c.gang);
    EXPECT_EQ(work->unsupported, "");
    EXPECT_EQ(work->pod.requests.at("nvidia.com/gpu").Value(), 1);
  }
}

TEST(BoundFromApiTest, PodsGpupoolDoesNotManageAreNeverPreemptible) {
  TranslateOptions options;
  options.external_queue = "external";
  auto daemon = BoundFromApi(Parse(R"({"metadata": {"name": "ds", "namespace": "kube-system"},
      "spec": {"nodeName": "n1", "containers": [{"name": "c",
      "resources": {"requests": {"cpu": "100m"}}}]}})"),
                             options);
  ASSERT_TRUE(daemon.ok()) << daemon.status().message();
  EXPECT_EQ(daemon->labels.at(scheduler::kQueueLabel), "external");
  auto priority = scheduler::PodPriority(*daemon);
  ASSERT_TRUE(priority.ok());
  EXPECT_GE(*priority, scheduler::kNonPreemptiblePriority);

  auto ours = BoundFromApi(Parse(R"({"metadata": {"name": "t", "labels": {"gpupool.io/queue": "q"}},
      "spec": {"nodeName": "n1", "priorityClassName": "low", "containers": [{"name": "c"}]}})"),
                           options);
  ASSERT_TRUE(ours.ok());
  EXPECT_EQ(ours->labels.at(scheduler::kQueueLabel), "q");
  EXPECT_EQ(*scheduler::PodPriority(*ours), 50);
}

TEST(UnsupportedConstraintTest, NamesTheFeatureAndTheField) {
  struct Case {
    std::string name;
    std::string spec;
    std::string want;  // substring; "" = supported
  };
  std::vector<Case> cases = {
      {"plain", R"({"containers": [{"name": "c"}]})", ""},
      {"node affinity is evaluated",
       R"({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
           {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]}}}})",
       ""},
      {"preferred pod affinity is only a preference",
       R"({"affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution":
           [{"weight": 1, "podAffinityTerm": {"topologyKey": "zone"}}]}}})",
       ""},
      {"required pod affinity",
       R"({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
           [{"topologyKey": "zone"}]}}})",
       "required inter-pod affinity (spec.affinity.podAffinity)"},
      {"required anti-affinity",
       R"({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
           [{"topologyKey": "kubernetes.io/hostname"}]}}})",
       "required inter-pod anti-affinity"},
      {"hard topology spread",
       R"({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
           "whenUnsatisfiable": "DoNotSchedule"}]})",
       "topology spread constraints"},
      {"soft topology spread",
       R"({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
           "whenUnsatisfiable": "ScheduleAnyway"}]})",
       ""},
      {"pvc", R"({"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}]})",
       "PersistentVolumeClaim binding (spec.volumes[data].persistentVolumeClaim)"},
      {"ephemeral volume", R"({"volumes": [{"name": "scratch", "ephemeral": {}}]})",
       "generic ephemeral volumes"},
      {"emptyDir is fine", R"({"volumes": [{"name": "tmp", "emptyDir": {}}]})", ""},
      {"host port", R"({"containers": [{"name": "c", "ports": [{"containerPort": 80,
           "hostPort": 8080}]}]})",
       "host ports"},
      {"container port only",
       R"({"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]})", ""},
      {"dra", R"({"resourceClaims": [{"name": "gpu", "resourceClaimName": "x"}]})",
       "dynamic resource allocation claims (spec.resourceClaims)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string got = UnsupportedConstraint({{"spec", Parse(c.spec)}});
    if (c.want.empty()) {
      EXPECT_EQ(got, "");
    } else {
      EXPECT_NE(got.find(c.want), std::string::npos) << got;
      EXPECT_NE(got.find("the pod stays pending"), std::string::npos) << got;
    }
  }
}

TEST(WritesTest, BodiesAsTheApiServerTakesThem) {
  ObjectRef pod{"team-a", "train-0", "uid-1"};
  EXPECT_EQ(PodPath(pod, "binding"), "/api/v1/namespaces/team-a/pods/train-0/binding");
  EXPECT_EQ(BindingBody(pod, "n1"), Parse(R"({"apiVersion": "v1", "kind": "Binding",
      "metadata": {"name": "train-0", "namespace": "team-a", "uid": "uid-1"},
      "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}})"));
  EXPECT_EQ(BindingText(pod, "n1"), DumpJson(BindingBody(pod, "n1")));
  // Written as the dump writes them, names that need escapes or are not ASCII included.
  for (const std::string name :
       {"a\"b", "a\\b", "tab\there", "del\x7f", "caf\xc3\xa9", "bad\xff", "", "x-0.y_z"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(BindingText({"ns", name, ""}, "n1"), DumpJson(BindingBody({"ns", name, ""}, "n1")));
    EXPECT_EQ(BindingText({name, "p", "u"}, name), DumpJson(BindingBody({name, "p", "u"}, name)));
  }
  const std::string message =
      "0/5000 nodes are available: 4000 Insufficient nvidia.com/gpu, 1000 node(s) had "
      "untolerated taint {gpu: true}.";
  EXPECT_EQ(UnschedulablePatch(message, "2026-01-02T03:04:05Z"),
            Parse(R"({"status": {"conditions": [{"type": "PodScheduled", "status": "False",
      "reason": "Unschedulable", "message": ")" +
                  message + R"(", "lastProbeTime": null,
      "lastTransitionTime": "2026-01-02T03:04:05Z"}]}})"));
  EXPECT_EQ(DisruptionTargetPatch("PreemptionByScheduler", "reclaimed by queue a",
                                  "2026-01-02T03:04:05Z")["status"]["conditions"][0]["type"],
            "DisruptionTarget");
  EXPECT_EQ(EvictionBody(pod, 30), Parse(R"({"apiVersion": "policy/v1", "kind": "Eviction",
      "metadata": {"name": "train-0", "namespace": "team-a"},
      "deleteOptions": {"preconditions": {"uid": "uid-1"}, "gracePeriodSeconds": 30}})"));
  EXPECT_EQ(EvictionBody({"ns", "p", ""}, std::nullopt)["deleteOptions"], Json::object());
  EXPECT_EQ(RefOf(Parse(R"({"metadata": {"name": "x"}})")).namespace_, "default");
}

}  // namespace translate_test
}  // namespace gpupool::kube
