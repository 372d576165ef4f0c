#include "model/quantity.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/strings.h"

namespace gpupool::model {
namespace {

__extension__ using UInt128 = unsigned __int128;
__extension__ using Int128 = __int128;

// Kubernetes' bound: 2^63-1 units in magnitude, in milli-units.
constexpr Int128 kMaxMilli = static_cast<Int128>(std::numeric_limits<int64_t>::max()) * 1000;
constexpr Int128 kMinMilli = -kMaxMilli;
// Inputs longer than this are not quantities anyone writes; refusing them bounds the work.
constexpr size_t kMaxQuantityLength = 256;
// Decimal exponents beyond this overflow (or round to 1m) whatever the mantissa.
constexpr int kMaxExponent = 400;

// Non-negative arbitrary-precision integer, base 10^9, little-endian limbs. Only what exact
// quantity parsing needs: multiply and divide by small factors.
class BigNat {
 public:
  explicit BigNat(std::string_view digits) {
    for (size_t end = digits.size(); end > 0;) {
      size_t begin = end >= 9 ? end - 9 : 0;
      uint32_t limb = 0;
      for (size_t i = begin; i < end; ++i)
        limb = limb * 10 + static_cast<uint32_t>(digits[i] - '0');
      limbs_.push_back(limb);
      end = begin;
    }
    Trim();
  }

  bool IsZero() const { return limbs_.empty(); }

  void Multiply(uint32_t factor) {
    uint64_t carry = 0;
    for (uint32_t& limb : limbs_) {
      uint64_t v = static_cast<uint64_t>(limb) * factor + carry;
      limb = static_cast<uint32_t>(v % kBase);
      carry = v / kBase;
    }
    while (carry > 0) {
      limbs_.push_back(static_cast<uint32_t>(carry % kBase));
      carry /= kBase;
    }
  }

  // Divides in place; returns true when the remainder was non-zero.
  bool Divide(uint32_t divisor) {
    uint64_t remainder = 0;
    for (size_t i = limbs_.size(); i-- > 0;) {
      uint64_t v = remainder * kBase + limbs_[i];
      limbs_[i] = static_cast<uint32_t>(v / divisor);
      remainder = v % divisor;
    }
    Trim();
    return remainder != 0;
  }

  void AddOne() {
    for (uint32_t& limb : limbs_) {
      if (++limb < kBase) return;
      limb = 0;
    }
    limbs_.push_back(1);
  }

  // The value when it is at most kMaxMilli.
  std::optional<Int128> ToMilli() const {
    UInt128 v = 0;
    for (size_t i = limbs_.size(); i-- > 0;) {
      v = v * kBase + limbs_[i];
      if (v > static_cast<UInt128>(kMaxMilli)) return std::nullopt;
    }
    return static_cast<Int128>(v);
  }

 private:
  static constexpr uint64_t kBase = 1000000000;
  void Trim() {
    while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
  }
  std::vector<uint32_t> limbs_;
};

struct Suffix {
  QuantityFormat format;
  int base;      // 10 or 2
  int exponent;  // power of `base`
};

// milli = ceil(digits * 2^two_power * 10^ten_power) in 128 bits, for the usual short quantities
// ("1", "500m", "64Gi"): BigNat's decimal limbs cost a submission ~2 % of its instructions.
// nullopt when the digits or the result may not fit; BigNat then decides (and reports too large).
std::optional<Int128> ShortMilli(std::string_view digits, int two_power, int ten_power) {
  constexpr int kMaxDigits = 18;  // < 2^60, so shifted by up to 63 bits it fits in 128
  if (digits.size() > kMaxDigits || two_power > 63 || ten_power < -kMaxDigits ||
      ten_power > kMaxDigits) {
    return std::nullopt;
  }
  UInt128 v = 0;
  for (char c : digits) v = v * 10 + static_cast<unsigned>(c - '0');
  v <<= two_power;
  constexpr auto kMax = static_cast<UInt128>(kMaxMilli);
  if (ten_power >= 0) {
    for (int i = 0; i < ten_power && v <= kMax; ++i) v *= 10;
  } else {
    UInt128 divisor = 1;
    for (int i = 0; i < -ten_power; ++i) divisor *= 10;
    bool inexact = v % divisor != 0;
    v = v / divisor + (inexact ? 1 : 0);  // round away from zero, as Kubernetes does
  }
  if (v > kMax) return std::nullopt;
  return static_cast<Int128>(v);
}

// Interprets a suffix the way k8s quantitySuffixer does.
std::optional<Suffix> InterpretSuffix(std::string_view s) {
  static constexpr struct {
    std::string_view text;
    int exponent;
  } kDecimal[] = {{"n", -9}, {"u", -6}, {"m", -3}, {"", 0},   {"k", 3},
                  {"M", 6},  {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  static constexpr struct {
    std::string_view text;
    int exponent;
  } kBinary[] = {{"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  for (const auto& d : kDecimal) {
    if (s == d.text) return Suffix{QuantityFormat::kDecimalSI, 10, d.exponent};
  }
  for (const auto& b : kBinary) {
    if (s == b.text) return Suffix{QuantityFormat::kBinarySI, 2, b.exponent};
  }
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    std::string_view rest = s.substr(1);
    bool negative = false;
    if (!rest.empty() && (rest[0] == '+' || rest[0] == '-')) {
      negative = rest[0] == '-';
      rest.remove_prefix(1);
    }
    if (rest.empty() || !std::all_of(rest.begin(), rest.end(), IsAsciiDigit)) return std::nullopt;
    // Leading zeros do not matter; anything longer than a few digits is out of range anyway.
    size_t first = rest.find_first_not_of('0');
    rest = first == std::string_view::npos ? std::string_view("0") : rest.substr(first);
    int exponent = rest.size() > 6 ? kMaxExponent + 1 : std::stoi(std::string(rest));
    exponent = std::min(exponent, kMaxExponent + 1);
    return Suffix{QuantityFormat::kDecimalExponent, 10, negative ? -exponent : exponent};
  }
  return std::nullopt;
}

Status FormatError(std::string_view text, std::string_view why) {
  return InvalidArgumentError("invalid quantity \"" + std::string(text) +
                              "\": " + std::string(why) +
                              " (expected a number with an optional suffix such as 500m, 2, "
                              "1.5, 64Gi, 1G or 1e3)");
}

// Both operands are within ±kMaxMilli (< 2^74), so the 128-bit sum itself cannot overflow.
Int128 Saturate(Int128 milli) { return std::clamp(milli, kMinMilli, kMaxMilli); }

// Decimal digits of a 128-bit magnitude (std::to_string has no overload for it).
std::string ToDecimal(UInt128 v) {
  if (v == 0) return "0";
  std::string out;
  for (; v > 0; v /= 10) out += static_cast<char>('0' + static_cast<int>(v % 10));
  std::reverse(out.begin(), out.end());
  return out;
}

std::string_view DecimalSuffix(int exponent) {
  switch (exponent) {
    case -3:
      return "m";
    case 0:
      return "";
    case 3:
      return "k";
    case 6:
      return "M";
    case 9:
      return "G";
    case 12:
      return "T";
    case 15:
      return "P";
    case 18:
      return "E";
  }
  return "";
}

std::string_view BinarySuffix(int exponent) {
  switch (exponent) {
    case 10:
      return "Ki";
    case 20:
      return "Mi";
    case 30:
      return "Gi";
    case 40:
      return "Ti";
    case 50:
      return "Pi";
    case 60:
      return "Ei";
  }
  return "";
}

// Why the text after a quantity's number is not a suffix.
std::string WhySuffixIsInvalid(std::string_view suffix_text) {
  if (suffix_text.find(' ') != std::string_view::npos) return "contains a space";
  if (!suffix_text.empty() && (suffix_text[0] == '+' || suffix_text[0] == '-')) {
    return "misplaced sign";
  }
  return "unknown suffix \"" + std::string(suffix_text) +
         "\" (valid: m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, e<n>; suffixes are "
         "case-sensitive)";
}

}  // namespace

Result<Quantity> Quantity::Parse(std::string_view text) {
  if (text.empty()) return FormatError(text, "empty");
  if (text.size() > kMaxQuantityLength) {
    return InvalidArgumentError("invalid quantity \"" + std::string(text.substr(0, 32)) +
                                "...\": longer than " + std::to_string(kMaxQuantityLength) +
                                " characters");
  }
  size_t pos = 0;
  bool negative = false;
  if (text[pos] == '+' || text[pos] == '-') {
    negative = text[pos] == '-';
    ++pos;
  }
  size_t int_begin = pos;
  while (pos < text.size() && IsAsciiDigit(text[pos])) ++pos;
  std::string_view int_part = text.substr(int_begin, pos - int_begin);
  std::string_view frac_part;
  bool has_point = false;
  if (pos < text.size() && text[pos] == '.') {
    has_point = true;
    size_t frac_begin = ++pos;
    while (pos < text.size() && IsAsciiDigit(text[pos])) ++pos;
    frac_part = text.substr(frac_begin, pos - frac_begin);
  }
  if (int_part.empty() && frac_part.empty() && !has_point && pos < text.size() &&
      (text[pos] == '+' || text[pos] == '-')) {
    return FormatError(text, "more than one sign");
  }
  if (int_part.empty() && frac_part.empty()) {
    return FormatError(text, has_point ? "no digits around the decimal point"
                                       : "expected a number before the suffix");
  }
  if (pos < text.size() && text[pos] == '.') {
    return FormatError(text, "more than one decimal point");
  }
  std::string_view suffix_text = text.substr(pos);
  std::optional<Suffix> suffix = InterpretSuffix(suffix_text);
  if (!suffix) return FormatError(text, WhySuffixIsInvalid(suffix_text));

  // Drop trailing zeros of the fraction, then value = digits * base^exponent / 10^frac_digits.
  while (!frac_part.empty() && frac_part.back() == '0') frac_part.remove_suffix(1);
  std::string digits = std::string(int_part) + std::string(frac_part);
  QuantityFormat format = suffix->format;
  // milli = ceil(digits * 1000 * base^exponent / 10^frac_digits)
  int ten_power = 3 - static_cast<int>(frac_part.size());
  int two_power = 0;
  if (suffix->base == 10) {
    ten_power += suffix->exponent;
  } else {
    two_power = suffix->exponent;
  }
  if (std::optional<Int128> milli = ShortMilli(digits, two_power, ten_power)) {
    return Quantity(negative ? -*milli : *milli, format);
  }
  BigNat value(digits);
  if (value.IsZero()) return Quantity(0, format);
  auto too_large = [text] {
    return InvalidArgumentError("invalid quantity \"" + std::string(text) +
                                "\": too large (the maximum is " +
                                Quantity(kMaxMilli, QuantityFormat::kDecimalSI).ToString() + ")");
  };
  if (ten_power > kMaxExponent) return too_large();
  bool inexact = false;
  for (int i = 0; i < two_power; ++i) value.Multiply(2);
  for (int i = 0; i < ten_power; ++i) value.Multiply(10);
  for (int i = 0; i > ten_power && !value.IsZero(); --i) inexact |= value.Divide(10);
  if (inexact) value.AddOne();  // round away from zero, as Kubernetes does
  std::optional<Int128> milli = value.ToMilli();
  if (!milli) return too_large();
  return Quantity(negative ? -*milli : *milli, format);
}

Quantity Quantity::FromMilli(int64_t milli, QuantityFormat format) {
  return Quantity(milli, format);
}

Quantity Quantity::FromUnits(int64_t units, QuantityFormat format) {
  // INT64_MIN units is the one int64 beyond Kubernetes' range.
  return Quantity(Saturate(static_cast<Int128>(units) * 1000), format);
}

int64_t Quantity::MilliValue() const {
  return static_cast<int64_t>(std::clamp<Int128>(milli_, std::numeric_limits<int64_t>::min(),
                                                 std::numeric_limits<int64_t>::max()));
}

bool Quantity::FitsMilli() const {
  return milli_ >= std::numeric_limits<int64_t>::min() &&
         milli_ <= std::numeric_limits<int64_t>::max();
}

int64_t Quantity::Value() const {
  Int128 units = milli_ / 1000;
  if (milli_ % 1000 > 0) ++units;
  return static_cast<int64_t>(units);  // |milli_| <= kMaxMilli: it fits
}

std::string Quantity::ToString() const {
  if (milli_ == 0) return "0";
  bool negative = milli_ < 0;
  const UInt128 magnitude = static_cast<UInt128>(negative ? -milli_ : milli_);
  std::string sign = negative ? "-" : "";

  if (format_ == QuantityFormat::kBinarySI && magnitude % 1000 == 0 && magnitude / 1000 >= 1024) {
    UInt128 units = magnitude / 1000;
    int exponent = 0;
    while (units % 1024 == 0 && exponent < 60) {
      units /= 1024;
      exponent += 10;
    }
    return sign + ToDecimal(units) + std::string(BinarySuffix(exponent));
  }

  // Decimal: mantissa * 10^exponent with exponent a multiple of 3 starting at -3 (milli).
  UInt128 mantissa = magnitude;
  int exponent = -3;
  while (mantissa % 1000 == 0 && exponent < 18) {
    mantissa /= 1000;
    exponent += 3;
  }
  if (format_ == QuantityFormat::kDecimalExponent) {
    return sign + ToDecimal(mantissa) +
           (exponent == 0 ? std::string() : "e" + std::to_string(exponent));
  }
  return sign + ToDecimal(mantissa) + std::string(DecimalSuffix(exponent));
}

Quantity Quantity::operator+(const Quantity& other) const {
  return Quantity(Saturate(milli_ + other.milli_), format_);
}

Quantity Quantity::operator-(const Quantity& other) const {
  return Quantity(Saturate(milli_ - other.milli_), format_);
}

Quantity& Quantity::operator+=(const Quantity& other) { return *this = *this + other; }

Quantity& Quantity::operator-=(const Quantity& other) { return *this = *this - other; }

Quantity Quantity::operator-() const { return Quantity(-milli_, format_); }

Result<Quantity> ParseQuantityJson(const nlohmann::ordered_json& value,
                                   std::string_view field_path) {
  std::string text;
  if (value.is_string()) {
    text = value.get<std::string>();
  } else if (value.is_number_integer()) {
    if (value.is_number_unsigned()) {
      uint64_t u = value.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        text = value.dump();
      } else {
        text = std::to_string(u);
      }
    } else {
      text = std::to_string(value.get<int64_t>());
    }
  } else if (value.is_number_float()) {
    text = value.dump();  // shortest round-trip form: 1.5, 0.1, 1e+20
  } else {
    std::string type = value.is_object()    ? "object"
                       : value.is_array()   ? "array"
                       : value.is_boolean() ? "boolean"
                       : value.is_null()    ? "null"
                                            : "value";
    return InvalidArgumentError(std::string(field_path) +
                                ": expected a quantity (string or number), got " + type);
  }
  auto parsed = Quantity::Parse(text);
  if (!parsed.ok()) return parsed.status().WithContext(field_path);
  return parsed;
}

Result<ResourceList> ParseResourceList(const nlohmann::ordered_json& value,
                                       std::string_view field_path) {
  ResourceList list;
  if (value.is_null()) return list;
  if (!value.is_object()) {
    return InvalidArgumentError(std::string(field_path) +
                                ": expected an object of resource quantities");
  }
  for (const auto& [name, item] : value.items()) {
    if (name.empty()) {
      return InvalidArgumentError(std::string(field_path) + ": empty resource name");
    }
    std::string path = std::string(field_path) + (field_path.empty() ? "" : ".") + name;
    ASSIGN_OR_RETURN(Quantity q, ParseQuantityJson(item, path));
    // As Kubernetes validates requests, limits, overhead, capacity and allocatable: a negative
    // amount would otherwise lower a pool's total, or be dropped from a pod's needs.
    if (q.IsNegative()) {
      return InvalidArgumentError(
          path + ": must not be negative, got " +
          (item.is_string() ? "\"" + item.get<std::string>() + "\"" : item.dump()));
    }
    list[name] = q;
  }
  return list;
}

nlohmann::ordered_json ResourceListToJson(const ResourceList& list) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [name, q] : list) out[name] = q.ToString();
  return out;
}

void AddResources(ResourceList& into, const ResourceList& other) {
  for (const auto& [name, q] : other) {
    auto it = into.find(name);
    if (it == into.end()) {
      into.emplace(name, q);
    } else {
      it->second += q;
    }
  }
}

void MaxResources(ResourceList& into, const ResourceList& other) {
  for (const auto& [name, q] : other) {
    auto it = into.find(name);
    if (it == into.end()) {
      into.emplace(name, q);
    } else if (q > it->second) {
      it->second = q;
    }
  }
}

}  // namespace gpupool::model
