// Config reads: config show (a config, or one of its revisions), config list, config history, and
// LoadConfigSet (the decoded OSMO kinds that access control and the scheduling loop read).

#include <optional>
#include <string>
#include <vector>

#include "common/strings.h"
#include "config/config_set.h"
#include "config/kinds.h"
#include "service/located_errors.h"
#include "service/service_internal.h"
#include "store/store.h"

namespace gpupool::service {

Result<config::ConfigSet> LoadConfigSet(store::Store& store) {
  ASSIGN_OR_RETURN(auto records, store.ListConfigs(std::nullopt));
  config::ConfigSet set;
  for (const auto& record : records) {
    auto kind = config::ParseKind(record.kind);
    if (!kind.ok()) continue;
    switch (*kind) {
      case config::Kind::kPool:
      case config::Kind::kPodTemplate:
      case config::Kind::kResourceValidation:
      case config::Kind::kRole:
      case config::Kind::kBackend:
        (void)config::PutConfig(set, *kind, record.name, record.body);
        break;
      default:
        break;
    }
  }
  return set;
}

namespace {

using config::Kind;

}  // namespace

Result<ConfigView> Service::ShowConfig(std::string_view kind_text, std::string_view name,
                                       std::optional<int64_t> revision) {
  ASSIGN_OR_RETURN(Kind kind, config::ParseKind(kind_text));
  const std::string kind_name(config::KindName(kind));
  ConfigView view;
  view.kind = kind_name;
  view.name = std::string(name);
  if (revision.has_value()) {
    auto rec = store_.GetRevision(kind_name, name, *revision);
    if (!rec.ok()) {
      if (rec.status().code() == StatusCode::kNotFound) {
        return NotFoundError(kind_name + " " + Quoted(name) + " has no revision " +
                             std::to_string(*revision));
      }
      return rec.status();
    }
    view.revision = rec->revision;
    view.updated_by = rec->author;
    view.updated_at_ms = rec->created_at_ms;
    view.body = rec->body;
    return view;
  }
  auto rec = store_.GetConfig(kind_name, name);
  if (!rec.ok()) {
    if (rec.status().code() == StatusCode::kNotFound) {
      std::vector<std::string> names;
      auto all = store_.ListConfigs(kind_name);
      if (all.ok()) {
        for (const auto& r : *all) names.push_back(r.name);
      }
      return NotFoundError(kind_name + " " + Quoted(name) + " does not exist" +
                           DidYouMean(name, names));
    }
    return rec.status();
  }
  view.revision = rec->revision;
  view.updated_by = rec->updated_by;
  view.updated_at_ms = rec->updated_at_ms;
  view.body = rec->body;
  return view;
}

Result<std::vector<ConfigView>> Service::ListConfigs(std::optional<std::string_view> kind) {
  std::optional<std::string> kind_name;
  if (kind.has_value()) {
    ASSIGN_OR_RETURN(Kind k, config::ParseKind(*kind));
    kind_name = std::string(config::KindName(k));
  }
  ASSIGN_OR_RETURN(
      auto records,
      store_.ListConfigs(kind_name ? std::optional<std::string_view>(*kind_name) : std::nullopt));
  std::vector<ConfigView> out;
  for (const auto& r : records) {
    out.push_back(ConfigView{r.kind, r.name, r.revision, r.updated_by, r.updated_at_ms, r.body});
  }
  return out;
}

Result<std::vector<HistoryEntry>> Service::History(const HistoryFilter& filter) {
  std::optional<std::string> kind_name;
  if (filter.kind.has_value()) {
    ASSIGN_OR_RETURN(Kind k, config::ParseKind(*filter.kind));
    kind_name = std::string(config::KindName(k));
  }
  ASSIGN_OR_RETURN(
      auto records,
      store_.History(kind_name ? std::optional<std::string_view>(*kind_name) : std::nullopt,
                     filter.name ? std::optional<std::string_view>(*filter.name) : std::nullopt,
                     filter.limit));
  std::vector<HistoryEntry> out;
  for (const auto& r : records) {
    out.push_back(HistoryEntry{r.kind, r.name, r.revision, r.action, r.author, r.created_at_ms,
                               r.description, r.body});
  }
  return out;
}

}  // namespace gpupool::service
