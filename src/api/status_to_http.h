#pragma once
// The one place where a Status becomes an HTTP status code and error body. Services never see
// HTTP codes.

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace gpupool::api {

// kInvalidArgument 400, kUnauthenticated 401, kPermissionDenied 403, kNotFound 404,
// kAlreadyExists/kAborted/kFailedPrecondition 409 (the request is well formed, the current state
// forbids it: in use, maintenance, already finished), kUnavailable 503, kInternal 500, kOk 200.
int HttpStatusFor(StatusCode code);

// {"message": ..., "error_code": <http status>, "code": "INVALID_ARGUMENT"} (OSMO's error shape
// plus the symbolic code).
nlohmann::ordered_json ErrorBody(const Status& status);

}  // namespace gpupool::api
