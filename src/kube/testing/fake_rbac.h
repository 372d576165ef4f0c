#pragma once
// The fake API server's authorization: the rules of one ClusterRole, as kube-apiserver's RBAC
// authorizer applies them to resource requests. A request is allowed when one rule names its verb,
// its API group and its resource ("pods", or "pods/binding" for a subresource), each or "*", and,
// when the rule has resourceNames, the object's name. Everything else is denied. The tests start
// the fake with the deployment's ClusterRole (deploy/kubernetes/clusterrole.yaml), so a request
// the backend makes that the role does not grant fails them, as it would on a real cluster.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpupool::kube::fake {

struct RbacRequest {
  std::string verb;      // get, list, watch, create, update, patch, delete
  std::string group;     // "" for the core group
  std::string resource;  // "pods", "pods/binding"
  std::string name;      // "" for a collection
};

struct PolicyRule {
  std::vector<std::string> verbs;
  std::vector<std::string> api_groups;
  std::vector<std::string> resources;
  std::vector<std::string> resource_names;
};

class ClusterRole {
 public:
  // The first ClusterRole of a YAML or JSON file (one document or several). Errors name the file
  // and the field (rules[2].verbs: expected a list of strings).
  static Result<ClusterRole> Load(const std::string& path);
  static Result<ClusterRole> Parse(std::string_view text, const std::string& source);

  bool Allows(const RbacRequest& request) const;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::vector<PolicyRule> rules_;
};

// kube-apiserver's words for a denied request: `pods "p" is forbidden: User "u" cannot create
// resource "pods/binding" in API group "" in the namespace "ns"`.
std::string ForbiddenMessage(const RbacRequest& request, const std::string& namespace_,
                             const std::string& user);

}  // namespace gpupool::kube::fake
