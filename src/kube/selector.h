#pragma once
// Kubernetes list selectors, as the API server parses them from a query string
// (k8s.io/apimachinery pkg/labels/selector.go and pkg/fields/selector.go):
//
//   labelSelector: requirements joined by ',' (AND): `key`, `!key`, `key=v`, `key==v`, `key!=v`,
//     `key in (a,b)`, `key notin (a,b)`, `key>3`, `key<3`. `=`/`in` need the label present with a
//     listed value; `!=`/`notin` also match when the label is absent (as in Kubernetes).
//   fieldSelector: `path=v`, `path==v`, `path!=v` joined by ','; `\` escapes `,` `=` `!` `\`.
//     An absent field reads as "" (so `spec.nodeName=` selects unbound pods).
//
// And metav1.LabelSelector objects (matchLabels + matchExpressions), as PodDisruptionBudgets and
// other objects carry them. An empty selector matches everything.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/k8s.h"

namespace gpupool::kube {

struct LabelSelector {
  std::vector<model::NodeSelectorRequirement> requirements;  // ANDed

  bool Matches(const model::Labels& labels) const;
  bool empty() const { return requirements.empty(); }
};

// Parses the query-string form. Errors name the position and what was expected.
Result<LabelSelector> ParseLabelSelector(std::string_view text);

// Reads a metav1.LabelSelector object ({matchLabels, matchExpressions}); null or {} = everything.
Result<LabelSelector> LabelSelectorFromJson(const nlohmann::ordered_json& json,
                                            std::string_view field_path);

struct FieldRequirement {
  std::string path;  // e.g. "spec.nodeName"
  bool equals = true;
  std::string value;
};

struct FieldSelector {
  std::vector<FieldRequirement> requirements;  // ANDed

  // `field` gives the value of a path in the object ("" when absent).
  template <typename FieldFn>
  bool Matches(FieldFn&& field) const {
    for (const FieldRequirement& r : requirements) {
      if ((field(r.path) == r.value) != r.equals) return false;
    }
    return true;
  }
  bool empty() const { return requirements.empty(); }
};

Result<FieldSelector> ParseFieldSelector(std::string_view text);

// The value of a dotted path ("status.phase") in an object as a field selector sees it: strings
// as they are, booleans "true"/"false", integers in decimal, anything else or absent "".
std::string FieldValue(const nlohmann::ordered_json& object, std::string_view path);

// The labels of an object (metadata.labels), ignoring values that are not strings.
model::Labels ObjectLabels(const nlohmann::ordered_json& object);

}  // namespace gpupool::kube
