#include "api/status_to_http.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpupool::api {
namespace status_to_http_test {

TEST(StatusToHttpTest, MapsEveryCode) {
  struct Case {
    StatusCode code;
    int http;
  };
  std::vector<Case> cases = {
      {StatusCode::kOk, 200},
      {StatusCode::kInvalidArgument, 400},
      {StatusCode::kUnauthenticated, 401},
      {StatusCode::kPermissionDenied, 403},
      {StatusCode::kNotFound, 404},
      {StatusCode::kAlreadyExists, 409},
      {StatusCode::kAborted, 409},
      {StatusCode::kFailedPrecondition, 409},
      {StatusCode::kUnavailable, 503},
      {StatusCode::kInternal, 500},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(StatusCodeName(c.code)));
    EXPECT_EQ(HttpStatusFor(c.code), c.http);
  }
  auto body = ErrorBody(NotFoundError("pool \"x\" not found"));
  EXPECT_EQ(body["message"], "pool \"x\" not found");
  EXPECT_EQ(body["error_code"], 404);
  EXPECT_EQ(body["code"], "NOT_FOUND");
}

}  // namespace status_to_http_test
}  // namespace gpupool::api
