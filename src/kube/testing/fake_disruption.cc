#include "kube/testing/fake_disruption.h"

#include <boost/asio/post.hpp>

#include "kube/selector.h"
#include "kube/testing/fake_api_internal.h"

namespace gpupool::kube::fake {

bool BudgetSelects(const Json& pdb, const model::Labels& labels) {
  const Json& selector = Field(Field(pdb, "spec"), "selector");
  if (!selector.is_object()) return false;
  auto parsed = LabelSelectorFromJson(selector, "spec.selector");
  return parsed.ok() && parsed->Matches(labels);
}

BudgetCount CountBudget(const ObjectStore& store, const Json& pdb) {
  const std::string ns = MetadataField(pdb, "namespace");
  auto covered = store.Select(ResourceId("pods"), [&](const Json& pod) {
    const std::string phase = PodPhase(pod);
    return MetadataField(pod, "namespace") == ns && phase != "Succeeded" && phase != "Failed" &&
           BudgetSelects(pdb, ObjectLabels(pod));
  });
  BudgetCount count;
  count.expected = static_cast<int64_t>(covered.size());
  for (const auto& pod : covered) count.healthy += HealthyPod(*pod) ? 1 : 0;
  const Json& spec = Field(pdb, "spec");
  if (spec.contains("minAvailable")) {
    count.desired = Scaled(spec["minAvailable"], count.expected);
  } else if (spec.contains("maxUnavailable")) {
    count.desired =
        std::max<int64_t>(0, count.expected - Scaled(spec["maxUnavailable"], count.expected));
  }
  return count;
}

DisruptionController::DisruptionController(ObjectStore& store, boost::asio::io_context& io)
    : store_(store),
      io_(io),
      pods_(ResourceId("pods")),
      budgets_(ResourceId("poddisruptionbudgets")) {}

void DisruptionController::Start() {
  store_.AddObserver([this](const Change& change) { OnChange(change); });
  std::set<std::string> namespaces;
  for (const auto& pdb : store_.Select(budgets_, [](const Json&) { return true; })) {
    const std::string ns = MetadataField(*pdb, "namespace");
    namespaces.insert(ns);
    std::lock_guard lock(mu_);
    budget_names_[ns].insert(MetadataField(*pdb, "name"));
  }
  for (const auto& ns : namespaces) Sync(ns);
}

void DisruptionController::OnChange(const Change& change) {
  if (change.resource != pods_ && change.resource != budgets_) return;
  const std::string ns = MetadataField(*change.object.object, "namespace");
  std::lock_guard lock(mu_);
  if (change.resource == budgets_) {
    const std::string name = MetadataField(*change.object.object, "name");
    if (change.type == EventType::kDeleted) {
      auto names = budget_names_.find(ns);
      if (names != budget_names_.end() && names->second.erase(name) > 0 && names->second.empty()) {
        budget_names_.erase(names);
      }
      return;
    }
    budget_names_[ns].insert(name);
  } else if (!budget_names_.contains(ns)) {
    return;  // no budget counts the pods of its namespace
  }
  if (!pending_.insert(ns).second) return;  // a sync of it is on its way
  boost::asio::post(io_, [this, ns] { Sync(ns); });
}

void DisruptionController::Sync(const std::string& namespace_) {
  {
    std::lock_guard lock(mu_);
    pending_.erase(namespace_);
  }
  auto budgets = store_.Select(
      budgets_, [&](const Json& pdb) { return MetadataField(pdb, "namespace") == namespace_; });
  for (const auto& pdb : budgets) {
    const BudgetCount count = CountBudget(store_, *pdb);
    // An edit that changes nothing takes no revision and sends no event (ObjectStore::Update).
    (void)store_.Update(budgets_, namespace_, MetadataField(*pdb, "name"), [&](Json& object) {
      Json& status = object["status"];
      status["observedGeneration"] = Field(object, "metadata").value("generation", 1);
      status["disruptionsAllowed"] = count.allowed();
      status["currentHealthy"] = count.healthy;
      status["desiredHealthy"] = count.desired;
      status["expectedPods"] = count.expected;
      return OkStatus();
    });
  }
}

}  // namespace gpupool::kube::fake
