#pragma once
// Small string helpers shared by every module.

#include <string>
#include <string_view>
#include <vector>

namespace gpupool {

std::vector<std::string> Split(std::string_view text, char separator);
std::string Join(const std::vector<std::string>& parts, std::string_view separator);
std::string_view Trim(std::string_view text);
bool StartsWith(std::string_view text, std::string_view prefix);
bool EndsWith(std::string_view text, std::string_view suffix);
std::string ToLower(std::string_view text);
// `text` in double quotes, as error messages name a value: queue "a".
std::string Quoted(std::string_view text);

// '0'-'9' only, whatever the locale (std::isdigit reads it, and takes an int).
constexpr bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

// The value of one hexadecimal digit (either case), or -1.
int HexDigitValue(char c);

// Well-formed UTF-8 (no overlong forms, surrogates or code points above U+10FFFF). Text that
// reaches a database or a JSON document must be: PostgreSQL refuses anything else.
bool IsValidUtf8(std::string_view text);

// Text fit to show in one line of a message: valid UTF-8, no control characters, at most
// `max_bytes` long (a file name the CLI passes to the server for its errors).
bool IsPrintableLine(std::string_view text, size_t max_bytes);

// Levenshtein distance, for did-you-mean suggestions.
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word` when it is near enough to be a plausible typo, else "".
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean \"x\"?)" or "" when nothing is close.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace gpupool
