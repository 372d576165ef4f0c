// SqlStore: configs, their revisions and the generations.

#include <algorithm>

#include "store/sql_store.h"
#include "store/sql_store_internal.h"

namespace gpupool::store {
namespace {

using internal::AuditRow;
using internal::AuditTime;
using internal::DumpJson;
using internal::EncodeNodes;
using internal::InsertAudits;
using internal::Param;
using internal::ParseStoredJson;
using internal::RequireNonEmpty;
using internal::UpsertNodesIn;
using nlohmann::ordered_json;

std::string ConfigKey(std::string_view kind, std::string_view name) {
  return std::string(kind) + "/" + std::string(name);
}

constexpr std::string_view kConfigColumns = "kind, name, body, revision, updated_by, updated_at_ms";

Result<ConfigRecord> ConfigFromRow(const SqlRow& row) {
  ConfigRecord record;
  record.kind = row.Text(0);
  record.name = row.Text(1);
  ASSIGN_OR_RETURN(record.body, ParseStoredJson(row, 2, ConfigKey(record.kind, record.name)));
  record.revision = row.Int(3);
  record.updated_by = row.Text(4);
  record.updated_at_ms = row.Int(5);
  return record;
}

constexpr std::string_view kRevisionColumns =
    "kind, name, revision, action, author, created_at_ms, description, body, source";

Result<RevisionRecord> RevisionFromRow(const SqlRow& row) {
  RevisionRecord record;
  record.kind = row.Text(0);
  record.name = row.Text(1);
  record.revision = row.Int(2);
  record.action = row.Text(3);
  record.author = row.Text(4);
  record.created_at_ms = row.Int(5);
  record.description = row.Text(6);
  ASSIGN_OR_RETURN(record.body, ParseStoredJson(row, 7,
                                                ConfigKey(record.kind, record.name) + " revision " +
                                                    std::to_string(record.revision)));
  record.source = row.Text(8);
  return record;
}

// Checks `writes` and encodes the body of each put: one entry per write, nullopt for a check or
// a delete.
Result<std::vector<std::optional<std::string>>> EncodeConfigBodies(
    const std::vector<ConfigWrite>& writes) {
  std::vector<std::optional<std::string>> bodies;
  bodies.reserve(writes.size());
  for (size_t i = 0; i < writes.size(); ++i) {
    const ConfigWrite& w = writes[i];
    std::string where = "config write " + std::to_string(i);
    RETURN_IF_ERROR(RequireNonEmpty(w.kind, where + ": kind"));
    RETURN_IF_ERROR(RequireNonEmpty(w.name, where + ": name"));
    if (w.op == ConfigWrite::Op::kCheck && !w.expected_revision) {
      return InvalidArgumentError(where + " (" + ConfigKey(w.kind, w.name) +
                                  "): a check needs expected_revision");
    }
    if (w.op == ConfigWrite::Op::kPut) {
      if (w.body.is_null() || w.body.is_discarded()) {
        return InvalidArgumentError(where + " (" + ConfigKey(w.kind, w.name) +
                                    "): body must not be null");
      }
      ASSIGN_OR_RETURN(std::string body, DumpJson(w.body, ConfigKey(w.kind, w.name)));
      bodies.emplace_back(std::move(body));
    } else {
      bodies.emplace_back(std::nullopt);
    }
  }
  return bodies;
}

// One write of WriteConfigs, in its transaction: checks the expected revision, then (unless it
// is a check) stores or deletes the config and records the new revision, which it returns (a
// check returns the current one). `encoded`: the body of a put, as EncodeConfigBodies made it.
Result<int64_t> WriteConfigIn(SqlConnection& db, const ConfigWrite& w,
                              const std::optional<std::string>& encoded, const Actor& actor,
                              int64_t now) {
  const std::string key = ConfigKey(w.kind, w.name);
  ASSIGN_OR_RETURN(auto current_rows, db.Query("SELECT revision FROM configs WHERE kind = $1 AND "
                                               "name = $2",
                                               {w.kind, w.name}));
  int64_t current = current_rows.empty() ? 0 : current_rows[0].Int(0);
  if (w.expected_revision && *w.expected_revision != current) {
    return AbortedError("config " + key + ": expected revision " +
                        std::to_string(*w.expected_revision) + " but it is " +
                        (current == 0 ? std::string("absent") : std::to_string(current)) +
                        " (changed concurrently; reload and retry)");
  }
  if (w.op == ConfigWrite::Op::kCheck) return current;
  if (w.op == ConfigWrite::Op::kDelete && current == 0) {
    return NotFoundError("config " + key + " does not exist");
  }
  ASSIGN_OR_RETURN(auto head, db.Query("INSERT INTO config_heads (kind, name, last_revision) "
                                       "VALUES ($1, $2, 1) ON CONFLICT (kind, name) DO UPDATE SET "
                                       "last_revision = config_heads.last_revision + 1 "
                                       "RETURNING last_revision",
                                       {w.kind, w.name}));
  if (head.size() != 1) return InternalError("store: config head of " + key + " not returned");
  int64_t revision = head[0].Int(0);
  std::string action = w.action;
  if (w.op == ConfigWrite::Op::kPut) {
    if (action.empty()) action = "update";
    RETURN_IF_ERROR(
        db.Query("INSERT INTO configs (kind, name, body, revision, updated_by, "
                 "updated_at_ms) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (kind, name) "
                 "DO UPDATE SET body = excluded.body, revision = excluded.revision, "
                 "updated_by = excluded.updated_by, updated_at_ms = excluded.updated_at_ms",
                 {w.kind, w.name, *encoded, revision, actor.user, now})
            .status());
  } else {
    if (action.empty()) action = "delete";
    RETURN_IF_ERROR(
        db.Query("DELETE FROM configs WHERE kind = $1 AND name = $2", {w.kind, w.name}).status());
  }
  SqlParam body = encoded ? SqlParam(*encoded) : SqlParam(nullptr);
  RETURN_IF_ERROR(db.Query("INSERT INTO config_revisions (kind, name, revision, action, author, "
                           "source, created_at_ms, description, body) "
                           "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                           {w.kind, w.name, revision, action, actor.user, actor.source, now,
                            w.description, body})
                      .status());
  return revision;
}

}  // namespace

Result<std::vector<int64_t>> SqlStore::WriteConfigs(const std::vector<ConfigWrite>& writes,
                                                    const Actor& actor, const WriteAlso& also) {
  ASSIGN_OR_RETURN(std::vector<std::string> node_objects, EncodeNodes(also.nodes));
  // Validate and encode outside the transaction.
  ASSIGN_OR_RETURN(std::vector<std::optional<std::string>> bodies, EncodeConfigBodies(writes));
  bool changes = std::any_of(writes.begin(), writes.end(),
                             [](const ConfigWrite& w) { return w.op != ConfigWrite::Op::kCheck; });
  int64_t now = clock_.NowMillis();
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Result<std::vector<int64_t>> {
    // First statement: the row lock it takes serialises config writers until commit, so the
    // revision checks below cannot race with another writer.
    if (changes) {
      RETURN_IF_ERROR(
          db.Query("UPDATE config_generation SET value = value + 1 WHERE id = 1", {}).status());
    }
    std::vector<int64_t> revisions;
    revisions.reserve(writes.size());
    for (size_t i = 0; i < writes.size(); ++i) {
      ASSIGN_OR_RETURN(int64_t revision, WriteConfigIn(db, writes[i], bodies[i], actor, now));
      revisions.push_back(revision);
    }
    if (!also.nodes.empty() || also.replace_all_nodes) {
      RETURN_IF_ERROR(UpsertNodesIn(db, also.nodes, node_objects, also.replace_all_nodes));
    }
    std::vector<AuditRow> audit;
    for (const AuditRecord& record : also.audit) {
      audit.push_back({&record, AuditTime(record, now)});
    }
    RETURN_IF_ERROR(InsertAudits(db, audit, /*defer=*/false));
    return revisions;
  });
}

Result<ConfigRecord> SqlStore::GetConfig(std::string_view kind, std::string_view name) {
  return Run(Mode::kRead, [&](SqlConnection& db) -> Result<ConfigRecord> {
    ASSIGN_OR_RETURN(auto rows, db.Query("SELECT " + std::string(kConfigColumns) +
                                             " FROM configs WHERE kind = $1 AND name = $2",
                                         {std::string(kind), std::string(name)}));
    if (rows.empty()) return NotFoundError("config " + ConfigKey(kind, name) + " not found");
    return ConfigFromRow(rows[0]);
  });
}

Result<std::vector<ConfigRecord>> SqlStore::ListConfigs(std::optional<std::string_view> kind) {
  SqlParams params;
  std::string sql = "SELECT " + std::string(kConfigColumns) + " FROM configs";
  if (kind) sql += " WHERE kind = " + Param(params, std::string(*kind));
  sql += " ORDER BY kind, name";
  return Run(Mode::kRead, [&](SqlConnection& db) -> Result<std::vector<ConfigRecord>> {
    ASSIGN_OR_RETURN(auto rows, db.Query(sql, params));
    std::vector<ConfigRecord> records;
    records.reserve(rows.size());
    for (const SqlRow& row : rows) {
      ASSIGN_OR_RETURN(ConfigRecord record, ConfigFromRow(row));
      records.push_back(std::move(record));
    }
    return records;
  });
}

Result<std::vector<RevisionRecord>> SqlStore::History(std::optional<std::string_view> kind,
                                                      std::optional<std::string_view> name,
                                                      int limit) {
  SqlParams params;
  std::string sql =
      "SELECT " + std::string(kRevisionColumns) + " FROM config_revisions WHERE 1 = 1";
  if (kind) sql += " AND kind = " + Param(params, std::string(*kind));
  if (name) sql += " AND name = " + Param(params, std::string(*name));
  sql += " ORDER BY seq DESC";
  if (limit > 0) sql += " LIMIT " + Param(params, int64_t{limit});
  return Run(Mode::kRead, [&](SqlConnection& db) -> Result<std::vector<RevisionRecord>> {
    ASSIGN_OR_RETURN(auto rows, db.Query(sql, params));
    std::vector<RevisionRecord> records;
    records.reserve(rows.size());
    for (const SqlRow& row : rows) {
      ASSIGN_OR_RETURN(RevisionRecord record, RevisionFromRow(row));
      records.push_back(std::move(record));
    }
    return records;
  });
}

Result<RevisionRecord> SqlStore::GetRevision(std::string_view kind, std::string_view name,
                                             int64_t revision) {
  return Run(Mode::kRead, [&](SqlConnection& db) -> Result<RevisionRecord> {
    ASSIGN_OR_RETURN(auto rows, db.Query("SELECT " + std::string(kRevisionColumns) +
                                             " FROM config_revisions WHERE kind = $1 AND "
                                             "name = $2 AND revision = $3",
                                         {std::string(kind), std::string(name), revision}));
    if (rows.empty()) {
      return NotFoundError("config " + ConfigKey(kind, name) + " has no revision " +
                           std::to_string(revision));
    }
    return RevisionFromRow(rows[0]);
  });
}

Result<int64_t> SqlStore::ConfigGeneration() {
  return Run(Mode::kStatement, [&](SqlConnection& db) -> Result<int64_t> {
    ASSIGN_OR_RETURN(auto rows, db.Query("SELECT value FROM config_generation WHERE id = 1", {}));
    if (rows.size() != 1) return InternalError("store: config_generation has no row");
    return rows[0].Int(0);
  });
}

Result<Store::Generations> SqlStore::ReadGenerations(SqlConnection& db) {
  ASSIGN_OR_RETURN(auto rows, db.Query("SELECT c.value, n.value FROM config_generation c, "
                                       "node_generation n WHERE c.id = 1 AND n.id = 1",
                                       {}));
  if (rows.size() != 1) return InternalError("store: a generation row is missing");
  return Generations{rows[0].Int(0), rows[0].Int(1)};
}

Result<Store::Generations> SqlStore::GetGenerations() {
  return Run(Mode::kStatement, [&](SqlConnection& db) { return ReadGenerations(db); });
}

}  // namespace gpupool::store
