#include "fuzz/support/source_map_check.h"

#include <algorithm>
#include <string>

#include "codec/field_path.h"

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
  const codec::JsonSourceMap& map;
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
        Visit(child, pointer + "/" + PointerToken(key), codec::FieldPath(field_path, key));
      }
    } else if (value.is_array()) {
      for (size_t i = 0; i < value.size(); ++i) {
        Visit(value[i], pointer + "/" + std::to_string(i), codec::IndexPath(field_path, i));
      }
    }
  }
};

int CountLines(std::string_view text, LineBreaks breaks) {
  if (breaks == LineBreaks::kJson) {
    return 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }
  int lines = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
      ++lines;
    } else if (text[i] == '\n' || text.substr(i, 2) == "\xC2\x85" ||
               text.substr(i, 3) == "\xE2\x80\xA8" || text.substr(i, 3) == "\xE2\x80\xA9") {
      ++lines;
    }
  }
  return lines;
}

}  // namespace

void CheckSourceMap(const Json& value, const codec::JsonSourceMap& map, std::string_view text,
                    LineBreaks breaks, int limit) {
  const int lines = CountLines(text, breaks);
  Walk walk{map, text, lines, limit};
  walk.Visit(value, "", "");
}

}  // namespace gpupool::fuzz
