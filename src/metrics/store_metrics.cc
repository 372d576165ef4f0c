#include "metrics/store_metrics.h"

#include <array>
#include <vector>

namespace gpupool::metrics {

namespace {

// Finer than LatencyBuckets at the low end: a SQLite commit or a PostgreSQL read on loopback
// takes well under 0.5 ms.
std::vector<double> TransactionBuckets() {
  std::vector<double> bounds = {0.0001, 0.00025};
  for (double bound : LatencyBuckets()) bounds.push_back(bound);
  return bounds;
}

// Powers of two up to the group commit's largest batch (256).
std::vector<double> BatchBuckets() { return {1, 2, 4, 8, 16, 32, 64, 128, 256}; }

}  // namespace

store::TransactionObserver ObserveStoreTransactions(Registry& registry) {
  Histogram* seconds = registry.AddHistogram(
      "gpupool_store_transaction_seconds",
      "Store transactions by kind and outcome (error: rolled back, for a refused write or a "
      "database error), from the call to the commit, waits for a connection included.",
      {"kind", "outcome"}, TransactionBuckets());
  Histogram* batch = registry.AddHistogram(
      "gpupool_store_group_commit_writes",
      "Writes per group commit (workflow creates with their tasks and audit records, and "
      "audit records alone).",
      {}, BatchBuckets());
  Histogram* wait = registry.AddHistogram(
      "gpupool_store_group_commit_wait_seconds",
      "How long the oldest write of a group commit had waited in the queue when its transaction "
      "began (the commit before it in progress).",
      {}, TransactionBuckets());
  // The four label sets, built once: the observer runs on every transaction.
  using Kind = store::TransactionObservation::Kind;
  static const std::array<LabelValues, 4> kLabels = {
      LabelValues{"write", "ok"}, LabelValues{"write", "error"}, LabelValues{"read", "ok"},
      LabelValues{"read", "error"}};
  static const LabelValues kNoLabels;
  return [seconds, batch, wait](const store::TransactionObservation& seen) {
    size_t index = (seen.kind == Kind::kWrite ? 0 : 2) + (seen.ok ? 0 : 1);
    seconds->Observe(kLabels[index], seen.seconds);
    if (seen.batched_writes > 0) {
      batch->Observe(kNoLabels, static_cast<double>(seen.batched_writes));
      wait->Observe(kNoLabels, seen.queued_seconds);
    }
  };
}

}  // namespace gpupool::metrics
