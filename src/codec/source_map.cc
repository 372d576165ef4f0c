#include "codec/source_map.h"

#include <algorithm>
#include <exception>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "codec/internal.h"
#include "common/limits.h"
#include "common/strings.h"

namespace gpupool::codec {
namespace {

using internal::IsLiteralChar;
using internal::IsSpace;

}  // namespace

// Scans a JSON text (already known to be valid, or failing soft) and records positions.
class JsonSourceMapBuilder {
 public:
  explicit JsonSourceMapBuilder(std::string_view text) : text_(text) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  // Returns false on malformed input.
  // Only looks for duplicate keys; records no positions (cheap on large inputs).
  bool CheckDuplicates() {
    map_ = nullptr;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '\xEF') pos_ += 3;  // BOM
    return Value(-1, 0);
  }

  bool Build(JsonSourceMap& map) {
    map_ = &map;
    map.entries_.clear();
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '\xEF') pos_ += 3;  // BOM
    SkipSpace();
    int root = NewEntry(pos_);
    if (!Value(root, 0)) {
      map.entries_.clear();
      return false;
    }
    return true;
  }

  // First duplicate key found: its position and name.
  std::optional<std::pair<SourcePosition, std::string>> duplicate;

 private:
  // The text was parsed (ParseJson) with this bound already; it keeps the recursion of Value
  // bounded for any other text too (the map of a text nested deeper finds nothing).
  static constexpr int kMaxDepth = kMaxNestingDepth;

  SourcePosition Position(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line_index = static_cast<size_t>(it - line_starts_.begin()) - 1;
    SourcePosition pos;
    pos.line = static_cast<int>(line_index) + 1;
    for (size_t i = line_starts_[line_index]; i < offset && i < text_.size(); ++i) {
      if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) ++pos.column;
    }
    return pos;
  }

  int NewEntry(size_t offset) {
    if (map_ == nullptr) return -1;
    JsonSourceMap::Entry entry;
    entry.position = Position(offset);
    map_->entries_.push_back(std::move(entry));
    return static_cast<int>(map_->entries_.size()) - 1;
  }

  void SkipSpace() {
    while (pos_ < text_.size() && IsSpace(text_[pos_])) ++pos_;
  }

  // Reads a string token; `out` gets its decoded value.
  bool String(std::string* out) {
    if (pos_ >= text_.size() || text_[pos_] != '"') return false;
    size_t begin = pos_++;
    bool escaped = false;
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (c == '\\') {
        escaped = true;
        ++pos_;
      } else if (c == '"') {
        std::string_view token = text_.substr(begin, pos_ - begin);
        if (out != nullptr) {
          if (!escaped) {
            *out = std::string(token.substr(1, token.size() - 2));
          } else {
            try {
              *out = nlohmann::json::parse(token).get<std::string>();
            } catch (const std::exception&) {
              return false;
            }
          }
        }
        return true;
      }
    }
    return false;
  }

  bool Value(int entry, int depth) {
    if (depth > kMaxDepth) return false;
    SkipSpace();
    if (pos_ >= text_.size()) return false;
    char c = text_[pos_];
    if (c == '{') {
      ++pos_;
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return true;
      }
      std::unordered_set<std::string> keys;
      while (true) {
        SkipSpace();
        size_t key_offset = pos_;
        std::string key;
        if (!String(&key)) return false;
        SkipSpace();
        if (pos_ >= text_.size() || text_[pos_] != ':') return false;
        ++pos_;
        if (!keys.insert(key).second && !duplicate) {
          duplicate = std::make_pair(Position(key_offset), key);
        }
        int child = NewEntry(key_offset);
        if (map_ != nullptr) map_->entries_[entry].members.emplace_back(std::move(key), child);
        if (!Value(child, depth + 1)) return false;
        SkipSpace();
        if (pos_ >= text_.size()) return false;
        if (text_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (text_[pos_] == '}') {
          ++pos_;
          return true;
        }
        return false;
      }
    }
    if (c == '[') {
      ++pos_;
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return true;
      }
      while (true) {
        SkipSpace();
        int child = NewEntry(pos_);
        if (map_ != nullptr) map_->entries_[entry].items.push_back(child);
        if (!Value(child, depth + 1)) return false;
        SkipSpace();
        if (pos_ >= text_.size()) return false;
        if (text_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (text_[pos_] == ']') {
          ++pos_;
          return true;
        }
        return false;
      }
    }
    if (c == '"') return String(nullptr);
    size_t begin = pos_;
    while (pos_ < text_.size() && IsLiteralChar(text_[pos_])) ++pos_;
    return pos_ > begin;
  }

  std::string_view text_;
  std::vector<size_t> line_starts_;
  size_t pos_ = 0;
  JsonSourceMap* map_ = nullptr;
};

SourcePosition PositionOfOffset(std::string_view text, size_t offset) {
  SourcePosition pos;
  offset = std::min(offset, text.size());
  for (size_t i = 0; i < offset; ++i) {
    char c = text[i];
    if (c == '\n') {
      ++pos.line;
      pos.column = 1;
    } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
      ++pos.column;
    }
  }
  return pos;
}

JsonSourceMap JsonSourceMap::Build(std::string_view text) {
  JsonSourceMap map;
  JsonSourceMapBuilder builder(text);
  builder.Build(map);
  return map;
}

std::optional<SourcePosition> JsonSourceMap::Find(std::string_view json_pointer) const {
  if (entries_.empty()) return std::nullopt;
  int current = 0;
  if (json_pointer.empty()) return entries_[0].position;
  if (json_pointer[0] != '/') return std::nullopt;
  json_pointer.remove_prefix(1);
  while (true) {
    size_t slash = json_pointer.find('/');
    std::string token(json_pointer.substr(0, slash));
    // RFC 6901 unescaping: ~1 is '/', ~0 is '~'.
    std::string key;
    for (size_t i = 0; i < token.size(); ++i) {
      if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
        key += token[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        key += token[i];
      }
    }
    const Entry& entry = entries_[current];
    int next = -1;
    for (const auto& [name, index] : entry.members) {
      if (name == key) next = index;  // the last duplicate wins, as in the parsed value
    }
    if (next < 0 && !entry.items.empty() && !key.empty() &&
        key.find_first_not_of("0123456789") == std::string::npos) {
      size_t i = std::stoul(key);
      if (i < entry.items.size()) next = entry.items[i];
    }
    if (next < 0) return std::nullopt;
    current = next;
    if (slash == std::string_view::npos) break;
    json_pointer.remove_prefix(slash + 1);
  }
  return entries_[current].position;
}

std::optional<SourcePosition> JsonSourceMap::FindFieldPath(std::string_view path) const {
  if (entries_.empty()) return std::nullopt;
  int current = 0;
  while (!path.empty()) {
    const Entry& entry = entries_[current];
    if (path[0] == '[') {
      size_t close = path.find(']');
      if (close == std::string_view::npos) return std::nullopt;
      std::string digits(path.substr(1, close - 1));
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
        return std::nullopt;
      }
      size_t i = std::stoul(digits);
      if (i >= entry.items.size()) return std::nullopt;
      current = entry.items[i];
      path.remove_prefix(close + 1);
    } else {
      // The longest key that the path continues with.
      int next = -1;
      size_t best = 0;
      for (const auto& [name, index] : entry.members) {
        if (name.size() < best || !StartsWith(path, name)) continue;
        if (name.size() < path.size() && path[name.size()] != '.' && path[name.size()] != '[') {
          continue;
        }
        best = name.size();
        next = index;
      }
      if (next < 0) return std::nullopt;
      current = next;
      path.remove_prefix(best);
    }
    if (!path.empty() && path[0] == '.') path.remove_prefix(1);
  }
  return entries_[current].position;
}

std::optional<SourcePosition> JsonSourceMap::FindNearest(std::string_view field_path) const {
  if (entries_.empty()) return std::nullopt;
  while (!field_path.empty()) {
    if (std::optional<SourcePosition> found = FindFieldPath(field_path)) return found;
    const size_t cut = field_path.find_last_of(".[");
    field_path = cut == std::string_view::npos ? std::string_view() : field_path.substr(0, cut);
  }
  return entries_[0].position;
}

std::string JsonSourceMap::Prefix(std::string_view file_name, std::string_view field_path) const {
  std::optional<SourcePosition> pos = FindFieldPath(field_path);
  if (!pos) return std::string(file_name) + ": ";
  return std::string(file_name) + ":" + std::to_string(pos->line) + ":" +
         std::to_string(pos->column) + ": ";
}

namespace internal {

std::optional<std::pair<SourcePosition, std::string>> FindDuplicateKey(std::string_view text) {
  JsonSourceMapBuilder builder(text);
  if (!builder.CheckDuplicates()) return std::nullopt;
  return builder.duplicate;
}

}  // namespace internal
}  // namespace gpupool::codec
