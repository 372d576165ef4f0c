#include "cli/format.h"

#include <algorithm>
#include <iostream>

#include "codec/yaml_writer.h"
#include "common/clock.h"
#include "common/json_text.h"
#include "common/safe_text.h"
#include "common/strings.h"
#include "common/table.h"

namespace gpupool::cli {

Result<OutputFormat> ParseOutputFormat(std::string_view text) {
  std::string lower = ToLower(text);
  if (lower == "table" || lower == "text") return OutputFormat::kTable;
  if (lower == "json") return OutputFormat::kJson;
  if (lower == "yaml" || lower == "yml") return OutputFormat::kYaml;
  return InvalidArgumentError("-o: expected table, json or yaml, got \"" + std::string(text) +
                              "\"" + DidYouMean(lower, {"table", "json", "yaml"}));
}

std::string Table::ToString() const {
  std::vector<std::vector<std::string>> rows;
  rows.reserve(rows_.size() + 1);
  rows.push_back(header_);
  for (const auto& row : rows_) {
    std::vector<std::string>& cells = rows.emplace_back(row);
    cells.resize(header_.size());
  }
  return FormatTable(rows);
}

std::string Render(const nlohmann::ordered_json& value, OutputFormat format) {
  if (format == OutputFormat::kYaml) return codec::ToYaml(value);
  return DumpJson(value, 2) + "\n";
}

std::string UsedOfCapacity(int64_t used_amount, int64_t capacity_amount, int64_t unit) {
  // Rounded up without adding first: an amount may be near the end of int64 (memory: 3Ei).
  int64_t used = used_amount <= 0 ? 0 : used_amount / unit + (used_amount % unit != 0 ? 1 : 0);
  int64_t capacity = capacity_amount <= 0 ? 0 : capacity_amount / unit;
  return std::to_string(used) + "/" + std::to_string(capacity);
}

std::string Timestamp(int64_t ms) { return ms == 0 ? "-" : FormatTimestamp(ms); }

std::string Shown(std::string_view text) { return TerminalSafe(text, Newlines::kKeep); }

void PrintWarnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) std::cerr << "warning: " << Shown(w) << "\n";
}

}  // namespace gpupool::cli
