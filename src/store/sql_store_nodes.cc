// SqlStore: nodes.

#include "store/sql_store.h"
#include "store/sql_store_internal.h"

namespace gpupool::store {

namespace internal {

Status UpsertNodesIn(SqlConnection& db, const std::vector<NodeRecord>& nodes,
                     const std::vector<std::string>& objects, bool replace_all) {
  RETURN_IF_ERROR(
      db.Query("UPDATE node_generation SET value = value + 1 WHERE id = 1", {}).status());
  if (replace_all) RETURN_IF_ERROR(db.Query("DELETE FROM nodes", {}).status());
  for (size_t i = 0; i < nodes.size(); ++i) {
    RETURN_IF_ERROR(db.Query("INSERT INTO nodes (name, object) VALUES ($1, $2) "
                             "ON CONFLICT (name) DO UPDATE SET object = excluded.object",
                             {nodes[i].name, objects[i]})
                        .status());
  }
  return OkStatus();
}

Result<std::vector<std::string>> EncodeNodes(const std::vector<NodeRecord>& nodes) {
  std::vector<std::string> objects;
  objects.reserve(nodes.size());
  for (const NodeRecord& node : nodes) {
    RETURN_IF_ERROR(RequireNonEmpty(node.name, "node name"));
    ASSIGN_OR_RETURN(std::string object, DumpJson(node.object, "node " + node.name));
    objects.push_back(std::move(object));
  }
  return objects;
}

}  // namespace internal

namespace {

using internal::DumpJson;
using internal::EncodeNodes;
using internal::HoldFence;
using internal::ParseStoredJson;
using internal::RequireNonEmpty;
using internal::UpsertNodesIn;

}  // namespace

Status SqlStore::UpsertNodes(const std::vector<NodeRecord>& nodes, bool replace_all) {
  ASSIGN_OR_RETURN(std::vector<std::string> objects, EncodeNodes(nodes));
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Status {
    return UpsertNodesIn(db, nodes, objects, replace_all);
  });
}

Status SqlStore::DeleteNodes(const std::vector<std::string>& names) {
  if (names.empty()) return OkStatus();
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Status {
    RETURN_IF_ERROR(
        db.Query("UPDATE node_generation SET value = value + 1 WHERE id = 1", {}).status());
    for (const std::string& name : names) {
      RETURN_IF_ERROR(db.Query("DELETE FROM nodes WHERE name = $1", {name}).status());
    }
    return OkStatus();
  });
}

// One conditional statement per change; RETURNING tells whether it matched (both databases).
Status SqlStore::ChangeNodesIfUnchanged(const std::vector<NodeChange>& changes,
                                        const LeaseFence* fence) {
  struct Texts {
    std::string expected, next;
  };
  std::vector<Texts> texts(changes.size());
  for (size_t i = 0; i < changes.size(); ++i) {
    RETURN_IF_ERROR(RequireNonEmpty(changes[i].name, "node name"));
    const std::string what = "node " + changes[i].name;
    if (changes[i].expected) {
      ASSIGN_OR_RETURN(texts[i].expected, DumpJson(*changes[i].expected, what));
    }
    if (changes[i].next) {
      ASSIGN_OR_RETURN(texts[i].next, DumpJson(*changes[i].next, what));
    }
  }
  if (changes.empty()) return OkStatus();
  return Run(Mode::kWrite, [&](SqlConnection& db) -> Status {
    if (fence != nullptr) RETURN_IF_ERROR(HoldFence(db, *fence));
    RETURN_IF_ERROR(
        db.Query("UPDATE node_generation SET value = value + 1 WHERE id = 1", {}).status());
    for (size_t i = 0; i < changes.size(); ++i) {
      const NodeChange& change = changes[i];
      Result<std::vector<SqlRow>> rows = std::vector<SqlRow>{};
      if (!change.expected) {
        rows = db.Query(
            "INSERT INTO nodes (name, object) VALUES ($1, $2) "
            "ON CONFLICT (name) DO NOTHING RETURNING name",
            {change.name, texts[i].next});
      } else if (change.next) {
        rows = db.Query(
            "UPDATE nodes SET object = $3 WHERE name = $1 AND object = $2 "
            "RETURNING name",
            {change.name, texts[i].expected, texts[i].next});
      } else {
        rows = db.Query("DELETE FROM nodes WHERE name = $1 AND object = $2 RETURNING name",
                        {change.name, texts[i].expected});
      }
      if (!rows.ok()) return rows.status();
      if (rows->empty()) {
        return AbortedError("node \"" + change.name +
                            "\" changed since it was read; nothing was written");
      }
    }
    return OkStatus();
  });
}

Result<std::vector<NodeRecord>> SqlStore::ListNodes() {
  return Run(Mode::kRead, [&](SqlConnection& db) -> Result<std::vector<NodeRecord>> {
    ASSIGN_OR_RETURN(auto rows, db.Query("SELECT name, object FROM nodes ORDER BY name", {}));
    std::vector<NodeRecord> nodes;
    nodes.reserve(rows.size());
    for (const SqlRow& row : rows) {
      NodeRecord node;
      node.name = row.Text(0);
      ASSIGN_OR_RETURN(node.object, ParseStoredJson(row, 1, "node " + node.name));
      nodes.push_back(std::move(node));
    }
    return nodes;
  });
}

}  // namespace gpupool::store
