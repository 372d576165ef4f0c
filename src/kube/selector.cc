#include "kube/selector.h"

#include "common/strings.h"
#include "model/match.h"

namespace gpupool::kube {
namespace {

using Json = nlohmann::ordered_json;
using model::NodeSelectorRequirement;
using model::SelectorOperator;

// A cursor over the selector text that reports errors by position.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  void SkipSpaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }
  bool Consume(std::string_view token) {
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  // Characters up to one of `stops` (or the end).
  std::string_view Until(std::string_view stops) {
    size_t start = pos_;
    while (pos_ < text_.size() && stops.find(text_[pos_]) == std::string_view::npos) ++pos_;
    return text_.substr(start, pos_ - start);
  }
  Status Error(std::string_view what) const {
    return InvalidArgumentError("label selector \"" + std::string(text_) + "\": at column " +
                                std::to_string(pos_ + 1) + ": " + std::string(what));
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

Status CheckKey(const Cursor& cursor, std::string_view key) {
  if (!model::IsQualifiedName(key)) {
    return cursor.Error("expected a label key, got \"" + std::string(key) + "\"");
  }
  return OkStatus();
}

Status CheckValue(const Cursor& cursor, std::string_view value) {
  if (!model::IsValidLabelValue(value)) {
    return cursor.Error("invalid label value \"" + std::string(value) + "\"");
  }
  return OkStatus();
}

// `(a, b, c)` after in/notin.
Result<std::vector<std::string>> ParseValueSet(Cursor& cursor) {
  cursor.SkipSpaces();
  if (!cursor.Consume("(")) return cursor.Error("expected '(' after in/notin");
  std::vector<std::string> values;
  while (true) {
    cursor.SkipSpaces();
    std::string value(Trim(cursor.Until(",)")));
    RETURN_IF_ERROR(CheckValue(cursor, value));
    values.push_back(std::move(value));
    if (cursor.Consume(")")) break;
    if (!cursor.Consume(",")) return cursor.Error("expected ',' or ')' in a value set");
  }
  return values;
}

Result<NodeSelectorRequirement> ParseRequirement(Cursor& cursor) {
  NodeSelectorRequirement r;
  cursor.SkipSpaces();
  if (cursor.Consume("!")) {
    cursor.SkipSpaces();
    r.key = std::string(Trim(cursor.Until(",")));
    RETURN_IF_ERROR(CheckKey(cursor, r.key));
    r.op = SelectorOperator::kDoesNotExist;
    return r;
  }
  r.key = std::string(cursor.Until(" ,=!<>("));
  RETURN_IF_ERROR(CheckKey(cursor, r.key));
  cursor.SkipSpaces();
  if (cursor.AtEnd() || cursor.Peek() == ',') {
    r.op = SelectorOperator::kExists;
    return r;
  }
  auto single_value = [&](SelectorOperator op) -> Result<NodeSelectorRequirement> {
    r.op = op;
    std::string value(Trim(cursor.Until(",")));
    RETURN_IF_ERROR(CheckValue(cursor, value));
    r.values.push_back(std::move(value));
    return r;
  };
  if (cursor.Consume("==") || cursor.Consume("=")) return single_value(SelectorOperator::kIn);
  if (cursor.Consume("!=")) return single_value(SelectorOperator::kNotIn);
  if (cursor.Consume(">")) return single_value(SelectorOperator::kGt);
  if (cursor.Consume("<")) return single_value(SelectorOperator::kLt);
  if (cursor.Consume("notin")) {
    r.op = SelectorOperator::kNotIn;
  } else if (cursor.Consume("in")) {
    r.op = SelectorOperator::kIn;
  } else {
    return cursor.Error("expected one of =, ==, !=, in, notin, >, < or ','");
  }
  ASSIGN_OR_RETURN(r.values, ParseValueSet(cursor));
  return r;
}

Result<SelectorOperator> ParseExpressionOperator(const std::string& text, std::string_view path) {
  if (text == "In") return SelectorOperator::kIn;
  if (text == "NotIn") return SelectorOperator::kNotIn;
  if (text == "Exists") return SelectorOperator::kExists;
  if (text == "DoesNotExist") return SelectorOperator::kDoesNotExist;
  return InvalidArgumentError(std::string(path) +
                              ": expected one of In, NotIn, Exists, DoesNotExist, got \"" + text +
                              "\"" + DidYouMean(text, {"In", "NotIn", "Exists", "DoesNotExist"}));
}

}  // namespace

bool LabelSelector::Matches(const model::Labels& labels) const {
  for (const NodeSelectorRequirement& r : requirements) {
    if (!model::MatchesLabelRequirement(r, labels)) return false;
  }
  return true;
}

Result<LabelSelector> ParseLabelSelector(std::string_view text) {
  LabelSelector selector;
  if (Trim(text).empty()) return selector;
  Cursor cursor(text);
  while (true) {
    ASSIGN_OR_RETURN(NodeSelectorRequirement r, ParseRequirement(cursor));
    selector.requirements.push_back(std::move(r));
    cursor.SkipSpaces();
    if (cursor.AtEnd()) break;
    if (!cursor.Consume(",")) return cursor.Error("expected ','");
  }
  return selector;
}

Result<LabelSelector> LabelSelectorFromJson(const Json& json, std::string_view field_path) {
  LabelSelector selector;
  if (json.is_null()) return selector;
  if (!json.is_object()) return InvalidArgumentError(std::string(field_path) + ": expected object");
  if (auto it = json.find("matchLabels"); it != json.end() && !it->is_null()) {
    ASSIGN_OR_RETURN(model::Labels labels,
                     model::LabelsFromJson(*it, std::string(field_path) + ".matchLabels"));
    for (auto& [key, value] : labels) {
      selector.requirements.push_back({key, SelectorOperator::kIn, {value}});
    }
  }
  auto it = json.find("matchExpressions");
  if (it == json.end() || it->is_null()) return selector;
  if (!it->is_array()) {
    return InvalidArgumentError(std::string(field_path) + ".matchExpressions: expected array");
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& e = (*it)[i];
    std::string path = std::string(field_path) + ".matchExpressions[" + std::to_string(i) + "]";
    if (!e.is_object() || !e.contains("key") || !e["key"].is_string() || !e.contains("operator") ||
        !e["operator"].is_string()) {
      return InvalidArgumentError(path + ": expected {key, operator, values}");
    }
    NodeSelectorRequirement r;
    r.key = e["key"].get<std::string>();
    ASSIGN_OR_RETURN(r.op,
                     ParseExpressionOperator(e["operator"].get<std::string>(), path + ".operator"));
    if (auto values = e.find("values"); values != e.end() && values->is_array()) {
      for (const Json& v : *values) {
        if (!v.is_string()) return InvalidArgumentError(path + ".values: expected strings");
        r.values.push_back(v.get<std::string>());
      }
    }
    selector.requirements.push_back(std::move(r));
  }
  return selector;
}

Result<FieldSelector> ParseFieldSelector(std::string_view text) {
  FieldSelector selector;
  if (Trim(text).empty()) return selector;
  // Split on unescaped ',' and unescape `\x` as we go.
  std::vector<std::string> terms(1);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      terms.back() += '\\';
      terms.back() += text[++i];
    } else if (text[i] == ',') {
      terms.emplace_back();
    } else {
      terms.back() += text[i];
    }
  }
  for (const std::string& term : terms) {
    FieldRequirement r;
    size_t op = std::string::npos;
    size_t op_len = 0;
    for (size_t i = 0; i < term.size(); ++i) {
      if (term[i] == '\\') {
        ++i;
        continue;
      }
      if (term.compare(i, 2, "!=") == 0 || term.compare(i, 2, "==") == 0) {
        op = i, op_len = 2;
      } else if (term[i] == '=') {
        op = i, op_len = 1;
      }
      if (op != std::string::npos) break;
    }
    if (op == std::string::npos || op == 0) {
      return InvalidArgumentError("field selector \"" + std::string(text) + "\": term \"" + term +
                                  "\": expected FIELD=VALUE, FIELD==VALUE or FIELD!=VALUE");
    }
    r.path = std::string(Trim(term.substr(0, op)));
    r.equals = term[op] != '!';
    std::string value;
    for (size_t i = op + op_len; i < term.size(); ++i) {
      if (term[i] == '\\' && i + 1 < term.size()) ++i;
      value += term[i];
    }
    r.value = std::move(value);
    selector.requirements.push_back(std::move(r));
  }
  return selector;
}

std::string FieldValue(const Json& object, std::string_view path) {
  const Json* at = &object;
  for (const std::string& part : Split(path, '.')) {
    if (!at->is_object()) return "";
    auto it = at->find(part);
    if (it == at->end()) return "";
    at = &*it;
  }
  if (at->is_string()) return at->get<std::string>();
  if (at->is_boolean()) return at->get<bool>() ? "true" : "false";
  if (at->is_number_integer()) return std::to_string(at->get<int64_t>());
  return "";
}

model::Labels ObjectLabels(const Json& object) {
  model::Labels labels;
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return labels;
  auto it = metadata->find("labels");
  if (it == metadata->end() || !it->is_object()) return labels;
  for (const auto& [key, value] : it->items()) {
    if (value.is_string()) labels.emplace(key, value.get<std::string>());
  }
  return labels;
}

}  // namespace gpupool::kube
