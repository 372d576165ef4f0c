#pragma once
// Kubernetes label selectors as `kubectl get -l` and `oc get nodes -l` take them:
//   key=value  key==value  key!=value  key in (a,b)  key notin (a,b)  key  !key
// joined by commas (a comma inside parentheses belongs to the set). As in Kubernetes, `!=` and
// `notin` also match objects without the key. Keys and values are checked like labels'
// (model/match.h); errors give the position in the text and what was expected.

#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/k8s.h"

namespace gpupool::model {

// An empty selector (or only spaces) selects everything: an empty list.
Result<std::vector<NodeSelectorRequirement>> ParseLabelSelector(std::string_view text);

bool MatchesLabelSelector(const std::vector<NodeSelectorRequirement>& selector,
                          const Labels& labels);

}  // namespace gpupool::model
