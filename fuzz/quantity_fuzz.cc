// Quantities (model/quantity.h) as configs, workflows and node objects write them: the text, and
// the same text as a JSON or YAML number.
//   * a quantity that parses prints canonically, and the canonical text parses to the same value
//     and prints the same again;
//   * a JSON integer parses like its text; any JSON number parses without crashing;
//   * the saturating arithmetic stays defined (UBSan) and ordered: a + b >= a for b >= 0.

#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "fuzz/support/fuzz_util.h"
#include "model/quantity.h"

namespace gpupool::fuzz {
namespace {

void CheckCanonical(const model::Quantity& quantity, std::string_view text) {
  const std::string canonical = quantity.ToString();
  auto again = model::Quantity::Parse(canonical);
  Check(again.ok(), "the canonical form of a quantity parses",
        std::string(text) + " -> " + canonical + ": " + again.status().ToString());
  Check(*again == quantity, "the canonical form has the same value",
        std::string(text) + " -> " + canonical);
  Check(again->ToString() == canonical, "the canonical form is a fixed point",
        std::string(text) + " -> " + canonical + " -> " + again->ToString());
}

void CheckArithmetic(const model::Quantity& a, const model::Quantity& b) {
  const model::Quantity sum = a + b;
  const model::Quantity difference = a - b;
  const model::Quantity negated = -a;
  (void)negated.ToString();
  (void)sum.Value();
  (void)difference.Value();
  if (b.MilliValue() >= 0) {
    Check(sum >= a && difference <= a, "adding a non-negative quantity does not decrease");
  } else {
    Check(sum <= a && difference >= a, "adding a negative quantity does not increase");
  }
}

void CheckJsonNumber(std::string_view text, const Result<model::Quantity>& from_text) {
  Json number = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!number.is_number()) return;
  auto from_json = model::ParseQuantityJson(number, "cpu");
  if (!from_json.ok()) {
    CheckInputError(from_json.status(), "ParseQuantityJson", true, "cpu");
    return;
  }
  CheckCanonical(*from_json, text);
  if (number.is_number_integer() && from_text.ok()) {
    Check(*from_json == *from_text, "a JSON integer is the quantity of its text",
          std::string(text) + ": " + from_json->ToString() + " vs " + from_text->ToString());
  }
}

}  // namespace
}  // namespace gpupool::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpupool;
  using namespace gpupool::fuzz;
  const std::string_view text = AsText(data, size);
  // A second quantity after a newline, for the arithmetic.
  const size_t newline = text.find('\n');
  const std::string_view first = text.substr(0, newline);
  const std::string_view second =
      newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);

  auto a = model::Quantity::Parse(first);
  if (a.ok()) {
    CheckCanonical(*a, first);
  } else {
    CheckInputError(a.status(), "Quantity::Parse", IsValidUtf8(first), "invalid quantity");
  }
  CheckJsonNumber(first, a);
  auto b = model::Quantity::Parse(second);
  if (b.ok()) CheckCanonical(*b, second);
  if (a.ok() && b.ok()) CheckArithmetic(*a, *b);
  return 0;
}
