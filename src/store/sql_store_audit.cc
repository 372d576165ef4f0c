// SqlStore: the audit log.

#include <algorithm>

#include "store/sql_store.h"
#include "store/sql_store_internal.h"

namespace gpupool::store {

namespace internal {

Status InsertAudits(SqlConnection& db, const std::vector<AuditRow>& rows, bool defer) {
  constexpr size_t kRowsPerInsert = 64;  // 6 parameters each
  for (size_t begin = 0; begin < rows.size(); begin += kRowsPerInsert) {
    size_t end = std::min(rows.size(), begin + kRowsPerInsert);
    SqlParams params;
    std::string sql =
        "INSERT INTO audit_log (at_ms, user_name, source, action, target, detail) VALUES ";
    for (size_t i = begin; i < end; ++i) {
      const AuditRecord& a = *rows[i].record;
      AppendRow(sql, params, {rows[i].at_ms, a.user, a.source, a.action, a.target, a.detail},
                i == begin);
    }
    RETURN_IF_ERROR(Execute(db, defer, sql, std::move(params)));
  }
  return OkStatus();
}

}  // namespace internal

namespace {

using internal::AuditTime;
using internal::Param;

}  // namespace

Status SqlStore::AppendAudit(const AuditRecord& record) {
  PendingWrite write;
  write.audit = &record;
  write.audit_at_ms = AuditTime(record, clock_.NowMillis());
  GroupCommit(write);
  return write.status;
}

Result<std::vector<AuditRecord>> SqlStore::ListAudit(int limit) {
  SqlParams params;
  std::string sql =
      "SELECT at_ms, user_name, source, action, target, detail FROM audit_log ORDER BY id DESC";
  if (limit > 0) sql += " LIMIT " + Param(params, int64_t{limit});
  return Run(Mode::kRead, [&](SqlConnection& db) -> Result<std::vector<AuditRecord>> {
    ASSIGN_OR_RETURN(auto rows, db.Query(sql, params));
    std::vector<AuditRecord> records;
    records.reserve(rows.size());
    for (const SqlRow& row : rows) {
      records.push_back(
          AuditRecord{row.Int(0), row.Text(1), row.Text(2), row.Text(3), row.Text(4), row.Text(5)});
    }
    return records;
  });
}

}  // namespace gpupool::store
