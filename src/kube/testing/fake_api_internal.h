#pragma once
// What fake_api.cc and fake_subresources.cc share: the request's target and the reply helpers.
// Internal to the fake API server.

#include <cstdint>
#include <optional>
#include <string>

#include "kube/testing/fake_api.h"

namespace gpupool::kube::fake {

// A request's object or collection, from its path.
struct FakeApi::Target {
  int resource = -1;
  std::string namespace_;
  std::string name;         // "" for a collection
  std::string subresource;  // binding, eviction, status, log, scale

  const ResourceType& type() const { return Resources()[resource]; }
};

std::optional<int64_t> ParseInt(const std::string& text);
std::string Query(const ApiRequest& request, const std::string& key);
bool QueryTrue(const ApiRequest& request, const std::string& key);
ApiResponse ObjectResponse(int code, const StoredObject& stored);
ApiResponse JsonResponse(int code, const Json& body);
// A v1 Status of success.
ApiResponse SuccessStatus(int code);
// A store error as the API server words it (NotFound, AlreadyExists, Conflict, ...).
ApiResponse FromStatus(const Status& status, const ResourceType& type, const std::string& name);
Result<Json> ParseBody(const ApiRequest& request);
Status CheckFieldSelector(const FieldSelector& fields, const ResourceType& type);
Result<Filter> FilterOf(int resource, const std::string& namespace_, const ApiRequest& request);
// A pod is healthy for a PodDisruptionBudget when it runs, is Ready and is not being deleted.
bool HealthyPod(const Json& pod);
// minAvailable / maxUnavailable: an integer or "N%" of `expected` (rounded up, as the
// disruption controller does).
int64_t Scaled(const Json& value, int64_t expected);
std::string PodPhase(const Json& pod);
std::string MetadataField(const Json& object, const char* field);

}  // namespace gpupool::kube::fake
