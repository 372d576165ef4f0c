#pragma once
// The fake API server's disruption controller: the status of every policy/v1
// PodDisruptionBudget, as Kubernetes' disruption controller (pkg/controller/disruption) writes
// it, kept current as pods and budgets change, so that a watch of the budgets sees their status
// move (MODIFIED events):
//   expectedPods        the pods the budget's selector picks in its namespace that have not
//                       finished (the fake knows no controller scale: every such pod counts);
//   currentHealthy      those running, Ready and not being deleted;
//   desiredHealthy      minAvailable (an integer, or a percentage of expectedPods rounded up),
//                       else expectedPods - maxUnavailable (likewise), else 0;
//   disruptionsAllowed  max(0, currentHealthy - desiredHealthy);
//   observedGeneration  the budget's metadata.generation.
// A budget without spec.selector selects no pod (policy/v1); `{}` selects every pod of the
// namespace. The eviction subresource (fake_subresources.cc) counts the same way.
//
// Thread contract: safe from any thread; the work runs on the io_context's threads.

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "kube/testing/fake_store.h"

namespace gpupool::kube::fake {

// How a budget stands over the pods of its namespace now.
struct BudgetCount {
  int64_t expected = 0;
  int64_t healthy = 0;
  int64_t desired = 0;
  int64_t allowed() const { return std::max<int64_t>(0, healthy - desired); }
};

// Whether `pdb` selects a pod with these labels (no selector: none).
bool BudgetSelects(const Json& pdb, const model::Labels& labels);
// Counts `pdb` over the store's pods of its namespace.
BudgetCount CountBudget(const ObjectStore& store, const Json& pdb);

class DisruptionController {
 public:
  DisruptionController(ObjectStore& store, boost::asio::io_context& io);

  // Starts watching the store; the budgets already there are counted.
  void Start();

 private:
  void OnChange(const Change& change);  // under the store's lock: only schedules a sync
  void Sync(const std::string& namespace_);

  ObjectStore& store_;
  boost::asio::io_context& io_;
  const int pods_;
  const int budgets_;
  std::mutex mu_;
  std::set<std::string> pending_;  // namespaces whose budgets are to be counted again
  // The budgets by namespace, kept from the store's changes (in revision order): a pod's change
  // in a namespace without one has nothing to count, and scheduled a sync per change (thousands
  // a second in the scheduling benchmark) that found no budget.
  std::map<std::string, std::set<std::string>, std::less<>> budget_names_;
};

}  // namespace gpupool::kube::fake
