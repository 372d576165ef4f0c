// `gpupool workflow submit|query|list|cancel`, and the flags of `workflow logs` (run by app.cc:
// it reads from a server, not through Api).

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "codec/yaml_writer.h"
#include "model/input_file.h"
#include "service/service.h"
#include "submit/workflow.h"

namespace gpupool::cli {
namespace {

using json = nlohmann::ordered_json;

Status WorkflowSubmit(Api& svc, const Env& env) {
  if (env.opts.pool.empty()) return InvalidArgumentError("workflow submit needs --pool POOL");
  service::SubmitRequest req;
  req.pool = env.opts.pool;
  ASSIGN_OR_RETURN(req.spec_text, model::ReadFile(env.opts.file));
  req.file_name = env.opts.file;
  for (const auto& kv : env.opts.set_values) {
    ASSIGN_OR_RETURN(auto pair, submit::ParseSetValue(kv));
    req.set_values[pair.first] = pair.second;
  }
  if (!env.opts.node_pools.empty()) {
    auto pools = submit::ParseNodePoolList(env.opts.node_pools);
    if (!pools.ok()) return InvalidArgumentError("--node-pools: " + pools.status().message());
    req.node_pools = std::move(*pools);
  }
  req.queue = env.opts.queue;
  req.dry_run = env.opts.dry_run;
  ASSIGN_OR_RETURN(auto result, svc.SubmitWorkflow(env.caller, req));
  PrintWarnings(result.warnings);
  if (env.format == OutputFormat::kJson) {
    std::cout << Render(service::ToJson(result), env.format);
    return OkStatus();
  }
  if (req.dry_run) {
    // The Kubernetes Pods, as a multi-document YAML stream.
    for (size_t i = 0; i < result.pods.size(); ++i) {
      if (i > 0 || env.format == OutputFormat::kYaml) std::cout << "---\n";
      std::cout << codec::ToYaml(result.pods[i]);
    }
    return OkStatus();
  }
  if (env.format == OutputFormat::kYaml) {
    std::cout << Render(service::ToJson(result), env.format);
    return OkStatus();
  }
  std::cout << "Workflow submit successful.\n"
            << "Workflow ID - " << Shown(result.workflow_id) << "\n"
            << "Status - " << result.status << " (" << result.task_count << " tasks in pool "
            << Shown(result.pool) << ", queue " << Shown(result.queue) << ")\n";
  return OkStatus();
}

void PrintWorkflowTable(const std::vector<service::WorkflowView>& views) {
  Table table({"WORKFLOW ID", "POOL", "QUEUE", "USER", "STATUS", "TASKS", "SUBMITTED"});
  for (const auto& v : views) {
    table.AddRow({v.id, v.pool, v.queue, v.user, v.status, std::to_string(v.tasks.size()),
                  Timestamp(v.submitted_ms)});
  }
  std::cout << table.ToString();
}

Status WorkflowQuery(Api& svc, const Env& env) {
  ASSIGN_OR_RETURN(auto view, svc.QueryWorkflow(env.caller, env.opts.id));
  if (env.format != OutputFormat::kTable) {
    std::cout << Render(service::ToJson(view), env.format);
    return OkStatus();
  }
  std::cout << "Workflow ID : " << Shown(view.id) << "\n"
            << "Status      : " << Shown(view.status) << "\n"
            << "User        : " << Shown(view.user) << "\n"
            << "Pool        : " << Shown(view.pool) << "\n"
            << "Queue       : " << Shown(view.queue) << "\n"
            << "Submit Time : " << Timestamp(view.submitted_ms) << "\n\n";
  Table table({"GROUP", "TASK", "PLATFORM", "STATUS", "NODE", "MESSAGE"});
  for (const auto& t : view.tasks) {
    table.AddRow({t.group, t.name, t.platform, t.status, t.node.empty() ? "-" : t.node, t.message});
  }
  std::cout << table.ToString();
  return OkStatus();
}

Status WorkflowList(Api& svc, const Env& env) {
  service::WorkflowFilter filter;
  if (!env.opts.pool.empty()) filter.pool = env.opts.pool;
  if (!env.opts.filter_user.empty()) filter.user = env.opts.filter_user;
  if (!env.opts.status.empty()) filter.status = env.opts.status;
  filter.limit = env.opts.limit;
  ASSIGN_OR_RETURN(auto views, svc.ListWorkflows(env.caller, filter));
  if (env.format != OutputFormat::kTable) {
    json out = json::array();
    for (const auto& v : views) out.push_back(service::ToJson(v));
    std::cout << Render(out, env.format);
    return OkStatus();
  }
  PrintWorkflowTable(views);
  return OkStatus();
}

Status WorkflowCancel(Api& svc, const Env& env) {
  ASSIGN_OR_RETURN(auto view, svc.CancelWorkflow(env.caller, env.opts.id));
  if (env.format != OutputFormat::kTable) {
    std::cout << Render(service::ToJson(view), env.format);
  } else {
    std::cout << "Workflow " << view.id << " canceled.\n";
  }
  return OkStatus();
}

}  // namespace

void AddWorkflowCommands(CLI::App& app, Options& o, const UseCommand& use,
                         WorkflowLogsFlags& logs_flags) {
  // workflow
  CLI::App* workflow =
      app.add_subcommand("workflow", "submit, query, list, cancel workflows; their logs");
  workflow->require_subcommand(1);
  CLI::App* wsubmit = workflow->add_subcommand("submit", "submit a workflow file to a pool");
  wsubmit->add_option("FILE", o.file)->required();
  wsubmit->add_option("-p,--pool", o.pool)->required();
  wsubmit->add_option("--set", o.set_values, "k=v for {{k}} in the file (repeatable)");
  wsubmit->add_option("--node-pools", o.node_pools,
                      "node pools in preference order, e.g. a100-80,default (replaces the "
                      "workflow's node_pools; default: those of the platform's nodes)");
  wsubmit->add_option("--queue", o.queue,
                      "the project (QUEUE) whose quota the workflow uses; your roles must allow "
                      "it (replaces the workflow's queue; default: the pool's own quota)");
  wsubmit->add_flag("--dry-run", o.dry_run, "print the Kubernetes Pods, store nothing");
  use(wsubmit, WorkflowSubmit);
  CLI::App* wquery = workflow->add_subcommand("query", "one workflow and its tasks");
  wquery->add_option("ID", o.id)->required();
  use(wquery, WorkflowQuery);
  CLI::App* wlist = workflow->add_subcommand("list", "workflows");
  wlist->add_option("-p,--pool", o.pool);
  wlist->add_option("--status", o.status);
  wlist->add_option("--submitted-by", o.filter_user);
  wlist->add_option("--limit", o.limit);
  use(wlist, WorkflowList);
  CLI::App* wcancel = workflow->add_subcommand("cancel", "cancel a workflow");
  wcancel->add_option("ID", o.id)->required();
  use(wcancel, WorkflowCancel);
  CLI::App* wlogs = workflow->add_subcommand(
      "logs", "a workflow's task output, from the server's backend (--server)");
  wlogs->add_option("WORKFLOW", logs_flags.logs.workflow)->required();
  wlogs->add_option("TASK", logs_flags.logs.task, "task name, or GROUP/NAME (default: every task)");
  // Non-negative: -1 is the flag's "not given", which a user's -1 would otherwise silently mean.
  wlogs->add_option("--retry", logs_flags.retry, "an earlier attempt (default: the latest)")
      ->check(CLI::NonNegativeNumber);
  wlogs->add_flag("-f,--follow", logs_flags.logs.follow,
                  "keep printing until the tasks have ended");
  wlogs->callback([&logs_flags] { logs_flags.chosen = true; });

  workflow->fallthrough();
  for (CLI::App* sub : {wsubmit, wquery, wlist, wcancel, wlogs}) sub->fallthrough();
}

}  // namespace gpupool::cli
