#include "api/status_to_http.h"

namespace gpupool::api {

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kAborted:
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

nlohmann::ordered_json ErrorBody(const Status& status) {
  return {{"message", status.message()},
          {"error_code", HttpStatusFor(status.code())},
          {"code", std::string(StatusCodeName(status.code()))}};
}

}  // namespace gpupool::api
