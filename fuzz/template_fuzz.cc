// Pod-template rendering (config/variables.h): `{{VAR}}` in every string of a template, with
// variables as pools and platforms define them, and resource-validation operands rendered and
// compared (config/rules.h). The input is one JSON or YAML document:
//   {variables: {NAME: scalar, ...}, template: <any JSON>, rule: {operator, left_operand,
//    right_operand}}
// Every part is optional. A render either fails with InvalidArgument or gives a value that dumps.

#include "codec/yaml_reader.h"
#include "common/strings.h"
#include "config/kinds.h"
#include "config/rules.h"
#include "config/variables.h"
#include "fuzz/support/fuzz_util.h"

namespace gpupool::fuzz {
namespace {

void CheckRule(const Json& rule, const config::VariableMap& variables) {
  if (!rule.is_object()) return;
  for (const char* field : {"operator", "left_operand", "right_operand"}) {
    if (!rule.contains(field) || !rule[field].is_string()) return;
  }
  auto op = config::ParseOperator(rule["operator"].get<std::string>());
  if (!op.ok()) {
    CheckInputError(op.status(), "ParseOperator", true);
    return;
  }
  auto left = config::RenderString(rule["left_operand"].get<std::string>(), variables, "rule",
                                   "left_operand");
  auto right = config::RenderString(rule["right_operand"].get<std::string>(), variables, "rule",
                                    "right_operand");
  if (!left.ok() || !right.ok()) return;
  auto compared = config::CompareOperands(*op, *left, *right);
  if (!compared.ok()) CheckInputError(compared.status(), "CompareOperands", true);
}

}  // namespace
}  // namespace gpupool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  const std::string_view text = AsText(data, size);
  auto documents = codec::ParseJsonOrYamlDocuments(text, "template.yaml");
  if (!documents.ok() || documents->size() != 1 || !(*documents)[0].is_object()) return 0;
  const Json& input = (*documents)[0];

  config::VariableMap variables;
  if (input.contains("variables")) {
    Status added = config::AddVariables(variables, input["variables"], "variables");
    if (!added.ok()) {
      CheckInputError(added, "AddVariables", true);
      return 0;
    }
  }
  for (const auto& [name, value] : variables) {
    Check(IsValidUtf8(name) && IsValidUtf8(value), "variables are UTF-8", name);
  }
  if (input.contains("template")) {
    auto rendered = config::Render(input["template"], variables, "fuzz");
    if (rendered.ok()) {
      CheckedDump(*rendered, "a rendered template");
      Json in_place = input["template"];
      Status status = config::RenderInPlace(in_place, variables, "fuzz");
      Check(status.ok() && in_place == *rendered, "RenderInPlace renders as Render does",
            status.ToString());
    } else {
      CheckInputError(rendered.status(), "Render", true, "pod template \"fuzz\"");
    }
  }
  if (input.contains("rule")) CheckRule(input["rule"], variables);
  return 0;
}
