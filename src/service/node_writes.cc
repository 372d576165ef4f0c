// `gpupool node import FILE`, and the access check of every node write (apply writes nodes too).

#include <set>
#include <string>
#include <vector>

#include "config/access.h"
#include "model/k8s.h"
#include "model/node_import.h"
#include "service/service_internal.h"
#include "service/snapshot_cache.h"
#include "store/store.h"

namespace gpupool::service {

Status CheckNodeWriteAccess(const Caller& caller, const config::ConfigSet& set) {
  Status access = config::CheckAccess(caller.roles, "PUT", "/api/nodes", set);
  if (access.ok()) return access;
  return PermissionDeniedError("access denied: user " + Quoted(caller.user) + ": " +
                               access.message());
}

Result<NodeImportResult> Service::ImportNodes(const Caller& caller, std::string_view text,
                                              std::string_view file_name, bool replace_all) {
  ASSIGN_OR_RETURN(SnapshotPtr snap, cache_->Get(store_));
  RETURN_IF_ERROR(CheckNodeWriteAccess(caller, snap->set));
  ASSIGN_OR_RETURN(auto nodes, model::ParseNodes(text, file_name));
  std::vector<store::NodeRecord> records;
  NodeImportResult result;
  std::set<std::string> seen;
  for (const auto& n : nodes) {
    if (!seen.insert(n.name).second) {
      return InvalidArgumentError(FilePrefix(file_name) + "node " + Quoted(n.name) +
                                  " appears twice");
    }
    records.push_back(store::NodeRecord{n.name, model::NodeToJson(n)});
    result.names.push_back(n.name);
  }
  result.imported = static_cast<int>(records.size());
  store::Store::WriteAlso also;
  also.audit.push_back(
      AuditOf(caller, "node import", file_name, std::to_string(records.size()) + " nodes"));
  also.nodes = std::move(records);
  also.replace_all_nodes = replace_all;
  RETURN_IF_ERROR(store_.WriteConfigs({}, ActorOf(caller), also).status());
  return result;
}

}  // namespace gpupool::service
