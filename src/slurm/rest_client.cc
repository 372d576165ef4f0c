#include "slurm/rest_client.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "common/json_text.h"
#include "common/strings.h"

namespace gpupool::slurm {
namespace {

using Json = nlohmann::ordered_json;

// The error numbers in slurmrestd's `errors` array.
std::vector<int64_t> ErrorNumbers(const Json& body) {
  std::vector<int64_t> numbers;
  auto errors = body.is_object() ? body.find("errors") : body.end();
  if (!body.is_object() || errors == body.end() || !errors->is_array()) return numbers;
  for (const auto& error : *errors) {
    if (!error.is_object()) continue;
    for (const char* key : {"error_number", "error_code", "errno"}) {
      auto number = error.find(key);
      if (number != error.end() && number->is_number_integer()) {
        numbers.push_back(number->get<int64_t>());
        break;
      }
    }
  }
  return numbers;
}

// Slurm's communication errors (SLURM_COMMUNICATIONS_*, SLURMCTLD_COMMUNICATIONS_*, protocol
// errors) are numbered 1000-1999, and slurmrestd 22.05 reports a listing that failed because
// slurmctld did not answer as "Unspecified error" (-1): slurmctld was not reached, which is
// worth waiting for. ESLURM_* (2000 and up) are answers, not outages.
bool IsControllerOutage(const Json& body) {
  auto numbers = ErrorNumbers(body);
  return std::any_of(numbers.begin(), numbers.end(),
                     [](int64_t n) { return n == -1 || (n >= 1000 && n < 2000); });
}

// ESLURM_INVALID_JOB_ID: slurmctld does not know the job id.
constexpr int64_t kInvalidJobId = 2017;

std::string Describe(const std::string& method, const std::string& target) {
  return method + " " + target;
}

// The status for an answer that is not a success.
Status ErrorFor(int http_status, const Json& body, const std::string& request,
                const Endpoint& endpoint, const std::string& user) {
  std::string errors = ResponseErrors(body);
  std::string detail = "slurmrestd at " + endpoint.ToString() + ": " + request + ": HTTP " +
                       std::to_string(http_status) + (errors.empty() ? "" : ": " + errors);
  if (http_status == 401 || http_status == 403) {
    return UnauthenticatedError(detail + " (is the token for user \"" + user +
                                "\" valid and unexpired? `scontrol token username=" + user +
                                "` prints a new one)");
  }
  auto numbers = ErrorNumbers(body);
  if (http_status == 404 ||
      std::find(numbers.begin(), numbers.end(), kInvalidJobId) != numbers.end()) {
    return NotFoundError(detail);
  }
  if (http_status >= 502 && http_status <= 504) return UnavailableError(detail);
  if (IsControllerOutage(body)) return UnavailableError(detail);
  if (http_status >= 500) return FailedPreconditionError(detail);
  return InvalidArgumentError(detail);
}

Result<Json> ParseBody(const std::string& body, const std::string& what) {
  if (body.empty()) return Json();
  try {
    return Json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    return InternalError(what + ": the answer is not JSON: " + e.what());
  }
}

}  // namespace

TokenSource TokenSource::Fixed(std::string token) {
  TokenSource source;
  source.fixed_ = std::move(token);
  return source;
}

TokenSource TokenSource::File(std::string path) {
  TokenSource source;
  source.path_ = std::move(path);
  return source;
}

TokenSource TokenSource::FromEnvironmentOr(const std::string& file) {
  if (const char* env = std::getenv("SLURM_JWT"); env != nullptr && *env != '\0') {
    return Fixed(env);
  }
  if (!file.empty()) return File(file);
  return TokenSource();
}

std::string TokenSource::Describe() const {
  if (!fixed_.empty()) return "$SLURM_JWT";
  if (!path_.empty()) return "file " + path_;
  return "none";
}

Result<std::string> TokenSource::Token() {
  if (!fixed_.empty()) return fixed_;
  if (path_.empty()) return std::string();
  struct stat info {};
  if (stat(path_.c_str(), &info) != 0) {
    return NotFoundError("Slurm token file " + path_ + ": cannot read it");
  }
  int64_t mtime_ns = static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
  if (mtime_ns == cached_mtime_ns_ && !cached_.empty()) return cached_;
  std::ifstream in(path_);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return NotFoundError("Slurm token file " + path_ + ": cannot read it");
  std::string token(Trim(text.str()));
  if (StartsWith(token, "SLURM_JWT=")) token = token.substr(10);
  if (token.empty() || token.find_first_of(" \t\r\n") != std::string::npos) {
    return InvalidArgumentError("Slurm token file " + path_ +
                                ": expected one token (or SLURM_JWT=<token>)");
  }
  cached_ = std::move(token);
  cached_mtime_ns_ = mtime_ns;
  return cached_;
}

std::vector<std::string> OfferedVersions(const Json& openapi) {
  std::set<std::string> versions;
  if (!openapi.is_object() || !openapi.contains("paths") || !openapi["paths"].is_object()) {
    return {};
  }
  static const std::regex kPath("^/slurm/(v[0-9]+\\.[0-9]+\\.[0-9]+)/");
  for (const auto& [path, _] : openapi["paths"].items()) {
    std::smatch match;
    if (std::regex_search(path, match, kPath)) versions.insert(match[1].str());
  }
  return {versions.begin(), versions.end()};
}

RestClient::RestClient(Endpoint endpoint, std::unique_ptr<HttpTransport> transport,
                       ClientOptions options)
    : endpoint_(std::move(endpoint)),
      transport_(std::move(transport)),
      options_(std::move(options)) {
  if (!options_.sleep) {
    options_.sleep = [](std::chrono::milliseconds wait) { std::this_thread::sleep_for(wait); };
  }
  options_.max_attempts = std::max(1, options_.max_attempts);
}

Result<std::map<std::string, std::string>> RestClient::AuthHeaders() {
  std::map<std::string, std::string> headers;
  if (options_.token.empty()) {
    if (endpoint_.kind == Endpoint::Kind::kTcp) {
      return UnauthenticatedError("slurmrestd at " + endpoint_.ToString() +
                                  ": a TCP endpoint needs a JWT ($SLURM_JWT or a token file; "
                                  "`scontrol token username=USER` prints one)");
    }
    return headers;
  }
  ASSIGN_OR_RETURN(std::string token, options_.token.Token());
  headers["X-SLURM-USER-NAME"] = options_.user;
  headers["X-SLURM-USER-TOKEN"] = token;
  return headers;
}

Result<RestClient::Answer> RestClient::Call(const std::string& method, const std::string& target,
                                            const std::string& body) {
  std::lock_guard lock(mu_);
  return CallLocked(method, target, body);
}

Result<RestClient::Answer> RestClient::CallLocked(const std::string& method,
                                                  const std::string& target,
                                                  const std::string& body) {
  const std::string what = Describe(method, target);
  const bool idempotent = method != "POST";
  std::chrono::milliseconds backoff = options_.first_backoff;
  Status last;
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    if (attempt > 1) {
      options_.sleep(backoff);
      backoff *= 2;
    }
    ASSIGN_OR_RETURN(auto headers, AuthHeaders());
    HttpOutcome outcome = transport_->Send({method, target, std::move(headers), body});
    if (!outcome.error.ok()) {
      last = outcome.error.WithContext(what);
      if (outcome.error.code() != StatusCode::kUnavailable) return last;
      if (!idempotent && outcome.sent) {
        return UnavailableError(last.message() +
                                " (the request may have reached slurmctld; not retried)");
      }
      continue;
    }
    const HttpResponse& response = outcome.response;
    if (response.status == 304) return Answer{304, Json()};
    auto json = ParseBody(response.body, "slurmrestd at " + endpoint_.ToString() + ": " + what);
    if (response.status >= 200 && response.status < 300) {
      if (!json.ok()) return json.status();
      return Answer{response.status, std::move(*json)};
    }
    Status error =
        ErrorFor(response.status, json.ok() ? *json : Json(), what, endpoint_, options_.user);
    // slurmrestd answers only after slurmctld did or did not act: a 5xx for an outage means the
    // controller was not reached, so even a POST may be sent again.
    if (error.code() != StatusCode::kUnavailable) return error;
    last = error;
  }
  return UnavailableError(last.message() + " (gave up after " +
                          std::to_string(options_.max_attempts) + " attempts)");
}

Result<std::string> RestClient::CheckVersion() {
  auto spec = Call("GET", "/openapi");
  if (!spec.ok() && spec.status().code() == StatusCode::kNotFound) {
    spec = Call("GET", "/openapi/v3");
  }
  if (!spec.ok()) return spec.status().WithContext("checking the Slurm REST API version");
  std::vector<std::string> versions = OfferedVersions(spec->json);
  if (std::find(versions.begin(), versions.end(), kApiVersion) == versions.end()) {
    return FailedPreconditionError(
        "slurmrestd at " + endpoint_.ToString() + " offers OpenAPI " +
        (versions.empty() ? std::string("no Slurm versions") : Join(versions, ", ")) +
        "; gpupool speaks " + kApiVersion + " (Slurm 22.05): start slurmrestd with `-s openapi/" +
        kApiVersion + "`");
  }
  ASSIGN_OR_RETURN(Answer ping, Call("GET", std::string(kApiPrefix) + "/ping"));
  std::string release = SlurmRelease(ping.json);
  return release.empty() ? std::string("unknown") : release;
}

namespace {
std::string Since(int64_t since) {
  return since > 0 ? "?update_time=" + std::to_string(since) : "";
}
}  // namespace

Result<std::optional<std::vector<SlurmNode>>> RestClient::GetNodes(int64_t since) {
  ASSIGN_OR_RETURN(Answer answer, Call("GET", std::string(kApiPrefix) + "/nodes" + Since(since)));
  if (answer.status == 304) return std::optional<std::vector<SlurmNode>>();
  ASSIGN_OR_RETURN(auto nodes, ParseNodes(answer.json));
  return std::optional(std::move(nodes));
}

Result<std::optional<std::vector<SlurmPartition>>> RestClient::GetPartitions(int64_t since) {
  ASSIGN_OR_RETURN(Answer answer,
                   Call("GET", std::string(kApiPrefix) + "/partitions" + Since(since)));
  if (answer.status == 304) return std::optional<std::vector<SlurmPartition>>();
  ASSIGN_OR_RETURN(auto partitions, ParsePartitions(answer.json));
  return std::optional(std::move(partitions));
}

Result<std::optional<std::vector<SlurmJob>>> RestClient::GetJobs(int64_t since) {
  ASSIGN_OR_RETURN(Answer answer, Call("GET", std::string(kApiPrefix) + "/jobs" + Since(since)));
  if (answer.status == 304) return std::optional<std::vector<SlurmJob>>();
  ASSIGN_OR_RETURN(auto jobs, ParseJobs(answer.json));
  return std::optional(std::move(jobs));
}

Result<std::optional<SlurmJob>> RestClient::GetJob(int64_t job_id) {
  auto answer = Call("GET", std::string(kApiPrefix) + "/job/" + std::to_string(job_id));
  // slurmrestd answers an unknown id with HTTP 500 and ESLURM_INVALID_JOB_ID.
  if (!answer.ok() && answer.status().code() == StatusCode::kNotFound) {
    return std::optional<SlurmJob>();
  }
  if (!answer.ok()) return answer.status();
  ASSIGN_OR_RETURN(auto jobs, ParseJobs(answer->json));
  if (jobs.empty()) return std::optional<SlurmJob>();
  return std::optional(std::move(jobs.front()));
}

Result<int64_t> RestClient::SubmitJob(const JobSubmission& submission) {
  ASSIGN_OR_RETURN(Answer answer, Call("POST", std::string(kApiPrefix) + "/job/submit",
                                       DumpJson(SubmissionToJson(submission))));
  std::string errors = ResponseErrors(answer.json);
  auto id = answer.json.is_object() ? answer.json.find("job_id") : answer.json.end();
  if (!answer.json.is_object() || id == answer.json.end() || !id->is_number_integer() ||
      id->get<int64_t>() <= 0) {
    return InternalError("slurmrestd at " + endpoint_.ToString() + ": job " + submission.name +
                         " submitted without a job id in the answer" +
                         (errors.empty() ? "" : ": " + errors));
  }
  return id->get<int64_t>();
}

Status RestClient::CancelJob(int64_t job_id, const std::string& signal) {
  return CancelJob(std::to_string(job_id), signal);
}

Status RestClient::CancelJob(const std::string& job_id, const std::string& signal) {
  // slurmrestd passes the id as text to slurm_kill_job2, which takes "123_4" (one array
  // element) as scancel does.
  std::string target = std::string(kApiPrefix) + "/job/" + job_id;
  if (!signal.empty()) target += "?signal=" + signal;
  auto answer = Call("DELETE", target);
  if (!answer.ok()) {
    // Unknown (purged) jobs have nothing left to cancel.
    if (answer.status().code() == StatusCode::kNotFound) return OkStatus();
    return answer.status();
  }
  return OkStatus();
}

}  // namespace gpupool::slurm
