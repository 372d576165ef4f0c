#include "model/label_selector.h"

#include <cctype>
#include <string>

#include "model/match.h"

namespace gpupool::model {
namespace {

// A cursor over the selector text that reports errors at its position.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  void SkipSpaces() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool AtEnd() {
    SkipSpaces();
    return pos_ >= text_.size();
  }
  bool Take(std::string_view token) {
    SkipSpaces();
    if (text_.substr(pos_).starts_with(token)) {
      pos_ += token.size();
      return true;
    }
    return false;
  }
  // A word: letters, digits and -_./ (keys and values); "" when none.
  std::string Word() {
    SkipSpaces();
    size_t start = pos_;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
          c == '/') {
        ++pos_;
      } else {
        break;
      }
    }
    return std::string(text_.substr(start, pos_ - start));
  }
  Status Error(std::string_view expected) const {
    return InvalidArgumentError("label selector \"" + std::string(text_) + "\": at column " +
                                std::to_string(pos_ + 1) + ": expected " + std::string(expected));
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

Status CheckKey(const std::string& key, const Scanner& scanner) {
  if (key.empty() || !IsQualifiedName(key)) return scanner.Error("a label key");
  return OkStatus();
}

Status CheckValue(const std::string& value, const Scanner& scanner) {
  if (!IsValidLabelValue(value)) return scanner.Error("a label value");
  return OkStatus();
}

Result<std::vector<std::string>> ValueSet(Scanner& scanner) {
  if (!scanner.Take("(")) return scanner.Error("'(' starting a set of values");
  std::vector<std::string> values;
  for (;;) {
    std::string value = scanner.Word();
    RETURN_IF_ERROR(CheckValue(value, scanner));
    values.push_back(std::move(value));
    if (scanner.Take(")")) return values;
    if (!scanner.Take(",")) return scanner.Error("',' or ')' in a set of values");
  }
}

Result<NodeSelectorRequirement> Requirement(Scanner& scanner) {
  NodeSelectorRequirement requirement;
  if (scanner.Take("!")) {
    requirement.key = scanner.Word();
    RETURN_IF_ERROR(CheckKey(requirement.key, scanner));
    requirement.op = SelectorOperator::kDoesNotExist;
    return requirement;
  }
  requirement.key = scanner.Word();
  RETURN_IF_ERROR(CheckKey(requirement.key, scanner));
  if (scanner.Take("==") || scanner.Take("=")) {
    requirement.op = SelectorOperator::kIn;
  } else if (scanner.Take("!=")) {
    requirement.op = SelectorOperator::kNotIn;
  } else {
    // `in` and `notin` are words: the key is followed by a space, then the operator.
    Scanner peek = scanner;
    std::string word = peek.Word();
    if (word == "in" || word == "notin") {
      scanner = peek;
      requirement.op = word == "in" ? SelectorOperator::kIn : SelectorOperator::kNotIn;
      ASSIGN_OR_RETURN(requirement.values, ValueSet(scanner));
      return requirement;
    }
    requirement.op = SelectorOperator::kExists;
    return requirement;
  }
  std::string value = scanner.Word();
  RETURN_IF_ERROR(CheckValue(value, scanner));
  requirement.values = {std::move(value)};
  return requirement;
}

}  // namespace

Result<std::vector<NodeSelectorRequirement>> ParseLabelSelector(std::string_view text) {
  Scanner scanner(text);
  std::vector<NodeSelectorRequirement> out;
  if (scanner.AtEnd()) return out;
  for (;;) {
    ASSIGN_OR_RETURN(NodeSelectorRequirement requirement, Requirement(scanner));
    out.push_back(std::move(requirement));
    if (scanner.AtEnd()) return out;
    if (!scanner.Take(",")) return scanner.Error("',' between requirements");
  }
}

bool MatchesLabelSelector(const std::vector<NodeSelectorRequirement>& selector,
                          const Labels& labels) {
  for (const NodeSelectorRequirement& requirement : selector) {
    if (!MatchesLabelRequirement(requirement, labels)) return false;
  }
  return true;
}

}  // namespace gpupool::model
