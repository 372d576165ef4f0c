#include "slurm/objects.h"

#include <algorithm>

#include "common/strings.h"

namespace gpupool::slurm {
namespace {

using Json = nlohmann::ordered_json;

std::string TypeName(const Json& value) {
  if (value.is_string()) return "\"" + value.get<std::string>() + "\"";
  return value.type_name();
}

// Typed reads of one object's fields; the first error wins and names the field path.
class Reader {
 public:
  Reader(const Json& object, std::string path) : object_(object), path_(std::move(path)) {}

  const Json* Find(const char* name) const {
    auto it = object_.find(name);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  void Int(const char* name, int64_t& out) {
    const Json* v = Find(name);
    if (v == nullptr) return;
    if (v->is_number_integer()) {
      out = v->get<int64_t>();
    } else if (v->is_number_float()) {  // slurmrestd writes a few counters as floats
      out = static_cast<int64_t>(v->get<double>());
    } else {
      Fail(name, "an integer", *v);
    }
  }

  void String(const char* name, std::string& out) {
    const Json* v = Find(name);
    if (v == nullptr) return;
    if (v->is_string()) {
      out = v->get<std::string>();
    } else {
      Fail(name, "a string", *v);
    }
  }

  void Strings(const char* name, std::vector<std::string>& out) {
    const Json* v = Find(name);
    if (v == nullptr) return;
    if (!v->is_array()) return Fail(name, "a list of strings", *v);
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string()) {
        return Fail((std::string(name) + "[" + std::to_string(i) + "]").c_str(), "a string",
                    (*v)[i]);
      }
      out.push_back((*v)[i].get<std::string>());
    }
  }

  Status status() const { return status_; }

 private:
  void Fail(const char* name, const char* expected, const Json& got) {
    if (!status_.ok()) return;
    status_ = InvalidArgumentError(path_ + "." + name + ": expected " + expected + ", got " +
                                   TypeName(got));
  }

  const Json& object_;
  std::string path_;
  Status status_;
};

// The list under `key` of a response, each element an object.
Result<const Json*> ListOf(const Json& response, const char* key) {
  if (!response.is_object()) {
    return InvalidArgumentError(std::string("response: expected an object with \"") + key +
                                "\", got " + std::string(response.type_name()));
  }
  auto it = response.find(key);
  if (it == response.end() || it->is_null()) return static_cast<const Json*>(nullptr);
  if (!it->is_array()) {
    return InvalidArgumentError(std::string(key) + ": expected a list, got " + TypeName(*it));
  }
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_object()) {
      return InvalidArgumentError(std::string(key) + "[" + std::to_string(i) +
                                  "]: expected an object, got " + TypeName((*it)[i]));
    }
  }
  return &*it;
}

std::vector<std::string> CommaList(const std::string& text) {
  std::vector<std::string> out;
  for (auto& part : Split(text, ',')) {
    std::string trimmed(Trim(part));
    if (!trimmed.empty() && trimmed != "(null)") out.push_back(std::move(trimmed));
  }
  return out;
}

}  // namespace

Result<std::vector<SlurmNode>> ParseNodes(const Json& response) {
  ASSIGN_OR_RETURN(const Json* list, ListOf(response, "nodes"));
  std::vector<SlurmNode> nodes;
  if (list == nullptr) return nodes;
  for (size_t i = 0; i < list->size(); ++i) {
    Reader r((*list)[i], "nodes[" + std::to_string(i) + "]");
    SlurmNode n;
    r.String("name", n.name);
    r.String("state", n.state);
    n.state = ToLower(n.state);
    r.Strings("state_flags", n.flags);
    r.String("reason", n.reason);
    r.Int("reason_changed_at", n.reason_changed_at);
    r.Int("cpus", n.cpus);
    r.Int("real_memory", n.real_memory_mb);
    r.Int("temporary_disk", n.temporary_disk_mb);
    r.String("gres", n.gres);
    r.String("gres_used", n.gres_used);
    r.Int("alloc_cpus", n.alloc_cpus);
    r.Int("alloc_memory", n.alloc_memory_mb);
    std::string features, active_features;
    r.String("features", features);
    r.String("active_features", active_features);
    n.features = CommaList(active_features.empty() ? features : active_features);
    r.Strings("partitions", n.partitions);
    RETURN_IF_ERROR(r.status());
    if (n.name.empty()) {
      return InvalidArgumentError("nodes[" + std::to_string(i) + "].name: missing");
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

Result<std::vector<SlurmPartition>> ParsePartitions(const Json& response) {
  ASSIGN_OR_RETURN(const Json* list, ListOf(response, "partitions"));
  std::vector<SlurmPartition> partitions;
  if (list == nullptr) return partitions;
  for (size_t i = 0; i < list->size(); ++i) {
    Reader r((*list)[i], "partitions[" + std::to_string(i) + "]");
    SlurmPartition p;
    r.String("name", p.name);
    r.String("state", p.state);
    r.String("nodes", p.nodes);
    std::vector<std::string> flags;
    r.Strings("flags", flags);
    RETURN_IF_ERROR(r.status());
    p.is_default = std::find(flags.begin(), flags.end(), "default") != flags.end();
    partitions.push_back(std::move(p));
  }
  return partitions;
}

Result<std::vector<SlurmJob>> ParseJobs(const Json& response) {
  ASSIGN_OR_RETURN(const Json* list, ListOf(response, "jobs"));
  std::vector<SlurmJob> jobs;
  if (list == nullptr) return jobs;
  for (size_t i = 0; i < list->size(); ++i) {
    Reader r((*list)[i], "jobs[" + std::to_string(i) + "]");
    SlurmJob j;
    r.Int("job_id", j.job_id);
    r.String("name", j.name);
    r.String("comment", j.comment);
    r.String("job_state", j.state);
    r.String("state_reason", j.state_reason);
    r.String("state_description", j.state_description);
    r.Int("exit_code", j.exit_code);
    r.String("nodes", j.nodes);
    r.String("partition", j.partition);
    r.Int("submit_time", j.submit_time);
    r.Int("start_time", j.start_time);
    r.Int("end_time", j.end_time);
    r.Int("cpus", j.cpus);
    r.Int("memory_per_node", j.memory_per_node_mb);
    r.Int("memory_per_cpu", j.memory_per_cpu_mb);
    r.Strings("gres_detail", j.gres_detail);
    r.String("standard_output", j.standard_output);
    r.Int("array_job_id", j.array_job_id);
    r.String("array_task_string", j.array_task_string);
    if (r.Find("array_task_id") != nullptr) {  // null for the not-started elements' record
      int64_t id = 0;
      r.Int("array_task_id", id);
      j.array_task_id = id;
    }
    RETURN_IF_ERROR(r.status());
    if (j.job_id <= 0) {
      return InvalidArgumentError("jobs[" + std::to_string(i) + "].job_id: missing");
    }
    jobs.push_back(std::move(j));
  }
  return jobs;
}

Json SubmissionToJson(const JobSubmission& s) {
  Json job = Json::object();
  job["name"] = s.name;
  if (!s.comment.empty()) job["comment"] = s.comment;
  if (!s.partition.empty()) job["partition"] = s.partition;
  if (!s.nodelist.empty()) job["nodelist"] = s.nodelist;
  job["cpus_per_task"] = s.cpus_per_task;
  if (s.memory_per_node_mb > 0) job["memory_per_node"] = s.memory_per_node_mb;
  if (s.temporary_disk_per_node_mb > 0) {
    job["temporary_disk_per_node"] = s.temporary_disk_per_node_mb;
  }
  if (!s.gpus_per_node.empty()) job["gpus_per_node"] = s.gpus_per_node;
  if (s.time_limit_minutes) job["time_limit"] = *s.time_limit_minutes;
  if (!s.array.empty()) job["array"] = s.array;
  if (s.hold) job["hold"] = true;
  if (!s.dependency.empty()) job["dependency"] = s.dependency;
  job["no_requeue"] = true;
  if (!s.working_directory.empty()) job["current_working_directory"] = s.working_directory;
  if (!s.standard_output.empty()) job["standard_output"] = s.standard_output;
  Json env = Json::object();
  for (const auto& [name, value] : s.environment) env[name] = value;
  job["environment"] = std::move(env);
  Json body = Json::object();
  body["script"] = s.script;
  body["job"] = std::move(job);
  return body;
}

std::string ResponseErrors(const Json& response) {
  if (!response.is_object()) return "";
  auto it = response.find("errors");
  if (it == response.end() || !it->is_array()) return "";
  std::vector<std::string> parts;
  for (const auto& error : *it) {
    if (!error.is_object()) continue;
    std::string text;
    for (const char* key : {"description", "error"}) {
      auto field = error.find(key);
      if (field != error.end() && field->is_string() && !field->get<std::string>().empty()) {
        text = field->get<std::string>();
        break;
      }
    }
    auto source = error.find("source");
    if (source != error.end() && source->is_string() && !source->get<std::string>().empty()) {
      text += (text.empty() ? "" : " ") + std::string("(") + source->get<std::string>() + ")";
    }
    if (!text.empty()) parts.push_back(std::move(text));
  }
  return Join(parts, "; ");
}

std::string SlurmRelease(const Json& response) {
  if (!response.is_object()) return "";
  auto meta = response.find("meta");
  if (meta == response.end() || !meta->is_object()) return "";
  auto slurm = meta->find("Slurm");
  if (slurm == meta->end() || !slurm->is_object()) return "";
  auto release = slurm->find("release");
  if (release == slurm->end() || !release->is_string()) return "";
  return release->get<std::string>();
}

}  // namespace gpupool::slurm
