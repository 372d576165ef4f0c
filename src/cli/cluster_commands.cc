// `gpupool node import`, `pool list`, `resource list`, `profile`, `queue list` and
// `machinepool list` (the last three print the dashboard's views: cli/view_tables.h).

#include <CLI/CLI.hpp>
#include <cstdint>
#include <iostream>
#include <set>
#include <string>

#include "cli/commands.h"
#include "cli/view_tables.h"
#include "common/strings.h"
#include "model/input_file.h"
#include "service/service.h"

namespace gpupool::cli {
namespace {

using json = nlohmann::ordered_json;

constexpr int64_t kGi = int64_t{1} << 30;

Status NodeImport(Api& svc, const Env& env) {
  ASSIGN_OR_RETURN(std::string text, model::ReadFile(env.opts.file));
  ASSIGN_OR_RETURN(auto result, svc.ImportNodes(env.caller, text, env.opts.file, env.opts.replace));
  if (env.format != OutputFormat::kTable) {
    std::cout << Render(service::ToJson(result), env.format);
  } else {
    std::cout << "imported " << result.imported << " nodes from " << env.opts.file << "\n";
  }
  return OkStatus();
}

std::string GpuCell(int64_t used, int64_t limit) {
  return std::to_string(used) + "/" + (limit < 0 ? std::string("-") : std::to_string(limit));
}

Status PoolList(Api& svc, const Env& env) {
  ASSIGN_OR_RETURN(auto rows, svc.ListPools(env.caller));
  if (env.format != OutputFormat::kTable) {
    json out = json::array();
    for (const auto& r : rows) out.push_back(service::ToJson(r));
    std::cout << Render(out, env.format);
    return OkStatus();
  }
  Table table({"POOL", "DESCRIPTION", "STATUS", "GPU QUOTA USED/LIMIT", "GPU TOTAL USED/CAPACITY"});
  for (const auto& r : rows) {
    table.AddRow({r.name, r.description, r.status, GpuCell(r.gpu_quota_used, r.gpu_quota_limit),
                  GpuCell(r.gpu_used, r.gpu_capacity)});
  }
  std::cout << table.ToString();
  return OkStatus();
}

Status ResourceList(Api& svc, const Env& env) {
  service::ResourceFilter filter;
  if (!env.opts.pool.empty()) filter.pool = env.opts.pool;
  if (!env.opts.platform.empty()) filter.platform = env.opts.platform;
  filter.selector = env.opts.selector;
  ASSIGN_OR_RETURN(auto rows, svc.ListResources(env.caller, filter));
  if (env.format != OutputFormat::kTable) {
    json out = json::array();
    for (const auto& r : rows) out.push_back(service::ToJson(r));
    std::cout << Render(out, env.format);
    return OkStatus();
  }
  Table table({"NODE", "POOL", "PLATFORM", "TYPE", "NODE POOL", "STORAGE [Gi]", "CPU [#]",
               "MEMORY [Gi]", "GPU [#]"});
  std::set<std::string> conflicts;
  for (const auto& r : rows) {
    // A node in two node pools shows both, marked, and is reported once below the table.
    std::string node_pool = r.node_pools.empty() ? "default" : Join(r.node_pools, ",");
    if (!r.node_pool_conflict.empty()) {
      node_pool += " (conflict)";
      conflicts.insert(r.node_pool_conflict);
    }
    table.AddRow({r.node, r.pool, r.platform, r.type, node_pool,
                  UsedOfCapacity(r.storage_used, r.storage_capacity, kGi),
                  UsedOfCapacity(r.cpu_used, r.cpu_capacity, 1000),
                  UsedOfCapacity(r.memory_used, r.memory_capacity, kGi),
                  UsedOfCapacity(r.gpu_used, r.gpu_capacity, 1000)});
  }
  std::cout << table.ToString();
  for (const std::string& conflict : conflicts) std::cerr << "warning: " << conflict << "\n";
  if (rows.empty()) std::cerr << "no nodes match\n";
  return OkStatus();
}

}  // namespace

void AddClusterCommands(CLI::App& app, Options& o, const UseCommand& use) {
  // node
  CLI::App* node = app.add_subcommand("node", "cluster nodes");
  node->require_subcommand(1);
  CLI::App* import = node->add_subcommand(
      "import", "import kubectl Node/NodeList (JSON or YAML) or the openb node CSV");
  import->add_option("FILE", o.file)->required();
  import->add_flag("--replace", o.replace, "afterwards hold exactly these nodes");
  use(import, NodeImport);

  // pool
  CLI::App* pool = app.add_subcommand("pool", "pools");
  pool->require_subcommand(1);
  use(pool->add_subcommand("list", "pools with status and GPU quota"), PoolList);

  // resource
  CLI::App* resource = app.add_subcommand("resource", "nodes by pool and platform");
  resource->require_subcommand(1);
  CLI::App* rlist = resource->add_subcommand("list", "nodes with pool, platform, type, usage");
  rlist->add_option("-p,--pool", o.pool);
  rlist->add_option("--platform", o.platform);
  rlist->add_option("-l,--selector", o.selector,
                    "label selector, as `oc get nodes -l`: k=v, k!=v, k in (a,b), k notin (a,b), "
                    "k, !k; comma-joined");
  use(rlist, ResourceList);

  // profile
  CLI::App* profile =
      app.add_subcommand("profile", "who you are, your roles, the pools you may use");
  use(profile, [](Api& svc, const Env& env) { return PrintProfile(svc, env.caller, env.format); });

  // queue, machinepool: the read-only views as tables
  CLI::App* queue = app.add_subcommand("queue", "departments and projects (quota per node pool)");
  queue->require_subcommand(1);
  CLI::App* qlist = queue->add_subcommand("list", "quota, fair share, allocation, pending");
  qlist->add_option("--resource", o.resource, "gpu, cpu or memory")->capture_default_str();
  use(qlist, [](Api& svc, const Env& env) {
    return PrintQueueList(svc, env.caller, env.format, env.opts.resource);
  });
  CLI::App* machinepool = app.add_subcommand("machinepool", "autoscaled machine pools");
  machinepool->require_subcommand(1);
  CLI::App* mlist = machinepool->add_subcommand("list", "replicas, prices, cost, last scale event");
  use(mlist,
      [](Api& svc, const Env& env) { return PrintMachinePoolList(svc, env.caller, env.format); });

  for (CLI::App* sub : {node, pool, resource, queue, machinepool, profile}) sub->fallthrough();
  for (CLI::App* sub : {import, rlist, qlist, mlist}) sub->fallthrough();
}

}  // namespace gpupool::cli
