#pragma once
// The fake API server's REST semantics, apart from HTTP and TLS (fake_server.h carries them).
// Paths, verbs and answers follow the Kubernetes API concepts page and the built-in registries:
//
//   /api/v1/{nodes,pods,events}, /apis/{group}/{version}/{plural}, namespaced under
//   namespaces/{ns}/; GET on a collection lists (labelSelector, fieldSelector, limit, continue,
//   resourceVersion) or, with watch=true, watches (resourceVersion, allowWatchBookmarks,
//   timeoutSeconds); POST creates; GET, PUT (metadata.resourceVersion precondition), PATCH
//   (merge, strategic merge, JSON patch) and DELETE (gracePeriodSeconds, preconditions.uid and
//   .resourceVersion) on an object.
//   pods/binding   POST, 201; 409 when already bound or being deleted; 404 when gone.
//   pods/eviction  POST policy/v1 Eviction, 201; 429 when a PodDisruptionBudget selecting the pod
//                  allows no disruption; 409 on a UID precondition mismatch.
//   pods/status    GET, PUT, PATCH: the status alone changes.
//   pods/log       GET, text (limitBytes: the first N bytes); follow=true streams until the
//                  containers end. A bound pod whose containers have not started answers 400
//                  ("is waiting to start"), an unbound one an empty log, as the real API does;
//                  a pod's log is its own (a new pod under the same name starts empty).
//   {machinesets,machinedeployments}/scale  GET, PUT, PATCH an autoscaling/v1 Scale.
// A graceful delete of a bound pod sets metadata.deletionTimestamp and leaves the object until
// the kubelet confirms (fake_kubelet.h); unbound or finished pods and grace 0 go at once.
// A watch from a compacted resourceVersion answers 200 with one ERROR event holding a Status of
// code 410 (as kube-apiserver does), or a 410 response when `expired_watch_as_410` is set.
//
// Thread contract: Handle() may run on many threads at once.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kube/testing/fake_kubelet.h"
#include "kube/testing/fake_rbac.h"
#include "kube/testing/fake_store.h"

namespace gpupool::kube::fake {

struct ApiRequest {
  std::string method;
  std::string path;                          // without the query
  std::map<std::string, std::string> query;  // decoded
  std::string content_type;
  std::string body;
};

struct ApiResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  // A stream the server writes after the header, chunk by chunk, until it closes: a watch
  // (`watcher` set too) or a followed log.
  std::shared_ptr<LineQueue> stream;
  std::shared_ptr<Watcher> watcher;
  int64_t timeout_seconds = 0;  // a watch's timeoutSeconds; 0 = the server's default
};

struct ApiOptions {
  bool expired_watch_as_410 = false;
};

class FakeApi {
 public:
  FakeApi(ObjectStore& store, Kubelet& kubelet, PodLogs& logs, std::function<int64_t()> now_ms);

  // `wake` is given to a stream the request opens (see LineQueue).
  ApiResponse Handle(const ApiRequest& request, const std::function<void()>& wake);
  // As a cluster administrator (a test setting the scene): no role applies, nothing counted.
  ApiResponse HandleAsAdmin(const ApiRequest& request);

  // The next `count` requests `method path` (without the query) answer `code` with a Status,
  // changing nothing: an answer the real API server gives in a race the tests cannot time (a
  // binding refused because the pod was bound or deleted in between).
  void FailNext(const std::string& method, const std::string& path, int code, int count);

  void SetOptions(ApiOptions options);
  // Requests served, by "verb resource[/subresource]" (verbs as RBAC names them: get, list,
  // watch, create, update, patch, delete).
  nlohmann::ordered_json RequestCounts() const;

  // Authorizes every API request by `role` from now on (fake_rbac.h); without a role, the token
  // may do anything. Denied requests answer 403 Forbidden and are counted apart.
  void SetRole(ClusterRole role);
  nlohmann::ordered_json DeniedCounts() const;

 private:
  struct Target;

  ApiResponse Handle(const ApiRequest& request, const std::function<void()>& wake, bool admin);
  ApiResponse Dispatch(const ApiRequest& request, const Target& target,
                       const std::function<void()>& wake);
  ApiResponse List(const Target& target, const ApiRequest& request);
  ApiResponse Watch(const Target& target, const ApiRequest& request,
                    const std::function<void()>& wake);
  ApiResponse Create(const Target& target, const ApiRequest& request);
  ApiResponse Replace(const Target& target, const ApiRequest& request, bool status_only);
  ApiResponse Patch(const Target& target, const ApiRequest& request, bool status_only);
  ApiResponse Delete(const Target& target, const ApiRequest& request);
  ApiResponse Bind(const Target& target, const ApiRequest& request);
  ApiResponse Evict(const Target& target, const ApiRequest& request);
  ApiResponse Log(const Target& target, const ApiRequest& request,
                  const std::function<void()>& wake);
  ApiResponse Scale(const Target& target, const ApiRequest& request);
  // Deletes a pod as the registry does: gracefully when bound and running.
  ApiResponse DeletePod(const Target& target, const std::string& uid,
                        std::optional<int64_t> grace_seconds);
  static std::string VerbOf(const ApiRequest& request, const Target& target);
  // 403 when a role is set and does not grant the request.
  std::optional<ApiResponse> Authorize(const std::string& verb, const Target& target);
  void Count(const std::string& verb, const Target& target);

  ObjectStore& store_;
  Kubelet& kubelet_;
  PodLogs& logs_;
  const std::function<int64_t()> now_ms_;

  mutable std::mutex mu_;
  ApiOptions options_;
  std::map<std::string, int64_t> counts_;
  std::optional<ClusterRole> role_;  // set before serving
  std::map<std::string, int64_t> denied_;
  std::map<std::string, std::pair<int, int>> failures_;  // "METHOD path" -> (code, count left)
};

// The user the fake's token stands for, in its answers (as a service account would be named).
inline constexpr char kFakeUser[] = "system:serviceaccount:gpupool-system:gpupool";

// A Kubernetes Status object ({"kind": "Status", "status": "Failure", code, reason, message}).
ApiResponse StatusResponse(int code, const std::string& reason, const std::string& message,
                           nlohmann::ordered_json details = nullptr);

}  // namespace gpupool::kube::fake
