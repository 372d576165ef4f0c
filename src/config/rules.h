#pragma once
// Resource-validation rule evaluation (research/osmo.md §3, DESIGN §3.4).
//
// Operands are rendered with the variables (an undefined variable is an error), then compared:
//   1. both parse as Kubernetes quantities (model::Quantity: `500m`, `1`, `64Gi`, `1G`) -> by
//      value in milli-units (so 500m < 1 and 1G < 1Gi, unlike OSMO's all-binary units);
//   2. else, GT/GE/LT/LE need numbers: an operand that is not a quantity is InvalidArgument
//      (`rule 2 of default_cpu: cannot compare "abc" GT "1": "abc" is not a number or quantity`);
//   3. EQ/NE compare the two strings when either is not a quantity.
// A rule is a node rule when either operand mentions K8_CPU, K8_GPU, K8_MEMORY or K8_STORAGE;
// others are static and checked once per task. Node rules pass when SOME node of the platform
// passes ALL node rules; with no nodes at all they fail ("no nodes in platform ...").
// Node tokens come from node allocatable: K8_CPU (cpu), K8_MEMORY (memory), K8_GPU
// (nvidia.com/gpu, 0 when absent), K8_STORAGE (ephemeral-storage), printed as canonical
// quantities. Task (USER_*) variables override node tokens of the same name.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "config/kinds.h"
#include "config/merge.h"
#include "config/variables.h"
#include "model/k8s.h"

namespace gpupool::config {

// Compares two rendered operands as described above.
Result<bool> CompareOperands(Operator op, std::string_view left, std::string_view right);

bool IsNodeRule(const ValidationRule& rule);

// K8_CPU, K8_GPU, K8_MEMORY, K8_STORAGE of one node.
VariableMap NodeTokens(const model::Node& node);

// Outcome of one node against the node rules.
struct NodeCheck {
  std::string node;
  VariableMap tokens;            // K8_* values used
  std::optional<size_t> failed;  // index into ValidationFailure::node_rules; nullopt = passed
  std::string message;           // rendered assert_message of the failed rule
};

struct ValidationFailure {
  std::string task;
  bool node_rule = false;
  NamedRule rule;       // the failing rule (static), or the first rule failed on a node
  std::string message;  // rendered assert_message
  std::vector<NamedRule> node_rules;  // for node failures: the node rules checked
  std::vector<NodeCheck> nodes;       // for node failures: one row per node of the platform
};

struct ValidationResult {
  bool ok() const { return !failure.has_value(); }
  std::optional<ValidationFailure> failure;
  std::string passing_node;  // a node that passed the node rules (when there were node rules)
};

// Where a task is checked (for messages).
struct ValidationScope {
  std::string task;
  std::string pool;
  std::string platform;
};

// Static rules first (in order; first failure stops), then node rules over `nodes`.
// Errors (Status) are for bad rules: undefined variables, uncomparable operands.
Result<ValidationResult> ValidateTask(const ValidationScope& scope,
                                      const std::vector<NamedRule>& rules, const VariableMap& vars,
                                      const std::vector<const model::Node*>& nodes);

// "Resource validation failed for task T\nAssertion failed for task T: <message>" and, for node
// rules, a table:
//   NODE      K8_CPU  K8_MEMORY  K8_GPU  K8_STORAGE  FAILED RULE
//   h100-a    96      1Ti        8       1Ti         default_cpu[1]: CPU 200 exceeds node 96
std::string FormatValidationFailure(const ValidationFailure& failure);

// The same as an InvalidArgument Status.
Status ValidationFailureStatus(const ValidationFailure& failure);

}  // namespace gpupool::config
