#pragma once
// EventRecorder: Events about pods (FailedScheduling, Preempted, ...) written the way
// kube-scheduler's recorder writes them (client-go tools/record, EventCorrelator's logger), so
// that a pod left pending for an hour has one Event with a count, not hundreds:
//   - the first event of a kind creates a core/v1 Event named "<pod>.<hex nanoseconds>" with
//     count 1, firstTimestamp = lastTimestamp = now;
//   - the same event again (same object uid, type, reason, message and source) becomes a PATCH of
//     that Event: count + 1, lastTimestamp = now;
//   - a different message for the same pod and reason is a new Event (the scheduler's reason
//     changed: "0/5000 nodes ..." counts change, so does the message).
// The last `max_keys` kinds are remembered (least recently used first out), as client-go keeps
// 4,096. A PATCH that finds its Event gone (Events expire after an hour) is answered by Forget
// and the next Record creates it again. client-go's aggregation of ten *similar* events into
// "(combined from similar events)" is not done.
//
// Pure (time passed in); Thread contract: one thread at a time.

#include <cstdint>
#include <list>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace gpupool::kube {

struct EventWrite {
  enum class Kind { kCreate, kPatch };
  Kind kind = Kind::kCreate;
  std::string path;  // POST to the collection, or PATCH of the Event
  nlohmann::ordered_json body;
  std::string key;  // for Forget
};

class EventRecorder {
 public:
  explicit EventRecorder(std::string component = "gpupool", size_t max_keys = 4096);

  // `involved` is the pod (its metadata: name, namespace, uid, resourceVersion). `type` is
  // "Normal" or "Warning". `now_ms` is Unix milliseconds.
  EventWrite Record(const nlohmann::ordered_json& involved, const std::string& type,
                    const std::string& reason, const std::string& message, int64_t now_ms);
  // The write failed (e.g. 404 on a PATCH): start again with a create next time.
  void Forget(const std::string& key);

 private:
  struct Seen {
    std::string namespace_;
    std::string name;  // the Event's
    int64_t count = 0;
    std::string first_timestamp;
    std::list<std::string>::iterator lru;
  };

  const std::string component_;
  const size_t max_keys_;
  std::map<std::string, Seen> seen_;
  std::list<std::string> lru_;  // most recent first
};

}  // namespace gpupool::kube
