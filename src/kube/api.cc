#include "kube/api.h"

#include "common/json_text.h"

namespace gpupool::kube {
namespace {

using Json = nlohmann::ordered_json;

// The causes' messages of a Status (an eviction's budget), else its message.
std::string StatusMessage(const Response& response) {
  Json body = response.Json();
  if (!body.is_object()) return response.body;
  if (body.contains("details") && body["details"].is_object() &&
      body["details"].contains("causes") && body["details"]["causes"].is_array()) {
    std::string text;
    for (const Json& cause : body["details"]["causes"]) {
      if (!cause.is_object() || !cause.contains("message")) continue;
      if (!text.empty()) text += "; ";
      text += cause["message"].is_string() ? cause["message"].get<std::string>() : "";
    }
    if (!text.empty()) return text;
  }
  return body.value("message", "");
}

}  // namespace

Result<Json> CreateObject(Client& client, const std::string& collection_path, const Json& object) {
  ASSIGN_OR_RETURN(Response response,
                   client.Call({"POST", collection_path, DumpJson(object), "application/json"}));
  if (!response.ok()) return ApiError(response, "create in " + collection_path);
  return response.Json();
}

Status BindPod(Client& client, const ObjectRef& pod, const std::string& node) {
  ASSIGN_OR_RETURN(Response response,
                   client.Call({"POST", PodPath(pod, "binding"), DumpJson(BindingBody(pod, node)),
                                "application/json"}));
  if (response.ok()) return OkStatus();
  return ApiError(response, "bind " + pod.namespace_ + "/" + pod.name + " to " + node);
}

Result<EvictionResult> EvictPod(Client& client, const ObjectRef& pod,
                                std::optional<int64_t> grace_seconds) {
  ASSIGN_OR_RETURN(Response response,
                   client.Call({"POST", PodPath(pod, "eviction"),
                                DumpJson(EvictionBody(pod, grace_seconds)), "application/json"}));
  return EvictionOutcomeOf(response, pod);
}

Result<EvictionResult> EvictionOutcomeOf(const Response& response, const ObjectRef& pod) {
  EvictionResult result;
  result.message = StatusMessage(response);
  switch (response.status) {
    case 200:
    case 201:
      result.outcome = EvictionOutcome::kEvicted;
      return result;
    case 429:
      result.outcome = EvictionOutcome::kBlockedByBudget;
      return result;
    case 404:
      result.outcome = EvictionOutcome::kGone;
      return result;
    case 409:
      result.outcome = EvictionOutcome::kConflict;
      return result;
    default:
      return ApiError(response, "evict " + pod.namespace_ + "/" + pod.name);
  }
}

Status DeletePod(Client& client, const ObjectRef& pod, std::optional<int64_t> grace_seconds) {
  ASSIGN_OR_RETURN(Response response, client.Call({"DELETE", PodPath(pod),
                                                   DumpJson(DeleteOptionsBody(pod, grace_seconds)),
                                                   "application/json"}));
  if (response.ok()) return OkStatus();
  return ApiError(response, "delete " + pod.namespace_ + "/" + pod.name);
}

Result<Json> PatchStatus(Client& client, const ObjectRef& pod, const Json& patch) {
  ASSIGN_OR_RETURN(Response response, client.Call({"PATCH", PodPath(pod, "status"), DumpJson(patch),
                                                   kStrategicMergePatch}));
  if (!response.ok()) return ApiError(response, "patch " + pod.namespace_ + "/" + pod.name);
  return response.Json();
}

}  // namespace gpupool::kube
