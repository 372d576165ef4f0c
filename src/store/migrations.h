#pragma once
// Versioned schema migrations, one list per backend. The SQL lives in
// src/store/migrations/<backend>/NNNN_<name>.sql and is embedded at build time (see
// CMakeLists.txt). A migration runs once, inside one transaction, and is recorded in the
// schema_migrations table.

#include <string_view>
#include <vector>

namespace gpupool::store {

struct Migration {
  int version;            // NNNN from the file name; strictly increasing
  std::string_view name;  // <name> from the file name
  std::string_view sql;   // one or more statements
};

// Sorted by version.
const std::vector<Migration>& SqliteMigrations();
const std::vector<Migration>& PostgresMigrations();

}  // namespace gpupool::store
