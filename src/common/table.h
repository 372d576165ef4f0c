#pragma once
// Aligned plain-text tables for human output: columns separated by two spaces, each as wide as its
// widest cell, no trailing spaces. The first row is the header, printed as given. Every table the
// CLI prints is made here, so that every cell goes through TerminalSafe (common/safe_text.h):
// a description holding ESC, NUL or U+202E shows as `\x1b`, `\x00`, `\u202e` instead of
// driving the terminal.

#include <string>
#include <vector>

namespace gpupool {

std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace gpupool
