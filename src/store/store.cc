#include "store/store.h"

#include <filesystem>
#include <system_error>

#include "store/sql_connection.h"
#include "store/sql_store.h"

namespace gpupool::store {

Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const StoreOptions& options) {
  static const SystemClock kSystemClock;
  const Clock& clock = options.clock != nullptr ? *options.clock : kSystemClock;
  if (url.empty()) return InvalidArgumentError("store: empty database URL");

  if (url.starts_with("postgresql://") || url.starts_with("postgres://")) {
#ifdef GPUPOOL_WITH_POSTGRES
    ASSIGN_OR_RETURN(auto connection, OpenPostgresConnection(std::string(url)));
    std::string reader_url(url);
    return SqlStore::Open(
        std::move(connection), [reader_url] { return OpenPostgresConnection(reader_url); },
        options.max_readers, clock, options.observe);
#else
    return InvalidArgumentError("store: this gpupool was built without PostgreSQL support");
#endif
  }

  std::string path(url);
  if (url.starts_with("sqlite:")) {
    path = std::string(url.substr(7));
    if (path.starts_with("//")) path = path.substr(2);  // sqlite:///abs/path
  } else if (url.find("://") != std::string_view::npos) {
    return InvalidArgumentError("store: unsupported database URL \"" + std::string(url) +
                                "\" (expected sqlite:PATH, a path, or postgresql://...)");
  }
  if (path.empty())
    return InvalidArgumentError("store: \"" + std::string(url) + "\" names no file");
  if (path != ":memory:") {
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code error;
    if (!parent.empty()) std::filesystem::create_directories(parent, error);
    if (error) {
      return UnavailableError("store: cannot create directory " + parent.string() + ": " +
                              error.message());
    }
  }
  ASSIGN_OR_RETURN(auto connection, OpenSqliteConnection(path));
  SqlStore::ConnectionFactory open_reader;
  if (path != ":memory:") {
    // WAL readers of the same file (the writer has set journal_mode=WAL, which persists).
    open_reader = [path] { return OpenSqliteConnection(path); };
  }
  return SqlStore::Open(std::move(connection), std::move(open_reader), options.max_readers, clock,
                        options.observe);
}

}  // namespace gpupool::store
