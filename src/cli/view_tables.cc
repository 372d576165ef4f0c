#include "cli/view_tables.h"

#include <cmath>
#include <iostream>
#include <string>

#include "common/strings.h"
#include "model/queue.h"

namespace gpupool::cli {
namespace {

using json = nlohmann::ordered_json;

// A quantity of the view (milli-units; bytes for memory) in the resource's units; -1 unlimited,
// null (no scheduling loop has computed it) "-".
std::string Amount(const json& value, model::QuotaResource resource) {
  if (!value.is_number_integer()) return "-";
  const int64_t amount = value.get<int64_t>();
  if (amount == model::kUnlimited) return "unlimited";
  // Memory comes in bytes; FormatQuotaAmount takes milli-units.
  const int64_t milli = resource == model::QuotaResource::kMemory ? amount * 1000 : amount;
  return model::FormatQuotaAmount(resource, milli);
}

std::string Ratio(const json& value) {
  if (!value.is_number()) return "-";
  return std::to_string(static_cast<int64_t>(std::llround(value.get<double>() * 100))) + "%";
}

Result<model::QuotaResource> ParseResource(std::string_view resource) {
  for (int r = 0; r < model::kNumQuotaResources; ++r) {
    if (model::kQuotaResourceNames[r] == resource) return static_cast<model::QuotaResource>(r);
  }
  return InvalidArgumentError("--resource \"" + std::string(resource) +
                              "\": expected gpu, cpu or memory");
}

}  // namespace

Status PrintQueueList(Api& api, const service::Caller& caller, OutputFormat format,
                      std::string_view resource) {
  ASSIGN_OR_RETURN(model::QuotaResource r, ParseResource(resource));
  ASSIGN_OR_RETURN(json view, api.View(caller, "queues", {{"resource", std::string(resource)}}));
  if (format != OutputFormat::kTable) {
    std::cout << Render(view, format);
    return OkStatus();
  }
  Table table({"QUEUE", "NODE POOL", "DESERVED", "LIMIT", "OVER-QUOTA WEIGHT", "FAIR SHARE",
               "ALLOCATED", "ALLOCATION RATIO", "PENDING", "PENDING TASKS"});
  for (const json& row : view.value("rows", json::array())) {
    const std::string indent(2 * static_cast<size_t>(row.value("depth", 0)), ' ');
    table.AddRow({indent + row.value("queue", ""), row.value("node_pool", ""),
                  Amount(row.value("deserved", json()), r), Amount(row.value("limit", json()), r),
                  std::to_string(row.value("weight", int64_t{0})),
                  Amount(row.value("fair_share", json()), r),
                  Amount(row.value("allocated", json()), r), Ratio(row.value("ratio", json())),
                  Amount(row.value("pending", json()), r),
                  std::to_string(row.value("pending_tasks", 0))});
  }
  std::cout << table.ToString();
  if (table.empty()) std::cerr << "no queues\n";
  if (!view.value("leader", false)) {
    std::cerr << "note: fair share and allocation come from a server's scheduling loop (use "
                 "--server URL); shown here: the configured quotas and what is pending\n";
  }
  return OkStatus();
}

Status PrintMachinePoolList(Api& api, const service::Caller& caller, OutputFormat format) {
  ASSIGN_OR_RETURN(json view, api.View(caller, "machine-pools", {}));
  if (format != OutputFormat::kTable) {
    std::cout << Render(view, format);
    return OkStatus();
  }
  Table table({"NAME", "INSTANCE TYPE", "CAPACITY TYPE", "REPLICAS", "PRICE/HOUR", "COST SO FAR",
               "STATUS", "LAST SCALE EVENT"});
  for (const json& pool : view.value("pools", json::array())) {
    auto text = [&pool](const char* key) {
      return pool.contains(key) && pool[key].is_string() ? pool[key].get<std::string>()
                                                         : std::string("-");
    };
    // rosa prints autoscaling replicas as min-max; the current count comes first here.
    const std::string replicas = std::to_string(pool.value("current", 0)) + "/" +
                                 std::to_string(pool.value("min", 0)) + "-" +
                                 std::to_string(pool.value("max", 0));
    const std::string last = text("last_event");
    table.AddRow({text("name"), text("instance_type"), text("capacity_type"), replicas,
                  text("price_per_hour") == "-" ? "-" : "$" + text("price_per_hour"),
                  "$" + text("cost_so_far"), text("status"), last.empty() ? "-" : last});
  }
  std::cout << table.ToString();
  if (table.empty()) std::cerr << "no machine pools\n";
  return OkStatus();
}

Status PrintProfile(Api& api, const service::Caller& caller, OutputFormat format) {
  ASSIGN_OR_RETURN(service::ProfileView profile, api.Profile(caller));
  if (format != OutputFormat::kTable) {
    std::cout << Render(service::ToJson(profile), format);
    return OkStatus();
  }
  Table table({"USER", "ROLES", "POOLS", "DEFAULT POOL", "QUEUES"});
  table.AddRow({profile.user, Join(profile.roles, ","), Join(profile.pools, ","),
                profile.default_pool.empty() ? "-" : profile.default_pool,
                profile.queues.empty() ? "-" : Join(profile.queues, ",")});
  std::cout << table.ToString();
  return OkStatus();
}

}  // namespace gpupool::cli
