#pragma once
// Status and Result<T>: the error currency of gpupool. Mirrors absl::Status names. No exception
// crosses a module boundary; adapters convert library exceptions to a Status at the edge.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace gpupool {

enum class StatusCode {
  kOk,
  kInvalidArgument,     // bad user input: malformed file, unknown field, failed validation
  kNotFound,            // a named object does not exist
  kAlreadyExists,       // create of something that exists
  kFailedPrecondition,  // the request is valid but the state forbids it (in use, maintenance)
  kAborted,             // optimistic-lock conflict: revision changed underneath
  kPermissionDenied,    // authenticated, but no role allows it
  kUnauthenticated,     // no or bad credentials
  kUnavailable,         // a dependency (database, backend) cannot be reached
  kInternal,            // a bug or an I/O failure
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "INVALID_ARGUMENT: message" (or "OK").
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>".
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFoundError(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status AlreadyExistsError(std::string m) {
  return {StatusCode::kAlreadyExists, std::move(m)};
}
inline Status FailedPreconditionError(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status AbortedError(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
inline Status PermissionDeniedError(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}
inline Status UnauthenticatedError(std::string m) {
  return {StatusCode::kUnauthenticated, std::move(m)};
}
inline Status UnavailableError(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status InternalError(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Result<T> holds either a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}  // NOLINT: implicit by design, like absl::StatusOr
  Result(Status status) : data_(std::move(status)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(data_); }
  Status status() const { return ok() ? Status() : std::get<Status>(data_); }

  const T& value() const& { return std::get<T>(data_); }
  T& value() & { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }

  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace gpupool

#define GPUPOOL_CONCAT_INNER_(a, b) a##b
#define GPUPOOL_CONCAT_(a, b) GPUPOOL_CONCAT_INNER_(a, b)

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::gpupool::Status gpupool_status_ = (expr);        \
    if (!gpupool_status_.ok()) return gpupool_status_; \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, MakeX());` declares x from a Result, or returns its Status.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(GPUPOOL_CONCAT_(gpupool_result_, __LINE__), lhs, expr)
// `lhs` is a declaration and `result` a name: neither may be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ASSIGN_OR_RETURN_IMPL_(result, lhs, expr) \
  auto result = (expr);                           \
  if (!result.ok()) return result.status();       \
  lhs = std::move(result).value()
// NOLINTEND(bugprone-macro-parentheses)
