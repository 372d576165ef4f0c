#include "model/json_io.h"

#include <yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "common/json_text.h"
#include "common/limits.h"
#include "common/strings.h"
#include "model/quantity.h"

namespace gpupool::model {

// Fills a JsonSourceMap while a YAML document is converted.
class YamlSourceMapBuilder {
 public:
  static int Add(JsonSourceMap& map, SourcePosition position) {
    JsonSourceMap::Entry entry;
    entry.position = position;
    map.entries_.push_back(std::move(entry));
    return static_cast<int>(map.entries_.size()) - 1;
  }
  static void AddMember(JsonSourceMap& map, int parent, std::string key, int child) {
    map.entries_[parent].members.emplace_back(std::move(key), child);
  }
  static void AddItem(JsonSourceMap& map, int parent, int child) {
    map.entries_[parent].items.push_back(child);
  }
  // An alias shares the children of the node it refers to (the map is a tree of indexes, so
  // shared subtrees are fine).
  static void CopyChildren(JsonSourceMap& map, int from, int to) {
    if (from < 0) return;
    JsonSourceMap::Entry& target = map.entries_[to];
    const JsonSourceMap::Entry& source = map.entries_[from];
    target.members = source.members;
    target.items = source.items;
  }
};

namespace {

using nlohmann::ordered_json;

// A document may expand (through aliases) to at most this many values per byte of text.
constexpr int64_t kYamlValuesPerByte = 4;

std::string Located(std::string_view file_name, int line, int column, std::string_view what) {
  return std::string(file_name) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
         std::string(what);
}

std::string Located(std::string_view file_name, SourcePosition at, std::string_view what) {
  return Located(file_name, at.line, at.column, what);
}

bool IsStructural(char c) {
  return c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':';
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool IsLiteralChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '+' ||
         c == '-' || c == '.' || static_cast<unsigned char>(c) >= 0x80;
}

// nlohmann's message without its "[json.exception...] parse error at line L, column C: " prefix
// and the confusing "last read" excerpt.
std::string CleanJsonMessage(std::string what) {
  size_t at = what.find("parse error");
  if (at != std::string::npos) {
    size_t colon = what.find(": ", at);
    if (colon != std::string::npos) what = what.substr(colon + 2);
  }
  size_t last_read = what.find("; last read: ");
  if (last_read != std::string::npos) {
    // "...; last read: '<text>'; expected <token>" or "...; last read: '<text>'". The text is
    // the input's, so it may hold "'; " itself (and the lexer cuts it in the middle of a UTF-8
    // character): the expected token is found from the end, among the names nlohmann gives.
    static constexpr std::string_view kExpected[] = {"string literal",
                                                     "number literal",
                                                     "true literal",
                                                     "false literal",
                                                     "null literal",
                                                     "'['",
                                                     "'{'",
                                                     "']'",
                                                     "'}'",
                                                     "':'",
                                                     "','",
                                                     "end of input",
                                                     "'[', '{', or a literal"};
    std::string tail;
    for (std::string_view token : kExpected) {
      std::string candidate = "; expected " + std::string(token);
      if (EndsWith(what, candidate) && what.size() - candidate.size() > last_read) {
        tail = std::move(candidate);
        break;
      }
    }
    what = what.substr(0, last_read) + tail;
  }
  return what;
}

// The byte offset where the offending token starts, from nlohmann's 1-based "last read" byte.
// `literal`: the token is a literal (number, true, false, null) that may end one byte earlier.
size_t OffendingOffset(std::string_view text, size_t byte, const std::string& message,
                       bool literal) {
  if (byte == 0) return 0;
  size_t offset = byte - 1;
  if (offset >= text.size()) return text.size();
  literal = literal || message.find("invalid literal") != std::string::npos ||
            message.find("number literal") != std::string::npos ||
            message.find("'true' literal") != std::string::npos ||
            message.find("'false' literal") != std::string::npos ||
            message.find("'null' literal") != std::string::npos;
  bool string_literal = message.find("unexpected string literal") != std::string::npos;
  if (literal) {
    // The lexer may have read one character past the literal.
    if ((IsStructural(text[offset]) || IsSpace(text[offset])) && offset > 0 &&
        IsLiteralChar(text[offset - 1])) {
      --offset;
    }
    while (offset > 0 && IsLiteralChar(text[offset - 1])) --offset;
  } else if (string_literal && text[offset] == '"') {
    // Walk back to the opening quote (skipping escaped quotes).
    size_t i = offset;
    while (i > 0) {
      --i;
      if (text[i] == '"') {
        size_t backslashes = 0;
        while (i >= backslashes + 1 && text[i - backslashes - 1] == '\\') ++backslashes;
        if (backslashes % 2 == 0) {
          offset = i;
          break;
        }
      }
    }
  }
  return offset;
}

std::string TooDeepMessage() {
  return "nested deeper than " + std::to_string(kMaxNestingDepth) + " levels of arrays and objects";
}

constexpr std::string_view kNumberOutOfRange =
    "number out of range (larger than a 64-bit floating-point number can hold)";

// The byte offset of the `n`th (1-based) `{` or `[` of a JSON text, strings skipped: where the
// nlohmann parser had read that many object and array starts.
size_t OffsetOfOpener(std::string_view text, int64_t n) {
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if ((c == '{' || c == '[') && --n == 0) {
      return i;
    }
  }
  return text.size();
}

// nlohmann's DOM builder with a bound on nesting (kMaxNestingDepth) and the first error kept
// rather than thrown: parsing an array of 100,000 `[` stops at the 513th.
class BoundedDomParser : public nlohmann::detail::json_sax_dom_parser<ordered_json> {
  using Base = nlohmann::detail::json_sax_dom_parser<ordered_json>;

 public:
  explicit BoundedDomParser(ordered_json& root) : Base(root, /*allow_exceptions_=*/false) {}

  bool start_object(std::size_t size) { return Enter() && Base::start_object(size); }
  bool start_array(std::size_t size) { return Enter() && Base::start_array(size); }
  bool end_object() {
    --depth_;
    return Base::end_object();
  }
  bool end_array() {
    --depth_;
    return Base::end_array();
  }

  template <class Exception>
  bool parse_error(std::size_t byte, const std::string& /*last_token*/, const Exception& error) {
    error_byte = byte;
    error_message = error.what();
    number_out_of_range = error.id == 406;  // out_of_range.406: a number overflows a double
    return false;
  }

  // The object or array start (1-based, counting all of them so far) that was one level too deep;
  // 0 when none was.
  int64_t too_deep_opener = 0;
  std::optional<size_t> error_byte;
  std::string error_message;
  bool number_out_of_range = false;

 private:
  bool Enter() {
    ++openers_;
    if (++depth_ > kMaxNestingDepth) {
      too_deep_opener = openers_;
      return false;
    }
    return true;
  }

  int depth_ = 0;
  int64_t openers_ = 0;
};

// ---- YAML -> JSON ----

bool MatchesCoreInt(const std::string& s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

bool MatchesCoreFloat(const std::string& s) {
  // [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t int_digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++int_digits;
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

bool IsCoreNull(const std::string& s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}
bool IsCoreTrue(const std::string& s) { return s == "true" || s == "True" || s == "TRUE"; }
bool IsCoreFalse(const std::string& s) { return s == "false" || s == "False" || s == "FALSE"; }

std::optional<ordered_json> CoreInteger(const std::string& s) {
  if (MatchesCoreInt(s)) {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0 && end == s.c_str() + s.size()) return ordered_json(static_cast<int64_t>(v));
    if (s[0] != '-') {
      errno = 0;
      unsigned long long u = std::strtoull(s.c_str(), &end, 10);
      if (errno == 0) return ordered_json(static_cast<uint64_t>(u));
    }
    return ordered_json(std::strtod(s.c_str(), nullptr));
  }
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    int base = s[1] == 'x' ? 16 : 8;
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str() + 2, &end, base);
    if (errno == 0 && end == s.c_str() + s.size() && v >= 0) {
      return ordered_json(static_cast<int64_t>(v));
    }
  }
  return std::nullopt;
}

std::optional<ordered_json> CoreFloat(const std::string& s) {
  if (MatchesCoreFloat(s)) return ordered_json(std::strtod(s.c_str(), nullptr));
  // .inf/.nan have no JSON form; keep them as strings.
  return std::nullopt;
}

ordered_json PlainScalar(const std::string& s) {
  if (IsCoreNull(s)) return nullptr;
  if (IsCoreTrue(s)) return true;
  if (IsCoreFalse(s)) return false;
  if (auto i = CoreInteger(s)) return *i;
  if (auto f = CoreFloat(s)) return *f;
  return s;
}

// libyaml counts lines and columns from 0 (columns in characters); messages count from 1.
SourcePosition PositionOf(const yaml_mark_t& mark) {
  return {static_cast<int>(mark.line) + 1, static_cast<int>(mark.column) + 1};
}

std::string CString(const yaml_char_t* text) {
  return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text));
}

// A null node: an untagged plain scalar spelled as a core-schema null, or a missing node (libyaml
// reports the value of "a:" as an empty plain scalar). Unlike `!!null x` or `"null"`, a null node
// as a document's root makes the document empty; as a key it reads "null".
bool IsNullNode(const yaml_event_t& event) {
  const auto& scalar = event.data.scalar;
  if (scalar.tag != nullptr || scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
  std::string_view text(reinterpret_cast<const char*>(scalar.value), scalar.length);
  return text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL";
}

// Owns a libyaml parser reading `text` in place (no copy of the caller's buffer).
class LibyamlParser {
 public:
  explicit LibyamlParser(std::string_view text) {
    initialized_ = yaml_parser_initialize(&parser_) != 0;
    if (initialized_) {
      yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                   text.size());
    }
  }
  ~LibyamlParser() {
    if (initialized_) yaml_parser_delete(&parser_);
  }
  LibyamlParser(const LibyamlParser&) = delete;
  LibyamlParser& operator=(const LibyamlParser&) = delete;

  bool initialized() const { return initialized_; }
  yaml_parser_t* get() { return &parser_; }

 private:
  yaml_parser_t parser_;
  bool initialized_ = false;
};

// Owns one event; yaml_event_delete frees the strings libyaml allocated for it.
class LibyamlEvent {
 public:
  LibyamlEvent() { std::memset(&event_, 0, sizeof(event_)); }
  ~LibyamlEvent() { yaml_event_delete(&event_); }
  LibyamlEvent(const LibyamlEvent&) = delete;
  LibyamlEvent& operator=(const LibyamlEvent&) = delete;

  yaml_event_t* get() { return &event_; }

 private:
  yaml_event_t event_;
};

// libyaml's own error as "<file>:<line>:<column>: malformed YAML: <problem> (<context> at ...)".
Status SyntaxError(const yaml_parser_t& parser, std::string_view text, std::string_view file_name) {
  if (parser.error == YAML_MEMORY_ERROR) {
    return InternalError(std::string(file_name) + ": out of memory while parsing YAML");
  }
  std::string what = "malformed YAML: ";
  what += parser.problem != nullptr ? parser.problem : "cannot parse";
  if (parser.error == YAML_READER_ERROR) {
    // Encoding errors carry a byte offset instead of a mark.
    if (parser.problem_value != -1) {
      char value[16];
      std::snprintf(value, sizeof(value), " (#x%02X)", parser.problem_value);
      what += value;
    }
    return InvalidArgumentError(
        Located(file_name, PositionOfOffset(text, parser.problem_offset), what));
  }
  if (parser.context != nullptr) {
    SourcePosition context = PositionOf(parser.context_mark);
    what += std::string(" (") + parser.context + " at line " + std::to_string(context.line) +
            ", column " + std::to_string(context.column) + ")";
  }
  return InvalidArgumentError(Located(file_name, PositionOf(parser.problem_mark), what));
}

// Builds the JSON values and source maps of a YAML stream directly from libyaml's events, in one
// pass. Guards: an event budget (a bound on the work per byte whatever the parser emits), a bound
// on values after expanding aliases ("billion laughs", recursive aliases), a nesting bound, and
// duplicate keys. After the first semantic error it keeps reading (building nothing) so that a
// syntax error later in the stream is reported first, as a parser that reads everything before
// converting would.
class YamlJsonBuilder {
 public:
  YamlJsonBuilder(std::string_view file_name, int64_t budget)
      : file_name_(file_name), events_left_(budget), values_left_(budget) {}

  const std::optional<Status>& error() const { return error_; }
  std::vector<YamlDocument> TakeDocuments() { return std::move(documents_); }

  // Takes the next event. An error here ends the parse at once, as a syntax error does (an alias
  // to an undefined anchor, the event budget); errors in what the stream means are kept in
  // error() instead.
  Status Handle(const yaml_event_t& event) {
    SourcePosition at = PositionOf(event.start_mark);
    if (--events_left_ < 0) {
      return InvalidArgumentError(Located(file_name_, at, "malformed YAML (too many events)"));
    }
    // Counted from the events, whatever was built: libyaml's scanner does work per token for each
    // open flow level, so reading on through 100,000 `[` would take minutes.
    if (event.type == YAML_SEQUENCE_START_EVENT || event.type == YAML_MAPPING_START_EVENT) {
      if (++open_levels_ > kMaxNestingDepth) {
        return InvalidArgumentError(Located(file_name_, at, TooDeepMessage()));
      }
    } else if (event.type == YAML_SEQUENCE_END_EVENT || event.type == YAML_MAPPING_END_EVENT) {
      --open_levels_;
    }
    switch (event.type) {
      case YAML_DOCUMENT_START_EVENT:
        OnDocumentStart();
        break;
      case YAML_DOCUMENT_END_EVENT:
        OnDocumentEnd();
        break;
      case YAML_ALIAS_EVENT:
        return OnAlias(at, event.data.alias.anchor);
      case YAML_SCALAR_EVENT:
        OnScalar(at, event);
        break;
      case YAML_SEQUENCE_START_EVENT:
        Start(at, RegisterAnchor(event.data.sequence_start.anchor), ordered_json::array());
        break;
      case YAML_MAPPING_START_EVENT:
        Start(at, RegisterAnchor(event.data.mapping_start.anchor), ordered_json::object());
        break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        End();
        break;
      default:  // stream start and end
        break;
    }
    return OkStatus();
  }

 private:
  using AnchorId = size_t;  // 0: none; ids count anchor definitions within a document
  static constexpr AnchorId kNoAnchor = 0;

  struct Frame {
    ordered_json value;  // array or object being filled
    int entry = 0;       // its source-map entry
    SourcePosition mark;
    AnchorId anchor = kNoAnchor;
    int64_t count = 1;  // values in the subtree, this one included
    int height = 1;     // levels of sequences and mappings in the subtree, this one included
    bool have_key = false;
    std::string key;
    SourcePosition key_mark;
  };
  struct Anchored {
    bool complete = false;
    ordered_json value;
    int entry = -1;  // source-map entry whose children an alias shares
    SourcePosition mark;
    int64_t count = 0;
    int height = 0;
    std::optional<std::string> scalar;  // the raw text, for aliases used as keys
    bool null_node = false;
  };

  void OnDocumentStart() {
    anchor_ids_.clear();
    if (error_) return;
    doc_ = YamlDocument();
    has_root_ = false;
    root_is_null_ = false;
    stack_.clear();
    anchors_.clear();
  }

  // An empty document is skipped, and so is one that is only null (`null`, `~`, `!!null x`),
  // which `-o yaml` of a null value writes.
  void OnDocumentEnd() {
    if (error_ || !has_root_ || root_is_null_) return;
    documents_.push_back(std::move(doc_));
  }

  // A new definition of `name` (redefinitions get a new id: an alias refers to the latest one).
  // Counted even after an error, so that an undefined alias is still found.
  AnchorId RegisterAnchor(const yaml_char_t* name) {
    if (name == nullptr) return kNoAnchor;
    AnchorId id = ++anchor_count_;
    anchor_ids_[CString(name)] = id;
    return id;
  }

  void OnNull(SourcePosition at, AnchorId anchor) {
    if (AtKey()) {
      SetKey(at, "null");
      if (anchor != kNoAnchor) Remember(anchor, nullptr, -1, at, 1, 0, "null", true);
      return;
    }
    if (stack_.empty()) root_is_null_ = true;
    int entry = BeginNode(at, 1, 0);
    if (entry < 0) return;
    Finish(ordered_json(nullptr), entry, at, anchor, 1, 0, std::nullopt, true);
  }

  Status OnAlias(SourcePosition at, const yaml_char_t* name) {
    auto id = anchor_ids_.find(CString(name));
    if (id == anchor_ids_.end()) {
      return InvalidArgumentError(
          Located(file_name_, at, "alias to an undefined anchor \"" + CString(name) + "\""));
    }
    if (error_) return OkStatus();
    AnchorId anchor = id->second;
    if (anchor >= anchors_.size() || !anchors_[anchor].complete) {
      Fail(at, "too many values after expanding aliases (is an alias used recursively?)");
      return OkStatus();
    }
    const Anchored& a = anchors_[anchor];
    if (AtKey()) {
      if (!a.scalar) {
        Fail(a.mark, "mapping keys must be scalars");
        return OkStatus();
      }
      SetKey(at, *a.scalar);
      return OkStatus();
    }
    if (stack_.empty()) root_is_null_ = a.null_node;
    int entry = BeginNode(a.mark, a.count, a.height);
    if (entry < 0) return OkStatus();
    YamlSourceMapBuilder::CopyChildren(doc_.source_map, a.entry, entry);
    // A copy: anchors_ does not grow here, but Finish moves the value it is given.
    ordered_json value = a.value;
    Finish(std::move(value), entry, a.mark, kNoAnchor, a.count, a.height, std::nullopt,
           a.null_node);
    return OkStatus();
  }

  void OnScalar(SourcePosition at, const yaml_event_t& event) {
    const auto& scalar = event.data.scalar;
    AnchorId anchor = RegisterAnchor(scalar.anchor);
    if (error_) return;
    if (IsNullNode(event)) {
      OnNull(at, anchor);
      return;
    }
    std::string value(reinterpret_cast<const char*>(scalar.value), scalar.length);
    const char* tag = reinterpret_cast<const char*>(scalar.tag);
    bool plain = scalar.style == YAML_PLAIN_SCALAR_STYLE;
    if (AtKey()) {
      if (anchor == kNoAnchor) {
        SetKey(at, std::move(value));
        return;
      }
      SetKey(at, value);
      if (error_) return;
      auto typed = TypedScalar(at, tag, plain, value);
      if (typed) Remember(anchor, std::move(*typed), -1, at, 1, 0, std::move(value), false);
      return;
    }
    int entry = BeginNode(at, 1, 0);
    if (entry < 0) return;
    auto typed = TypedScalar(at, tag, plain, value);
    if (!typed) return;
    // A tagged scalar that types as null (`!!null x`, `!x` with no value) is a null node as an
    // untagged `null` is: a document of only that is skipped too.
    const bool null_node = typed->is_null();
    if (null_node && stack_.empty()) root_is_null_ = true;
    std::optional<std::string> raw;
    if (anchor != kNoAnchor) raw = std::move(value);
    Finish(std::move(*typed), entry, at, anchor, 1, 0, std::move(raw), null_node);
  }

  // A scalar's JSON value: untagged plain scalars by the core schema, untagged quoted and block
  // scalars as strings, the standard tags as they say, other tags as if plain.
  std::optional<ordered_json> TypedScalar(SourcePosition at, const char* tag, bool plain,
                                          const std::string& s) {
    std::optional<ordered_json> value = TypedScalarValue(at, tag, plain, s);
    // 1e400 is a number no double holds; JSON has no infinity to read it as.
    if (value && value->is_number_float() && !std::isfinite(value->get<double>())) {
      Fail(at, kNumberOutOfRange);
      return std::nullopt;
    }
    return value;
  }

  std::optional<ordered_json> TypedScalarValue(SourcePosition at, const char* tag, bool plain,
                                               const std::string& s) {
    if (tag == nullptr) return plain ? PlainScalar(s) : ordered_json(s);
    std::string_view t(tag);
    if (t == "!" || t == "tag:yaml.org,2002:str") return ordered_json(s);
    if (t == "tag:yaml.org,2002:int") {
      if (auto i = CoreInteger(s)) return *i;
      Fail(at, "!!int value \"" + s + "\" is not an integer");
      return std::nullopt;
    }
    if (t == "tag:yaml.org,2002:float") {
      if (auto i = CoreInteger(s)) return ordered_json(i->get<double>());
      if (auto f = CoreFloat(s)) return *f;
      Fail(at, "!!float value \"" + s + "\" is not a number");
      return std::nullopt;
    }
    if (t == "tag:yaml.org,2002:bool") {
      if (IsCoreTrue(s)) return ordered_json(true);
      if (IsCoreFalse(s)) return ordered_json(false);
      Fail(at, "!!bool value \"" + s + "\" is not true or false");
      return std::nullopt;
    }
    if (t == "tag:yaml.org,2002:null") return ordered_json(nullptr);
    return PlainScalar(s);
  }

  void Start(SourcePosition at, AnchorId anchor, ordered_json empty) {
    if (error_) return;
    if (AtKey()) {
      Fail(at, "mapping keys must be scalars");
      return;
    }
    int entry = BeginNode(at, 1, 1);
    if (entry < 0) return;
    if (anchor != kNoAnchor) {
      if (anchor >= anchors_.size()) anchors_.resize(anchor + 1);
      anchors_[anchor] = Anchored();  // open: an alias to it now is recursive
    }
    Frame frame;
    frame.value = std::move(empty);
    frame.entry = entry;
    frame.mark = at;
    frame.anchor = anchor;
    stack_.push_back(std::move(frame));
  }

  void End() {
    if (error_) return;
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    Finish(std::move(frame.value), frame.entry, frame.mark, frame.anchor, frame.count, frame.height,
           std::nullopt, false);
  }

  void Fail(SourcePosition at, std::string_view what) {
    if (!error_) error_ = InvalidArgumentError(Located(file_name_, at, what));
  }

  bool AtKey() const {
    return !stack_.empty() && stack_.back().value.is_object() && !stack_.back().have_key;
  }

  void SetKey(SourcePosition at, std::string name) {
    Frame& top = stack_.back();
    if (top.value.contains(name)) {
      Fail(at, "duplicate key \"" + name + "\"");
      return;
    }
    top.have_key = true;
    top.key = std::move(name);
    top.key_mark = at;
  }

  // Checks the bounds for a node (or an alias expanding to `count` values) at the current position
  // and adds its source-map entry. `height`: the levels of sequences and mappings it adds (0 for a
  // scalar, 1 for a new sequence or mapping). -1 after an error.
  int BeginNode(SourcePosition at, int64_t count, int height) {
    if (static_cast<int64_t>(stack_.size()) + height > kMaxNestingDepth) {
      Fail(at, TooDeepMessage());
      return -1;
    }
    values_left_ -= count;
    if (values_left_ < 0) {
      Fail(at, "too many values after expanding aliases (is an alias used recursively?)");
      return -1;
    }
    if (stack_.empty()) {
      has_root_ = true;
      doc_.line = at.line;
      return YamlSourceMapBuilder::Add(doc_.source_map, at);
    }
    Frame& top = stack_.back();
    if (top.value.is_array()) {
      int entry = YamlSourceMapBuilder::Add(doc_.source_map, at);
      YamlSourceMapBuilder::AddItem(doc_.source_map, top.entry, entry);
      return entry;
    }
    int entry = YamlSourceMapBuilder::Add(doc_.source_map, top.key_mark);
    YamlSourceMapBuilder::AddMember(doc_.source_map, top.entry, top.key, entry);
    return entry;
  }

  void Remember(AnchorId anchor, ordered_json value, int entry, SourcePosition at, int64_t count,
                int height, std::optional<std::string> scalar, bool null_node) {
    if (anchor >= anchors_.size()) anchors_.resize(anchor + 1);
    Anchored& a = anchors_[anchor];
    a.complete = true;
    a.value = std::move(value);
    a.entry = entry;
    a.mark = at;
    a.count = count;
    a.height = height;
    a.scalar = std::move(scalar);
    a.null_node = null_node;
  }

  // Places a finished value in its parent (or as the document's root).
  void Finish(ordered_json value, int entry, SourcePosition at, AnchorId anchor, int64_t count,
              int height, std::optional<std::string> scalar, bool null_node) {
    if (anchor != kNoAnchor) {
      Remember(anchor, value, entry, at, count, height, std::move(scalar), null_node);
    }
    if (stack_.empty()) {
      doc_.value = std::move(value);
      return;
    }
    Frame& top = stack_.back();
    top.count += count;
    top.height = std::max(top.height, height + 1);
    if (top.value.is_array()) {
      top.value.push_back(std::move(value));
    } else {
      top.value.get_ref<ordered_json::object_t&>().emplace(top.key, std::move(value));
      top.have_key = false;
    }
  }

  std::string_view file_name_;
  int64_t events_left_;
  int open_levels_ = 0;  // sequences and mappings started and not ended
  int64_t values_left_;
  std::optional<Status> error_;
  YamlDocument doc_;
  bool has_root_ = false;
  bool root_is_null_ = false;
  std::vector<Frame> stack_;
  std::unordered_map<std::string, AnchorId> anchor_ids_;  // latest definition of each name
  AnchorId anchor_count_ = 0;
  std::vector<Anchored> anchors_;  // by id, within the document
  std::vector<YamlDocument> documents_;
};

// ---- JSON -> YAML ----

// The code point that starts at s[i] and its length in bytes; length 0 when the bytes there are
// not valid UTF-8 (overlong, surrogate, out of range or cut short).
std::pair<uint32_t, size_t> DecodeUtf8(std::string_view s, size_t i) {
  unsigned char lead = static_cast<unsigned char>(s[i]);
  if (lead < 0x80) return {lead, 1};
  size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
  if (length == 0 || lead > 0xF4 || i + length > s.size()) return {0, 0};
  uint32_t cp = lead & (0x3F >> (length - 1));
  for (size_t k = 1; k < length; ++k) {
    unsigned char c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0) != 0x80) return {0, 0};
    cp = (cp << 6) | (c & 0x3F);
  }
  static constexpr uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinimum[length] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 0};
  return {cp, length};
}

// Code points a YAML reader refuses in a stream (DEL, C1 controls, U+FFFE, U+FFFF) or reads as a
// line break or byte-order mark (NEL, LS, PS, U+FEFF): written only as escapes in double quotes.
// C0 controls are left to the JSON escaping.
bool IsUnsafeCodePoint(uint32_t cp) {
  return cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF ||
         cp == 0xFFFE || cp == 0xFFFF;
}

// True when `s` is not valid UTF-8 or holds an unsafe code point.
bool NeedsEscapes(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    auto [cp, length] = DecodeUtf8(s, i);
    if (length == 0 || IsUnsafeCodePoint(cp)) return true;
    i += length;
  }
  return false;
}

// `quoted` (valid UTF-8, as nlohmann's dump with replacement writes it) with unsafe code points
// as \uXXXX escapes, which YAML's double-quoted style reads as JSON does.
std::string EscapeUnsafeCodePoints(const std::string& quoted) {
  std::string out;
  out.reserve(quoted.size());
  for (size_t i = 0; i < quoted.size();) {
    auto [cp, length] = DecodeUtf8(quoted, i);
    if (length == 0) length = 1;
    if (IsUnsafeCodePoint(cp)) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04X", static_cast<unsigned>(cp));
      out += escape;
    } else {
      out.append(quoted, i, length);
    }
    i += length;
  }
  return out;
}

bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  // Would read back as something other than a string (YAML 1.2 core, and 1.1 words for safety).
  static const std::unordered_set<std::string> kWords = {
      "~",     "null", "Null",  "NULL",  "true", "True", "TRUE", "false", "False",
      "FALSE", "yes",  "Yes",   "YES",   "no",   "No",   "NO",   "on",    "On",
      "ON",    "off",  "Off",   "OFF",   "y",    "Y",    "n",    "N",     ".inf",
      ".Inf",  ".INF", "-.inf", "+.inf", ".nan", ".NaN", ".NAN", "<<"};
  if (kWords.contains(s)) return true;
  if (MatchesCoreInt(s) || MatchesCoreFloat(s) || CoreInteger(s)) return true;
  // Sexagesimal/date-like values confuse YAML 1.1 readers.
  if (std::isdigit(static_cast<unsigned char>(s[0])) &&
      s.find_first_not_of("0123456789:-._ ") == std::string::npos) {
    return true;
  }
  char first = s[0];
  if (std::strchr("-?:,[]{}#&*!|>'\"%@`", first) != nullptr) {
    // "-x", "?x", ":x" are plain in YAML 1.2 but not everywhere; keep it simple and quote.
    return true;
  }
  if (s.front() == ' ' || s.back() == ' ' || s.back() == ':') return true;
  if (s.find(": ") != std::string::npos || s.find(" #") != std::string::npos) return true;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return true;
  }
  return NeedsEscapes(s);
}

std::string YamlString(const std::string& s) {
  if (!NeedsQuotes(s)) return s;
  std::string quoted =
      ordered_json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return NeedsEscapes(quoted) ? EscapeUnsafeCodePoints(quoted) : quoted;
}

// A multi-line string as a literal block ("|", "|-" or "|+") with content at `indent`, or
// nullopt when a block cannot represent it exactly.
std::optional<std::string> LiteralBlock(const std::string& s, int indent) {
  if (s.find('\n') == std::string::npos) return std::nullopt;
  size_t end = s.find_last_not_of('\n');
  if (end == std::string::npos) return std::nullopt;
  std::string_view body(s.data(), end + 1);
  size_t trailing = s.size() - body.size();
  if (body[0] == ' ' || body[0] == '\t') return std::nullopt;
  for (char c : body) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7f) return std::nullopt;
  }
  if (NeedsEscapes(body)) return std::nullopt;
  std::string out = trailing == 0 ? "|-" : trailing == 1 ? "|" : "|+";
  std::string pad(indent, ' ');
  size_t start = 0;
  while (start <= body.size()) {
    size_t newline = body.find('\n', start);
    std::string_view line = body.substr(
        start, newline == std::string_view::npos ? std::string_view::npos : newline - start);
    // A line that starts with spaces or is blank is fine after the first; keep it as is.
    out += "\n";
    if (!line.empty()) out += pad + std::string(line);
    if (newline == std::string_view::npos) break;
    start = newline + 1;
  }
  for (size_t i = 1; i < trailing; ++i) out += "\n";
  return out;
}

std::string YamlScalar(const ordered_json& value, int block_indent) {
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (auto block = LiteralBlock(s, block_indent)) return *block;
    return YamlString(s);
  }
  if (value.is_null()) return "null";
  if (value.is_number_float()) {
    double d = value.get<double>();
    if (std::isnan(d)) return ".nan";
    if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
  }
  return value.dump();
}

bool IsEmptyContainer(const ordered_json& value) {
  return (value.is_object() || value.is_array()) && value.empty();
}

void EmitYaml(const ordered_json& value, int indent, std::string& out);

// "key:", or "? key\n<indent>:" for a key longer than YAML lets an implicit key be (1024
// characters, on one line: libyaml refuses the mapping after it).
std::string MappingKey(const std::string& key, int indent) {
  std::string written = YamlString(key);
  if (written.size() <= 1000) return written + ":";
  return "? " + written + "\n" + std::string(indent, ' ') + ":";
}

// Emits `value` after a "key:" or "- " that is already on the current line.
void EmitAfterIndicator(const ordered_json& value, int indent, bool after_dash, std::string& out) {
  if (value.is_object() && !value.empty()) {
    if (after_dash) {
      // "- key: v" with the following keys aligned under the first.
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out += std::string(indent, ' ');
        first = false;
        out += MappingKey(key, indent);
        if ((item.is_object() || item.is_array()) && !item.empty()) {
          out += "\n";
          EmitYaml(item, indent + (item.is_array() ? 0 : 2), out);
        } else {
          out += " " +
                 (IsEmptyContainer(item) ? std::string(item.is_object() ? "{}" : "[]")
                                         : YamlScalar(item, indent + 2)) +
                 "\n";
        }
      }
      return;
    }
    out += "\n";
    EmitYaml(value, indent + 2, out);
  } else if (value.is_array() && !value.empty()) {
    if (after_dash) {
      // "- - x": nested sequence inline after the dash.
      bool first = true;
      for (const auto& item : value) {
        if (!first) out += std::string(indent, ' ');
        first = false;
        out += "- ";
        EmitAfterIndicator(item, indent + 2, true, out);
      }
      return;
    }
    out += "\n";
    // Sequences under a key are indented like kubectl does (same column as the key).
    EmitYaml(value, indent, out);
  } else if (IsEmptyContainer(value)) {
    out += value.is_object() ? "{}\n" : "[]\n";
  } else {
    out += YamlScalar(value, after_dash ? indent : indent + 2) + "\n";
  }
}

void EmitYaml(const ordered_json& value, int indent, std::string& out) {
  std::string pad(indent, ' ');
  if (value.is_object() && !value.empty()) {
    for (const auto& [key, item] : value.items()) {
      out += pad + MappingKey(key, indent);
      if ((item.is_object() || item.is_array()) && !item.empty()) {
        EmitAfterIndicator(item, indent, false, out);
      } else {
        out += " ";
        EmitAfterIndicator(item, indent, false, out);
      }
    }
  } else if (value.is_array() && !value.empty()) {
    for (const auto& item : value) {
      out += pad + "- ";
      EmitAfterIndicator(item, indent + 2, true, out);
    }
  } else {
    out += pad;
    EmitAfterIndicator(value, indent, false, out);
  }
}

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

Result<ordered_json> ParseJson(std::string_view text, std::string_view file_name) {
  // nlohmann's lexer reads a NUL byte as the end of the input (for C strings): what follows one
  // would be ignored. A NUL inside a string is refused as a control character; outside, here.
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return InvalidArgumentError(
        Located(file_name, PositionOfOffset(text, nul), "a NUL byte, which JSON text cannot hold"));
  }
  ordered_json value;
  BoundedDomParser parser(value);
  try {
    ordered_json::sax_parse(text.begin(), text.end(), &parser);
  } catch (const std::exception& e) {  // out of memory
    return InternalError(std::string(file_name) + ": " + e.what());
  }
  if (parser.too_deep_opener > 0) {
    SourcePosition pos = PositionOfOffset(text, OffsetOfOpener(text, parser.too_deep_opener));
    return InvalidArgumentError(Located(file_name, pos, TooDeepMessage()));
  }
  if (parser.error_byte) {
    std::string message = parser.number_out_of_range ? std::string(kNumberOutOfRange)
                                                     : CleanJsonMessage(parser.error_message);
    size_t offset = OffendingOffset(text, *parser.error_byte, message, parser.number_out_of_range);
    return InvalidArgumentError(Located(file_name, PositionOfOffset(text, offset), message));
  }
  // nlohmann keeps the last of duplicate keys silently; configs must not.
  JsonSourceMapBuilder builder(text);
  if (builder.CheckDuplicates() && builder.duplicate) {
    return InvalidArgumentError(Located(file_name, builder.duplicate->first,
                                        "duplicate key \"" + builder.duplicate->second + "\""));
  }
  return value;
}

Result<size_t> MaxInputBytes() {
  const char* setting = std::getenv(kMaxInputBytesVariable);
  if (setting == nullptr || *setting == '\0') return kDefaultMaxInputBytes;
  Result<Quantity> bytes = Quantity::Parse(setting);
  if (!bytes.ok() || bytes->MilliValue() <= 0 || bytes->MilliValue() % 1000 != 0) {
    return InvalidArgumentError(std::string(kMaxInputBytesVariable) + "=\"" + setting +
                                "\": expected a positive whole number of bytes, such as " +
                                std::to_string(kDefaultMaxInputBytes) + " or 8Mi");
  }
  return static_cast<size_t>(bytes->Value());
}

namespace {

// "8 MiB (8388608 bytes)", "1.5 KiB (1536 bytes)", "100 bytes".
std::string ByteCount(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double scaled = static_cast<double>(bytes);
  int unit = -1;
  while (scaled >= 1024 && unit < 3) {
    scaled /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), scaled == std::floor(scaled) ? "%.0f %s" : "%.1f %s", scaled,
                kUnits[unit]);
  return std::string(text) + " (" + std::to_string(bytes) + " bytes)";
}

Status TooLarge(const std::string& path, std::string_view size, size_t limit) {
  return InvalidArgumentError(path + ": the file is " + std::string(size) +
                              ", over the input limit of " + ByteCount(limit) + " (set " +
                              kMaxInputBytesVariable + " to read larger files)");
}

}  // namespace

Result<std::string> ReadFile(const std::string& path) {
  ASSIGN_OR_RETURN(size_t limit, MaxInputBytes());
  return ReadFile(path, limit);
}

Result<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    if (err == ENOENT) return NotFoundError(path + ": no such file");
    return InternalError(path + ": cannot open: " + std::strerror(err));
  }
  // A regular file's size is known before reading it; a pipe's is found by reading up to the
  // limit and one byte more.
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > max_bytes) return TooLarge(path, ByteCount(size), max_bytes);
  }
  std::string text;
  char buffer[1 << 16];
  while (in) {
    in.read(buffer, sizeof(buffer));
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes) {
      return TooLarge(path, "larger than " + std::to_string(max_bytes) + " bytes", max_bytes);
    }
  }
  if (in.bad()) return InternalError(path + ": read error");
  return text;
}

Result<std::vector<YamlDocument>> ParseYamlDocuments(std::string_view text,
                                                     std::string_view file_name) {
  YamlJsonBuilder builder(file_name,
                          kYamlValuesPerByte * static_cast<int64_t>(text.size()) + 10000);
  LibyamlParser parser(text);
  if (!parser.initialized()) {
    return InternalError(std::string(file_name) + ": out of memory while parsing YAML");
  }
  try {
    while (true) {
      LibyamlEvent event;
      if (yaml_parser_parse(parser.get(), event.get()) == 0) {
        return SyntaxError(*parser.get(), text, file_name);
      }
      RETURN_IF_ERROR(builder.Handle(*event.get()));
      if (event.get()->type == YAML_STREAM_END_EVENT) break;
    }
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string(file_name) + ": " + e.what());
  }
  if (builder.error()) return *builder.error();
  return builder.TakeDocuments();
}

Result<std::vector<ordered_json>> ParseJsonOrYamlDocuments(std::string_view text,
                                                           std::string_view file_name) {
  std::string_view body = text;
  if (StartsWith(body, "\xEF\xBB\xBF")) body.remove_prefix(3);
  size_t first = body.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (body[first] == '{' || body[first] == '[')) {
    auto json = ParseJson(body, file_name);
    std::vector<ordered_json> out;
    if (json.ok()) {
      out.push_back(std::move(json).value());  // moved: a copy walks the tree recursively
      return out;
    }
    // Flow-style YAML (`{a: 1}`) is not JSON; accept it when it parses as YAML.
    if (json.status().message().find(TooDeepMessage()) != std::string::npos) return json.status();
    auto yaml = ParseYamlDocuments(body, file_name);
    if (!yaml.ok()) return json.status();
    for (auto& doc : *yaml) out.push_back(std::move(doc.value));
    return out;
  }
  ASSIGN_OR_RETURN(auto yaml, ParseYamlDocuments(body, file_name));
  std::vector<ordered_json> out;
  for (auto& doc : yaml) out.push_back(std::move(doc.value));
  return out;
}

Result<std::vector<YamlDocument>> ParseDocumentsWithSourceMaps(std::string_view text,
                                                               std::string_view file_name) {
  std::string_view body = text;
  if (StartsWith(body, "\xEF\xBB\xBF")) body.remove_prefix(3);
  const size_t first = body.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && (body[first] == '{' || body[first] == '[')) {
    auto json = ParseJson(body, file_name);
    if (json.ok()) {
      std::vector<YamlDocument> out(1);
      out[0].value = std::move(json).value();
      out[0].line = PositionOfOffset(body, first).line;
      out[0].source_map = JsonSourceMap::Build(text);
      return out;
    }
    // Flow-style YAML (`{a: 1}`) is not JSON; accept it when it parses as YAML.
    if (json.status().message().find(TooDeepMessage()) != std::string::npos) return json.status();
    auto yaml = ParseYamlDocuments(body, file_name);
    if (!yaml.ok()) return json.status();
    return yaml;
  }
  return ParseYamlDocuments(body, file_name);
}

Status CheckYamlText(std::string_view text, std::string_view file_name) {
  for (size_t i = 0; i < text.size();) {
    auto [cp, length] = DecodeUtf8(text, i);
    std::string what;
    if (length == 0) {
      char byte[8];
      std::snprintf(byte, sizeof(byte), "0x%02X", static_cast<unsigned char>(text[i]));
      what = std::string("invalid UTF-8 (byte ") + byte + ")";
    } else if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0x7F ||
               (cp >= 0x80 && cp <= 0x9F && cp != 0x85) || cp == 0xFFFE || cp == 0xFFFF) {
      char code[16];
      std::snprintf(code, sizeof(code), "U+%04X", static_cast<unsigned>(cp));
      what = std::string("control character ") + code + " is not allowed";
    } else {
      i += length;
      continue;
    }
    return InvalidArgumentError(
        Located(file_name, PositionOfOffset(text, i), "not a valid YAML text: " + what));
  }
  return OkStatus();
}

std::string ToYaml(const ordered_json& value) {
  std::string out;
  EmitYaml(value, 0, out);
  return out;
}

std::string FieldPath(std::string_view parent, std::string_view field) {
  if (parent.empty()) return std::string(field);
  if (field.empty()) return std::string(parent);
  return std::string(parent) + "." + std::string(field);
}

std::string IndexPath(std::string_view parent, size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

int NestingDepth(const ordered_json& value, int stop_after) {
  std::vector<std::pair<const ordered_json*, int>> pending = {{&value, 0}};
  int deepest = 0;
  while (!pending.empty()) {
    auto [node, above] = pending.back();
    pending.pop_back();
    if (!node->is_structured()) continue;
    const int depth = above + 1;
    if (depth > stop_after) return stop_after + 1;
    deepest = std::max(deepest, depth);
    if (node->is_object()) {
      for (const auto& [key, member] : node->get_ref<const ordered_json::object_t&>()) {
        pending.emplace_back(&member, depth);
      }
    } else {
      for (const ordered_json& item : node->get_ref<const ordered_json::array_t&>()) {
        pending.emplace_back(&item, depth);
      }
    }
  }
  return deepest;
}

Status CheckNestingDepth(const ordered_json& value) {
  if (NestingDepth(value) <= kMaxNestingDepth) return OkStatus();
  // The member (or item) that goes too deep, for the message: its own depth counts one level
  // less than its parent's.
  std::string field = "(top level)";
  if (value.is_object()) {
    for (const auto& [key, member] : value.get_ref<const ordered_json::object_t&>()) {
      if (NestingDepth(member, kMaxNestingDepth - 1) >= kMaxNestingDepth) {
        field = key;
        break;
      }
    }
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) {
      if (NestingDepth(value[i], kMaxNestingDepth - 1) >= kMaxNestingDepth) {
        field = IndexPath("", i);
        break;
      }
    }
  }
  return InvalidArgumentError(field + ": " + TooDeepMessage());
}

std::string JsonTypeName(const ordered_json& value) {
  switch (value.type()) {
    case ordered_json::value_t::object:
      return "object";
    case ordered_json::value_t::array:
      return "array";
    case ordered_json::value_t::string:
      return "string";
    case ordered_json::value_t::boolean:
      return "boolean";
    case ordered_json::value_t::null:
      return "null";
    case ordered_json::value_t::number_integer:
    case ordered_json::value_t::number_unsigned:
    case ordered_json::value_t::number_float:
      return "number";
    default:
      return "value";
  }
}

namespace {

// True when `s` goes between quotes as it is: ASCII without control characters, '"' or '\\'
// (DEL included, which JSON does not escape either).
bool IsPlainAscii(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x80 || c == '"' || c == '\\') return false;
  }
  return true;
}

void AppendQuoted(const std::string& s, std::string& out, bool* invalid_utf8) {
  if (!IsPlainAscii(s)) {
    if (invalid_utf8 != nullptr && !*invalid_utf8 && !IsValidUtf8(s)) *invalid_utf8 = true;
    out += DumpJson(ordered_json(s));  // escapes; invalid UTF-8 becomes U+FFFD
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

template <typename Integer>
void AppendInteger(Integer n, std::string& out) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), n);
  out.append(digits, end);
}

}  // namespace

void AppendCompact(const ordered_json& value, std::string& out, bool* invalid_utf8) {
  switch (value.type()) {
    case ordered_json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, member] : value.get_ref<const ordered_json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        AppendQuoted(key, out, invalid_utf8);
        out += ':';
        AppendCompact(member, out, invalid_utf8);
      }
      out += '}';
      return;
    }
    case ordered_json::value_t::array: {
      out += '[';
      bool first = true;
      for (const ordered_json& item : value.get_ref<const ordered_json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        AppendCompact(item, out, invalid_utf8);
      }
      out += ']';
      return;
    }
    case ordered_json::value_t::string:
      return AppendQuoted(value.get_ref<const std::string&>(), out, invalid_utf8);
    case ordered_json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return;
    case ordered_json::value_t::null:
      out += "null";
      return;
    case ordered_json::value_t::number_integer:
      return AppendInteger(value.get<int64_t>(), out);
    case ordered_json::value_t::number_unsigned:
      return AppendInteger(value.get<uint64_t>(), out);
    default:  // floats (nlohmann's shortest round-trip form), binary, discarded
      out += DumpJson(value);
      return;
  }
}

std::string DumpCompact(const ordered_json& value, bool* invalid_utf8) {
  std::string out;
  AppendCompact(value, out, invalid_utf8);
  return out;
}

}  // namespace gpupool::model

namespace gpupool::model {

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

}  // namespace gpupool::model
