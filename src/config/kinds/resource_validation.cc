#include <cctype>

#include "codec/field_path.h"
#include "common/strings.h"
#include "config/json_fields.h"
#include "config/kinds.h"
#include "config/kinds/shared.h"
#include "config/variables.h"

namespace gpupool::config {

using internal::CheckObject;
using internal::ReadString;
using internal::TypeError;

// ---- RESOURCE_VALIDATION ------------------------------------------------------------------

namespace {
constexpr std::pair<Operator, std::string_view> kOperators[] = {
    {Operator::kGt, "GT"}, {Operator::kGe, "GE"}, {Operator::kLt, "LT"},
    {Operator::kLe, "LE"}, {Operator::kEq, "EQ"}, {Operator::kNe, "NE"},
};

Status ReadOperand(const Json& rule, std::string_view key, std::string_view path,
                   std::string* out) {
  auto it = rule.find(key);
  if (it == rule.end()) return InvalidArgumentError(codec::FieldPath(path, key) + ": required");
  if (it->is_string()) {
    *out = it->get<std::string>();
  } else if (it->is_number()) {
    *out = internal::Dump(*it);
  } else {
    return TypeError(codec::FieldPath(path, key), "a string or number", *it);
  }
  return OkStatus();
}

}  // namespace

std::string_view OperatorName(Operator op) {
  for (const auto& [o, name] : kOperators) {
    if (o == op) return name;
  }
  return "?";
}

Result<Operator> ParseOperator(std::string_view text) {
  std::string upper;
  for (char c : text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::vector<std::string> names;
  for (const auto& [o, name] : kOperators) {
    if (name == upper) return o;
    names.emplace_back(name);
  }
  return InvalidArgumentError("unknown operator \"" + std::string(text) + "\"; expected one of " +
                              Join(names, ", ") + DidYouMean(upper, names));
}

Result<ValidationSet> ValidationSetFromJson(std::string_view name, const Json& body) {
  RETURN_IF_ERROR(ValidateName("resource validation", name));
  std::string context = "resource validation \"" + std::string(name) + "\"";
  if (!body.is_array()) {
    return TypeError("(top level)", "a list of rules", body).WithContext(context);
  }
  ValidationSet set;
  set.name = std::string(name);
  for (size_t i = 0; i < body.size(); ++i) {
    const Json& r = body[i];
    std::string path = codec::IndexPath("", i);
    Status s =
        CheckObject(r, path, {"operator", "left_operand", "right_operand", "assert_message"});
    if (!s.ok()) return s.WithContext(context);
    ValidationRule rule;
    std::string op;
    if (!r.contains("operator")) {
      return InvalidArgumentError(path + ".operator: required").WithContext(context);
    }
    s = ReadString(r, "operator", path, &op);
    if (!s.ok()) return s.WithContext(context);
    Result<Operator> parsed = ParseOperator(op);
    if (!parsed.ok()) return parsed.status().WithContext(context + ": " + path + ".operator");
    rule.op = *parsed;
    for (auto [key, out] : {std::pair{"left_operand", &rule.left_operand},
                            std::pair{"right_operand", &rule.right_operand},
                            std::pair{"assert_message", &rule.assert_message}}) {
      s = ReadOperand(r, key, path, out);
      if (!s.ok()) return s.WithContext(context);
      s = RenderString(*out, VariableMap{}, "", "").status();
      // Only syntax errors matter here; undefined variables are resolved at submit time.
      if (!s.ok() && s.message().find("undefined variable") == std::string::npos) {
        return InvalidArgumentError(codec::FieldPath(path, key) + ": " + s.message())
            .WithContext(context);
      }
    }
    set.rules.push_back(std::move(rule));
  }
  return set;
}

Json ValidationRuleToJson(const ValidationRule& rule) {
  return Json{{"operator", std::string(OperatorName(rule.op))},
              {"left_operand", rule.left_operand},
              {"right_operand", rule.right_operand},
              {"assert_message", rule.assert_message}};
}

Json ValidationSetToJson(const ValidationSet& set) {
  Json out = Json::array();
  for (const ValidationRule& r : set.rules) out.push_back(ValidationRuleToJson(r));
  return out;
}

}  // namespace gpupool::config
