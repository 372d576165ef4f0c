#include "cli/format.h"

#include <algorithm>

#include "common/strings.h"
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
  std::vector<size_t> width(header_.size(), 0);
  for (size_t i = 0; i < header_.size(); ++i) width[i] = header_[i].size();
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t i = 0; i < header_.size(); ++i) {
      const std::string cell = i < cells.size() ? cells[i] : "";
      line += cell;
      if (i + 1 < header_.size()) line += std::string(width[i] - cell.size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  emit(header_);
  for (const auto& row : rows_) emit(row);
  return out;
}

std::string Render(const nlohmann::ordered_json& value, OutputFormat format) {
  if (format == OutputFormat::kYaml) return model::ToYaml(value);
  return value.dump(2) + "\n";
}

std::string UsedOfCapacity(int64_t used_milli, int64_t capacity_milli, int64_t unit_milli) {
  int64_t used = used_milli <= 0 ? 0 : (used_milli + unit_milli - 1) / unit_milli;
  int64_t capacity = capacity_milli <= 0 ? 0 : capacity_milli / unit_milli;
  return std::to_string(used) + "/" + std::to_string(capacity);
}

}  // namespace gpupool::cli
