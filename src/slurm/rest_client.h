#pragma once
// A client of slurmrestd's OpenAPI v0.0.38 (Slurm 22.05): the version check, nodes, partitions,
// jobs (incremental: `update_time`), one job, submit and cancel.
//
// Authentication: over TCP, every request carries X-SLURM-USER-NAME and X-SLURM-USER-TOKEN (a
// JWT from $SLURM_JWT or a file, as `scontrol token` prints it; slurmrestd runs with
// rest_auth/jwt). Over a UNIX socket slurmrestd authenticates the peer itself (rest_auth/local)
// and no header is needed; a token is still sent when one is configured.
//
// Failures are bounded: connection errors, timeouts, HTTP 502-504 and slurmrestd's "cannot
// reach slurmctld" answers are retried with exponential backoff, at most max_attempts times in
// all. A submission is retried only when it cannot have reached the server (the connection
// failed before the request was written), so a job is never submitted twice by a retry.
//
// Thread contract: all methods are safe to call from several threads (requests are serialised
// on one connection).

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "slurm/http.h"
#include "slurm/objects.h"

namespace gpupool::slurm {

// Where the JWT comes from: a fixed value ($SLURM_JWT) or a file, re-read when it changes (a
// site may rotate tokens with a cron job that rewrites the file). A file may hold the bare token
// or `SLURM_JWT=<token>` as `scontrol token` prints it.
class TokenSource {
 public:
  TokenSource() = default;  // no token
  static TokenSource Fixed(std::string token);
  static TokenSource File(std::string path);
  // $SLURM_JWT when set and not empty, else `file` ("" = none).
  static TokenSource FromEnvironmentOr(const std::string& file);

  bool empty() const { return fixed_.empty() && path_.empty(); }
  // The current token; errors name the file.
  Result<std::string> Token();
  std::string Describe() const;  // "$SLURM_JWT", "file /x", "none"

 private:
  std::string fixed_;
  std::string path_;
  std::string cached_;
  int64_t cached_mtime_ns_ = -1;
};

struct ClientOptions {
  std::string user;  // X-SLURM-USER-NAME; required with a token
  TokenSource token;
  int max_attempts = 4;
  std::chrono::milliseconds first_backoff{200};  // doubled after each failed attempt
  // Waits between attempts; tests replace it.
  std::function<void(std::chrono::milliseconds)> sleep;
};

class RestClient {
 public:
  RestClient(Endpoint endpoint, std::unique_ptr<HttpTransport> transport, ClientOptions options);

  // Checks that the server offers v0.0.38 (GET /openapi, which lists every served path) and
  // that it accepts our credentials (GET .../ping). Returns the Slurm release ("22.05.8").
  // FailedPrecondition names the versions the server offers when v0.0.38 is not among them.
  Result<std::string> CheckVersion();

  // nullopt: nothing changed since `since` (Unix seconds; HTTP 304). `since` = 0: everything.
  // slurmctld answers with the full list whenever anything changed, so callers pass the
  // newest time they have seen from the server, never their own clock.
  Result<std::optional<std::vector<SlurmNode>>> GetNodes(int64_t since = 0);
  Result<std::optional<std::vector<SlurmPartition>>> GetPartitions(int64_t since = 0);
  Result<std::optional<std::vector<SlurmJob>>> GetJobs(int64_t since = 0);
  // nullopt: slurmctld does not know the job (never existed, or purged after MinJobAge).
  Result<std::optional<SlurmJob>> GetJob(int64_t job_id);

  // Returns the new job's id.
  Result<int64_t> SubmitJob(const JobSubmission& submission);
  // Cancels a job (slurmctld signals its processes, waits KillWait, then kills them); a job
  // that already ended is not an error. `signal` ("TERM", "USR1") only signals, it does not
  // cancel.
  Status CancelJob(int64_t job_id, const std::string& signal = "");
  // The same by Slurm's job id text: "123", or "123_4" for element 4 of array 123 alone.
  Status CancelJob(const std::string& job_id, const std::string& signal = "");

  const Endpoint& endpoint() const { return endpoint_; }

 private:
  struct Answer {
    int status = 0;
    nlohmann::ordered_json json;  // null for 304 and empty bodies
  };
  // One request with retries; errors already carry Slurm's messages.
  Result<Answer> Call(const std::string& method, const std::string& target,
                      const std::string& body = "");
  Result<Answer> CallLocked(const std::string& method, const std::string& target,
                            const std::string& body);
  Result<std::map<std::string, std::string>> AuthHeaders();

  const Endpoint endpoint_;
  const std::unique_ptr<HttpTransport> transport_;
  ClientOptions options_;
  std::mutex mu_;
};

// The OpenAPI versions ("v0.0.36", ...) among the paths of an OpenAPI document (`/slurm/vX/...`),
// sorted, without duplicates.
std::vector<std::string> OfferedVersions(const nlohmann::ordered_json& openapi);

}  // namespace gpupool::slurm
