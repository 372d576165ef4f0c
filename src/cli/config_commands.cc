// `gpupool config update|set|show|list|delete|history|rollback` and `gpupool apply`.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "codec/json_reader.h"
#include "common/json_text.h"
#include "common/strings.h"
#include "model/input_file.h"
#include "service/service.h"

namespace gpupool::cli {
namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

Status PrintWrite(const Env& env, const service::WriteResult& result) {
  PrintWarnings(result.warnings);
  if (env.format != OutputFormat::kTable) {
    std::cout << Render(service::ToJson(result), env.format);
    return OkStatus();
  }
  for (const auto& c : result.changes) {
    std::string verb = c.action == "delete"     ? "deleted"
                       : c.action == "rollback" ? "rolled back"
                                                : "updated";
    std::cout << verb << " " << c.kind << " " << Shown(c.name) << " (revision " << c.revision
              << ")\n";
  }
  return OkStatus();
}

Status ConfigUpdate(Api& svc, const Env& env) {
  if (env.opts.file.empty()) {
    return InvalidArgumentError("config update needs --file FILE (the config as JSON)");
  }
  service::UpdateConfigRequest req;
  ASSIGN_OR_RETURN(req.text, model::ReadFile(env.opts.file));
  ASSIGN_OR_RETURN(req.body, codec::ParseJson(req.text, env.opts.file));
  req.kind = env.opts.kind;
  if (!env.opts.name.empty()) req.name = env.opts.name;
  req.file_name = env.opts.file;
  req.description = env.opts.description;
  ASSIGN_OR_RETURN(auto result, svc.UpdateConfig(env.caller, req));
  return PrintWrite(env, result);
}

Status ConfigSet(Api& svc, const Env& env) {
  ASSIGN_OR_RETURN(std::string kind, service::NormalizeKind(env.opts.kind));
  if (env.opts.extra == "pool") {
    if (kind != "ROLE") {
      return InvalidArgumentError("config set " + kind + " NAME pool: only ROLE can be generated");
    }
    ASSIGN_OR_RETURN(auto result, svc.SetPoolRole(env.caller, env.opts.name, env.opts.description));
    return PrintWrite(env, result);
  }
  return ConfigUpdate(svc, env);
}

Status ConfigShow(Api& svc, const Env& env) {
  std::optional<int64_t> revision;
  if (env.opts.has_revision) revision = env.opts.revision;
  ASSIGN_OR_RETURN(auto view, svc.ShowConfig(env.opts.kind, env.opts.name, revision));
  if (env.format == OutputFormat::kTable) {
    // The body itself, as JSON: what `config update` takes back. JSON escapes the C0 controls
    // already; bidi controls become \u escapes, which JSON reads back as the same text.
    std::cout << Shown(DumpJson(view.body, 2)) << "\n";
  } else {
    std::cout << Render(service::ToJson(view), env.format);
  }
  return OkStatus();
}

Status ConfigList(Api& svc, const Env& env) {
  std::optional<std::string_view> kind;
  if (!env.opts.kind.empty()) kind = env.opts.kind;
  ASSIGN_OR_RETURN(auto views, svc.ListConfigs(kind));
  if (env.format != OutputFormat::kTable) {
    json out = json::array();
    for (const auto& v : views) {
      json j = service::ToJson(v);
      j.erase("body");
      out.push_back(std::move(j));
    }
    std::cout << Render(out, env.format);
    return OkStatus();
  }
  Table table({"KIND", "NAME", "REVISION", "UPDATED BY", "UPDATED AT"});
  for (const auto& v : views) {
    table.AddRow(
        {v.kind, v.name, std::to_string(v.revision), v.updated_by, Timestamp(v.updated_at_ms)});
  }
  std::cout << table.ToString();
  return OkStatus();
}

Status ConfigDelete(Api& svc, const Env& env) {
  service::DeleteConfigRequest req{env.opts.kind, env.opts.name, env.opts.force,
                                   env.opts.description};
  ASSIGN_OR_RETURN(auto result, svc.DeleteConfig(env.caller, req));
  return PrintWrite(env, result);
}

Status ConfigHistory(Api& svc, const Env& env) {
  service::HistoryFilter filter;
  if (!env.opts.kind.empty()) filter.kind = env.opts.kind;
  if (!env.opts.name.empty()) filter.name = env.opts.name;
  filter.limit = env.opts.limit;
  ASSIGN_OR_RETURN(auto entries, svc.History(filter));
  if (env.format != OutputFormat::kTable) {
    json out = json::array();
    for (const auto& e : entries) out.push_back(service::ToJson(e));
    std::cout << Render(out, env.format);
    return OkStatus();
  }
  Table table(
      {"CONFIG TYPE", "NAME", "REVISION", "ACTION", "USERNAME", "CREATED AT", "DESCRIPTION"});
  for (const auto& e : entries) {
    table.AddRow({e.kind, e.name, std::to_string(e.revision), e.action, e.author,
                  Timestamp(e.created_at_ms), e.description});
  }
  std::cout << table.ToString();
  return OkStatus();
}

Status ConfigRollback(Api& svc, const Env& env) {
  if (!env.opts.has_revision) return InvalidArgumentError("config rollback needs --revision N");
  service::RollbackRequest req{env.opts.kind, env.opts.name, env.opts.revision,
                               env.opts.description};
  ASSIGN_OR_RETURN(auto result, svc.Rollback(env.caller, req));
  return PrintWrite(env, result);
}

Result<std::vector<std::string>> ManifestFiles(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return NotFoundError(path + ": no such file or directory");
  if (!fs::is_directory(path, ec)) return std::vector<std::string>{path};
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) return InvalidArgumentError(path + ": no .yaml, .yml or .json files");
  return files;
}

Status Apply(Api& svc, const Env& env) {
  if (env.opts.files.empty()) return InvalidArgumentError("apply needs -f FILE|DIR");
  // Every -f in order (a directory's files sorted by name), all in one apply; a file given twice
  // is read once, as kubectl does.
  std::vector<std::string> files;
  std::vector<std::string> given;
  for (const std::string& path : env.opts.files) {
    ASSIGN_OR_RETURN(auto found, ManifestFiles(path));
    for (auto& f : found) {
      if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(std::move(f));
    }
    given.push_back("-f " + path);
  }
  service::ApplyRequest req;
  req.description =
      env.opts.description.empty() ? "gpupool apply " + Join(given, " ") : env.opts.description;
  // Sent as they are (also to a server), so that errors name each file and its lines.
  for (const auto& f : files) {
    ASSIGN_OR_RETURN(std::string text, model::ReadFile(f));
    req.files.push_back(service::ManifestFile{f, std::move(text)});
  }
  ASSIGN_OR_RETURN(auto result, svc.Apply(env.caller, req));
  PrintWarnings(result.configs.warnings);
  if (env.format != OutputFormat::kTable) {
    std::cout << Render(service::ToJson(result), env.format);
    return OkStatus();
  }
  for (const auto& c : result.configs.changes) {
    std::cout << "applied " << c.kind << " " << Shown(c.name) << " (revision " << c.revision
              << ")\n";
  }
  if (result.nodes_imported > 0) std::cout << "imported " << result.nodes_imported << " nodes\n";
  for (const auto& job : result.jobs) {
    // kubectl's "job.batch/NAME created|unchanged", and the workflow to follow it by.
    std::cout << "job.batch/" << Shown(job.name) << (job.unchanged ? " unchanged" : " created")
              << ": workflow " << Shown(job.workflow_id) << " (" << job.status << ", "
              << job.task_count << (job.task_count == 1 ? " task" : " tasks") << ", pool "
              << Shown(job.pool) << ", queue " << Shown(job.queue) << ")\n";
  }
  return OkStatus();
}

}  // namespace

void AddConfigCommands(CLI::App& app, Options& o, const UseCommand& use) {
  // config
  CLI::App* config = app.add_subcommand("config",
                                        "configs: update, set, show, list, delete, "
                                        "history, rollback");
  config->require_subcommand(1);
  auto add_file = [&o](CLI::App* sub) {
    sub->add_option("-f,--file", o.file, "config file (JSON)");
  };
  auto add_description = [&o](CLI::App* sub) {
    sub->add_option("--description", o.description, "note recorded with the revision");
  };
  CLI::App* update = config->add_subcommand("update", "create or replace configs from a file");
  update->add_option("KIND", o.kind, "POOL, POD_TEMPLATE, RESOURCE_VALIDATION, ROLE, BACKEND, ...")
      ->required();
  update->add_option("NAME", o.name, "config name (omit for a file holding {name: body, ...})");
  update->add_option("-f,--file", o.file, "config file (JSON)")->required();
  add_description(update);
  use(update, ConfigUpdate);

  CLI::App* set = config->add_subcommand(
      "set", "ROLE NAME -f FILE, or ROLE osmo-<prefix> pool (generated pool role)");
  set->add_option("KIND", o.kind)->required();
  set->add_option("NAME", o.name)->required();
  set->add_option("TYPE", o.extra, "pool: generate the role for pools named <prefix>*")
      ->check(CLI::IsMember({"pool"}));
  add_file(set);
  add_description(set);
  use(set, ConfigSet);

  CLI::App* show = config->add_subcommand("show", "print a config (or one of its revisions)");
  show->add_option("KIND", o.kind)->required();
  show->add_option("NAME", o.name)->required();
  show->add_option("--revision", o.revision)->each([&o](const std::string&) {
    o.has_revision = true;
  });
  use(show, ConfigShow);

  CLI::App* list = config->add_subcommand("list", "list configs");
  list->add_option("KIND", o.kind);
  use(list, ConfigList);

  CLI::App* del = config->add_subcommand("delete", "delete a config");
  del->add_option("KIND", o.kind)->required();
  del->add_option("NAME", o.name)->required();
  del->add_flag("--force", o.force,
                "delete a pool even if unfinished workflows use it or a role grants it by name "
                "(as osmo-user grants the default pool)");
  add_description(del);
  use(del, ConfigDelete);

  CLI::App* history = config->add_subcommand("history", "revisions, newest first");
  history->add_option("KIND", o.kind);
  history->add_option("NAME", o.name);
  history->add_option("--limit", o.limit, "at most this many revisions (default 100)");
  use(history, ConfigHistory);

  CLI::App* rollback =
      config->add_subcommand("rollback", "make an earlier revision current (a new revision)");
  rollback->add_option("KIND", o.kind)->required();
  rollback->add_option("NAME", o.name)->required();
  rollback->add_option("--revision", o.revision)->required()->each([&o](const std::string&) {
    o.has_revision = true;
  });
  add_description(rollback);
  use(rollback, ConfigRollback);

  // apply
  CLI::App* apply = app.add_subcommand(
      "apply", "apply gpupool.io/v1 manifests, v1 Nodes and batch/v1 Jobs (run as workflows)");
  apply->add_option("-f,--file", o.files, "manifest file or directory (repeatable)")->required();
  add_description(apply);
  use(apply, Apply);

  for (CLI::App* sub : {config, apply}) sub->fallthrough();
  for (CLI::App* sub : {update, set, show, list, del, history, rollback}) sub->fallthrough();
}

}  // namespace gpupool::cli
