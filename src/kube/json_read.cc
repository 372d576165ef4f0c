#include "kube/json_read.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gpupool::kube {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxDepth = 256;

// A recursive descent over the text. Every method returns false on what it does not take (see
// json_read.h); ReadJson then asks nlohmann, so a false here is never an answer of its own.
class Reader {
 public:
  explicit Reader(std::string_view text) : at_(text.data()), end_(text.data() + text.size()) {}

  bool Document(Json& out) {
    SkipSpace();
    if (!Value(out, 0)) return false;
    SkipSpace();
    return at_ == end_;
  }

 private:
  void SkipSpace() {
    while (at_ != end_ && (*at_ == ' ' || *at_ == '\n' || *at_ == '\r' || *at_ == '\t')) ++at_;
  }

  bool Value(Json& out, int depth) {
    if (at_ == end_) return false;
    switch (*at_) {
      case '{':
        return Object(out, depth + 1);
      case '[':
        return Array(out, depth + 1);
      case '"': {
        std::string text;
        if (!String(text)) return false;
        out = std::move(text);
        return true;
      }
      case 't':
        return Literal("true", out, true);
      case 'f':
        return Literal("false", out, false);
      case 'n':
        return Literal("null", out, nullptr);
      default:
        return Number(out);
    }
  }

  template <typename Value>
  bool Literal(std::string_view word, Json& out, Value value) {
    if (static_cast<size_t>(end_ - at_) < word.size() ||
        std::string_view(at_, word.size()) != word) {
      return false;
    }
    at_ += word.size();
    out = value;
    return true;
  }

  // Integers only, as nlohmann types them: unsigned when not negative, signed when negative.
  // At most 18 digits, so that either fits.
  bool Number(Json& out) {
    const bool negative = *at_ == '-';
    if (negative) ++at_;
    const char* first = at_;
    uint64_t value = 0;
    while (at_ != end_ && *at_ >= '0' && *at_ <= '9') value = value * 10 + (*at_++ - '0');
    const auto digits = at_ - first;
    if (digits == 0 || digits > 18 || (digits > 1 && *first == '0')) return false;
    if (at_ != end_ && (*at_ == '.' || *at_ == 'e' || *at_ == 'E')) return false;
    if (negative) {
      out = -static_cast<int64_t>(value);
    } else {
      out = value;
    }
    return true;
  }

  // A string of printable ASCII with the one-letter escapes; the rest (\u, bytes above 0x7f,
  // which nlohmann checks as UTF-8) is left to nlohmann.
  bool String(std::string& out) {
    ++at_;  // the opening quote
    const char* run = at_;
    while (at_ != end_) {
      const auto c = static_cast<unsigned char>(*at_);
      if (c == '"') {
        out.append(run, at_);
        ++at_;
        return true;
      }
      if (c < 0x20 || c >= 0x80) return false;
      if (c != '\\') {
        ++at_;
        continue;
      }
      out.append(run, at_);
      if (++at_ == end_) return false;
      switch (*at_) {
        case '"':
        case '\\':
        case '/':
          out += *at_;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        default:
          return false;
      }
      run = ++at_;
    }
    return false;
  }

  // The members are gathered first and the object made once at its size: grown a member at a
  // time, its vector copied every key at each doubling (they are const). A key seen twice is
  // left to nlohmann (it keeps the first place and the last value).
  bool Object(Json& out, int depth) {
    if (depth > kMaxDepth) return false;
    ++at_;
    SkipSpace();
    if (at_ != end_ && *at_ == '}') {
      ++at_;
      out = Json::object();
      return true;
    }
    if (members_.size() <= static_cast<size_t>(depth)) members_.resize(depth + 1);
    members_[depth].clear();
    while (true) {
      if (at_ == end_ || *at_ != '"') return false;
      // Deeper objects may grow members_ (moving the vectors, not their members): indexed anew.
      Member& member = members_[depth].emplace_back();
      if (!String(member.first)) return false;
      SkipSpace();
      if (at_ == end_ || *at_ != ':') return false;
      ++at_;
      SkipSpace();
      if (!Value(member.second, depth)) return false;
      SkipSpace();
      if (at_ == end_) return false;
      if (*at_ == '}') {
        ++at_;
        break;
      }
      if (*at_ != ',') return false;
      ++at_;
      SkipSpace();
    }
    std::vector<Member>& members = members_[depth];
    Json::object_t object;
    object.reserve(members.size());
    for (Member& member : members) {
      for (const auto& [key, value] : object) {
        if (key == member.first) return false;
      }
      object.emplace_back(std::move(member.first), std::move(member.second));
    }
    members.clear();
    out = std::move(object);
    return true;
  }

  bool Array(Json& out, int depth) {
    if (depth > kMaxDepth) return false;
    out = Json::array();
    ++at_;
    SkipSpace();
    if (at_ != end_ && *at_ == ']') {
      ++at_;
      return true;
    }
    while (true) {
      if (!Value(out.emplace_back(), depth)) return false;
      SkipSpace();
      if (at_ == end_) return false;
      if (*at_ == ']') {
        ++at_;
        return true;
      }
      if (*at_ != ',') return false;
      ++at_;
      SkipSpace();
    }
  }

  using Member = std::pair<std::string, Json>;

  const char* at_;
  const char* const end_;
  // Per depth, reused by the objects met at that depth.
  std::vector<std::vector<Member>> members_;
};

}  // namespace

Json ReadJson(std::string_view text) {
  Json out;
  if (Reader(text).Document(out)) return out;
  return Json::parse(text, nullptr, /*allow_exceptions=*/false);
}

const nlohmann::ordered_json& At(const nlohmann::ordered_json& object, const char* key) {
  static const nlohmann::ordered_json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

const nlohmann::ordered_json& At(const nlohmann::ordered_json& object,
                                 std::initializer_list<const char*> path) {
  static const nlohmann::ordered_json kNull;
  const nlohmann::ordered_json* at = &object;
  for (const char* key : path) {
    at = &At(*at, key);
    if (at->is_null()) return kNull;
  }
  return *at;
}

std::string Text(const nlohmann::ordered_json& value) {
  return value.is_string() ? value.get<std::string>() : "";
}

}  // namespace gpupool::kube
