#pragma once
// Access control for HTTP requests: config::CheckAccess against the roles stored as ROLE configs.
// The decoded configs are cached: every `max_age_ms` one caller checks the store's config
// generation (and reloads only when it changed) while the others keep using the cached set, and
// after Invalidate() (called after every config write through this server) the next callers wait
// for a reload; so several servers on one database converge within max_age_ms.
//
// Thread contract: thread-safe; readers share one immutable snapshot (shared_ptr swap).

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "api/jwt.h"
#include "common/clock.h"
#include "config/config_set.h"
#include "store/store.h"

namespace gpupool::api {

class AccessControl {
 public:
  AccessControl(store::Store& store, const Clock& clock, int64_t max_age_ms = 1000);

  // OK, kPermissionDenied naming the user and the roles checked, or kInvalidArgument for a path
  // the normaliser refuses. `raw_path` is the request target as sent (it is normalised here).
  Status Check(const Identity& identity, std::string_view method, std::string_view raw_path,
               const std::optional<std::string>& workflow_pool);

  void Invalidate();

  // The current snapshot (reloaded if stale). Never null.
  std::shared_ptr<const config::ConfigSet> Configs();

 private:
  store::Store& store_;
  const Clock& clock_;
  const int64_t max_age_ms_;

  std::mutex mu_;
  std::condition_variable reloaded_;
  std::shared_ptr<const config::ConfigSet> configs_;
  int64_t loaded_generation_ = -1;  // the store's config generation when configs_ was loaded
  int64_t checked_at_ms_ = 0;
  bool stale_ = true;
  bool reloading_ = false;
};

}  // namespace gpupool::api
