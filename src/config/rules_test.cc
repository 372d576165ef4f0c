#include "config/rules.h"

#include <gtest/gtest.h>

#include "config/test_util.h"

namespace gpupool::config {
namespace rules_test {

using testing::ExpectError;
using testing::J;

TEST(CompareOperandsTest, OperatorsAndUnits) {
  struct Case {
    std::string left;
    Operator op;
    std::string right;
    bool want;
  };
  std::vector<Case> cases = {
      {"500m", Operator::kLt, "1", true},
      {"500m", Operator::kGe, "1", false},
      {"1000m", Operator::kEq, "1", true},
      {"1G", Operator::kLt, "1Gi", true},
      {"1Gi", Operator::kGt, "1G", true},
      {"1024Mi", Operator::kEq, "1Gi", true},
      {"1000M", Operator::kEq, "1G", true},
      {"64Gi", Operator::kLe, "80Gi", true},
      {"128Gi", Operator::kLe, "80Gi", false},
      {"1.5", Operator::kGt, "1", true},
      {"2", Operator::kNe, "2.0", false},
      {"8", Operator::kLe, "8", true},
      {"8", Operator::kLt, "8", false},
      {"9", Operator::kGt, "8", true},
      {"0", Operator::kGt, "0", false},
      {"0", Operator::kGe, "0", true},
      {"1e3", Operator::kEq, "1k", true},
      {" 4 ", Operator::kEq, "4", true},
      {"-1", Operator::kLt, "0", true},
      {"1Ti", Operator::kGt, "1000Gi", true},
      {"abc", Operator::kEq, "abc", true},
      {"abc", Operator::kNe, "abd", true},
      {"amd64", Operator::kEq, "arm64", false},
      {"1", Operator::kEq, "one", false},
      {"1", Operator::kNe, "one", true},
      {"8Ti", Operator::kEq, "8192Gi", true},
      {"2T", Operator::kEq, "2000G", true},
      {"5k", Operator::kEq, "5000", true},
      {"1Mi", Operator::kEq, "1048576", true},
      {"999999999999999", Operator::kLt, "1P", true},
      {"1000000000000000", Operator::kEq, "1P", true},
      {"0.5Gi", Operator::kEq, "512Mi", true},
      {"1.5", Operator::kEq, "1500m", true},
  };
  for (const Case& c : cases) {
    std::string name = c.left + " " + std::string(OperatorName(c.op)) + " " + c.right;
    SCOPED_TRACE(name);
    Result<bool> got = CompareOperands(c.op, c.left, c.right);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, c.want);
  }
  for (Operator op : {Operator::kGt, Operator::kGe, Operator::kLt, Operator::kLe}) {
    SCOPED_TRACE(OperatorName(op));
    ExpectError(CompareOperands(op, "abc", "1").status(), {"\"abc\" is not a number or quantity"});
    ExpectError(CompareOperands(op, "4", "None").status(), {"\"None\" is not a number"});
  }
  // Beyond int64 milli-units: the quantity parser's reason is shown.
  ExpectError(CompareOperands(Operator::kGt, "9000000Ti", "1Ti").status(),
              {"cannot compare \"9000000Ti\" GT \"1Ti\"", "9000000Ti"});
}

TEST(RulesTest, NodeRuleDetection) {
  struct Case {
    std::string left, right;
    bool node;
  };
  std::vector<Case> cases = {
      {"{{USER_CPU}}", "{{K8_CPU}}", true},
      {"{{ K8_MEMORY }}", "1", true},
      {"{{USER_GPU}}", "8", false},
      {"K8_CPU", "1", false},
      {"{{K8_CPUS}}", "1", false},
      {"{{USER_STORAGE}}", "{{K8_STORAGE}}", true},
      {"1", "{{K8_GPU}}", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.left + " vs " + c.right);
    EXPECT_EQ(IsNodeRule(ValidationRule{Operator::kLe, c.left, c.right, "m"}), c.node);
  }
}

model::Node MakeNode(const std::string& name, const std::string& cpu, const std::string& memory,
                     std::optional<std::string> gpu) {
  model::Node n;
  n.name = name;
  n.allocatable["cpu"] = *model::Quantity::Parse(cpu);
  n.allocatable["memory"] = *model::Quantity::Parse(memory);
  n.allocatable["ephemeral-storage"] = *model::Quantity::Parse("1Ti");
  if (gpu.has_value()) n.allocatable["nvidia.com/gpu"] = *model::Quantity::Parse(*gpu);
  return n;
}

std::vector<NamedRule> Rules(const std::string& set, const char* json) {
  Result<ValidationSet> vs = ValidationSetFromJson(set, Json::parse(json));
  EXPECT_TRUE(vs.ok()) << vs.status().ToString();
  std::vector<NamedRule> out;
  for (size_t i = 0; i < vs->rules.size(); ++i) out.push_back({set, i, vs->rules[i]});
  return out;
}

TEST(RulesTest, NodeTokens) {
  model::Node n = MakeNode("a", "95500m", "512Gi", "8");
  VariableMap t = NodeTokens(n);
  EXPECT_EQ(t.at("K8_CPU"), "95500m");
  EXPECT_EQ(t.at("K8_MEMORY"), "512Gi");
  EXPECT_EQ(t.at("K8_GPU"), "8");
  EXPECT_EQ(t.at("K8_STORAGE"), "1Ti");
  EXPECT_EQ(NodeTokens(MakeNode("b", "4", "16Gi", std::nullopt)).at("K8_GPU"), "0");
}

// Over 80 lines only by its table of cases, one per row.
TEST(RulesTest, ValidateTask) {
  std::vector<NamedRule> rules = Rules("gpu_training_validation", R"([
    {"operator": "GE", "left_operand": "{{USER_GPU}}", "right_operand": "1",
     "assert_message": "Training tasks need at least one GPU, got {{USER_GPU}}"},
    {"operator": "LE", "left_operand": "{{USER_CPU}}", "right_operand": "{{K8_CPU}}",
     "assert_message": "CPU {{USER_CPU}} exceeds node capacity {{K8_CPU}}"},
    {"operator": "LE", "left_operand": "{{USER_GPU}}", "right_operand": "{{K8_GPU}}",
     "assert_message": "Requested {{USER_GPU}} GPUs but the node has {{K8_GPU}}"}])");
  model::Node big_cpu = MakeNode("cpu-big", "128", "1Ti", std::nullopt);
  model::Node small_gpu = MakeNode("gpu-small", "16", "64Gi", "1");
  model::Node gpu8 = MakeNode("gpu-8", "96", "1Ti", "8");
  ValidationScope scope{"train", "robotics-training", "h100-platform"};

  struct Case {
    std::string name;
    VariableMap vars;
    std::vector<const model::Node*> nodes;
    bool ok;
    bool node_rule;
    std::string passing_node;
    std::string message;
  };
  std::vector<Case> cases = {
      {"fits the 8-GPU node",
       {{"USER_GPU", "4"}, {"USER_CPU", "32"}},
       {&big_cpu, &small_gpu, &gpu8},
       true,
       false,
       "gpu-8",
       ""},
      {"millicores compare with cores",
       {{"USER_GPU", "1"}, {"USER_CPU", "16000m"}},
       {&small_gpu},
       true,
       false,
       "gpu-small",
       ""},
      {"static rule fails first",
       {{"USER_GPU", "0"}, {"USER_CPU", "1"}},
       {&gpu8},
       false,
       false,
       "",
       "Training tasks need at least one GPU, got 0"},
      {"no node passes all node rules (each passes one)",
       {{"USER_GPU", "2"}, {"USER_CPU", "100"}},
       {&big_cpu, &small_gpu, &gpu8},
       false,
       true,
       "",
       "Requested 2 GPUs but the node has 0"},
      {"no nodes",
       {{"USER_GPU", "1"}, {"USER_CPU", "1"}},
       {},
       false,
       true,
       "",
       "There are no nodes in platform h100-platform of pool robotics-training"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<ValidationResult> got = ValidateTask(scope, rules, c.vars, c.nodes);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->ok(), c.ok);
    if (c.ok) {
      EXPECT_EQ(got->passing_node, c.passing_node);
      continue;
    }
    EXPECT_EQ(got->failure->task, "train");
    EXPECT_EQ(got->failure->node_rule, c.node_rule);
    EXPECT_EQ(got->failure->message, c.message);
  }

  // The per-node table of a node-rule failure.
  Result<ValidationResult> got = ValidateTask(
      scope, rules, {{"USER_GPU", "2"}, {"USER_CPU", "100"}}, {&big_cpu, &small_gpu, &gpu8});
  ASSERT_TRUE(got.ok());
  const ValidationFailure& f = *got->failure;
  ASSERT_EQ(f.node_rules.size(), 2u);
  ASSERT_EQ(f.nodes.size(), 3u);
  EXPECT_EQ(f.nodes[0].node, "cpu-big");
  EXPECT_EQ(f.nodes[0].failed, 1u);  // GPU rule
  EXPECT_EQ(f.nodes[1].failed, 0u);  // CPU rule
  EXPECT_EQ(f.nodes[1].message, "CPU 100 exceeds node capacity 16");
  EXPECT_EQ(f.nodes[2].failed, 0u);
  EXPECT_EQ(f.nodes[2].tokens.at("K8_GPU"), "8");
  std::string text = FormatValidationFailure(f);
  EXPECT_EQ(
      text,
      "Resource validation failed for task train\n"
      "No node of the platform passes every node rule:\n"
      "NODE       CPU  MEMORY  GPU  STORAGE  FAILED RULE\n"
      "cpu-big    128  1Ti     0    1Ti      gpu_training_validation[2]: Requested 2 GPUs but "
      "the node has 0\n"
      "gpu-small  16   64Gi    1    1Ti      gpu_training_validation[1]: CPU 100 exceeds node "
      "capacity 16\n"
      "gpu-8      96   1Ti     8    1Ti      gpu_training_validation[1]: CPU 100 exceeds node "
      "capacity 96\n"
      "Check the nodes with \"gpupool resource list\".");
  Result<ValidationResult> static_fail =
      ValidateTask(scope, rules, {{"USER_GPU", "0"}, {"USER_CPU", "1"}}, {&gpu8});
  EXPECT_EQ(ValidationFailureStatus(*static_fail->failure).message(),
            "Resource validation failed for task train\n"
            "Assertion failed for task train: Training tasks need at least one GPU, got 0");
}

TEST(RulesTest, TaskVariablesOverrideNodeTokens) {
  std::vector<NamedRule> rules = Rules("v", R"([
    {"operator": "LE", "left_operand": "{{USER_GPU}}", "right_operand": "{{K8_GPU}}",
     "assert_message": "m"}])");
  model::Node n = MakeNode("n", "8", "8Gi", "1");
  ValidationScope scope{"t", "p", "x"};
  Result<ValidationResult> got =
      ValidateTask(scope, rules, {{"USER_GPU", "4"}, {"K8_GPU", "8"}}, {&n});
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->ok());
}

TEST(RulesTest, BadRulesAreErrorsNotCrashes) {
  ValidationScope scope{"t", "p", "x"};
  model::Node n = MakeNode("n", "8", "8Gi", "1");
  struct Case {
    std::string name;
    std::string rules;
    std::string fragment;
  };
  std::vector<Case> cases = {
      {"undefined variable",
       R"([{"operator": "GT", "left_operand": "{{USER_CPUS}}", "right_operand": "0", "assert_message": "m"}])",
       "resource validation \"v\" rule 0 field left_operand uses undefined variable USER_CPUS"},
      {"string with GT",
       R"([{"operator": "GT", "left_operand": "{{ARCH}}", "right_operand": "0", "assert_message": "m"}])",
       "cannot compare \"amd64\" GT \"0\""},
      {"undefined in message",
       R"([{"operator": "GT", "left_operand": "0", "right_operand": "1", "assert_message": "{{NOPE}}"}])",
       "assert_message uses undefined variable NOPE"},
      {"node rule with string",
       R"([{"operator": "LE", "left_operand": "{{ARCH}}", "right_operand": "{{K8_CPU}}", "assert_message": "m"}])",
       "is not a number or quantity"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<ValidationResult> got =
        ValidateTask(scope, Rules("v", c.rules.c_str()), {{"ARCH", "amd64"}}, {&n});
    ExpectError(got.status(), {c.fragment});
  }
}

}  // namespace rules_test
}  // namespace gpupool::config
