#pragma once
// The scalable resource of a Kubernetes cluster that makes a machine pool's nodes (seed 004 on a
// real cluster; DESIGN section 5): an OpenShift MachineSet (how ROSA builds its machine pools)
// or a Cluster API MachineDeployment. gpupool sets its replicas through the `scale` subresource;
// the cluster's machine controller makes the Machines and their Nodes, which join the pool by
// the label node.kubernetes.io/machinepool. To remove a chosen node, its Machine is annotated
// for deletion first and replicas lowered after (as cluster-autoscaler's clusterapi provider
// does), so the controller removes that Machine rather than one of its choosing.
//
// MACHINE_POOL body field:
//   "scale_target": {"api_version": "machine.openshift.io/v1beta1", "kind": "MachineSet",
//                    "namespace": "openshift-machine-api", "name": "gpu-a"}

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace gpupool::model {

struct ScaleTarget {
  std::string api_version;  // group/version, e.g. "machine.openshift.io/v1beta1"
  std::string kind;         // "MachineSet" | "MachineDeployment"
  std::string namespace_name;
  std::string name;

  friend bool operator==(const ScaleTarget&, const ScaleTarget&) = default;
};

// What gpupool knows of each supported kind.
struct ScalableKind {
  std::string_view api_version;
  std::string_view kind;
  std::string_view plural;  // the resource in API paths
  // The annotation that makes the controller remove this Machine first at the next scale down.
  std::string_view delete_machine_annotation;
  // The Node annotation naming its Machine: "<namespace>/<name>" (OpenShift) or "<name>"
  // (Cluster API, in the target's namespace).
  std::string_view node_machine_annotation;
  bool node_annotation_has_namespace;
};

// The supported kind of `target`, or nullptr.
const ScalableKind* FindScalableKind(const ScaleTarget& target);

// Decodes the `scale_target` field: every key required, api_version and kind one of the
// supported pairs, namespace and name DNS-1123 names. Errors name `field_path`.
Result<ScaleTarget> ScaleTargetFromJson(const nlohmann::ordered_json& value,
                                        std::string_view field_path);
nlohmann::ordered_json ScaleTargetToJson(const ScaleTarget& target);

// "/apis/<group>/<version>/namespaces/<namespace>/<plural>/<name>": the object; + "/scale" is
// its scale subresource. The target must be of a supported kind.
std::string ScaleTargetPath(const ScaleTarget& target);
// "/apis/<group>/<version>/namespaces/<namespace>/machines/<machine>".
std::string MachinePath(const ScaleTarget& target, std::string_view machine_namespace,
                        std::string_view machine);

// "MachineSet openshift-machine-api/gpu-a", for messages.
std::string DescribeScaleTarget(const ScaleTarget& target);

}  // namespace gpupool::model
