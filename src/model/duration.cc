#include "model/duration.h"

#include <cstdint>
#include <limits>
#include <string>

#include "common/strings.h"

namespace gpupool::model {
namespace {

__extension__ using Int128 = __int128;

constexpr int64_t kMaxSeconds = std::numeric_limits<int64_t>::max() / 1000;

Status DurationError(std::string_view text, std::string_view why) {
  return InvalidArgumentError("invalid duration \"" + std::string(text) +
                              "\": " + std::string(why) +
                              " (expected e.g. 30s, 5m, 2h, 1d, 1h30m, 500ms, PT2H, or an integer "
                              "number of seconds)");
}

// Milliseconds = number * unit_ms, where number is `int_digits.frac_digits`; rounded up.
// Returns false on overflow.
bool ScaleToMillis(std::string_view int_digits, std::string_view frac_digits, int64_t unit_ms,
                   int64_t* out) {
  Int128 whole = 0;
  for (char c : int_digits) {
    whole = whole * 10 + (c - '0');
    if (whole > Int128{kMaxSeconds} * 1000) return false;
  }
  Int128 millis = whole * unit_ms;
  // Fraction: frac * unit_ms / 10^len, rounded up. Only the first 18 digits matter for
  // millisecond precision of units up to weeks; later non-zero digits force a round-up.
  Int128 frac = 0;
  Int128 scale = 1;
  bool rest_nonzero = false;
  for (size_t i = 0; i < frac_digits.size(); ++i) {
    if (i < 18) {
      frac = frac * 10 + (frac_digits[i] - '0');
      scale *= 10;
    } else if (frac_digits[i] != '0') {
      rest_nonzero = true;
    }
  }
  Int128 frac_ms = frac * unit_ms;
  Int128 add = frac_ms / scale;
  if (frac_ms % scale != 0 || rest_nonzero) ++add;
  millis += add;
  if (millis > static_cast<Int128>(kMaxSeconds) * 1000) return false;
  *out = static_cast<int64_t>(millis);
  return true;
}

// Bytes of the character at `pos`: a UTF-8 lead byte and its continuation bytes.
size_t CharacterLength(std::string_view text, size_t pos) {
  size_t end = pos + 1;
  while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
  return end - pos;
}

// The designator at `pos` as an error message shows it: an ASCII letter in upper case, another
// character whole (one byte of a multi-byte character is not text a reply can carry).
std::string DesignatorAt(std::string_view text, size_t pos) {
  const auto byte = static_cast<unsigned char>(text[pos]);
  if (byte < 0x80) return std::string(1, static_cast<char>(std::toupper(byte)));
  return std::string(text.substr(pos, CharacterLength(text, pos)));
}

int64_t CeilSeconds(int64_t millis) { return millis / 1000 + (millis % 1000 != 0 ? 1 : 0); }

// ISO-8601: P[nW][nD][T[nH][nM][nS]]; the numbers may have a fraction.
Result<int64_t> ParseIsoDuration(std::string_view original, std::string_view text) {
  size_t pos = 1;  // after 'P'
  bool in_time = false;
  bool any = false;
  int64_t total_ms = 0;
  std::string_view order_date = "WD";
  std::string_view order_time = "HMS";
  size_t next_date = 0;
  size_t next_time = 0;
  while (pos < text.size()) {
    char c = text[pos];
    if (c == 'T' || c == 't') {
      if (in_time) return DurationError(original, "more than one 'T'");
      in_time = true;
      ++pos;
      if (pos == text.size()) return DurationError(original, "nothing after 'T'");
      continue;
    }
    size_t begin = pos;
    while (pos < text.size() && IsAsciiDigit(text[pos])) ++pos;
    std::string_view int_digits = text.substr(begin, pos - begin);
    std::string_view frac_digits;
    if (pos < text.size() && (text[pos] == '.' || text[pos] == ',')) {
      size_t frac_begin = ++pos;
      while (pos < text.size() && IsAsciiDigit(text[pos])) ++pos;
      frac_digits = text.substr(frac_begin, pos - frac_begin);
    }
    if (int_digits.empty() && frac_digits.empty()) {
      return DurationError(original, "expected a number");
    }
    if (pos == text.size()) return DurationError(original, "number without a designator");
    const std::string designator = DesignatorAt(text, pos);
    char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(text[pos])));
    pos += CharacterLength(text, pos);
    int64_t unit_ms = 0;
    if (!in_time) {
      size_t index = order_date.find(unit);
      if (index == std::string_view::npos || index < next_date) {
        return DurationError(original, "unexpected designator '" + designator +
                                           "' in the date part (use W or D; Y and M are not "
                                           "fixed lengths)");
      }
      next_date = index + 1;
      unit_ms = unit == 'W' ? 7 * 86400000LL : 86400000LL;
    } else {
      size_t index = order_time.find(unit);
      if (index == std::string_view::npos || index < next_time) {
        return DurationError(original, "unexpected designator '" + designator +
                                           "' in the time part (use H, M, S in that order)");
      }
      next_time = index + 1;
      unit_ms = unit == 'H' ? 3600000LL : unit == 'M' ? 60000LL : 1000LL;
    }
    int64_t ms;
    if (!ScaleToMillis(int_digits, frac_digits, unit_ms, &ms) ||
        __builtin_add_overflow(total_ms, ms, &total_ms) || total_ms > kMaxSeconds * 1000) {
      return DurationError(original, "too large");
    }
    any = true;
  }
  if (!any) return DurationError(original, "no components after 'P'");
  return CeilSeconds(total_ms);
}

}  // namespace

bool IsEmptyDuration(std::string_view text) { return Trim(text).empty(); }

Result<int64_t> ParseDurationSeconds(std::string_view original) {
  std::string_view text = Trim(original);
  if (text.empty()) return DurationError(original, "empty");
  if (text[0] == '-') return DurationError(original, "negative durations are not allowed");
  if (text[0] == '+') text.remove_prefix(1);
  if (!text.empty() && (text[0] == 'P' || text[0] == 'p')) return ParseIsoDuration(original, text);

  // Bare integer = seconds.
  bool all_digits = !text.empty();
  for (char c : text) all_digits &= IsAsciiDigit(c);
  if (all_digits) {
    int64_t ms;
    if (!ScaleToMillis(text, "", 1000, &ms)) return DurationError(original, "too large");
    return ms / 1000;
  }

  // Compound <number><unit>... with units d h m s ms, largest first, each at most once.
  static constexpr struct {
    std::string_view name;
    int64_t ms;
  } kUnits[] = {{"d", 86400000LL}, {"h", 3600000LL}, {"m", 60000LL}, {"s", 1000LL}, {"ms", 1LL}};
  size_t pos = 0;
  int last_unit = -1;
  int64_t total_ms = 0;
  while (pos < text.size()) {
    size_t begin = pos;
    while (pos < text.size() && IsAsciiDigit(text[pos])) ++pos;
    std::string_view int_digits = text.substr(begin, pos - begin);
    std::string_view frac_digits;
    if (pos < text.size() && text[pos] == '.') {
      size_t frac_begin = ++pos;
      while (pos < text.size() && IsAsciiDigit(text[pos])) ++pos;
      frac_digits = text.substr(frac_begin, pos - frac_begin);
    }
    if (int_digits.empty() && frac_digits.empty()) {
      return DurationError(original,
                           "expected a number at \"" + std::string(text.substr(begin)) + "\"");
    }
    size_t unit_begin = pos;
    while (pos < text.size() && !IsAsciiDigit(text[pos]) && text[pos] != '.') ++pos;
    std::string_view unit = text.substr(unit_begin, pos - unit_begin);
    if (unit.empty()) {
      return DurationError(original, "the last number has no unit (d, h, m, s or ms)");
    }
    int index = -1;
    for (int i = 0; i < static_cast<int>(std::size(kUnits)); ++i) {
      if (kUnits[i].name == unit) index = i;
    }
    if (index < 0) {
      return DurationError(original,
                           "unknown unit \"" + std::string(unit) + "\" (use d, h, m, s or ms)");
    }
    if (index <= last_unit) {
      return DurationError(original, "units must go from largest to smallest, each once");
    }
    last_unit = index;
    int64_t ms;
    if (!ScaleToMillis(int_digits, frac_digits, kUnits[index].ms, &ms) ||
        __builtin_add_overflow(total_ms, ms, &total_ms) || total_ms > kMaxSeconds * 1000) {
      return DurationError(original, "too large");
    }
  }
  return CeilSeconds(total_ms);
}

std::string FormatDuration(int64_t seconds) {
  if (seconds == 0) return "0s";
  std::string out;
  uint64_t rest;
  if (seconds < 0) {
    out = "-";
    rest = 0 - static_cast<uint64_t>(seconds);
  } else {
    rest = static_cast<uint64_t>(seconds);
  }
  static constexpr struct {
    char name;
    uint64_t seconds;
  } kUnits[] = {{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};
  for (const auto& unit : kUnits) {
    if (rest >= unit.seconds) {
      out += std::to_string(rest / unit.seconds);
      out += unit.name;
      rest %= unit.seconds;
    }
  }
  return out;
}

}  // namespace gpupool::model
