#pragma once
// Test doubles of the slurm module (tests only).
//
// ScriptedTransport answers each request with the next scripted outcome and records requests.
// FakeSlurmRest is a small in-memory slurmrestd: nodes and partitions from testdata/, jobs that
// tests submit (arrays as one record per element), move through states and cancel ("A_i": one
// element); /jobs honours update_time with 304 like
// slurmctld; `down` makes every request fail to connect (`down_after_submits`: from the
// submission after that many on).

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "slurm/http.h"
#include "slurm/test_util.h"

namespace gpupool::slurm::testing {

class ScriptedTransport final : public HttpTransport {
 public:
  struct Shared {
    std::deque<HttpOutcome> script;
    std::vector<HttpRequest> requests;
  };

  explicit ScriptedTransport(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

  HttpOutcome Send(const HttpRequest& request) override {
    shared_->requests.push_back(request);
    if (shared_->script.empty()) {
      HttpOutcome none;
      none.error = InternalError("script exhausted");
      return none;
    }
    HttpOutcome next = shared_->script.front();
    shared_->script.pop_front();
    return next;
  }

  static HttpOutcome Answer(int status, std::string body = "{}") {
    HttpOutcome outcome;
    outcome.sent = true;
    outcome.response = {status, std::move(body)};
    return outcome;
  }
  static HttpOutcome Refused() {
    HttpOutcome outcome;
    outcome.error = UnavailableError("connection refused");
    return outcome;
  }
  static HttpOutcome LostAfterSending() {
    HttpOutcome outcome;
    outcome.error = UnavailableError("timeout");
    outcome.sent = true;
    return outcome;
  }

 private:
  std::shared_ptr<Shared> shared_;
};

class FakeSlurmRest final : public HttpTransport {
 public:
  using Json = nlohmann::ordered_json;

  struct State {
    std::mutex mu;
    bool down = false;
    int64_t now = 1795624000;  // slurmctld's clock, seconds
    int64_t last_job_update = 1795624000;
    int64_t next_id = 1;
    Json nodes = ReadTestJson("nodes.json");
    Json partitions = ReadTestJson("partitions.json");
    std::map<int64_t, Json> jobs;
    std::vector<Json> submissions;      // the bodies of POST /job/submit
    std::vector<std::string> requests;  // "METHOD target"
    int cancels = 0;
    int refused = 0;                // requests that failed because it was down
    size_t down_after_submits = 0;  // > 0: goes down once this many jobs were submitted
    std::set<std::string> refuse;   // job names whose submission is refused (as a bad request)

    // Adds a job (as another user would) and returns its id.
    int64_t AddJob(Json job) {
      int64_t id = next_id++;
      job["job_id"] = id;
      if (!job.contains("submit_time")) job["submit_time"] = now;
      jobs[id] = std::move(job);
      last_job_update = now;
      return id;
    }
    // Moves a job to a state; RUNNING sets start_time, ended states end_time.
    void SetState(int64_t id, const std::string& state, int64_t wait_status = 0,
                  const std::string& node = "") {
      ++now;
      Json& job = jobs.at(id);
      const bool was_pending = job.value("job_state", "") == "PENDING";
      job["job_state"] = state;
      job["exit_code"] = wait_status;
      if (state == "RUNNING") {
        job["start_time"] = now;
        job["nodes"] = node.empty() ? job.value("nodes", std::string()) : node;
      } else if (state != "PENDING") {
        // As slurmctld: a job that ends before it ran started when it ended (its start_time
        // was a forecast).
        if (was_pending) job["start_time"] = now;
        job["end_time"] = now;
      }
      last_job_update = now;
    }
  };

  explicit FakeSlurmRest(std::shared_ptr<State> state) : state_(std::move(state)) {}

  HttpOutcome Send(const HttpRequest& request) override {
    std::lock_guard lock(state_->mu);
    HttpOutcome outcome;
    if (state_->down) {
      ++state_->refused;
      outcome.error = UnavailableError("connection refused");
      return outcome;
    }
    state_->requests.push_back(request.method + " " + request.target);
    outcome.sent = true;
    const std::string prefix = "/slurm/v0.0.38";
    std::string target = request.target;
    std::string query;
    if (size_t q = target.find('?'); q != std::string::npos) {
      query = target.substr(q + 1);
      target = target.substr(0, q);
    }
    if (target == "/openapi") return Reply(outcome, 200, ReadTestJson("openapi_paths.json"));
    if (target == prefix + "/ping") return Reply(outcome, 200, ReadTestJson("ping.json"));
    if (target == prefix + "/nodes") return Reply(outcome, 200, state_->nodes);
    if (target == prefix + "/partitions") return Reply(outcome, 200, state_->partitions);
    if (target == prefix + "/jobs") {
      int64_t since = query.starts_with("update_time=") ? std::stoll(query.substr(12)) : 0;
      if (since > 0 && since - 1 >= state_->last_job_update) return Reply(outcome, 304, Json());
      Json list = Json::array();
      for (const auto& [id, job] : state_->jobs) list.push_back(job);
      return Reply(outcome, 200, Json{{"jobs", list}, {"errors", Json::array()}});
    }
    if (target == prefix + "/job/submit" && request.method == "POST") {
      Json body = Json::parse(request.body);
      state_->submissions.push_back(body);
      const Json& job = body["job"];
      if (state_->refuse.contains(job.value("name", ""))) {
        return Reply(outcome, 500, ReadTestJson("submit_unknown_key.json"));
      }
      // An array ("0-3"): one record per element, as slurmctld shows them once split off;
      // the array's id is its first element's.
      int64_t elements = 1;
      if (std::string array = job.value("array", ""); !array.empty()) {
        elements = std::stoll(array.substr(array.find('-') + 1)) + 1;
      }
      int64_t id = 0;
      for (int64_t e = 0; e < elements; ++e) {
        int64_t element = state_->AddJob(Json{{"name", job.value("name", "")},
                                              {"comment", job.value("comment", "")},
                                              {"job_state", "PENDING"},
                                              {"exit_code", 0},
                                              {"nodes", ""},
                                              {"cpus", job.value("cpus_per_task", 1)},
                                              {"memory_per_node", job.value("memory_per_node", 0)},
                                              {"start_time", state_->now + 1000}});
        if (e == 0) id = element;
        if (job.contains("array")) {
          state_->jobs[element]["array_job_id"] = id;
          state_->jobs[element]["array_task_id"] = e;
        }
        // The node it asked for, kept aside until it runs.
        state_->jobs[element]["requested_node"] = job.value("nodelist", "");
        // Held (priority 0) and dependencies as slurmctld shows them; the tests move states.
        if (job.value("hold", false)) state_->jobs[element]["priority"] = 0;
        if (job.contains("dependency")) state_->jobs[element]["dependency"] = job["dependency"];
      }
      if (state_->down_after_submits > 0 &&
          state_->submissions.size() >= state_->down_after_submits) {
        state_->down = true;
      }
      return Reply(outcome, 200, Json{{"job_id", id}, {"errors", Json::array()}});
    }
    if (target.starts_with(prefix + "/job/") && request.method == "DELETE") {
      std::string job_id = target.substr(prefix.size() + 5);
      int64_t id = std::stoll(job_id);
      if (size_t underscore = job_id.find('_'); underscore != std::string::npos) {
        int64_t index = std::stoll(job_id.substr(underscore + 1));
        for (const auto& [element, job] : state_->jobs) {
          if (job.value("array_job_id", int64_t{0}) == id &&
              job.value("array_task_id", int64_t{-1}) == index) {
            id = element;
          }
        }
      }
      auto it = state_->jobs.find(id);
      if (it == state_->jobs.end()) {
        return Reply(outcome, 500, ReadTestJson("delete_unknown_job.json"));
      }
      ++state_->cancels;
      std::string job_state = it->second["job_state"];
      if (job_state == "PENDING" || job_state == "RUNNING") {
        state_->SetState(id, "CANCELLED", job_state == "RUNNING" ? 15 : 0);
      }
      return Reply(outcome, 200, Json{{"errors", Json::array()}});
    }
    return Reply(outcome, 404, Json{{"errors", {{{"error", "Unable to find handler"}}}}});
  }

 private:
  static HttpOutcome Reply(HttpOutcome outcome, int status, const Json& body) {
    outcome.response.status = status;
    outcome.response.body = body.is_null() ? "" : body.dump();
    return outcome;
  }

  std::shared_ptr<State> state_;
};

}  // namespace gpupool::slurm::testing
