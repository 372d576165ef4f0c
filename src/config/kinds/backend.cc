#include <regex>

#include "codec/field_path.h"
#include "common/strings.h"
#include "config/json_fields.h"
#include "config/kinds.h"
#include "config/kinds/shared.h"

namespace gpupool::config {

using internal::CheckBodyFields;
using internal::CheckBodyName;
using internal::CheckObject;
using internal::ReadBool;
using internal::ReadInt;
using internal::ReadString;
using internal::ReadStringList;
using internal::StringList;
using internal::TypeError;
using internal::WithName;
using internal::WriteField;

// ---- BACKEND ------------------------------------------------------------------------------

namespace {

// The body's fields besides "name" (internal::BackendFields).
constexpr std::string_view kBackendFields[] = {"description",
                                               "version",
                                               "k8s_uid",
                                               "k8s_namespace",
                                               "dashboard_url",
                                               "grafana_url",
                                               "tests",
                                               "scheduler_settings",
                                               "node_conditions",
                                               "last_heartbeat",
                                               "created_date",
                                               "router_address",
                                               "online",
                                               "enable_node_pools",
                                               "enable_cpu_quota",
                                               "enable_over_quota",
                                               "slurm"};

Status DecodeSlurmConnection(const Json& body, std::optional<SlurmConnection>& out) {
  auto slurm = body.find("slurm");
  if (slurm == body.end()) return OkStatus();
  const std::string path = "slurm";
  RETURN_IF_ERROR(
      CheckObject(*slurm, path, {"url", "jwt_file", "user", "partition", "output_dir"}));
  SlurmConnection c;
  for (auto [key, field] :
       {std::pair{"url", &c.url}, std::pair{"jwt_file", &c.jwt_file}, std::pair{"user", &c.user},
        std::pair{"partition", &c.partition}, std::pair{"output_dir", &c.output_dir}}) {
    RETURN_IF_ERROR(ReadString(*slurm, key, path, field));
  }
  const bool http = c.url.starts_with("http://") && c.url.size() > 7;
  const bool unix_socket = c.url.starts_with("unix:/");
  if (!http && !unix_socket) {
    return InvalidArgumentError(
        path + ".url: expected http://HOST:PORT (slurmrestd with JWT) or unix:/PATH, got \"" +
        c.url + "\"");
  }
  out = std::move(c);
  return OkStatus();
}

Status DecodeBackend(const Json& body, Backend& b) {
  RETURN_IF_ERROR(CheckBodyFields(body, kBackendFields));
  RETURN_IF_ERROR(CheckBodyName(body, b.name, "backend"));
  for (auto [key, out] :
       {std::pair{"description", &b.description}, std::pair{"version", &b.version},
        std::pair{"k8s_uid", &b.k8s_uid}, std::pair{"k8s_namespace", &b.k8s_namespace},
        std::pair{"dashboard_url", &b.dashboard_url}, std::pair{"grafana_url", &b.grafana_url},
        std::pair{"router_address", &b.router_address}}) {
    RETURN_IF_ERROR(ReadString(body, key, "", out));
  }
  RETURN_IF_ERROR(ReadStringList(body, "tests", "", &b.tests));
  RETURN_IF_ERROR(ReadBool(body, "enable_node_pools", "", &b.enable_node_pools));
  RETURN_IF_ERROR(ReadBool(body, "enable_cpu_quota", "", &b.enable_cpu_quota));
  RETURN_IF_ERROR(ReadBool(body, "enable_over_quota", "", &b.enable_over_quota));
  auto sched = body.find("scheduler_settings");
  if (sched != body.end()) {
    const std::string path = "scheduler_settings";
    RETURN_IF_ERROR(
        CheckObject(*sched, path, {"scheduler_type", "scheduler_name", "scheduler_timeout"}));
    RETURN_IF_ERROR(
        ReadString(*sched, "scheduler_type", path, &b.scheduler_settings.scheduler_type));
    RETURN_IF_ERROR(
        ReadString(*sched, "scheduler_name", path, &b.scheduler_settings.scheduler_name));
    RETURN_IF_ERROR(
        ReadInt(*sched, "scheduler_timeout", path, &b.scheduler_settings.scheduler_timeout));
    if (b.scheduler_settings.scheduler_type.empty()) {
      return InvalidArgumentError(path + ".scheduler_type: must not be empty");
    }
    if (b.scheduler_settings.scheduler_timeout <= 0) {
      return InvalidArgumentError(path + ".scheduler_timeout: must be > 0 seconds");
    }
  }
  auto conditions = body.find("node_conditions");
  if (conditions != body.end()) {
    const std::string path = "node_conditions";
    RETURN_IF_ERROR(CheckObject(*conditions, path, {"rules", "prefix"}));
    auto rules = conditions->find("rules");
    if (rules != conditions->end()) {
      if (!rules->is_object()) return TypeError(path + ".rules", "an object", *rules);
      for (const auto& [type, status] : rules->items()) {
        std::string p = codec::FieldPath(path + ".rules", type);
        if (!status.is_string()) return TypeError(p, "a regular expression string", status);
        for (const std::string& re : {type, status.get<std::string>()}) {
          try {
            std::regex compiled(re);
          } catch (const std::regex_error& e) {
            return InvalidArgumentError(p + ": invalid regular expression \"" + re + "\"");
          }
        }
      }
      b.node_conditions.rules = *rules;
    }
    RETURN_IF_ERROR(ReadString(*conditions, "prefix", path, &b.node_conditions.prefix));
  }
  if (b.node_conditions.rules.empty()) b.node_conditions.rules = Json{{"Ready", "True"}};
  RETURN_IF_ERROR(DecodeSlurmConnection(body, b.slurm));
  auto online = body.find("online");
  if (online != body.end() && !online->is_boolean()) {
    return TypeError("online", "a boolean", *online);
  }
  for (const char* key : {"last_heartbeat", "created_date"}) {
    auto it = body.find(key);
    if (it != body.end() && !it->is_string() && !it->is_null()) {
      return TypeError(key, "a timestamp string or null", *it);
    }
  }
  return OkStatus();
}

}  // namespace

std::span<const std::string_view> internal::BackendFields() { return kBackendFields; }

Result<Backend> BackendFromJson(std::string_view name, const Json& body) {
  RETURN_IF_ERROR(ValidateName("backend", name));
  Backend b;
  b.name = std::string(name);
  Status s = DecodeBackend(body, b);
  if (!s.ok()) return s.WithContext("backend \"" + std::string(name) + "\"");
  b.raw = body;
  return b;
}

Json BackendToJson(const Backend& b, bool with_name) {
  Json out = WithName(b.raw.is_object() ? b.raw : Json::object(), b.name, with_name);
  for (auto [key, value] :
       {std::pair{"description", &b.description}, std::pair{"version", &b.version},
        std::pair{"k8s_uid", &b.k8s_uid}, std::pair{"k8s_namespace", &b.k8s_namespace},
        std::pair{"dashboard_url", &b.dashboard_url}, std::pair{"grafana_url", &b.grafana_url},
        std::pair{"router_address", &b.router_address}}) {
    WriteField(out, key, *value, value->empty());
  }
  WriteField(out, "tests", StringList(b.tests), b.tests.empty());
  WriteField(out, "enable_node_pools", b.enable_node_pools, b.enable_node_pools);
  WriteField(out, "enable_cpu_quota", b.enable_cpu_quota, b.enable_cpu_quota);
  WriteField(out, "enable_over_quota", b.enable_over_quota, b.enable_over_quota);
  if (b.slurm) {
    Json slurm = Json::object();
    slurm["url"] = b.slurm->url;
    for (auto [key, value] :
         {std::pair{"jwt_file", &b.slurm->jwt_file}, std::pair{"user", &b.slurm->user},
          std::pair{"partition", &b.slurm->partition},
          std::pair{"output_dir", &b.slurm->output_dir}}) {
      WriteField(slurm, key, *value, value->empty());
    }
    out["slurm"] = std::move(slurm);
  } else {
    out.erase("slurm");
  }
  SchedulerSettings defaults;
  const SchedulerSettings& s = b.scheduler_settings;
  bool sched_default = s.scheduler_type == defaults.scheduler_type &&
                       s.scheduler_name == defaults.scheduler_name &&
                       s.scheduler_timeout == defaults.scheduler_timeout;
  Json sched = out.contains("scheduler_settings") && out["scheduler_settings"].is_object()
                   ? out["scheduler_settings"]
                   : Json::object();
  WriteField(sched, "scheduler_type", s.scheduler_type,
             s.scheduler_type == defaults.scheduler_type);
  WriteField(sched, "scheduler_name", s.scheduler_name,
             s.scheduler_name == defaults.scheduler_name);
  WriteField(sched, "scheduler_timeout", s.scheduler_timeout,
             s.scheduler_timeout == defaults.scheduler_timeout);
  WriteField(out, "scheduler_settings", sched, sched_default && sched.empty());
  NodeConditions nc_default;
  nc_default.rules = Json{{"Ready", "True"}};
  Json nc = out.contains("node_conditions") && out["node_conditions"].is_object()
                ? out["node_conditions"]
                : Json::object();
  bool had_rules = nc.contains("rules");
  WriteField(nc, "rules", b.node_conditions.rules,
             !had_rules && b.node_conditions.rules == nc_default.rules);
  WriteField(nc, "prefix", b.node_conditions.prefix, b.node_conditions.prefix == nc_default.prefix);
  WriteField(out, "node_conditions", nc, nc.empty());
  return out;
}

}  // namespace gpupool::config
