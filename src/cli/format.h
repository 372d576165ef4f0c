#pragma once
// Output helpers of the `gpupool` command: aligned text tables, the table/json/yaml switch, and
// timestamps, text and warnings as the commands print them.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpupool::cli {

enum class OutputFormat { kTable, kJson, kYaml };
Result<OutputFormat> ParseOutputFormat(std::string_view text);

// Columns separated by two spaces, each as wide as its widest cell; a header row in upper case
// as given. Every row must have as many cells as the header.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  std::string ToString() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// JSON (2-space indent) or YAML text of a value, ending with a newline.
std::string Render(const nlohmann::ordered_json& value, OutputFormat format);

// "<used>/<capacity>" in whole units: used rounded up, capacity rounded down (as OSMO prints).
// `unit` is one unit in the amounts' own (1000 for cores and GPUs counted in milli-units, 2^30
// for Gi of memory counted in bytes).
std::string UsedOfCapacity(int64_t used_amount, int64_t capacity_amount, int64_t unit);

// A store timestamp (milliseconds since the epoch) as the tables print it; "-" for none.
std::string Timestamp(int64_t ms);

// Text from the store or the server (names, descriptions, messages) as the terminal may show
// it: tables do this themselves (common/table.h); lines printed directly go through here.
std::string Shown(std::string_view text);

// Each as "warning: ..." on stderr.
void PrintWarnings(const std::vector<std::string>& warnings);

}  // namespace gpupool::cli
