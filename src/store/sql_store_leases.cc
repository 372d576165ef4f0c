// SqlStore: leases, and the fence that ties a write to the lease its writer holds.

#include "store/sql_store.h"
#include "store/sql_store_internal.h"

namespace gpupool::store {

namespace internal {

Status HoldFence(SqlConnection& db, const Store::LeaseFence& fence) {
  ASSIGN_OR_RETURN(auto held, db.Query("UPDATE leases SET holder = holder "
                                       "WHERE name = $1 AND holder = $2 RETURNING holder",
                                       {fence.lease, fence.holder}));
  if (held.empty()) {
    return FailedPreconditionError("lease " + fence.lease + " is no longer held by " +
                                   fence.holder + "; the write was fenced off");
  }
  return OkStatus();
}

}  // namespace internal

namespace {

using internal::RequireNonEmpty;

}  // namespace

Result<bool> SqlStore::TryAcquireLease(std::string_view name, std::string_view holder,
                                       std::optional<int64_t> now_ms, int64_t ttl_ms) {
  RETURN_IF_ERROR(RequireNonEmpty(name, "lease name"));
  RETURN_IF_ERROR(RequireNonEmpty(holder, "lease holder"));
  if (ttl_ms <= 0) return InvalidArgumentError("lease ttl must be positive");
  // Servers on one PostgreSQL may disagree about the time; the expiry is then reckoned on the
  // database server's clock, so a server whose clock runs ahead cannot take a live lease.
  const bool database_clock = !now_ms && connection_->Backend() == "postgresql";
  if (!now_ms) now_ms = clock_.NowMillis();
  // Explicit: $3 is the new expiry, $4 now. Database clock: $3 is the ttl.
  const std::string now =
      database_clock ? "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)" : "$4";
  const std::string expiry = database_clock ? now + " + $3" : "$3";
  const std::string sql = "INSERT INTO leases (name, holder, expires_ms) VALUES ($1, $2, " +
                          expiry +
                          ") ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
                          "expires_ms = excluded.expires_ms "
                          "WHERE leases.holder = excluded.holder OR leases.expires_ms <= " +
                          now + " RETURNING holder";
  // Built in one expression: appending to it made GCC 12 warn of a string member "used
  // uninitialized" inside std::variant (a false positive, an error with -Werror).
  SqlParams params =
      database_clock ? SqlParams{std::string(name), std::string(holder), ttl_ms}
                     : SqlParams{std::string(name), std::string(holder), *now_ms + ttl_ms, *now_ms};
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Result<bool> {
    ASSIGN_OR_RETURN(auto rows, db.Query(sql, params));
    return !rows.empty();
  });
}

Status SqlStore::ReleaseLease(std::string_view name, std::string_view holder) {
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Status {
    return db
        .Query("DELETE FROM leases WHERE name = $1 AND holder = $2",
               {std::string(name), std::string(holder)})
        .status();
  });
}

}  // namespace gpupool::store
