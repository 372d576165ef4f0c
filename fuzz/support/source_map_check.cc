#include "fuzz/support/source_map_check.h"

#include <algorithm>
#include <string>

namespace gpupool::fuzz {
namespace {

std::string PointerToken(std::string_view key) {
  std::string token;
  for (char c : key) {
    if (c == '~') {
      token += "~0";
    } else if (c == '/') {
      token += "~1";
    } else {
      token += c;
    }
  }
  return token;
}

struct Walk {
  const model::JsonSourceMap& map;
  std::string_view text;
  int lines;
  int budget;

  void Visit(const Json& value, const std::string& pointer, const std::string& field_path) {
    if (budget-- <= 0) return;
    auto position = map.Find(pointer);
    Check(position.has_value(), "every parsed value has a source position", "pointer " + pointer);
    Check(position->line >= 1 && position->line <= lines && position->column >= 1,
          "a source position is inside the text",
          pointer + " at " + std::to_string(position->line) + ":" +
              std::to_string(position->column) + " of " + std::to_string(lines) + " lines");
    // Field paths are ambiguous for keys holding '.' or '[' (the longest key wins): the lookup
    // must not crash, but may find another value.
    (void)map.FindFieldPath(field_path);
    (void)map.Prefix("f", field_path);
    if (value.is_object()) {
      for (const auto& [key, child] : value.items()) {
        Visit(child, pointer + "/" + PointerToken(key), model::FieldPath(field_path, key));
      }
    } else if (value.is_array()) {
      for (size_t i = 0; i < value.size(); ++i) {
        Visit(value[i], pointer + "/" + std::to_string(i), model::IndexPath(field_path, i));
      }
    }
  }
};

}  // namespace

void CheckSourceMap(const Json& value, const model::JsonSourceMap& map, std::string_view text,
                    int limit) {
  const int lines = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  Walk walk{map, text, lines, limit};
  walk.Visit(value, "", "");
}

}  // namespace gpupool::fuzz
