#pragma once
// Aligned plain-text tables for human output: columns separated by two spaces, each as wide as its
// widest cell, no trailing spaces. The first row is the header, printed as given.

#include <string>
#include <vector>

namespace gpupool {

std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace gpupool
