// The fake API server's subresources the backend uses: pods/binding, pods/eviction (with
// PodDisruptionBudgets), pods/log and the scale subresource.

#include <string>

#include "common/clock.h"
#include "common/strings.h"
#include "kube/testing/fake_api_internal.h"
#include "kube/testing/fake_disruption.h"
#include "kube/testing/fake_patch.h"

namespace gpupool::kube::fake {

ApiResponse FakeApi::Bind(const Target& target, const ApiRequest& request) {
  auto body = ParseBody(request);
  if (!body.ok()) return StatusResponse(400, "BadRequest", body.status().message());
  const Json& node_ref = (*body)["target"];
  std::string node = node_ref.is_object() ? node_ref.value("name", "") : "";
  if (node.empty()) {
    return StatusResponse(
        422, "Invalid", "Binding \"" + target.name + "\" is invalid: target.name: Required value");
  }
  std::string uid =
      (*body)["metadata"].is_object() ? (*body)["metadata"].value("uid", "") : std::string();
  std::string now = FormatTimestamp(now_ms_());
  auto bound = store_.Update(
      target.resource, target.namespace_, target.name,
      [&](Json& pod) {
        const std::string pod_uid = pod["metadata"].value("uid", "");
        if (!uid.empty() && uid != pod_uid) {
          return AbortedError("Precondition failed: UID in precondition: " + uid +
                              ", UID in object meta: " + pod_uid);
        }
        if (pod["metadata"].contains("deletionTimestamp")) {
          return AbortedError("pod " + target.name +
                              " is being deleted, cannot be assigned to a host");
        }
        std::string current = pod["spec"].value("nodeName", "");
        if (!current.empty()) {
          return AbortedError("pod " + target.name + " is already assigned to node \"" + current +
                              "\"");
        }
        pod["spec"]["nodeName"] = node;
        Json& conditions = pod["status"]["conditions"];
        if (!conditions.is_array()) conditions = Json::array();
        Json scheduled = {{"type", "PodScheduled"},
                          {"status", "True"},
                          {"lastProbeTime", nullptr},
                          {"lastTransitionTime", now}};
        bool replaced = false;
        for (Json& c : conditions) {
          if (c.value("type", "") == "PodScheduled") c = scheduled, replaced = true;
        }
        if (!replaced) conditions.push_back(scheduled);
        return OkStatus();
      },
      ObjectStore::Edit::kChanges);  // spec.nodeName set where there was none
  if (!bound.ok()) return FromStatus(bound.status(), target.type(), target.name);
  return SuccessStatus(201);
}

ApiResponse FakeApi::Evict(const Target& target, const ApiRequest& request) {
  auto body = ParseBody(request);
  if (!body.ok()) return StatusResponse(400, "BadRequest", body.status().message());
  const Json& options = (*body)["deleteOptions"];
  std::string uid;
  std::optional<int64_t> grace;
  if (options.is_object()) {
    if (options.contains("preconditions") && options["preconditions"].is_object()) {
      uid = options["preconditions"].value("uid", "");
    }
    if (options.contains("gracePeriodSeconds") && options["gracePeriodSeconds"].is_number()) {
      grace = options["gracePeriodSeconds"].get<int64_t>();
    }
  }
  auto current = store_.Get(target.resource, target.namespace_, target.name);
  if (!current.ok()) return FromStatus(current.status(), target.type(), target.name);
  const Json& pod = *current->object;
  std::string phase = PodPhase(pod);
  if (!uid.empty() && uid != MetadataField(pod, "uid")) {
    return FromStatus(AbortedError("Precondition failed: UID in precondition: " + uid +
                                   ", UID in object meta: " + MetadataField(pod, "uid")),
                      target.type(), target.name);
  }
  // Finished and not-yet-healthy pods are evicted without asking a budget.
  if (phase != "Succeeded" && phase != "Failed" && HealthyPod(pod)) {
    const model::Labels labels = ObjectLabels(pod);
    auto budgets = store_.Select(ResourceId("poddisruptionbudgets"), [&](const Json& pdb) {
      return MetadataField(pdb, "namespace") == target.namespace_ && BudgetSelects(pdb, labels);
    });
    if (budgets.size() > 1) {
      return StatusResponse(500, "InternalError",
                            "This pod has more than one PodDisruptionBudget, which the eviction "
                            "subresource does not support.");
    }
    if (budgets.size() == 1) {
      const BudgetCount count = CountBudget(store_, *budgets[0]);
      if (count.allowed() <= 0) {
        std::string name = MetadataField(*budgets[0], "name");
        Json cause = {{"reason", "DisruptionBudget"},
                      {"message", "The disruption budget " + name + " needs " +
                                      std::to_string(count.desired) + " healthy pods and has " +
                                      std::to_string(count.healthy) + " currently"}};
        return StatusResponse(429, "TooManyRequests",
                              "Cannot evict pod as it would violate the pod's disruption budget.",
                              {{"causes", Json::array({cause})}});
      }
    }
  }
  ApiResponse deleted = DeletePod(target, uid, grace);
  if (deleted.status != 200) return deleted;
  return SuccessStatus(201);
}

ApiResponse FakeApi::Log(const Target& target, const ApiRequest& request,
                         const std::function<void()>& wake) {
  auto current = store_.Get(target.resource, target.namespace_, target.name);
  if (!current.ok()) return FromStatus(current.status(), target.type(), target.name);
  std::string container = Query(request, "container");
  const Json& containers = Field(Field(*current->object, "spec"), "containers");
  if (!container.empty()) {
    bool known = false;
    if (containers.is_array()) {
      for (const Json& c : containers) known = known || c.value("name", "") == container;
    }
    if (!known) {
      return StatusResponse(400, "BadRequest",
                            "container " + container + " is not valid for pod " + target.name);
    }
  } else if (containers.is_array() && containers.size() > 1) {
    return StatusResponse(400, "BadRequest",
                          "a container name must be specified for pod " + target.name);
  }
  std::optional<int64_t> limit;
  if (std::string text = Query(request, "limitBytes"); !text.empty()) {
    limit = ParseInt(text);
    if (!limit || *limit < 1) {
      return StatusResponse(422, "Invalid", "limitBytes: Invalid value: must be greater than 0");
    }
  }
  const Json& pod = *current->object;
  ApiResponse response;
  response.content_type = "text/plain";
  // Unbound: the API server has no kubelet to ask, and answers an empty log.
  if (!Field(pod, "spec").contains("nodeName")) return response;
  if (PodPhase(pod) == "Pending") {
    std::string waiting = "ContainerCreating";
    const Json& statuses = Field(Field(pod, "status"), "containerStatuses");
    if (statuses.is_array() && !statuses.empty()) {
      const Json& reason = Field(Field(Field(statuses[0], "state"), "waiting"), "reason");
      if (reason.is_string()) waiting = reason.get<std::string>();
    }
    std::string name = container;
    if (name.empty() && containers.is_array() && !containers.empty()) {
      name = containers[0].value("name", "");
    }
    return StatusResponse(400, "BadRequest",
                          "container \"" + name + "\" in pod \"" + target.name +
                              "\" is waiting to start: " + waiting);
  }
  const std::string key = MetadataField(pod, "uid");  // the log is the pod's, not the name's
  if (QueryTrue(request, "follow")) {
    if (limit) {
      return StatusResponse(400, "BadRequest", "the fake API server does not limit a followed log");
    }
    response.stream = logs_.Follow(key, wake);
  } else {
    response.body = logs_.Text(key);
    if (limit && static_cast<int64_t>(response.body.size()) > *limit) {
      response.body.resize(static_cast<size_t>(*limit));
    }
  }
  return response;
}

ApiResponse FakeApi::Scale(const Target& target, const ApiRequest& request) {
  std::optional<int64_t> replicas;
  if (request.method != "GET") {
    Json body = Json::parse(request.body, nullptr, false);
    if (body.is_discarded()) return StatusResponse(400, "BadRequest", "the body is not JSON");
    if (request.method == "PATCH") {
      Json scale = {{"spec", Json::object()}};
      Status patched = ApplyPatch(request.content_type, body, scale);
      if (!patched.ok()) return StatusResponse(422, "Invalid", patched.message());
      body = scale;
    }
    const Json& spec = body["spec"];
    if (!spec.is_object() || !spec.contains("replicas") || !spec["replicas"].is_number_integer() ||
        spec["replicas"].get<int64_t>() < 0) {
      return StatusResponse(422, "Invalid", "Scale: spec.replicas: a non-negative integer");
    }
    replicas = spec["replicas"].get<int64_t>();
  }
  // status.replicas is the machine controller's (fake_machines.h), once it has made or deleted
  // the machines.
  Result<StoredObject> object = replicas
                                    ? store_.Update(target.resource, target.namespace_, target.name,
                                                    [&](Json& o) {
                                                      o["spec"]["replicas"] = *replicas;
                                                      return OkStatus();
                                                    })
                                    : store_.Get(target.resource, target.namespace_, target.name);
  if (!object.ok()) return FromStatus(object.status(), target.type(), target.name);
  const Json& o = *object->object;
  const Json& spec = Field(o, "spec");
  const Json& status = Field(o, "status");
  const Json& selector = Field(spec, "selector");
  Json scale = {{"kind", "Scale"},
                {"apiVersion", "autoscaling/v1"},
                {"metadata",
                 {{"name", target.name},
                  {"namespace", target.namespace_},
                  {"uid", MetadataField(o, "uid")},
                  {"resourceVersion", MetadataField(o, "resourceVersion")}}},
                {"spec", {{"replicas", spec.is_object() ? spec.value("replicas", 0) : 0}}},
                {"status", {{"replicas", status.is_object() ? status.value("replicas", 0) : 0}}}};
  if (selector.is_object() && selector.contains("matchLabels")) {
    std::vector<std::string> terms;
    for (const auto& [k, v] : Field(selector, "matchLabels").items()) {
      if (v.is_string()) terms.push_back(k + "=" + v.get<std::string>());
    }
    scale["status"]["selector"] = Join(terms, ",");
  }
  return JsonResponse(200, scale);
}

}  // namespace gpupool::kube::fake
