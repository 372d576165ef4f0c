#pragma once
// The field paths that errors about decoded values name ("spec.containers[0].image"), and that
// JsonSourceMap::FindFieldPath finds again in the text.

#include <string>
#include <string_view>

namespace gpupool::codec {

// Field-path helpers: FieldPath("spec", "containers") -> "spec.containers";
// FieldPath("", "spec") -> "spec"; IndexPath("spec.containers", 0) -> "spec.containers[0]".
std::string FieldPath(std::string_view parent, std::string_view field);
std::string IndexPath(std::string_view parent, size_t index);

}  // namespace gpupool::codec
