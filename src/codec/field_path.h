#pragma once
// The field paths that errors about decoded values name ("spec.containers[0].image"), and that
// JsonSourceMap::FindFieldPath finds again in the text.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpupool::codec {

// Field-path helpers: FieldPath("spec", "containers") -> "spec.containers";
// FieldPath("", "spec") -> "spec"; IndexPath("spec.containers", 0) -> "spec.containers[0]".
std::string FieldPath(std::string_view parent, std::string_view field);
std::string IndexPath(std::string_view parent, size_t index);

// InvalidArgument for the first key of `object` outside `known`:
// `spec.minAvailble: unknown field (did you mean "minAvailable"?) (known: a, b)`.
Status CheckKnownFields(const nlohmann::ordered_json& object, std::string_view path,
                        const std::vector<std::string>& known);

}  // namespace gpupool::codec
