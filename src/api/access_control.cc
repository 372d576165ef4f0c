#include "api/access_control.h"

#include "common/strings.h"
#include "config/access.h"
#include "service/service.h"

namespace gpupool::api {

AccessControl::AccessControl(store::Store& store, const Clock& clock, int64_t max_age_ms)
    : store_(store), clock_(clock), max_age_ms_(max_age_ms) {}

void AccessControl::Invalidate() {
  std::lock_guard lock(mu_);
  stale_ = true;
}

std::shared_ptr<const config::ConfigSet> AccessControl::Configs() {
  int64_t now = clock_.NowMillis();
  std::unique_lock lock(mu_);
  bool must = configs_ == nullptr || stale_;  // the caller needs the current roles
  if (!must && now - checked_at_ms_ < max_age_ms_) return configs_;
  if (!must && reloading_) return configs_;  // another thread is refreshing; use the last set
  // Reload outside the lock, one thread at a time; the others keep using the last set (or, when
  // they must see the current roles, wait for this reload).
  while (reloading_) reloaded_.wait(lock);
  if (configs_ != nullptr && !stale_ && now - checked_at_ms_ < max_age_ms_) return configs_;
  reloading_ = true;
  stale_ = false;  // an Invalidate() from now on asks for another reload
  int64_t known_generation = loaded_generation_;
  bool have = configs_ != nullptr;
  lock.unlock();
  // The generation is read before the configs: a write committed in between only costs another
  // reload later.
  auto generation = store_.ConfigGeneration();
  std::optional<Result<config::ConfigSet>> set;
  if (!have || !generation.ok() || *generation != known_generation)
    set = service::LoadConfigSet(store_);
  lock.lock();
  if (set && set->ok()) {
    configs_ = std::make_shared<const config::ConfigSet>(std::move(**set));
    loaded_generation_ = generation.ok() ? *generation : -1;
  } else if (configs_ == nullptr) {
    configs_ = std::make_shared<const config::ConfigSet>();  // deny everything until it loads
  }
  if (!set || set->ok()) checked_at_ms_ = now;
  reloading_ = false;
  reloaded_.notify_all();
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

}  // namespace gpupool::api
