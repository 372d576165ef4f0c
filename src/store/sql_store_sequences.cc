// SqlStore: sequences (workflow ids), handed out from blocks reserved in a write transaction.

#include <algorithm>
#include <utility>

#include "store/sql_store.h"
#include "store/sql_store_internal.h"

namespace gpupool::store {
namespace {

using internal::RequireNonEmpty;

}  // namespace

Result<int64_t> SqlStore::ReserveSequence(std::string_view name, int64_t size) {
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Result<int64_t> {
    ASSIGN_OR_RETURN(auto rows, db.Query("INSERT INTO sequences (name, value) VALUES ($1, $2) "
                                         "ON CONFLICT (name) DO UPDATE "
                                         "SET value = sequences.value + $2 RETURNING value",
                                         {std::string(name), size}));
    if (rows.size() != 1) return InternalError("store: sequence " + std::string(name));
    return rows[0].Int(0);
  });
}

Result<int64_t> SqlStore::NextSequence(std::string_view name) {
  RETURN_IF_ERROR(RequireNonEmpty(name, "sequence name"));
  std::unique_lock lock(sequences_mu_);
  SequenceBlock& block = sequences_[std::string(name)];
  while (block.next >= block.end) {
    if (block.spare_next < block.spare_end) {
      block.next = std::exchange(block.spare_next, 0);
      block.end = std::exchange(block.spare_end, 0);
      break;
    }
    if (block.reserving) {  // the next block is on its way
      sequences_cv_.wait(lock);
      continue;
    }
    // Blocks start at one value (a CLI process that takes one id leaves no gap) and double with
    // each reservation up to kMaxSequenceBlock (a busy server reserves rarely).
    int64_t size = std::clamp<int64_t>(block.size * 2, 1, kMaxSequenceBlock);
    ASSIGN_OR_RETURN(int64_t last, ReserveSequence(name, size));
    block.next = last - size + 1;
    block.end = last + 1;
    block.size = size;
  }
  int64_t value = block.next++;
  // A busy store (its blocks at full size) reserves the next block on the reserve thread while
  // half of this one is left, so that callers (the server's I/O loops) do not wait for a write.
  if (block.size == kMaxSequenceBlock && !block.reserving && block.spare_next == block.spare_end &&
      block.end - block.next <= kMaxSequenceBlock / 2) {
    block.reserving = true;
    reserver_.Push(std::string(name));
  }
  return value;
}

void SqlStore::ReserveAhead(std::vector<std::string>& names) {
  for (const std::string& name : names) {
    // Reserved after the current block was, so every value of it is higher. A failure leaves no
    // spare: the caller that runs out reserves itself and meets the failure.
    auto last = ReserveSequence(name, kMaxSequenceBlock);
    std::lock_guard lock(sequences_mu_);
    SequenceBlock& block = sequences_[name];
    block.reserving = false;
    if (last.ok()) {
      block.spare_next = *last - kMaxSequenceBlock + 1;
      block.spare_end = *last + 1;
    }
  }
  sequences_cv_.notify_all();
}

}  // namespace gpupool::store
