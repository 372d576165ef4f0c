#pragma once
// Metrics of the store's transactions, fed by StoreOptions::observe:
//   gpupool_store_transaction_seconds{kind="write"|"read", outcome="ok"|"error"}  histogram
//   gpupool_store_group_commit_writes                                              histogram
// They tell an operator how much of a request's latency is the database's: a submission waits
// for the group commit that carries it, so a p99 of gpupool_http_request_duration_seconds that
// moves with the write transactions' p99 comes from the database (its fsyncs, checkpoints,
// autovacuum), not from the server.
//
// Thread contract: the observer is thread-safe (the families take their own mutexes).

#include "server/metrics.h"
#include "store/store.h"

namespace gpupool::server {

// Registers both families in `registry` (which must outlive the observer) and returns the
// observer to put in StoreOptions::observe.
store::TransactionObserver ObserveStoreTransactions(Registry& registry);

}  // namespace gpupool::server
