#include "kube/testing/fake_rbac.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>

#include "codec/yaml_reader.h"
#include "model/input_file.h"

namespace gpupool::kube::fake {
namespace fake_rbac_test {

TEST(ClusterRoleTest, TheDeploymentsRoleGrantsWhatTheBackendDoesAndNothingElse) {
  auto role =
      ClusterRole::Load(std::string(GPUPOOL_SOURCE_DIR) + "/deploy/kubernetes/clusterrole.yaml");
  ASSERT_TRUE(role.ok()) << role.status().message();
  EXPECT_EQ(role->name(), "gpupool");
  struct Case {
    RbacRequest request;
    bool allowed;
  };
  std::vector<Case> cases = {
      {{"list", "", "nodes", ""}, true},
      {{"watch", "", "nodes", ""}, true},
      {{"create", "", "pods", ""}, true},
      {{"get", "", "pods", "p"}, true},
      {{"delete", "", "pods", "p"}, true},
      {{"create", "", "pods/binding", "p"}, true},
      {{"create", "", "pods/eviction", "p"}, true},
      {{"get", "", "pods/log", "p"}, true},
      {{"update", "", "nodes", "n"}, false},
      {{"delete", "", "nodes", "n"}, false},
      {{"patch", "", "pods", "p"}, false},
      {{"create", "", "pods/exec", "p"}, false},
      {{"get", "", "secrets", "s"}, false},
      {{"create", "apps", "pods", ""}, false},  // the group counts
      // Machine pools: the scale subresource of the pool's set, and the Machine of a node it
      // removes annotated for deletion.
      {{"get", "machine.openshift.io", "machinesets/scale", "s"}, true},
      {{"patch", "machine.openshift.io", "machinesets/scale", "s"}, true},
      {{"update", "machine.openshift.io", "machinesets/scale", "s"}, true},
      {{"get", "cluster.x-k8s.io", "machinedeployments/scale", "d"}, true},
      {{"patch", "cluster.x-k8s.io", "machinedeployments/scale", "d"}, true},
      {{"update", "cluster.x-k8s.io", "machinedeployments/scale", "d"}, true},
      {{"get", "machine.openshift.io", "machines", "m"}, true},
      {{"list", "machine.openshift.io", "machines", ""}, true},
      {{"patch", "machine.openshift.io", "machines", "m"}, true},
      {{"get", "cluster.x-k8s.io", "machines", "m"}, true},
      {{"list", "cluster.x-k8s.io", "machines", ""}, true},
      {{"patch", "cluster.x-k8s.io", "machines", "m"}, true},
      {{"patch", "machine.openshift.io", "machinesets", "s"}, false},  // the scale only
      {{"get", "cluster.x-k8s.io", "machinedeployments", "d"}, false},
      {{"get", "cluster.x-k8s.io", "machinesets/scale", "s"}, false},  // the group counts
      {{"delete", "machine.openshift.io", "machines", "m"}, false},    // the controller deletes
      {{"create", "cluster.x-k8s.io", "machines", ""}, false},
      {{"watch", "cluster.x-k8s.io", "machines", ""}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.request.verb + " " + c.request.group + "/" + c.request.resource);
    EXPECT_EQ(role->Allows(c.request), c.allowed);
  }
}

TEST(ClusterRoleTest, WildcardsSubresourcesAndResourceNames) {
  auto role = ClusterRole::Parse(R"(
kind: ConfigMap
---
kind: ClusterRole
metadata: {name: r}
rules:
- {apiGroups: ["*"], resources: [leases], verbs: [get, update], resourceNames: [gpupool]}
- {apiGroups: [""], resources: ["pods/*"], verbs: ["*"]}
- {nonResourceURLs: ["/healthz"], verbs: [get]}
)",
                                 "role.yaml");
  ASSERT_TRUE(role.ok()) << role.status().message();
  struct Case {
    RbacRequest request;
    bool allowed;
  };
  std::vector<Case> cases = {
      {{"get", "coordination.k8s.io", "leases", "gpupool"}, true},
      {{"get", "coordination.k8s.io", "leases", "other"}, false},
      {{"list", "coordination.k8s.io", "leases", ""}, false},  // resourceNames: named only
      {{"create", "", "pods/eviction", "p"}, true},
      {{"patch", "", "pods/status", "p"}, true},
      {{"get", "", "pods", "p"}, false},  // pods/* is the subresources, not pods
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.request.verb + " " + c.request.resource + " " + c.request.name);
    EXPECT_EQ(role->Allows(c.request), c.allowed);
  }
  EXPECT_EQ(ForbiddenMessage({"create", "", "pods/binding", "p"}, "ns", "u"),
            "pods \"p\" is forbidden: User \"u\" cannot create resource \"pods/binding\" in API "
            "group \"\" in the namespace \"ns\"");
  EXPECT_EQ(ForbiddenMessage({"list", "", "nodes", ""}, "", "u"),
            "nodes is forbidden: User \"u\" cannot list resource \"nodes\" in API group \"\" at "
            "the cluster scope");
}

TEST(ClusterRoleTest, BadFilesAreRefusedWithTheField) {
  struct Case {
    std::string text;
    std::string want;
  };
  std::vector<Case> cases = {
      {"kind: Role\nrules: []\n", "role.yaml: no ClusterRole in the file"},
      {"kind: ClusterRole\nrules: {}\n", "rules: expected a list"},
      {"kind: ClusterRole\nrules:\n- {verbs: get}\n", "rules[0].verbs: expected a list of strings"},
      {"kind: ClusterRole\nrules:\n- {resources: [pods]}\n", "rules[0].verbs: expected verbs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto role = ClusterRole::Parse(c.text, "role.yaml");
    ASSERT_FALSE(role.ok());
    EXPECT_NE(role.status().message().find(c.want), std::string::npos) << role.status().message();
  }
}

// deploy/kubernetes holds together: every file the kustomization lists parses, the Deployment
// runs as the ServiceAccount the ClusterRoleBinding gives the ClusterRole, and every $(NAME) in
// its args is a key of the ConfigMap it reads.
TEST(DeployManifestsTest, TheDeploymentRunsWithTheRoleAndItsSettings) {
  using Json = nlohmann::ordered_json;
  const std::string dir = std::string(GPUPOOL_SOURCE_DIR) + "/deploy/kubernetes/";
  auto read = [&](const std::string& file) {
    auto text = model::ReadFile(dir + file);
    EXPECT_TRUE(text.ok()) << file;
    auto docs = codec::ParseJsonOrYamlDocuments(text.ok() ? *text : "", file);
    EXPECT_TRUE(docs.ok()) << (docs.ok() ? "" : docs.status().message());
    return docs.ok() ? *docs : std::vector<Json>{};
  };
  std::map<std::string, Json> by_kind;
  const std::vector<Json> kustomization = read("kustomization.yaml");
  ASSERT_EQ(kustomization.size(), 1u);
  for (const Json& file : kustomization[0].at("resources")) {
    for (Json& doc : read(file.get<std::string>())) {
      by_kind[doc["kind"].get<std::string>()] = doc;  // one of each, but Namespace
    }
  }
  for (const char* kind : {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                           "ConfigMap", "Deployment", "Service"}) {
    EXPECT_TRUE(by_kind.contains(kind)) << kind;
  }
  const Json& account = by_kind["ServiceAccount"]["metadata"];
  const Json& binding = by_kind["ClusterRoleBinding"];
  EXPECT_EQ(binding["roleRef"]["name"], by_kind["ClusterRole"]["metadata"]["name"]);
  EXPECT_EQ(binding["subjects"][0]["name"], account["name"]);
  EXPECT_EQ(binding["subjects"][0]["namespace"], account["namespace"]);
  const Json& deployment = by_kind["Deployment"];
  const Json& pod = deployment["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"], account["name"]);
  EXPECT_EQ(deployment["metadata"]["namespace"], account["namespace"]);
  EXPECT_EQ(deployment["spec"]["replicas"], 2);
  const Json& settings = by_kind["ConfigMap"]["data"];
  std::regex reference(R"(\$\(([A-Z_]+)\))");
  std::set<std::string> referenced;
  for (const Json& arg : pod["containers"][0]["args"]) {
    std::string text = arg.get<std::string>();
    for (std::sregex_iterator it(text.begin(), text.end(), reference), end; it != end; ++it) {
      referenced.insert((*it)[1]);
      EXPECT_TRUE(settings.contains((*it)[1].str())) << "no ConfigMap key " << (*it)[1];
    }
  }
  EXPECT_FALSE(referenced.empty());
}

}  // namespace fake_rbac_test
}  // namespace gpupool::kube::fake
