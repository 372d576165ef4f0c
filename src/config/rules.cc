#include "config/rules.h"

#include <algorithm>
#include <cctype>

#include "common/strings.h"
#include "model/quantity.h"

namespace gpupool::config {

namespace internal {
Result<std::string> RenderString2(std::string_view text, const VariableMap& primary,
                                  const VariableMap& secondary, std::string_view what,
                                  std::string_view path);
}  // namespace internal

namespace {

constexpr std::string_view kNodeTokens[] = {"K8_CPU", "K8_GPU", "K8_MEMORY", "K8_STORAGE"};

bool MentionsNodeToken(std::string_view text) {
  size_t pos = 0;
  while ((pos = text.find("{{", pos)) != std::string_view::npos) {
    size_t close = text.find("}}", pos + 2);
    if (close == std::string_view::npos) return false;
    std::string_view inner = Trim(text.substr(pos + 2, close - pos - 2));
    for (std::string_view token : kNodeTokens) {
      if (inner == token) return true;
    }
    pos = close + 2;
  }
  return false;
}

std::string RuleLabel(const NamedRule& r) { return r.set + "[" + std::to_string(r.index) + "]"; }

std::string RuleWhat(const NamedRule& r) {
  return "resource validation \"" + r.set + "\" rule " + std::to_string(r.index);
}

// Renders one operand; the rule is named only when there is an error.
Status RenderOperand(const NamedRule& r, const std::string& text, std::string_view field,
                     const VariableMap& vars, const VariableMap& node_tokens, std::string& out) {
  if (text.find('{') == std::string::npos) {
    out = text;
    return OkStatus();
  }
  Result<std::string> rendered = internal::RenderString2(text, vars, node_tokens, "", field);
  if (!rendered.ok()) {
    return InvalidArgumentError(RuleWhat(r) + " " + rendered.status().message());
  }
  out = std::move(*rendered);
  return OkStatus();
}

// Evaluates one rule; returns the rendered assert message when it fails, nullopt when it passes.
Result<std::optional<std::string>> Evaluate(const NamedRule& r, const VariableMap& vars,
                                            const VariableMap& node_tokens, std::string& left,
                                            std::string& right) {
  RETURN_IF_ERROR(RenderOperand(r, r.rule.left_operand, "left_operand", vars, node_tokens, left));
  RETURN_IF_ERROR(
      RenderOperand(r, r.rule.right_operand, "right_operand", vars, node_tokens, right));
  Result<bool> passed = CompareOperands(r.rule.op, left, right);
  if (!passed.ok()) return passed.status().WithContext(RuleWhat(r));
  if (*passed) return std::optional<std::string>();
  std::string message;
  RETURN_IF_ERROR(
      RenderOperand(r, r.rule.assert_message, "assert_message", vars, node_tokens, message));
  return std::optional<std::string>(std::move(message));
}

std::string QuantityText(const model::ResourceList& list, const std::string& name) {
  auto it = list.find(name);
  if (it == list.end()) return "0";
  return it->second.ToString();
}

// Milli-units of the common quantity forms `<digits>[suffix]` without calling the general
// parser (hot: every rule of every task). nullopt = use model::Quantity::Parse.
std::optional<int64_t> FastMilli(std::string_view text) {
  size_t i = 0;
  int64_t value = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (i >= 15) return std::nullopt;
    value = value * 10 + (text[i] - '0');
    ++i;
  }
  if (i == 0) return std::nullopt;
  std::string_view suffix = text.substr(i);
  int64_t milli = 0;
  if (suffix.empty()) {
    milli = value * 1000;  // value < 10^15: no overflow
  } else if (suffix == "m") {
    milli = value;
  } else {
    static constexpr std::pair<std::string_view, int64_t> kSuffixes[] = {
        {"k", 1000LL},     {"M", 1000000LL},  {"G", 1000000000LL}, {"T", 1000000000000LL},
        {"Ki", 1LL << 10}, {"Mi", 1LL << 20}, {"Gi", 1LL << 30},   {"Ti", 1LL << 40},
    };
    int64_t multiplier = 0;
    for (const auto& [name, m] : kSuffixes) {
      if (name == suffix) multiplier = m;
    }
    if (multiplier == 0) return std::nullopt;
    int64_t units = 0;
    if (__builtin_mul_overflow(value, multiplier, &units) ||
        __builtin_mul_overflow(units, int64_t{1000}, &milli)) {
      return std::nullopt;  // let the general parser report it
    }
  }
  return milli;
}

// A quantity operand (exact over Kubernetes' range: K8_MEMORY of a 3Ei node is not 9.2P).
std::optional<model::Quantity> ParseOperand(std::string_view text) {
  if (std::optional<int64_t> fast = FastMilli(text)) return model::Quantity::FromMilli(*fast);
  Result<model::Quantity> q = model::Quantity::Parse(text);
  if (!q.ok()) return std::nullopt;
  return *q;
}

}  // namespace

Result<bool> CompareOperands(Operator op, std::string_view left, std::string_view right) {
  std::string_view l = Trim(left), r = Trim(right);
  std::optional<model::Quantity> lq = ParseOperand(l);
  std::optional<model::Quantity> rq = ParseOperand(r);
  if (lq.has_value() && rq.has_value()) {
    auto cmp = *lq <=> *rq;
    switch (op) {
      case Operator::kGt:
        return cmp > 0;
      case Operator::kGe:
        return cmp >= 0;
      case Operator::kLt:
        return cmp < 0;
      case Operator::kLe:
        return cmp <= 0;
      case Operator::kEq:
        return cmp == 0;
      case Operator::kNe:
        return cmp != 0;
    }
  }
  if (op == Operator::kEq) return l == r;
  if (op == Operator::kNe) return l != r;
  std::string_view bad = lq.has_value() ? r : l;
  std::string why = "\"" + std::string(bad) + "\" is not a number or quantity";
  if (!bad.empty() && (std::isdigit(static_cast<unsigned char>(bad[0])) || bad[0] == '.' ||
                       bad[0] == '-' || bad[0] == '+')) {
    why = model::Quantity::Parse(bad).status().message();  // e.g. out of range
  }
  return InvalidArgumentError("cannot compare \"" + std::string(l) + "\" " +
                              std::string(OperatorName(op)) + " \"" + std::string(r) +
                              "\": " + why + " (only EQ and NE compare strings)");
}

bool IsNodeRule(const ValidationRule& rule) {
  return MentionsNodeToken(rule.left_operand) || MentionsNodeToken(rule.right_operand);
}

VariableMap NodeTokens(const model::Node& node) {
  VariableMap tokens;
  tokens["K8_CPU"] = QuantityText(node.allocatable, "cpu");
  tokens["K8_MEMORY"] = QuantityText(node.allocatable, "memory");
  tokens["K8_GPU"] = QuantityText(node.allocatable, "nvidia.com/gpu");
  tokens["K8_STORAGE"] = QuantityText(node.allocatable, "ephemeral-storage");
  return tokens;
}

Result<ValidationResult> ValidateTask(const ValidationScope& scope,
                                      const std::vector<NamedRule>& rules, const VariableMap& vars,
                                      const std::vector<const model::Node*>& nodes) {
  static const VariableMap kNoTokens;
  ValidationResult result;
  std::string left, right;  // scratch buffers reused across rules
  std::vector<const NamedRule*> node_rules;
  for (const NamedRule& r : rules) {
    if (IsNodeRule(r.rule)) {
      node_rules.push_back(&r);
      continue;
    }
    ASSIGN_OR_RETURN(std::optional<std::string> failed, Evaluate(r, vars, kNoTokens, left, right));
    if (failed.has_value()) {
      ValidationFailure f;
      f.task = scope.task;
      f.rule = r;
      f.message = std::move(*failed);
      result.failure = std::move(f);
      return result;
    }
  }
  if (node_rules.empty()) return result;

  auto failure = [&]() {
    ValidationFailure f;
    f.task = scope.task;
    f.node_rule = true;
    f.rule = *node_rules.front();
    for (const NamedRule* r : node_rules) f.node_rules.push_back(*r);
    return f;
  };
  if (nodes.empty()) {
    ValidationFailure f = failure();
    f.message = "There are no nodes in platform " + scope.platform + " of pool " + scope.pool;
    result.failure = std::move(f);
    return result;
  }
  std::vector<NodeCheck> checks;
  for (const model::Node* node : nodes) {
    NodeCheck check;
    check.tokens = NodeTokens(*node);
    for (size_t i = 0; i < node_rules.size(); ++i) {
      ASSIGN_OR_RETURN(std::optional<std::string> failed,
                       Evaluate(*node_rules[i], vars, check.tokens, left, right));
      if (failed.has_value()) {
        check.failed = i;
        check.message = std::move(*failed);
        break;
      }
    }
    if (!check.failed.has_value()) {
      result.passing_node = node->name;
      return result;  // some node passes all node rules
    }
    check.node = node->name;
    checks.push_back(std::move(check));
  }
  ValidationFailure f = failure();
  f.rule = *node_rules[*checks.front().failed];
  f.message = checks.front().message;
  f.nodes = std::move(checks);
  result.failure = std::move(f);
  return result;
}

std::string FormatValidationFailure(const ValidationFailure& failure) {
  std::string out = "Resource validation failed for task " + failure.task + "\n";
  if (!failure.node_rule) {
    out += "Assertion failed for task " + failure.task + ": " + failure.message;
    return out;
  }
  if (failure.nodes.empty()) {
    out += failure.message;
    return out;
  }
  out += "No node of the platform passes every node rule:\n";
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"NODE", "CPU", "MEMORY", "GPU", "STORAGE", "FAILED RULE"});
  for (const NodeCheck& n : failure.nodes) {
    auto token = [&](const char* name) {
      auto it = n.tokens.find(name);
      return it == n.tokens.end() ? std::string("-") : it->second;
    };
    std::string reason = n.failed.has_value()
                             ? RuleLabel(failure.node_rules[*n.failed]) + ": " + n.message
                             : std::string("-");
    rows.push_back({n.node, token("K8_CPU"), token("K8_MEMORY"), token("K8_GPU"),
                    token("K8_STORAGE"), reason});
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  out += "Check the nodes with \"gpupool resource list\".";
  return out;
}

Status ValidationFailureStatus(const ValidationFailure& failure) {
  return InvalidArgumentError(FormatValidationFailure(failure));
}

}  // namespace gpupool::config
