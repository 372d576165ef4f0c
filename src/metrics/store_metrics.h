#pragma once
// Metrics of the store's transactions, fed by StoreOptions::observe:
//   gpupool_store_transaction_seconds{kind="write"|"read", outcome="ok"|"error"}  histogram
//   gpupool_store_group_commit_writes                                              histogram
//   gpupool_store_group_commit_wait_seconds                                        histogram
// They tell an operator how much of a request's latency is the database's: a submission waits
// in the queue for the commit in progress, then for the group commit that carries it, so a p99
// of gpupool_http_request_duration_seconds that moves with the wait's and the write
// transactions' comes from the database (its fsyncs, checkpoints, autovacuum), not from the
// server; a wait that grows while transactions stay short means the commit thread is saturated.
//
// Thread contract: the observer is thread-safe (the families take their own mutexes).

#include "metrics/metrics.h"
#include "store/store.h"

namespace gpupool::metrics {

// Registers the three families in `registry` (which must outlive the observer) and returns the
// observer to put in StoreOptions::observe.
store::TransactionObserver ObserveStoreTransactions(Registry& registry);

}  // namespace gpupool::metrics
