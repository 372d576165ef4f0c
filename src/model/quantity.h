#pragma once
// Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource). `G` is 10^9 and `Gi` is
// 2^30; `m` is milli for every resource.
//
// Range and precision are Kubernetes': "no quantity may represent a number greater than 2^63-1 in
// magnitude, nor may it have more than 3 decimal places" (more precise values round up to the next
// milli-unit). Held exactly as 128-bit milli-units, since int64 milli-units end at 9.2e15 units
// (a node with `memory: 3Ei` is 3.5e18 bytes). Whole units (Value()) always fit int64, which is how
// kube-scheduler counts memory, storage and extended resources; cpu it counts in milli-units
// (MilliValue(), int64, saturating beyond 9.2e15 cores).

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
  // `--1`, `1 Gi`, "", or a magnitude above 2^63-1 units ("too large").
  static Result<Quantity> Parse(std::string_view text);

  static Quantity FromMilli(int64_t milli, QuantityFormat format = QuantityFormat::kDecimalSI);
  static Quantity FromUnits(int64_t units, QuantityFormat format = QuantityFormat::kDecimalSI);

  // Milli-units, saturated to the int64 range: exact up to 9.2e15 units (9.2P), which covers
  // every cpu, GPU and quota amount; memory and storage beyond it need Value().
  int64_t MilliValue() const;
  // Integer units, rounded up (ceil): 500m -> 1, 64Gi -> 68719476736, 3Ei -> 3458764513820540928.
  // Exact over the whole range.
  int64_t Value() const;
  // Whether MilliValue() is exact (the magnitude is below 2^63 milli-units).
  bool FitsMilli() const;
  QuantityFormat format() const { return format_; }
  bool IsZero() const { return milli_ == 0; }
  bool IsNegative() const { return milli_ < 0; }

  // Canonical Kubernetes form in the quantity's format family, with the largest suffix that
  // loses no precision: 1.5 -> "1500m", 1.5Gi -> "1536Mi", 1000 -> "1k", 64Gi -> "64Gi".
  // BinarySI values that are not whole multiples of 1024 (or below 1024) print as DecimalSI.
  std::string ToString() const;

  // Arithmetic saturating at 2^63-1 units in magnitude; the result keeps the left operand's
  // format.
  Quantity operator+(const Quantity& other) const;
  Quantity operator-(const Quantity& other) const;
  Quantity& operator+=(const Quantity& other);
  Quantity& operator-=(const Quantity& other);
  Quantity operator-() const;

  // Comparisons are by value only, never by format.
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) {
    if (a.milli_ < b.milli_) return std::strong_ordering::less;
    return a.milli_ == b.milli_ ? std::strong_ordering::equal : std::strong_ordering::greater;
  }
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.milli_ == b.milli_; }

 private:
  __extension__ using Milli = __int128;

  Quantity(Milli milli, QuantityFormat format) : milli_(milli), format_(format) {}

  Milli milli_ = 0;  // |milli_| <= (2^63 - 1) * 1000
  QuantityFormat format_ = QuantityFormat::kDecimalSI;
};

// Resource name ("cpu", "memory", "nvidia.com/gpu", ...) -> quantity.
using ResourceList = std::map<std::string, Quantity>;

// Parses a JSON object of quantities (`{"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 1}`):
// a Kubernetes resource list (requests, limits, overhead, a node's capacity and allocatable).
// Values may be strings or JSON numbers (`4`, `1.5`) and, as Kubernetes validates them, not
// negative. null is accepted as an empty list. Errors name `field_path` and the key, e.g.
// `spec.containers[0].resources.requests.cpu: invalid quantity "1.2.3": ...`,
// `status.allocatable.nvidia.com/gpu: must not be negative, got "-8"`.
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
