#include "codec/field_path.h"

#include <algorithm>

#include "common/strings.h"

namespace gpupool::codec {

std::string FieldPath(std::string_view parent, std::string_view field) {
  if (parent.empty()) return std::string(field);
  if (field.empty()) return std::string(parent);
  return std::string(parent) + "." + std::string(field);
}

std::string IndexPath(std::string_view parent, size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

Status CheckKnownFields(const nlohmann::ordered_json& object, std::string_view path,
                        const std::vector<std::string>& known) {
  for (const auto& [key, unused] : object.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return InvalidArgumentError(FieldPath(path, key) + ": unknown field" +
                                  DidYouMean(key, known) + " (known: " + Join(known, ", ") + ")");
    }
  }
  return OkStatus();
}

}  // namespace gpupool::codec
