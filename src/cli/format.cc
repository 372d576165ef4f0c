#include "cli/format.h"

#include <algorithm>

#include "common/json_text.h"
#include "common/strings.h"
#include "common/table.h"
#include "model/json_io.h"

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
  if (format == OutputFormat::kYaml) return model::ToYaml(value);
  return DumpJson(value, 2) + "\n";
}

std::string UsedOfCapacity(int64_t used_milli, int64_t capacity_milli, int64_t unit_milli) {
  int64_t used = used_milli <= 0 ? 0 : (used_milli + unit_milli - 1) / unit_milli;
  int64_t capacity = capacity_milli <= 0 ? 0 : capacity_milli / unit_milli;
  return std::to_string(used) + "/" + std::to_string(capacity);
}

}  // namespace gpupool::cli
