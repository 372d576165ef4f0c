#include "kube/event_recorder.h"

#include <cstdio>

#include "common/clock.h"
#include "kube/writes.h"

namespace gpupool::kube {
namespace {

using Json = nlohmann::ordered_json;

std::string Hex(int64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%llx", static_cast<unsigned long long>(value));
  return buffer;
}

}  // namespace

EventRecorder::EventRecorder(std::string component, size_t max_keys)
    : component_(std::move(component)), max_keys_(max_keys == 0 ? 1 : max_keys) {}

EventWrite EventRecorder::Record(const Json& involved, const std::string& type,
                                 const std::string& reason, const std::string& message,
                                 int64_t now_ms) {
  std::string ns = MetadataString(involved, "namespace");
  if (ns.empty()) ns = "default";
  const std::string name = MetadataString(involved, "name");
  const std::string uid = MetadataString(involved, "uid");
  const std::string now = FormatTimestamp(now_ms);
  // client-go's getEventKey: source, involved object, type, reason and message.
  std::string key = component_ + "\x1f" + ns + "\x1f" + name + "\x1f" + uid + "\x1f" + type +
                    "\x1f" + reason + "\x1f" + message;
  EventWrite write;
  write.key = key;
  auto it = seen_.find(key);
  if (it != seen_.end()) {
    Seen& seen = it->second;
    ++seen.count;
    lru_.splice(lru_.begin(), lru_, seen.lru);
    write.kind = EventWrite::Kind::kPatch;
    write.path = "/api/v1/namespaces/" + seen.namespace_ + "/events/" + seen.name;
    write.body = {{"count", seen.count}, {"lastTimestamp", now}, {"message", message}};
    return write;
  }
  if (seen_.size() >= max_keys_) {
    seen_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(key);
  Seen& seen = seen_[key];
  seen.namespace_ = ns;
  seen.name = name + "." + Hex(now_ms * 1'000'000);
  seen.count = 1;
  seen.first_timestamp = now;
  seen.lru = lru_.begin();
  write.kind = EventWrite::Kind::kCreate;
  write.path = "/api/v1/namespaces/" + ns + "/events";
  Json object = {{"kind", involved.value("kind", "Pod")},
                 {"namespace", ns},
                 {"name", name},
                 {"uid", uid},
                 {"apiVersion", involved.value("apiVersion", "v1")}};
  if (std::string rv = MetadataString(involved, "resourceVersion"); !rv.empty()) {
    object["resourceVersion"] = rv;
  }
  write.body = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"name", seen.name}, {"namespace", ns}}},
                {"involvedObject", object},
                {"reason", reason},
                {"message", message},
                {"source", {{"component", component_}}},
                {"firstTimestamp", now},
                {"lastTimestamp", now},
                {"count", 1},
                {"type", type},
                {"reportingComponent", component_},
                {"reportingInstance", component_}};
  return write;
}

void EventRecorder::Forget(const std::string& key) {
  auto it = seen_.find(key);
  if (it == seen_.end()) return;
  lru_.erase(it->second.lru);
  seen_.erase(it);
}

}  // namespace gpupool::kube
