#pragma once
// Node import: `kubectl get nodes -o json|yaml` output (NodeList, List, a single Node, or
// multi-document YAML) and the openb node CSV of the Alibaba GPU trace.

#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/k8s.h"

namespace gpupool::model {

// Chooses the format by content: a first line starting with `sn,` is the openb CSV, otherwise
// JSON/YAML. Items of kind other than Node in a List are skipped; a document of another kind is
// an error naming it. Errors start with "<file>:" (and line:column where known).
Result<std::vector<Node>> ParseNodes(std::string_view text, std::string_view file_name);

// openb CSV: header `sn,cpu_milli,memory_mib,gpu,model`. Each row becomes a Node named `sn` with
// labels kubernetes.io/hostname=<sn>, gpupool.io/source=openb, and when gpu > 0
// nvidia.com/gpu.product=NVIDIA-<model> and nvidia.com/gpu.count=<gpu>; capacity = allocatable =
// cpu (milli), memory (Mi), nvidia.com/gpu (when > 0), pods=110.
Result<std::vector<Node>> ParseOpenbNodeCsv(std::string_view text, std::string_view file_name);

}  // namespace gpupool::model
