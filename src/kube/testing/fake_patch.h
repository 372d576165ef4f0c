#pragma once
// The three PATCH bodies the API server takes for built-in types, by Content-Type:
//   application/merge-patch+json           RFC 7386: objects merge, null deletes, lists replace;
//   application/strategic-merge-patch+json as merge-patch, but lists with a merge key merge
//                                          element by element (pod conditions by `type`,
//                                          containers and their statuses by `name`, ...);
//   application/json-patch+json            RFC 6902 operations.
// Server-side apply (application/apply-patch+yaml) is not served.

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/status.h"

namespace gpupool::kube::fake {

// Applies `patch` to `target` in place. kInvalidArgument for a malformed patch, kUnimplemented
// media types are kInvalidArgument too, with the supported ones named.
Status ApplyPatch(std::string_view content_type, const nlohmann::ordered_json& patch,
                  nlohmann::ordered_json& target);

// Strategic merge of `patch` into `target` (exposed for tests).
void StrategicMerge(const nlohmann::ordered_json& patch, nlohmann::ordered_json& target);

}  // namespace gpupool::kube::fake
