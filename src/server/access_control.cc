#include "server/access_control.h"

#include "common/strings.h"
#include "config/access.h"

namespace gpupool::server {

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

AccessControl::AccessControl(store::Store& store, const Clock& clock, int64_t max_age_ms)
    : store_(store), clock_(clock), max_age_ms_(max_age_ms) {}

void AccessControl::Invalidate() {
  std::lock_guard lock(mu_);
  stale_ = true;
}

std::shared_ptr<const config::ConfigSet> AccessControl::Configs() {
  int64_t now = clock_.NowMillis();
  std::lock_guard lock(mu_);
  if (configs_ == nullptr || stale_ || now - loaded_at_ms_ >= max_age_ms_) {
    auto set = LoadConfigSet(store_);
    if (set.ok()) {
      configs_ = std::make_shared<const config::ConfigSet>(std::move(*set));
      loaded_at_ms_ = now;
      stale_ = false;
    } else if (configs_ == nullptr) {
      configs_ = std::make_shared<const config::ConfigSet>();  // deny everything until it loads
    }
  }
  return configs_;
}

Status AccessControl::Check(const Identity& identity, std::string_view method,
                            std::string_view raw_path,
                            const std::optional<std::string>& workflow_pool) {
  std::shared_ptr<const config::ConfigSet> configs = Configs();
  config::AccessRequest request;
  request.method = std::string(method);
  request.path = std::string(raw_path);
  request.workflow_pool = workflow_pool;
  Status status = config::CheckAccess(identity.roles, request, *configs);
  if (status.code() == StatusCode::kPermissionDenied) {
    return PermissionDeniedError("user \"" + identity.user + "\": " + status.message());
  }
  return status;
}

}  // namespace gpupool::server
