#include "model/machine_pool.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "codec/field_path.h"
#include "common/strings.h"
#include "model/match.h"
#include "model/node_pool.h"

namespace gpupool::model {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kMicrosPerUnit = 1'000'000;

std::string Index(std::string_view parent, size_t i) {
  return std::string(parent) + "[" + std::to_string(i) + "]";
}

Status UnknownField(const std::string& path, const std::string& key,
                    const std::vector<std::string>& fields) {
  return InvalidArgumentError(path + ": unknown field" + DidYouMean(key, fields) +
                              "; expected one of " + Join(fields, ", "));
}

Result<std::string> StringValue(const Json& value, std::string_view path) {
  if (!value.is_string()) {
    return InvalidArgumentError(std::string(path) + ": expected a string, got " +
                                std::string(value.type_name()));
  }
  return value.get<std::string>();
}

// A whole number in [min, max], as a JSON integer (not 1.5, not "3").
Result<int32_t> IntValue(const Json& value, std::string_view path, int64_t min, int64_t max) {
  if (!value.is_number_integer()) {
    return InvalidArgumentError(
        std::string(path) + ": expected a whole number, got " +
        (value.is_number() ? value.dump() : std::string(value.type_name())));
  }
  int64_t v = value.get<int64_t>();
  if (v < min || v > max) {
    return InvalidArgumentError(std::string(path) + ": " + std::to_string(v) +
                                " is out of range; expected " + std::to_string(min) + ".." +
                                std::to_string(max));
  }
  return static_cast<int32_t>(v);
}

Result<Labels> LabelMap(const Json& value, std::string_view path) {
  if (!value.is_object()) {
    return InvalidArgumentError(std::string(path) + ": expected a map of label key to value, got " +
                                std::string(value.type_name()));
  }
  Labels labels;
  for (const auto& [key, v] : value.items()) {
    std::string key_path = std::string(path) + "." + key;
    if (!IsQualifiedName(key)) {
      return InvalidArgumentError(key_path + ": \"" + key + "\" is not a valid label key");
    }
    ASSIGN_OR_RETURN(std::string text, StringValue(v, key_path));
    if (!IsValidLabelValue(text)) {
      return InvalidArgumentError(key_path + ": \"" + text + "\" is not a valid label value");
    }
    labels[key] = text;
  }
  return labels;
}

// One taint in Kubernetes form ({key, value, effect}) or ROSA form ({key, value, schedule_type}).
Result<Taint> PoolTaint(const Json& value, const std::string& path) {
  if (!value.is_object()) {
    return InvalidArgumentError(path + ": expected an object with key, value and effect");
  }
  Json k8s = value;
  if (value.contains("schedule_type")) {
    if (value.contains("effect")) {
      return InvalidArgumentError(
          path + ": give the effect once, as effect or as schedule_type, not both");
    }
    k8s.erase("schedule_type");
    k8s["effect"] = value["schedule_type"];
  }
  if (k8s.contains("timeAdded"))
    return UnknownField(codec::FieldPath(path, "timeAdded"), "timeAdded",
                        {"key", "value", "effect", "schedule_type"});
  return TaintFromJson(k8s, path);
}

Result<std::vector<Taint>> PoolTaints(const Json& value, const std::string& path) {
  if (!value.is_array()) {
    return InvalidArgumentError(path + ": expected a list of taints, got " +
                                std::string(value.type_name()));
  }
  std::vector<Taint> taints;
  for (size_t i = 0; i < value.size(); ++i) {
    ASSIGN_OR_RETURN(Taint taint, PoolTaint(value[i], Index(path, i)));
    for (const Taint& seen : taints) {
      if (seen.key == taint.key && seen.effect == taint.effect) {
        return InvalidArgumentError(Index(path, i) + ": duplicate taint " + taint.ToString() +
                                    " (one taint per key and effect)");
      }
    }
    taints.push_back(std::move(taint));
  }
  return taints;
}

Result<CapacityType> ParseCapacityType(const Json& value, const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, StringValue(value, path));
  if (text == "on_demand" || text == "on-demand") return CapacityType::kOnDemand;
  if (text == "spot") return CapacityType::kSpot;
  return InvalidArgumentError(path + ": \"" + text + "\": expected on_demand or spot" +
                              DidYouMean(text, {"on_demand", "spot"}));
}

Result<InstanceGpu> GpuFromJson(const Json& value, const std::string& path) {
  static const std::vector<std::string> kFields = {"product", "count", "memory"};
  if (!value.is_object()) return InvalidArgumentError(path + ": expected an object");
  InstanceGpu gpu;
  for (const auto& [key, v] : value.items()) {
    std::string p = codec::FieldPath(path, key);
    if (key == "product") {
      ASSIGN_OR_RETURN(gpu.product, StringValue(v, p));
    } else if (key == "count") {
      ASSIGN_OR_RETURN(gpu.count, IntValue(v, p, 0, 64));
    } else if (key == "memory") {
      ASSIGN_OR_RETURN(gpu.memory, ParseQuantityJson(v, p));
    } else {
      return UnknownField(p, key, kFields);
    }
  }
  if (gpu.count > 0 && gpu.product.empty()) {
    return InvalidArgumentError(codec::FieldPath(path, "product") + ": required when count > 0");
  }
  return gpu;
}

Result<InstanceType> InstanceTypeFromJson(const Json& value, const std::string& path) {
  static const std::vector<std::string> kFields = {
      "name", "cpu", "memory", "gpu", "on_demand_price", "spot_price"};
  if (!value.is_object()) return InvalidArgumentError(path + ": expected an object");
  InstanceType type;
  bool has_price = false;
  for (const auto& [key, v] : value.items()) {
    std::string p = codec::FieldPath(path, key);
    if (key == "name") {
      ASSIGN_OR_RETURN(type.name, StringValue(v, p));
    } else if (key == "cpu") {
      ASSIGN_OR_RETURN(type.cpu, ParseQuantityJson(v, p));
    } else if (key == "memory") {
      ASSIGN_OR_RETURN(type.memory, ParseQuantityJson(v, p));
    } else if (key == "gpu") {
      ASSIGN_OR_RETURN(type.gpu, GpuFromJson(v, p));
    } else if (key == "on_demand_price") {
      ASSIGN_OR_RETURN(type.on_demand_price_micros, ParsePriceMicros(v, p));
      has_price = true;
    } else if (key == "spot_price") {
      ASSIGN_OR_RETURN(type.spot_price_micros, ParsePriceMicros(v, p));
    } else {
      return UnknownField(p, key, kFields);
    }
  }
  if (type.name.empty()) return InvalidArgumentError(codec::FieldPath(path, "name") + ": required");
  if (type.cpu.MilliValue() <= 0) {
    return InvalidArgumentError(codec::FieldPath(path, "cpu") + ": required, more than 0");
  }
  if (type.memory.MilliValue() <= 0) {
    return InvalidArgumentError(codec::FieldPath(path, "memory") + ": required, more than 0");
  }
  if (!has_price)
    return InvalidArgumentError(codec::FieldPath(path, "on_demand_price") + ": required");
  return type;
}

}  // namespace

const MachinePoolDefaults& DefaultsFor(CapacityType type) {
  static const MachinePoolDefaults kAdditional{"additional", "m5.xlarge", 1, 5};
  static const MachinePoolDefaults kGpuSpot{"gpu-spot", "g4dn.xlarge", 0, 3};
  return type == CapacityType::kSpot ? kGpuSpot : kAdditional;
}

std::string_view CapacityTypeName(CapacityType type) {
  return type == CapacityType::kSpot ? "spot" : "on_demand";
}

Result<int64_t> ParsePriceMicros(const Json& value, std::string_view field_path) {
  std::string text;
  if (value.is_number_integer()) {
    text = std::to_string(value.get<int64_t>());
  } else if (value.is_number_float()) {
    text = value.dump();  // shortest round-trip form: 0.526 stays "0.526"
  } else if (value.is_string()) {
    text = value.get<std::string>();
  } else {
    return InvalidArgumentError(std::string(field_path) +
                                ": expected a price in USD per hour (a number or a decimal "
                                "string such as \"0.526\"), got " +
                                std::string(value.type_name()));
  }
  auto bad = [&] {
    return InvalidArgumentError(std::string(field_path) + ": \"" + text +
                                "\" is not a price; expected a non-negative decimal with at most "
                                "6 decimals, e.g. \"0.526\"");
  };
  size_t dot = text.find('.');
  std::string whole = text.substr(0, dot);
  std::string fraction = dot == std::string::npos ? "" : text.substr(dot + 1);
  auto all_digits = [](const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if ((whole.empty() && fraction.empty()) || !all_digits(whole) || !all_digits(fraction) ||
      fraction.size() > 6 || whole.size() > 9) {
    return bad();
  }
  int64_t units = 0;
  if (!whole.empty()) std::from_chars(whole.data(), whole.data() + whole.size(), units);
  fraction.resize(6, '0');
  int64_t micros = 0;
  std::from_chars(fraction.data(), fraction.data() + fraction.size(), micros);
  return units * kMicrosPerUnit + micros;
}

std::string FormatPriceMicros(int64_t micros) {
  std::string sign = micros < 0 ? "-" : "";
  int64_t m = micros < 0 ? -micros : micros;
  std::string fraction = std::to_string(m % kMicrosPerUnit);
  fraction.insert(0, 6 - fraction.size(), '0');
  while (fraction.size() > 2 && fraction.back() == '0') fraction.pop_back();
  return sign + std::to_string(m / kMicrosPerUnit) + "." + fraction;
}

Result<std::vector<InstanceType>> InstanceTypesFromJson(const Json& catalog) {
  if (!catalog.is_object()) {
    return InvalidArgumentError("catalog: expected an object with instance_types");
  }
  for (const auto& [key, v] : catalog.items()) {
    if (key != "instance_types") return UnknownField(key, key, {"instance_types"});
  }
  if (!catalog.contains("instance_types") || !catalog["instance_types"].is_array()) {
    return InvalidArgumentError("instance_types: required list");
  }
  std::vector<InstanceType> types;
  std::set<std::string> names;
  const Json& list = catalog["instance_types"];
  for (size_t i = 0; i < list.size(); ++i) {
    std::string path = Index("instance_types", i);
    ASSIGN_OR_RETURN(InstanceType type, InstanceTypeFromJson(list[i], path));
    if (!names.insert(type.name).second) {
      return InvalidArgumentError(codec::FieldPath(path, "name") + ": duplicate instance type \"" +
                                  type.name + "\"");
    }
    types.push_back(std::move(type));
  }
  return types;
}

namespace {

// Seed 004's module defaults for what the body leaves out: an additional (on-demand) pool is
// m5.xlarge with 1 to 5 replicas, a GPU spot pool g4dn.xlarge with 0 (scale to zero) to 3. A
// given max below the default min lowers the min to it, as a smaller pool was asked for.
void ApplySeedDefaults(bool has_min, bool has_max, MachinePool& pool) {
  const MachinePoolDefaults& d = DefaultsFor(pool.capacity_type);
  if (pool.instance_type.empty()) pool.instance_type = d.instance_type;
  if (!has_max) pool.max_replicas = std::max(d.max_replicas, has_min ? pool.min_replicas : 0);
  if (!has_min) pool.min_replicas = std::min(d.min_replicas, pool.max_replicas);
}

}  // namespace

std::span<const std::string_view> MachinePoolFields() {
  static constexpr std::string_view kFields[] = {
      "description", "instance_type", "capacity_type", "min_replicas", "max_replicas",
      "labels",      "taints",        "max_price",     "disk_size",    "scale_target"};
  return kFields;
}

Result<MachinePool> MachinePoolFromJson(const Json& body, std::string_view name,
                                        std::string_view field_path) {
  static const std::vector<std::string> kFields = FieldsWithName(MachinePoolFields());
  std::string base = field_path.empty() ? std::string(name) : std::string(field_path);
  RETURN_IF_ERROR(ValidateConfigName(name, base.empty() ? "name" : base));
  if (!body.is_object()) {
    return InvalidArgumentError(base + ": expected an object, got " +
                                std::string(body.type_name()));
  }
  MachinePool pool;
  pool.name = std::string(name);
  bool has_min = false, has_max = false, has_max_price = false;
  for (const auto& [key, value] : body.items()) {
    std::string path = codec::FieldPath(base, key);
    if (key == "name") {
      ASSIGN_OR_RETURN(std::string given, StringValue(value, path));
      if (given != name) {
        return InvalidArgumentError(path + ": \"" + given +
                                    "\" does not match the machine pool name \"" +
                                    std::string(name) + "\"");
      }
    } else if (key == "description") {
      ASSIGN_OR_RETURN(pool.description, StringValue(value, path));
    } else if (key == "instance_type") {
      ASSIGN_OR_RETURN(pool.instance_type, StringValue(value, path));
    } else if (key == "capacity_type") {
      ASSIGN_OR_RETURN(pool.capacity_type, ParseCapacityType(value, path));
    } else if (key == "min_replicas") {
      ASSIGN_OR_RETURN(pool.min_replicas, IntValue(value, path, 0, 1000));
      has_min = true;
    } else if (key == "max_replicas") {
      ASSIGN_OR_RETURN(pool.max_replicas, IntValue(value, path, 0, 1000));
      has_max = true;
    } else if (key == "labels") {
      ASSIGN_OR_RETURN(pool.labels, LabelMap(value, path));
    } else if (key == "taints") {
      ASSIGN_OR_RETURN(pool.taints, PoolTaints(value, path));
      pool.taints_given = true;
    } else if (key == "max_price") {
      if (!(value.is_string() && value.get<std::string>().empty())) {
        ASSIGN_OR_RETURN(int64_t price, ParsePriceMicros(value, path));
        pool.max_price_micros = price;
      }
      has_max_price = true;
    } else if (key == "disk_size") {
      ASSIGN_OR_RETURN(pool.disk_size_gib, IntValue(value, path, 1, 16384));
    } else if (key == "scale_target") {
      ASSIGN_OR_RETURN(pool.scale_target, ScaleTargetFromJson(value, path));
    } else {
      return UnknownField(path, key, kFields);
    }
  }
  ApplySeedDefaults(has_min, has_max, pool);
  if (pool.min_replicas > pool.max_replicas) {
    return InvalidArgumentError(codec::FieldPath(base, "min_replicas") + ": " +
                                std::to_string(pool.min_replicas) + " is above max_replicas " +
                                std::to_string(pool.max_replicas));
  }
  if (has_max_price && pool.capacity_type != CapacityType::kSpot) {
    return InvalidArgumentError(codec::FieldPath(base, "max_price") +
                                ": only for capacity_type spot (on-demand nodes have one price)");
  }
  for (const auto& [key, value] : pool.labels) {
    if (key == kMachinePoolLabel || key == kInstanceTypeLabel || key == kCapacityTypeLabel) {
      return InvalidArgumentError(codec::FieldPath(base, "labels") + "." + key +
                                  ": set by gpupool on every node of the pool; do not set it");
    }
  }
  return pool;
}

Json MachinePoolToJson(const MachinePool& pool) {
  Json body = Json::object();
  if (!pool.description.empty()) body["description"] = pool.description;
  body["instance_type"] = pool.instance_type;
  body["capacity_type"] = CapacityTypeName(pool.capacity_type);
  body["min_replicas"] = pool.min_replicas;
  body["max_replicas"] = pool.max_replicas;
  if (!pool.labels.empty()) body["labels"] = pool.labels;
  if (pool.taints_given) {
    Json taints = Json::array();
    for (const Taint& t : pool.taints) taints.push_back(TaintToJson(t));
    body["taints"] = std::move(taints);
  }
  if (pool.max_price_micros) body["max_price"] = FormatPriceMicros(*pool.max_price_micros);
  if (pool.disk_size_gib > 0) body["disk_size"] = pool.disk_size_gib;
  if (pool.scale_target) body["scale_target"] = ScaleTargetToJson(*pool.scale_target);
  return body;
}

Result<MachinePool> MachinePoolFromManifest(const Json& manifest) {
  ASSIGN_OR_RETURN(std::string name, ManifestNameForKind(manifest, "MachinePool"));
  if (!manifest.contains("spec")) return InvalidArgumentError("spec: required");
  return MachinePoolFromJson(manifest["spec"], name, "spec");
}

Json MachinePoolToManifest(const MachinePool& pool) {
  return MakeManifest("MachinePool", pool.name, MachinePoolToJson(pool));
}

void ApplyDefaultTaints(const InstanceType& type, MachinePool& pool) {
  if (pool.taints_given || !pool.taints.empty()) return;
  if (pool.capacity_type != CapacityType::kSpot || type.gpu.count == 0) return;
  pool.taints.push_back(Taint{"nvidia.com/gpu", "true", TaintEffect::kNoSchedule});
  pool.taints.push_back(Taint{"spot", "true", TaintEffect::kPreferNoSchedule});
}

}  // namespace gpupool::model
