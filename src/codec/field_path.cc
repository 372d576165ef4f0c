#include "codec/field_path.h"

namespace gpupool::codec {

std::string FieldPath(std::string_view parent, std::string_view field) {
  if (parent.empty()) return std::string(field);
  if (field.empty()) return std::string(parent);
  return std::string(parent) + "." + std::string(field);
}

std::string IndexPath(std::string_view parent, size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

}  // namespace gpupool::codec
