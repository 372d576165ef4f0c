#pragma once
// The requests gpupool makes of the API server, with their answers sorted into what the caller
// must do (synchronous: not from the client's I/O thread):
//   CreateObject  201 the stored object; 409 AlreadyExists -> kAlreadyExists (the caller adopts).
//   BindPod       201 OK; 409 -> kAborted (already bound, being deleted, or a different pod of
//                 that name: the message says which); 404 -> kNotFound (deleted). A pod is never
//                 bound twice: the API server refuses the second binding.
//   EvictPod      201 kEvicted; 429 kBlockedByBudget with the budget's message (a
//                 PodDisruptionBudget allows no disruption now: pick other victims or wait);
//                 404 kGone; 409 kConflict (the UID no longer matches: another pod).
//   DeletePod     200 OK (graceful: the kubelet stops it within the grace period); 404 kNotFound.
//   PatchStatus   strategic-merge patch of pods/status.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/status.h"
#include "kube/client.h"
#include "kube/writes.h"

namespace gpupool::kube {

// The content type of a strategic merge patch (status patches, conditions merged by type).
inline constexpr char kStrategicMergePatch[] = "application/strategic-merge-patch+json";

Result<nlohmann::ordered_json> CreateObject(Client& client, const std::string& collection_path,
                                            const nlohmann::ordered_json& object);

Status BindPod(Client& client, const ObjectRef& pod, const std::string& node);

enum class EvictionOutcome { kEvicted, kBlockedByBudget, kGone, kConflict };

struct EvictionResult {
  EvictionOutcome outcome = EvictionOutcome::kEvicted;
  std::string message;  // the API server's, e.g. "The disruption budget x needs 2 healthy pods"
};

Result<EvictionResult> EvictPod(Client& client, const ObjectRef& pod,
                                std::optional<int64_t> grace_seconds);

// What an answer to POST pods/NAME/eviction means, as EvictPod sorts it (for a caller that sent
// the request itself, asynchronously). Other codes: the ApiError.
Result<EvictionResult> EvictionOutcomeOf(const Response& response, const ObjectRef& pod);

Status DeletePod(Client& client, const ObjectRef& pod, std::optional<int64_t> grace_seconds);

Result<nlohmann::ordered_json> PatchStatus(Client& client, const ObjectRef& pod,
                                           const nlohmann::ordered_json& patch);

}  // namespace gpupool::kube
