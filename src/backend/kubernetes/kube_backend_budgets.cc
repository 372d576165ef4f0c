// KubernetesBackend: the cluster's PodDisruptionBudgets, for the scheduler to pick victims a
// budget allows before it asks the Eviction API. See kube_backend.h (DisruptionBudgets).

#include <map>
#include <utility>

#include "backend/kubernetes/kube_backend.h"
#include "kube/api.h"
#include "kube/selector.h"
#include "kube/translate.h"

namespace gpupool::backend {
namespace {

using Json = nlohmann::ordered_json;

std::string IntOrString(const Json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string Rule(const Json& spec) {
  if (spec.contains("minAvailable")) return "minAvailable " + IntOrString(spec["minAvailable"]);
  if (spec.contains("maxUnavailable")) {
    return "maxUnavailable " + IntOrString(spec["maxUnavailable"]);
  }
  return "no limit";
}

int64_t Count(const Json& status, const char* field) {
  auto it = status.find(field);
  return it != status.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

}  // namespace

std::vector<ClusterDisruptionBudget> KubernetesBackend::DisruptionBudgets() const {
  std::vector<ClusterDisruptionBudget> out;
  const std::vector<kube::ObjectPtr> budgets = budgets_->List();
  if (budgets.empty()) return out;
  // The bound pods gpupool may evict, by namespace: tasks' by attempt key, pods handed in by
  // HandedInKey.
  std::map<std::string, std::vector<std::pair<std::string, model::Labels>>> evictable;
  for (const kube::ObjectPtr& pod : pods_->List()) {
    if (kube::ClassifyPod(*pod) != kube::PodKind::kBound) continue;
    const kube::ObjectRef ref = kube::RefOf(*pod);
    std::string key = pod->value("/metadata/annotations"_json_pointer, Json::object())
                          .value(kube::kAttemptAnnotation, "");
    if (key.empty()) {
      if (pod->value("/spec/schedulerName"_json_pointer, "") != kube::kSchedulerName) continue;
      key = HandedInKey({ref.namespace_, ref.name, ref.uid});
    }
    evictable[ref.namespace_].emplace_back(std::move(key), kube::ObjectLabels(*pod));
  }
  for (const kube::ObjectPtr& pdb : budgets) {
    const kube::ObjectRef ref = kube::RefOf(*pdb);
    const Json spec = pdb->value("spec", Json::object());
    const Json selector = spec.value("selector", Json());
    auto pods = evictable.find(ref.namespace_);
    if (!selector.is_object() || pods == evictable.end()) continue;  // no selector: no pod
    auto parsed = kube::LabelSelectorFromJson(selector, "spec.selector");
    if (!parsed.ok()) continue;  // the API server validates selectors: not seen in practice
    ClusterDisruptionBudget budget;
    budget.namespace_ = ref.namespace_;
    budget.name = ref.name;
    budget.rule = Rule(spec);
    for (const auto& [key, labels] : pods->second) {
      if (parsed->Matches(labels)) budget.selects.push_back(key);
    }
    if (budget.selects.empty()) continue;
    const Json status = pdb->value("status", Json::object());
    const int64_t generation = pdb->value("/metadata/generation"_json_pointer, int64_t{0});
    const bool counted =
        status.contains("disruptionsAllowed") && Count(status, "observedGeneration") >= generation;
    // Not counted yet (or not since the spec changed): the eviction subresource refuses.
    budget.disruptions_allowed = counted ? Count(status, "disruptionsAllowed") : 0;
    budget.current_healthy = Count(status, "currentHealthy");
    budget.desired_healthy = Count(status, "desiredHealthy");
    budget.expected_pods = Count(status, "expectedPods");
    out.push_back(std::move(budget));
  }
  return out;
}

}  // namespace gpupool::backend
