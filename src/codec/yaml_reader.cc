#include "codec/yaml_reader.h"

#include <yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "codec/internal.h"
#include "codec/json_reader.h"
#include "common/limits.h"
#include "common/strings.h"

namespace gpupool::codec {

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

using internal::CoreInteger;
using internal::DecodeUtf8;
using internal::kNumberOutOfRange;
using internal::Located;
using internal::MatchesCoreFloat;
using internal::TooDeepMessage;
using nlohmann::ordered_json;

// A document may expand (through aliases) to at most this many values per byte of text.
constexpr int64_t kYamlValuesPerByte = 4;

bool IsCoreNull(const std::string& s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}
bool IsCoreTrue(const std::string& s) { return s == "true" || s == "True" || s == "TRUE"; }
bool IsCoreFalse(const std::string& s) { return s == "false" || s == "False" || s == "FALSE"; }

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

}  // namespace

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

}  // namespace gpupool::codec
