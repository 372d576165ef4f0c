#pragma once
// `gpupool replay --report FILE.html`: one self-contained HTML file (no scripts, styles or fonts
// fetched at view time) with charts drawn here as inline SVG, one line per policy: GPU allocation
// (all node pools), FGD fragmentation, pending and running jobs over simulated time; the summary
// tables; and the run's inputs. SVG keeps the file readable offline and without a charting
// library; each line carries a <title> with the policy for hover.

#include <string>
#include <vector>

#include "replay/engine.h"
#include "replay/output.h"

namespace gpupool::replay {

std::string HtmlReport(const RunInputs& inputs, const std::vector<PolicyRun>& runs);

// `text` with &, <, >, " and ' escaped for HTML text and attribute values.
std::string HtmlEscape(const std::string& text);

}  // namespace gpupool::replay
