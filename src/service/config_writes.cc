// Config writes: config update (a config file's configs), the merge patch, the generated pool
// role, delete and rollback. All but delete go through ValidateAndWrite (validate_and_write.cc).

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "codec/json_reader.h"
#include "codec/source_map.h"
#include "codec/yaml_reader.h"
#include "common/strings.h"
#include "config/config_set.h"
#include "config/kinds.h"
#include "model/queue.h"
#include "model/quota_tree.h"
#include "service/located_errors.h"
#include "service/quota_configs.h"
#include "service/service_internal.h"
#include "service/snapshot_cache.h"
#include "store/store.h"

namespace gpupool::service {
namespace {

using json = nlohmann::ordered_json;
using config::Kind;

// ---- Config files (config update) ---------------------------------------------------------

// The request's text as a document that errors can point into (the body at `body_path`);
// nullopt without a text or a file name (a merge patch, a programmatic caller), or when the text
// is not one JSON or YAML document.
std::optional<SourceDocument> ConfigFileDocument(const UpdateConfigRequest& request) {
  if (request.text.empty() || request.file_name.empty()) return std::nullopt;
  SourceDocument doc{json(), request.file_name, 1, nullptr, request.body_path};
  if (const std::optional<size_t> start = JsonStart(request.text)) {
    doc.line = codec::PositionOfOffset(request.text, *start).line;
    doc.map =
        std::make_shared<const codec::JsonSourceMap>(codec::JsonSourceMap::Build(request.text));
  } else {
    auto yaml = codec::ParseYamlDocuments(request.text, request.file_name);
    if (!yaml.ok() || yaml->size() != 1) return std::nullopt;
    doc.line = yaml->front().line;
    doc.map = std::make_shared<const codec::JsonSourceMap>(std::move(yaml->front().source_map));
  }
  if (doc.map->empty()) return std::nullopt;
  return doc;
}

// A SplitConfigFile error: at the field it names ("p.name: ..."), else prefixed with the file's
// name (an error may be about the command line's name, which is not in the file).
Status SplitError(const Status& status, const std::optional<SourceDocument>& file,
                  std::string_view file_name) {
  if (file && !SplitFieldError(status.message()).path.empty()) {
    return LocateError(status, *file, DocumentSubject{});
  }
  return WithPrefix(status, FilePrefix(file_name));
}

// The puts of a config file's configs; with the file's document, each points its errors at its
// fields: `pool.json:7:7: pool "p": platforms.a.descripton: unknown field ...`, the path being
// relative to the config (the object form), or to its entry (the map form).
std::vector<PendingPut> ConfigFilePuts(Kind kind, std::vector<config::NamedBody> configs,
                                       const std::optional<SourceDocument>& file) {
  std::vector<PendingPut> puts;
  for (config::NamedBody& config : configs) {
    PendingPut put{kind, config.name, json()};
    if (file) {
      SourceDocument doc = *file;
      if (config.map_entry) doc.map_path = JoinPath(doc.map_path, config.name);
      put.locate = [doc = std::move(doc), subject = ConfigSubject(kind, config.name)](
                       const Status& status) { return LocateError(status, doc, subject); };
    }
    put.body = std::move(config.body);
    puts.push_back(std::move(put));
  }
  return puts;
}

// ---- Deletes ------------------------------------------------------------------------------

// The roles that grant `pool` by its name (`pool/<name>` among a policy's resources), as the
// built-in osmo-user role grants every user the default pool.
std::vector<std::string> RolesNamingPool(const config::ConfigSet& set, std::string_view pool) {
  const std::string resource = "pool/" + std::string(pool);
  std::vector<std::string> roles;
  for (const auto& [name, role] : set.roles) {
    bool names = std::any_of(role.policies.begin(), role.policies.end(), [&](const auto& p) {
      return p.effect == config::Effect::kAllow &&
             std::find(p.resources.begin(), p.resources.end(), resource) != p.resources.end();
    });
    if (names) roles.push_back(name);
  }
  return roles;
}

// Deleting a pool that a role grants by name (the default pool: every user's) leaves that role's
// members nowhere to submit; it takes --force, and then says so.
Status CheckPoolNotGranted(const config::ConfigSet& set, const std::string& pool, bool force,
                           std::vector<std::string>* warnings) {
  std::vector<std::string> roles = RolesNamingPool(set, pool);
  if (roles.empty()) return OkStatus();
  const std::string granted = "pool " + Quoted(pool) + " is granted by name by role" +
                              (roles.size() > 1 ? "s " : " ") + Join(roles, ", ");
  if (!force) {
    return FailedPreconditionError(granted +
                                   ": their members would have no pool to submit to; change "
                                   "the roles first, or pass --force to delete it anyway");
  }
  warnings->push_back(granted + ": deleted anyway (--force); their members cannot submit there");
  return OkStatus();
}

// A node pool that queues hold quota in, or a department with projects, is deleted only with
// --force, and then with a warning: the queues' quota there, or the projects' parent, dangles
// (the next write of those queues must fix it).
Status CheckQuotaTreeDelete(const config::ConfigSet& set,
                            const std::map<std::pair<std::string, std::string>, json>& stored,
                            Kind kind, const std::string& name, bool force,
                            std::vector<std::string>* warnings) {
  const QuotaConfigs configs = DecodeQuotaConfigs(stored);
  std::string users;
  if (kind == Kind::kNodePool) {
    auto queues = model::QueuesUsingNodePool(configs.queues, name);
    auto pools = config::UsersOf(set, kind, name);
    if (queues.empty() && pools.empty()) return OkStatus();
    std::vector<std::string> uses;
    if (!queues.empty()) uses.push_back("holds quota of queues " + Join(queues, ", "));
    if (!pools.empty()) uses.push_back("is a default node pool of pools " + Join(pools, ", "));
    users = "node pool " + Quoted(name) + " " + Join(uses, " and ");
  } else {
    auto projects = model::ProjectsOf(configs.queues, name);
    if (projects.empty()) return OkStatus();
    users = "department " + Quoted(name) + " has projects " + Join(projects, ", ");
  }
  if (!force) {
    return FailedPreconditionError(users +
                                   "; change them first, or pass --force to delete it anyway");
  }
  warnings->push_back(users + ": deleted anyway (--force); fix them at their next update");
  return OkStatus();
}

}  // namespace

Result<WriteResult> Service::UpdateConfig(const Caller& caller,
                                          const UpdateConfigRequest& request) {
  ASSIGN_OR_RETURN(Kind kind, config::ParseKind(request.kind));
  if (!request.body.is_object() && !request.body.is_array()) {
    return InvalidArgumentError(FilePrefix(request.file_name) + "expected a JSON object, got " +
                                codec::JsonTypeName(request.body));
  }
  // Before the body is copied: a copy of a tree nested 20,000 deep overflows the stack.
  RETURN_IF_ERROR(
      WithPrefix(codec::CheckNestingDepth(request.body), FilePrefix(request.file_name)));
  const std::optional<SourceDocument> file = ConfigFileDocument(request);
  auto split = config::SplitConfigFile(kind, request.body, request.name);
  if (!split.ok()) return SplitError(split.status(), file, request.file_name);
  if (split->empty()) {
    return InvalidArgumentError(FilePrefix(request.file_name) + "no " +
                                std::string(config::KindName(kind)) + " config in the file");
  }
  std::vector<PendingPut> puts = ConfigFilePuts(kind, std::move(*split), file);
  if (request.expected_revision) {
    if (puts.size() != 1) {
      return InvalidArgumentError("expected_revision applies to one named config, got " +
                                  std::to_string(puts.size()));
    }
    puts.front().expected_revision = request.expected_revision;
  }
  // An empty description becomes "gpupool config update KIND NAME" per config.
  return ValidateAndWrite(store_, *cache_, machine_pools_, caller, puts, "update",
                          request.description, request.file_name);
}

json MergePatch(json target, const json& patch) {
  if (!patch.is_object()) return patch;
  if (!target.is_object()) target = json::object();
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(key);
    } else {
      auto it = target.find(key);
      json merged = MergePatch(it != target.end() ? *it : json(), value);
      target[key] = std::move(merged);
    }
  }
  return target;
}

Result<WriteResult> Service::PatchConfig(const Caller& caller, const PatchConfigRequest& request) {
  ASSIGN_OR_RETURN(std::string kind, NormalizeKind(request.kind));
  if (!request.patch.is_object()) {
    return InvalidArgumentError("merge patch of " + kind + " " + Quoted(request.name) +
                                ": expected a JSON object, got " +
                                codec::JsonTypeName(request.patch));
  }
  // MergePatch walks the patch recursively.
  RETURN_IF_ERROR(codec::CheckNestingDepth(request.patch)
                      .WithContext("merge patch of " + kind + " " + Quoted(request.name)));
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    auto current = store_.GetConfig(kind, request.name);
    if (!current.ok()) {
      if (current.status().code() == StatusCode::kNotFound) {
        return NotFoundError(kind + " " + Quoted(request.name) +
                             " does not exist (a merge patch changes an existing config)");
      }
      return current.status();
    }
    if (request.expected_revision && *request.expected_revision != current->revision) {
      return AbortedError("config " + kind + "/" + request.name + ": expected revision " +
                          std::to_string(*request.expected_revision) + " but it is " +
                          std::to_string(current->revision) +
                          " (changed concurrently; reload and retry)");
    }
    UpdateConfigRequest update;
    update.kind = kind;
    update.name = request.name;
    update.body = MergePatch(current->body, request.patch);
    update.file_name = "merge patch";
    update.description = request.description;
    update.expected_revision = current->revision;  // the body the patch was applied to
    auto result = UpdateConfig(caller, update);
    // Without If-Match, a concurrent change only means: apply the patch to the newer body.
    if (result.ok() || result.status().code() != StatusCode::kAborted ||
        request.expected_revision || attempt == kAttempts) {
      return result;
    }
  }
}

Result<WriteResult> Service::SetPoolRole(const Caller& caller, std::string_view role_name,
                                         std::string_view description) {
  ASSIGN_OR_RETURN(config::Role role, config::GeneratePoolRole(role_name));
  std::vector<PendingPut> puts{{Kind::kRole, role.name, config::RoleToJson(role)}};
  std::string desc = description.empty()
                         ? "gpupool config set ROLE " + std::string(role_name) + " pool"
                         : std::string(description);
  return ValidateAndWrite(store_, *cache_, machine_pools_, caller, puts, "update", desc, "");
}

Result<WriteResult> Service::DeleteConfig(const Caller& caller,
                                          const DeleteConfigRequest& request) {
  ASSIGN_OR_RETURN(Kind kind, config::ParseKind(request.kind));
  const std::string kind_name(config::KindName(kind));
  ASSIGN_OR_RETURN(SnapshotPtr snap_ptr, cache_->Get(store_));
  const Snapshot& snap = *snap_ptr;
  RETURN_IF_ERROR(CheckConfigWriteAccess(caller, kind, request.name, "DELETE", snap.set));
  auto rev = snap.revisions.find({kind_name, request.name});
  if (rev == snap.revisions.end()) {
    return NotFoundError(kind_name + " " + Quoted(request.name) + " does not exist" +
                         DidYouMean(request.name, config::ConfigNames(snap.set, kind)));
  }
  WriteResult result;
  if (IsOsmoKind(kind)) {
    RETURN_IF_ERROR(config::CheckDeletable(snap.set, kind, request.name));
  }
  if (kind == Kind::kNodePool || kind == Kind::kQueue) {
    RETURN_IF_ERROR(CheckQuotaTreeDelete(snap.set, snap.other, kind, request.name, request.force,
                                         &result.warnings));
  }
  if (kind == Kind::kPool) {
    RETURN_IF_ERROR(CheckPoolNotGranted(snap.set, request.name, request.force, &result.warnings));
    store::WorkflowFilter filter;
    filter.pool = request.name;
    filter.unfinished_only = true;
    filter.limit = 0;
    ASSIGN_OR_RETURN(auto workflows, store_.ListWorkflows(filter));
    if (!workflows.empty()) {
      if (!request.force) {
        return FailedPreconditionError(
            "pool " + Quoted(request.name) + " is used by unfinished workflows " +
            WorkflowIds(workflows) + "; cancel them first or pass --force");
      }
      result.warnings.push_back(
          "pool " + Quoted(request.name) +
          " deleted although unfinished workflows use it: " + WorkflowIds(workflows));
    }
  }
  store::ConfigWrite w;
  w.op = store::ConfigWrite::Op::kDelete;
  w.kind = kind_name;
  w.name = request.name;
  w.expected_revision = rev->second;
  w.action = "delete";
  w.description = request.description.empty()
                      ? "gpupool config delete " + kind_name + " " + request.name
                      : request.description;
  store::Store::WriteAlso also;
  also.audit.push_back(
      AuditOf(caller, "config delete", kind_name + "/" + request.name, w.description));
  auto revisions = store_.WriteConfigs({w}, ActorOf(caller), also);
  if (!revisions.ok()) return revisions.status();
  result.changes.push_back(ConfigChange{kind_name, request.name, (*revisions)[0], "delete"});
  return result;
}

Result<WriteResult> Service::Rollback(const Caller& caller, const RollbackRequest& request) {
  ASSIGN_OR_RETURN(Kind kind, config::ParseKind(request.kind));
  const std::string kind_name(config::KindName(kind));
  auto revision = store_.GetRevision(kind_name, request.name, request.revision);
  if (!revision.ok()) {
    if (revision.status().code() == StatusCode::kNotFound) {
      return NotFoundError(kind_name + " " + Quoted(request.name) + " has no revision " +
                           std::to_string(request.revision) + " (see gpupool config history " +
                           kind_name + " " + request.name + ")");
    }
    return revision.status();
  }
  if (revision->body.is_null()) {
    return InvalidArgumentError("revision " + std::to_string(request.revision) + " of " +
                                kind_name + " " + Quoted(request.name) +
                                " is a delete; roll back to a revision that has a body");
  }
  std::string description = request.description.empty()
                                ? "rollback " + kind_name + " " + request.name + " to revision " +
                                      std::to_string(request.revision)
                                : request.description;
  return ValidateAndWrite(store_, *cache_, machine_pools_, caller,
                          {PendingPut{kind, request.name, revision->body}}, "rollback", description,
                          "");
}

}  // namespace gpupool::service
