#pragma once
// Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource), stored as int64
// milli-units. `G` is 10^9 and `Gi` is 2^30; `m` is milli for every resource.

#include <compare>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace gpupool::model {

// How a quantity prints; parsing remembers the family of its suffix, like Kubernetes.
enum class QuantityFormat {
  kDecimalSI,        // "", m, k, M, G, T, P, E (and n, u on input)
  kBinarySI,         // Ki, Mi, Gi, Ti, Pi, Ei
  kDecimalExponent,  // 1e3, 5E6
};

class Quantity {
 public:
  // Zero.
  Quantity() = default;

  // Parses the Kubernetes grammar: a signed decimal number (`1`, `1.5`, `.5`, `5.`) and an
  // optional suffix (`n u m k M G T P E`, `Ki Mi Gi Ti Pi Ei`, or `e<int>`/`E<int>`). Values
  // with a fractional milli part round up (away from zero, like Kubernetes) to the next
  // milli-unit, so `0.1m` is `1m`. Errors (InvalidArgument) name the text: `1.2.3`, `Gi`, `1gi`,
  // `--1`, `1 Gi`, "", or a magnitude that does not fit int64 milli-units.
  static Result<Quantity> Parse(std::string_view text);

  static Quantity FromMilli(int64_t milli, QuantityFormat format = QuantityFormat::kDecimalSI);
  // Saturates at the int64 milli range.
  static Quantity FromUnits(int64_t units, QuantityFormat format = QuantityFormat::kDecimalSI);

  int64_t MilliValue() const { return milli_; }
  // Integer units, rounded up (ceil): 500m -> 1, 64Gi -> 68719476736.
  int64_t Value() const;
  QuantityFormat format() const { return format_; }
  bool IsZero() const { return milli_ == 0; }

  // Canonical Kubernetes form in the quantity's format family, with the largest suffix that
  // loses no precision: 1.5 -> "1500m", 1.5Gi -> "1536Mi", 1000 -> "1k", 64Gi -> "64Gi".
  // BinarySI values that are not whole multiples of 1024 (or below 1024) print as DecimalSI.
  std::string ToString() const;

  // Saturating arithmetic; the result keeps the left operand's format.
  Quantity operator+(const Quantity& other) const;
  Quantity operator-(const Quantity& other) const;
  Quantity& operator+=(const Quantity& other);
  Quantity& operator-=(const Quantity& other);
  Quantity operator-() const;

  // Comparisons are by value only, never by format.
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) {
    return a.milli_ <=> b.milli_;
  }
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.milli_ == b.milli_; }

 private:
  Quantity(int64_t milli, QuantityFormat format) : milli_(milli), format_(format) {}

  int64_t milli_ = 0;
  QuantityFormat format_ = QuantityFormat::kDecimalSI;
};

// Resource name ("cpu", "memory", "nvidia.com/gpu", ...) -> quantity.
using ResourceList = std::map<std::string, Quantity>;

// Parses a JSON object of quantities (`{"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 1}`).
// Values may be strings or JSON numbers (`4`, `1.5`). null is accepted as an empty list. Errors
// name `field_path` and the key, e.g. `spec.containers[0].resources.requests.cpu: invalid
// quantity "1.2.3": ...`.
Result<ResourceList> ParseResourceList(const nlohmann::ordered_json& value,
                                       std::string_view field_path);

// Parses one JSON value (string or number) as a quantity; errors name `field_path`.
Result<Quantity> ParseQuantityJson(const nlohmann::ordered_json& value,
                                   std::string_view field_path);

// {"cpu": "500m", ...} with canonical strings.
nlohmann::ordered_json ResourceListToJson(const ResourceList& list);

// a + b per resource (missing = 0).
void AddResources(ResourceList& into, const ResourceList& other);
// For each resource the larger of the two.
void MaxResources(ResourceList& into, const ResourceList& other);

}  // namespace gpupool::model
