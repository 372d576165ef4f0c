#include "config/rules.h"

#include <algorithm>

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

struct Rendered {
  std::string left, right;
};

Result<Rendered> RenderOperands(const NamedRule& r, const VariableMap& vars,
                                const VariableMap& node_tokens) {
  std::string what = "resource validation \"" + r.set + "\" rule " + std::to_string(r.index);
  Rendered out;
  ASSIGN_OR_RETURN(out.left, internal::RenderString2(r.rule.left_operand, vars, node_tokens, what,
                                                     "left_operand"));
  ASSIGN_OR_RETURN(out.right, internal::RenderString2(r.rule.right_operand, vars, node_tokens, what,
                                                      "right_operand"));
  return out;
}

// Evaluates one rule; returns the rendered assert message when it fails, "" when it passes.
Result<std::optional<std::string>> Evaluate(const NamedRule& r, const VariableMap& vars,
                                            const VariableMap& node_tokens) {
  ASSIGN_OR_RETURN(Rendered ops, RenderOperands(r, vars, node_tokens));
  Result<bool> passed = CompareOperands(r.rule.op, ops.left, ops.right);
  if (!passed.ok()) {
    return passed.status().WithContext("resource validation \"" + r.set + "\" rule " +
                                       std::to_string(r.index));
  }
  if (*passed) return std::optional<std::string>();
  std::string what = "resource validation \"" + r.set + "\" rule " + std::to_string(r.index);
  ASSIGN_OR_RETURN(
      std::string message,
      internal::RenderString2(r.rule.assert_message, vars, node_tokens, what, "assert_message"));
  return std::optional<std::string>(std::move(message));
}

std::string QuantityText(const model::ResourceList& list, const std::string& name) {
  auto it = list.find(name);
  if (it == list.end()) return "0";
  return it->second.ToString();
}

}  // namespace

Result<bool> CompareOperands(Operator op, std::string_view left, std::string_view right) {
  std::string_view l = Trim(left), r = Trim(right);
  Result<model::Quantity> lq = model::Quantity::Parse(l);
  Result<model::Quantity> rq = model::Quantity::Parse(r);
  if (lq.ok() && rq.ok()) {
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
  std::string_view bad = lq.ok() ? r : l;
  return InvalidArgumentError("cannot compare \"" + std::string(l) + "\" " +
                              std::string(OperatorName(op)) + " \"" + std::string(r) + "\": \"" +
                              std::string(bad) +
                              "\" is not a number or quantity (only EQ and NE compare strings)");
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
  std::vector<NamedRule> node_rules;
  for (const NamedRule& r : rules) {
    if (IsNodeRule(r.rule)) {
      node_rules.push_back(r);
      continue;
    }
    ASSIGN_OR_RETURN(std::optional<std::string> failed, Evaluate(r, vars, kNoTokens));
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

  ValidationFailure f;
  f.task = scope.task;
  f.node_rule = true;
  f.rule = node_rules.front();
  f.node_rules = node_rules;
  if (nodes.empty()) {
    f.message = "There are no nodes in platform " + scope.platform + " of pool " + scope.pool;
    result.failure = std::move(f);
    return result;
  }
  for (const model::Node* node : nodes) {
    NodeCheck check;
    check.node = node->name;
    check.tokens = NodeTokens(*node);
    for (size_t i = 0; i < node_rules.size(); ++i) {
      ASSIGN_OR_RETURN(std::optional<std::string> failed,
                       Evaluate(node_rules[i], vars, check.tokens));
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
    f.nodes.push_back(std::move(check));
  }
  f.rule = node_rules[*f.nodes.front().failed];
  f.message = f.nodes.front().message;
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
