#include "scheduler/scenario.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "codec/json_reader.h"
#include "codec/source_map.h"
#include "codec/yaml_reader.h"
#include "common/clock.h"
#include "common/strings.h"
#include "common/table.h"
#include "model/input_file.h"
#include "model/job.h"

namespace gpupool::scheduler {
namespace {

using Json = nlohmann::ordered_json;

std::string ObjectName(const Json& doc) {
  if (doc.is_object() && doc.contains("metadata") && doc["metadata"].is_object() &&
      doc["metadata"].contains("name") && doc["metadata"]["name"].is_string()) {
    return doc["metadata"]["name"].get<std::string>();
  }
  return "";
}

// A `Backend` document (gpupool.io/v1): the scenario's cluster, `default`, and seed 003's
// switches (cluster_settings.h); the BACKEND config's other fields mean nothing offline.
Status ReadClusterSwitches(const Json& doc, ClusterSettings& settings) {
  const std::string name = ObjectName(doc);
  if (name != "default") {
    return InvalidArgumentError(
        "metadata.name: expected \"default\" (a scenario is one cluster, the backend "
        "`default`), got \"" +
        name + "\"");
  }
  if (!doc.contains("spec")) return OkStatus();
  const Json& spec = doc["spec"];
  if (!spec.is_object()) {
    return InvalidArgumentError("spec: expected an object, got " + std::string(spec.type_name()));
  }
  static const std::vector<std::string> kFields = {"description", "enable_node_pools",
                                                   "enable_cpu_quota", "enable_over_quota"};
  std::map<std::string, bool*> switches = {{"enable_node_pools", &settings.node_pools},
                                           {"enable_cpu_quota", &settings.cpu_quota},
                                           {"enable_over_quota", &settings.over_quota}};
  for (const auto& [key, value] : spec.items()) {
    if (key == "description") continue;
    auto it = switches.find(key);
    if (it == switches.end()) {
      return InvalidArgumentError("spec." + key + ": unknown field" + DidYouMean(key, kFields) +
                                  "; a scenario's Backend holds enable_node_pools, "
                                  "enable_cpu_quota and enable_over_quota");
    }
    if (!value.is_boolean()) {
      return InvalidArgumentError("spec." + key + ": expected true or false, got " +
                                  std::string(value.type_name()));
    }
    *it->second = value.get<bool>();
  }
  return OkStatus();
}

Status AddDocument(const Json& doc, const std::string& where, Scenario& scenario);

// A List, NodeList or PodList: each item a document of its own (a typed list's items may omit
// their kind).
Status AddListItems(const Json& doc, const std::string& kind, const std::string& where,
                    const std::string& label, Scenario& scenario) {
  if (!doc.contains("items") || !doc["items"].is_array()) {
    return InvalidArgumentError(label + ": items: expected a list");
  }
  for (size_t i = 0; i < doc["items"].size(); ++i) {
    Json item = doc["items"][i];
    if (item.is_object() && !item.contains("kind")) {
      if (kind == "NodeList") item["kind"] = "Node";
      if (kind == "PodList") item["kind"] = "Pod";
    }
    RETURN_IF_ERROR(AddDocument(item, where + ": items[" + std::to_string(i) + "]", scenario));
  }
  return OkStatus();
}

Status AddNode(const Json& doc, const std::string& name, const std::string& label,
               Scenario& scenario) {
  Result<model::Node> node = model::NodeFromJson(doc);
  if (!node.ok()) {
    // The decoder names the node too ("node \"n\": status..."); the label already does.
    const Status status = node.status();
    std::string_view message = status.message();
    const std::string subject = "node \"" + name + "\": ";
    if (StartsWith(message, subject)) message.remove_prefix(subject.size());
    return InvalidArgumentError(label + ": " + std::string(message));
  }
  scenario.snapshot.nodes.push_back(std::move(node).value());
  return OkStatus();
}

// A pod, with what the scheduler would otherwise stumble on refused here, with the file: a bad
// gang-min (it would stay pending), creationTimestamp (its queue order) or status.startTime (a
// bound pod's binding time, for NoExecute tolerationSeconds).
Status AddPod(const Json& doc, Scenario& scenario) {
  ASSIGN_OR_RETURN(model::PodScheduling pod, model::PodSchedulingFromJson(doc));
  if (auto gang_min = pod.labels.find(kGangMinLabel); gang_min != pod.labels.end()) {
    Result<int64_t> parsed = ParseGangMin(gang_min->second);
    if (!parsed.ok()) {
      return parsed.status().WithContext("metadata.labels." + std::string(kGangMinLabel));
    }
  }
  if (!pod.creation_timestamp.empty() && !ParseTimestampMillis(pod.creation_timestamp)) {
    return InvalidArgumentError("metadata.creationTimestamp: expected an RFC 3339 time, got \"" +
                                pod.creation_timestamp + "\"");
  }
  if (!pod.node_name.empty() && doc.contains("status") && doc["status"].is_object() &&
      doc["status"].contains("startTime") && doc["status"]["startTime"].is_string()) {
    const std::string text = doc["status"]["startTime"].get<std::string>();
    std::optional<int64_t> started = ParseTimestampMillis(text);
    if (!started) {
      return InvalidArgumentError("status.startTime: expected an RFC 3339 time, got \"" + text +
                                  "\"");
    }
    scenario.snapshot.bound_at_ms[PodKey(pod)] = *started;
  }
  scenario.snapshot.pods.push_back(std::move(pod));
  return OkStatus();
}

Status AddDocument(const Json& doc, const std::string& where, Scenario& scenario) {
  static const std::vector<std::string> kKinds = {
      "Node", "Pod",  "Queue",    "NodePool", "MachinePool", "PodDisruptionBudget",
      "Job",  "List", "NodeList", "PodList",  "Backend"};
  if (!doc.is_object()) {
    return InvalidArgumentError(where + ": expected an object with \"kind\", got " +
                                std::string(doc.type_name()));
  }
  if (!doc.contains("kind") || !doc["kind"].is_string()) {
    return InvalidArgumentError(where +
                                ": kind: required (one of Node, Pod, Queue, NodePool, "
                                "MachinePool, PodDisruptionBudget, Job, List)");
  }
  const std::string kind = doc["kind"].get<std::string>();
  const std::string name = ObjectName(doc);
  const std::string label = where + ": " + kind + (name.empty() ? "" : " " + name);
  auto fail = [&](const Status& s) { return InvalidArgumentError(label + ": " + s.message()); };
  if (kind == "List" || kind == "NodeList" || kind == "PodList") {
    return AddListItems(doc, kind, where, label, scenario);
  }
  if (kind == "Node") {
    return AddNode(doc, name, label, scenario);
  } else if (kind == "Pod") {
    if (Status added = AddPod(doc, scenario); !added.ok()) return fail(added);
  } else if (kind == "Queue") {
    Result<model::Queue> queue = model::QueueFromManifest(doc);
    if (!queue.ok()) return fail(queue.status());
    scenario.snapshot.queues.push_back(std::move(queue).value());
  } else if (kind == "NodePool") {
    Result<model::NodePool> pool = model::NodePoolFromManifest(doc);
    if (!pool.ok()) return fail(pool.status());
    scenario.snapshot.node_pools.push_back(std::move(pool).value());
  } else if (kind == "MachinePool") {
    scenario.machine_pools.push_back(doc);
  } else if (kind == "Job") {
    // The pods the Job controller would create now: parallelism of them, up to completions.
    Result<model::Job> job = model::JobFromManifest(doc);
    if (!job.ok()) return fail(job.status());
    for (const Json& pod : model::JobPods(*job, 0, model::JobPodsToStart(*job, 0, 0))) {
      RETURN_IF_ERROR(AddDocument(pod, label, scenario));
    }
  } else if (kind == "Backend") {
    Status read = ReadClusterSwitches(doc, scenario.settings);
    if (!read.ok()) return fail(read);
  } else if (kind == "PodDisruptionBudget") {
    Result<model::PodDisruptionBudget> budget = model::PodDisruptionBudgetFromManifest(doc);
    if (!budget.ok()) return fail(budget.status());
    scenario.snapshot.disruption_budgets.push_back(std::move(budget).value());
  } else {
    return InvalidArgumentError(where + ": kind \"" + kind + "\" is not part of a scenario" +
                                DidYouMean(kind, kKinds) +
                                "; expected Node, Pod, Queue, NodePool, MachinePool, "
                                "PodDisruptionBudget, Job, Backend or a List");
  }
  return OkStatus();
}

// End (one past) of the JSON value that starts at `start` (not blank): the matching bracket of
// an object or array, the closing quote of a string, else the next blank or bracket. Only finds
// the boundary; ParseJson checks the value. text.size() when it never ends.
size_t JsonValueEnd(std::string_view text, size_t start) {
  const char first = text[start];
  if (first != '{' && first != '[' && first != '"') {
    size_t end = start + 1;
    while (end < text.size() &&
           std::string_view(" \t\r\n{}[]\"").find(text[end]) == std::string_view::npos) {
      ++end;
    }
    return end;
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
        if (depth == 0) return i + 1;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return text.size();
}

// ParseJson's "<file>:<line>:<column>: " for a value parsed on its own, moved to where the value
// starts in its file.
Status Relocate(const Status& status, const std::string& file, codec::SourcePosition start) {
  std::string_view rest = status.message();
  const std::string prefix = file + ":";
  if ((start.line == 1 && start.column == 1) || !StartsWith(rest, prefix)) return status;
  rest.remove_prefix(prefix.size());
  auto number = [&rest](char separator) {
    int value = 0;
    size_t i = 0;
    for (; i < rest.size() && i < 9 && rest[i] >= '0' && rest[i] <= '9'; ++i) {
      value = value * 10 + (rest[i] - '0');
    }
    if (i == 0 || i >= rest.size() || rest[i] != separator) return -1;
    rest.remove_prefix(i + 1);
    return value;
  };
  const int line = number(':');
  const int column = line < 0 ? -1 : number(':');
  if (column < 0) return status;
  const int at_line = start.line + line - 1;
  const int at_column = line == 1 ? start.column + column - 1 : column;
  return Status(status.code(), prefix + std::to_string(at_line) + ":" + std::to_string(at_column) +
                                   ":" + std::string(rest));
}

// A document's error as AddDocument words it ("<file>:<line>: Kind name: <field path>: what",
// with "items[3]" steps for lists), moved from the document's first line to the field's own line
// and column when the source map knows the field path.
Status PointAtField(const Status& status, const codec::JsonSourceMap& map, const std::string& file,
                    int line) {
  const std::string prefix = file + ":" + std::to_string(line) + ": ";
  const std::string& message = status.message();
  if (map.empty() || !StartsWith(message, prefix)) return status;
  std::string within;  // "items[3]." while inside a list item
  std::optional<codec::SourcePosition> found;
  size_t at = prefix.size();
  while (at < message.size()) {
    size_t end = message.find(": ", at);
    if (end == std::string::npos) break;
    const std::string segment = message.substr(at, end - at);
    if (StartsWith(segment, "items[") || StartsWith(segment, "[")) {
      within += segment + ".";
    } else if (auto position = map.FindFieldPath(within + segment)) {
      found = position;
    }
    at = end + 2;
  }
  if (!found) return status;
  return Status(status.code(), file + ":" + std::to_string(found->line) + ":" +
                                   std::to_string(found->column) + ": " +
                                   message.substr(prefix.size()));
}

// A JSON text holds one or more JSON values one after another (concatenated, or one per line as
// in JSON Lines), each a document; a top-level array is a list of documents. Errors name the
// file, and the line (and column) where the value starts.
Status AddJsonStream(std::string_view text, const std::string& file, Scenario& scenario) {
  codec::SourcePosition at;  // of `offset`
  size_t offset = 0;
  auto advance = [&](size_t to) {
    const codec::SourcePosition step = codec::PositionOfOffset(text.substr(offset), to - offset);
    at.column = step.line == 1 ? at.column + step.column - 1 : step.column;
    at.line += step.line - 1;
    offset = to;
  };
  while (true) {
    const size_t start = text.find_first_not_of(" \t\r\n", offset);
    if (start == std::string_view::npos) return OkStatus();
    advance(start);
    const size_t end = JsonValueEnd(text, start);
    const std::string_view value = text.substr(start, end - start);
    Result<Json> doc = codec::ParseJson(value, file);
    if (!doc.ok()) return Relocate(doc.status(), file, at);
    const std::string where = file + ":" + std::to_string(at.line);
    Status added = OkStatus();
    if (doc->is_array()) {
      for (size_t i = 0; i < doc->size() && added.ok(); ++i) {
        added = AddDocument((*doc)[i], where + ": [" + std::to_string(i) + "]", scenario);
      }
    } else {
      added = AddDocument(*doc, where, scenario);
    }
    if (!added.ok()) {
      // The value's own map counts lines from the value's start; Relocate moves them.
      Status located = PointAtField(added, codec::JsonSourceMap::Build(value), file, at.line);
      return located.message() == added.message() ? added : Relocate(located, file, at);
    }
    advance(end);
  }
}

}  // namespace

Status AddScenarioText(std::string_view text, std::string_view file_name, Scenario& scenario) {
  std::string_view trimmed = Trim(text);
  if (!trimmed.empty() && (trimmed.front() == '{' || trimmed.front() == '[')) {
    return AddJsonStream(text, std::string(file_name), scenario);
  }
  const std::string file(file_name);
  Result<std::vector<codec::YamlDocument>> docs = codec::ParseYamlDocuments(text, file_name);
  if (!docs.ok()) return docs.status();
  for (const codec::YamlDocument& doc : *docs) {
    Status added = AddDocument(doc.value, file + ":" + std::to_string(doc.line), scenario);
    if (!added.ok()) return PointAtField(added, doc.source_map, file, doc.line);
  }
  return OkStatus();
}

Status ValidateScenario(const Scenario& scenario) {
  const ClusterSnapshot& s = scenario.snapshot;
  std::set<std::string> seen;
  for (const auto& n : s.nodes) {
    if (!seen.insert(n.name).second) return InvalidArgumentError("Node " + n.name + ": duplicate");
  }
  seen.clear();
  for (const auto& p : s.pods) {
    if (!seen.insert(PodKey(p)).second) {
      return InvalidArgumentError("Pod " + PodKey(p) + ": duplicate");
    }
  }
  seen.clear();
  for (const auto& p : s.node_pools) {
    if (!seen.insert(p.name).second) {
      return InvalidArgumentError("NodePool " + p.name + ": duplicate");
    }
  }
  seen.clear();
  for (const auto& b : s.disruption_budgets) {
    const std::string key = b.namespace_ == "default" ? b.name : b.namespace_ + "/" + b.name;
    if (!seen.insert(key).second) {
      return InvalidArgumentError("PodDisruptionBudget " + key + ": duplicate");
    }
  }
  std::vector<std::string> queue_names;
  seen.clear();
  for (const auto& q : s.queues) {
    if (!seen.insert(q.name).second) return InvalidArgumentError("Queue " + q.name + ": duplicate");
    queue_names.push_back(q.name);
  }
  std::map<std::string, std::string> parents;
  for (const auto& q : s.queues) {
    if (!q.parent.empty() && !seen.contains(q.parent)) {
      return InvalidArgumentError("Queue " + q.name + ": spec.parent: queue \"" + q.parent +
                                  "\" not found" + DidYouMean(q.parent, queue_names));
    }
    parents[q.name] = q.parent;
  }
  for (const auto& q : s.queues) {
    if (std::vector<std::string> cycle = model::FindParentCycle(parents, q.name); !cycle.empty()) {
      return InvalidArgumentError(
          "Queue " + q.name +
          ": spec.parent: queues must form a tree, not a cycle: " + Join(cycle, " -> "));
    }
  }
  return OkStatus();
}

Result<Scenario> LoadScenarioFiles(const std::vector<std::string>& paths) {
  Scenario scenario;
  if (paths.empty()) return InvalidArgumentError("no scenario file given");
  for (const std::string& path : paths) {
    ASSIGN_OR_RETURN(std::string text, model::ReadFile(path));
    RETURN_IF_ERROR(AddScenarioText(text, path, scenario));
  }
  RETURN_IF_ERROR(ValidateScenario(scenario));
  return scenario;
}

ClusterSnapshot SwitchedSnapshot(const Scenario& scenario) {
  ClusterSnapshot switched = scenario.snapshot;
  ApplyNodePoolSwitch(scenario.settings, switched.queues, switched.node_pools);
  ApplyClusterSettings(scenario.settings, switched);
  return switched;
}

ScheduleResult Schedule(const Scenario& scenario, const SchedulerOptions& options) {
  const ClusterSettings& settings = scenario.settings;
  if (settings.node_pools && settings.cpu_quota && settings.over_quota) {
    return Scheduler(options).RunCycle(scenario.snapshot);
  }
  return Scheduler(options).RunCycle(SwitchedSnapshot(scenario));
}

namespace {

Json GpuJson(int64_t milli) {
  if (milli == model::kUnlimited) return -1;
  if (milli % 1000 == 0) return milli / 1000;
  return static_cast<double>(milli) / 1000.0;
}

Json AmountJson(int r, int64_t amount) {
  if (amount == model::kUnlimited) return -1;
  if (r == 0) return GpuJson(amount);
  if (r == 1) return model::FormatQuotaAmount(model::QuotaResource::kCpu, amount);
  return model::FormatQuotaAmount(model::QuotaResource::kMemory, amount * 1000);
}

}  // namespace

Json ScheduleResultToJson(const ScheduleResult& result) {
  Json out = Json::object();
  Json placements = Json::array();
  for (const Binding& b : result.bindings) {
    Json entry = {{"pod", b.pod}, {"node", b.node}, {"nodePool", b.node_pool}, {"queue", b.queue}};
    if (b.gpu_device >= 0) entry["gpuDevice"] = b.gpu_device;
    placements.push_back(std::move(entry));
  }
  out["placements"] = std::move(placements);
  Json unschedulable = Json::array();
  for (const PendingPod& p : result.unschedulable) {
    unschedulable.push_back({{"pod", p.pod},
                             {"reason", p.reason},
                             {"outcome", std::string(PlacementOutcomeName(p.outcome))}});
  }
  out["unschedulable"] = std::move(unschedulable);
  Json evictions = Json::array();
  for (const Eviction& e : result.evictions) {
    evictions.push_back({{"pod", e.pod},
                         {"node", e.node},
                         {"reason", std::string(EvictionReasonName(e.reason))},
                         {"message", e.message}});
  }
  out["evictions"] = std::move(evictions);
  if (!result.blocked_evictions.empty()) {
    Json blocked = Json::array();
    for (const BlockedEviction& b : result.blocked_evictions) {
      blocked.push_back(
          {{"pod", b.pod}, {"node", b.node}, {"forPod", b.for_pod}, {"message", b.message}});
    }
    out["blockedEvictions"] = std::move(blocked);
  }
  if (!result.no_execute_deadlines.empty()) {
    Json deadlines = Json::array();
    for (const NoExecuteDeadline& d : result.no_execute_deadlines) {
      deadlines.push_back(
          {{"pod", d.pod},
           {"node", d.node},
           {"taint", d.taint},
           {"tolerationSeconds", d.toleration_seconds},
           {"deadline", d.deadline_ms ? Json(FormatTimestamp(*d.deadline_ms)) : Json(nullptr)}});
    }
    out["noExecuteDeadlines"] = std::move(deadlines);
  }
  Json fair_share = Json::object();
  for (const QueueShare& s : result.fair_share) {
    Json pool = Json::object();
    for (int r = 0; r < model::kNumQuotaResources; ++r) {
      const ResourceShare& x = s.resources[r];
      pool[std::string(model::kQuotaResourceNames[r])] = {
          {"deserved", AmountJson(r, x.deserved)},
          {"fairShare", AmountJson(r, x.fair_share)},
          {"allocated", AmountJson(r, x.allocated)},
          {"limit", AmountJson(r, x.limit)}};
    }
    fair_share[s.queue][s.node_pool] = std::move(pool);
  }
  out["fairShare"] = std::move(fair_share);
  return out;
}

std::string ScheduleResultToTable(const ScheduleResult& result) {
  std::string out;
  std::vector<std::vector<std::string>> rows = {{"POD", "NODE", "NODE POOL", "QUEUE"}};
  for (const Binding& b : result.bindings) rows.push_back({b.pod, b.node, b.node_pool, b.queue});
  out += "PLACEMENTS (" + std::to_string(result.bindings.size()) + ")\n" + FormatTable(rows);
  rows = {{"POD", "REASON"}};
  for (const PendingPod& p : result.unschedulable) rows.push_back({p.pod, p.reason});
  out +=
      "\nUNSCHEDULABLE (" + std::to_string(result.unschedulable.size()) + ")\n" + FormatTable(rows);
  rows = {{"POD", "NODE", "REASON", "MESSAGE"}};
  for (const Eviction& e : result.evictions) {
    rows.push_back({e.pod, e.node, std::string(EvictionReasonName(e.reason)), e.message});
  }
  out += "\nEVICTIONS (" + std::to_string(result.evictions.size()) + ")\n" + FormatTable(rows);
  if (!result.blocked_evictions.empty()) {
    rows = {{"POD", "NODE", "FOR POD", "KEPT BY"}};
    for (const BlockedEviction& b : result.blocked_evictions) {
      rows.push_back({b.pod, b.node, b.for_pod, b.message});
    }
    out += "\nEVICTIONS BLOCKED BY DISRUPTION BUDGETS (" +
           std::to_string(result.blocked_evictions.size()) + ")\n" + FormatTable(rows);
  }
  if (!result.no_execute_deadlines.empty()) {
    rows = {{"POD", "NODE", "TAINT", "TOLERATION SECONDS", "DEADLINE"}};
    for (const NoExecuteDeadline& d : result.no_execute_deadlines) {
      rows.push_back({d.pod, d.node, d.taint, std::to_string(d.toleration_seconds),
                      d.deadline_ms ? FormatTimestamp(*d.deadline_ms) : "unknown (no time)"});
    }
    out += "\nNOEXECUTE DEADLINES (" + std::to_string(result.no_execute_deadlines.size()) + ")\n" +
           FormatTable(rows);
  }
  rows = {{"QUEUE", "NODE POOL", "GPU DESERVED", "GPU FAIR SHARE", "GPU ALLOCATED", "GPU LIMIT"}};
  for (const QueueShare& s : result.fair_share) {
    const ResourceShare& g = s.resources[0];
    rows.push_back({s.queue, s.node_pool, AmountJson(0, g.deserved).dump(),
                    AmountJson(0, g.fair_share).dump(), AmountJson(0, g.allocated).dump(),
                    g.limit == model::kUnlimited ? "none" : AmountJson(0, g.limit).dump()});
  }
  out += "\nFAIR SHARE\n" + FormatTable(rows);
  return out;
}

}  // namespace gpupool::scheduler
