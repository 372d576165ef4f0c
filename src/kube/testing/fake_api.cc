#include "kube/testing/fake_api.h"
// The fake API server's routing, authorization and the verbs on objects (list, watch, create,
// replace, patch, delete); the subresources (binding, eviction, log, scale) are in
// fake_subresources.cc, the watch, store and kubelet parts in their own files.

#include <charconv>
#include <set>

#include "common/clock.h"
#include "common/strings.h"
#include "kube/json_read.h"
#include "kube/testing/fake_api_internal.h"
#include "kube/testing/fake_patch.h"

namespace gpupool::kube::fake {

std::optional<int64_t> ParseInt(const std::string& text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string Query(const ApiRequest& request, const std::string& key) {
  auto it = request.query.find(key);
  return it == request.query.end() ? "" : it->second;
}

bool QueryTrue(const ApiRequest& request, const std::string& key) {
  std::string value = Query(request, key);
  return value == "true" || value == "1";
}

ApiResponse ObjectResponse(int code, const StoredObject& stored) {
  ApiResponse response;
  response.status = code;
  response.body = *stored.text;
  return response;
}

ApiResponse JsonResponse(int code, const Json& body) {
  ApiResponse response;
  response.status = code;
  response.body = body.dump();
  return response;
}

ApiResponse SuccessStatus(int code) {
  auto text = [](int c) {
    return Json({{"kind", "Status"},
                 {"apiVersion", "v1"},
                 {"metadata", Json::object()},
                 {"status", "Success"},
                 {"code", c}})
        .dump();
  };
  // Every binding answers 201 with the same Status: made once, not per request.
  static const std::string kCreated = text(201);
  ApiResponse response;
  response.status = code;
  response.body = code == 201 ? kCreated : text(code);
  return response;
}

// A store error as the API server answers it.
ApiResponse FromStatus(const Status& status, const ResourceType& type, const std::string& name) {
  Json details = {{"name", name}, {"kind", type.plural}};
  if (!type.group.empty()) details["group"] = type.group;
  switch (status.code()) {
    case StatusCode::kNotFound:
      return StatusResponse(404, "NotFound", status.message(), details);
    case StatusCode::kAlreadyExists:
      return StatusResponse(409, "AlreadyExists", status.message(), details);
    case StatusCode::kAborted:
      return StatusResponse(409, "Conflict",
                            "Operation cannot be fulfilled on " + type.plural + " \"" + name +
                                "\": " + status.message(),
                            details);
    case StatusCode::kFailedPrecondition:
      return StatusResponse(410, "Expired", status.message());
    case StatusCode::kInvalidArgument:
      return StatusResponse(400, "BadRequest", status.message());
    default:
      return StatusResponse(500, "InternalError", status.message());
  }
}

Result<Json> ParseBody(const ApiRequest& request) {
  Json body = ReadJson(request.body);
  if (body.is_discarded() || !body.is_object()) {
    return InvalidArgumentError("the request body is not a JSON object");
  }
  return body;
}

// The fields each resource's field selectors support (the registries' GetAttrs).
Status CheckFieldSelector(const FieldSelector& fields, const ResourceType& type) {
  static const std::map<std::string, std::set<std::string>> kFields = {
      {"pods",
       {"spec.nodeName", "spec.schedulerName", "status.phase", "spec.restartPolicy",
        "spec.serviceAccountName", "status.podIP", "status.nominatedNodeName", "spec.hostNetwork"}},
      {"nodes", {"spec.unschedulable"}},
      {"events",
       {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"}},
  };
  for (const FieldRequirement& r : fields.requirements) {
    if (r.path == "metadata.name" || r.path == "metadata.namespace") continue;
    auto it = kFields.find(type.plural);
    if (it == kFields.end() || !it->second.contains(r.path)) {
      return InvalidArgumentError("field label not supported: " + r.path);
    }
  }
  return OkStatus();
}

Result<Filter> FilterOf(int resource, const std::string& namespace_, const ApiRequest& request) {
  Filter filter;
  filter.resource = resource;
  filter.namespace_ = namespace_;
  ASSIGN_OR_RETURN(filter.labels, ParseLabelSelector(Query(request, "labelSelector")));
  ASSIGN_OR_RETURN(filter.fields, ParseFieldSelector(Query(request, "fieldSelector")));
  RETURN_IF_ERROR(CheckFieldSelector(filter.fields, Resources()[resource]));
  return filter;
}

// A pod is healthy for a PodDisruptionBudget when it runs, is Ready and is not being deleted.
bool HealthyPod(const Json& pod) {
  if (Field(pod, "metadata").contains("deletionTimestamp")) return false;
  const Json& status = Field(pod, "status");
  if (!status.is_object() || status.value("phase", "") != "Running") return false;
  const Json& conditions = Field(status, "conditions");
  if (!conditions.is_array()) return false;
  for (const Json& c : conditions) {
    if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
  }
  return false;
}

// minAvailable / maxUnavailable: an integer or "N%" of `expected` (rounded up, as the
// disruption controller does).
int64_t Scaled(const Json& value, int64_t expected) {
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_string()) {
    std::string text = value.get<std::string>();
    if (EndsWith(text, "%")) {
      auto percent = ParseInt(text.substr(0, text.size() - 1));
      if (percent) return (*percent * expected + 99) / 100;
    }
    return ParseInt(text).value_or(0);
  }
  return 0;
}

std::string PodPhase(const Json& pod) {
  const Json& status = Field(pod, "status");
  return status.is_object() ? status.value("phase", "") : "";
}

std::string MetadataField(const Json& object, const char* field) {
  const Json& value = Field(Field(object, "metadata"), field);
  return value.is_string() ? value.get<std::string>() : "";
}

ApiResponse StatusResponse(int code, const std::string& reason, const std::string& message,
                           Json details) {
  Json body = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", Json::object()},
               {"status", "Failure"}, {"message", message}, {"reason", reason}};
  if (!details.is_null()) body["details"] = std::move(details);
  body["code"] = code;
  return JsonResponse(code, body);
}

FakeApi::FakeApi(ObjectStore& store, Kubelet& kubelet, PodLogs& logs,
                 std::function<int64_t()> now_ms)
    : store_(store), kubelet_(kubelet), logs_(logs), now_ms_(std::move(now_ms)) {}

void FakeApi::SetOptions(ApiOptions options) {
  std::lock_guard lock(mu_);
  options_ = options;
}

Json FakeApi::RequestCounts() const {
  std::lock_guard lock(mu_);
  Json counts = Json::object();
  for (const auto& [key, n] : counts_) counts[key] = n;
  return counts;
}

void FakeApi::SetRole(ClusterRole role) {
  std::lock_guard lock(mu_);
  role_ = std::move(role);
}

Json FakeApi::DeniedCounts() const {
  std::lock_guard lock(mu_);
  Json counts = Json::object();
  for (const auto& [key, n] : denied_) counts[key] = n;
  return counts;
}

void FakeApi::Count(const std::string& verb, const Target& target) {
  std::string key = verb + " " + target.type().plural;
  if (!target.subresource.empty()) key += "/" + target.subresource;
  std::lock_guard lock(mu_);
  ++counts_[key];
}

void FakeApi::FailNext(const std::string& method, const std::string& path, int code, int count) {
  std::lock_guard lock(mu_);
  failures_[method + " " + path] = {code, count};
}

ApiResponse FakeApi::Handle(const ApiRequest& request, const std::function<void()>& wake) {
  {
    std::lock_guard lock(mu_);
    auto failure = failures_.find(request.method + " " + request.path);
    if (failure != failures_.end() && failure->second.second > 0) {
      const int code = failure->second.first;
      if (--failure->second.second == 0) failures_.erase(failure);
      return StatusResponse(code,
                            code == 409   ? "Conflict"
                            : code == 404 ? "NotFound"
                                          : "Failure",
                            "injected by the test (" + request.method + " " + request.path + ")");
    }
  }
  return Handle(request, wake, /*admin=*/false);
}

ApiResponse FakeApi::HandleAsAdmin(const ApiRequest& request) {
  return Handle(
      request, [] {}, /*admin=*/true);
}

ApiResponse FakeApi::Handle(const ApiRequest& request, const std::function<void()>& wake,
                            bool admin) {
  if (request.path == "/version") {
    return JsonResponse(200, {{"major", "1"}, {"minor", "30"}, {"gitVersion", "v1.30.0-fake"}});
  }
  if (request.path == "/healthz" || request.path == "/readyz") {
    ApiResponse ok;
    ok.body = "ok";
    ok.content_type = "text/plain";
    return ok;
  }
  std::vector<std::string> parts = Split(request.path, '/');
  if (!parts.empty() && parts.front().empty()) parts.erase(parts.begin());
  Target target;
  std::string group, version;
  size_t at = 0;
  if (parts.size() >= 2 && parts[0] == "api") {
    version = parts[1];
    at = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    group = parts[1];
    version = parts[2];
    at = 3;
  } else {
    return StatusResponse(404, "NotFound", "the server could not find the requested resource");
  }
  std::vector<std::string> rest(parts.begin() + static_cast<long>(at), parts.end());
  if (rest.size() >= 3 && rest[0] == "namespaces") {
    target.namespace_ = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (rest.empty() || rest.size() > 3) {
    return StatusResponse(404, "NotFound", "the server could not find the requested resource");
  }
  target.resource = FindResource(group, version, rest[0]);
  if (target.resource < 0 || (!target.type().namespaced && !target.namespace_.empty())) {
    return StatusResponse(404, "NotFound", "the server could not find the requested resource");
  }
  if (rest.size() > 1) target.name = rest[1];
  if (rest.size() > 2) target.subresource = rest[2];
  if (std::string verb = VerbOf(request, target); !verb.empty() && !admin) {
    if (auto denied = Authorize(verb, target)) return *denied;
    Count(verb, target);
  }
  return Dispatch(request, target, wake);
}

// The verb as RBAC names it; "" for what Dispatch refuses anyway (405, 404).
std::string FakeApi::VerbOf(const ApiRequest& request, const Target& target) {
  const std::string& m = request.method;
  const std::string& sub = target.subresource;
  if (target.name.empty()) {
    if (m == "GET") return QueryTrue(request, "watch") ? "watch" : "list";
    return m == "POST" ? "create" : "";
  }
  if (sub.empty() || sub == "status" || sub == "scale") {
    if (m == "GET") return "get";
    if (m == "PUT") return "update";
    if (m == "PATCH") return "patch";
    return m == "DELETE" && sub.empty() ? "delete" : "";
  }
  if (sub == "binding" || sub == "eviction") return m == "POST" ? "create" : "";
  if (sub == "log") return m == "GET" ? "get" : "";
  return "";
}

std::optional<ApiResponse> FakeApi::Authorize(const std::string& verb, const Target& target) {
  if (!role_) return std::nullopt;
  RbacRequest rbac{verb, target.type().group, target.type().plural, target.name};
  if (!target.subresource.empty()) rbac.resource += "/" + target.subresource;
  if (role_->Allows(rbac)) return std::nullopt;
  {
    std::lock_guard lock(mu_);
    ++denied_[verb + " " + rbac.resource];
  }
  return StatusResponse(403, "Forbidden", ForbiddenMessage(rbac, target.namespace_, kFakeUser),
                        {{"name", target.name}, {"kind", target.type().plural}});
}

ApiResponse FakeApi::Dispatch(const ApiRequest& request, const Target& target,
                              const std::function<void()>& wake) {
  const std::string& m = request.method;
  const std::string& sub = target.subresource;
  auto not_allowed = [] { return StatusResponse(405, "MethodNotAllowed", "method not allowed"); };
  if (target.name.empty()) {
    if (m == "GET" && QueryTrue(request, "watch")) {
      return Watch(target, request, wake);
    }
    if (m == "GET") {
      return List(target, request);
    }
    if (m == "POST") {
      if (target.type().namespaced && target.namespace_.empty()) return not_allowed();
      return Create(target, request);
    }
    return not_allowed();
  }
  if (sub.empty() || sub == "status") {
    bool status_only = sub == "status";
    if (status_only && !target.type().status_subresource) {
      return StatusResponse(404, "NotFound", "the server could not find the requested resource");
    }
    if (m == "GET") {
      auto stored = store_.Get(target.resource, target.namespace_, target.name);
      return stored.ok() ? ObjectResponse(200, *stored)
                         : FromStatus(stored.status(), target.type(), target.name);
    }
    if (m == "PUT") {
      return Replace(target, request, status_only);
    }
    if (m == "PATCH") {
      return Patch(target, request, status_only);
    }
    if (m == "DELETE" && !status_only) {
      return Delete(target, request);
    }
    return not_allowed();
  }
  bool pods = target.type().plural == "pods";
  if (pods && sub == "binding" && m == "POST") {
    return Bind(target, request);
  }
  if (pods && sub == "eviction" && m == "POST") {
    return Evict(target, request);
  }
  if (pods && sub == "log" && m == "GET") {
    return Log(target, request, wake);
  }
  if (sub == "scale" && target.type().scale_subresource) {
    if (m != "GET" && m != "PUT" && m != "PATCH") return not_allowed();
    return Scale(target, request);
  }
  return StatusResponse(404, "NotFound", "the server could not find the requested resource");
}

ApiResponse FakeApi::List(const Target& target, const ApiRequest& request) {
  auto filter = FilterOf(target.resource, target.namespace_, request);
  if (!filter.ok()) return StatusResponse(400, "BadRequest", filter.status().message());
  int64_t limit = 0;
  if (std::string text = Query(request, "limit"); !text.empty()) {
    auto parsed = ParseInt(text);
    if (!parsed || *parsed < 0) return StatusResponse(400, "BadRequest", "limit: invalid value");
    limit = *parsed;
  }
  auto page = store_.List(*filter, limit, Query(request, "continue"));
  if (!page.ok()) return FromStatus(page.status(), target.type(), "");
  const ResourceType& type = target.type();
  Json metadata = {{"resourceVersion", std::to_string(page->revision)}};
  if (!page->continue_token.empty()) {
    metadata["continue"] = page->continue_token;
    metadata["remainingItemCount"] = page->remaining;
  }
  ApiResponse response;
  std::string& body = response.body;
  body = R"({"kind":")" + type.kind + R"(List","apiVersion":")" + type.ApiVersion() +
         R"(","metadata":)" + metadata.dump() + R"(,"items":[)";
  for (size_t i = 0; i < page->items.size(); ++i) {
    if (i > 0) body += ',';
    body += *page->items[i];
  }
  body += "]}";
  return response;
}

ApiResponse FakeApi::Watch(const Target& target, const ApiRequest& request,
                           const std::function<void()>& wake) {
  auto filter = FilterOf(target.resource, target.namespace_, request);
  if (!filter.ok()) return StatusResponse(400, "BadRequest", filter.status().message());
  std::optional<int64_t> from;
  std::string rv = Query(request, "resourceVersion");
  if (!rv.empty() && rv != "0") {
    from = ParseInt(rv);
    if (!from) return StatusResponse(400, "BadRequest", "resourceVersion: invalid value " + rv);
  }
  ApiResponse response;
  if (std::string timeout = Query(request, "timeoutSeconds"); !timeout.empty()) {
    response.timeout_seconds = ParseInt(timeout).value_or(0);
  }
  auto watcher = store_.Watch(*filter, QueryTrue(request, "allowWatchBookmarks"), from, wake);
  if (!watcher.ok()) {
    ApiResponse gone = StatusResponse(410, "Expired", watcher.status().message());
    bool as_410;
    {
      std::lock_guard lock(mu_);
      as_410 = options_.expired_watch_as_410;
    }
    if (as_410) return gone;
    // kube-apiserver answers 200 and sends the error as the stream's one event.
    response.stream = std::make_shared<LineQueue>(wake, 1);
    response.stream->Push(R"({"type":"ERROR","object":)" + gone.body + "}\n");
    response.stream->Close();
    return response;
  }
  response.watcher = *watcher;
  response.stream = *watcher;
  return response;
}

ApiResponse FakeApi::Create(const Target& target, const ApiRequest& request) {
  auto body = ParseBody(request);
  if (!body.ok()) return StatusResponse(400, "BadRequest", body.status().message());
  if (target.type().plural == "pods") {
    const Json& spec = (*body)["spec"];
    if (!spec.is_object() || !spec.contains("containers") || !spec["containers"].is_array() ||
        spec["containers"].empty()) {
      return StatusResponse(422, "Invalid",
                            "Pod \"" + MetadataField(*body, "name") +
                                "\" is invalid: spec.containers: Required value");
    }
  }
  std::string name =
      (*body)["metadata"].is_object() ? (*body)["metadata"].value("name", "") : std::string();
  auto created = store_.Create(target.resource, target.namespace_, std::move(*body));
  if (!created.ok()) return FromStatus(created.status(), target.type(), name);
  return ObjectResponse(201, *created);
}

ApiResponse FakeApi::Replace(const Target& target, const ApiRequest& request, bool status_only) {
  auto body = ParseBody(request);
  if (!body.ok()) return StatusResponse(400, "BadRequest", body.status().message());
  const bool keeps_status = target.type().status_subresource;
  auto updated = store_.Update(target.resource, target.namespace_, target.name, [&](Json& object) {
    std::string want = (*body)["metadata"].is_object()
                           ? (*body)["metadata"].value("resourceVersion", "")
                           : std::string();
    if (!want.empty() && want != object["metadata"].value("resourceVersion", "")) {
      return AbortedError(
          "the object has been modified; please apply your changes to the latest version and "
          "try again");
    }
    if (status_only) {
      object["status"] = (*body)["status"];
      return OkStatus();
    }
    Json status = object.contains("status") ? object["status"] : Json();
    object = *body;
    if (keeps_status) object["status"] = status;
    return OkStatus();
  });
  if (!updated.ok()) return FromStatus(updated.status(), target.type(), target.name);
  return ObjectResponse(200, *updated);
}

ApiResponse FakeApi::Patch(const Target& target, const ApiRequest& request, bool status_only) {
  Json patch = Json::parse(request.body, nullptr, false);
  if (patch.is_discarded()) return StatusResponse(400, "BadRequest", "the patch is not JSON");
  const bool keeps_status = target.type().status_subresource;
  Status patch_error;
  auto updated = store_.Update(target.resource, target.namespace_, target.name, [&](Json& object) {
    Json patched = object;
    patch_error = ApplyPatch(request.content_type, patch, patched);
    if (!patch_error.ok()) return patch_error;
    if (status_only) {
      object["status"] = patched["status"];
    } else {
      Json status = object.contains("status") ? object["status"] : Json();
      object = std::move(patched);
      if (keeps_status) object["status"] = status;
    }
    return OkStatus();
  });
  if (!patch_error.ok()) {
    bool media = StartsWith(patch_error.message(), "the body of the request");
    return StatusResponse(media ? 415 : 422, media ? "UnsupportedMediaType" : "Invalid",
                          patch_error.message());
  }
  if (!updated.ok()) return FromStatus(updated.status(), target.type(), target.name);
  return ObjectResponse(200, *updated);
}

ApiResponse FakeApi::Delete(const Target& target, const ApiRequest& request) {
  Json options = request.body.empty() ? Json::object() : Json::parse(request.body, nullptr, false);
  if (options.is_discarded() || !options.is_object()) {
    return StatusResponse(400, "BadRequest", "the body is not DeleteOptions");
  }
  std::optional<int64_t> grace;
  if (options.contains("gracePeriodSeconds") && options["gracePeriodSeconds"].is_number_integer()) {
    grace = options["gracePeriodSeconds"].get<int64_t>();
  } else if (std::string text = Query(request, "gracePeriodSeconds"); !text.empty()) {
    grace = ParseInt(text);
  }
  std::string uid, resource_version;
  if (options.contains("preconditions") && options["preconditions"].is_object()) {
    uid = options["preconditions"].value("uid", "");
    resource_version = options["preconditions"].value("resourceVersion", "");
  }
  if (!resource_version.empty()) {
    auto current = store_.Get(target.resource, target.namespace_, target.name);
    if (!current.ok()) return FromStatus(current.status(), target.type(), target.name);
    std::string have = (*current->object)["metadata"].value("resourceVersion", "");
    if (have != resource_version) {
      return FromStatus(
          AbortedError("Precondition failed: ResourceVersion in precondition: " + resource_version +
                       ", ResourceVersion in object meta: " + have),
          target.type(), target.name);
    }
  }
  if (target.type().plural == "pods") return DeletePod(target, uid, grace);
  auto removed = store_.Remove(target.resource, target.namespace_, target.name, uid);
  if (!removed.ok()) return FromStatus(removed.status(), target.type(), target.name);
  return ObjectResponse(200, *removed);
}

ApiResponse FakeApi::DeletePod(const Target& target, const std::string& uid,
                               std::optional<int64_t> grace_seconds) {
  auto current = store_.Get(target.resource, target.namespace_, target.name);
  if (!current.ok()) return FromStatus(current.status(), target.type(), target.name);
  const Json& pod = *current->object;
  const std::string pod_uid = MetadataField(pod, "uid");
  if (!uid.empty() && uid != pod_uid) {
    return FromStatus(AbortedError("Precondition failed: UID in precondition: " + uid +
                                   ", UID in object meta: " + pod_uid),
                      target.type(), target.name);
  }
  const Json& spec = Field(pod, "spec");
  int64_t grace = grace_seconds.value_or(
      spec.is_object() ? spec.value("terminationGracePeriodSeconds", int64_t{30}) : 30);
  std::string phase = PodPhase(pod);
  bool bound = spec.is_object() && !spec.value("nodeName", "").empty();
  if (grace <= 0 || !bound || phase == "Succeeded" || phase == "Failed") {
    auto removed = store_.Remove(target.resource, target.namespace_, target.name, pod_uid);
    if (!removed.ok()) return FromStatus(removed.status(), target.type(), target.name);
    return ObjectResponse(200, *removed);
  }
  bool started = false;
  auto updated = store_.Update(target.resource, target.namespace_, target.name, [&](Json& p) {
    if (p["metadata"].value("uid", "") != pod_uid) return AbortedError("the pod was replaced");
    if (p["metadata"].contains("deletionTimestamp")) return OkStatus();  // already terminating
    p["metadata"]["deletionTimestamp"] = FormatTimestamp(now_ms_() + grace * 1000);
    p["metadata"]["deletionGracePeriodSeconds"] = grace;
    started = true;
    return OkStatus();
  });
  if (!updated.ok()) return FromStatus(updated.status(), target.type(), target.name);
  if (started) kubelet_.Terminate(target.namespace_, target.name, pod_uid, grace);
  return ObjectResponse(200, *updated);
}
}  // namespace gpupool::kube::fake
