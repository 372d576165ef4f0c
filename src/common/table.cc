#include "common/table.h"

#include <algorithm>

#include "common/safe_text.h"

namespace gpupool {

namespace {

// Columns a cell takes: one per code point (the cells are valid UTF-8 once made safe). Wide
// (East Asian) characters take two on most terminals; names and descriptions rarely hold them.
size_t Columns(const std::string& cell) {
  return static_cast<size_t>(std::count_if(cell.begin(), cell.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

}  // namespace

std::string FormatTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::vector<std::string>> cells;
  cells.reserve(rows.size());
  std::vector<size_t> width;
  for (const auto& row : rows) {
    std::vector<std::string>& safe = cells.emplace_back();
    for (size_t c = 0; c < row.size(); ++c) {
      safe.push_back(TerminalSafe(row[c]));
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], Columns(safe.back()));
    }
  }
  std::string out;
  for (const auto& row : cells) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - Columns(row[c]) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace gpupool
