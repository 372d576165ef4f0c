// `gpupool apply -f FILE|DIR`: manifests of config kinds and v1 Nodes, parsed, planned and
// checked document by document, then written together (DESIGN §2).

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codec/field_path.h"
#include "codec/json_reader.h"
#include "codec/source_map.h"
#include "codec/yaml_reader.h"
#include "common/strings.h"
#include "config/kinds.h"
#include "model/disruption_budget.h"
#include "model/k8s.h"
#include "service/located_errors.h"
#include "service/service_internal.h"
#include "service/snapshot_cache.h"
#include "store/store.h"
#include "submit/job_workflow.h"
#include "submit/workflow.h"

namespace gpupool::service {
namespace {

using json = nlohmann::ordered_json;
using config::Kind;

// The documents of one file: one JSON document (when the first non-blank character is `{` or
// `[`, as codec::ParseJsonOrYamlDocuments decides), or every document of a YAML stream.
Result<std::vector<SourceDocument>> ParseManifestFile(const ManifestFile& file) {
  std::vector<SourceDocument> docs;
  if (const std::optional<size_t> start = JsonStart(file.text)) {
    ASSIGN_OR_RETURN(json value, codec::ParseJson(file.text, file.name));
    auto map = std::make_shared<const codec::JsonSourceMap>(codec::JsonSourceMap::Build(file.text));
    docs.push_back({std::move(value), file.name, codec::PositionOfOffset(file.text, *start).line,
                    std::move(map), ""});
    return docs;
  }
  ASSIGN_OR_RETURN(auto yaml, codec::ParseYamlDocuments(file.text, file.name));
  for (codec::YamlDocument& d : yaml) {
    docs.push_back({std::move(d.value), file.name, d.line,
                    std::make_shared<const codec::JsonSourceMap>(std::move(d.source_map)), ""});
  }
  return docs;
}

bool IsList(const json& doc) {
  if (!doc.is_object()) return false;
  auto kind = doc.find("kind");
  return kind != doc.end() && (*kind == "NodeList" || *kind == "List");
}

// Every document of every file; the items of a NodeList (or List) are documents of their own.
Result<std::vector<SourceDocument>> ParseManifests(const std::vector<ManifestFile>& files) {
  std::vector<SourceDocument> out;
  for (const ManifestFile& file : files) {
    ASSIGN_OR_RETURN(std::vector<SourceDocument> docs, ParseManifestFile(file));
    for (SourceDocument& doc : docs) {
      if (!IsList(doc.value)) {
        out.push_back(std::move(doc));
        continue;
      }
      const json& items = doc.value.value("items", json());
      for (size_t i = 0; items.is_array() && i < items.size(); ++i) {
        SourceDocument item{items[i], doc.file, doc.line, doc.map,
                            JoinPath(doc.map_path, codec::IndexPath("items", i))};
        item.line = NearestPosition(item, "").line;
        out.push_back(std::move(item));
      }
    }
  }
  return out;
}

std::string StringMember(const json& object, std::string_view key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string ManifestName(const json& doc) {
  auto metadata = doc.find("metadata");
  return metadata != doc.end() && metadata->is_object() ? StringMember(*metadata, "name") : "";
}

// A Job of the apply and the workflow it runs as (its errors point into the document).
struct PlannedJob {
  const SourceDocument* doc = nullptr;
  std::string name;
  submit::JobSubmission submission;
};

// What apply does with the documents: configs to validate and write together, nodes to import,
// Jobs to submit as workflows once those are written.
struct ManifestPlan {
  std::vector<PendingPut> puts;
  std::vector<store::NodeRecord> nodes;
  std::vector<PlannedJob> jobs;
};

Status PlanNode(const SourceDocument& doc, ManifestPlan& plan) {
  const DocumentSubject subject = ManifestSubject("Node", ManifestName(doc.value));
  auto node = model::NodeFromJson(doc.value);
  if (!node.ok()) return LocateError(node.status(), doc, subject);
  plan.nodes.push_back(store::NodeRecord{node->name, model::NodeToJson(*node)});
  return OkStatus();
}

// apiVersion, kind and the top-level fields of a config manifest; its kind.
Result<Kind> ManifestKind(const SourceDocument& doc) {
  const json& v = doc.value;
  std::vector<std::string> kinds;
  for (Kind k : config::AllKinds()) kinds.emplace_back(config::KindManifestName(k));
  const std::string kind_text = StringMember(v, "kind");
  if (std::find(kinds.begin(), kinds.end(), kind_text) == kinds.end()) {
    return AtField(doc, "", "kind",
                   "unknown kind " + Quoted(kind_text) + DidYouMean(kind_text, kinds) +
                       "; expected one of " + Join(kinds, ", ") + ", Node, Job");
  }
  const DocumentSubject subject = ManifestSubject(kind_text, ManifestName(v));
  const std::string api_version = StringMember(v, "apiVersion");
  if (kind_text == config::KindManifestName(Kind::kPodDisruptionBudget)) {
    if (api_version != model::kPodDisruptionBudgetApiVersion) {
      return AtField(doc, subject.text, "apiVersion",
                     "expected \"policy/v1\", got " + Quoted(api_version));
    }
    // The server's tasks run in namespace default: a budget elsewhere would select none of them.
    const json& metadata = v.value("metadata", json());
    const std::string ns = metadata.is_object() ? StringMember(metadata, "namespace") : "";
    if (!ns.empty() && ns != "default") {
      return AtField(
          doc, subject.text, "metadata.namespace",
          "expected \"default\" (the namespace of the server's tasks), got " + Quoted(ns));
    }
  } else if (api_version != "gpupool.io/v1") {
    return AtField(
        doc, subject.text, "apiVersion",
        "expected \"gpupool.io/v1\" (or kind Node with apiVersion v1), got " + Quoted(api_version));
  }
  for (const auto& [key, value] : v.items()) {
    if (key != "apiVersion" && key != "kind" && key != "metadata" && key != "spec") {
      return AtField(doc, subject.text, key,
                     "unknown field" + DidYouMean(key, {"apiVersion", "kind", "metadata", "spec"}) +
                         "; expected apiVersion, kind, metadata, spec");
    }
  }
  return config::ParseKind(kind_text);
}

// A config manifest becomes a put whose errors point into the document (which must outlive it).
Status PlanConfig(const SourceDocument& doc, ManifestPlan& plan) {
  ASSIGN_OR_RETURN(Kind kind, ManifestKind(doc));
  const std::string name = ManifestName(doc.value);
  const std::string kind_text(config::KindManifestName(kind));
  if (name.empty()) return AtField(doc, kind_text, "metadata.name", "required string");
  // Checked here (the decoders check names too) to point at metadata.name, not at the spec.
  const DocumentSubject at_root = ManifestSubject(kind_text, name);
  RETURN_IF_ERROR(LocateError(model::ValidateConfigName(name, "metadata.name"), doc, at_root));
  json spec = doc.value.value("spec", json());
  if (spec.is_null()) spec = kind == Kind::kResourceValidation ? json::array() : json::object();
  const DocumentSubject subject = ManifestSubject(kind_text, name, "spec", !IsOsmoKind(kind));
  PendingPut put{kind, name, std::move(spec)};
  put.locate = [&doc, subject](const Status& status) { return LocateError(status, doc, subject); };
  plan.puts.push_back(std::move(put));
  return OkStatus();
}

// A batch/v1 Job becomes a workflow submission (submit/job_workflow.h), checked here as far as
// the manifest alone can be; the pipeline checks the rest when it is submitted.
Status PlanJob(const SourceDocument& doc, ManifestPlan& plan) {
  const std::string name = ManifestName(doc.value);
  auto submission = submit::WorkflowFromJob(doc.value);
  if (!submission.ok()) {
    return LocateError(submission.status(), doc, ManifestSubject("Job", name));
  }
  plan.jobs.push_back(PlannedJob{&doc, name, std::move(*submission)});
  return OkStatus();
}

Status PlanDocument(const SourceDocument& doc, ManifestPlan& plan) {
  if (!doc.value.is_object()) {
    return AtField(doc, "", "", "expected an object, got " + codec::JsonTypeName(doc.value));
  }
  const std::string kind = StringMember(doc.value, "kind");
  if (kind == "Node") return PlanNode(doc, plan);
  if (kind == "Job") return PlanJob(doc, plan);
  return PlanConfig(doc, plan);
}

// One apply writes each object once: the same kind and name twice (in one file or two) is
// refused at the second, naming the first ("... Queue q: metadata.name: also defined at
// a.yaml:3:9"), rather than failing in the write as a concurrent change would.
Status CheckDefinedOnce(const SourceDocument& doc,
                        std::map<std::string, const SourceDocument*>& defined) {
  if (!doc.value.is_object()) return OkStatus();
  const std::string kind = StringMember(doc.value, "kind");
  const std::string name = ManifestName(doc.value);
  if (kind.empty() || name.empty()) return OkStatus();
  auto [first, inserted] = defined.try_emplace(kind + "/" + name, &doc);
  if (inserted) return OkStatus();
  const codec::SourcePosition at = NearestPosition(*first->second, "metadata.name");
  return AtField(doc, kind + " " + name, "metadata.name",
                 "also defined at " + first->second->file + ":" + std::to_string(at.line) + ":" +
                     std::to_string(at.column) + "; an apply defines each object once");
}

std::string FileNames(const std::vector<ManifestFile>& files) {
  std::vector<std::string> names;
  for (const ManifestFile& file : files) names.push_back(file.name);
  return Join(names, " ");
}

// The Jobs of an apply, after its configs and nodes (which they may use) are written: each
// planned as a dry run first, so that one the pipeline refuses stops them all before any is
// stored; then submitted, each with its idempotency key (the same Job applied again finds its
// workflow).
Result<std::vector<AppliedJob>> SubmitJobs(Service& service, const Caller& caller,
                                           const std::vector<PlannedJob>& jobs, bool wrote_before) {
  const std::string after = wrote_before
                                ? " (the configs and nodes of this apply were written; no Job "
                                  "was submitted)"
                                : "";
  std::vector<SubmitRequest> requests;
  for (const PlannedJob& job : jobs) {
    SubmitRequest request;
    request.pool = job.submission.pool;
    if (request.pool.empty()) {
      ASSIGN_OR_RETURN(ProfileView profile, service.Profile(caller));
      if (profile.default_pool.empty()) {
        return AtField(
            *job.doc, "Job " + job.name, std::string("metadata.labels.") + submit::kPoolLabel,
            "required: user " + Quoted(caller.user) +
                " has no default pool (pools they may submit to: " +
                (profile.pools.empty() ? "none" : Join(profile.pools, ", ")) + ")" + after);
      }
      request.pool = profile.default_pool;
    }
    request.workflow = std::make_shared<const submit::WorkflowSpec>(job.submission.workflow);
    request.idempotency_key = job.submission.idempotency_key;
    request.file_name = job.doc->file;
    request.dry_run = true;
    auto planned = service.SubmitWorkflow(caller, request);
    if (!planned.ok()) {
      return AtField(*job.doc, "Job " + job.name, "", planned.status().message() + after,
                     planned.status().code());
    }
    request.dry_run = false;
    requests.push_back(std::move(request));
  }
  std::vector<AppliedJob> applied;
  for (size_t i = 0; i < requests.size(); ++i) {
    auto submitted = service.SubmitWorkflow(caller, requests[i]);
    if (!submitted.ok()) {
      std::vector<std::string> done;
      for (const AppliedJob& job : applied) done.push_back(job.name + " (" + job.workflow_id + ")");
      return AtField(*jobs[i].doc, "Job " + jobs[i].name, "",
                     submitted.status().message() + " (submitted before it: " +
                         (done.empty() ? "none" : Join(done, ", ")) + ")",
                     submitted.status().code());
    }
    applied.push_back(AppliedJob{jobs[i].name, submitted->workflow_id, submitted->pool,
                                 submitted->queue, submitted->status, submitted->task_count,
                                 submitted->existing});
  }
  return applied;
}

}  // namespace

Result<ApplyResult> Service::Apply(const Caller& caller, const ApplyRequest& request) {
  ASSIGN_OR_RETURN(std::vector<SourceDocument> docs, ParseManifests(request.files));
  const std::string names = FileNames(request.files);
  if (docs.empty()) {
    return InvalidArgumentError("no manifests in " + (names.empty() ? "the request" : names));
  }
  ManifestPlan plan;                                     // its puts point into `docs`
  std::map<std::string, const SourceDocument*> defined;  // "Kind/name" -> where, first time
  for (const SourceDocument& doc : docs) {
    RETURN_IF_ERROR(CheckDefinedOnce(doc, defined));
    RETURN_IF_ERROR(PlanDocument(doc, plan));
  }
  if (!plan.nodes.empty()) {
    // Before the configs are written, so that a caller who may not write nodes writes nothing.
    ASSIGN_OR_RETURN(SnapshotPtr snap, cache_->Get(store_));
    RETURN_IF_ERROR(CheckNodeWriteAccess(caller, snap->set));
  }
  // Configs, nodes and their audit records commit together: an apply that fails writes nothing.
  store::Store::WriteAlso also;
  if (!plan.nodes.empty()) {
    also.audit.push_back(
        AuditOf(caller, "node import", names, std::to_string(plan.nodes.size()) + " nodes"));
    also.nodes = plan.nodes;
  }
  ApplyResult result;
  result.nodes_imported = static_cast<int>(plan.nodes.size());
  if (!plan.puts.empty()) {
    const std::string description =
        request.description.empty() ? "gpupool apply -f " + names : request.description;
    ASSIGN_OR_RETURN(result.configs, ValidateAndWrite(store_, *cache_, machine_pools_, caller,
                                                      plan.puts, "update", description, "", also));
  } else if (!plan.nodes.empty() || plan.jobs.empty()) {
    RETURN_IF_ERROR(store_.WriteConfigs({}, ActorOf(caller), also).status());
  }
  if (!plan.jobs.empty()) {
    const bool wrote = !plan.puts.empty() || !plan.nodes.empty();
    ASSIGN_OR_RETURN(result.jobs, SubmitJobs(*this, caller, plan.jobs, wrote));
  }
  return result;
}

}  // namespace gpupool::service
